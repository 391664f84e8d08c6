// expect: 4:16: error: argument 1 of rank() must be a tensor, but this is a dtype
rule r {
  match { %y = aten.relu($x : $dt[...]) }
  where { rank($dt) == 2 }
  rewrite { %y = aten.relu($x) }
}
