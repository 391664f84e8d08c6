// ExecuTorch Llama `-qmode int8` (weight-only int8 per channel) -> aten._weight_int8pack_mm.
//
// Seed: pytorch/executorch examples/models/llama/source_transformation/quantize.py
// (cff6f4dd): `quantize(qmode="int8")` runs WeightOnlyInt8QuantHandler, which swaps each
// nn.Linear for WeightOnlyInt8Linear (no bias) holding the buffers `weight` (int8 [N, K],
// symmetric per output channel, dynamically_quantize_per_channel with [-128, 127]) and
// `scales` ([N]), whose forward is
//   F.linear(input, self.weight.to(dtype=input.dtype)) * self.scales
// examples/models/llama/export_llama_lib.py then casts the model to the compute dtype
// (`m.to(dtype=dtype_override)` after the quantization transforms), so the scales are in
// the activation's dtype. torch.export records:
//   %wf : f32[N, K]    = aten._to_copy(%w : i8[N, K], dtype=f32)
//   %l  : f32[M, N]    = aten.linear(%x : f32[M, K], %wf)
//   %y  : f32[M, N]    = aten.mul.Tensor(%l, %s : f32[N])
// ET-VK has no pattern for this module (its weight-only int8 fusion,
// backends/vulkan/_passes/fuse_quantized_ops.py, reads dequantize_per_channel only), so
// without this rule the whole weight is converted to float on the device and multiplied
// in float. The module's math is the one ATen's _weight_int8pack_mm computes
// (int8mm_kernel: (sum_k x[m, k] * w[n, k]) * scales[n], in the activation's opmath),
// which keeps the weight in int8:
//   %y  : f32[M, N]    = aten._weight_int8pack_mm(%x, %w, %s)
// A rank-3 activation [B, S, K] (the projections; the last-token lm_head is 2-D) is
// flattened to [-1, K] and viewed back, as pt2e_linear_int8pack_3d does (that rule's
// header explains reshape/view and the -1 for a symbolic S).
//
// Numerics. int8 -> f32/f16 is exact, and both sides accumulate sum_k x*w in f32
// sequentially (docs/numerics.md), so in f32 the product rounded once and then multiplied
// by s is the same computation on both sides: bit-exact. In f16 the linear rounds the sum
// to f16 before the f16 multiply rounds again, where the fused op rounds (sum * s) once:
// within one f16 ulp of the result (rtol 2^-10), plus the f16 subnormal step (atol 2^-24).
// Only f32 and f16 (ET-VK's dtypes); bf16 compute stays on the CPU.
//
// Also torchao's int8 weight-only form, IntxWeightOnlyConfig(weight_dtype=torch.int8,
// granularity=PerAxis(0)) (pytorch/ao 36027d82 torchao/quantization/quant_api.py, unwrapped:
// IntxUnpackedToInt8Tensor.dequantize()), which ET-VK leaves unfused too
// (backends/vulkan/patterns/quantized_linear.py routes weight-only matches to linear_q4gsw
// only, for weights in the 4-bit range):
//   %w : f32[N, K] = torchao.dequantize_affine(%qw : i8[N, K], [1, K], %s : [N, 1], %zp,
//                                              i8, -128, 127)
//   %y : f32[M, N] = aten.linear(%x, %w[, %b])
// becomes _weight_int8pack_mm(x, qw, s as f32 [N]) (+ add b). A weight whose values fit in
// 4 bits is linear_4w.pat's (benefit 20 > 10), as upstream routes it. Numerics as
// pt2e_qdq.pat's int8pack rules: the dequantize rounds q * s per element, the fused op
// scales the finished sum, (sum_k x * q) * s; atol 1e-3, rtol 1e-5 on the verification
// domain (see pt2e_qdq.pat's header for the bound). Symmetric only (zero point absent or
// zero): _weight_int8pack_mm has no zero point. bf16/f16 scales widen to f32 exactly (the
// dequantize multiplies in f32 too).
//
// Verification ranges: x is a Llama projection's input (normalized hidden states O(1..10),
// the FFN's w2 input up to hundreds): [-128, 128) for the f32 rules; the torchao scales are
// symmetric per-channel int8 scales of Llama weights (a row's max |w| / 127.5): [0.0005,
// 0.005), and over that domain the int8pack bound (pt2e_qdq.pat) is 0.04, measured 2.2e-4.
// The f16 rules keep |x| < 4: the module's F.linear sums x * q with the unscaled int8
// weight and rounds that sum to f16, which is inf past 65504 (K * |x| * 127 = 65024 at
// K = 64, |x| = 8), while _weight_int8pack_mm scales in f32 before rounding and stays
// finite. Where the original overflows (a long K, e.g. a w2 projection, with large
// activations) the fused op gives a finite value instead of inf: the rules do not
// reproduce that overflow.

