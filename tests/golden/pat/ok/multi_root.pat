// A multi-root match: two chains that never join but share an input ($s),
// rewritten together.

/// neg(x) * s and neg(y) * s share $s: both roots go in one rewrite.
rule paired_scale benefit 5 {
  match {
    %nx      = aten.neg($x : f32[$N])
    root %px = aten.mul.Tensor(%nx, $s : f32[$N])
    %ny      = aten.neg($y : f32[$N])
    root %py = aten.mul.Tensor(%ny, $s)
  }
  rewrite {
    %mx = aten.mul.Tensor($x, $s)
    %px = aten.neg(%mx)
    %my = aten.mul.Tensor($y, $s)
    %py = aten.neg(%my)
  }
  example { N = 8 }
}
