// expect: 4:15: error: '=' assigns; write '==' to compare
rule r {
  match { %y = aten.linear($x, param $w : i8[_, $K], _) }
  where { $K = 32 }
  rewrite { %y = aten.linear($x, $w, none) }
}
