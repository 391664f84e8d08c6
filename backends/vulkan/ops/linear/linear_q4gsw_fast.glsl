// linear_q4gsw_fast.glsl - the bandwidth-oriented int4 group-wise linears
// (et_vk.linear_q4gsw / linear_qcs4w, MODE weight_only; et_vk.linear_dq8ca_q4gsw,
// MODE dq8ca), for GEMV (decode, TILE_M = 1) and GEMM (prefill, TILE_M > 1).
//
// Structure (learned from ExecuTorch's linear_q4gsw_coop.glsl /
// linear_q4gsw_tiled.glsl, backends/vulkan/runtime/graph/ops/glsl; written
// anew for graft's layouts):
//  * an invocation computes a TILE_M x TILE_N tile of outputs (TILE_N
//    consecutive output columns n for TILE_M rows m), so every x value it
//    loads serves TILE_N columns and every dequantized weight TILE_M rows;
//  * the K_SPLIT invocations of one tile split its K reduction by
//    quantization group (invocation ky takes groups ky, ky + K_SPLIT, ...)
//    and meet in a shared-memory tree reduction; a workgroup holds
//    LOCAL_SIZE_X / K_SPLIT tiles side by side along n;
//  * weights are read as uvec4 (32 int4 values of one row, prepackQ4's
//    row-major layout) and unpacked with shifts and masks, four at a time;
//    x is read as vec4;
//  * a group's scale is read once per group; the group's dot product is
//    accumulated unscaled and scaled once (dq8ca: the exact integer dot, then
//    ET-VK's zero-point correction and one scale product per group);
//  * no `precise`: the compiler may contract to FMA, and fma() is used where
//    it saves an operation.
// The reordering makes the result differ from the reference's sequential
// sum by at most the bound in docs/numerics.md ("Fast kernels"). Requires
// K % 32 == 0 and groupSize % 32 == 0 (the host falls back to
// linear_q4gsw.glsl otherwise).
//
// Tiling per device (Linear.cpp fastLinearTiling): on lavapipe every
// component an invocation loads or stores costs a per-lane scalar access
// (llvmpipe's SoA code), which makes the per-invocation x loads the cost of
// a GEMV unless they are shared by many columns: CPU variants take wide
// TILE_N and K_SPLIT = 1. GPU variants split K 16 ways so 16 consecutive
// lanes read 16 consecutive groups of a row (coalesced). WIDE_LOADS (CPU
// variants, devices with shaderInt64) reads weights and f32/int x as pairs
// of 64-bit words: llvmpipe's cost is per loaded component, so this halves
// it; the values are the same bits. PAIRS (the `_wide` CPU variants, both
// modes) goes further: 32-byte loads (two weight blocks of a row, 8 x
// values, 8 scales or weight sums), the -8 offset folded into a per-block
// sum of x, and per nibble: weight-only, an AND and a conversion in place
// (x pre-scaled by 16^-i); dq8ca, half a 32-bit integer multiply-add (two
// nibbles masked together times two packed x values: blockDot), exact.
// TEXELS (the `_texel` GEMV variants, PAIRS, CPU devices with storage
// texel buffers whose limit holds the operands: Linear.cpp) reads the
// weights (one texel = one 32-value block), x and f32 scales as rgba32ui
// texels: llvmpipe loads a texel per lane through its image path, far
// cheaper than its per-lane storage-buffer loads (the weight loads alone:
// 2.3 -> 0.7 ms at 1x4096x4096); the same bits, so the same result.
// SUBGROUP_REDUCE (`_sg` GPU variants, devices with clustered subgroup
// arithmetic and subgroups of at least K_SPLIT lanes) reduces a tile's K
// split with subgroupClusteredAdd.
#extension GL_EXT_control_flow_attributes : require
#if SUBGROUP_REDUCE
#extension GL_KHR_shader_subgroup_clustered : require
#endif
#if WIDE_LOADS
#extension GL_ARB_gpu_shader_int64 : require
#endif
#include "common.glslh"

