// Statement-level alternatives: the dequantized weight reaches aten.mm
// through aten.t or aten.permute_copy(_, [1, 0]) (two rule variants).

rule torchao_mm_q4gsw benefit 10 {
  match {
    %w  = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G], param $s : f32[$N, _], none,
                                    i8, -8, 7, output_dtype = f32)
    %wt = aten.t(%w) | aten.permute_copy(%w, [1, 0])
    %y  = aten.mm($x : f32[_, $K], %wt)
  }
  where {
    $K % $G == 0
    values_in($qw, -8, 7)
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = low_first)
    $scales = transpose($s)
    %y      = et_vk.linear_q4gsw($x, $packed, $scales, $G)
  }
}
