"""graft's Python API without torch: graphs, rules, fusion, explain, coverage,
verify-rules, the interpreter and errors."""

import re

import numpy as np
import pytest

import graft
from conftest import NEG_GRAPH, PATTERNS, SELF_MATCHING_RULE, TINY, run_cli

EMBEDDING_RULES = [PATTERNS / "embedding.pat"]


def tiny_reference(g, tokens):
    # What the tiny graph computes: torchao's dequantize_affine (groups of 32
    # along D, no zero point), then the embedding lookup.
    w = g.constant("tok_embeddings.weight").astype(np.float32)
    s = g.constant("tok_embeddings.scales")
    dq = (w.reshape(64, 4, 32) * s[:, :, None]).reshape(64, 128)
    return dq[tokens]


def test_version_matches_cli():
    out = run_cli("--version").stdout
    assert re.search(r"\b" + re.escape(graft.__version__) + r"\b", out), out


def test_load_text_ir_prints_canonically():
    g = graft.load(TINY)
    text = str(g)
    assert text.startswith("graph @tiny_embedding {")
    assert "torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7" in text
    assert str(graft.parse(text)) == text  # canonical: printing is a fixpoint
    assert len(g) == 2 and g.name == "tiny_embedding" and g.path == str(TINY)


def test_inputs_have_kinds_and_fqns():
    inputs = {i.name: i for i in graft.load(TINY).inputs}
    assert inputs["w"].kind == "param" and inputs["w"].fqn == "tok_embeddings.weight"
    assert inputs["w"].dtype == "i8" and inputs["w"].shape == [64, 128]
    assert inputs["s"].fqn == "tok_embeddings.scales" and inputs["s"].has_data
    assert inputs["tokens"].kind == "input" and inputs["tokens"].fqn is None
    assert [o.name for o in graft.load(TINY).outputs] == ["out"]


def test_nodes_expose_targets_and_arguments():
    nodes = graft.load(TINY).nodes
    assert [n.target for n in nodes] == ["torchao.dequantize_affine.default",
                                         "aten.embedding.default"]
    dq = nodes[0]
    assert dq.args[:2] == [("%", "w"), [1, 32]] and dq.args[4] == ("dtype", "i8")
    assert dq.kwargs == {"output_dtype": ("dtype", "f32")}
    assert dq.outputs[0]["shape"] == [64, 128]


def test_save_text_and_pt2_round_trip(tmp_path):
    g = graft.load(TINY)
    g.save(tmp_path / "copy.gir")
    assert str(graft.load(tmp_path / "copy.gir")) == str(g)
    g.save(tmp_path / "copy.pt2")
    back = graft.load(tmp_path / "copy.pt2")
    assert [(i.kind, i.fqn) for i in back.inputs] == [(i.kind, i.fqn) for i in g.inputs]
    np.testing.assert_array_equal(back.constant("tok_embeddings.scales"),
                                  g.constant("tok_embeddings.scales"))


def test_pt2_constants_are_mapped_without_a_copy(llama_pt2):
    g = graft.load(llama_pt2)
    text = str(g)  # weights print as file() references into the archive, not inline
    assert f'file("{llama_pt2}", offset=' in text and len(text) < 100_000
    g.save(llama_pt2.parent / "llama.gir")  # references the archive relative to the text
    assert 'file("llama.pt2", offset=' in (llama_pt2.parent / "llama.gir").read_text()
    back = graft.load(llama_pt2.parent / "llama.gir")
    fqn = next(i.fqn for i in g.inputs if i.kind == "param" and i.dtype == "i8")
    data, dtype = g._g.constant(fqn)
    assert data.mapped and dtype == "i8"  # graft's storage is the archive's mapping
    a, b = g.constant(fqn), g.constant(fqn)
    assert np.shares_memory(a, b)  # both view graft's storage: no copy was made
    assert not a.flags.writeable
    assert a.dtype == np.int8 and list(a.shape) == next(i.shape for i in g.inputs if i.fqn == fqn)
    assert a.min() >= -8 and a.max() <= 7
    constants = g.constants()
    assert set(constants) == {i.fqn for i in g.inputs if i.fqn and i.has_data}
    assert np.shares_memory(constants[fqn], a)
    np.testing.assert_array_equal(back.constant(fqn), a)


