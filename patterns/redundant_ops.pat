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
// removed when the result's dtype and shape equal its source's. graft's
// values are logical tensors (no memory format, no dim order, no device), so
// every such op is the identity on values; the rules below cover the ops
// graft's registry has (clone, alias, expand_copy and expand to the same
// shape, _to_dim_order_copy to the same dtype). Exact (tolerance 0).
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

/// alias -> its input.
rule remove_alias benefit 1 tags(redundant, legalize) {
  match {
    %a = aten.alias($x)
  }
  rewrite {
    %a = $x
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
