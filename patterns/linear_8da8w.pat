// 8da8w linears (int8 dynamic per-token activations, int8 per-output-channel symmetric
// weights) -> et_vk.linear_dq8ca_q8csw (docs/rules.md, "Linear 8da8w").
//
// Before (torchao Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8,
// granularity=PerAxis(0)), as exported; IntxUnpackedToInt8Tensor: block [1, K], scales and
// int8 zero points [N, 1], dequantized with int8's range -128..127, and the activation chain of
// `_apply_int8_act_asym_per_token_quant_dequant`, torchao intx_unpacked_to_int8_tensor.py):
//   %s, %zp = torchao.choose_qparams_affine(%x : f32[..., K], "ASYMMETRIC", [1, ..., K], i8,
//                                           -128, 127, ...)
//   %q      = torchao.quantize_affine(%x, [1, ..., K], %s, %zp, i8, -128, 127)
//   %xdq    = torchao.dequantize_affine(%q, [1, ..., K], %s, %zp, i8, -128, 127, output_dtype=f32)
//   %w      = torchao.dequantize_affine(%qw : i8[N, K], [1, K], %ws : f32[N, 1], %wzp?, i8,
//                                       -128, 127, output_dtype=f32)
//   %y      = aten.linear(%xdq, %w, %bias?)
// After:
//   %y = et_vk.linear_dq8ca_q8csw(%x, %s, %zp, %qw : i8[N, K], %sums : i32[N4], %scales : f32[N],
//                                 %bias4?)
//
// Upstream: executorch 05a4f505 backends/vulkan/patterns/quantized_linear.py
// (replace_quantized_linear_patterns routes a dynamic per-token activation with a per-channel
// weight, is_weight_perchannel_quantized: scales [N] or torchao's [N, 1], to
// make_linear_dq8ca_q8csw_op, after the dq8ca_q4gsw branch, which takes a [N, 1]-scaled weight
// whose values fit in 4 bits: these rules have benefit 29 < 30 so linear_8da4w.pat's rules win
// there too). make_linear_dq8ca_q8csw_op keeps the int8 weight [N, K], squeezes [N, 1] scales
// to [N], and adds per-output-channel weight sums (weight.sum(dim=1), int32, padded to a
// multiple of 4) as a new constant; group_sums over one group of K is that sum (the
// pt2e_linear_q8ta_q8csw rule computes its sums the same way). The bias is padded to a
// multiple of 4 (align_width_and_update_state_dict). Schema: custom_ops_lib.py
// linear_dq8ca_q8csw.
//
// As in linear_8da4w.pat, choose_qparams stays (the kernel quantizes %x with its results) and
// is `shared` with the q/dq nodes; f32 activations, and f16 ones ($odt == f16, below),
// integer zero points only, no f64 scales (quant_f64_legalize.pat makes them f32 first),
// K % 4 == 0 (the kernel reads K in blocks of 4, upstream's packing).
//
// Numerics (docs/numerics.md, linear_dq8ca_q8csw): the exact integer dot product of the
// activation quantized with the given qparams and the int8 weight, minus zp * weight_sums[n],
// then float(idot) * (s_x * ws[n]) in f32, + bias. The replaced graph computes the same
// integers and scales but rounds each dequantized value, product and partial sum of
// aten.linear to f32: the difference is float re-association, at most about
// (K + 3) * 2^-24 * sum_k |x_k w_k| per output. Over the example domain (|x| <= 128,
// |w| <= 128 * ws, ws < 0.005, K <= 96) that bound is about 0.045, but the rounding errors
// have random signs: 2000 instances per rule measure at most 2.5e-4 (docs/rules.md).
// Tolerance: atol 5e-3, rtol 1e-5. A wiring bug moves outputs far more: a zero point off by
// one moves the token's clamped extreme by one step (the kernel subtracts the zero point it
// quantized with), an output by s_x * |w_k| (up to 0.64 here); the wrong scale, sums or
// transposition by O(|y|).
//
// Verification ranges: x is a Llama linear's input as 8da8w quantizes it per token (torchao
// _choose_qparams_affine over [1, K]; +-10..+-100 per token): [-128, 128), s_x ~ 1. The
// weight scales are torchao's symmetric per-channel int8 scales of Llama weights (max |w| of
// a row / 127.5, rows' max |w| ~ 0.1..0.6): [0.0005, 0.005).
//
// f16 activations ($odt == f16, a guarded tolerance on the same rules): as in linear_8da4w.pat, torchao's f16 chain quantizes
// in f16 exactly as the kernel does (same integers, same f16 scales s, ws), and rounds each
// dequantized activation fl16(s (q - zp)) and weight fl16(ws qw) to f16 (u = 2^-11) before
// aten.linear's f32 dot product (K + 1 f32 roundings, e = 2^-24; the kernel's epilogue three).
// Before the final f16 rounding the two differ by at most D = (2u + u^2 + (K + 4) e) *
// sum_k |x_k w_k|; after it by D (1 + u) + 2u / (1 - u) * |before| (rtol 0.001). Over the
// example domain (|x_k| <= 128.625, ws <= 0.005 in f16 (<= 0.0050011), |qw| <= 128, K <= 96)
// sum_k |x_k w_k| <= 96 * 128.625 * 0.64014 = 7905, D (1 + u) <= 9.83e-4 * 7905 * (1 + u) =
// 7.77: atol 7.8, a proven bound (2000 instances per rule measure at most 0.5). A halved
// activation scale (the kernel clamps half the token's values) moves outputs by O(|y|) and
// fails it (RuleLibraryVerifyTest); a zero point off by one (<= 0.64) or a doubled scale (a
// coarser grid, ~1) does not, as linear_8da4w.pat's f16 bound says. bf16 activations are not
// fused: the kernel takes f32 or f16 inputs and scales (LinearDq8caQ8csw.cpp).
//
// No quantized_decomposed (per-token) form: at a tie its f64 quantize and the kernel's f32
// quantize differ by one step, moving one output by s_x * |w_k| (<= 256/255 * 128 * 0.005 =
// 0.64 over these ranges), a bound no tighter than a zero point off by one moves it.

