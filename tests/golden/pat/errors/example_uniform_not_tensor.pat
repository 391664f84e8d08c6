// expect: 6:17: error: uniform(lo, hi) gives the random values of a tensor capture, but $N is an int
// expect: note: $N is bound here
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
  example { N = uniform(1, 8) }
}
