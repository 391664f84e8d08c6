// expect: 6:5: error: redefinition of %a
// expect: 5:5: note: previous definition here
rule r {
  match {
    %a = aten.relu($x)
    %a = aten.relu(%a)
  }
  rewrite { %a = aten.relu($x) }
}
