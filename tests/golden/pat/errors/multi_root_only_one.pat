// expect: 5:5: warning: 'root' on the only root of the match has no effect
rule r {
  match {
    %a      = aten.neg($x)
    root %b = aten.relu(%a)
  }
  rewrite {
    %b = aten.relu($x)
  }
}
