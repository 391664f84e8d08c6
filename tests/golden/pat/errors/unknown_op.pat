// expect: 4:16: error: unknown op 'aten.lnear'
// expect: note: did you mean 'aten.linear'?
rule r {
  match { %y = aten.lnear($x, param $w, _) }
  rewrite { %y = aten.linear($x, $w, none) }
}
