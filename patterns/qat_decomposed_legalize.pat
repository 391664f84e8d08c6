// QAT as torch.export writes it (docs/rules.md, "QAT as exported"). A legalize phase family
// (`phase legalize` below): it runs before the fusion rules and turns torchao's fake
// quantization, which upstream keeps a Python function and export therefore records as aten
// math, into graft's torchao.fake_quantize_affine, so qat.pat converts it and the 4w / 8da4w
// linear rules fuse it.
//
// Source (pytorch/ao 36027d82, torchao >= 0.12). QATConfig(step="prepare") swaps nn.Linear
// for FakeQuantizedLinear (torchao/quantization/qat/linear.py): x = activation fake quantizer
// (x); w = weight fake quantizer(weight); F.linear(x, w, bias). IntxFakeQuantizer
// (qat/fake_quantizer.py) computes the qparams in the graph with the registered op
// torch.ops.torchao.choose_qparams_affine (one node), then calls _fake_quantize_affine
// (quantization/quant_primitives.py), plain Python:
//   _quantize_affine_no_dtype_cast: input.view(shape_for_reduction), scale.view(...),
//     zero_point.view(...), clamp(_Round.apply(input * (1.0 / scale)) + zero_point, qmin,
//     qmax), quant.view(original_shape)   [1.0 / scale is Tensor.__rdiv__:
//     scale.reciprocal() * 1.0; _Round's forward is torch.round]
//   _dequantize_affine_no_dtype_check: input.view(...), scale.view(...), zero_point.view(...),
//     input.to(output_dtype, copy=True) - zero_point.to(output_dtype), * scale,
//     .view(original_shape).to(output_dtype)   [output_dtype = the input's dtype]
//
// Before (weight [N, K], groups of G along K; qparams from the weight, get_group_qparams_
// symmetric in quantization/utils.py; torch.export keeps every view, even an identity one):
//   %s, %zp = torchao.choose_qparams_affine(%w, "SYMMETRIC", [1, G], i8, -8, 7, eps, f32, f32)
//   %s2     = aten.view(%s, [N, -1])
//   %zp2    = aten._to_copy(aten.view(%zp, [N, -1]), dtype=i32)   [zero_point.to(int32)]
//   %xv     = aten.view(%w, [N, K/G, G]); %sv = aten.view(%s2, [N, K/G, 1]); %zv = ...
//   %q      = aten.clamp(aten.add.Tensor(aten.round(aten.mul.Tensor(%xv,
//               aten.mul.Tensor(aten.reciprocal(%sv), 1.0))), %zv), -8, 7)
//   %qv     = aten.view(aten.view(%q, [N, K]), [N, K/G, G])
//   %wfq    = aten.view(aten.mul.Tensor(aten.sub.Tensor(aten._to_copy(%qv, dtype=f32),
//               aten._to_copy(%zv2, dtype=f32)), %sv2), [N, K])
// After this family (the scale and zero point folded: choose_qparams_affine of a constant):
//   param %s'  : f32[N, K/G] = choose_qparams_affine(w, ..., output=scale)
//   param %zp' : i32[N, K/G] = choose_qparams_affine(w, ..., output=zero_point)
//   %wfq = torchao.fake_quantize_affine(%w, [1, G], %s', %zp', i8, -8, 7)
// Per-token activations (IntxFakeQuantizer._per_token_forward, _fake_quantize_per_token in
// qat/utils.py, ending fq.reshape_as(input).to(input.dtype)) become
//   %xfq = torchao.fake_quantize_affine(%x, [1, K] or [1, 1, K], %s, %zp, i8, -128, 127)
// on the in-graph choose_qparams_affine results.
//
// Exactness (tolerance 0). The rules match the very ops the interpreter's
// fake_quantize_affine kernel (engine/src/interp/TorchaoQuantKernels.cpp) runs, in its order
// and dtypes: reciprocal in the scale's dtype, the multiply by 1.0 (absent: x * 1.0 == x), the
// multiply with the input, round half to even, the add of the zero point with torch's
// promotion (an i32 zero point is converted to the float dtype), clamp, the cast of q to the
// input dtype (exact: an integer in [qmin, qmax]), the zero point's cast, the subtraction and
// the multiply by the scale. The scale has the input's dtype (QATConfig's default), so no final
// cast follows. Every view is pinned by its size list (shape_for_reduction,
// shape_after_reduction, the original shape; a SymInt size binds the symbolic dim it stands
// for), and only views that are identities are optional, so an absent one leaves the same
// shapes and hence the same values. The quant dtype torchao passes, int32, only bounds-checks
// qmin/qmax; the rewrite writes i8 (what qat.pat and the 8da4w rules expect), which the where
// clause justifies: the range lies within int8.
//
// choose_qparams_affine of a parameter (qat_weight_qparams_fold*) is computed ahead of time by
// the choose_qparams_affine constant transform, which runs the interpreter's own
// choose_qparams_affine kernel: the folded scale and zero point are the bytes the graph would
// compute, and qat.pat then quantizes the weight with them (param $ws, param $wzp).
//
// The family must run before the fusion rules (graft compile's legalize phase): in one pass
// over every rule the driver may legalize an 8da4w linear's weight first, and the 4w
// weight-only rule then fuses that linear with its activation still in aten math.
//
// Not covered (they stay as aten math and run unfused): a scale dtype other than the input's
// (then a final .to(input dtype) casts), float zero points (legacy zero_point_precision f32;
// qat.pat needs integer ones), quant ranges outside int8 (uint8 [0, 255] activations), a fake
// quantizer without a zero point (ZeroPointDomain.NONE), block shapes other than [1, G] on a
// 2-D value and per-token [1, ..., 1, K] of rank 2 or 3, and the legacy int32 round trip of
// torchao <= 0.11 (_GenericFakeQuantize).
//
// Verification ranges (as in qat.pat): per-token activations in [-128, 128) with scales in
// [0.5, 1.5) and zero points in [-32, 32) (a token's asymmetric int8 qparams); group-wise
// weights in [-0.5, 0.5) with scales in [0.01, 0.1) and zero points in [-8, 8) (int4 groups
// of Llama-sized weights), so x / s + zp crosses the grid and saturates at both ends; the
// folded weights' qparams come from [-0.5, 0.5) weights. Bit-exact over these ranges.

