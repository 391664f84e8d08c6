// expect: 4:28: error: the rewrite replaces %y, so it cannot also use it
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu(%y) }
}
