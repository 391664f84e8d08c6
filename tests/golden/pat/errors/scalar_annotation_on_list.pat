// expect: 3:39: error: 'scalar float' needs a Tensor or Scalar argument
rule r {
  match { %y = aten.mean.dim($x, $d : scalar float, true) }
  where { $d == -1 }
  rewrite { %y = aten.relu($x) }
}
