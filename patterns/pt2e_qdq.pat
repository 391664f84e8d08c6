// PT2E static quantization (quantized_decomposed Q/DQ) -> Vulkan linears.
//
// Seeds: ExecuTorch backends/vulkan/_passes/fuse_quantized_ops.py
// (FuseQuantizedOpsTransform, the legacy "linear_qcnw" fusion: weight-only
// per-channel 8-bit -> aten._weight_int8pack_mm, 4-bit -> et_vk.linear_qcs4w,
// bias as a separate add) and backends/vulkan/patterns/quantized_linear.py
// (QuantizedLinearMatch: static per-tensor activation + per-channel weight ->
// et_vk.linear_q8ta_q8csw fed the int8 activation itself; with the output
// requantized, make_q8ta_linear_custom_op -> et_vk.q8ta_linear, or
// et_vk.q8ta_linear_gemv for one activation row; executorch cff6f4dd).
//
// Before (weight-only, 4-bit values in an int8 tensor):
//   %wdq : f32[N, K] = quantized_decomposed.dequantize_per_channel.default(%w, %s, %zp, 0, -8, 7, i8)
//   %y   : f32[M, N] = aten.linear.default(%x, %wdq, %b)
// After:
//   %mm  : f32[M, N] = et_vk.linear_qcs4w.default(%x, %w.pack_int4_high_first, %s)
//   %y   : f32[M, N] = aten.add.Tensor(%mm, %b)
//
// Before (static activation):
//   %xq  : i8[M, K]  = quantized_decomposed.quantize_per_tensor.default(%x, 0.02, 3, -128, 127, i8)
//   %xdq : f32[M, K] = quantized_decomposed.dequantize_per_tensor.default(%xq, 0.02, 3, -128, 127, i8)
//   %wdq : f32[N, K] = quantized_decomposed.dequantize_per_channel.default(%w, %s, %zp, 0, -127, 127, i8)
//   %y   : f32[M, N] = aten.linear.default(%xdq, %wdq, %b)
// After (the quantize stays: the fused op reads the int8 activation):
//   %xq  : i8[M, K]  = quantized_decomposed.quantize_per_tensor.default(%x, 0.02, 3, -128, 127, i8)
//   %y   : f32[M, N] = et_vk.linear_q8ta_q8csw.default(%xq, 0.02, 3, %w, %w.group_sums..., %s.pad..., %b)
//
// Before (static activation, requantized output, optional relu):
//   %xdq : f32[M, K] = quantized_decomposed.dequantize_per_tensor.default(%xq, 0.02, 3, -128, 127, i8)
//   %wdq : f32[N, K] = quantized_decomposed.dequantize_per_channel.default(%w, %s, %zp, 0, -127, 127, i8)
//   %lin : f32[M, N] = aten.linear.default(%xdq, %wdq, %b)
//   %r   : f32[M, N] = aten.relu.default(%lin)                     (optional)
//   %y   : i8[M, N]  = quantized_decomposed.quantize_per_tensor.default(%r, 0.05, -4, -128, 127, i8)
// After (M == 1: et_vk.q8ta_linear_gemv, same arguments):
//   %y   : i8[M, N]  = et_vk.q8ta_linear.default(%xq, 0.02, 3, %w, %w.group_sums..., %s.pad...,
//                                                 0.05, -4, %b, "relu")
// The requantized rules are rooted at the output quantize, below the linear
// that pt2e_linear_q8ta_q8csw is rooted at; the rewriter visits users before
// producers, so they get the first chance and the two never fight (without
// the output quantize, or when it does not match, the float-output rule still
// fuses the linear). Upstream's check is the same: the output quantize is
// what routes a static match to make_q8ta_linear_custom_op.
//
// Conditions, and where graft is stricter than upstream (each upstream gap
// would fuse a graph into something that computes different numbers):
//  * the weight is a constant int8 [N, K] quantized per channel along axis 0
//    with f32 scales [N] (upstream checks neither the axis nor the scales'
//    shape in the legacy pass);
//  * symmetric: zero points absent or all zero. Upstream's legacy pass raises
//    NotImplementedError on asymmetric weights, and the q8csw path ignores
//    the weight zero point altogether; here an asymmetric weight simply does
//    not match (see tests/golden/rules/pt2e_asymmetric_no_fuse);
//  * 4 vs 8 bits is decided from the weight DATA, as upstream does
//    (values_in($w, -8, 7)); a data-free graph therefore takes the 8-bit path,
//    which is exact for any int8 weight;
//  * linear_qcs4w needs an even K (two values per byte) and takes any
//    activation rank; _weight_int8pack_mm takes a 2-D activation (ATen's
//    kernel checks it), so a rank-3 [B, S, K] or rank-4 activation (what a
//    Llama exports: x : [1, S, K]) is reshaped to [-1, K] and the result
//    viewed back to [..., N]. ET-VK's runtime does the same flattening inside
//    its kernel (QuantizedLinearQCSNW.cpp, check_linear_qcsnw_args accepts
//    mat1 of rank 2 or 3); graft keeps the op's ATen meaning and spells the
//    flattening out. reshape, not view, for the input: a linear's input may
//    be a non-contiguous view (reshape copies then); the matmul result is
//    contiguous, so a view restores the leading dims. The view takes -1 for
//    the sequence dim: a symbolic S (s0 under --dynamic-seq) cannot be
//    written as a literal size, and -1 recovers it from the element count.
//    -1 is ambiguous next to a zero-sized dim (ATen's view rejects it), so
//    these rules require the other dims, K and N to be at least 1;
//  * the scales are f32: PT2E's weight observers (PerChannelMinMaxObserver,
//    torch/ao/quantization/observer.py _calculate_qparams) create f32 scales
//    and int64 zero points, which convert_pt2e registers as buffers
//    _scale_<i> / _zero_point_<i> next to the folded weight _frozen_param<i>.
//    f64 scales are not accepted: dequantize_per_channel would compute
//    q * s in f64 and round once, which no f32-scale kernel reproduces;
//  * the static-activation path needs K % 4 == 0 (upstream's texel-alignment
//    limit) and an int8 activation dequantized per tensor with float scale
//    and int zero point (quantize_per_tensor.default, not the .tensor form).
//
//  * the requantized rules need the output quantize to be
//    quantize_per_tensor.default(_, scale, zp, -128, 127, i8): the op's
//    reference (custom_ops_lib.py q8ta_linear) hard-codes that range, while
//    upstream's matcher reads only the scale and zero point of whatever
//    quantize follows, so it would change the clamp of a [-127, 127] or
//    uint8 quantize. Upstream also skips a view_copy between the linear and
//    the quantize (edge dialect decomposes a rank-3 linear); graft keeps
//    aten.linear whole, so there is none to skip.
//
// Numerics: linear_qcs4w and linear_q8ta_q8csw dequantize exactly as
// dequantize_per_channel does (w * s[n] in f32) and run the same f32 linear,
// so they are bit-exact. _weight_int8pack_mm computes (sum_k x*w) * s[n]
// (ATen int8mm_kernel) instead of sum_k x*(w*s[n]): the scale moves out of the
// sum, which changes the rounding, hence that rule's tolerance. The reshape
// and view of the rank-3/4 rules move no value, so those rules have the
// 2-D rule's tolerance. Bound: both sides sum K products sequentially in
// f32, so they differ by at most about (2K + 1) * 2^-24 * sum_k |x_k w_k| s_n.
// On the verification domain (|x| <= 128, s < 0.005, |w| <= 128, K <= 64,
// outputs up to ~5000, typically ~100) that worst case is 0.04 absolute; the
// largest difference seen in 2000 instances per rule is 2.4e-4, about 2 ulp
// of the output (rounding errors cancel). atol 1e-3 alone is 4x that (rtol
// 1e-5 adds 1e-3 at |y| = 100), while a wrong scale, transposition or reshape
// changes an output by O(|y|).
// q8ta_linear / q8ta_linear_gemv are bit-exact: their reference is the
// matched graph op for op (dequantize_per_tensor of x with the same scale
// and zero point, the same per-channel dequantize, F.linear, + bias, relu,
// quantize_per_tensor with the same scale, zero point and [-128, 127]), and
// the interpreter runs both the same way; nothing is reassociated.
//
// Verification ranges: the weight-only rules' x is a Llama projection's f32
// input (normalized hidden states O(1..10), the FFN's w2 input silu(w1 x) *
// w3 x up to hundreds): [-128, 128). Their scales are PT2E's symmetric
// per-channel weight scales (PerChannelMinMaxObserver: a row's max |w| /
// 127.5 for int8, / 7.5 for the 4-bit range; Llama rows' max |w| ~ 0.1..0.6):
// [0.0005, 0.005) and [0.001, 0.08). The static-activation rules read the int8
// activation itself (full int8 range) with scale 1, so their dequantized
// inputs already span +-128, and they are bit-exact op for op.

