// float64 activation scales made float32 (docs/rules.md, "float64 activation scales"). A
// legalize family (the file name says so): it runs before the fusion rules.
//
// torchao's per-token activation quantization used to ask choose_qparams_affine for float64
// scales and int64 zero points (the Int8DynActInt4Weight path before IntxUnpackedToInt8Tensor;
// pytorch/ao's test_quant_primitives / ExecuTorch's XNNPACK 8da4w tests expected
// `choose_qparams_affine.default(x, 'ASYMMETRIC', [1, K], torch.int8, None, None, None,
// torch.float64, torch.int64)`), and such exports are still around. A Vulkan device has no
// float64 (the partitioner refuses it), so the scale is recomputed in float32 and widened:
//
// Before:
//   %s : f64[1, S], %zp : i64[1, S] = torchao.choose_qparams_affine(%x : f32[1, S, K],
//                                       "ASYMMETRIC", [1, 1, K], i8, none, none, none, f64, i64)
// After:
//   %s32 : f32[1, S], %zp : i64[1, S] = torchao.choose_qparams_affine(%x, "ASYMMETRIC",
//                                       [1, 1, K], i8, none, none, none, f32, i64)
//   %s   : f64[1, S]                  = aten._to_copy(%s32, dtype = f64)
//
// Exact (tolerance 0): torchao computes min/max, the scale, its eps clamp and the zero point
// in the input's dtype and converts only at the end (quant_primitives.py
// `_choose_qparams_affine`: `return scale.to(dtype=scale_dtype), zero_point.to(...)`), so the
// float64 scale of an input of at most 32 bits is a float32 value widened exactly; the zero
// point does not depend on scale_dtype. The consumers still see the f64 scale: quantize_affine
// then computes x * (1 / s) in f64, as torch's type promotion does. The 8da4w fusion
// (linear_8da4w.pat) reads the f32 scale through the cast, which dies with the quantize /
// dequantize pair it replaces.
//
// Only the per-token activation blocks are written out ([1, K] for [M, K], [1, 1, K] for
// [B, S, K]; verify-rules needs literal block sizes), with the mapping type torchao used for
// activations, ASYMMETRIC.

/// choose_qparams_affine of a rank-2 activation with f64 scales -> f32 scales widened to f64.
rule choose_qparams_affine_f64_scale benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine($x : $xdt[$M, $K], "ASYMMETRIC", [1, $K], $tdt, $qmin,
                                            $qmax, none, f64, $zdt, $keep)
  }
  where {
    is_float($xdt) and bits($xdt) <= 32
  }
  rewrite {
    %s32, %zp = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, $K], $tdt, $qmin, $qmax, none,
                                              f32, $zdt, $keep)
    %s        = aten._to_copy(%s32, dtype = f64)
  }
  example {
    M = [1, 3]
    K = [8, 32]
    xdt = [f32, bf16]
    tdt = i8
    qmin = -128
    qmax = 127
    zdt = [i64, i32]
  }
}

/// The same for a rank-3 activation [B, S, K] (block [1, 1, K]).
rule choose_qparams_affine_f64_scale_3d benefit 40 tags(quant, legalize) {
  match {
    %s, %zp = torchao.choose_qparams_affine($x : $xdt[$B, $M, $K], "ASYMMETRIC", [1, 1, $K], $tdt,
                                            $qmin, $qmax, none, f64, $zdt, $keep)
  }
  where {
    is_float($xdt) and bits($xdt) <= 32
  }
  rewrite {
    %s32, %zp = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, 1, $K], $tdt, $qmin, $qmax,
                                              none, f32, $zdt, $keep)
    %s        = aten._to_copy(%s32, dtype = f64)
  }
  example {
    B = [1, 2]
    M = [1, 3]
    K = [8, 32]
    xdt = [f32, bf16]
    tdt = i8
    qmin = -128
    qmax = 127
    zdt = [i64, i32]
  }
}
