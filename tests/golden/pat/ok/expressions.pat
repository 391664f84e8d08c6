// Every expression form of where clauses and computed attributes.
rule expressions tags(test) {
  match {
    %y = aten.linear($x : $dt[$B, $K], param $w : $dt[$N, $K], $bias)
  }
  where {
    ($K + 1) * 2 - 2 >= 2 * $K and $K / 2 > 0
    $K % 8 == 0 or not ($N < 4)
    $dt in [f32, bf16, f16] and $dt != f64
    $N not in [1, 3]
    $bias is not none and is_param($bias)
    rank($w) == 2 and dim($w, -1) == $K and numel($w) == $N * $K
    dtype($x) == $dt and is_float($dt) and bits($dt) >= 16
    is_pow2($K) and min($N, $K) >= 1 and max($N, 1) <= 64 or true
  }
  rewrite {
    $half = $K / 2
    $neg  = -$half
    %t    = aten.linear($x, $w, $bias)
    %y    = aten.mul.Scalar(%t, $neg)
  }
  example { B = 1, N = [8, 16], K = 32, dt = f32 }
}
