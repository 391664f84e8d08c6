// expect: 2:7: error: unknown phase 'lowering' (the phases, in the order they run: legalize, fuse)
phase lowering
rule r {
  match { %y = aten.relu($x) }
  rewrite { %y = aten.relu($x) }
}
