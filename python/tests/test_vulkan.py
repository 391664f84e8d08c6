"""graft.compile and graft.Program: the Vulkan path (lavapipe when there is no GPU)."""

import json

import numpy as np
import pytest

import graft
from conftest import PATTERNS, TINY, run_cli

RULES = [str(PATTERNS / "embedding.pat")]
TOKENS = np.array([[3, 1, 4, 1, 5, 9, 2, 6]], dtype=np.int64)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    out = tmp_path_factory.mktemp("vk") / "tiny.vkprog"
    summary = graft.compile(TINY, out, rules=RULES, default_rules=False, embed_reference=True)
    return out, summary


def test_compile_returns_the_cli_summary(program, tmp_path):
    out, summary = program
    cli = json.loads(run_cli("compile", TINY, "-o", tmp_path / "cli.vkprog", "--json",
                             "--no-default-rules", "--rules", RULES[0]).stdout)
    assert list(summary) == list(cli)  # the same keys, in the same order
    assert summary["rules_fired"] == cli["rules_fired"] == {"torchao_embedding_q4gsw": 1}
    assert summary["target"] == "lavapipe" and summary["nodes_out"] == 1
    assert out.stat().st_size == summary["program_bytes"]


def test_compile_writes_a_coverage_report(tmp_path):
    report = tmp_path / "coverage.json"
    graft.compile(TINY, tmp_path / "t.vkprog", report=report, rules=RULES, default_rules=False)
    rules = {r["name"]: r for r in json.loads(report.read_text())["rules"]}
    assert rules["torchao_embedding_q4gsw"]["fired"] == 1


def test_compile_errors(tmp_path):
    with pytest.raises(graft.UserError, match="missing.pt2"):
        graft.compile(tmp_path / "missing.pt2", tmp_path / "x.vkprog", rules=RULES,
                      default_rules=False)
    with pytest.raises(graft.UserError):
        graft.compile(TINY, tmp_path / "x.vkprog", target="no-such-target", rules=RULES,
                      default_rules=False)
    assert not (tmp_path / "x.vkprog").exists()  # nothing half-written


def test_program_runs_on_the_device_like_the_interpreter(program):
    out, _ = program
    p = graft.Program(out)
    assert p.target == "lavapipe" and p.source_path == str(TINY)
    assert p.summary["rules_fired"] == {"torchao_embedding_q4gsw": 1}
    got = p.run({"tokens": TOKENS})
    (name,) = got
    want = graft.interpret(TINY, {"tokens": TOKENS})["out"]
    assert got[name].shape == (1, 8, 128) and got[name].dtype == np.float32
    np.testing.assert_allclose(got[name], want, rtol=0, atol=1e-6)
    ref = p.interpret_reference({"tokens": TOKENS})
    np.testing.assert_array_equal(ref["out"], want)
    assert p.device_name  # the Vulkan device it ran on


def test_program_rejects_bad_inputs(program):
    p = graft.Program(program[0])
    with pytest.raises(graft.UserError, match="missing input"):
        p.run({})
    with pytest.raises(graft.UserError):
        p.run({"tokens": np.zeros((2, 3), np.int64)})  # wrong shape: an error, not a crash


def test_compile_and_run_a_pt2_with_the_shipped_rules(llama_pt2, tmp_path):
    out = tmp_path / "llama.vkprog"
    summary = graft.compile(llama_pt2, out)
    assert summary["rules_fired"].get("torchao_linear_q4gsw", 0) > 0
    assert summary["nodes_out"] < summary["nodes_in"]
    tokens = np.array([[1, 7, 3, 63, 0, 12, 5, 9]], dtype=np.int64)
    got = graft.Program(out).run({"tokens": tokens})
    want = graft.interpret(llama_pt2, {"tokens": tokens})
    (g,), (w,) = got.values(), want.values()
    assert g.shape == w.shape and g.shape[-1] == 64  # logits over the vocabulary
    # The device kernels reorder float sums (docs/numerics.md): close, not exact.
    np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-3)
