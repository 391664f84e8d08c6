// expect: 5:1: error: expected '}'
rule r {
  match {
    %y = aten.relu($x)
