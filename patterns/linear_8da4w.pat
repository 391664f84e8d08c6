// 8da4w linears (int8 dynamic per-token activations, int4 group-wise weights)
// -> et_vk.linear_dq8ca_q4gsw (docs/rules.md, "Linear 8da4w").
//
// Before (torchao Int8DynamicActivationIntxWeightConfig, as exported):
//   %s, %zp = torchao.choose_qparams_affine(%x : f32[..., K], "ASYMMETRIC", [1, ..., K], i8,
//                                           -128, 127, ...)
//   %q      = torchao.quantize_affine(%x, [1, ..., K], %s, %zp, i8, -128, 127)
//   %xdq    = torchao.dequantize_affine(%q, [1, ..., K], %s, %zp, i8, -128, 127, output_dtype=f32)
//   %w      = torchao.dequantize_affine(%qw : i8[N, K], [1, G], %ws : f32[N, K/G], none, i8,
//                                       -8, 7, output_dtype=f32)
//   %y      = aten.linear(%xdq, %w, %bias?)
// or the quantized_decomposed activation chain (Int8DynActInt4WeightQuantizer):
//   %s, %zp = quantized_decomposed.choose_qparams_per_token_asymmetric(%x, i8)
//   %q      = quantized_decomposed.quantize_per_token(%x, %s, %zp, -128, 127, i8)
//   %xdq    = quantized_decomposed.dequantize_per_token(%q, %s, %zp, -128, 127, i8, f32)
// After:
//   %y = et_vk.linear_dq8ca_q4gsw(%x, %s, %zp, %packed : u8[N, K8/2], %sums : i32[K/G, N8],
//                                 %scales : f32[K/G, N4], G, %bias4?)
//
// The kernel quantizes %x itself with the given per-token parameters, so choose_qparams
// stays (its results feed the fused op) and is marked `shared`, like the q/dq nodes: one
// activation chain usually feeds several projections (wq, wk, wv). Weight and scales are
// repacked exactly as for linear_q4gsw (linear_4w.pat); in addition the per-group weight
// sums ET-VK's compute_per_group_sums produces (int32 [K/G, N padded to 8], the kernel's
// zero-point correction) are a new constant, FQN-registered like the others. They are
// computed from the packed weight (unpack_int4 of $packed, padding dropped), not from the
// original $qw: the sums then depend only on a constant the program stores anyway, so
// the program file keeps them as a recipe recomputed at load instead of bytes (the
// int4 weight plus scales stays the whole cost; docs/program-format.md, "Recipes").
//
// Numerics: the fused op's reference semantics (custom_ops_lib.py) skip the activation
// quantization, so before/after differ by the int8 rounding of x, at most
// sum_k |W[n, k]| * scale_x / 2 per output. Over the example domains (x in [-1, 1),
// |W| <= 8 * scale <= 8, K <= 96) 1500 instances per rule stay below 0.35, while a packing
// or transposition bug moves outputs by O(10): hence atol 1.0.

/// torchao 8da4w linear: choose_qparams_affine / quantize_affine / dequantize_affine with
/// block [1, ..., K] on the activation, dequantize_affine [1, G] on the weight.
rule torchao_linear_dq8ca_q4gsw benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$M, $K], "ASYMMETRIC" | "SYMMETRIC",
                                                   [1, $K], i8, -128, 127, ...)
    shared %sq     = aten._to_copy(%s, dtype = f64)?
    shared %q      = torchao.quantize_affine($x, [1, $K], %sq, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, $K], %sq, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, -8, 7,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $wq     = unpack_int4($packed, nibbles = low_first, length = $K)
    $sums   = group_sums($wq, group_size = $G, pad_to = 8)
    $sc     = cast($ws, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)
  }
  example {
    M = [1, 3]
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = f32
    sdt = [f32, bf16]
  }
  tolerance(atol = 1.0, rtol = 0.02)
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule torchao_linear_dq8ca_q4gsw_3d benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$B, $M, $K],
                                                   "ASYMMETRIC" | "SYMMETRIC", [1, 1, $K], i8, -128,
                                                   127, ...)
    shared %sq     = aten._to_copy(%s, dtype = f64)?
    shared %q      = torchao.quantize_affine($x, [1, 1, $K], %sq, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %sq, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, -8, 7,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $wq     = unpack_int4($packed, nibbles = low_first, length = $K)
    $sums   = group_sums($wq, group_size = $G, pad_to = 8)
    $sc     = cast($ws, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)
  }
  example {
    B = 2
    M = 3
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = f32
    sdt = [f32, bf16]
  }
  tolerance(atol = 1.0, rtol = 0.02)
}

