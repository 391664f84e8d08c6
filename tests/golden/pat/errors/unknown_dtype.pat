// expect: 4:31: error: unknown dtype 'f23'
// expect: note: did you mean
rule r {
  match { %y = aten.relu($x : f23[_, _]) }
  rewrite { %y = aten.relu($x) }
}
