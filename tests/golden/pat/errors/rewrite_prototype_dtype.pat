// expect: 12:5: error: the rewrite replaces %out (bf16[8, 128]) with a value of another prototype: et_vk.embedding_q4gsw.default gives f32[8, 128] (dtype f32 instead of bf16)
// expect: 8:12: note: %out is matched here
// expect: note: checked on the instance { B = 8, D = 128, G = 32, NG = 4, V = 64 }
rule r {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : f32[$V, $NG], none,
                                     i8, -8, 7, output_dtype = bf16)
    %out = aten.embedding(%dq, $idx : i64[$B])
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = 64, D = 128, G = 32, NG = 4, B = 8 }
}
