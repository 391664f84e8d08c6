// Consecutive clamps fused into one (ExecuTorch backends/transforms/fuse_clamps.py,
// FuseClampsPass: a relu, hardtanh or clamp whose input is another of the
// three becomes one op with merged bounds).
//
// Before:
//   %r : f32[2, 8] = aten.relu.default(%x : f32[2, 8])
//   %h : f32[2, 8] = aten.hardtanh.default(%r, -1.0, 6.0)
// After:
//   %h : f32[2, 8] = aten.clamp.default(%x, 0.0, 6.0)
//
// The merged bounds are the exact composition, not upstream's: upstream
// takes min(min1, min2) and max(max1, max2), the union of the two ranges,
// which widens the result (relu then hardtanh(-1, 1) would become
// clamp(x, -1, FLT_MAX) instead of clamp(x, 0, 1)).
//
// Numerics. torch.clamp(x, a, b) is min(max(x, a), b) (TensorCompare.cpp
// clamp_scalar_kernel_impl): it applies the min first, so a > b gives b
// everywhere; relu is clamp(x, 0) and hardtanh(x, a, b) is clamp(x, a, b) on
// floats (Activation.cpp hardtanh_out). Writing l = min(a, b), u = b (a
// missing min is -inf, a missing max +inf), clamp(x, a, b) equals x clamped
// into the non-empty range [l, u]. Clamping into [l1, u1] and then [l2, u2]
// is clamping into [max(l1, l2), min(u1, u2)] when the ranges meet; when
// u1 < l2 every value becomes l2, when l1 > u2 every value becomes u2. All
// three cases are clamp(x, A, B) with
//   A = max(l1, l2),  B = max(min(u1, u2), l2)
// (u1 < l2: A = B = l2; l1 > u2: A = l1 > B = u2, and clamp gives B). Each
// rule below is this formula with its ops' l and u filled in. It is exact
// in every float dtype: torch rounds each bound to the tensor's dtype
// before clamping, and rounding is monotone, so rounding A and B picks the
// same values as clamping with the rounded bounds. A NaN x stays NaN through
// both ops and through the fused one. Two differences are excluded or
// harmless: a NaN bound (torch fills the result with NaN when both bounds
// are given and ignores a lone one, which no single clamp reproduces for
// every pair) is excluded by `where`; and a zero's sign may differ where a
// bound is 0 (the reference relu returns +0 for -0, its clamp keeps the
// input's -0), equal as numbers. Float tensors only: an integer tensor
// clamped by a float bound changes dtype at the first op.
// Upstream's other clamp fusions (into a convolution as et_vk.conv_with_clamp,
// fuse_conv_with_clamp.py, and into a binary op, fuse_clamp_with_binary_op.py)
// have no counterpart: graft registers no convolution and no et_vk
// clamp_with_binary ops.

/// clamp|hardtanh(x, a1, b1) then clamp|hardtanh(y, a2, b2) -> one clamp.
rule fuse_clamp_then_clamp tags(clamp) {
  match {
    %c1 = (aten.clamp | aten.hardtanh)($x : $dt[...], $a1 : scalar float, $b1 : scalar float)
    %c2 = (aten.clamp | aten.hardtanh)(%c1, $a2 : scalar float, $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($b1)
    not is_nan($a2)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, max(min($a1, $b1), min($a2, $b2)), max(min($b1, $b2), min($a2, $b2)))
  }
  example {
    a1 = [-1, 0, 1]
    b1 = [-1, 0, 1]
    a2 = [-1, 0, 1]
    b2 = [-1, 0, 1]
    dt = [f32, bf16, f16]
  }
}

