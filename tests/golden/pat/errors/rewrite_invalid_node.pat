// expect: 6:5: error: the rewrite builds an invalid aten.linear.default node: shapes [2, 8] and [8, 16] cannot be multiplied
rule r {
  match { %y = aten.linear($x : f32[$M, $K], param $w : f32[$N, $K], none) }
  rewrite {
    $t = transpose($w)
    %y = aten.linear($x, $t, none)
  }
  example { M = 2, K = 8, N = 16 }
}
