// expect: 4:16: error: unknown overload 'aten.add.Tensr'; aten.add has overloads
// expect: note: did you mean 'aten.add.Tensor'?
rule r {
  match { %y = aten.add.Tensr($x, $x) }
  rewrite { %y = aten.mul.Scalar($x, 2) }
}
