// expect: 8:37: error: $shape may be unbound here
// expect: 5:29: note: bound here
rule r {
  match {
    %v = aten.view_copy($x, $shape)?
    %y = aten.relu(%v)
  }
  rewrite { %y = aten.view_copy($x, $shape) }
}
