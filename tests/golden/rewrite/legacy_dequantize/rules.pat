// Graphs exported before pytorch/ao#2149 call dequantize_affine with the
// legacy `zero_point_domain` argument. The rule, written against the current
// signature, matches them when the domain is the default "INT" and not when
// it is "FLOAT" (tinygemm's different formula).

rule torchao_embedding_q4gsw benefit 10 {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[_, _], [1, $G], param $s, none, i8, -8, 7,
                                     output_dtype = f32)
    %out = aten.embedding(%dq, $idx)
  }
  where {
    values_in($w, -8, 7)
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
}
