// linear_q4gsw_lanes.glsl - the int4 group-wise GEMV (M = 1) for GPUs
// (et_vk.linear_q4gsw / linear_qcs4w; Linear.cpp picks it as the
// `gpu_gemv_lanes*` tilings), laid out for coalescing.
//
// linear_q4gsw_fast.glsl splits K by quantization group: each invocation
// reads a group's 32 x values as 8 vec4s, so the 32 lanes of a warp read
// addresses 128 bytes apart and every x load touches 32 cache lines. Here
// the KL = 32 lanes of a team split K in
// chunks of 8 values, lane l taking k = 8 (l + KL i) .. + 7 for i = 0, 1, ...:
// adjacent lanes read adjacent x (two vec4s: 8 cache lines per warp load) and
// adjacent 32-bit weight words (one 128-byte line per warp load, per
// column). A chunk lies in one quantization group (groupSize % 32 == 0), so a
// lane scales its 8-value dot product by that group's scale and accumulates.
// A team computes TILE_N consecutive columns; a workgroup holds
// LOCAL_SIZE_X / KL teams. The team's partial sums meet in a
// subgroupClusteredAdd (SUBGROUP_REDUCE: devices whose subgroups hold at
// least KL lanes) or a shared-memory tree. The reordered sum stays within
// docs/numerics.md's bound for the fast linears. On an H100 this layout took
// the 1x4096x14336 GEMV from 226 to 141 us, still about a tenth of the
// stream bandwidth (docs/benchmarks.md, "Vulkan kernels on a GPU").
#extension GL_EXT_control_flow_attributes : require
#if SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_clustered : require
#endif
#include "common.glslh"

#define KL 32
#define TEAMS (LOCAL_SIZE_X / KL)
#define TEAM KL
#define TEAM_VALUES TILE_N
#include "q4_linear.glslh"

layout(set = 0, binding = 1) readonly buffer X { VEC4_T t_x4[]; };
layout(set = 0, binding = 2) readonly buffer W { uint t_w[]; };

void main() {
  uint lid = gl_LocalInvocationIndex;
  int lane = int(lid % uint(KL));
  int n0 = (int(gl_WorkGroupID.x) * TEAMS + int(lid / uint(KL))) * TILE_N;
  int cols = clamp(pc.N - n0, 0, TILE_N);
  int rowWords = pc.rowVec4 * 4;
  int chunks = pc.K / 8;

  float acc[TILE_N];
  [[unroll]] for (int c = 0; c < TILE_N; ++c)
    acc[c] = 0.0;
  for (int ch = lane; ch < chunks; ch += KL) {
    vec4 xa = vec4(t_x4[2 * ch]);
    vec4 xb = vec4(t_x4[2 * ch + 1]);
    int g = (ch * 8) / pc.groupSize;
    [[unroll]] for (int c = 0; c < TILE_N; ++c) {
      // A column past N re-reads column n0 (its result is not stored).
      int n = n0 + (c < cols ? c : 0);
      uint w = t_w[n * rowWords + ch];
      float d = dot(xa, nibbles4f(w, 0u)) + dot(xb, nibbles4f(w, 4u));
      acc[c] = fma(d, float(t_scales[g * pc.scaleStride + n]), acc[c]);
    }
  }

  storeTeamRow(acc, lid, lane, 0, n0, cols);
}
