// expect: 4:13: error: the rewrite replaces %y (f32[M, N]) with a value of another prototype: aten.t.default gives f32[N, M] (dim 0 is N instead of M)
rule r {
  match { %y = aten.relu($x : f32[$M, $N]) }
  rewrite { %y = aten.t($x) }
}
