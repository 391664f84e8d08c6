// Multi-output ops, shared interior nodes and captured lists.

/// Dynamic per-token activation quantization feeding an int4 linear.
rule dq8ca_linear_q4gsw benefit 30 backend vulkan {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, $K], i8, -128, 127, ...)
    %q             = torchao.quantize_affine($x : f32[$M, $K], [1, $K], %s, %zp, i8, -128, 127)
    %dq            = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = f32)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : f32[$N, _], none, i8, -8, 7,
                                               output_dtype = f32)
    %y             = aten.linear(%dq, %w, none)
  }
  where {
    $K % $G == 0
    uses(%q) == 1
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = low_first)
    $sums   = group_sums($qw, group_size = $G)
    $scales = transpose($ws)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)
  }
  example { M = 4, N = 8, K = 64, G = 32 }
}
