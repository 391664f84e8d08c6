// expect: 4:14: error: compare with none using 'is none'
rule r {
  match { %y = aten.linear($x, param $w, $b) }
  where { $b == none }
  rewrite { %y = aten.linear($x, $w, $b) }
}
