// expect: 6:10: error: unknown function 'pack_int5'
// expect: note: did you mean 'pack_int4'?
rule r {
  match { %y = aten.embedding(param $w, $idx) }
  rewrite {
    $p = pack_int5($w, nibbles = low_first)
    %y = et_vk.embedding_q4gsw($p, $w, 32, $idx)
  }
}
