// dtype legalization of dequantized weights (docs/rules.md, "dtype legalization"; seed:
// pytorch/executorch PR #18957).
//
// ExecuTorch's Llama export quantizes in the checkpoint dtype, then casts the model to the
// compute dtype (examples/models/llama/export_llama_lib.py: `m.to(dtype=dtype_override)`
// after the quantization transforms). Where the torchao weight was unwrapped first
// (source_transformation/quantize.py, torchao:8daXw, and 4w before PR #18957), the
// subclass's dtype is frozen: the cast converts the plain scales but the dequantize keeps
// producing the checkpoint dtype, and a cast to the compute dtype follows:
// Before:
//   %dq : f32[N, K] = torchao.dequantize_affine(%qw : i8[N, K], [1, G], %s : f16[N, K/G],
//                                               none, i8, -8, 7)        (output_dtype f32)
//   %c  : f16[N, K] = aten._to_copy(%dq, dtype=f16)        (or _to_dim_order_copy)
// After:
//   %c  : f16[N, K] = torchao.dequantize_affine(%qw, [1, G], %s, none, i8, -8, 7,
//                                               output_dtype=f16)
// and likewise when the cast follows the embedding that reads the table:
//   %e = aten.embedding(%dq, %idx); %c = aten._to_copy(%e, dtype=f16)
//   -> %c = aten.embedding(torchao.dequantize_affine(..., output_dtype=f16), %idx)
//
// The result is the graph a checkpoint in the compute dtype exports to, so linear_4w.pat,
// linear_8da4w.pat and embedding.pat fuse it the same way.
//
// Numerics. torchao (quant_primitives.py _dequantize_affine_no_dtype_check) computes
// q.to(out) - zp.to(out), multiplies by the scale in the promoted dtype of the two, and casts
// the product to out. With an input of at most 8 bits and an integer zero point of at most 8
// bits, q - zp (|q - zp| <= 255) is exact in f32, f16 and bf16, so both graphs form the same
// product x = (q - zp) * s; only where it is rounded differs:
//  * dequantize_f32_cast, f32 -> f16 or bf16: the original rounds x to f32, then to the
//    target; the fold computes (q - zp) in the target and multiplies: with an f32 scale, or
//    a 16-bit one of the other kind (f16 and bf16 promote to f32), the product is rounded to
//    f32 first, the same two steps; with a scale in the target dtype, x needs at most
//    8 + 11 bits, so the f32 rounding is exact and both round x once. Bit-exact.
//  * dequantize_half_cast, bf16 or f16 -> f32 or f16: the original rounds x to the narrower
//    dequantize dtype, which the fold no longer does: within half an ulp of that dtype
//    (2^-8 relative for bf16, 2^-11 for f16), rtol 2^-8; into f16, the f16 subnormal step
//    on top (atol 2^-24).
// f64 scales (promoted to f64, where the f32 step would round differently), float zero
// points (zp.to(out) rounds) and wider integer zero points (which may round in f16 or
// bf16) are left alone. |s| <= 255 keeps every |x| <= 255 * 255 inside f16's finite range, so neither
// side rounds a value to infinity that the other keeps finite. An f16 dequantize cast to
// bf16 rounds twice (to f16, then bf16) and is not folded.

phase legalize

/// dequantize_affine(..., output_dtype=f32) cast to f16 or bf16 -> one dequantize_affine
/// to that dtype. Bit-exact.
rule dequantize_f32_cast benefit 10 tags(dtype, legalize) {
  match {
    %dq = torchao.dequantize_affine(param $in : $idt[$N, $K], [1, $G], param $s : $sdt[$N, $NG],
                                    $zp, $idt, $qmin, $qmax, output_dtype = f32)
    %c  = aten._to_copy(%dq, dtype = $cdt) | dim_order_ops._to_dim_order_copy(%dq, dtype = $cdt)
  }
  where {
    $cdt in [f16, bf16]
    $NG == $K / $G
    bits($idt) <= 8
    is_float($sdt) and bits($sdt) <= 32
    $zp is none or not is_float(dtype($zp)) and bits(dtype($zp)) <= 8
    values_in($s, -255, 255)
  }
  rewrite {
    %c = torchao.dequantize_affine($in, [1, $G], $s, $zp, $idt, $qmin, $qmax, output_dtype = $cdt)
  }
  example {
    N = [4, 8]
    K = [32, 64]
    G = [16, 32]
    idt = i8
    sdt = [f32, f16, bf16]
    cdt = [f16, bf16]
    qmin = -8
    qmax = 7
  }
}

