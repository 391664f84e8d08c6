// The issue's embedding rule, exactly: torchao int4 weight-only embedding
// -> et_vk.embedding_q4gsw with the weight packed low nibble first.

/// Fuse torchao's weight-only int4 embedding into one Vulkan op.
rule torchao_embedding_q4gsw benefit 10 {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : $odt[$V, $NG], $zp,
                                     i8, -8, 7, output_dtype = $odt)
    %out = aten.embedding(%dq, $idx)
  }
  where {
    $D % $G == 0
    $D % 32 == 0
    $zp is none or all_zero($zp)
    values_in($w, -8, 7)
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = 8, D = 64, G = 32, NG = 2, odt = f32 }
}
