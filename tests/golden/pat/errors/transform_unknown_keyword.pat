// expect: 6:24: error: unknown keyword argument 'nibble' for pack_int4
// expect: note: did you mean 'nibbles'?
rule r {
  match { %y = aten.embedding(param $w, $idx) }
  rewrite {
    $p = pack_int4($w, nibble = low_first)
    %y = et_vk.embedding_q4gsw($p, $w, 32, $idx)
  }
}
