// expect: 4:38: error: 'else %z': %z is not a positional argument of the optional node
rule r {
  match {
    %v = aten.view_copy($x, _)? else %z
    %y = aten.relu(%v)
  }
  rewrite { %y = aten.relu($x) }
}
