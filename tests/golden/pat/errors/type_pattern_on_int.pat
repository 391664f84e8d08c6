// expect: 3:54: error: a type pattern needs a tensor argument
rule r {
  match { %y = aten.embedding(param $w, $idx, $pad : i64[]) }
  rewrite { %y = aten.embedding($w, $idx, $pad) }
}
