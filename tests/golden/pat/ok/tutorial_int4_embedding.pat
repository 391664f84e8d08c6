// The rule docs/tutorial-first-rule.md builds, step by step.

/// torchao int4 weight-only embedding -> one Vulkan op.
rule int4_embedding {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s : f32[$V, $NG], $zp,
                                     i8, -8, 7)
    %out = aten.embedding(%dq, $idx : i64[$B, $T])
  }
  where {
    $D % $G == 0
    $NG == $D / $G
    $zp is none or all_zero($zp)
    values_in($w, -8, 7)
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = 16, D = 64, G = 32, NG = 2, B = 1, T = 4 }
}