/// Weight-only 8-bit symmetric per-channel linear, no bias ->
/// aten._weight_int8pack_mm.
rule pt2e_linear_int8pack benefit 10 tags(linear, int8, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[$M, $K], %w)
  }
  where {
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    %y = aten._weight_int8pack_mm($x, $qw, $s)
  }
  example {
    M = [1, 4]
    N = [8, 12]
    K = [8, 64]
    wqmin = -127
    wqmax = 127
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// Weight-only 8-bit symmetric per-channel linear with a bias ->
/// aten._weight_int8pack_mm + aten.add (the op has no bias).
rule pt2e_linear_int8pack_bias benefit 10 tags(linear, int8, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[$M, $K], %w, $b : f32[$N])
  }
  where {
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    %mm = aten._weight_int8pack_mm($x, $qw, $s)
    %y  = aten.add.Tensor(%mm, $b)
  }
  example {
    M = [1, 4]
    N = [8, 12]
    K = [8, 64]
    wqmin = -127
    wqmax = 127
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// Weight-only 8-bit symmetric per-channel linear on a rank-3 activation
/// [B, S, K] (what torch.export writes for a Llama's projections), no bias ->
/// reshape to [B * S, K], aten._weight_int8pack_mm, view back to [B, -1, N].
rule pt2e_linear_int8pack_3d benefit 10 tags(linear, int8, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[$B, $S, $K], %w)
  }
  where {
    $B >= 1 and $N >= 1 and $K >= 1
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
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
    wqmin = [-128, -127]
    wqmax = 127
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// The same with a bias: the add is on the restored [B, S, N] result.
rule pt2e_linear_int8pack_bias_3d benefit 10 tags(linear, int8, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[$B, $S, $K], %w, $b : f32[$N])
  }
  where {
    $B >= 1 and $N >= 1 and $K >= 1
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    %x2 = aten.reshape($x, [-1, $K])
    %mm = aten._weight_int8pack_mm(%x2, $qw, $s)
    %v  = aten.view(%mm, [$B, -1, $N])
    %y  = aten.add.Tensor(%v, $b)
  }
  example {
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    wqmin = [-128, -127]
    wqmax = 127
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// Weight-only 8-bit symmetric per-channel linear on a rank-4 activation
/// [A, B, S, K], no bias -> reshape, aten._weight_int8pack_mm, view back.
rule pt2e_linear_int8pack_4d benefit 10 tags(linear, int8, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[$A, $B, $S, $K], %w)
  }
  where {
    $A >= 1 and $B >= 1 and $N >= 1 and $K >= 1
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    %x2 = aten.reshape($x, [-1, $K])
    %mm = aten._weight_int8pack_mm(%x2, $qw, $s)
    %y  = aten.view(%mm, [$A, $B, -1, $N])
  }
  example {
    A = [1, 2]
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    wqmin = -127
    wqmax = 127
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// The rank-4 form with a bias.
rule pt2e_linear_int8pack_bias_4d benefit 10 tags(linear, int8, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[$A, $B, $S, $K], %w, $b : f32[$N])
  }
  where {
    $A >= 1 and $B >= 1 and $N >= 1 and $K >= 1
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    %x2 = aten.reshape($x, [-1, $K])
    %mm = aten._weight_int8pack_mm(%x2, $qw, $s)
    %v  = aten.view(%mm, [$A, $B, -1, $N])
    %y  = aten.add.Tensor(%v, $b)
  }
  example {
    A = [1, 2]
    B = [1, 2]
    S = [1, 3]
    N = [8, 12]
    K = [8, 64]
    wqmin = -127
    wqmax = 127
    x = uniform(-128, 128)
    s = uniform(0.0005, 0.005)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// Weight-only 4-bit symmetric per-channel linear (int8 weights in [-8, 7]),
/// no bias -> et_vk.linear_qcs4w on the weight packed high nibble first.
rule pt2e_linear_qcs4w benefit 12 tags(linear, int4, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[..., $K], %w)
  }
  where {
    $K % 2 == 0
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = high_first)
    %y      = et_vk.linear_qcs4w($x, $packed, $s)
  }
  example {
    N = [8, 12]
    K = [8, 64]
    wqmin = -8
    wqmax = 7
    x = uniform(-128, 128)
    s = uniform(0.001, 0.08)
  }
}

