// expect: 6:1: error: 'phase' must come before the file's rules (it applies to all)
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
}
phase legalize
