// The issue's illustration, made exact: the scales' dtype is the output dtype.

/// Fuse torchao's weight-only int4 embedding into one Vulkan op.
rule torchao_embedding_q4gsw benefit 10 tags(embedding, int4) backend vulkan {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : $odt[$V, $NG], $zp,
                                     i8, -8, 7, output_dtype = $odt)
    %out = aten.embedding(%dq, $idx)
  }
  where {
    $D % $G == 0
    $D % 32 == 0
    $NG == $D / $G
    $zp is none or all_zero($zp)
    values_in($w, -8, 7)
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)  // constant transform, FQN-registered
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = 64, D = 128, G = 32, NG = 4, odt = [f32, bf16] }  // instances for verification
  tolerance(atol = 0, rtol = 0)
}
