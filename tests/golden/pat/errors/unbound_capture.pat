// expect: 4:16: error: use of unbound capture $w
rule r {
  match { %y = aten.relu($x) }
  where { rank($w) == 2 }
  rewrite { %y = aten.relu($x) }
}
