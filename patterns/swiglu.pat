// SwiGLU -> et_vk.swiglu (ExecuTorch backends/vulkan/patterns/swiglu.py at
// 5721f54c, find_swiglu_pattern; pytorch/executorch PR 22979, "[Vulkan] Fuse
// SwiGLU elementwise operations").
//
// Before (Llama's FeedForward `w2(F.silu(w1(x)) * w3(x))`,
// examples/models/llama/feed_forward.py, as torch.export writes it, f32):
//   %gate : f32[1, s0, 256] = <w1 linear>(%x)
//   %silu : f32[1, s0, 256] = aten.silu.default(%gate)
//   %up   : f32[1, s0, 256] = <w3 linear>(%x)
//   %mul  : f32[1, s0, 256] = aten.mul.Tensor(%silu, %up)
// or, where silu was decomposed (upstream's edge-dialect spelling):
//   %sig  : f32[1, s0, 256] = aten.sigmoid.default(%gate)
//   %gs   : f32[1, s0, 256] = aten.mul.Tensor(%gate, %sig)
//   %mul  : f32[1, s0, 256] = aten.mul.Tensor(%gs, %up)
// After:
//   %mul  : f32[1, s0, 256] = et_vk.swiglu.default(%gate, %up)
//
// Conditions (upstream's, all in the patterns):
//  * either operand order of both multiplies (aten.mul.Tensor is commutative
//    in the op registry, so the pattern's order matches both);
//  * sigmoid's operand is the gate the inner multiply also reads;
//  * the silu value (and sigmoid, inner mul) has no other user: the matcher
//    only replaces nodes whose values stay inside the match;
//  * gate, up and every intermediate share one dtype, f16 or f32 (`$dt`).
//    bf16 stays unfused: Vulkan has no bf16, and upstream leaves it too.
//
// Numerics. et_vk.swiglu is (silu(gate.float()) * up.float()).to(dtype) with
// silu(x) = x / (1 + exp(-x)) (PyTorch's CPU silu), as the PR describes ("FP16
// inputs are evaluated in FP32 with one output conversion"). In f32 the silu
// spelling rounds exactly where aten.silu and aten.mul round: swiglu_f32 is
// bit-exact. The others differ by rounding only:
//  * sigmoid*mul in f32: x * (1 / (1 + e)) rounds twice where silu rounds once
//    (<= ~2 ulp of f32 in the result); where sigmoid is subnormal (gate below
//    ~-87) the decomposed value loses relative precision but is < 1e-36;
//    rtol 2^-20, atol 1e-30;
//  * f16: the decomposed graph rounds silu (or sigmoid and gate*sigmoid) to
//    f16 before the multiply; the fused op rounds once (<= ~2 ulp of f16):
//    rtol 2^-8. Below gate ~ -10 silu (and sigmoid) are f16 subnormals,
//    rounded to multiples of 2^-24, and below ~ -17 sigmoid is 0: the
//    decomposed value is off by up to ~|gate| * 2^-25 * |up| absolute
//    (gate ~ -17 is the worst), which |up| scales past any relative bound:
//    atol 2^-12 covers |up| < 256 (2^-20 did only |up| < 1). Both overflow to
//    the same inf; a product that lands between 65504 and the rounding
//    boundary may be finite fused and inf decomposed (not seen in 2000
//    instances).
// The examples draw gate and up wide (`uniform`, docs/dsl.md) so that
// verify-rules covers these regions: f32 gate in [-200, 200) (sigmoid
// subnormal below ~-87, exp overflowing to a -0 silu below ~-89), up in
// [-1000, 1000); f16 gate in [-300, 300) and up in [-256, 256), products past
// 65504.
// Swapping gate and up changes results by far more than these bounds
// (silu(g) * u vs silu(u) * g differ by O(1) for inputs in [-1, 1)).

/// Llama's `F.silu(w1(x)) * w3(x)` in f32 -> et_vk.swiglu. Bit-exact.
rule swiglu_f32 benefit 10 tags(activation) backend vulkan {
  match {
    %s   = aten.silu($gate : f32[..., $D])
    %out = aten.mul.Tensor(%s, $up : f32[..., $D])
  }
  rewrite {
    %out = et_vk.swiglu($gate, $up)
  }
  example { D = [8, 64], gate = uniform(-200, 200), up = uniform(-1000, 1000) }
}

/// `F.silu(gate) * up` in f16 -> et_vk.swiglu. One rounding fewer.
rule swiglu_f16 benefit 10 tags(activation) backend vulkan {
  match {
    %s   = aten.silu($gate : f16[..., $D])
    %out = aten.mul.Tensor(%s, $up : f16[..., $D])
  }
  rewrite {
    %out = et_vk.swiglu($gate, $up)
  }
  example { D = [8, 64], gate = uniform(-300, 300), up = uniform(-256, 256) }
  tolerance(atol = 0.000244140625, rtol = 0.00390625)
}

/// Decomposed silu `gate * sigmoid(gate) * up` (upstream's matched form) in
/// f32 -> et_vk.swiglu. Differs by rounding (see the header).
rule swiglu_sigmoid_f32 benefit 10 tags(activation) backend vulkan {
  match {
    %sg  = aten.sigmoid($gate : f32[..., $D])
    %s   = aten.mul.Tensor($gate, %sg)
    %out = aten.mul.Tensor(%s, $up : f32[..., $D])
  }
  rewrite {
    %out = et_vk.swiglu($gate, $up)
  }
  example { D = [8, 64], gate = uniform(-200, 200), up = uniform(-1000, 1000) }
  tolerance(atol = 1e-30, rtol = 9.5367431640625e-07)
}

/// `gate * sigmoid(gate) * up` in f16 -> et_vk.swiglu. Differs by rounding.
rule swiglu_sigmoid_f16 benefit 10 tags(activation) backend vulkan {
  match {
    %sg  = aten.sigmoid($gate : f16[..., $D])
    %s   = aten.mul.Tensor($gate, %sg)
    %out = aten.mul.Tensor(%s, $up : f16[..., $D])
  }
  rewrite {
    %out = et_vk.swiglu($gate, $up)
  }
  example { D = [8, 64], gate = uniform(-300, 300), up = uniform(-256, 256) }
  tolerance(atol = 0.000244140625, rtol = 0.00390625)
}
