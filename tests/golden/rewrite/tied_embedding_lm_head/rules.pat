// Tied embedding / lm_head with one weight FQN *and* one scales FQN: the
// embedding reads the scales [V, G] as they are, the lm_head (linear_q4gsw)
// needs them transposed [G, V]. The FQN registry packs the shared weight
// once and makes the transposed scales a separate constant.

rule torchao_embedding_q4gsw benefit 10 {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : f32[$V, _], $zp, i8,
                                     -8, 7, output_dtype = f32)
    %out = aten.embedding(%dq, $idx)
  }
  where {
    $D % $G == 0
    $zp is none or all_zero($zp)
    values_in($w, -8, 7)
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
}

rule torchao_linear_q4gsw benefit 10 {
  match {
    %dq = torchao.dequantize_affine(param $w : i8[$N, $K], [1, $G], param $s : f32[$N, _], $zp, i8,
                                    -8, 7, output_dtype = f32)
    %y  = aten.linear($x : f32[..., $K], %dq, $bias)
  }
  where {
    $K % $G == 0
    $zp is none or all_zero($zp)
    values_in($w, -8, 7)
  }
  rewrite {
    $wp     = pad_to_multiple($w, dim = 1, multiple = 8)
    $packed = pack_int4($wp, nibbles = low_first)
    $st     = transpose($s, 0, 1)
    $scales = pad_to_multiple($st, dim = 1, multiple = 8)
    %y      = et_vk.linear_q4gsw($x, $packed, $scales, $G, $bias)
  }
}
