// expect: 6:5: error: redefinition of $w
// expect: 4:38: note: previous definition here
rule r {
  match { %y = aten.linear($x, param $w, none) }
  rewrite {
    $w = transpose($w)
    %y = aten.linear($x, $w, none)
  }
}
