// aten.add.Tensor is declared commutative in the op registry, so add(%m, $c)
// also matches add(%z, mul(...)). The interior %m is reused by the rewrite.

rule add_of_mul {
  match {
    %m   = aten.mul.Tensor(_, _)
    %out = aten.add.Tensor(%m, $c)
  }
  rewrite {
    %n   = aten.neg(%m)
    %out = aten.sub.Tensor($c, %n)
  }
}
