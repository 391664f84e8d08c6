// index_copy.glsl - writes `src` into slices of `dst` along one dim, in
// place: dst viewed as [outer, dstLen, inner], src as [outer, n, inner],
//   dst[o, pos(i), r] = src[o, i, r]
// with pos(i) = start + i (MODE offset: llama.update_cache, whose start_pos
// the host checked and passes per call) or pos(i) = index[i] (MODE index:
// aten.index_copy_, and aten.index_put_ with one index tensor, whose
// negative indices count from the end). Elements are copied unchanged (same
// dtype).
//
// As the reference writes index i after index i - 1, a repeated index keeps
// the last source slice: an invocation skips its element when a later
// index names the same position (O(n) per element, n = the number of
// slices written, 1 for a decode step). An index outside [0, dstLen) sets
// t_status[0] (a user error on the host, as the reference reports it) and
// writes nothing.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Dst { DTYPE t_dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { DTYPE t_src[]; };
#if defined(MODE_index)
layout(set = 0, binding = 2) readonly buffer Index { int t_index[]; };
layout(set = 0, binding = 3) buffer Status { uint t_status[]; };
#endif

layout(push_constant) uniform PushConstants {
  int numel; // src elements: outer * n * inner
  int n;
  int inner;
  int dstLen;
  int start;        // MODE offset
  int wrapNegative; // MODE index: a negative index counts from the end (index_put)
} pc;

void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int r = int(id % uint(pc.inner));
  int i = int((id / uint(pc.inner)) % uint(pc.n));
  int o = int(id / (uint(pc.inner) * uint(pc.n)));
#if defined(MODE_index)
  int pos = t_index[i];
  if (pos < 0 && pc.wrapNegative != 0)
    pos += pc.dstLen;
  if (pos < 0 || pos >= pc.dstLen) {
    t_status[0] = 1u;
    return;
  }
  for (int j = i + 1; j < pc.n; ++j) {
    int later = t_index[j];
    if (later < 0 && pc.wrapNegative != 0)
      later += pc.dstLen;
    if (later == pos)
      return;
  }
#else
  int pos = pc.start + i;
#endif
  t_dst[(o * pc.dstLen + pos) * pc.inner + r] = t_src[id];
}
