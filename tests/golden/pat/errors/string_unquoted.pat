// expect: 4:49: error: is a string; write it quoted: "ASYMMETRIC"
rule r {
  match {
    %s, %zp = torchao.choose_qparams_affine($x, ASYMMETRIC, [1, 32], i8, ...)
    %q      = torchao.quantize_affine($x, [1, 32], %s, %zp, i8)
  }
  rewrite { %q = torchao.quantize_affine($x, [1, 32], %s, %zp, i8) }
}
