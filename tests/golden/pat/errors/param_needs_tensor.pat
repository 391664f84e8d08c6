// expect: 3:47: error: 'param' needs a tensor argument, but 'padding_idx' of aten.embedding.default is SymInt
rule r {
  match { %y = aten.embedding(param $w, $idx, param $pad) }
  rewrite { %y = aten.embedding($w, $idx, $pad) }
}
