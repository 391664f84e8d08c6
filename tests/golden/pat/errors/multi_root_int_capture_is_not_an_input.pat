// expect: 5:15: error: root %a shares no input with the other roots of the match (%b)
// A shared int (a dim) is no value the matcher can walk from to find %a.
rule r {
  match {
    root %a = aten.neg($x : f32[$N])
    root %b = aten.neg($y : f32[$N])
  }
  rewrite {
    %a = aten.relu($x)
    %b = aten.relu($y)
  }
}
