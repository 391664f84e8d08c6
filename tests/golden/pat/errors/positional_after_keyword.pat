// expect: 4:51: error: positional argument after a keyword argument
// expect: 4:32: note: keyword argument here
rule r {
  match { %y = aten.linear($x, weight = param $w, _) }
  rewrite { %y = aten.linear($x, $w, none) }
}