phase legalize

/// Group-wise fake quantization of a 2-D value (a QAT weight [N, K], block [1, G], G < K),
/// decomposed -> torchao.fake_quantize_affine.
rule qat_fake_quant_decomposed_group benefit 60 tags(qat, legalize) {
  match {
    %xr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($x : $dt[$N, $K],
                                                                          [$N, $NG, $G])
    %sr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($s : $dt[$N, $NG],
                                                                          [$N, $NG, 1])
    %zr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($zp : $zdt[$N, $NG],
                                                                          [$N, $NG, 1])
    %iv = aten.reciprocal(%sr)
    %i1 = aten.mul.Tensor(%iv, 1.0)?
    %xs = aten.mul.Tensor(%xr : _[$N, $NG, $G], %i1)
    %rd = aten.round(%xs)
    %ad = aten.add.Tensor(%rd, %zr)
    %cl = aten.clamp.default(%ad, $qmin, $qmax)
    %qo = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%cl, [$N, $K])
    %qr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%qo, [$N, $NG, $G])
    %sd = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($s, [$N, $NG, 1])
    %zd = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($zp, [$N, $NG, 1])
    %qf = aten._to_copy(%qr : _[$N, $NG, $G], dtype = $dt)?
    %zf = aten._to_copy(%zd, dtype = $dt)
    %df = aten.sub.Tensor(%qf : $dt[$N, $NG, $G], %zf : $dt[$N, $NG, 1])
    %ml = aten.mul.Tensor(%df, %sd)
    %y  = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%ml : $dt[$N, $NG, $G],
                                                                          [$N, $K])
  }
  where {
    $dt in [f32, bf16, f16]
    not is_float($zdt)
    $G < $K
    $K == $NG * $G
    $qmin >= -128 and $qmax <= 127 and $qmin <= $qmax
  }
  rewrite {
    %y = torchao.fake_quantize_affine($x, [1, $G], $s, $zp, i8, $qmin, $qmax)
  }
  example {
    N = [4, 8]
    K = 64
    G = 32
    NG = 2
    dt = [f32, bf16]
    zdt = [i32, i8]
    qmin = -8
    qmax = 7
    x = uniform(-0.5, 0.5)
    s = uniform(0.01, 0.1)
    zp = uniform(-8, 8)
  }
}

