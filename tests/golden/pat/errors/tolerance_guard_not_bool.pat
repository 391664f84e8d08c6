// expect: 5:31: error: a tolerance guard must be a bool, but this is a dtype
rule r {
  match { %y = aten.relu($x : $dt[...]) }
  rewrite { %y = aten.relu($x) }
  tolerance(atol = 1e-2) when $dt
}
