// expect: 4:14: error: '%' directly followed by a name is a result reference
rule r {
  match { %y = aten.linear($x, param $w : i8[_, $K], _) }
  where { $K %32 == 0 }
  rewrite { %y = aten.linear($x, $w, none) }
}
