// expect: 4:11: error: dim() takes 2 arguments, got 1
rule r {
  match { %y = aten.relu($x) }
  where { dim($x) == 4 }
  rewrite { %y = aten.relu($x) }
}