/// clamp|hardtanh(x, a1, b1) then clamp(y, a2) -> one clamp.
rule fuse_clamp_then_clamp_min tags(clamp) {
  match {
    %c1 = (aten.clamp | aten.hardtanh)($x : $dt[...], $a1 : scalar float, $b1 : scalar float)
    %c2 = aten.clamp(%c1, $a2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($b1)
    not is_nan($a2)
  }
  rewrite {
    %c2 = aten.clamp($x, max(min($a1, $b1), $a2), max($b1, $a2))
  }
  example { a1 = [-1, 0, 1], b1 = [-1, 0, 1], a2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp|hardtanh(x, a1, b1) then clamp(y, max=b2) -> one clamp.
rule fuse_clamp_then_clamp_max tags(clamp) {
  match {
    %c1 = (aten.clamp | aten.hardtanh)($x : $dt[...], $a1 : scalar float, $b1 : scalar float)
    %c2 = aten.clamp(%c1, max = $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($b1)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, min($a1, $b1), min($b1, $b2))
  }
  example { a1 = [-1, 0, 1], b1 = [-1, 0, 1], b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp|hardtanh(x, a1, b1) then relu(y) -> one clamp.
rule fuse_clamp_then_relu tags(clamp) {
  match {
    %c1 = (aten.clamp | aten.hardtanh)($x : $dt[...], $a1 : scalar float, $b1 : scalar float)
    %c2 = aten.relu(%c1)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($b1)
  }
  rewrite {
    %c2 = aten.clamp($x, max(min($a1, $b1), 0), max($b1, 0))
  }
  example { a1 = [-1, 0, 1], b1 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, a1) then clamp|hardtanh(y, a2, b2) -> one clamp.
rule fuse_clamp_min_then_clamp tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], $a1 : scalar float)
    %c2 = (aten.clamp | aten.hardtanh)(%c1, $a2 : scalar float, $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($a2)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, max($a1, min($a2, $b2)), $b2)
  }
  example { a1 = [-1, 0, 1], a2 = [-1, 0, 1], b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, a1) then clamp(y, a2) -> one clamp.
rule fuse_clamp_min_then_clamp_min tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], $a1 : scalar float)
    %c2 = aten.clamp(%c1, $a2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($a2)
  }
  rewrite {
    %c2 = aten.clamp($x, max($a1, $a2))
  }
  example { a1 = [-1, 0, 1], a2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, a1) then clamp(y, max=b2) -> one clamp.
rule fuse_clamp_min_then_clamp_max tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], $a1 : scalar float)
    %c2 = aten.clamp(%c1, max = $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a1)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, $a1, $b2)
  }
  example { a1 = [-1, 0, 1], b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, a1) then relu(y) -> one clamp.
rule fuse_clamp_min_then_relu tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], $a1 : scalar float)
    %c2 = aten.relu(%c1)
  }
  where {
    is_float($dt)
    not is_nan($a1)
  }
  rewrite {
    %c2 = aten.clamp($x, max($a1, 0))
  }
  example { a1 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, max=b1) then clamp|hardtanh(y, a2, b2) -> one clamp.
rule fuse_clamp_max_then_clamp tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], max = $b1 : scalar float)
    %c2 = (aten.clamp | aten.hardtanh)(%c1, $a2 : scalar float, $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($b1)
    not is_nan($a2)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, min($a2, $b2), max(min($b1, $b2), min($a2, $b2)))
  }
  example { b1 = [-1, 0, 1], a2 = [-1, 0, 1], b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, max=b1) then clamp(y, a2) -> one clamp.
rule fuse_clamp_max_then_clamp_min tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], max = $b1 : scalar float)
    %c2 = aten.clamp(%c1, $a2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($b1)
    not is_nan($a2)
  }
  rewrite {
    %c2 = aten.clamp($x, $a2, max($b1, $a2))
  }
  example { b1 = [-1, 0, 1], a2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, max=b1) then clamp(y, max=b2) -> one clamp.
rule fuse_clamp_max_then_clamp_max tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], max = $b1 : scalar float)
    %c2 = aten.clamp(%c1, max = $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($b1)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, max = min($b1, $b2))
  }
  example { b1 = [-1, 0, 1], b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// clamp(x, max=b1) then relu(y) -> one clamp.
rule fuse_clamp_max_then_relu tags(clamp) {
  match {
    %c1 = aten.clamp($x : $dt[...], max = $b1 : scalar float)
    %c2 = aten.relu(%c1)
  }
  where {
    is_float($dt)
    not is_nan($b1)
  }
  rewrite {
    %c2 = aten.clamp($x, 0, max($b1, 0))
  }
  example { b1 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// relu(x) then clamp|hardtanh(y, a2, b2) -> one clamp.
rule fuse_relu_then_clamp tags(clamp) {
  match {
    %c1 = aten.relu($x : $dt[...])
    %c2 = (aten.clamp | aten.hardtanh)(%c1, $a2 : scalar float, $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a2)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, max(0, min($a2, $b2)), $b2)
  }
  example { a2 = [-1, 0, 1], b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// relu(x) then clamp(y, a2) -> one clamp.
rule fuse_relu_then_clamp_min tags(clamp) {
  match {
    %c1 = aten.relu($x : $dt[...])
    %c2 = aten.clamp(%c1, $a2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($a2)
  }
  rewrite {
    %c2 = aten.clamp($x, max(0, $a2))
  }
  example { a2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// relu(x) then clamp(y, max=b2) -> one clamp.
rule fuse_relu_then_clamp_max tags(clamp) {
  match {
    %c1 = aten.relu($x : $dt[...])
    %c2 = aten.clamp(%c1, max = $b2 : scalar float)
  }
  where {
    is_float($dt)
    not is_nan($b2)
  }
  rewrite {
    %c2 = aten.clamp($x, 0, $b2)
  }
  example { b2 = [-1, 0, 1], dt = [f32, bf16, f16] }
}

/// relu(x) then relu(y) -> one relu.
rule fuse_relu_then_relu tags(clamp) {
  match {
    %c1 = aten.relu($x : $dt[...])
    %c2 = aten.relu(%c1)
  }
  where {
    is_float($dt)
  }
  rewrite {
    %c2 = aten.relu($x)
  }
  example { dt = [f32, bf16, f16] }
}