/// WeightOnlyInt8Linear, f32, 2-D activation -> aten._weight_int8pack_mm. Bit-exact.
rule et_int8_weight_only_linear benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %wf = aten._to_copy(param $qw : i8[$N, $K], dtype = f32)
        | dim_order_ops._to_dim_order_copy(param $qw : i8[$N, $K], dtype = f32)
    %l  = aten.linear($x : f32[$M, $K], %wf)
    %y  = aten.mul.Tensor(%l, param $s : f32[$N])
  }
  rewrite {
    %y = aten._weight_int8pack_mm($x, $qw, $s)
  }
  example {
    M = [1, 4]
    N = [8, 12]
    K = [8, 64]
    qw = uniform(-128, 128)
    s = uniform(0.0001, 0.05)
    x = uniform(-128, 128)
  }
}

/// WeightOnlyInt8Linear, f32, rank-3 activation [B, S, K] -> reshape to [-1, K],
/// aten._weight_int8pack_mm, view back to [B, -1, N]. Bit-exact.
rule et_int8_weight_only_linear_3d benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %wf = aten._to_copy(param $qw : i8[$N, $K], dtype = f32)
        | dim_order_ops._to_dim_order_copy(param $qw : i8[$N, $K], dtype = f32)
    %l  = aten.linear($x : f32[$B, $S, $K], %wf)
    %y  = aten.mul.Tensor(%l, param $s : f32[$N])
  }
  where {
    $B >= 1 and $N >= 1 and $K >= 1
  }
  rewrite {
    %x2 = aten.reshape($x, [-1, $K])
    %mm = aten._weight_int8pack_mm(%x2, $qw, $s)
    %y  = aten.view(%mm, [$B, -1, $N])
  }
  example {
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    qw = uniform(-128, 128)
    s = uniform(0.0001, 0.05)
    x = uniform(-128, 128)
  }
}

/// WeightOnlyInt8Linear, f16 (`-d fp16`), 2-D activation -> aten._weight_int8pack_mm.
rule et_int8_weight_only_linear_f16 benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %wf = aten._to_copy(param $qw : i8[$N, $K], dtype = f16)
        | dim_order_ops._to_dim_order_copy(param $qw : i8[$N, $K], dtype = f16)
    %l  = aten.linear($x : f16[$M, $K], %wf)
    %y  = aten.mul.Tensor(%l, param $s : f16[$N])
  }
  rewrite {
    %y = aten._weight_int8pack_mm($x, $qw, $s)
  }
  example {
    M = [1, 4]
    N = [8, 12]
    K = [8, 64]
    qw = uniform(-128, 128)
    s = uniform(0.0001, 0.05)
    x = uniform(-4, 4)
  }
  tolerance(atol = 6e-8, rtol = 0.000977)
}

