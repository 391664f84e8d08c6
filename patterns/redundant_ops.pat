// Redundant copies and views removed (ExecuTorch
// backends/vulkan/_passes/remove_redundant_ops.py, RemoveRedundantOpsTransform):
// an op whose result has its input's dtype and shape is replaced by the input.
//
// Before:
//   %c : f32[2, 8] = aten.clone.default(%x : f32[2, 8])
//   %e : f32[2, 8] = aten.expand_copy.default(%c, [2, 8])
//   %y : f32[2, 8] = aten.relu.default(%e)
// After:
//   %y : f32[2, 8] = aten.relu.default(%x)
//
// Upstream's list: clone, alias, alias_copy, lift_fresh_copy,
// _to_dim_order_copy, _clone_dim_order, expand_copy, copy, repeat, each
// removed when the result's dtype and shape equal its source's (for copy the
// source is `src`, its second argument). graft's values are logical tensors
// (no memory format, no dim order, no device), so every such op is the
// identity on values. The rules state each op's condition on its arguments:
// _to_dim_order_copy to the input's dtype, expand(_copy) to the input's
// shape, copy of a src with self's dtype and shape (copy converts src to
// self's dtype and broadcasts it to self's shape, pytorch native_functions.yaml
// `copy`), repeat by all ones (repeat multiplies each dim by its factor and
// adds a leading dim per extra factor, TensorShape.cpp `repeat`; a repeat of
// an empty dim by another factor keeps the shape too, left alone here). The
// expand rules also take graft's `aten.expand` view. Exact (tolerance 0).
//
// One difference from upstream, for safety: the rewriter refuses to forward
// a result that a node outside the match updates in place (an index_put_ on
// a clone), since the update would then land on the clone's source.
// Legalization phase: a stray copy between a dequantize and its linear would
// otherwise stop the fusion rules from matching.

phase legalize

/// clone (any memory format) -> its input.
rule remove_clone benefit 1 tags(redundant, legalize) {
  match {
    %c = aten.clone($x, memory_format = _)
  }
  rewrite {
    %c = $x
  }
}

/// alias, alias_copy, lift_fresh_copy -> their input.
rule remove_alias benefit 1 tags(redundant, legalize) {
  match {
    %a = (aten.alias | aten.alias_copy | aten.lift_fresh_copy)($x)
  }
  rewrite {
    %a = $x
  }
}

/// _clone_dim_order (any dim order) -> its input.
rule remove_clone_dim_order benefit 1 tags(redundant, legalize) {
  match {
    %c = dim_order_ops._clone_dim_order($x, ...)
  }
  rewrite {
    %c = $x
  }
}

/// _to_dim_order_copy to the input's own dtype (or none) -> its input: dim
/// order, layout and device do not change a value.
rule remove_to_dim_order_copy_same_dtype benefit 1 tags(redundant, legalize) {
  match {
    %c = dim_order_ops._to_dim_order_copy($x : $dt[...], dtype = $dt | none, ...)
  }
  rewrite {
    %c = $x
  }
}

/// expand_copy / expand to the input's own shape (-1 keeps a dim) -> its
/// input (implicit=False, the default: what exports write).
rule remove_expand_same_shape_1d benefit 1 tags(redundant, legalize) {
  match {
    %e = aten.expand_copy($x : _[$A], [$A | -1]) | aten.expand($x : _[$A], [$A | -1])
  }
  rewrite {
    %e = $x
  }
}

rule remove_expand_same_shape_2d benefit 1 tags(redundant, legalize) {
  match {
    %e = aten.expand_copy($x : _[$A, $B], [$A | -1, $B | -1])
       | aten.expand($x : _[$A, $B], [$A | -1, $B | -1])
  }
  rewrite {
    %e = $x
  }
}

rule remove_expand_same_shape_3d benefit 1 tags(redundant, legalize) {
  match {
    %e = aten.expand_copy($x : _[$A, $B, $C], [$A | -1, $B | -1, $C | -1])
       | aten.expand($x : _[$A, $B, $C], [$A | -1, $B | -1, $C | -1])
  }
  rewrite {
    %e = $x
  }
}

rule remove_expand_same_shape_4d benefit 1 tags(redundant, legalize) {
  match {
    %e = aten.expand_copy($x : _[$A, $B, $C, $D], [$A | -1, $B | -1, $C | -1, $D | -1])
       | aten.expand($x : _[$A, $B, $C, $D], [$A | -1, $B | -1, $C | -1, $D | -1])
  }
  rewrite {
    %e = $x
  }
}

/// copy(self, src) of a src with self's dtype and shape -> src.
rule remove_copy_same_shape_1d benefit 1 tags(redundant, legalize) {
  match {
    %c = aten.copy(_ : $dt[$A], $src : $dt[$A], ...)
  }
  rewrite {
    %c = $src
  }
}

rule remove_copy_same_shape_2d benefit 1 tags(redundant, legalize) {
  match {
    %c = aten.copy(_ : $dt[$A, $B], $src : $dt[$A, $B], ...)
  }
  rewrite {
    %c = $src
  }
}

rule remove_copy_same_shape_3d benefit 1 tags(redundant, legalize) {
  match {
    %c = aten.copy(_ : $dt[$A, $B, $C], $src : $dt[$A, $B, $C], ...)
  }
  rewrite {
    %c = $src
  }
}

rule remove_copy_same_shape_4d benefit 1 tags(redundant, legalize) {
  match {
    %c = aten.copy(_ : $dt[$A, $B, $C, $D], $src : $dt[$A, $B, $C, $D], ...)
  }
  rewrite {
    %c = $src
  }
}

/// repeat by ones, one per dim -> its input.
rule remove_repeat_ones_1d benefit 1 tags(redundant, legalize) {
  match {
    %r = aten.repeat($x : _[_], [1])
  }
  rewrite {
    %r = $x
  }
}

rule remove_repeat_ones_2d benefit 1 tags(redundant, legalize) {
  match {
    %r = aten.repeat($x : _[_, _], [1, 1])
  }
  rewrite {
    %r = $x
  }
}

rule remove_repeat_ones_3d benefit 1 tags(redundant, legalize) {
  match {
    %r = aten.repeat($x : _[_, _, _], [1, 1, 1])
  }
  rewrite {
    %r = $x
  }
}

rule remove_repeat_ones_4d benefit 1 tags(redundant, legalize) {
  match {
    %r = aten.repeat($x : _[_, _, _, _], [1, 1, 1, 1])
  }
  rewrite {
    %r = $x
  }
}
