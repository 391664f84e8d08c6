// expect: 6:13: error: example names 'M', which the match does not capture
// expect: note: did you mean 'N'?
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
  example { M = 4 }
}
