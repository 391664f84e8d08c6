"""graft.fx: torch.fx GraphModules in, fused GraphModules out, and the
torch.library registrations of the ops graft knows (Debian's torch 1.13: no
torch.export, so the graphs come from torch.fx.symbolic_trace)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import graft  # noqa: E402
import graft.fx  # noqa: E402
from conftest import PATTERNS  # noqa: E402

LINEAR_RULES = graft.RuleSet([PATTERNS / "linear_4w.pat"])


def quantize_int4(w, group):
    """Symmetric int4 per-group quantization as torchao's quant_primitives compute it."""
    n, k = w.shape
    groups = w.reshape(n, k // group, group)
    scale = (groups.abs().amax(dim=-1) / 7.5).clamp(min=torch.finfo(torch.float32).eps)
    q = torch.clamp(torch.round(groups / scale.unsqueeze(-1)), -8, 7).to(torch.int8)
    return q.reshape(n, k), scale


class Int4Linear(torch.nn.Module):
    """torchao int4 weight-only as it writes the graph (pytorch/ao
    torchao/quantization/quant_primitives.py): dequantize_affine(qdata, [1, G],
    scale, zero_point, int8, -8, 7, output_dtype=float32) -> linear."""

    def __init__(self, k, n, group, bias=False, seed=0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        q, scale = quantize_int4(torch.randn(n, k, generator=gen), group)
        self.group = group
        self.weight = torch.nn.Parameter(q, requires_grad=False)
        self.scale = torch.nn.Parameter(scale, requires_grad=False)
        self.zero_point = torch.nn.Parameter(torch.zeros(n, k // group, dtype=torch.int8),
                                             requires_grad=False)
        self.bias = torch.nn.Parameter(torch.randn(n, generator=gen)) if bias else None

    def forward(self, x):
        w = torch.ops.torchao.dequantize_affine(self.weight, [1, self.group], self.scale,
                                                self.zero_point, torch.int8, -8, 7,
                                                output_dtype=torch.float32)
        return F.linear(x, w, self.bias)


class TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = Int4Linear(64, 96, 32, bias=True, seed=1)
        self.down = Int4Linear(96, 32, 32, seed=2)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


class Int8DynInt4Linear(Int4Linear):
    """torchao 8da4w (Int8DynamicActivationIntxWeightConfig, as exported): the
    activation is quantized per token with choose_qparams_affine ->
    quantize_affine -> dequantize_affine, the weight as in Int4Linear."""

    def forward(self, x):
        qparams = torch.ops.torchao.choose_qparams_affine(
            x, "ASYMMETRIC", [1, 64], torch.int8, -128, 127, torch.finfo(torch.float32).eps,
            torch.float32, torch.int8)
        s, zp = qparams[0], qparams[1]
        q = torch.ops.torchao.quantize_affine(x, [1, 64], s, zp, torch.int8, -128, 127)
        xdq = torch.ops.torchao.dequantize_affine(q, [1, 64], s, zp, torch.int8, -128, 127,
                                                  output_dtype=torch.float32)
        w = torch.ops.torchao.dequantize_affine(self.weight, [1, self.group], self.scale,
                                                self.zero_point, torch.int8, -8, 7,
                                                output_dtype=torch.float32)
        return F.linear(xdq, w)


class Int4Embedding(torch.nn.Module):
    """torchao int4 weight-only embedding: dequantize_affine -> F.embedding."""

    def __init__(self, vocab, dim, group):
        super().__init__()
        q, scale = quantize_int4(torch.randn(vocab, dim, generator=torch.Generator().manual_seed(4)),
                                 group)
        self.group = group
        self.weight = torch.nn.Parameter(q, requires_grad=False)
        self.scale = torch.nn.Parameter(scale, requires_grad=False)

    def forward(self, tokens):
        w = torch.ops.torchao.dequantize_affine(self.weight, [1, self.group], self.scale, None,
                                                torch.int8, -8, 7, output_dtype=torch.float32)
        return F.embedding(tokens, w)


def test_registers_the_ops_graft_knows():
    ops = graft.fx.registered_ops()
    for op in ("et_vk.linear_q4gsw.default", "et_vk.embedding_q4gsw.default",
               "torchao.dequantize_affine.default",
               "quantized_decomposed.dequantize_per_channel.default"):
        assert op in ops or op in graft.fx.refused_ops(), op
    assert "et_vk.linear_q4gsw.default" in ops
    assert "torchao.dequantize_affine.default" in ops


def test_registered_ops_run_graft_reference_kernels():
    q, scale = quantize_int4(torch.randn(4, 64), 32)
    got = torch.ops.torchao.dequantize_affine(q, [1, 32], scale, None, torch.int8, -8, 7)
    want = (q.float().reshape(4, 2, 32) * scale[:, :, None]).reshape(4, 64)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    x = torch.randn(6, 4, generator=torch.Generator().manual_seed(3))
    qt = torch.ops.quantized_decomposed.quantize_per_tensor(x, 0.05, 3, -128, 127, torch.int8)
    # quantized_decomposed multiplies by the reciprocal (upstream _decomposed.py).
    want_q = torch.clamp(torch.round(x * (1.0 / 0.05)) + 3, -128, 127).to(torch.int8)
    torch.testing.assert_close(qt, want_q, rtol=0, atol=0)
    dq = torch.ops.quantized_decomposed.dequantize_per_tensor(qt, 0.05, 3, -128, 127, torch.int8)
    torch.testing.assert_close(dq, (qt.float() - 3) * 0.05, rtol=0, atol=0)


def test_to_graft_keeps_fqns_kinds_and_shapes():
    gm = torch.fx.symbolic_trace(TwoLayers())
    g = graft.fx.to_graft(gm, (torch.randn(3, 64),))
    inputs = {i.fqn or i.name: i for i in g.inputs}
    assert inputs["x"].kind == "input" and inputs["x"].shape == [3, 64]
    assert inputs["up.weight"].kind == "param" and inputs["up.weight"].dtype == "i8"
    assert inputs["up.scale"].shape == [96, 2] and inputs["down.zero_point"].dtype == "i8"
    np.testing.assert_array_equal(g.constant("up.weight"), gm.up.weight.numpy())
    assert [n.target for n in g.nodes].count("torchao.dequantize_affine.default") == 2
    assert g.verify() == []


def test_fuse_torchao_int4_into_linear_q4gsw():
    gm = torch.fx.symbolic_trace(TwoLayers())
    x = torch.randn(5, 64)
    fused, report = graft.fx.fuse(gm, (x,), LINEAR_RULES)
    assert isinstance(fused, torch.fx.GraphModule)
    assert report.rule_counts == {"torchao_linear_q4gsw_bias": 1, "torchao_linear_q4gsw": 1}
    calls = [n.target for n in fused.graph.nodes if n.op == "call_function"]
    assert calls.count(torch.ops.et_vk.linear_q4gsw.default) == 2
    assert torch.ops.torchao.dequantize_affine.default not in calls
    # Repacked weights are registered under the FQNs graft's registry gave them.
    fqns = {p["fqn"] for p in report.provenance}
    assert "up.weight.pack_int4_low_first" in fqns
    for fqn in fqns:
        if any(n.op == "get_attr" and n.target == fqn for n in fused.graph.nodes):
            assert isinstance(fused.get_buffer(fqn), torch.Tensor)
    packed = fused.get_buffer("up.weight.pack_int4_low_first")
    assert packed.dtype == torch.uint8 and tuple(packed.shape) == (96, 32)
    # Unfused constants are the original module's own tensors.
    assert fused.get_parameter("up.bias") is gm.get_parameter("up.bias") or torch.equal(
        fused.get_parameter("up.bias"), gm.get_parameter("up.bias"))
    with torch.no_grad():
        want, got = gm(x), fused(x)
    # torchao_linear_q4gsw states no tolerance (exact on graft's reference
    # interpreter); PyTorch's own matmul in the original sums in another order,
    # within the dot-product bound K * eps * |x||w| per layer.
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


def test_fuse_is_exact_on_the_reference_interpreter():
    gm = torch.fx.symbolic_trace(TwoLayers())
    x = torch.randn(2, 64)
    before = graft.fx.to_graft(gm, (x,))
    after = graft.fx.to_graft(gm, (x,))
    after.fuse(LINEAR_RULES)
    a = graft.interpret(before, {"x": x.numpy()})
    b = graft.interpret(after, {"x": x.numpy()})
    for u, v in zip(a.values(), b.values()):
        np.testing.assert_array_equal(u, v)


def test_fuse_with_shipped_rules():
    gm = torch.fx.symbolic_trace(Int4Linear(64, 32, 32))
    x = torch.randn(1, 64)
    fused, report = graft.fx.fuse(gm, (x,))
    assert report.rule_counts.get("torchao_linear_q4gsw") == 1
    torch.testing.assert_close(fused(x), gm(x), rtol=1e-5, atol=1e-4)


def test_unfusable_graph_round_trips():
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x):
            return torch.relu(self.lin(x)) + 1.0, x

    gm = torch.fx.symbolic_trace(Plain())
    x = torch.randn(2, 8)
    fused, report = graft.fx.fuse(gm, (x,), LINEAR_RULES)
    assert report.num_rewrites == 0
    got, want = fused(x), gm(x)
    assert isinstance(got, tuple) and len(got) == 2
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])


