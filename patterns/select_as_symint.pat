// x[i].item() -> et_vk.select_as_symint (ExecuTorch
// backends/vulkan/patterns/select_as_symint.py, SelectAsSymIntMatch,
// anchored at _local_scalar_dense).
//
// Before (ExecuTorch's Llama reading its position, `input_pos[-1].item()` in
// examples/models/llama/llama_transformer.py; torch.export writes
// aten.select.int, the edge dialect select_copy.int):
//   %sel : i64[]  = aten.select_copy.int(%input_pos : i64[1], 0, -1)
//   %u0  : symint = aten._local_scalar_dense.default(%sel)
// After:
//   %u0  : symint = et_vk.select_as_symint.default(%input_pos, 0, -1)
//
// The symbol stays: a declared symbol (`sym u0 : [0, 56]`) is bound to the
// value of its name, and the rewriter hands a replaced symbolic scalar's
// name to its replacement, so the slices and asserts that use u0 keep their
// ranges. Reading one integer element is exact (tolerance 0). The fused op
// is a host step on Vulkan (one small read-back instead of a copy dispatch
// and a read-back).

/// `x.select(d, i).item()` of an integer vector -> et_vk.select_as_symint.
rule select_as_symint benefit 10 tags(symint) backend vulkan {
  match {
    %sel = aten.select_copy.int($x : $dt[$N], $d, $i) | aten.select.int($x : $dt[$N], $d, $i)
    %v   = aten._local_scalar_dense(%sel)
  }
  where {
    $dt == i64 or $dt == i32
  }
  rewrite {
    %v = et_vk.select_as_symint($x, $d, $i)
  }
  example { N = [1, 4], dt = [i64, i32], d = [0, -1], i = [0, -1] }
}
