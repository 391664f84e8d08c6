// expect: 6:10: error: pattern node %b uses the root %a
// expect: 5:10: note: a root's results are replaced by the rewrite
rule r {
  match {
    root %a = aten.neg($x)
    root %b = aten.relu(%a)
  }
  rewrite {
    %a = aten.relu($x)
    %b = aten.relu($x)
  }
}
