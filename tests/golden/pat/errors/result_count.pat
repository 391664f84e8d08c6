// expect: 4:5: error: torchao.choose_qparams_affine returns 2 values, the pattern names 1 (write _ for results you do not need)
rule r {
  match {
    %s = torchao.choose_qparams_affine($x, "ASYMMETRIC", [1, 32], i8, ...)
    %q = torchao.quantize_affine($x, [1, 32], %s, none, i8)
  }
  rewrite { %q = torchao.quantize_affine($x, [1, 32], %s, none, i8) }
}