/// Per-token fake quantization of a 2-D activation [M, K] (block [1, K]: each row one group),
/// decomposed -> torchao.fake_quantize_affine. The identity views torchao's reshapes record
/// (shape_for_reduction is the input's shape) are optional; reshape_as(input) is the root.
rule qat_fake_quant_decomposed_per_token benefit 60 tags(qat, legalize) {
  match {
    %xr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($x : $dt[$M, $K],
                                                                          [$M, $K])?
    %sr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($s : $dt[$M], [$M, 1])
    %zr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($zp : $zdt[$M], [$M, 1])
    %iv = aten.reciprocal(%sr)
    %i1 = aten.mul.Tensor(%iv, 1.0)?
    %xs = aten.mul.Tensor(%xr : _[$M, $K], %i1)
    %rd = aten.round(%xs)
    %ad = aten.add.Tensor(%rd, %zr)
    %cl = aten.clamp.default(%ad, $qmin, $qmax)
    %qo = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%cl, [$M, $K])?
    %qr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%qo, [$M, $K])?
    %sd = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($s, [$M, 1])
    %zd = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($zp, [$M, 1])
    %qf = aten._to_copy(%qr : _[$M, $K], dtype = $dt)?
    %zf = aten._to_copy(%zd, dtype = $dt)
    %df = aten.sub.Tensor(%qf : $dt[$M, $K], %zf : $dt[$M, 1])
    %ml = aten.mul.Tensor(%df, %sd)
    %y0 = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%ml : $dt[$M, $K],
                                                                          [$M, $K])?
    %y  = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%y0 : $dt[$M, $K],
                                                                          [$M, $K])
  }
  where {
    $dt in [f32, bf16, f16]
    not is_float($zdt)
    $qmin >= -128 and $qmax <= 127 and $qmin <= $qmax
  }
  rewrite {
    %y = torchao.fake_quantize_affine($x, [1, $K], $s, $zp, i8, $qmin, $qmax)
  }
  example {
    M = [1, 3]
    K = [32, 64]
    dt = [f32, bf16]
    zdt = [i32, i8]
    qmin = -128
    qmax = 127
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
    zp = uniform(-32, 32)
  }
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule qat_fake_quant_decomposed_per_token_3d benefit 60 tags(qat, legalize) {
  match {
    %xr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($x : $dt[$B, $S, $K],
                                                                          [$B, $S, $K])?
    %sr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($s : $dt[$B, $S],
                                                                          [$B, $S, 1])
    %zr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($zp : $zdt[$B, $S],
                                                                          [$B, $S, 1])
    %iv = aten.reciprocal(%sr)
    %i1 = aten.mul.Tensor(%iv, 1.0)?
    %xs = aten.mul.Tensor(%xr : _[$B, $S, $K], %i1)
    %rd = aten.round(%xs)
    %ad = aten.add.Tensor(%rd, %zr)
    %cl = aten.clamp.default(%ad, $qmin, $qmax)
    %qo = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%cl, [$B, $S, $K])?
    %qr = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%qo, [$B, $S, $K])?
    %sd = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($s, [$B, $S, 1])
    %zd = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($zp, [$B, $S, 1])
    %qf = aten._to_copy(%qr : _[$B, $S, $K], dtype = $dt)?
    %zf = aten._to_copy(%zd, dtype = $dt)
    %df = aten.sub.Tensor(%qf : $dt[$B, $S, $K], %zf : $dt[$B, $S, 1])
    %ml = aten.mul.Tensor(%df, %sd)
    %y0 = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%ml : $dt[$B, $S, $K],
                                                                          [$B, $S, $K])?
    %y  = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%y0 : $dt[$B, $S, $K],
                                                                          [$B, $S, $K])
  }
  where {
    $dt in [f32, bf16, f16]
    not is_float($zdt)
    $qmin >= -128 and $qmax <= 127 and $qmin <= $qmax
  }
  rewrite {
    %y = torchao.fake_quantize_affine($x, [1, 1, $K], $s, $zp, i8, $qmin, $qmax)
  }
  example {
    B = 1
    S = [1, 3]
    K = [32, 64]
    dt = [f32, bf16]
    zdt = [i32, i8]
    qmin = -128
    qmax = 127
    x = uniform(-128, 128)
    s = uniform(0.5, 1.5)
    zp = uniform(-32, 32)
  }
}

