// expect: 5:15: error: root %a shares no input with the other roots of the match (%b)
// expect: 6:15: note: make the roots use the same $capture or %result
rule r {
  match {
    root %a = aten.neg($x)
    root %b = aten.neg($y)
  }
  rewrite {
    %a = aten.relu($x)
    %b = aten.relu($y)
  }
}
