// expect: 3:16: error: missing argument 'indices' of aten.embedding.default
rule r {
  match { %y = aten.embedding(param $w) }
  rewrite { %y = aten.embedding($w, none) }
}
