// expect: 5:30: error: expected a condition after 'when' such as '$dt == f16'
rule r {
  match { %y = aten.relu($x : $dt[...]) }
  rewrite { %y = aten.relu($x) }
  tolerance(atol = 1e-2) when
}
