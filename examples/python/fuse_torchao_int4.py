#!/usr/bin/env python3
"""Fuse a torchao int4 weight-only linear (torch.fx) into et_vk.linear_q4gsw and
compare both modules in PyTorch (docs/python.md).

    PYTHONPATH=build/python python3 examples/python/fuse_torchao_int4.py

The module writes its graph as torchao's int4 weight-only quantization leaves
an exported one (pytorch/ao torchao/quantization/quant_primitives.py,
IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(G))):
the int8-stored 4-bit weight, one scale per group of G input channels and
all-zero zero points go through torchao::dequantize_affine(qdata, [1, G],
scale, zero_point, torch.int8, -8, 7, output_dtype=torch.float32), then
F.linear. Without torchao installed, graft registers torchao::dequantize_affine
(and et_vk::*) with torch.library, implemented by its reference kernels.
"""

import sys

import torch
import torch.nn.functional as F

import graft
import graft.fx


def quantize_int4(w: torch.Tensor, group: int):
    """Symmetric int4 per-group quantization as torchao's choose_qparams_affine /
    quantize_affine compute it (MappingType.SYMMETRIC, range [-8, 7])."""
    n, k = w.shape
    groups = w.reshape(n, k // group, group)
    scale = groups.abs().amax(dim=-1) / ((7 - (-8)) / 2)
    scale = scale.clamp(min=torch.finfo(torch.float32).eps)
    q = torch.clamp(torch.round(groups / scale.unsqueeze(-1)), -8, 7).to(torch.int8)
    return q.reshape(n, k), scale


class Int4Linear(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int, group: int):
        super().__init__()
        torch.manual_seed(0)
        q, scale = quantize_int4(torch.randn(out_features, in_features), group)
        self.group = group
        # Parameters (not buffers) so symbolic_trace records get_attr nodes.
        self.weight = torch.nn.Parameter(q, requires_grad=False)
        self.scale = torch.nn.Parameter(scale, requires_grad=False)
        self.zero_point = torch.nn.Parameter(torch.zeros_like(q[:, ::group]),
                                             requires_grad=False)

    def forward(self, x):
        w = torch.ops.torchao.dequantize_affine(self.weight, [1, self.group], self.scale,
                                                self.zero_point, torch.int8, -8, 7,
                                                output_dtype=torch.float32)
        return F.linear(x, w)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = Int4Linear(128, 64, 32)
        self.out = Int4Linear(64, 32, 32)

    def forward(self, x):
        return self.out(torch.relu(self.proj(x)))


def main() -> int:
    model = Model().eval()
    gm = torch.fx.symbolic_trace(model)
    x = torch.randn(4, 128)
    fused, report = graft.fx.fuse(gm, (x,))

    print(report)
    print("fused graph:")
    print(fused.graph)
    fused_ops = [n.target for n in fused.graph.nodes if n.op == "call_function"]
    if fused_ops.count(torch.ops.et_vk.linear_q4gsw.default) != 2:
        print("error: expected both linears fused into et_vk.linear_q4gsw", file=sys.stderr)
        return 1

    with torch.no_grad():
        want = gm(x)
        got = fused(x)
    diff = (got - want).abs().max().item()
    # The rule (patterns/linear_4w.pat, torchao_linear_q4gsw) states no
    # tolerance: exact on graft's reference interpreter, checked below. In
    # PyTorch the original's F.linear runs torch's own matmul, which sums in
    # another order; docs/numerics.md bounds that to a few ulps of the
    # accumulated magnitude: the standard dot-product bound K * eps * |x||w|.
    w1 = gm.proj.weight.float() * gm.proj.scale.repeat_interleave(32, dim=1)
    h = torch.relu(F.linear(x, w1))
    w2 = gm.out.weight.float() * gm.out.scale.repeat_interleave(32, dim=1)
    eps = torch.finfo(torch.float32).eps
    bound = (128 * eps * (F.linear(x.abs(), w1.abs()).abs().max())
             * w2.abs().sum(dim=1).max() + 64 * eps * F.linear(h, w2.abs()).max()).item()
    print(f"max |fused - original| in PyTorch: {diff:.3g} (bound {bound:.3g})")

    # The rule's own bound (exact) on graft's reference interpreter.
    original = graft.fx.to_graft(gm, (x,))
    after = graft.fx.to_graft(gm, (x,))
    after.fuse()
    a = graft.interpret(original, {"x": x.numpy()})
    b = graft.interpret(after, {"x": x.numpy()})
    # The fused graph names its output after the new node: compare by position.
    exact = all((u == v).all() for u, v in zip(a.values(), b.values()))
    print(f"reference interpreter, before vs after fusion: "
          f"{'bit-identical' if exact else 'DIFFERENT'} (the rule's tolerance is 0)")
    return 0 if diff <= bound and exact else 1


if __name__ == "__main__":
    sys.exit(main())
