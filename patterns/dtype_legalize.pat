// dtype legalization of dequantized weights (docs/rules.md, "dtype legalization"; seed:
// pytorch/executorch PR #18957).
//
// A checkpoint saved in bf16 and exported as an f32 model dequantizes to its checkpoint
// dtype and casts afterwards:
// Before:
//   %dq : bf16[N, K] = torchao.dequantize_affine(%qw : i8[N, K], [1, G], %s : bf16[N, K/G],
//                                                none, i8, -8, 7, output_dtype=bf16)
//   %c  : f32[N, K]  = aten._to_copy(%dq, dtype=f32)       (or _to_dim_order_copy)
// After:
//   %c  : f32[N, K]  = torchao.dequantize_affine(%qw, [1, G], %s, none, i8, -8, 7,
//                                                output_dtype=f32)
// and likewise when the cast follows the embedding that reads the bf16 table:
//   %e = aten.embedding(%dq : bf16, %idx); %c = aten._to_copy(%e, dtype=f32)
//   -> %c = aten.embedding(torchao.dequantize_affine(..., output_dtype=f32), %idx)
//
// The result is the shape an f32 checkpoint exports to, so linear_4w.pat, linear_8da4w.pat
// and embedding.pat fuse both the same way (their rules widen bf16 scales to f32 with an
// exact cast constant). torchao computes (q - zp) * scale in the output dtype. With an
// integer zero point and an input of at most 8 bits, q - zp is exact in bf16 (|q - zp| <=
// 255), so the bf16 result is the f32 product rounded once: the f32 result differs by at
// most half a bf16 ulp (rtol 2^-8). A float zero point (tinygemm-style) would round twice
// and is left alone.

phase legalize

/// dequantize_affine(..., output_dtype=bf16) cast to f32 -> one dequantize_affine to f32.
rule dequantize_bf16_to_f32 benefit 10 tags(dtype, legalize) {
  match {
    %dq = torchao.dequantize_affine(param $in : $idt[$N, $K], [1, $G], param $s : $sdt[$N, $NG],
                                    $zp, $idt, $qmin, $qmax, output_dtype = bf16)
    %c  = aten._to_copy(%dq, dtype = f32) | dim_order_ops._to_dim_order_copy(%dq, dtype = f32)
  }
  where {
    $NG == $K / $G
    bits($idt) <= 8
    $zp is none or not is_float(dtype($zp))
  }
  rewrite {
    %c = torchao.dequantize_affine($in, [1, $G], $s, $zp, $idt, $qmin, $qmax, output_dtype = f32)
  }
  example {
    N = [4, 8]
    K = [32, 64]
    G = [16, 32]
    idt = i8
    sdt = [bf16, f32]
    qmin = -8
    qmax = 7
  }
  tolerance(atol = 0, rtol = 0.004)
}

/// embedding over a bf16-dequantized table, cast to f32 -> embedding over the f32 table.
rule dequantize_bf16_embedding_to_f32 benefit 10 tags(dtype, legalize) {
  match {
    %dq = torchao.dequantize_affine(param $in : $idt[$V, $D], [1, $G], param $s : $sdt[$V, $NG],
                                    $zp, $idt, $qmin, $qmax, output_dtype = bf16)
    %e  = aten.embedding(%dq, $idx)
    %c  = aten._to_copy(%e, dtype = f32) | dim_order_ops._to_dim_order_copy(%e, dtype = f32)
  }
  where {
    $NG == $D / $G
    bits($idt) <= 8
    $zp is none or not is_float(dtype($zp))
  }
  rewrite {
    %t = torchao.dequantize_affine($in, [1, $G], $s, $zp, $idt, $qmin, $qmax, output_dtype = f32)
    %c = aten.embedding(%t, $idx)
  }
  example {
    V = [4, 8]
    D = [32, 64]
    G = [16, 32]
    idt = i8
    sdt = [bf16, f32]
    qmin = -8
    qmax = 7
  }
  tolerance(atol = 0, rtol = 0.004)
}
