rule r {
  match { %y = aten.relu($x : $dt[...]) }
  rewrite { %y = aten.relu($x) }
  tolerance(  atol=1e-3 )
  tolerance( atol = 0.5,rtol=1e-3 )  when  $dt==f16 or
      $dt == bf16
}