def test_ruleset_shipped_and_from_paths():
    shipped = graft.RuleSet()
    assert len(shipped) > 10 and "torchao_linear_q4gsw" in shipped.names
    assert "linear_4w.pat" in graft.shipped_rule_files()
    mine = graft.RuleSet(EMBEDDING_RULES)
    assert mine.names == ["torchao_embedding_q4gsw", "qd_embedding_4bit_q4gsw",
                          "qd_embedding_4bit_q4gsw_per_row", "qd_embedding_2bit_q4gsw",
                          "qd_embedding_2bit_q4gsw_per_row", "torchao_embedding_byte"]
    assert any(f.endswith("embedding.pat") for f in mine.files)
    assert len(graft.RuleSet(PATTERNS)) == len(shipped)  # a directory: its *.pat files


def test_lossy_rules_are_opt_in():
    # qdq_fold_q_dq drops a simulated quantization (error up to s/2): it is
    # loaded but runs only with allow_lossy=True, as graft fuse --allow-lossy.
    src = PATTERNS.parent / "tests/golden/rules/qdq_q_dq_fold/input.gir"
    default = graft.RuleSet()
    assert not default.allow_lossy and default.held_back == ["qdq_fold_q_dq"]
    assert "qdq_fold_q_dq" not in default.names
    kept = graft.load(src)
    assert kept.fuse(default).rule_counts == {}
    lossy = graft.RuleSet(allow_lossy=True)
    assert lossy.held_back == [] and "qdq_fold_q_dq" in lossy.names
    folded = graft.load(src)
    assert folded.fuse(lossy).rule_counts == {"qdq_fold_q_dq": 1}
    # verify_rules checks a lossy rule anyway, within its stated tolerance.
    (v,) = graft.verify_rules(PATTERNS / "qdq_fold.pat", instances=2, rules=["qdq_fold_q_dq"])
    assert v.ok


def test_check_returns_diagnostics(tmp_path):
    assert [d for d in graft.check(EMBEDDING_RULES) if d.severity == "error"] == []
    bad = tmp_path / "bad.pat"
    bad.write_text("rule r {\n  match { %y = aten.lnear($x, $w, none) }\n"
                   "  rewrite { %y = aten.relu($x) }\n}\n")
    diags = graft.check(bad)
    errors = [d for d in diags if d.severity == "error"]
    assert errors and errors[0].file == str(bad) and errors[0].line == 2
    assert "lnear" in errors[0].message and errors[0].location.startswith(f"{bad}:2:")


def test_fuse_reports_rewrites_counts_and_provenance():
    g = graft.load(TINY)
    report = g.fuse(graft.RuleSet(EMBEDDING_RULES))
    assert report.converged and report.num_rewrites == 1
    assert report.rule_counts == {"torchao_embedding_q4gsw": 1}
    (rw,) = report.rewrites
    assert rw.rule == "torchao_embedding_q4gsw" and rw.root == "out"
    assert rw.constants == ["tok_embeddings.weight.pack_int4_low_first"]
    (prov,) = report.provenance
    assert prov["fqn"] == "tok_embeddings.weight.pack_int4_low_first"
    assert prov["transform"] == "pack_int4" and prov["sources"] == ["tok_embeddings.weight"]
    assert prov["rule"] == "torchao_embedding_q4gsw"
    assert "fired torchao_embedding_q4gsw" in str(report)
    assert [n.target for n in g.nodes] == ["et_vk.embedding_q4gsw.default"]
    packed = g.constant("tok_embeddings.weight.pack_int4_low_first")
    assert packed.dtype == np.uint8 and packed.shape == (64, 64)


def test_fuse_with_shipped_rules_keeps_values():
    tokens = np.array([[0, 5, 63, 7, 7, 1, 2, 3]], dtype=np.int64)
    before = graft.interpret(TINY, {"tokens": tokens})["out"]
    g = graft.load(TINY)
    assert g.fuse().rule_counts == {"torchao_embedding_q4gsw": 1}
    after = graft.interpret(g, {"tokens": tokens})
    np.testing.assert_array_equal(next(iter(after.values())), before)


def int8_embedding_text():
    """TINY as an int8 embedding: int8 values, int8 range. The 4-bit rule decides on the
    data (values_in), since dequantize_affine's result does not depend on the range."""
    text = str(graft.load(TINY))
    return text.replace("min=-8, max=7", "min=-128, max=127").replace("i8, -8, 7", "i8, -128, 127")


def test_near_misses_name_the_failing_check():
    report = graft.parse(int8_embedding_text(), "wide.gir").fuse(graft.RuleSet(EMBEDDING_RULES))
    # The int8 table is torchao_embedding_byte's; the 4-bit rule reports why it missed.
    assert report.num_rewrites == 1
    misses = report.near_misses["torchao_embedding_q4gsw"]
    assert misses and "values_in" in misses[0][0] and misses[0][1] == 1


