import "x.pat"
phase legalize

/// Doc.
rule messy benefit 2 tags(a, b) backend vulkan {
  match {
    %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s, $zp, i8, -8, 7,
                                     output_dtype = $odt)
    %out = aten.embedding(%dq, $idx)  // trailing
  }

  where {
    $D % $G == 0
    $zp is not none and all_zero($zp)
    $D % 32 == 0 or $D == 16
  }
  rewrite {
    $packed = pack_int4($w, nibbles = low_first)
    %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
  }
  example { V = 64, D = 128, G = 32, odt = f32, s = uniform(-4, 2.5e3) }
  tolerance(rtol = 1e-3)
  match {
    %t = aten.t(param $w)
       | aten.permute_copy(param $w, [1, 0])
       | aten.permute_copy(param $w, [1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    %v = aten.view_copy(%t, _)?
    // a comment inside a statement
  }
  where {}
}

rule second {
  match {
    %a = aten.relu($x)
  }
  rewrite {
    %a = aten.relu($x)
  }
}