/// dequantize_affine(..., output_dtype=bf16 or f16) cast to f32 or f16 -> one
/// dequantize_affine to that dtype, within half an ulp of the dequantize's dtype.
rule dequantize_half_cast benefit 10 tags(dtype, legalize) {
  match {
    %dq = torchao.dequantize_affine(param $in : $idt[$N, $K], [1, $G], param $s : $sdt[$N, $NG],
                                    $zp, $idt, $qmin, $qmax, output_dtype = $odt)
    %c  = aten._to_copy(%dq, dtype = $cdt) | dim_order_ops._to_dim_order_copy(%dq, dtype = $cdt)
  }
  where {
    $odt in [bf16, f16]
    $cdt in [f32, f16]
    $cdt != $odt
    $NG == $K / $G
    bits($idt) <= 8
    is_float($sdt) and bits($sdt) <= 32
    $zp is none or not is_float(dtype($zp)) and bits(dtype($zp)) <= 8
    values_in($s, -255, 255)
  }
  rewrite {
    %c = torchao.dequantize_affine($in, [1, $G], $s, $zp, $idt, $qmin, $qmax, output_dtype = $cdt)
  }
  example {
    N = [4, 8]
    K = [32, 64]
    G = [16, 32]
    idt = i8
    sdt = [f32, f16, bf16]
    odt = [bf16, f16]
    cdt = [f32, f16]
    qmin = -8
    qmax = 7
  }
  tolerance(atol = 6e-8, rtol = 0.004)
}

/// embedding over an f32-dequantized table, cast to f16 or bf16 -> embedding over the
/// table dequantized to that dtype. Bit-exact.
rule dequantize_f32_embedding_cast benefit 10 tags(dtype, legalize) {
  match {
    %dq = torchao.dequantize_affine(param $in : $idt[$V, $D], [1, $G], param $s : $sdt[$V, $NG],
                                    $zp, $idt, $qmin, $qmax, output_dtype = f32)
    %e  = aten.embedding(%dq, $idx)
    %c  = aten._to_copy(%e, dtype = $cdt) | dim_order_ops._to_dim_order_copy(%e, dtype = $cdt)
  }
  where {
    $cdt in [f16, bf16]
    $NG == $D / $G
    bits($idt) <= 8
    is_float($sdt) and bits($sdt) <= 32
    $zp is none or not is_float(dtype($zp)) and bits(dtype($zp)) <= 8
    values_in($s, -255, 255)
  }
  rewrite {
    %t = torchao.dequantize_affine($in, [1, $G], $s, $zp, $idt, $qmin, $qmax, output_dtype = $cdt)
    %c = aten.embedding(%t, $idx)
  }
  example {
    V = [4, 8]
    D = [32, 64]
    G = [16, 32]
    idt = i8
    sdt = [f32, f16, bf16]
    cdt = [f16, bf16]
    qmin = -8
    qmax = 7
  }
}

/// embedding over a bf16- or f16-dequantized table, cast to f32 or f16 -> embedding over
/// the table dequantized to that dtype, within half an ulp of the dequantize's dtype.
rule dequantize_half_embedding_cast benefit 10 tags(dtype, legalize) {
  match {
    %dq = torchao.dequantize_affine(param $in : $idt[$V, $D], [1, $G], param $s : $sdt[$V, $NG],
                                    $zp, $idt, $qmin, $qmax, output_dtype = $odt)
    %e  = aten.embedding(%dq, $idx)
    %c  = aten._to_copy(%e, dtype = $cdt) | dim_order_ops._to_dim_order_copy(%e, dtype = $cdt)
  }
  where {
    $odt in [bf16, f16]
    $cdt in [f32, f16]
    $cdt != $odt
    $NG == $D / $G
    bits($idt) <= 8
    is_float($sdt) and bits($sdt) <= 32
    $zp is none or not is_float(dtype($zp)) and bits(dtype($zp)) <= 8
    values_in($s, -255, 255)
  }
  rewrite {
    %t = torchao.dequantize_affine($in, [1, $G], $s, $zp, $idt, $qmin, $qmax, output_dtype = $cdt)
    %c = aten.embedding(%t, $idx)
  }
  example {
    V = [4, 8]
    D = [32, 64]
    G = [16, 32]
    idt = i8
    sdt = [f32, f16, bf16]
    odt = [bf16, f16]
    cdt = [f32, f16]
    qmin = -8
    qmax = 7
  }
  tolerance(atol = 6e-8, rtol = 0.004)
}
