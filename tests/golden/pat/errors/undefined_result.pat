// expect: 4:26: error: %x is not defined before this use
// expect: note: a value from outside the match is a capture: write $x
rule r {
  match { %y = aten.relu(%x) }
  rewrite { %y = aten.relu(%x) }
}
