// QAT convert: torchao fake_quantize_affine -> the real quantize/dequantize
// form, so the int4 weight-only (linear_4w.pat) and 8da4w (linear_8da4w.pat)
// linear rules fuse a QAT-prepared graph exactly as they fuse a converted one.
//
// torchao's QAT flow (torchao/quantization/qat: IntxFakeQuantizer, the
// Int4WeightOnly / Int8DynActInt4Weight QAT configs) trains with
// fake_quantize_affine = _quantize_affine_no_dtype_cast followed by
// _dequantize_affine_no_dtype_check in the input's dtype; "convert" swaps in
// quantized tensors, which export as dequantize_affine of the int data.
// This family performs that convert on the graph.
//
// Before (8da4w QAT: fake-quantized per-token activation, fake-quantized
// int4 group-wise weight with frozen qparams):
//   %x_s, %x_zp = torchao.choose_qparams_affine.default(%x, "ASYMMETRIC", [1, 1, 64], i8, -128, 127, ...)
//   %x_fq : f32[1, s0, 64] = torchao.fake_quantize_affine.default(%x, [1, 1, 64], %x_s, %x_zp, i8, -128, 127)
//   %w_fq : f32[128, 64]   = torchao.fake_quantize_affine.default(%w, [1, 32], %w_s, %w_zp, i8, -8, 7)
//   %y    : f32[1, s0, 128] = aten.linear.default(%x_fq, %w_fq)
// After this family:
//   %x_q  : i8[1, s0, 64]  = torchao.quantize_affine.default(%x, [1, 1, 64], %x_s, %x_zp, i8, -128, 127)
//   %x_fq : f32[1, s0, 64] = torchao.dequantize_affine.default(%x_q, [1, 1, 64], %x_s, %x_zp, i8, -128, 127, output_dtype=f32)
//   param %w.quantize_affine_... : i8[128, 64]   (the weight quantized once, ahead of time)
//   %w_fq : f32[128, 64]   = torchao.dequantize_affine.default(%w.quantize_affine_..., [1, 32], %w_s, %w_zp, i8, -8, 7, output_dtype=f32)
// and then the 8da4w rule fuses the linear into et_vk.linear_dq8ca_q4gsw.
//
// Exactness. fake_quantize_affine(x, bs, s, zp, qdt, qmin, qmax) computes
//   q = clamp(round_half_even(x * (1/s)) + zp, qmin, qmax)      (still floating point)
//   (q.to(x.dtype) - zp.to(x.dtype)) * s, .to(x.dtype)
// quantize_affine computes the same q and casts it to qdt; q is an integer in
// [qmin, qmax], which qdt holds exactly, and so does x.dtype for every range
// up to 8 bits (bf16 has 8 significant bits). dequantize_affine then does the
// same subtraction and multiply in output_dtype = x.dtype. Both forms are
// therefore bit-identical, ties and saturation included: this family has
// tolerance 0, and tests/unit/QatNumericsTest.cpp checks it on hand-picked
// ties (x/s = k + 0.5) and out-of-range values. The weight rules compute q with
// the quantize_affine constant transform, which is the interpreter's
// quantize_affine kernel, so a folded weight is the same bytes the graph
// would compute.
//
// One difference is real and excluded by construction: a NaN input stays NaN
// through fake_quantize_affine but becomes an arbitrary integer when cast to
// qdt (inf and -inf saturate to qmax / qmin in both forms). QAT graphs whose
// activations are NaN are already broken; verification draws finite inputs.
//
// Order. The driver visits users before producers and revisits a node as soon
// as one of its operands is rewritten, so converting a weight alone would let
// the 4w weight-only rule fuse the linear before its activation is converted
// (leaving a float Q/DQ on the activation instead of the 8da4w kernel). The
// qat_linear_act_weight* rules therefore convert a linear's fake-quantized
// activation and weight in one rewrite (the activation node is `shared`: it
// usually feeds several projections; each gets its own quantize/dequantize,
// which the 8da4w fusion then consumes). The per-node rules below handle
// everything else.
//
// Conditions: the weight's scales and zero points are [N, K / G]; the zero
// point is absent or of an integer dtype (a fractional
// float zero point would be truncated by the integer cast and the forms would
// differ); the quant dtype is an integer of at most 8 bits (i8 or u8;
// sub-byte ranges such as int4 are expressed as i8 with qmin/qmax, as torchao
// does), qmin/qmax are given, and the rewrite keeps the very same scale and
// zero-point values (not copies), so the pair is provably on the same qparams.
// Only the common block shapes are written out (weights [1, G], per-token
// activations [1, K] / [1, 1, K]); verify-rules needs literal block sizes.
//
// Verification ranges: activations are a Llama linear's input as torchao's QAT fake-quantizes
// it per token (IntxFakeQuantizer with per-token asymmetric int8: +-10..+-100 per token):
// [-128, 128), with scales in [0.5, 1.5) (a token's (max - min) / 255 ~ 1), so x / s crosses
// every integer of the int8 grid and saturates at both ends. Weights are Llama-sized (|w|
// below ~0.5): [-0.5, 0.5), with group scales in [0.01, 0.1) (max |w| / 7.5 over a group):
// x / s spans up to +-50, both inside [-8, 7] and saturating. Bit-exact over these ranges.

