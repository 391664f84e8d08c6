// expect: 4:57: error: argument 'padding_idx' of aten.embedding.default is SymInt, but this is a dtype
rule r {
  match { %y = aten.embedding(param $w, $idx) }
  rewrite { %y = aten.embedding($w, $idx, padding_idx = f32) }
}
