// expect: 6:40: error: duplicate example entry 'x'
// expect: note: previous entry here
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
  example { N = 4, x = uniform(-8, 8), x = uniform(-100, 100) }
}
