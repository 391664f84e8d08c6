// aten.linear put back together where the export decomposed it, so that every linear
// family (4w, 8da4w, PT2E, QAT) matches one spelling, aten.linear.
//
// Before (a rank-3 linear as ExportedProgram.run_decompositions() writes it; ExecuTorch's
// edge dialect writes the same with view_copy / permute_copy):
//   %wt : f32[K, N]    = aten.permute.default(%w : f32[N, K], [1, 0])
//   %v  : f32[B*S, K]  = aten.view.default(%x : f32[B, S, K], [B*S, K])
//   %mm : f32[B*S, N]  = aten.mm.default(%v, %wt)         (or aten.addmm(%bias, %v, %wt))
//   %y  : f32[B, S, N] = aten._unsafe_view.default(%mm, [B, S, N])
// After:
//   %y  : f32[B, S, N] = aten.linear.default(%x, %w[, %bias])
//
// aten.linear is CompositeImplicitAutograd, and the decomposition is its definition
// (pytorch aten/src/ATen/native/Linear.cpp, `linear`): a 2-D input with a bias is
// addmm(bias, input, weight.t()), otherwise matmul(input, weight.t()), which for a
// contiguous [B, S, K] input folds the leading dims, mm, and views back (`_flatten_nd_linear`
// with a bias: addmm between the views). Core ATen has no t: it is permute(w, [1, 0]).
// Upstream ET-VK reaches the same weights by following the mm's argument chain
// (executorch backends/vulkan/patterns/quantized_linear.py, trace_args_until_placeholder,
// and its view_copy skip). Exact: the interpreter's linear, mm and addmm accumulate each
// dot product in the same order and add the bias last (tolerance 0). The transposed weight
// and the flattened input are `shared`: another user keeps them.

phase legalize

/// mm(x, w^T) -> linear(x, w).
rule recompose_linear_mm benefit 5 tags(linear, legalize) {
  match {
    shared %wt = (aten.t | aten.t_copy)($w : $dt[$N, $K])
               | (aten.permute | aten.permute_copy)($w : $dt[$N, $K], [1, 0])
    %y         = aten.mm($x : $dt[$M, $K], %wt)
  }
  rewrite {
    %y = aten.linear($x, $w)
  }
  example { M = [1, 3], N = [4, 8], K = [8, 16], dt = [f32, bf16] }
}

/// addmm(b, x, w^T) with beta = alpha = 1 and a bias of the output features -> linear(x, w, b).
rule recompose_linear_addmm benefit 5 tags(linear, legalize) {
  match {
    shared %wt = (aten.t | aten.t_copy)($w : $dt[$N, $K])
               | (aten.permute | aten.permute_copy)($w : $dt[$N, $K], [1, 0])
    %y         = aten.addmm($b : $dt[$N], $x : $dt[$M, $K], %wt)
  }
  rewrite {
    %y = aten.linear($x, $w, $b)
  }
  example { M = [1, 3], N = [4, 8], K = [8, 16], dt = [f32, bf16] }
}

/// view(linear(view(x, [B*S, K]), w, b?), [B, S, N]) -> linear(x, w, b?): the leading dims
/// folded and unfolded again.
rule recompose_linear_3d benefit 5 tags(linear, legalize) {
  match {
    shared %v = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)($x : $dt[$B, $S, $K],
                                                                                [$BS, $K])
    %l        = aten.linear(%v, $w : $dt[$N, $K], $b)
    %y        = (aten.view | aten.view_copy | aten.reshape | aten._unsafe_view)(%l, [$B, $S, $N])
  }
  where {
    $BS == $B * $S
  }
  rewrite {
    %y = aten.linear($x, $w, $b)
  }
  example { B = 2, S = 3, BS = 6, N = [4, 8], K = [8, 16], dt = [f32, bf16] }
}
