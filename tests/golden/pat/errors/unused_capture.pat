// expect: 3:42: warning: capture $b is never used; write _ to accept any value
rule r {
  match { %y = aten.linear($x, param $w, $b) }
  rewrite { %y = aten.linear($x, $w, none) }
}
