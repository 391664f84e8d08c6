// expect: 5:32: error: uniform bound -inf is not a finite number
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
  example { N = 4, x = uniform(-inf, 1e400) }
}