/// torchao 8da4w linear with a constant bias (padded to a multiple of 4, as upstream does).
rule torchao_linear_dq8ca_q4gsw_bias benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$M, $K], "ASYMMETRIC" | "SYMMETRIC",
                                                   [1, $K], i8, -128, 127, ...)
    shared %sq     = aten._to_copy(%s, dtype = f64)?
    shared %q      = torchao.quantize_affine($x, [1, $K], %sq, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, $K], %sq, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, -8, 7,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $wq     = unpack_int4($packed, nibbles = low_first, length = $K)
    $sums   = group_sums($wq, group_size = $G, pad_to = 8)
    $sc     = cast($ws, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    $bias   = pad_to_multiple($b, dim = 0, multiple = 4)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G, $bias)
  }
  example {
    M = [1, 3]
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = f32
    sdt = [f32, bf16]
  }
  tolerance(atol = 1.0, rtol = 0.02)
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule torchao_linear_dq8ca_q4gsw_bias_3d benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$B, $M, $K],
                                                   "ASYMMETRIC" | "SYMMETRIC", [1, 1, $K], i8, -128,
                                                   127, ...)
    shared %sq     = aten._to_copy(%s, dtype = f64)?
    shared %q      = torchao.quantize_affine($x, [1, 1, $K], %sq, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %sq, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, -8, 7,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $wq     = unpack_int4($packed, nibbles = low_first, length = $K)
    $sums   = group_sums($wq, group_size = $G, pad_to = 8)
    $sc     = cast($ws, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    $bias   = pad_to_multiple($b, dim = 0, multiple = 4)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G, $bias)
  }
  example {
    B = 2
    M = 3
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = f32
    sdt = [f32, bf16]
  }
  tolerance(atol = 1.0, rtol = 0.02)
}

/// quantized_decomposed per-token activation chain (choose_qparams_per_token_asymmetric /
/// quantize_per_token / dequantize_per_token; scales f64 [..., 1], zero points i64 [..., 1])
/// with a torchao [1, G] or a dequantize_per_channel_group int4 weight.
rule qd_linear_dq8ca_q4gsw benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = quantized_decomposed.choose_qparams_per_token_asymmetric($x : $odt[..., $K],
                                                                              i8)
    shared %q      = quantized_decomposed.quantize_per_token($x, %s, %zp, -128, 127, i8)
    shared %xdq    = quantized_decomposed.dequantize_per_token(%q, %s, %zp, -128, 127, i8, $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, -8, 7,
                                               output_dtype = $odt)
                   | quantized_decomposed.dequantize_per_channel_group(param $qw : i8[$N, $K],
                                                                       param $ws : $sdt[$N, $NG],
                                                                       $wzp, -8, 7, i8, $G, $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $wq     = unpack_int4($packed, nibbles = low_first, length = $K)
    $sums   = group_sums($wq, group_size = $G, pad_to = 8)
    $sc     = cast($ws, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)
  }
  example { N = [4, 8, 12], K = [32, 64, 96], G = [16, 32], odt = f32, sdt = [f32, bf16] }
  tolerance(atol = 1.0, rtol = 0.02)
}

/// The same with a constant bias (padded to a multiple of 4).
rule qd_linear_dq8ca_q4gsw_bias benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = quantized_decomposed.choose_qparams_per_token_asymmetric($x : $odt[..., $K],
                                                                              i8)
    shared %q      = quantized_decomposed.quantize_per_token($x, %s, %zp, -128, 127, i8)
    shared %xdq    = quantized_decomposed.dequantize_per_token(%q, %s, %zp, -128, 127, i8, $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, -8, 7,
                                               output_dtype = $odt)
                   | quantized_decomposed.dequantize_per_channel_group(param $qw : i8[$N, $K],
                                                                       param $ws : $sdt[$N, $NG],
                                                                       $wzp, -8, 7, i8, $G, $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $K % $G == 0
    $K % 4 == 0
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    values_in($qw, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($qw, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $wq     = unpack_int4($packed, nibbles = low_first, length = $K)
    $sums   = group_sums($wq, group_size = $G, pad_to = 8)
    $sc     = cast($ws, dtype = $odt)
    $st     = transpose($sc, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 4)
    $bias   = pad_to_multiple($b, dim = 0, multiple = 4)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G, $bias)
  }
  example { N = [4, 8, 12], K = [32, 64, 96], G = [16, 32], odt = f32, sdt = [f32, bf16] }
  tolerance(atol = 1.0, rtol = 0.02)
}
