// expect: 5:5: error: pattern node %c is disconnected from the roots of the match
// expect: 7:10: note: every statement of a multi-root match must feed a statement marked 'root'
rule r {
  match {
    %c      = aten.neg($x)
    root %a = aten.neg($x)
    root %b = aten.relu($x)
  }
  rewrite {
    %a = aten.relu($x)
    %b = aten.relu($x)
  }
}
