// Weight-only int4 linear with the constructs real exports need: an optional
// bias, alternatives between sub-patterns, trailing-dim shape patterns.

/// torchao int4 weight-only linear -> et_vk.linear_q4gsw.
/// The weight may reach the linear directly or through a transpose.
rule torchao_linear_q4gsw benefit 20 tags(linear, int4) backend vulkan {
  match {
    %w = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G], param $s : f32[$N, $NG], none,
                                   i8, -8, 7, output_dtype = f32)
    %y = aten.linear($x : f32[..., $K], %w, $bias)
  }
  where {
    $K % $G == 0
    $NG == $K / $G
    $G in [32, 64, 128]
    values_in($qw, -8, 7)
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = low_first)
    $scales = transpose($s, 0, 1)
    %y      = et_vk.linear_q4gsw($x, $packed, $scales, $G, $bias)
  }
  example { N = 16..64 step 16, K = 128, G = 32, NG = 4 }
  tolerance(atol = 1e-5, rtol = 1e-4)
}

/// The same through an explicit mm: the weight is transposed by t or
/// permute_copy (two alternatives with different arguments: two variants).
rule torchao_mm_q4gsw tags(linear, int4) {
  match {
    %w  = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G], param $s : f32[$N, $NG], none,
                                    i8, -8, 7, output_dtype = f32)
    %wt = aten.t(%w) | aten.permute_copy(%w, [1, 0])
    %y  = aten.mm($x : f32[$M, $K], %wt)
  }
  where {
    $K % $G == 0
    $NG == $K / $G
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = low_first)
    $scales = transpose($s)
    %y      = et_vk.linear_q4gsw($x, $packed, $scales, $G)
  }
  example { M = 2, N = 16, K = 64, G = 32, NG = 2 }
}
