// expect: 3:18: error: duplicate 'benefit'
// expect: 3:8: note: previous 'benefit' here
rule r benefit 2 benefit 3 {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
}
