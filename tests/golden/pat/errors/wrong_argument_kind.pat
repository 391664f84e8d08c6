// expect: 4:76: error: argument 'quant_min' of torchao.dequantize_affine.default is Scalar?, but the pattern gives a string
rule r {
  match {
    %dq = torchao.dequantize_affine(param $w, [1, 32], param $s, none, i8, "-8", 7)
    %y  = aten.embedding(%dq, $idx)
  }
  rewrite { %y = aten.embedding(%dq, $idx) }
}
