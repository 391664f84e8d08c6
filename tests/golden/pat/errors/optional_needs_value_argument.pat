// expect: 4:29: error: an absent optional node stands for its first argument, which must be %name, $name or _
rule r {
  match {
    %f = aten.full([4], 0.0)?
    %y = aten.add.Tensor($x, %f)
  }
  rewrite { %y = aten.add.Tensor($x, %f) }
}
