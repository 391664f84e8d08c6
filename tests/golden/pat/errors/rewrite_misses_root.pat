// expect: 8:13: error: the rewrite does not replace %b, the result of the match's root
// expect: 6:5: note: %b is defined here
rule r {
  match {
    %a = aten.relu($x)
    %b = aten.relu(%a)
  }
  rewrite { %a = aten.relu($x) }
}
