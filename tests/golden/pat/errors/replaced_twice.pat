// expect: 7:5: error: %y is replaced twice
// expect: 6:5: note: first replaced here
rule r {
  match { %y = aten.relu($x) }
  rewrite {
    %y = aten.relu($x)
    %y = aten.relu($x)
  }
}
