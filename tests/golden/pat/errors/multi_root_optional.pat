// expect: 4:27: error: a root of a match cannot be optional
rule r {
  match {
    root %a = aten.neg($x)?
    root %b = aten.relu($x)
  }
  rewrite {
    %a = aten.relu($x)
    %b = aten.relu($x)
  }
}
