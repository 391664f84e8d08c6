// expect: 3:30: error: aten.relu.default takes 1 positional argument, the pattern gives 2
rule r {
  match { %y = aten.relu($x, _) }
  rewrite { %y = aten.relu($x) }
}
