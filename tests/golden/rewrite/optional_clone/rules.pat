// An optional node: neg(clone?(x)) -> mul(x, -1) matches with and without
// the clone; the clone, once unused, is removed as dead.

rule neg_to_mul {
  match {
    %c   = aten.clone($x : f32[$N])?
    %out = aten.neg(%c)
  }
  rewrite {
    %out = aten.mul.Scalar($x, -1.0)
  }
  example { N = 4 }
}