/// A linear whose activation (per token, block [1, K]) and constant weight (group-wise,
/// frozen qparams) are both fake-quantized -> both converted at once, the linear rebuilt on
/// the converted values (see the header: the 8da4w rule then fuses it).
rule qat_linear_act_weight benefit 40 tags(qat) {
  match {
    shared %xfq = torchao.fake_quantize_affine($x : $dt[$M, $K], [1, $K], $s, $zp, $aqdt, $aqmin,
                                               $aqmax)
    %wfq        = torchao.fake_quantize_affine(param $w : $dt[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG],
                                               param $wzp : $zdt[$N, $NG], $wqdt, $wqmin, $wqmax)
    %y          = aten.linear(%xfq, %wfq, $b)
  }
  where {
    $dt in [f32, bf16, f16]
    is_float($sdt)
    not is_float($zdt)
    $aqdt in [i8, u8]
    $wqdt in [i8, u8]
    $zp is none or not is_float(dtype($zp))
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    %q   = torchao.quantize_affine($x, [1, $K], $s, $zp, $aqdt, $aqmin, $aqmax)
    %xdq = torchao.dequantize_affine(%q, [1, $K], $s, $zp, $aqdt, $aqmin, $aqmax,
                                     output_dtype = $dt)
    $wq  = quantize_affine($w, $ws, $wzp, block_size = [1, $G], dtype = $wqdt, quant_min = $wqmin,
                           quant_max = $wqmax)
    %wdq = torchao.dequantize_affine($wq, [1, $G], $ws, $wzp, $wqdt, $wqmin, $wqmax,
                                     output_dtype = $dt)
    %y   = aten.linear(%xdq, %wdq, $b)
  }
  example {
    M = [1, 3]
    N = 8
    K = 64
    G = 32
    dt = f32
    sdt = f32
    zdt = [i32, i8]
    aqdt = i8
    aqmin = -128
    aqmax = 127
    wqdt = i8
    wqmin = -8
    wqmax = 7
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
    w = uniform(-0.5, 0.5)
    ws = uniform(0.01, 0.1)
  }
}