// FUSED_QUANT (the dq8ca GEMVs, TILE_M = 1): x is the float activation, and
// the kernel quantizes the values it loads with the row's per-token scale
// and zero point (quantize_value.glslh, quant_affine.glsl's arithmetic, so
// the same int8 values), sparing a quantization dispatch per linear; the
// dq8ca GEMMs read the int8 values a quantize_affine dispatch wrote.
#if defined(MODE_dq8ca) && TILE_M == 1
#define FUSED_QUANT 1
#else
#define FUSED_QUANT 0
#endif
#if defined(MODE_dq8ca) && !FUSED_QUANT
#define INT_X 1
#else
#define INT_X 0
#endif

// TEXELS: the weights, x (f32 or dq8ca's int8 values, one texel = 4) and
// f32 scales are rgba32ui texel buffers.
#if TEXELS && (INT_X || !DTYPE_IS_HALF)
#define TEXEL_X 1
#else
#define TEXEL_X 0
#endif
#define TEXEL_SCALES (TEXELS && !SCALES_DTYPE_IS_HALF)
#if TEXELS && !PAIRS
#error "the texel variants are PAIRS kernels"
#endif
#if TEXEL_X
layout(set = 0, binding = 1, rgba32ui) readonly uniform uimageBuffer t_xTexels;
#elif INT_X
layout(set = 0, binding = 1) readonly buffer X { ivec4 t_x4[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { VEC4_T t_x4[]; };
#endif
#if defined(MODE_dq8ca)
#define XV_T ivec4
#define ACC_T int
#else
#define XV_T vec4
#define ACC_T float
#endif
#if TEXELS
layout(set = 0, binding = 2, rgba32ui) readonly uniform uimageBuffer t_wTexels;
#else
layout(set = 0, binding = 2) readonly buffer W { uvec4 t_w4[]; };
#endif
#if TEXEL_SCALES
layout(set = 0, binding = 3, rgba32ui) readonly uniform uimageBuffer t_sTexels;
#endif
#if WIDE_LOADS && !TEXELS
layout(set = 0, binding = 1) readonly buffer X64 { u64vec2 t_x64[]; };
layout(set = 0, binding = 2) readonly buffer W64 { u64vec2 t_w64[]; };
#define WIDE_X !DTYPE_IS_HALF
#else
#define WIDE_X 0
#endif
#if PAIRS
#if !TEXELS
layout(set = 0, binding = 1) readonly buffer X256 { u64vec4 t_x256[]; };
layout(set = 0, binding = 2) readonly buffer W256 { u64vec4 t_w256[]; };
layout(set = 0, binding = 3) readonly buffer S256 { u64vec4 t_s256[]; };
#endif
#if defined(MODE_dq8ca)
layout(set = 0, binding = 7) readonly buffer Sums256 { u64vec4 t_sums256[]; };
#endif
#endif

#define TILES_PER_WG (LOCAL_SIZE_X / K_SPLIT)
#define TILE (TILE_M * TILE_N)
#define TEAM K_SPLIT
#define TEAM_VALUES TILE
#if FUSED_QUANT
#include "quantize_value.glslh"
#endif
#include "q4_linear.glslh"

// The 4-bit values (nibble - 8) at nibbles `first` .. `first` + 3 of `word`
// (converted from signed integers: one instruction on CPUs without an
// unsigned conversion; the GPU tilings' weight-only floats come from the bits,
// nibbles4f, the same values without conversions).
XV_T unpack4(uint word, uint first) {
#if K_SPLIT > 1 && !defined(MODE_dq8ca)
  return nibbles4f(word, first);
#else
  return XV_T(nibbles4(word, first));
#endif
}

// 32 int4 weights of row n's block kb.
uvec4 loadWeights(int index) {
#if TEXELS
  return imageLoad(t_wTexels, index);
#elif WIDE_LOADS
  u64vec2 w = t_w64[index];
  return uvec4(unpackUint2x32(w.x), unpackUint2x32(w.y));
#else
  return t_w4[index];
#endif
}

// Four x values at vec4 index `index` (FUSED_QUANT: quantized).
XV_T loadX(int index) {
#if TEXEL_X
  uvec4 bits = imageLoad(t_xTexels, index);
#elif WIDE_X
  u64vec2 v = t_x64[index];
  uvec4 bits = uvec4(unpackUint2x32(v.x), unpackUint2x32(v.y));
#endif
#if (TEXEL_X || WIDE_X) && INT_X
  return ivec4(bits);
#elif (TEXEL_X || WIDE_X) && FUSED_QUANT
  return quantize4(uintBitsToFloat(bits));
#elif TEXEL_X || WIDE_X
  return uintBitsToFloat(bits);
#elif FUSED_QUANT
  return quantize4(vec4(t_x4[index]));
#else
  return XV_T(t_x4[index]);
#endif
}

#if PAIRS
uvec4 lo4(u64vec4 v) {
  return uvec4(unpackUint2x32(v.x), unpackUint2x32(v.y));
}
uvec4 hi4(u64vec4 v) {
  return uvec4(unpackUint2x32(v.z), unpackUint2x32(v.w));
}

// The PAIRS kernel's x values (4 per PV_T) and per-block sums of x (PS_T):
// dq8ca works on the int8 activations as integers.
#if defined(MODE_dq8ca)
#define PV_T ivec4
#define PS_T int
#else
#define PV_T vec4
#define PS_T float
#endif

// Eight x values starting at vec4 index `index` (even), as two PV_Ts.
void loadX8(int index, out PV_T a, out PV_T b) {
#if TEXEL_X || DTYPE_IS_HALF && !INT_X
  a = PV_T(loadX(index));
  b = PV_T(loadX(index + 1));
#elif INT_X
  u64vec4 v = t_x256[index / 2];
  a = ivec4(lo4(v));
  b = ivec4(hi4(v));
#elif FUSED_QUANT
  u64vec4 v = t_x256[index / 2];
  a = quantize4(uintBitsToFloat(lo4(v)));
  b = quantize4(uintBitsToFloat(hi4(v)));
#else
  u64vec4 v = t_x256[index / 2];
  a = uintBitsToFloat(lo4(v));
  b = uintBitsToFloat(hi4(v));
#endif
}

// x * 16^-i for nibble position i of a word (i = 0..3 in the first vec4 of
// its 8 values, 4..7 in the second); position 7 is shifted down instead of
// masked in place (nibble * 16^7 would not fit a signed conversion).
const vec4 kPlaceLo = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
const vec4 kPlaceHi = vec4(1.52587890625e-05, 9.5367431640625e-07, 5.9604644775390625e-08, 1.0);

// nibble * 16^i for the word's nibbles 0..3 and 4..7 (signed conversions:
// one instruction on CPUs without an unsigned one).
vec4 placedLo(uint word) {
  return vec4(ivec4(uvec4(word) & uvec4(0xFu, 0xF0u, 0xF00u, 0xF000u)));
}
vec4 placedHi(uint word) {
  return vec4(ivec4(uvec4(word & 0xF0000u, word & 0xF00000u, word & 0xF000000u, word >> 28u)));
}

// The block's 8 * sum x per row, then its x prepared for blockDot: scaled
// by kPlaceLo / kPlaceHi; dq8ca: word j's x packed in pairs into xv[j], x at
// k = 8j + i (i = 0..3) in the high 16 bits, x at k + 4 in the low ones
// (x_k * 2^16 + x_{k+4}).
void prepareBlockX(inout PV_T xv[TILE_M * 8], out PS_T x8[TILE_M]) {
  [[unroll]] for (int t = 0; t < TILE_M; ++t) {
    PV_T sx = xv[t * 8];
    [[unroll]] for (int j = 1; j < 8; ++j)
      sx += xv[t * 8 + j];
    x8[t] = PS_T(8) * ((sx.x + sx.y) + (sx.z + sx.w));
#if defined(MODE_dq8ca)
    [[unroll]] for (int j = 0; j < 4; ++j)
      xv[t * 8 + j] = (xv[t * 8 + 2 * j] << 16) + xv[t * 8 + 2 * j + 1];
#else
    [[unroll]] for (int j = 0; j < 8; ++j)
      xv[t * 8 + j] *= (j % 2 == 0) ? kPlaceLo : kPlaceHi;
#endif
  }
}

// Whether the tile's TILE_N 32-bit values of a per-column table starting at
// `base` can be read 8 per 32-byte load: the tile is whole and `base` aligned.
bool wholeAlignedTile(int base, int cols) {
  return cols == TILE_N && base % 8 == 0;
}

// Word q * 8 + i of the tile's values, from the q-th 32-byte load `v`.
void spread8(u64vec4 v, int q, inout uint bits[TILE_N]) {
  uvec4 a = lo4(v), b = hi4(v);
  [[unroll]] for (int i = 0; i < 4; ++i) {
    bits[q * 8 + i] = a[i];
    bits[q * 8 + 4 + i] = b[i];
  }
}

// Group g's scales of the tile's columns: 8 per load where wholeAlignedTile
// (f32 scales), else one by one (a column past N reads column n0's).
void loadScales(int g, int n0, int cols, out float s[TILE_N]) {
  int base = g * pc.scaleStride + n0;
#if !SCALES_DTYPE_IS_HALF
  if (wholeAlignedTile(base, cols)) {
    uint bits[TILE_N];
    [[unroll]] for (int q = 0; q < TILE_N / 8; ++q) {
#if TEXEL_SCALES
      uvec4 a = imageLoad(t_sTexels, base / 4 + 2 * q), b = imageLoad(t_sTexels, base / 4 + 2 * q + 1);
      [[unroll]] for (int i = 0; i < 4; ++i) {
        bits[q * 8 + i] = a[i];
        bits[q * 8 + 4 + i] = b[i];
      }
#else
      spread8(t_s256[base / 8 + q], q, bits);
#endif
    }
    [[unroll]] for (int c = 0; c < TILE_N; ++c)
      s[c] = uintBitsToFloat(bits[c]);
    return;
  }
#endif
  [[unroll]] for (int c = 0; c < TILE_N; ++c) {
    int i = base + (c < cols ? c : 0);
#if TEXEL_SCALES
    s[c] = uintBitsToFloat(imageLoad(t_sTexels, i / 4)[i % 4]);
#else
    s[c] = float(t_scales[i]);
#endif
  }
}

// One 32-value block for the whole tile, unscaled: d = sum x * q - 8 sum x,
// with xv and x8 from prepareBlockX and w[c] column c's block.
#if defined(MODE_dq8ca)
// dq8ca, exact integers, two products per 32-bit multiply: nibbles i and
// i + 4 of a word, masked together ((word >> 4i) & 0x000F000F = q_i +
// q_{i+4} * 2^16, q the stored nibble 0..15), times x_i * 2^16 + x_{i+4}
// give q_i x_{i+4} + (q_i x_i + q_{i+4} x_{i+4}) * 2^16 (the q_{i+4} x_i *
// 2^32 term drops out of the 32-bit product). Summed over the block's 4
// words: the high part's magnitude is at most 4 * 2 * 15 * 128 = 15360, the
// low part's 7680 < 2^15, so the sum fits an int32 and rounding it to a
// multiple of 2^16, (p + 2^15) >> 16, recovers the high part exactly.
const uvec4 kPairShift = uvec4(0u, 4u, 8u, 12u);
void blockDot(out int d[TILE], ivec4 xv[TILE_M * 8], int x8[TILE_M], uvec4 w[TILE_N]) {
  [[unroll]] for (int c = 0; c < TILE_N; ++c) {
    ivec4 q[4];
    [[unroll]] for (int j = 0; j < 4; ++j)
      q[j] = ivec4((uvec4(w[c][j]) >> kPairShift) & 0x000F000Fu);
    [[unroll]] for (int t = 0; t < TILE_M; ++t) {
      ivec4 p = q[0] * xv[t * 8];
      [[unroll]] for (int j = 1; j < 4; ++j)
        p += q[j] * xv[t * 8 + j];
      ivec4 h = (p + 0x8000) >> 16;
      d[c * TILE_M + t] = ((h.x + h.y) + (h.z + h.w)) - x8[t];
    }
  }
}
#else
void blockDot(out float d[TILE], vec4 xv[TILE_M * 8], float x8[TILE_M], uvec4 w[TILE_N]) {
  [[unroll]] for (int c = 0; c < TILE_N; ++c) {
    vec4 q[8];
    [[unroll]] for (int j = 0; j < 4; ++j) {
      q[2 * j] = placedLo(w[c][j]);
      q[2 * j + 1] = placedHi(w[c][j]);
    }
    [[unroll]] for (int t = 0; t < TILE_M; ++t) {
      vec4 p = xv[t * 8] * q[0];
      [[unroll]] for (int j = 1; j < 8; ++j)
        p = fma(xv[t * 8 + j], q[j], p);
      d[c * TILE_M + t] = ((p.x + p.y) + (p.z + p.w)) - x8[t];
    }
  }
}
#endif

#if defined(MODE_dq8ca)
// Group g's weight sums of the tile's columns, as loadScales reads scales.
void loadSums(int g, int n0, int cols, out int ws[TILE_N]) {
  int base = g * pc.sumsStride + n0;
  if (wholeAlignedTile(base, cols)) {
    uint bits[TILE_N];
    [[unroll]] for (int q = 0; q < TILE_N / 8; ++q)
      spread8(t_sums256[base / 8 + q], q, bits);
    [[unroll]] for (int c = 0; c < TILE_N; ++c)
      ws[c] = int(bits[c]);
    return;
  }
  [[unroll]] for (int c = 0; c < TILE_N; ++c)
    ws[c] = t_sums[base + (c < cols ? c : 0)];
}
#endif

// Block kb's dot products `d` into the tile's sums. Weight-only: scaled by
// its group's scales at once. dq8ca: added to the group's exact integer dot
// products `gdot`; after the group's last block, ET-VK's zero-point
// correction and one scale product per group, as the non-PAIRS kernel does
// (the same operations on the same integers: the same result).
void addBlock(inout float acc[TILE], inout ACC_T gdot[TILE], ACC_T d[TILE], int kb,
              int blocksPerGroup, int n0, int cols, float xs[TILE_M], int xz[TILE_M]) {
  int g = kb / blocksPerGroup;
#if defined(MODE_dq8ca)
  [[unroll]] for (int i = 0; i < TILE; ++i)
    gdot[i] += d[i];
  if (kb % blocksPerGroup != blocksPerGroup - 1)
    return;
#endif
  float s[TILE_N];
  loadScales(g, n0, cols, s);
#if defined(MODE_dq8ca)
  int ws[TILE_N];
  loadSums(g, n0, cols, ws);
  [[unroll]] for (int c = 0; c < TILE_N; ++c)
    [[unroll]] for (int t = 0; t < TILE_M; ++t) {
      int i = c * TILE_M + t;
      acc[i] = fma(float(gdot[i] - xz[t] * ws[c]), xs[t] * s[c], acc[i]);
      gdot[i] = 0;
    }
#else
  [[unroll]] for (int c = 0; c < TILE_N; ++c)
    [[unroll]] for (int t = 0; t < TILE_M; ++t)
      acc[c * TILE_M + t] = fma(d[c * TILE_M + t], s[c], acc[c * TILE_M + t]);
#endif
}
#endif

void main() {
  uint lid = gl_LocalInvocationIndex;
  int ky = int(lid % uint(K_SPLIT));
  int n0 = (int(gl_WorkGroupID.x) * TILES_PER_WG + int(lid / uint(K_SPLIT))) * TILE_N;
  int m0 = int(gl_WorkGroupID.y) * TILE_M;
  int K4 = pc.K / 4;
  int blocksPerGroup = pc.groupSize / 32;
  int groups = pc.K / pc.groupSize;
  int rows = min(TILE_M, pc.M - m0);
  int cols = clamp(pc.N - n0, 0, TILE_N);
#if FUSED_QUANT
  setRowQuantization(m0);
#endif

  // Every loop over the tile is unrolled ([[unroll]]), so the arrays live in
  // registers (an array indexed at run time becomes per-lane memory on llvmpipe).
  float acc[TILE];
  [[unroll]] for (int i = 0; i < TILE; ++i)
    acc[i] = 0.0;

#if PAIRS
  // Per row: dq8ca's input scale and zero point (a row past M reads row m0's).
  float xs[TILE_M];
  int xz[TILE_M];
  [[unroll]] for (int t = 0; t < TILE_M; ++t) {
#if defined(MODE_dq8ca)
    int m = m0 + (t < rows ? t : 0);
    xs[t] = t_in_scales[m];
    xz[t] = t_in_zeros[m];
#else
    xs[t] = 0.0;
    xz[t] = 0;
#endif
  }
  ACC_T gdot[TILE];
  [[unroll]] for (int i = 0; i < TILE; ++i)
    gdot[i] = ACC_T(0);
  ACC_T d[TILE];
  // Pairs of blocks with 32-byte weight loads where a row is a whole number
  // of pairs (rowVec4 even), then single blocks.
  int blocks = pc.K / 32;
  int pairs = pc.rowVec4 % 2 == 0 ? blocks / 2 : 0;
  for (int kp = 0; kp < pairs; ++kp) {
    PV_T xv0[TILE_M * 8], xv1[TILE_M * 8];
    [[unroll]] for (int t = 0; t < TILE_M; ++t) {
      int xb = (m0 + (t < rows ? t : 0)) * K4 + kp * 16;
      [[unroll]] for (int j = 0; j < 4; ++j) {
        loadX8(xb + 2 * j, xv0[t * 8 + 2 * j], xv0[t * 8 + 2 * j + 1]);
        loadX8(xb + 8 + 2 * j, xv1[t * 8 + 2 * j], xv1[t * 8 + 2 * j + 1]);
      }
    }
    PS_T x80[TILE_M], x81[TILE_M];
    prepareBlockX(xv0, x80);
    prepareBlockX(xv1, x81);
    uvec4 w0[TILE_N], w1[TILE_N];
    [[unroll]] for (int c = 0; c < TILE_N; ++c) {
      int row = n0 + (c < cols ? c : 0);
#if TEXELS
      w0[c] = loadWeights(row * pc.rowVec4 + 2 * kp);
      w1[c] = loadWeights(row * pc.rowVec4 + 2 * kp + 1);
#else
      u64vec4 v = t_w256[row * (pc.rowVec4 / 2) + kp];
      w0[c] = lo4(v);
      w1[c] = hi4(v);
#endif
    }
    blockDot(d, xv0, x80, w0);
    addBlock(acc, gdot, d, 2 * kp, blocksPerGroup, n0, cols, xs, xz);
    blockDot(d, xv1, x81, w1);
    addBlock(acc, gdot, d, 2 * kp + 1, blocksPerGroup, n0, cols, xs, xz);
  }
  for (int kb = 2 * pairs; kb < blocks; ++kb) {
    PV_T xv[TILE_M * 8];
    [[unroll]] for (int t = 0; t < TILE_M; ++t) {
      int xb = (m0 + (t < rows ? t : 0)) * K4 + kb * 8;
      [[unroll]] for (int j = 0; j < 8; ++j)
        xv[t * 8 + j] = PV_T(loadX(xb + j));
    }
    PS_T x8[TILE_M];
    prepareBlockX(xv, x8);
    uvec4 w[TILE_N];
    [[unroll]] for (int c = 0; c < TILE_N; ++c)
      w[c] = loadWeights((n0 + (c < cols ? c : 0)) * pc.rowVec4 + kb);
    blockDot(d, xv, x8, w);
    addBlock(acc, gdot, d, kb, blocksPerGroup, n0, cols, xs, xz);
  }
#else
  for (int g = ky; g < groups; g += K_SPLIT) {
    ACC_T gacc[TILE];
    [[unroll]] for (int i = 0; i < TILE; ++i)
      gacc[i] = ACC_T(0);
    for (int b = 0; b < blocksPerGroup; ++b) {
      int kb = g * blocksPerGroup + b;
      // This block's x: 32 values of each of the tile's rows (a row past M
      // re-reads row m0, whose results are not stored).
      XV_T xv[TILE_M * 8];
      [[unroll]] for (int t = 0; t < TILE_M; ++t) {
        int xb = (m0 + (t < rows ? t : 0)) * K4 + kb * 8;
        [[unroll]] for (int j = 0; j < 8; ++j)
          xv[t * 8 + j] = loadX(xb + j);
      }
      [[unroll]] for (int c = 0; c < TILE_N; ++c) {
        // A column past N re-reads column n0 (its results are not stored).
        uvec4 w = loadWeights((n0 + (c < cols ? c : 0)) * pc.rowVec4 + kb);
        XV_T q[8];
        q[0] = unpack4(w.x, 0u);
        q[1] = unpack4(w.x, 4u);
        q[2] = unpack4(w.y, 0u);
        q[3] = unpack4(w.y, 4u);
        q[4] = unpack4(w.z, 0u);
        q[5] = unpack4(w.z, 4u);
        q[6] = unpack4(w.w, 0u);
        q[7] = unpack4(w.w, 4u);
        [[unroll]] for (int t = 0; t < TILE_M; ++t) {
#if defined(MODE_dq8ca)
          ivec4 p = xv[t * 8] * q[0];
          [[unroll]] for (int j = 1; j < 8; ++j)
            p += xv[t * 8 + j] * q[j];
#else
          vec4 p = xv[t * 8] * q[0];
          [[unroll]] for (int j = 1; j < 8; ++j)
            p = fma(xv[t * 8 + j], q[j], p);
#endif
          gacc[c * TILE_M + t] += (p.x + p.y) + (p.z + p.w);
        }
      }
    }
    [[unroll]] for (int c = 0; c < TILE_N; ++c) {
      int n = n0 + (c < cols ? c : 0);
      float s = float(t_scales[g * pc.scaleStride + n]);
#if defined(MODE_dq8ca)
      int wsum = t_sums[g * pc.sumsStride + n];
      [[unroll]] for (int t = 0; t < TILE_M; ++t) {
        int m = m0 + (t < rows ? t : 0);
        float sc = t_in_scales[m] * s;
        acc[c * TILE_M + t] = fma(float(gacc[c * TILE_M + t] - t_in_zeros[m] * wsum), sc,
                                  acc[c * TILE_M + t]);
      }
#else
      [[unroll]] for (int t = 0; t < TILE_M; ++t)
        acc[c * TILE_M + t] = fma(gacc[c * TILE_M + t], s, acc[c * TILE_M + t]);
#endif
    }
  }
#endif

#if K_SPLIT > 1
  // A tile's K_SPLIT invocations are consecutive lanes (of one subgroup
  // where SUBGROUP_REDUCE: the host picks those variants only where
  // K_SPLIT <= subgroupSize).
  teamReduce(acc, lid, ky);
  if (ky != 0)
    return;
#endif
  [[unroll]] for (int c = 0; c < TILE_N; ++c) {
    if (c < cols) {
      float bias = pc.hasBias != 0 ? float(t_bias[n0 + c]) : 0.0;
      [[unroll]] for (int t = 0; t < TILE_M; ++t)
        if (t < rows)
          t_out[(m0 + t) * pc.N + n0 + c] = TO_DTYPE(acc[c * TILE_M + t] + bias);
    }
  }
}
