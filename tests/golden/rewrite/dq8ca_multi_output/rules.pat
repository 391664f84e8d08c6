// Dynamic per-token int8 activations (torchao 8da4w) feeding an int4 linear:
// a multi-output choose_qparams (scale, zero point), `shared` interior nodes
// (the activation chain feeds two linears), and group_sums for the kernel's
// zero-point correction. The fused op's reference semantics skip the
// activation quantization, hence the tolerance.

rule dq8ca_linear_q4gsw benefit 30 {
  match {
    shared %s, %zp = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, $K], i8, -128, 127, ...)
    shared %q      = torchao.quantize_affine($x : f32[$M, $K], [1, $K], %s, %zp, i8, -128, 127)
    shared %dq     = torchao.dequantize_affine(%q, [1, $K], %s, %zp, i8, -128, 127,
                                               output_dtype = f32)
    %w             = torchao.dequantize_affine(param $qw : i8[$N, $K], [1, $G],
                                               param $ws : f32[$N, _], none, i8, -8, 7,
                                               output_dtype = f32)
    %y             = aten.linear(%dq, %w, none)
  }
  where {
    $K % $G == 0
    values_in($qw, -8, 7)
  }
  rewrite {
    $packed = pack_int4($qw, nibbles = low_first)
    $sums   = group_sums($qw, group_size = $G)
    $scales = transpose($ws)
    %y      = et_vk.linear_dq8ca_q4gsw($x, %s, %zp, $packed, $sums, $scales, $G)
  }
  example { M = 2, N = 8, K = 64, G = 32 }
  tolerance(atol = 0.05, rtol = 0.05)
}
