"""graft.compile and graft.Program: the Vulkan path (lavapipe when there is no GPU)."""

import json

import numpy as np
import pytest

import graft
from conftest import NEG_GRAPH, PATTERNS, SELF_MATCHING_RULE, TINY, run_cli

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


def test_program_generates_tokens_like_the_reference(tmp_path):
    """Greedy generation with a KV-cache export (ExecuTorch's export_llama form,
    --use_sdpa_with_kv_cache spelling: graft synth llama --kv-cache custom)."""
    pt2 = tmp_path / "kv.pt2"
    run_cli("synth", "llama", "--layers", "1", "--dim", "64", "--heads", "2", "--vocab", "64",
            "--quant", "4w", "--dynamic-seq", "--kv-cache", "custom", "-o", pt2)
    out = tmp_path / "kv.vkprog"
    graft.compile(pt2, out, embed_reference=True)
    p = graft.Program(out)
    r = p.generate([1, 2, 3], 4, warmup=1, check=True, atol=1e-3)
    assert len(r["tokens"]) == 5
    assert all(0 <= t < 64 for t in r["tokens"])
    assert r["prefill"]["tokens"] == 3 and r["decode"]["tokens"] == 4
    assert r["decode"]["tokens_per_s"] > 0
    assert r["check"]["ok"], r["check"]["problem"]
    assert r["check"]["steps_checked"] == 5
    # The same prompt again: the cache starts over, so the tokens repeat.
    assert p.generate([1, 2, 3], 4)["tokens"] == r["tokens"]
    with pytest.raises(graft.UserError, match="negative"):
        p.generate([1], -1)


def test_generate_needs_a_kv_cache_program(program):
    with pytest.raises(graft.UserError, match="input_pos"):
        graft.Program(program[0]).generate([1], 1)


def test_compile_issues_the_fusion_warnings(tmp_path):
    pat = tmp_path / "self.pat"
    pat.write_text(SELF_MATCHING_RULE)
    gir = tmp_path / "neg.gir"
    gir.write_text(NEG_GRAPH)
    with pytest.warns(UserWarning, match="stopped at its rewrite limit"):
        graft.compile(gir, tmp_path / "neg.vkprog", rules=[pat], default_rules=False)
    assert (tmp_path / "neg.vkprog").exists()