def test_conversion_errors_are_graft_errors():
    class Method(torch.nn.Module):
        def forward(self, x):
            return x.view(-1)

    gm = torch.fx.symbolic_trace(Method())
    with pytest.raises(graft.ConversionError, match="method"):
        graft.fx.fuse(gm, (torch.randn(2, 2),))
    good = torch.fx.symbolic_trace(Int4Linear(64, 32, 32))
    with pytest.raises(graft.ConversionError, match="example inputs"):
        graft.fx.fuse(good, (torch.randn(2, 3),))  # wrong shape for the module
    with pytest.raises(graft.ConversionError, match="GraphModule"):
        graft.fx.fuse(Int4Linear(64, 32, 32), (torch.randn(1, 64),))
    # A bad call of a registered op raises graft's diagnostic, not a crash.
    with pytest.raises(graft.UserError):
        torch.ops.et_vk.linear_q4gsw(torch.randn(2, 64), torch.zeros(4, 3, dtype=torch.uint8),
                                     torch.ones(2, 4), 32)


def test_fuse_8da4w_multi_result_ops():
    gm = torch.fx.symbolic_trace(Int8DynInt4Linear(64, 32, 32))
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(5))
    fused, report = graft.fx.fuse(gm, (x,), graft.RuleSet([PATTERNS / "linear_8da4w.pat"]))
    assert report.rule_counts == {"torchao_linear_dq8ca_q4gsw": 1}
    calls = [n.target for n in fused.graph.nodes if n.op == "call_function"]
    assert torch.ops.et_vk.linear_dq8ca_q4gsw.default in calls
    assert torch.ops.torchao.choose_qparams_affine.default in calls  # shared: it feeds the op
    # Derived constants (the weight sums, computed from the packed weight) are
    # registered too, under their FQN or, where a prefix is a tensor, flattened.
    assert fused.graft_attributes["weight.pack_int4_low_first"] == "weight.pack_int4_low_first"
    for fqn, path in fused.graft_attributes.items():
        assert path.replace(".", "_") == fqn.replace(".", "_")  # same name, dots or not
        assert isinstance(fused.get_buffer(path), torch.Tensor)
    # The rule's stated tolerance (patterns/linear_8da4w.pat): atol 1e-3, rtol 1e-5.
    torch.testing.assert_close(fused(x), gm(x), atol=1e-3, rtol=1e-5)


def test_fuse_int4_embedding():
    gm = torch.fx.symbolic_trace(Int4Embedding(64, 128, 32))
    tokens = torch.tensor([[0, 5, 63, 7]])
    fused, report = graft.fx.fuse(gm, (tokens,), graft.RuleSet([PATTERNS / "embedding.pat"]))
    assert report.rule_counts == {"torchao_embedding_q4gsw": 1}
    calls = [n.target for n in fused.graph.nodes if n.op == "call_function"]
    assert calls == [torch.ops.et_vk.embedding_q4gsw.default]
    torch.testing.assert_close(fused(tokens), gm(tokens), rtol=0, atol=0)
