// expect: 5:11: error: unknown function 'all_zeros'
// expect: note: did you mean 'all_zero'?
rule r {
  match { %y = aten.relu($x) }
  where { all_zeros($x) }
  rewrite { %y = aten.relu($x) }
}
