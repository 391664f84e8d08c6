// expect: 5:5: error: pattern node %a is disconnected from its root %b
// expect: 6:5: note: the root of a match is its last statement
rule r {
  match {
    %a = aten.relu($x)
    %b = aten.relu($y)
  }
  rewrite { %b = aten.relu($y) }
}