/// Weight-only 4-bit symmetric per-channel linear with a bias ->
/// et_vk.linear_qcs4w + aten.add (the op has no bias).
rule pt2e_linear_qcs4w_bias benefit 12 tags(linear, int4, pt2e) backend vulkan {
  match {
    %w = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                     $zp, 0, $wqmin, $wqmax, i8)
    %y = aten.linear($x : f32[..., $K], %w, $b : f32[$N])
  }
  where {
    $K % 2 == 0
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = high_first)
    %mm     = et_vk.linear_qcs4w($x, $packed, $s)
    %y      = aten.add.Tensor(%mm, $b)
  }
  example {
    N = [8, 12]
    K = [8, 64]
    wqmin = -8
    wqmax = 7
    x = uniform(-128, 128)
    s = uniform(0.001, 0.08)
  }
}

/// Static per-tensor int8 activation + symmetric per-channel int8 weight ->
/// et_vk.linear_q8ta_q8csw on the int8 activation (upstream passes the
/// dequantize's input), with per-channel weight sums and the scales padded to
/// a multiple of 4 as make_linear_q8ta_q8csw_custom_op does.
rule pt2e_linear_q8ta_q8csw benefit 20 tags(linear, int8, pt2e) backend vulkan {
  match {
    %xdq = quantized_decomposed.dequantize_per_tensor($xq : i8[..., $K], $is, $izp, $aqmin, $aqmax,
                                                      i8)
    %w   = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                       $zp, 0, $wqmin, $wqmax, i8)
    %y   = aten.linear(%xdq, %w, $b)
  }
  where {
    $K % 4 == 0
    $aqmin >= -128 and $aqmax <= 127
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $scales = pad_to_multiple($s, dim = 0, multiple = 4)
    %y      = et_vk.linear_q8ta_q8csw($xq, $is, $izp, $qw, $sums, $scales, $b)
  }
  example {
    N = [6, 8]
    K = [8, 64]
    is = 1
    izp = [0, 3]
    aqmin = -128
    aqmax = 127
    wqmin = -127
    wqmax = 127
  }
}

