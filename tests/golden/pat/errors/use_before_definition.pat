// expect: 5:20: error: %b is not defined before this use
// expect: 6:5: note: %b is defined later
rule r {
  match {
    %a = aten.relu(%b)
    %b = aten.relu($x)
  }
  rewrite { %a = aten.relu($x) }
}
