// expect: 5:31: error: use of unbound capture $odt
rule r {
  match { %y = aten.relu($x : $dt[...]) }
  rewrite { %y = aten.relu($x) }
  tolerance(atol = 1e-2) when $odt == f16
}