/// Static per-tensor int8 activation, symmetric per-channel int8 weight and a
/// requantized int8 output, one activation row (x : [..., 1, K] or [K]) ->
/// et_vk.q8ta_linear_gemv; upstream picks the gemv kernel when
/// input_shape[-2] == 1 or x is 1-D (make_q8ta_linear_custom_op).
rule pt2e_q8ta_linear_gemv benefit 31 tags(linear, int8, pt2e) backend vulkan {
  match {
    %xdq = quantized_decomposed.dequantize_per_tensor($xq : i8[..., 1, $K] | $xq : i8[$K], $is,
                                                      $izp, $aqmin, $aqmax, i8)
    %w   = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                       $zp, 0, $wqmin, $wqmax, i8)
    %lin = aten.linear(%xdq, %w, $b)
    %y   = quantized_decomposed.quantize_per_tensor(%lin, $os, $ozp, -128, 127, i8)
  }
  where {
    $K % 4 == 0
    $aqmin >= -128 and $aqmax <= 127
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $scales = pad_to_multiple($s, dim = 0, multiple = 4)
    %y      = et_vk.q8ta_linear_gemv($xq, $is, $izp, $qw, $sums, $scales, $os, $ozp, $b, "none")
  }
  example {
    N = [6, 8]
    K = [8, 64]
    is = 1
    izp = [0, 3]
    os = [32, 256]
    ozp = [0, -5]
    aqmin = -128
    aqmax = 127
    wqmin = -127
    wqmax = 127
  }
}

