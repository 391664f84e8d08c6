// expect: 4:15: error: '+' needs numbers, but got a dtype and an int
rule r {
  match { %y = aten.relu($x : $dt[...]) }
  where { $dt + 1 > 2 }
  rewrite { %y = aten.relu($x) }
}
