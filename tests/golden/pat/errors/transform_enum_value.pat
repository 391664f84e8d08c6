// expect: 5:34: error: parameter 'nibbles' of pack_int4 takes one of low_first, high_first, not 'middle_first'
rule r {
  match { %y = aten.embedding(param $w, $idx) }
  rewrite {
    $p = pack_int4($w, nibbles = middle_first)
    %y = et_vk.embedding_q4gsw($p, $w, 32, $idx)
  }
}
