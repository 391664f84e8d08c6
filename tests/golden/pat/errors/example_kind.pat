// expect: 5:25: error: $dt is a dtype, but the example gives integers
rule r {
  match { %y = aten.relu($x : $dt[$N]) }
  rewrite { %y = aten.relu($x) }
  example { N = 4, dt = 32 }
}
