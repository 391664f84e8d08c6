// expect: 5:42: error: unknown keyword argument 'bais' for aten.linear.default
// expect: note: did you mean 'bias'?
// expect: note: aten.linear.default takes: input, weight, bias
rule r {
  match { %y = aten.linear($x, param $w, bais = _) }
  rewrite { %y = aten.linear($x, $w, none) }
}
