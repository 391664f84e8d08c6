// expect: 5:34: error: expected ',' and the upper bound: uniform(lo, hi)
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
  example { N = 4, x = uniform(-8) }
}
