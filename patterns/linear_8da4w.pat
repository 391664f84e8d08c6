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
// f16 activations ($odt == f16, a guarded tolerance on the torchao_* rules). Upstream fuses them too: ET-VK's QuantizedLinearMatch
// (executorch 05a4f505 backends/vulkan/patterns/quantized_linear.py) matches the chain by
// structure, with no dtype condition. On an f16 model torchao's chain runs in f16
// (quant_primitives.py, pytorch/ao: choose_qparams_affine's scale_dtype None -> the input's
// dtype, so the scale is f16; _quantize_affine_no_dtype_cast computes 1 / s, x * (1 / s) and
// its round in f16; _dequantize_affine_no_dtype_check computes q.to(f16) - zp.to(f16), exact
// for |q - zp| <= 255, times s, rounded to f16; the weight's qw.to(f16) * ws likewise, ws f16).
// The kernel quantizes with that very f16 arithmetic (bit-exact, docs/numerics.md), so both
// sides hold the same integers q, zp, qw and the same f16 scales s, ws; only the roundings
// differ. With u = 2^-11 (f16) and e = 2^-24 (f32), per output, before the final f16 rounding:
//   replaced graph: sum_k fl16(s (q_k - zp)) * fl16(ws qw_k), each factor within u of its exact
//     value, the K products and K - 1 sums (and the bias) in f32 (aten.linear's f16 opmath);
//   kernel: sum_g float(idot_g) * (s * ws_g) in f32, exact integers, three roundings a group.
// So |a_graph - a_kernel| <= D = (2u + u^2 + (K + 1 + K/G + 3) e) * sum_k |x_k w_k| (+ the bias
// terms' e |b|), x_k w_k the exact products. Both are then rounded to f16: |fl(a) - fl(b)|
// <= D (1 + u) + 2u / (1 - u) * |before|, hence rtol 0.001 (>= 2^-10 (1 + 2^-11)). Over the
// example domain (x in [-128, 128): |x_k| <= 128.5 after dequantization, s <= 256/255; ws <
// 0.05 in f16, <= 0.05002: |w_k| <= 8 * 0.05002; K <= 96, K / G <= 6) sum_k |x_k w_k| <=
// 96 * 128.625 * 0.40015 = 4941 and D (1 + u) <= 9.83e-4 * 4941 * (1 + u) = 4.86: atol 4.9,
// a proven bound, never a spurious failure. 2000 instances per rule measure at most 0.25 (the
// roundings' signs are random). It grows with sum_k |x_k w_k| (with K and the activation's
// range), as the f32 rules' re-association bound does. It still catches the wiring bugs that
// move outputs by O(|y|): a halved activation scale (the kernel clamps half the token's
// values) and weight scales read in the wrong order (RuleLibraryVerifyTest plants both). Not
// a zero point off by one (the kernel subtracts the zero point it quantized with: one output
// moves by s_x * |w_k| <= 0.4, as at qd_*'s f64 tie) nor a doubled activation scale (the
// kernel then quantizes on a twice coarser grid with the same scale: outputs move by about
// s_x * sqrt(K) * |w|, ~1): the f32 tolerance catches those, the f16 one cannot, as
// the qd_* rules' 0.41 cannot catch the first. bf16 activations are not fused: the Vulkan
// kernels take f32 or f16 inputs and scales only (backends/vulkan/ops/linear/Linear.cpp
// q4Linear). The scales must be f16 too ($sdt == $odt: the exports' f16 scales;
// dequantize_f32_cast folds an f32 dequantize cast to f16 into this form first).
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
    $odt in [f32, f16]
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
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
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
  tolerance(atol = 4.9, rtol = 0.001) when $odt == f16
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
    $odt in [f32, f16]
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
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
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
  tolerance(atol = 4.9, rtol = 0.001) when $odt == f16
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
    $odt in [f32, f16]
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
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
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
  tolerance(atol = 4.9, rtol = 0.001) when $odt == f16
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
    $odt in [f32, f16]
    $K % $G == 0
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $NG == $K / $G
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
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
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = [-8, -2]
    wqmax = [7, 1]
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.05)
  }
  tolerance(atol = 1e-3, rtol = 1e-5)
  tolerance(atol = 4.9, rtol = 0.001) when $odt == f16
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
