// expect: 3:37: error: '...' must be the last argument
rule r {
  match { %y = aten.linear($x, ..., _) }
  rewrite { %y = aten.relu($x) }
}
