// expect: 6:5: error: the last statement of a match with 'root' statements must be a root too
// expect: 5:5: note: mark %b 'root' as well
rule r {
  match {
    root %a = aten.neg($x)
    %b      = aten.neg($x)
  }
  rewrite {
    %a = aten.relu($x)
    %b = aten.relu($x)
  }
}
