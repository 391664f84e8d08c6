// expect: 7:3: error: rule 'r' has two tolerance(...) clauses without 'when'; guard all but one (tolerance(...) when $dt == f16)
// expect: 6:3: note: previous unguarded tolerance(...) here
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
  tolerance(atol = 1e-3)
  tolerance(atol = 1e-2)
}
