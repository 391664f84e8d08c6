// expect: 9:5: error: the rewrite does not replace %a, the result of a root of the match
// expect: 5:10: note: %a is defined here
rule r {
  match {
    root %a = aten.neg($x)
    root %b = aten.relu($x)
  }
  rewrite {
    %b = aten.relu($x)
  }
}