/// The same with a relu between the linear and the output quantize
/// (upstream's q -> dq -> linear -> relu -> q) -> activation "relu".
rule pt2e_q8ta_linear_gemv_relu benefit 31 tags(linear, int8, pt2e) backend vulkan {
  match {
    %xdq = quantized_decomposed.dequantize_per_tensor($xq : i8[..., 1, $K] | $xq : i8[$K], $is,
                                                      $izp, $aqmin, $aqmax, i8)
    %w   = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                       $zp, 0, $wqmin, $wqmax, i8)
    %lin = aten.linear(%xdq, %w, $b)
    %r   = aten.relu(%lin)
    %y   = quantized_decomposed.quantize_per_tensor(%r, $os, $ozp, -128, 127, i8)
  }
  where {
    $K % 4 == 0
    $aqmin >= -128 and $aqmax <= 127
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $scales = pad_to_multiple($s, dim = 0, multiple = 4)
    %y      = et_vk.q8ta_linear_gemv($xq, $is, $izp, $qw, $sums, $scales, $os, $ozp, $b, "relu")
  }
  example {
    N = [6, 8]
    K = [8, 64]
    is = 1
    izp = [0, 3]
    os = [32, 256]
    ozp = [0, -5]
    aqmin = -128
    aqmax = 127
    wqmin = -127
    wqmax = 127
  }
}

/// Static per-tensor int8 activation, symmetric per-channel int8 weight and a
/// requantized int8 output, any other activation shape -> et_vk.q8ta_linear
/// (tried after the gemv rule, which takes one-row activations).
rule pt2e_q8ta_linear benefit 30 tags(linear, int8, pt2e) backend vulkan {
  match {
    %xdq = quantized_decomposed.dequantize_per_tensor($xq : i8[..., $K], $is, $izp, $aqmin, $aqmax,
                                                      i8)
    %w   = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                       $zp, 0, $wqmin, $wqmax, i8)
    %lin = aten.linear(%xdq, %w, $b)
    %y   = quantized_decomposed.quantize_per_tensor(%lin, $os, $ozp, -128, 127, i8)
  }
  where {
    $K % 4 == 0
    $aqmin >= -128 and $aqmax <= 127
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $scales = pad_to_multiple($s, dim = 0, multiple = 4)
    %y      = et_vk.q8ta_linear($xq, $is, $izp, $qw, $sums, $scales, $os, $ozp, $b, "none")
  }
  example {
    N = [6, 8]
    K = [8, 64]
    is = 1
    izp = [0, 3]
    os = [32, 256]
    ozp = [0, -5]
    aqmin = -128
    aqmax = 127
    wqmin = -127
    wqmax = 127
  }
}

/// The same with a relu before the output quantize -> activation "relu".
rule pt2e_q8ta_linear_relu benefit 30 tags(linear, int8, pt2e) backend vulkan {
  match {
    %xdq = quantized_decomposed.dequantize_per_tensor($xq : i8[..., $K], $is, $izp, $aqmin, $aqmax,
                                                      i8)
    %w   = quantized_decomposed.dequantize_per_channel(param $qw : i8[$N, $K], param $s : f32[$N],
                                                       $zp, 0, $wqmin, $wqmax, i8)
    %lin = aten.linear(%xdq, %w, $b)
    %r   = aten.relu(%lin)
    %y   = quantized_decomposed.quantize_per_tensor(%r, $os, $ozp, -128, 127, i8)
  }
  where {
    $K % 4 == 0
    $aqmin >= -128 and $aqmax <= 127
    $wqmin >= -128 and $wqmax <= 127
    $zp is none or all_zero($zp)
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $scales = pad_to_multiple($s, dim = 0, multiple = 4)
    %y      = et_vk.q8ta_linear($xq, $is, $izp, $qw, $sums, $scales, $os, $ozp, $b, "relu")
  }
  example {
    N = [6, 8]
    K = [8, 64]
    is = 1
    izp = [0, 3]
    os = [32, 256]
    ozp = [0, -5]
    aqmin = -128
    aqmax = 127
    wqmin = -127
    wqmax = 127
  }
}