/// The qparams of a fake-quantized parameter computed in the graph from that parameter
/// (IntxFakeQuantizer weights: get_group_qparams_symmetric, then scale.reshape(N, -1)) ->
/// computed once, ahead of time, by the choose_qparams_affine constant transform; qat.pat then
/// folds the weight with them. The view is optional: choose_qparams_affine already returns
/// [N, K / G] (keepdim false), so reshape(N, -1) changes nothing.
rule qat_weight_qparams_fold benefit 60 tags(qat, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine(param $w : $dt[$N, $K], "SYMMETRIC", [1, $G], $tdt,
                                            $cqmin, $cqmax, $eps, $sdt, $zdt)
    %s2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%s : $sdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %z2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%zp : $zdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %fq     = torchao.fake_quantize_affine(param $w, [1, $G], %s2 : _[$N, $NG], %z2 : _[$N, $NG],
                                           $qdt, $qmin, $qmax)
  }
  where {
    $eps is not none
    $K % $G == 0
  }
  rewrite {
    $sc = choose_qparams_affine($w, mapping_type = SYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = scale)
    $zc = choose_qparams_affine($w, mapping_type = SYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = zero_point)
    %fq = torchao.fake_quantize_affine($w, [1, $G], $sc, $zc, $qdt, $qmin, $qmax)
  }
  example {
    N = [4, 8]
    K = 64
    G = 32
    NG = 2
    dt = [f32, bf16]
    tdt = i8
    cqmin = -8
    cqmax = 7
    eps = 0
    sdt = [f32, bf16]
    zdt = [i32, i8]
    qdt = i8
    qmin = -8
    qmax = 7
    w = uniform(-0.5, 0.5)
  }
}

/// The same for an asymmetric weight (IntxFakeQuantizeConfig(is_symmetric=False)).
rule qat_weight_qparams_fold_asymmetric benefit 60 tags(qat, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine(param $w : $dt[$N, $K], "ASYMMETRIC", [1, $G], $tdt,
                                            $cqmin, $cqmax, $eps, $sdt, $zdt)
    %s2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%s : $sdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %z2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%zp : $zdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %fq     = torchao.fake_quantize_affine(param $w, [1, $G], %s2 : _[$N, $NG], %z2 : _[$N, $NG],
                                           $qdt, $qmin, $qmax)
  }
  where {
    $eps is not none
    $K % $G == 0
  }
  rewrite {
    $sc = choose_qparams_affine($w, mapping_type = ASYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = scale)
    $zc = choose_qparams_affine($w, mapping_type = ASYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = zero_point)
    %fq = torchao.fake_quantize_affine($w, [1, $G], $sc, $zc, $qdt, $qmin, $qmax)
  }
  example {
    N = [4, 8]
    K = 64
    G = 32
    NG = 2
    dt = [f32, bf16]
    tdt = i8
    cqmin = -8
    cqmax = 7
    eps = 0
    sdt = [f32, bf16]
    zdt = [i32, i8]
    qdt = i8
    qmin = -8
    qmax = 7
    w = uniform(-0.5, 0.5)
  }
}

