// expect: 7:6: error: redefinition of rule 'r'
// expect: 3:6: note: previous definition here
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
}
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
}
