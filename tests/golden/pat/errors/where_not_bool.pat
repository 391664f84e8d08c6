// expect: 4:11: error: a where predicate must be a bool, but this is an int
rule r {
  match { %y = aten.relu($x) }
  where { rank($x) + 1 }
  rewrite { %y = aten.relu($x) }
}