/// torchao 8da8w linear: choose_qparams_affine / quantize_affine / dequantize_affine with
/// block [1, K] on the activation, dequantize_affine [1, K] with [N, 1] scales on the weight.
rule torchao_linear_dq8ca_q8csw benefit 29 tags(linear, int8, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$M, $K], "ASYMMETRIC" | "SYMMETRIC",
                                                   [1, $K], i8, -128, 127, ...)
    shared %q      = torchao.quantize_affine($x, [1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K],
                                               param $ws : $sdt[$N, 1], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $odt in [f32, f16]
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $sc     = cast($ws, dtype = $odt)
    $scales = reshape($sc, [-1])
    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp, $qw, $sums, $scales)
  }
  example {
    M = [1, 3]
    N = [4, 6, 12]
    K = [32, 64, 96]
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = -128
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 5e-3, rtol = 1e-5)
  tolerance(atol = 7.8, rtol = 0.001) when $odt == f16
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule torchao_linear_dq8ca_q8csw_3d benefit 29 tags(linear, int8, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$B, $M, $K],
                                                   "ASYMMETRIC" | "SYMMETRIC", [1, 1, $K], i8, -128,
                                                   127, ...)
    shared %q      = torchao.quantize_affine($x, [1, 1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K],
                                               param $ws : $sdt[$N, 1], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, none)
  }
  where {
    $odt in [f32, f16]
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $sc     = cast($ws, dtype = $odt)
    $scales = reshape($sc, [-1])
    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp, $qw, $sums, $scales)
  }
  example {
    B = 2
    M = 3
    N = [4, 6, 12]
    K = [32, 64, 96]
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = -128
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 5e-3, rtol = 1e-5)
  tolerance(atol = 7.8, rtol = 0.001) when $odt == f16
}

/// torchao 8da8w linear with a constant bias (padded to a multiple of 4, as upstream does).
rule torchao_linear_dq8ca_q8csw_bias benefit 29 tags(linear, int8, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$M, $K], "ASYMMETRIC" | "SYMMETRIC",
                                                   [1, $K], i8, -128, 127, ...)
    shared %q      = torchao.quantize_affine($x, [1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K],
                                               param $ws : $sdt[$N, 1], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $odt in [f32, f16]
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $sc     = cast($ws, dtype = $odt)
    $scales = reshape($sc, [-1])
    $bias   = pad_to_multiple($b, dim = 0, multiple = 4)
    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp, $qw, $sums, $scales, $bias)
  }
  example {
    M = [1, 3]
    N = [4, 6, 12]
    K = [32, 64, 96]
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = -128
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 5e-3, rtol = 1e-5)
  tolerance(atol = 7.8, rtol = 0.001) when $odt == f16
}

/// The same with a rank-3 activation and a constant bias.
rule torchao_linear_dq8ca_q8csw_bias_3d benefit 29 tags(linear, int8, dynamic_act) backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x : $odt[$B, $M, $K],
                                                   "ASYMMETRIC" | "SYMMETRIC", [1, 1, $K], i8, -128,
                                                   127, ...)
    shared %q      = torchao.quantize_affine($x, [1, 1, $K], %s, %zp, i8, -128, 127)
    shared %xdq    = torchao.dequantize_affine(%q, [1, 1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = $odt)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $K],
                                               param $ws : $sdt[$N, 1], $wzp, i8, $wqmin, $wqmax,
                                               output_dtype = $odt)
    %y             = aten.linear(%xdq, %w, param $b : $odt[$N])
  }
  where {
    $odt in [f32, f16]
    $K % 4 == 0
    not is_float(dtype(%zp))
    bits(dtype(%s)) <= 32
    $sdt == $odt or ($odt == f32 and bits($sdt) < bits($odt))
    $wzp is none or all_zero($wzp)
    $wqmin >= -128 and $wqmax <= 127
  }
  rewrite {
    $gsums  = group_sums($qw, $K, pad_to = 4)
    $sums   = reshape($gsums, [-1])
    $sc     = cast($ws, dtype = $odt)
    $scales = reshape($sc, [-1])
    $bias   = pad_to_multiple($b, dim = 0, multiple = 4)
    %y      = et_vk.linear_dq8ca_q8csw($x, %s, %zp, $qw, $sums, $scales, $bias)
  }
  example {
    B = 2
    M = 3
    N = [4, 6, 12]
    K = [32, 64, 96]
    odt = [f32, f16]
    sdt = [f32, bf16, f16]
    wqmin = -128
    wqmax = 127
    x = uniform(-128, 128)
    ws = uniform(0.0005, 0.005)
  }
  tolerance(atol = 5e-3, rtol = 1e-5)
  tolerance(atol = 7.8, rtol = 0.001) when $odt == f16
}
