// expect: 5:24: error: uniform(lo, hi) needs lo < hi (values are drawn from [lo, hi))
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
  example { N = 4, x = uniform(2, -2) }
}
