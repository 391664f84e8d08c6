// expect: 5:3: error: expected ',' or ')'
rule r {
  match {
    %y = aten.relu($x
  }
  rewrite { %y = aten.relu($x) }
}
