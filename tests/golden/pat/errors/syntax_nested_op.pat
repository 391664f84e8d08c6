// expect: 3:28: error: op patterns cannot be nested
rule r {
  match { %y = aten.mm($x, aten.t(param $w)) }
  rewrite { %y = aten.mm($x, $w) }
}
