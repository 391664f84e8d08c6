// linear_q4gsw_splitk.glsl - the int4 group-wise GEMV (M = 1) for GPUs with
// K split across warps as well as lanes (et_vk.linear_q4gsw / linear_qcs4w,
// MODE weight_only; et_vk.linear_dq8ca_q4gsw, MODE dq8ca). Linear.cpp picks
// it as the `gpu_gemv_splitk*` tilings.
//
// Why: on an H100 the GEMV tilings of linear_q4gsw_fast.glsl and
// linear_q4gsw_lanes.glsl reached 5-11 % of the stream bandwidth, and the
// analysis in docs/benchmarks.md ("Vulkan kernels on a GPU") points at too
// few weight bytes in flight per SM: a team of 16 or 32 lanes per column
// block, each lane with 4-16 bytes of weight loads outstanding, about 4 KB
// per SM where Little's law asks for ~16 KB. Here a team is TEAM invocations
// (64: two warps of 32; 256: the whole workgroup, eight warps) and the
// workgroup is LOCAL_SIZE_X = 256 invocations, TEAMS = LOCAL_SIZE_X / TEAM
// teams side by side, each computing TILE_N consecutive output columns.
//
//  * K is split in 32-value blocks (one uvec4 of prepackQ4's row-major rows):
//    lane l of a team takes blocks l, l + TEAM, l + 2 TEAM, ..., so adjacent
//    lanes read adjacent 16-byte words of a row (a warp reads 512
//    contiguous bytes per column) and adjacent 128-byte runs of x.
//  * Two blocks per loop iteration, all their weight loads issued before
//    either is used: 2 x TILE_N x 16 bytes in flight per lane, 8 KB per
//    workgroup at TILE_N = 1, 16 KB at TILE_N = 2.
//  * A block lies in one quantization group (groupSize % 32 == 0): its dot
//    product is scaled by that group's scale (read once per block and
//    column, once per group at group size 32) and accumulated with one FMA.
//  * The team's partial sums meet in teamReduce (q4_linear.glslh):
//    SUBGROUP_REDUCE 2 (`_sg`), subgroupAdd within each subgroup and shared
//    memory across the team's subgroups (devices with subgroup arithmetic
//    and subgroups of at most TEAM lanes); 0, a shared-memory tree.
//  * MODE dq8ca: x is the float activation, quantized per token as it is
//    loaded (quantize_value.glslh: quant_affine.glsl's arithmetic, so the
//    same int8 values; no quantization dispatch); a block's integer dot
//    product is exact, the group's zero-point correction
//    (input_zp * weight_sums[g, n], ET-VK's formulation) is subtracted in the
//    group's first block, and the block's term is scaled by
//    input_scale * scale[g, n]. With group size 32 that is the per-group term
//    of linear_q4gsw_fast.glsl; with larger groups the f32 sum has K / 32
//    terms instead of K / groupSize (docs/numerics.md states both bounds).
//
// Requires K % 32 == 0 and groupSize % 32 == 0 (the host falls back to
// linear_q4gsw.glsl otherwise). Rows past M are not computed: gl_WorkGroupID.y
// is the row.
#extension GL_EXT_control_flow_attributes : require
#if SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
// common.glslh also gives VEC4_T, four DTYPE values.
#include "common.glslh"

layout(set = 0, binding = 1) readonly buffer X { VEC4_T t_x4[]; };
layout(set = 0, binding = 2) readonly buffer W { uvec4 t_w4[]; };

#define TEAMS (LOCAL_SIZE_X / TEAM)
#define TEAM_VALUES TILE_N
// MODE dq8ca: x is quantized as it is loaded (q4_linear.glslh's quantize4).
#if defined(MODE_dq8ca)
#define FUSED_QUANT 1
#include "quantize_value.glslh"
#else
#define FUSED_QUANT 0
#endif
#include "q4_linear.glslh"

