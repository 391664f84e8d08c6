// expect: 4:23: error: unknown name 'N' (captures are written $N
rule r {
  match { %y = aten.relu($x) }
  where { rank($x) == N }
  rewrite { %y = aten.relu($x) }
}
