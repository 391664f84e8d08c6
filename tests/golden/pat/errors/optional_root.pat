// expect: 5:23: error: the root of a match (its last statement) cannot be optional
rule r {
  match {
    %a = aten.view_copy($x, _)
    %b = aten.relu(%a)?
  }
  rewrite { %b = aten.relu($x) }
}
