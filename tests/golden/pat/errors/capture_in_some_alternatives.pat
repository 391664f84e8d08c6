// expect: 9:32: error: $perm may be unbound here
// expect: 5:57: note: bound here
rule r {
  match {
    %t = aten.t(param $w) | aten.permute_copy(param $w, $perm)
    %y = aten.mm($x, %t)
  }
  rewrite {
    %p = aten.permute_copy($w, $perm)
    %y = aten.mm($x, %p)
  }
}
