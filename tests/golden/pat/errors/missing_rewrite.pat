// expect: 2:6: error: rule 'r' has no 'rewrite' section
rule r {
  match { %y = aten.relu($x) }
}
