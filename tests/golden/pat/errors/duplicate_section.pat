// expect: 6:3: error: duplicate 'rewrite' section in rule 'r'
// expect: 5:3: note: previous 'rewrite' section here
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
}
