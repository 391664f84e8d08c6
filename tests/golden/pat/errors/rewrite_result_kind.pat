// expect: 5:13: error: the rewrite replaces %y (a tensor) with an int returned by aten.sym_size.int
// expect: 4:11: note: %y is defined here
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.sym_size.int($x, 0) }
}