/// The same with the zero point cast after the reshape: get_group_qparams_symmetric returns
/// the zero point in the scale precision and IntxFakeQuantizer casts it to its zero-point
/// precision (zero_point.to(int32) by default). The folded zero point gets the same cast
/// (the cast transform follows torch's .to()).
rule qat_weight_qparams_fold_zp_cast benefit 61 tags(qat, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine(param $w : $dt[$N, $K], "SYMMETRIC", [1, $G], $tdt,
                                            $cqmin, $cqmax, $eps, $sdt, $zdt)
    %s2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%s : $sdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %z2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%zp : $zdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %z3     = aten._to_copy(%z2, dtype = $zpp)
    %fq     = torchao.fake_quantize_affine(param $w, [1, $G], %s2 : _[$N, $NG], %z3 : _[$N, $NG],
                                           $qdt, $qmin, $qmax)
  }
  where {
    $eps is not none
    $K % $G == 0
  }
  rewrite {
    $sc = choose_qparams_affine($w, mapping_type = SYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = scale)
    $z0 = choose_qparams_affine($w, mapping_type = SYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = zero_point)
    $zc = cast($z0, dtype = $zpp)
    %fq = torchao.fake_quantize_affine($w, [1, $G], $sc, $zc, $qdt, $qmin, $qmax)
  }
  example {
    N = [4, 8]
    K = 64
    G = 32
    NG = 2
    dt = [f32, bf16]
    tdt = i8
    cqmin = -8
    cqmax = 7
    eps = 0
    sdt = [f32, bf16]
    zdt = [f32, bf16]
    zpp = [i32, i8]
    qdt = i8
    qmin = -8
    qmax = 7
    w = uniform(-0.5, 0.5)
  }
}

/// The same for an asymmetric weight.
rule qat_weight_qparams_fold_zp_cast_asymmetric benefit 61 tags(qat, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine(param $w : $dt[$N, $K], "ASYMMETRIC", [1, $G], $tdt,
                                            $cqmin, $cqmax, $eps, $sdt, $zdt)
    %s2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%s : $sdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %z2     = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%zp : $zdt[$N, $NG],
                                                                              [$N, -1] | [$N, $NG])?
    %z3     = aten._to_copy(%z2, dtype = $zpp)
    %fq     = torchao.fake_quantize_affine(param $w, [1, $G], %s2 : _[$N, $NG], %z3 : _[$N, $NG],
                                           $qdt, $qmin, $qmax)
  }
  where {
    $eps is not none
    $K % $G == 0
  }
  rewrite {
    $sc = choose_qparams_affine($w, mapping_type = ASYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = scale)
    $z0 = choose_qparams_affine($w, mapping_type = ASYMMETRIC, block_size = [1, $G],
                                target_dtype = $tdt, quant_min = $cqmin, quant_max = $cqmax,
                                eps = $eps, scale_dtype = $sdt, zero_point_dtype = $zdt,
                                output = zero_point)
    $zc = cast($z0, dtype = $zpp)
    %fq = torchao.fake_quantize_affine($w, [1, $G], $sc, $zc, $qdt, $qmin, $qmax)
  }
  example {
    N = [4, 8]
    K = 64
    G = 32
    NG = 2
    dt = [f32, bf16]
    tdt = i8
    cqmin = -8
    cqmax = 7
    eps = 0
    sdt = [f32, bf16]
    zdt = [f32, bf16]
    zpp = [i32, i8]
    qdt = i8
    qmin = -8
    qmax = 7
    w = uniform(-0.5, 0.5)
  }
}
