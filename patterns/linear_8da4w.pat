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
// torchao >= 0.12 (IntxUnpackedToInt8Tensor, `_apply_int8_act_asym_per_token_quant_dequant`)
// writes the quant ranges and an int8 zero point; the earlier per-token path leaves quant_min
// / quant_max None, which the rules match by meaning (engine/ops/torchao.yaml `none_means`:
// None is int8's [-128, 127]), with f64 scales and i64 zero points, which
// quant_f64_legalize.pat turns into the f32 chain first.
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
// Numerics (docs/numerics.md, linear_dq8ca_q4gsw). The fused op quantizes x per token with
// the very qparams it is given, as quantize_affine does in f32, and computes per group the
// exact integer dot product corrected by the weight sums, then float(idot) * (s_x * ws) summed
// over groups in f32. The graph it replaces computes the same integers and scales but rounds
// differently: each dequantized activation and weight, each product and each partial sum of
// aten.linear is rounded to f32, where the kernel rounds once per group. The difference is
// float re-association, at most about (K + 3 K / G) * 2^-24 * sum_k |x_k w_k| per output
// (<= 0.034 for the example domain: |x| <= 128, |w| <= 8 * ws, ws < 0.05, K <= 96; it
// grows with the activation, and cancellation in the sum keeps it far below that: 2000
// instances per rule measure at most 1.3e-4). Tolerance: atol 1e-3, rtol 1e-5. A wiring bug
// moves outputs by more: a zero point off by one moves the token's clamped extreme by one
// step (the kernel subtracts the zero point it quantized with), an output by s_x * |w_k| (up
// to 0.4 here); the wrong scale, sums, nibble order or transposition by O(|y|)
// (tests/unit/RuleLibraryVerifyTest.cpp plants two of them).
//
// Verification ranges: x is a Llama linear's input as 8da4w quantizes it per token (torchao
// _choose_qparams_affine over [1, K]; the residual-stream-derived attention / FFN inputs
// span +-10..+-100 per token): [-128, 128), so s_x = (max - min) / 255 ~ 1. The weight
// scales are torchao's per-group int4 scales of Llama weights (max |w| / 8 over a group,
// |w| mostly below 0.4): [0.0005, 0.05).
//
// The quantized_decomposed chain (qd_* rules) quantizes with f64 scales (x * (1 / s) is
// promoted to f64), the kernel with the same scale in f32: where x / s lies within an f32
// rounding of a half-integer the two round to neighbouring integers (QuantNumericsTest,
// QuantizeAffineF64ScaleComputesInF64), which moves one output by s_x * |w_k| <= 256/255 * 8
// * 0.05 = 0.4016 over the example domain (s_x <= (128 - -128) / 255, |w_k| <= 8 * ws), plus
// the re-association above. Tolerance: atol 0.41, rtol 1e-5 (it was 0.07 when x was drawn
// from [-1, 1) and ws from [0.01, 1): 2/255 * 8 * 1). Such a tie is rare (x / s within an
// f32 rounding of a half-integer, ~1e-5 per element at |x / s| ~ 128; none in 2000
// instances, which measure at most 1.3e-4). The zero-point bug above moves outputs no more
// than a tie does, so this tolerance cannot tell them apart (the torchao rules' can); a wrong
// scale (O(|y|)) still fails it (RuleLibraryVerifyTest plants one). torchao's f64 chain is
// legalized to f32 before this family runs (quant_f64_legalize.pat states that step's bound).
// Only f32 activations are fused ($odt == f32). On an f16 model torchao computes the scale,
// x * (1 / s) and its rounding in f16 (each op rounded to f16), and the dequantized
// activation and weight are rounded to f16 before aten.linear; the verification domain and
// the bound above are f32 only, and the f16 error (up to about 2^-10 * sum_k |x_k w_k| per
// output) has no tolerance that would still catch a wiring bug, so the f16 chain stays
// unfused (it runs as torchao ops on the device) rather than ship an unverified rewrite.
// A float zero point (SYMMETRIC choose_qparams without zero_point_dtype) is not fused: the
// kernel takes integer zero points. Nor is a torchao chain with f64 scales: the legalize
// phase makes it f32 first (quant_f64_legalize.pat), and in a single pass over all rules
// the where clause waits for that, instead of handing the kernel a scale it would round.

/// torchao 8da4w linear: choose_qparams_affine / quantize_affine / dequantize_affine with
/// block [1, ..., K] on the activation, dequantize_affine [1, G] on the weight.
rule torchao_linear_dq8ca_q4gsw benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$M, $K], "ASYMMETRIC" | "SYMMETRIC",
                                                   [1, $K], i8, -128, 127, ...)
    shared %q      = torchao.quantize_affine($x, [1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $odt == f32
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
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
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule torchao_linear_dq8ca_q4gsw_3d benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$B, $M, $K],
                                                   "ASYMMETRIC" | "SYMMETRIC", [1, 1, $K], i8, -128,
                                                   127, ...)
    shared %q      = torchao.quantize_affine($x, [1, 1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $odt == f32
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
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
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// torchao 8da4w linear with a constant bias (padded to a multiple of 4, as upstream does).
rule torchao_linear_dq8ca_q4gsw_bias benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$M, $K], "ASYMMETRIC" | "SYMMETRIC",
                                                   [1, $K], i8, -128, 127, ...)
    shared %q      = torchao.quantize_affine($x, [1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $odt == f32
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
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
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule torchao_linear_dq8ca_q4gsw_bias_3d benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$B, $M, $K],
                                                   "ASYMMETRIC" | "SYMMETRIC", [1, 1, $K], i8, -128,
                                                   127, ...)
    shared %q      = torchao.quantize_affine($x, [1, 1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $odt == f32
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or bits($sdt) < bits($odt)
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
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
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
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
                                               param $ws : $sdt[$N, $NG], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
                   | quantized_decomposed.dequantize_per_channel_group(param $qw : i8[$N, $K],
                                                                       param $ws : $odt[$N, $NG],
                                                                       $wzp, $wqmin, $wqmax, i8, $G,
                                                                       $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $odt == f32
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    $NG == $K / $G
    dtype($ws) == $odt or bits(dtype($ws)) < bits($odt)
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
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
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = f32
    sdt = [f32, bf16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 0.41, rtol = 1e-5)
}

/// The same with a constant bias (padded to a multiple of 4).
rule qd_linear_dq8ca_q4gsw_bias benefit 30 tags(linear, int4, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = quantized_decomposed.choose_qparams_per_token_asymmetric($x : $odt[..., $K],
                                                                              i8)
    shared %q      = quantized_decomposed.quantize_per_token($x, %s, %zp, -128, 127, i8)
    shared %xdq    = quantized_decomposed.dequantize_per_token(%q, %s, %zp, -128, 127, i8, $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
                   | quantized_decomposed.dequantize_per_channel_group(param $qw : i8[$N, $K],
                                                                       param $ws : $odt[$N, $NG],
                                                                       $wzp, $wqmin, $wqmax, i8, $G,
                                                                       $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $odt == f32
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    $NG == $K / $G
    dtype($ws) == $odt or bits(dtype($ws)) < bits($odt)
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
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
    N = [4, 8, 12]
    K = [32, 64, 96]
    G = [16, 32]
    odt = f32
    sdt = [f32, bf16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 0.41, rtol = 1e-5)
}
