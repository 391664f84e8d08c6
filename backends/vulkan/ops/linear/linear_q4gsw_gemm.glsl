// linear_q4gsw_gemm.glsl - the int4 group-wise GEMM (M > 1, prefill) for
// GPUs with shared-memory tiles (et_vk.linear_q4gsw / linear_qcs4w,
// weight-only; Linear.cpp names it the `gpu_gemm_tiled` tiling).
//
// linear_q4gsw_fast.glsl's `gpu_gemm` gives each invocation a 4 x 4 tile and
// has it read its own x rows and weight words: neighbours read the same x
// and the same words again, and nothing is kept on chip. Here a workgroup of
// 256 invocations computes a TILE_M x TILE_N = 32 x 64 tile of the output,
// 2 rows x 4 columns per invocation, walking K one 32-value block (one
// uvec4 per column of prepackQ4's rows, one quantization group or part of
// one) at a time:
//  * the block's x (32 rows x 32 values, one vec4 per invocation) and its
//    weights (64 columns x 4 words, one word per invocation, unpacked to
//    floats, nibbles4f) go to shared memory, each read from device memory
//    once per workgroup;
//  * each invocation then runs its 8 FMA chains over the block's 32 values
//    from shared memory and adds each chain's sum, times the group's scale,
//    to its output (one FMA): a term passes through at most 32 + 1 + (U - 1)
//    rounded operations (U = K / 32 blocks), at most K + 3 for K >= 32, so
//    docs/numerics.md's weight-only bound, 2 gamma_{K+3}, holds unchanged.
// Rows past M read zeros and are not stored; columns past N re-read column
// N - 1 and are not stored. Requires K % 32 == 0 and groupSize % 32 == 0 (the
// host's fast-path condition).
#extension GL_EXT_control_flow_attributes : require
#include "common.glslh"

#define TEAM 1
#define TEAM_VALUES 1
#define SUBGROUP_REDUCE 0
#include "q4_linear.glslh"

layout(set = 0, binding = 1) readonly buffer X { VEC4_T t_x4[]; };
layout(set = 0, binding = 2) readonly buffer W { uvec4 t_w4[]; };

#define TILE_M 32
#define TILE_N 64
#define ROWS 2 // per invocation
#define COLS 4

shared float s_x[TILE_M][33];     // [row][k], padded against bank conflicts
shared vec4 s_w[32][TILE_N / 4];  // [k][column / 4]: the block's q - 8

void main() {
  uint lid = gl_LocalInvocationIndex;
  int tx = int(lid % 16u); // columns tx * 4 .. + 3
  int ty = int(lid / 16u); // rows ty * 2, + 1
  int m0 = int(gl_WorkGroupID.y) * TILE_M;
  int n0 = int(gl_WorkGroupID.x) * TILE_N;
  int blocks = pc.K / 32;
  int blocksPerGroup = pc.groupSize / 32;

  // This invocation's share of the loads: x row lr, values 4 lk .. + 3;
  // weight column lc (clamped into N), word lw of the block.
  int lr = int(lid / 8u), lk = int(lid % 8u);
  int lc = int(lid / 4u), lw = int(lid % 4u);
  int xRow = m0 + lr;
  int wCol = min(n0 + lc, pc.N - 1);

  float acc[ROWS][COLS];
  [[unroll]] for (int r = 0; r < ROWS; ++r)
    [[unroll]] for (int c = 0; c < COLS; ++c)
      acc[r][c] = 0.0;

  for (int kb = 0; kb < blocks; ++kb) {
    vec4 xv = xRow < pc.M ? vec4(t_x4[xRow * (pc.K / 4) + kb * 8 + lk]) : vec4(0.0);
    s_x[lr][4 * lk] = xv.x;
    s_x[lr][4 * lk + 1] = xv.y;
    s_x[lr][4 * lk + 2] = xv.z;
    s_x[lr][4 * lk + 3] = xv.w;
    uint word = t_w4[wCol * pc.rowVec4 + kb][lw];
    vec4 lo = nibbles4f(word, 0u), hi = nibbles4f(word, 4u);
    // Word lw holds k = 8 lw .. 8 lw + 7 of the block.
    s_w[8 * lw][lc / 4][lc % 4] = lo.x;
    s_w[8 * lw + 1][lc / 4][lc % 4] = lo.y;
    s_w[8 * lw + 2][lc / 4][lc % 4] = lo.z;
    s_w[8 * lw + 3][lc / 4][lc % 4] = lo.w;
    s_w[8 * lw + 4][lc / 4][lc % 4] = hi.x;
    s_w[8 * lw + 5][lc / 4][lc % 4] = hi.y;
    s_w[8 * lw + 6][lc / 4][lc % 4] = hi.z;
    s_w[8 * lw + 7][lc / 4][lc % 4] = hi.w;
    barrier();

    float p[ROWS][COLS];
    [[unroll]] for (int r = 0; r < ROWS; ++r)
      [[unroll]] for (int c = 0; c < COLS; ++c)
        p[r][c] = 0.0;
    for (int k = 0; k < 32; ++k) {
      vec4 w = s_w[k][tx];
      [[unroll]] for (int r = 0; r < ROWS; ++r) {
        float a = s_x[ty * ROWS + r][k];
        p[r][0] = fma(a, w.x, p[r][0]);
        p[r][1] = fma(a, w.y, p[r][1]);
        p[r][2] = fma(a, w.z, p[r][2]);
        p[r][3] = fma(a, w.w, p[r][3]);
      }
    }
    int g = kb / blocksPerGroup;
    [[unroll]] for (int c = 0; c < COLS; ++c) {
      float s = float(t_scales[g * pc.scaleStride + min(n0 + tx * COLS + c, pc.N - 1)]);
      [[unroll]] for (int r = 0; r < ROWS; ++r)
        acc[r][c] = fma(p[r][c], s, acc[r][c]);
    }
    barrier();
  }

  [[unroll]] for (int r = 0; r < ROWS; ++r) {
    int m = m0 + ty * ROWS + r;
    if (m >= pc.M)
      continue;
    [[unroll]] for (int c = 0; c < COLS; ++c) {
      int n = n0 + tx * COLS + c;
      if (n < pc.N) {
        float bias = pc.hasBias != 0 ? float(t_bias[n]) : 0.0;
        t_out[m * pc.N + n] = TO_DTYPE(acc[r][c] + bias);
      }
    }
  }
}
