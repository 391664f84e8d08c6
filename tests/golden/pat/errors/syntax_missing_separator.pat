// expect: 4:18: error: expected a line break or ';' after the statement
rule r {
  match { %y = aten.linear($x, param $w : i8[_, $K], _) }
  where { $K > 0 $K < 4096 }
  rewrite { %y = aten.linear($x, $w, none) }
}