/// The same with a weight without zero point.
rule qat_linear_act_weight_no_zp benefit 40 tags(qat) {
  match {
    shared %xfq = torchao.fake_quantize_affine($x : $dt[$M, $K], [1, $K], $s, $zp, $aqdt, $aqmin,
                                               $aqmax)
    %wfq        = torchao.fake_quantize_affine(param $w : $dt[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], none, $wqdt, $wqmin,
                                               $wqmax)
    %y          = aten.linear(%xfq, %wfq, $b)
  }
  where {
    $dt in [f32, bf16, f16]
    is_float($sdt)
    $aqdt in [i8, u8]
    $wqdt in [i8, u8]
    $zp is none or not is_float(dtype($zp))
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    %q   = torchao.quantize_affine($x, [1, $K], $s, $zp, $aqdt, $aqmin, $aqmax)
    %xdq = torchao.dequantize_affine(%q, [1, $K], $s, $zp, $aqdt, $aqmin, $aqmax,
                                     output_dtype = $dt)
    $wq  = quantize_affine_no_zp($w, $ws, block_size = [1, $G], dtype = $wqdt, quant_min = $wqmin,
                                 quant_max = $wqmax)
    %wdq = torchao.dequantize_affine($wq, [1, $G], $ws, none, $wqdt, $wqmin, $wqmax,
                                     output_dtype = $dt)
    %y   = aten.linear(%xdq, %wdq, $b)
  }
  example {
    M = [1, 3]
    N = 8
    K = 64
    G = 32
    dt = f32
    sdt = f32
    aqdt = i8
    aqmin = -128
    aqmax = 127
    wqdt = i8
    wqmin = -8
    wqmax = 7
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
    w = uniform(-0.5, 0.5)
    ws = uniform(0.01, 0.1)
  }
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule qat_linear_act_weight_3d benefit 40 tags(qat) {
  match {
    shared %xfq = torchao.fake_quantize_affine($x : $dt[$B, $M, $K], [1, 1, $K], $s, $zp, $aqdt,
                                               $aqmin, $aqmax)
    %wfq        = torchao.fake_quantize_affine(param $w : $dt[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG],
                                               param $wzp : $zdt[$N, $NG], $wqdt, $wqmin, $wqmax)
    %y          = aten.linear(%xfq, %wfq, $b)
  }
  where {
    $dt in [f32, bf16, f16]
    is_float($sdt)
    not is_float($zdt)
    $aqdt in [i8, u8]
    $wqdt in [i8, u8]
    $zp is none or not is_float(dtype($zp))
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    %q   = torchao.quantize_affine($x, [1, 1, $K], $s, $zp, $aqdt, $aqmin, $aqmax)
    %xdq = torchao.dequantize_affine(%q, [1, 1, $K], $s, $zp, $aqdt, $aqmin, $aqmax,
                                     output_dtype = $dt)
    $wq  = quantize_affine($w, $ws, $wzp, block_size = [1, $G], dtype = $wqdt, quant_min = $wqmin,
                           quant_max = $wqmax)
    %wdq = torchao.dequantize_affine($wq, [1, $G], $ws, $wzp, $wqdt, $wqmin, $wqmax,
                                     output_dtype = $dt)
    %y   = aten.linear(%xdq, %wdq, $b)
  }
  example {
    B = 1
    M = [1, 3]
    N = 8
    K = 64
    G = 32
    dt = f32
    sdt = f32
    zdt = [i32, i8]
    aqdt = i8
    aqmin = -128
    aqmax = 127
    wqdt = i8
    wqmin = -8
    wqmax = 7
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
    w = uniform(-0.5, 0.5)
    ws = uniform(0.01, 0.1)
  }
}

/// The same with a weight without zero point and a rank-3 activation.
rule qat_linear_act_weight_no_zp_3d benefit 40 tags(qat) {
  match {
    shared %xfq = torchao.fake_quantize_affine($x : $dt[$B, $M, $K], [1, 1, $K], $s, $zp, $aqdt,
                                               $aqmin, $aqmax)
    %wfq        = torchao.fake_quantize_affine(param $w : $dt[$N, $K], [1, $G],
                                               param $ws : $sdt[$N, $NG], none, $wqdt, $wqmin,
                                               $wqmax)
    %y          = aten.linear(%xfq, %wfq, $b)
  }
  where {
    $dt in [f32, bf16, f16]
    is_float($sdt)
    $aqdt in [i8, u8]
    $wqdt in [i8, u8]
    $zp is none or not is_float(dtype($zp))
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    %q   = torchao.quantize_affine($x, [1, 1, $K], $s, $zp, $aqdt, $aqmin, $aqmax)
    %xdq = torchao.dequantize_affine(%q, [1, 1, $K], $s, $zp, $aqdt, $aqmin, $aqmax,
                                     output_dtype = $dt)
    $wq  = quantize_affine_no_zp($w, $ws, block_size = [1, $G], dtype = $wqdt, quant_min = $wqmin,
                                 quant_max = $wqmax)
    %wdq = torchao.dequantize_affine($wq, [1, $G], $ws, none, $wqdt, $wqmin, $wqmax,
                                     output_dtype = $dt)
    %y   = aten.linear(%xdq, %wdq, $b)
  }
  example {
    B = 1
    M = [1, 3]
    N = 8
    K = 64
    G = 32
    dt = f32
    sdt = f32
    aqdt = i8
    aqmin = -128
    aqmax = 127
    wqdt = i8
    wqmin = -8
    wqmax = 7
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
    w = uniform(-0.5, 0.5)
    ws = uniform(0.01, 0.1)
  }
}

/// Fake-quantized constant weight with constant scale and zero point, group-
/// wise along the last dim -> quantize_affine folded into an int constant +
/// dequantize_affine (what torchao's QAT convert exports).
rule qat_weight_fake_quant benefit 30 tags(qat) {
  match {
    %fq = torchao.fake_quantize_affine(param $w : $dt[$N, $K], [1, $G], param $s : $sdt[$N, $NG],
                                       param $zp : $zdt[$N, $NG], $qdt, $qmin, $qmax)
  }
  where {
    $dt in [f32, bf16, f16]
    is_float($sdt)
    not is_float($zdt)
    $qdt in [i8, u8]
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    $q  = quantize_affine($w, $s, $zp, block_size = [1, $G], dtype = $qdt, quant_min = $qmin,
                          quant_max = $qmax)
    %fq = torchao.dequantize_affine($q, [1, $G], $s, $zp, $qdt, $qmin, $qmax, output_dtype = $dt)
  }
  example {
    N = [8, 12]
    K = 64
    G = [32, 64]
    dt = [f32, bf16]
    sdt = f32
    zdt = [i32, i8]
    qdt = i8
    qmin = -8
    qmax = 7
    w = uniform(-0.5, 0.5)
    s = uniform(0.01, 0.1)
  }
}

/// The same without a zero point (symmetric int4 weight-only QAT).
rule qat_weight_fake_quant_no_zp benefit 30 tags(qat) {
  match {
    %fq = torchao.fake_quantize_affine(param $w : $dt[$N, $K], [1, $G], param $s : $sdt[$N, $NG],
                                       none, $qdt, $qmin, $qmax)
  }
  where {
    $dt in [f32, bf16, f16]
    is_float($sdt)
    $qdt in [i8, u8]
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    $q  = quantize_affine_no_zp($w, $s, block_size = [1, $G], dtype = $qdt, quant_min = $qmin,
                                quant_max = $qmax)
    %fq = torchao.dequantize_affine($q, [1, $G], $s, none, $qdt, $qmin, $qmax, output_dtype = $dt)
  }
  example {
    N = [8, 12]
    K = 64
    G = [32, 64]
    dt = [f32, bf16]
    sdt = f32
    qdt = i8
    qmin = -8
    qmax = 7
    w = uniform(-0.5, 0.5)
    s = uniform(0.01, 0.1)
  }
}

/// Fake-quantized 2-D value (per-token activation [M, K] with block [1, K],
/// or a weight whose qparams are computed in the graph) -> quantize_affine +
/// dequantize_affine on the same qparams.
rule qat_fake_quant_2d benefit 20 tags(qat) {
  match {
    %fq = torchao.fake_quantize_affine($x : $dt[$M, $K], [1, $G], $s, $zp, $qdt, $qmin, $qmax)
  }
  where {
    $dt in [f32, bf16, f16]
    $qdt in [i8, u8]
    $K % $G == 0
    $zp is none or not is_float(dtype($zp))
  }
  rewrite {
    %q  = torchao.quantize_affine($x, [1, $G], $s, $zp, $qdt, $qmin, $qmax)
    %fq = torchao.dequantize_affine(%q, [1, $G], $s, $zp, $qdt, $qmin, $qmax, output_dtype = $dt)
  }
  example {
    M = [1, 4]
    K = 64
    G = [32, 64]
    dt = [f32, bf16]
    qdt = i8
    qmin = -128
    qmax = 127
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
}

/// Fake-quantized 3-D activation [B, S, K], per token (block [1, 1, K]) or
/// per group -> quantize_affine + dequantize_affine on the same qparams.
rule qat_fake_quant_3d benefit 20 tags(qat) {
  match {
    %fq = torchao.fake_quantize_affine($x : $dt[$B, $S, $K], [1, 1, $G], $s, $zp, $qdt, $qmin,
                                       $qmax)
  }
  where {
    $dt in [f32, bf16, f16]
    $qdt in [i8, u8]
    $K % $G == 0
    $zp is none or not is_float(dtype($zp))
  }
  rewrite {
    %q  = torchao.quantize_affine($x, [1, 1, $G], $s, $zp, $qdt, $qmin, $qmax)
    %fq = torchao.dequantize_affine(%q, [1, 1, $G], $s, $zp, $qdt, $qmin, $qmax, output_dtype = $dt)
  }
  example {
    B = 1
    S = [1, 3]
    K = 64
    G = 64
    dt = [f32, bf16]
    qdt = i8
    qmin = -128
    qmax = 127
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
  }
}