/// WeightOnlyInt8Linear, f16, rank-3 activation -> reshape, aten._weight_int8pack_mm, view.
rule et_int8_weight_only_linear_f16_3d benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %wf = aten._to_copy(param $qw : i8[$N, $K], dtype = f16)
        | dim_order_ops._to_dim_order_copy(param $qw : i8[$N, $K], dtype = f16)
    %l  = aten.linear($x : f16[$B, $S, $K], %wf)
    %y  = aten.mul.Tensor(%l, param $s : f16[$N])
  }
  where {
    $B >= 1 and $N >= 1 and $K >= 1
  }
  rewrite {
    %x2 = aten.reshape($x, [-1, $K])
    %mm = aten._weight_int8pack_mm(%x2, $qw, $s)
    %y  = aten.view(%mm, [$B, -1, $N])
  }
  example {
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    qw = uniform(-128, 128)
    s = uniform(0.0001, 0.05)
    x = uniform(-4, 4)
  }
  tolerance(atol = 6e-8, rtol = 0.000977)
}

/// torchao int8 weight-only per channel, 2-D activation -> aten._weight_int8pack_mm.
rule torchao_linear_int8pack benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K], param $ws : $sdt[$N, 1], $wzp,
                                   i8, $wqmin, $wqmax, output_dtype = f32)
    %y = aten.linear($x : f32[$M, $K], %w)
  }
  where {
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
    is_float($sdt) and bits($sdt) <= 32
  }
  rewrite {
    $sc     = cast($ws, dtype = f32)
    $scales = reshape($sc, [-1])
    %y      = aten._weight_int8pack_mm($x, $qw, $scales)
  }
  example {
    M = [1, 4]
    N = [8, 12]
    K = [8, 64]
    sdt = [f32, bf16]
    wqmin = [-128, -127]
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// The same with a bias (the op has none: an add on its result).
rule torchao_linear_int8pack_bias benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K], param $ws : $sdt[$N, 1], $wzp,
                                   i8, $wqmin, $wqmax, output_dtype = f32)
    %y = aten.linear($x : f32[$M, $K], %w, $b : f32[$N])
  }
  where {
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
    is_float($sdt) and bits($sdt) <= 32
  }
  rewrite {
    $sc     = cast($ws, dtype = f32)
    $scales = reshape($sc, [-1])
    %mm     = aten._weight_int8pack_mm($x, $qw, $scales)
    %y      = aten.add.Tensor(%mm, $b)
  }
  example {
    M = [1, 4]
    N = [8, 12]
    K = [8, 64]
    sdt = [f32, bf16]
    wqmin = [-128, -127]
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// torchao int8 weight-only per channel on a rank-3 activation -> reshape, aten._weight_int8pack_mm,
/// view back.
rule torchao_linear_int8pack_3d benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K], param $ws : $sdt[$N, 1], $wzp,
                                   i8, $wqmin, $wqmax, output_dtype = f32)
    %y = aten.linear($x : f32[$B, $S, $K], %w)
  }
  where {
    $B >= 1 and $N >= 1 and $K >= 1
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
    is_float($sdt) and bits($sdt) <= 32
  }
  rewrite {
    $sc     = cast($ws, dtype = f32)
    $scales = reshape($sc, [-1])
    %x2     = aten.reshape($x, [-1, $K])
    %mm     = aten._weight_int8pack_mm(%x2, $qw, $scales)
    %y      = aten.view(%mm, [$B, -1, $N])
  }
  example {
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    sdt = [f32, bf16]
    wqmin = [-128, -127]
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// The rank-3 form with a bias: the add is on the restored [B, S, N] result.
rule torchao_linear_int8pack_bias_3d benefit 10 tags(linear, int8, weight_only) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K], param $ws : $sdt[$N, 1], $wzp,
                                   i8, $wqmin, $wqmax, output_dtype = f32)
    %y = aten.linear($x : f32[$B, $S, $K], %w, $b : f32[$N])
  }
  where {
    $B >= 1 and $N >= 1 and $K >= 1
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
    is_float($sdt) and bits($sdt) <= 32
  }
  rewrite {
    $sc     = cast($ws, dtype = f32)
    $scales = reshape($sc, [-1])
    %x2     = aten.reshape($x, [-1, $K])
    %mm     = aten._weight_int8pack_mm(%x2, $qw, $scales)
    %v      = aten.view(%mm, [$B, -1, $N])
    %y      = aten.add.Tensor(%v, $b)
  }
  example {
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    sdt = [f32, bf16]
    wqmin = [-128, -127]
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}
