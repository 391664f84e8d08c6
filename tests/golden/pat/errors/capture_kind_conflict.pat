// expect: 4:41: error: capture $w is bound to an int here, but to a tensor before
// expect: 4:31: note: first bound here
rule r {
  match { %y = aten.embedding($w, $idx, $w) }
  rewrite { %y = aten.embedding($w, $idx) }
}