// Adds block kb's contribution (weights w[c] of the tile's columns) to acc.
// `xBase` is row m's first vec4 of x; `ncol[c]` the column each weight word
// came from (a column past N repeats n0; its sum is never stored).
void addBlock(inout float acc[TILE_N], uvec4 w[TILE_N], int kb, int xBase, int ncol[TILE_N],
              int m) {
  int g = kb / (pc.groupSize / 32);
#if defined(MODE_dq8ca)
  ivec4 xv[8];
  [[unroll]] for (int j = 0; j < 8; ++j)
    xv[j] = quantize4(vec4(t_x4[xBase + kb * 8 + j]));
  bool firstOfGroup = kb % (pc.groupSize / 32) == 0;
  float inScale = t_in_scales[m];
  int zp = t_in_zeros[m];
#else
  vec4 xv[8];
  [[unroll]] for (int j = 0; j < 8; ++j)
    xv[j] = vec4(t_x4[xBase + kb * 8 + j]);
#endif
  [[unroll]] for (int c = 0; c < TILE_N; ++c) {
    int n = ncol[c];
    float s = float(t_scales[g * pc.scaleStride + n]);
#if defined(MODE_dq8ca)
    ivec4 p = xv[0] * nibbles4(w[c].x, 0u);
    p += xv[1] * nibbles4(w[c].x, 4u);
    p += xv[2] * nibbles4(w[c].y, 0u);
    p += xv[3] * nibbles4(w[c].y, 4u);
    p += xv[4] * nibbles4(w[c].z, 0u);
    p += xv[5] * nibbles4(w[c].z, 4u);
    p += xv[6] * nibbles4(w[c].w, 0u);
    p += xv[7] * nibbles4(w[c].w, 4u);
    int idot = (p.x + p.y) + (p.z + p.w);
    if (firstOfGroup)
      idot -= zp * t_sums[g * pc.sumsStride + n];
    acc[c] = fma(float(idot), inScale * s, acc[c]);
#else
    vec4 p = xv[0] * nibbles4f(w[c].x, 0u);
    p = fma(xv[1], nibbles4f(w[c].x, 4u), p);
    p = fma(xv[2], nibbles4f(w[c].y, 0u), p);
    p = fma(xv[3], nibbles4f(w[c].y, 4u), p);
    p = fma(xv[4], nibbles4f(w[c].z, 0u), p);
    p = fma(xv[5], nibbles4f(w[c].z, 4u), p);
    p = fma(xv[6], nibbles4f(w[c].w, 0u), p);
    p = fma(xv[7], nibbles4f(w[c].w, 4u), p);
    acc[c] = fma((p.x + p.y) + (p.z + p.w), s, acc[c]);
#endif
  }
}

void main() {
  uint lid = gl_LocalInvocationIndex;
  int lane = int(lid % uint(TEAM));
  int n0 = (int(gl_WorkGroupID.x) * TEAMS + int(lid / uint(TEAM))) * TILE_N;
  int m = int(gl_WorkGroupID.y);
  int cols = clamp(pc.N - n0, 0, TILE_N);
  int blocks = pc.K / 32;
  int xBase = m * (pc.K / 4);
#if FUSED_QUANT
  setRowQuantization(m);
#endif

  int ncol[TILE_N];
  int row[TILE_N];
  float acc[TILE_N];
  [[unroll]] for (int c = 0; c < TILE_N; ++c) {
    ncol[c] = n0 + (c < cols ? c : 0);
    row[c] = ncol[c] * pc.rowVec4;
    acc[c] = 0.0;
  }

  for (int kb = lane; kb < blocks; kb += 2 * TEAM) {
    // The second block of the pair; a lane without one re-reads its first
    // (a valid address) and skips it, so both loads stay unconditional.
    int kb1 = kb + TEAM;
    bool second = kb1 < blocks;
    int kb1r = second ? kb1 : kb;
    uvec4 w0[TILE_N], w1[TILE_N];
    [[unroll]] for (int c = 0; c < TILE_N; ++c) {
      w0[c] = t_w4[row[c] + kb];
      w1[c] = t_w4[row[c] + kb1r];
    }
    addBlock(acc, w0, kb, xBase, ncol, m);
    if (second)
      addBlock(acc, w1, kb1, xBase, ncol, m);
  }

  storeTeamRow(acc, lid, lane, m, n0, cols);
}