def test_explain_says_why():
    (entry,) = graft.explain(TINY, EMBEDDING_RULES, rule="torchao_embedding_q4gsw")
    assert entry.matched and entry.root == "out"
    wide = graft.parse(int8_embedding_text())
    (miss,) = graft.explain(wide, EMBEDDING_RULES, rule="torchao_embedding_q4gsw")
    assert not miss.matched and "values_in" in miss.check and "embedding.pat" in miss.loc
    with pytest.raises(graft.UserError, match="no rule named 'nope'"):
        graft.explain(TINY, EMBEDDING_RULES, rule="nope")


def test_coverage_json_and_html():
    report = graft.coverage([TINY], EMBEDDING_RULES, format="json")
    rules = {r["name"]: r for r in report["rules"]}
    assert rules["torchao_embedding_q4gsw"]["fired"] == 1
    html = graft.coverage(TINY, EMBEDDING_RULES, format="html", render_dot=False)
    assert html.lstrip().lower().startswith("<!doctype html") and "torchao_embedding_q4gsw" in html
    with pytest.raises(graft.UserError, match="xml|format"):
        graft.coverage(TINY, EMBEDDING_RULES, format="pdf")


def test_verify_rules():
    (v,) = graft.verify_rules(EMBEDDING_RULES, instances=2, rules=["torchao_embedding_q4gsw"])
    assert v.ok and v.rule == "torchao_embedding_q4gsw" and v.tested >= 1
    assert v.counterexample is None and "torchao_embedding_q4gsw" in str(v)


def test_verify_rules_finds_a_wrong_rule(tmp_path):
    wrong = tmp_path / "wrong.pat"
    wrong.write_text((PATTERNS / "embedding.pat").read_text().replace(
        "is_linear_weight = true", "is_linear_weight = false", 1))
    results = graft.verify_rules(wrong, instances=2, rules=["torchao_embedding_q4gsw"])
    assert results and not results[0].ok and results[0].counterexample.startswith("graph @")


def test_interpret_matches_numpy():
    g = graft.load(TINY)
    tokens = np.array([[0, 1, 2, 63, 9, 9, 30, 4]])
    out = graft.interpret(g, {"tokens": tokens})
    assert list(out) == ["out"] and out["out"].shape == (1, 8, 128)
    np.testing.assert_array_equal(out["out"], tiny_reference(g, tokens))
    np.testing.assert_array_equal(g.interpret({"%tokens": tokens})["out"], out["out"])


def test_errors_carry_diagnostics_and_never_crash(tmp_path):
    with pytest.raises(graft.UserError) as e:
        graft.load(tmp_path / "missing.gir")
    assert "missing.gir" in str(e.value)
    with pytest.raises(graft.UserError) as e:
        graft.parse("graph @g {\n  input %x : f32[4]\n  %y : f32[4] = aten.relu.default(%z)\n"
                    "  output %y\n}\n", "bad.gir")
    assert e.value.location.startswith("bad.gir:3:") and isinstance(e.value, graft.Error)
    assert "%z" in str(e.value) or "'z'" in str(e.value)
    assert e.value.diagnostics[0].severity == "error"
    g = graft.load(TINY)
    with pytest.raises(graft.UserError, match="missing input 'tokens'"):
        graft.interpret(g, {})
    with pytest.raises(graft.UserError, match="no user input 'nope'"):
        graft.interpret(g, {"tokens": np.zeros((1, 8), np.int64), "nope": np.zeros(1)})
    with pytest.raises(graft.UserError):  # index out of range: an error, not a crash
        graft.interpret(g, {"tokens": np.full((1, 8), 1000, np.int64)})
    with pytest.raises(graft.UserError, match="no constant"):
        g.constant("nope")
    with pytest.raises(graft.UserError):
        graft.RuleSet([tmp_path])  # a directory without .pat files
    with pytest.raises(graft.UserError):
        graft.Program(TINY)  # not a program file


def test_fuse_warns_when_a_rule_refires_on_its_output(tmp_path):
    # neg(x) -> neg(neg(neg(x))) keeps the meaning and matches its own output,
    # so the pass stops at the rewrite limit: the report says so at the rule.
    pat = tmp_path / "self.pat"
    pat.write_text(SELF_MATCHING_RULE)
    report = graft.parse(NEG_GRAPH).fuse(graft.RuleSet([pat]))
    assert not report.converged and report.stop_reason == "rewrite limit"
    assert len(report.warnings) == 1
    w = report.warnings[0]
    assert w["severity"] == "warning" and (w["line"], w["column"]) == (1, 6)
    assert "rule 'neg_triple' fired 1032 times" in w["message"]
    quiet = graft.parse(NEG_GRAPH).fuse(graft.RuleSet(EMBEDDING_RULES))
    assert quiet.converged and quiet.warnings == []
