//===- Linear.cpp - matmul, linear and the quantized linears ----------------===//
//
// Float matrix products (mm, bmm, matmul, linear, addmm) and the quantized
// linears of ExecuTorch's Vulkan backend: linear_q4gsw, linear_dq8ca_q4gsw,
// linear_qcs4w (4-bit weights prepacked at load time), _weight_int8pack_mm
// linear_q8ta_q8csw and q8ta_linear(_gemv) (8-bit weights). Shaders: matmul.glsl, the
// linear_q4gsw* variants with q4_linear.glslh, linear_q8csw.glsl.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

namespace {

struct MatmulPush {
  int32_t M, N, K, batch, numBatchDims, hasBias;
  int32_t aStrideM, aStrideK, bStrideK, bStrideN;
  int32_t batchSizes[4], aBatchStrides[4], bBatchStrides[4];
};

Status dispatchMatmul(Context &ctx, const DeviceTensor &out, const DeviceTensor &a,
                      const DeviceTensor &b, const DeviceTensor *bias, MatmulPush &pc) {
  // Each invocation walks the batch dims, then K (matmul.glsl): on a driver
  // that ends long loops silently, a longer K would be summed only in part.
  GRAFT_CHECK_OK(checkLoopIterations(ctx, "matmul", pc.K + pc.numBatchDims + 2));
  std::string variant = "matmul_" + shaderDType(a.dtype);
  uint64_t total = uint64_t(pc.batch) * uint64_t(pc.M) * uint64_t(pc.N);
  return ctx.dispatch1D(
      variant, {out.buffer.get(), a.buffer.get(), b.buffer.get(), (bias ? bias : &a)->buffer.get()},
      &pc, sizeof(pc), total);
}

} // namespace

Expected<DeviceTensor> matmul(Context &ctx, const DeviceTensor &a, const DeviceTensor &b) {
  if (!isDeviceFloat(a.dtype) || a.dtype != b.dtype)
    return kernelError("matmul", "operands must be f32 or f16 of one dtype, got " +
                                     std::string(name(a.dtype)) + " and " +
                                     std::string(name(b.dtype)));
  if (a.sizes.size() < 2 || b.sizes.size() < 2)
    return kernelError("matmul", "operands need at least 2 dims");
  int64_t M = a.sizes[a.sizes.size() - 2], K = a.sizes.back();
  int64_t K2 = b.sizes[b.sizes.size() - 2], N = b.sizes.back();
  if (K != K2)
    return kernelError("matmul", "shapes " + sizesStr(a.sizes) + " and " + sizesStr(b.sizes) +
                                     " cannot be multiplied");
  std::vector<int64_t> ba(a.sizes.begin(), a.sizes.end() - 2),
      bb(b.sizes.begin(), b.sizes.end() - 2);
  std::size_t r = std::max(ba.size(), bb.size());
  if (r > 4)
    return kernelError("matmul", "more than 4 batch dims");
  std::vector<int64_t> batch(r, 1);
  for (std::size_t i = 0; i < r; ++i) {
    int64_t x = i < r - ba.size() ? 1 : ba[i - (r - ba.size())];
    int64_t y = i < r - bb.size() ? 1 : bb[i - (r - bb.size())];
    if (x != y && x != 1 && y != 1)
      return kernelError("matmul", "batch dims of " + sizesStr(a.sizes) + " and " +
                                       sizesStr(b.sizes) + " do not broadcast");
    batch[i] = x == 1 ? y : x;
  }
  std::vector<int64_t> outSizes = batch;
  outSizes.push_back(M);
  outSizes.push_back(N);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, outSizes));
  MatmulPush pc{};
  pc.M = i32(M);
  pc.N = i32(N);
  pc.K = i32(K);
  pc.batch = i32(product(batch));
  pc.numBatchDims = i32(static_cast<int64_t>(r));
  pc.aStrideM = i32(K);
  pc.aStrideK = 1;
  pc.bStrideK = i32(N);
  pc.bStrideN = 1;
  std::vector<int64_t> sa = broadcastStrides(ba, batch), sb = broadcastStrides(bb, batch);
  for (std::size_t i = 0; i < r; ++i) {
    pc.batchSizes[i] = i32(batch[i]);
    pc.aBatchStrides[i] = i32(sa[i] * M * K);
    pc.bBatchStrides[i] = i32(sb[i] * K * N);
  }
  GRAFT_CHECK_OK(dispatchMatmul(ctx, out, a, b, nullptr, pc));
  return out;
}

Expected<DeviceTensor> linear(Context &ctx, const DeviceTensor &x, const DeviceTensor &w,
                              const DeviceTensor *bias) {
  if (!isDeviceFloat(x.dtype) || x.dtype != w.dtype || (bias && bias->dtype != x.dtype))
    return kernelError("linear", "input, weight and bias must be f32 or f16 of one dtype");
  if (x.sizes.empty() || w.sizes.size() != 2 || w.sizes[1] != x.sizes.back())
    return kernelError("linear", "input " + sizesStr(x.sizes) + " and weight " + sizesStr(w.sizes) +
                                     " do not match");
  int64_t K = x.sizes.back(), N = w.sizes[0];
  if (bias && bias->numel() != N)
    return kernelError("linear", "bias " + sizesStr(bias->sizes) + " does not have " +
                                     std::to_string(N) + " elements");
  std::vector<int64_t> outSizes(x.sizes.begin(), x.sizes.end() - 1);
  outSizes.push_back(N);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, outSizes));
  MatmulPush pc{};
  pc.M = i32(K ? x.numel() / K : 0);
  pc.N = i32(N);
  pc.K = i32(K);
  pc.batch = 1;
  pc.hasBias = bias ? 1 : 0;
  pc.aStrideM = i32(K);
  pc.aStrideK = 1;
  pc.bStrideK = 1;
  pc.bStrideN = i32(K);
  GRAFT_CHECK_OK(dispatchMatmul(ctx, out, x, w, bias, pc));
  return out;
}

Expected<PackedQ4Weight> prepackQ4(Context &ctx, const Tensor &packed, bool lowNibbleFirst) {
  if (packed.rank() != 2 || (packed.dtype() != DType::U8 && packed.dtype() != DType::I8))
    return kernelError("prepack", "a packed int4 weight must be a 2-D u8 tensor [N, K/2], got " +
                                      packed.proto().str());
  Tensor c = packed.contiguous();
  int64_t N = c.size(0), Kb = c.size(1), K = 2 * Kb, K8 = (K + 7) / 8;
  // Rows padded to whole uvec4s (32 values) so the fast kernels read a row as uvec4.
  int64_t rowWords = (K8 + 3) / 4 * 4;
  GRAFT_CHECK_OK(checkInt32("prepack", rowWords * N));
  const uint8_t *bytes = c.data<uint8_t>();
  std::vector<uint32_t> words(static_cast<std::size_t>(std::max<int64_t>(rowWords * N, 4)),
                              0x88888888u); // padding decodes to 0
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k8 = 0; k8 < K8; ++k8) {
      uint32_t word = 0;
      for (int64_t i = 0; i < 8; ++i) {
        int64_t k = 8 * k8 + i;
        uint32_t nib = 8;
        if (k < K) {
          uint8_t b = bytes[n * Kb + k / 2];
          bool low = (k % 2 == 0) == lowNibbleFirst;
          nib = low ? (b & 0xFu) : (b >> 4);
        }
        word |= nib << (4 * i);
      }
      words[static_cast<std::size_t>(n * rowWords + k8)] = word;
    }
  PackedQ4Weight w;
  w.N = N;
  w.K = K;
  w.rowWords = rowWords;
  GRAFT_TRY(w.words, ctx.allocate(words.size() * 4));
  GRAFT_CHECK_OK(ctx.upload(*w.words, words.data(), words.size() * 4));
  return w;
}

namespace {

/// The bit-exact packed-weight kernels' loop iterations (linear_q4gsw.glsl,
/// linear_q8csw.glsl: one per 32-bit word of K, `valuesPerWord` values
/// each, and the exit pass; packedWeightLowering checks the same count for
/// static sizes) within the device's limit.
Status checkPackedLoop(Context &ctx, const char *kernel, int64_t K, int64_t valuesPerWord) {
  return checkLoopIterations(ctx, kernel, (K + valuesPerWord - 1) / valuesPerWord + 1);
}

struct Q4Push {
  int32_t M, N, K, groupSize, scaleStride, hasBias, sumsStride, rowVec4;
  int32_t inScaleHalf; ///< dq8ca GEMVs: the per-token scales are f16 (q4_linear.glslh)
};

/// The fast kernels' tiling for this device (linear_q4gsw_fast.yaml): on CPU
/// drivers (lavapipe) every loaded component costs a scalar access per
/// invocation, so an invocation takes a wide tile of columns that share its x
/// loads; GPUs split each tile's K over 16 or 32 invocations (coalesced
/// reads, and more weight bytes in flight per column).
struct FastLinearTiling {
  const char *name;
  int64_t columnsPerGroup; ///< output columns per workgroup
  int64_t tileM;           ///< rows per workgroup
  /// > 0: the variant reduces with subgroups, a team of this many lanes:
  /// with subgroupClusteredAdd (subgroups of at least that many lanes), or
  /// where `wholeSubgroups`, with subgroupAdd (subgroups of at most that many).
  uint32_t subgroupLanes;
  bool weightOnly = false;     ///< no dq8ca variant (linear_q4gsw_lanes.glsl)
  bool wholeSubgroups = false; ///< teams of whole subgroups (linear_q4gsw_splitk.glsl)
};

/// The GEMV (M = 1) tilings for GPUs. `gpu_gemv` reduces its 16-way K split in
/// shared memory and runs anywhere; the `_sg` ones split K 32 ways and reduce
/// with subgroupClusteredAdd, so they need subgroups of at least 32 lanes.
/// The `lanes` ones (linear_q4gsw_lanes.glsl, weight-only) split K in 8-value
/// chunks over adjacent lanes, so x and weight loads coalesce. The `splitk`
/// ones (linear_q4gsw_splitk.glsl) split K in 32-value blocks over teams of
/// 64 lanes (two warps; `_wg`: all 256 of the workgroup), two blocks in flight
/// per lane; `_sg` reduces each subgroup with subgroupAdd, then shared memory;
/// `splitk_n4_sg` / `splitk_n8_sg`: teams of 32 lanes on four / eight
/// columns (one x load per four / eight weight words).
constexpr FastLinearTiling kGpuGemvTilings[] = {
    {"gpu_gemv", 4 * 2, 1, 0},
    {"gpu_gemv_sg", 2 * 2, 1, 32},
    {"gpu_gemv_sg_n4", 4 * 4, 1, 32},
    {"gpu_gemv_lanes", 2 * 4, 1, 0, true},
    {"gpu_gemv_lanes_sg", 2 * 4, 1, 32, true},
    {"gpu_gemv_splitk", 4 * 2, 1, 0},
    {"gpu_gemv_splitk_sg", 4 * 2, 1, 64, false, true},
    {"gpu_gemv_splitk_wg_sg", 1 * 2, 1, 256, false, true},
    {"gpu_gemv_splitk_n4_sg", 8 * 4, 1, 32, false, true},
    {"gpu_gemv_splitk_n8_sg", 8 * 8, 1, 32, false, true},
};

/// The GEMM (M > 1) tilings for GPUs: `gpu_gemm`, a 4 x 4 tile per
/// invocation (linear_q4gsw_fast.glsl, weight-only and dq8ca), the default;
/// `gpu_gemm_tiled`, 32 x 64 per workgroup through shared memory
/// (linear_q4gsw_gemm.glsl, weight-only), not measured on a GPU yet and
/// chosen only when forced (GRAFT_VK_LINEAR_TILING=gpu_gemm_tiled).
constexpr FastLinearTiling kGpuGemmTilings[] = {
    {"gpu_gemm", 4 * 4, 4, 0},
    {"gpu_gemm_tiled", 64, 32, 0, true},
};

bool supports(const Context &ctx, const FastLinearTiling &t, bool dq8ca) {
  const DeviceInfo &d = ctx.info();
  if (t.weightOnly && dq8ca)
    return false;
  if (t.subgroupLanes == 0)
    return true;
  if (t.wholeSubgroups)
    return d.subgroupArithmetic && d.subgroupSize > 0 && d.subgroupSize <= t.subgroupLanes;
  return d.subgroupClusteredAdd && d.subgroupSize >= t.subgroupLanes;
}

/// The first of `names` (kGpuGemvTilings) the device supports.
FastLinearTiling firstSupported(const Context &ctx, bool dq8ca,
                                std::initializer_list<std::string_view> names) {
  for (std::string_view name : names)
    for (const FastLinearTiling &t : kGpuGemvTilings)
      if (name == t.name && supports(ctx, t, dq8ca))
        return t;
  return kGpuGemvTilings[0];
}

/// GRAFT_VK_LINEAR_TILING=cpu|gpu overrides the device class for the
/// linears (else GRAFT_VK_KERNELS does, as for every kernel choice); naming a
/// GEMV tiling (gpu_gemv_sg, ...) forces that one where the device supports
/// it (benchmarks sweep them). N is the number of output columns.
FastLinearTiling fastLinearTiling(const Context &ctx, int64_t M, int64_t N, bool dq8ca,
                                  std::size_t texelBytes) {
  const std::string_view force = envOr("GRAFT_VK_LINEAR_TILING");
  const bool cpu = cpuKernels(ctx, force.starts_with("gpu") ? "gpu"
                                   : force.empty()          ? envOr("GRAFT_VK_KERNELS")
                                                            : force);
  if (M == 1)
    for (const FastLinearTiling &t : kGpuGemvTilings)
      if (force == t.name && supports(ctx, t, dq8ca))
        return t;
  if (M > 1)
    for (const FastLinearTiling &t : kGpuGemmTilings)
      if (force == t.name && supports(ctx, t, dq8ca))
        return t;
  // CPU drivers charge per loaded component: with shaderInt64, 64-bit loads
  // halve the weight and x loads (the `_wide` variants).
  bool wide = ctx.info().shaderInt64 && !std::getenv("GRAFT_VK_NO_WIDE_LOADS");
  if (M == 1) {
    // Weights, x and scales read as texels where the device allows
    // (texelReads; `texelBytes`: the largest of them).
    if (cpu)
      return FastLinearTiling{!wide                         ? "cpu_gemv"
                              : texelReads(ctx, texelBytes) ? "cpu_gemv_texel"
                                                            : "cpu_gemv_wide",
                              8 * 32, 1, 0};
    // By output width, from the NVIDIA H200 sweep of 2026-11-28 with 16
    // launches per submission (docs/benchmarks.md, "Vulkan kernels on a
    // GPU"; us per GEMV): at 1x4096x14336 lanes_sg was the fastest
    // weight-only tiling (30.4; sg_n4 31.7, split-K 44.9) and sg_n4 the
    // fastest dq8ca one (41.0); at 1x2048x8192 sg_n4 (13.2; lanes_sg 16.4);
    // below 8192 columns split-K over teams of 64 lanes (1x4096x4096 15.1,
    // sg_n4 15.8; 1x2048x2048 6.5, sg 7.6; 1x2048x512 4.9, sg 6.4;
    // 1x8192x2048 15.3, sg 19.6; dq8ca 1x4096x4096 82.6, sg_n4 93.2). Wide
    // outputs give every tiling enough workgroups, and the ones that read
    // x once for several columns win; narrow ones need K split further to
    // fill the GPU. Devices without subgroup arithmetic take the shared-
    // memory forms.
    if (N >= 12288)
      return firstSupported(ctx, dq8ca,
                            {"gpu_gemv_lanes_sg", "gpu_gemv_sg_n4", "gpu_gemv_lanes", "gpu_gemv"});
    if (N >= 8192)
      return firstSupported(ctx, dq8ca, {"gpu_gemv_sg_n4", "gpu_gemv_lanes", "gpu_gemv"});
    return firstSupported(ctx, dq8ca, {"gpu_gemv_splitk_sg", "gpu_gemv_splitk"});
  }
  // GEMM: a 4 x 16 tile per invocation. An invocation loads 4 rows of x and
  // 16 columns of weights per block; per output that is 16/16 + 3/4 loaded
  // components per x/weight pair, 26 % fewer than an 8 x 8 tile with the
  // same number of accumulators (measured 2-3x faster on lavapipe). The
  // `_wide` kernels (PAIRS, weight-only and dq8ca) take 8 x 16: they unpack
  // each weight once for the tile's rows (8 rows: 1.2x less CPU time than 4
  // on lavapipe for the weight-only kernel).
  if (cpu)
    return FastLinearTiling{wide ? "cpu_gemm_wide" : "cpu_gemm", 8 * 16, wide ? 8 : 4, 0};
  return kGpuGemmTilings[0];
}

constexpr int64_t kTileM = 4;

/// The int4 linears. dq8ca (linear_dq8ca_q4gsw) when `sums` is given, with
/// the per-token `inputScales` and `inputZeroPoints`: the GEMV tilings
/// (M = 1) quantize x themselves as they load it (FUSED_QUANT in
/// linear_q4gsw_fast.glsl, linear_q4gsw_splitk.glsl), the other kernels read
/// the int8 values a quantize_affine dispatch writes first.
Expected<DeviceTensor> q4Linear(Context &ctx, const char *kernel, const DeviceTensor &x,
                                const PackedQ4Weight &w, const DeviceTensor &scales,
                                int64_t groupSize, int64_t scaleStride, const DeviceTensor *bias,
                                const DeviceTensor *inputScales,
                                const DeviceTensor *inputZeroPoints, const DeviceTensor *sums) {
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(scales.dtype))
    return kernelError(kernel, "input and scales must be f32 or f16, got " +
                                   std::string(name(x.dtype)) + " and " +
                                   std::string(name(scales.dtype)));
  if (bias && (bias->dtype != x.dtype || bias->numel() < w.N))
    return kernelError(kernel, "bias must be " + std::string(name(x.dtype)) + " with at least " +
                                   std::to_string(w.N) + " elements");
  int64_t K = x.sizes.back();
  int64_t M = K ? x.numel() / K : 0;
  std::vector<int64_t> outSizes(x.sizes.begin(), x.sizes.end() - 1);
  outSizes.push_back(w.N);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, outSizes));
  Q4Push pc{i32(M),
            i32(w.N),
            i32(K),
            i32(groupSize),
            i32(scaleStride),
            bias ? 1 : 0,
            sums ? i32(sums->sizes.back()) : 0,
            i32(w.rowWords / 4),
            0};
  const bool dq8ca = sums != nullptr;
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
  std::string op = dq8ca ? "linear_dq8ca_q4gsw_" : "linear_q4gsw_";
  if (M == 0 || w.N == 0)
    return out;
  // The fast kernels read whole 32-value blocks, one quantization group at a
  // time: K and the group size must be multiples of 32.
  FastLinearTiling tiling = fastLinearTiling(
      ctx, M, w.N, dq8ca, std::max({w.words->size(), x.buffer->size(), scales.buffer->size()}));
  uint64_t groupsX = uint64_t((w.N + tiling.columnsPerGroup - 1) / tiling.columnsPerGroup);
  uint64_t groupsY = uint64_t((M + tiling.tileM - 1) / tiling.tileM);
  bool fast = !ctx.exactKernels() && K % 32 == 0 && groupSize % 32 == 0 && K <= w.K &&
              groupsX <= ctx.info().maxComputeWorkGroupCount[0] &&
              groupsY <= ctx.info().maxComputeWorkGroupCount[1];
  // dq8ca: x as the kernel reads it (the float activation for the GEMVs,
  // else its int8 values) and the per-token scales in f32.
  DeviceTensor xRead = x, inScalesF32;
  if (dq8ca) {
    if (fast && tiling.tileM == 1) {
      GRAFT_CHECK_OK(checkPerTokenQParams(kernel, M, *inputScales, *inputZeroPoints));
      inScalesF32 = *inputScales;
      if (inScalesF32.dtype != DType::F32) {
        GRAFT_TRY(inScalesF32, cast(ctx, *inputScales, DType::F32));
      }
      pc.inScaleHalf = inputScales->dtype == DType::F16 ? 1 : 0;
    } else {
      GRAFT_TRY(PerTokenInt8 a,
                quantizePerTokenInt8(ctx, kernel, x, K, *inputScales, *inputZeroPoints));
      xRead = a.xq;
      inScalesF32 = a.scalesF32;
    }
  }
  std::vector<Buffer *> bindings = {out.buffer.get(), xRead.buffer.get(), w.words.get(),
                                    scales.buffer.get(), (bias ? bias : &x)->buffer.get()};
  if (dq8ca) {
    bindings.push_back(inScalesF32.buffer.get());
    bindings.push_back(inputZeroPoints->buffer.get());
    bindings.push_back(sums->buffer.get());
  }
  if (fast) {
    GRAFT_CHECK_OK(
        ctx.dispatch(op + "fast_" + tiling.name + "_" + dtypes, bindings, &pc, sizeof(pc),
                     {static_cast<uint32_t>(groupsX), static_cast<uint32_t>(groupsY), 1}));
    return out;
  }
  GRAFT_CHECK_OK(checkPackedLoop(ctx, kernel, K, 8));
  uint64_t invocations = uint64_t((M + kTileM - 1) / kTileM) * uint64_t(w.N);
  GRAFT_CHECK_OK(ctx.dispatch1D(op + dtypes, bindings, &pc, sizeof(pc), invocations));
  return out;
}

Status checkQ4Input(const char *kernel, const DeviceTensor &x, const PackedQ4Weight &w) {
  if (x.sizes.empty())
    return kernelError(kernel, "input must have at least 1 dim");
  if (x.sizes.back() > w.K)
    return kernelError(kernel, "input has " + std::to_string(x.sizes.back()) +
                                   " features but the packed weight holds only " +
                                   std::to_string(w.K));
  return okStatus();
}

/// The reference's dequantize_affine([1, gs]) requirements on [N, K] and [N, G].
Status checkGroups(const char *kernel, int64_t K, int64_t groupSize, int64_t groups) {
  if (groupSize <= 0)
    return kernelError(kernel, "group_size must be positive");
  bool ok = groupSize == K ? groups == 1 : (K % groupSize == 0 && groups == K / groupSize);
  if (!ok)
    return kernelError(kernel, "group_size " + std::to_string(groupSize) + " with " +
                                   std::to_string(groups) + " scale groups does not cover " +
                                   std::to_string(K) + " input features");
  return okStatus();
}

} // namespace

Expected<DeviceTensor> linearQ4gsw(Context &ctx, const DeviceTensor &x, const PackedQ4Weight &w,
                                   const DeviceTensor &scales, int64_t groupSize,
                                   const DeviceTensor *bias) {
  GRAFT_CHECK_OK(checkQ4Input("linear_q4gsw", x, w));
  if (scales.sizes.size() != 2 || scales.sizes[1] < w.N)
    return kernelError("linear_q4gsw", "weight_scales must be [groups, >= " + std::to_string(w.N) +
                                           "], got " + sizesStr(scales.sizes));
  GRAFT_CHECK_OK(checkGroups("linear_q4gsw", x.sizes.back(), groupSize, scales.sizes[0]));
  return q4Linear(ctx, "linear_q4gsw", x, w, scales, groupSize, scales.sizes[1], bias, nullptr,
                  nullptr, nullptr);
}

Expected<DeviceTensor> linearQcs4w(Context &ctx, const DeviceTensor &x, const PackedQ4Weight &w,
                                   const DeviceTensor &scales) {
  GRAFT_CHECK_OK(checkQ4Input("linear_qcs4w", x, w));
  if (x.sizes.back() != w.K)
    return kernelError("linear_qcs4w", "input features " + std::to_string(x.sizes.back()) +
                                           " do not match the unpacked weight's " +
                                           std::to_string(w.K));
  if (scales.numel() < w.N)
    return kernelError("linear_qcs4w",
                       "scales have fewer than " + std::to_string(w.N) + " entries");
  // One group spanning K; scales[0 * stride + n].
  return q4Linear(ctx, "linear_qcs4w", x, w, scales, std::max<int64_t>(w.K, 1), 0, nullptr, nullptr,
                  nullptr, nullptr);
}

Status checkPerTokenQParams(const char *kernel, int64_t M, const DeviceTensor &inputScales,
                            const DeviceTensor &inputZeroPoints) {
  if (inputScales.numel() != M || inputZeroPoints.numel() != M)
    return kernelError(kernel, "input_scales and input_zp need one entry per token (" +
                                   std::to_string(M) + "), got " + sizesStr(inputScales.sizes) +
                                   " and " + sizesStr(inputZeroPoints.sizes));
  if (deviceElem(inputZeroPoints.dtype) != DeviceElem::I32)
    return kernelError(kernel, "input_zp must be an integer tensor");
  return okStatus();
}

Expected<PerTokenInt8> quantizePerTokenInt8(Context &ctx, const char *kernel, const DeviceTensor &x,
                                            int64_t K, const DeviceTensor &inputScales,
                                            const DeviceTensor &inputZeroPoints) {
  int64_t M = K ? x.numel() / K : 0;
  GRAFT_CHECK_OK(checkPerTokenQParams(kernel, M, inputScales, inputZeroPoints));
  PerTokenInt8 r;
  r.scalesF32 = inputScales;
  if (r.scalesF32.dtype != DType::F32) {
    GRAFT_TRY(r.scalesF32, cast(ctx, inputScales, DType::F32));
  }
  const DeviceTensor &qScale = isDeviceFloat(inputScales.dtype) ? inputScales : r.scalesF32;
  GRAFT_TRY(r.xq, quantizeAffine(ctx, x, std::max<int64_t>(K, 1), qScale, &inputZeroPoints, -128,
                                 127, DType::I8));
  return r;
}

Expected<DeviceTensor> linearDq8caQ4gsw(Context &ctx, const DeviceTensor &x,
                                        const DeviceTensor &inputScales,
                                        const DeviceTensor &inputZeroPoints,
                                        const PackedQ4Weight &w, const DeviceTensor &weightSums,
                                        const DeviceTensor &scales, int64_t groupSize,
                                        const DeviceTensor *bias) {
  GRAFT_CHECK_OK(checkQ4Input("linear_dq8ca_q4gsw", x, w));
  if (scales.sizes.size() != 2 || scales.sizes[1] < w.N)
    return kernelError("linear_dq8ca_q4gsw",
                       "weight_scales must be [groups, >= " + std::to_string(w.N) + "], got " +
                           sizesStr(scales.sizes));
  int64_t K = x.sizes.back();
  GRAFT_CHECK_OK(checkGroups("linear_dq8ca_q4gsw", K, groupSize, scales.sizes[0]));
  if (weightSums.sizes.size() != 2 || weightSums.sizes[0] != scales.sizes[0] ||
      weightSums.sizes[1] < w.N || deviceElem(weightSums.dtype) != DeviceElem::I32)
    return kernelError("linear_dq8ca_q4gsw",
                       "weight_sums must be integer [" + std::to_string(scales.sizes[0]) +
                           ", >= " + std::to_string(w.N) + "], got " + sizesStr(weightSums.sizes));
  return q4Linear(ctx, "linear_dq8ca_q4gsw", x, w, scales, groupSize, scales.sizes[1], bias,
                  &inputScales, &inputZeroPoints, &weightSums);
}

Expected<PackedQ8Weight> prepackQ8(Context &ctx, const Tensor &weight) {
  if (weight.rank() != 2 || weight.dtype() != DType::I8)
    return kernelError("prepack", "an int8 weight must be a 2-D i8 tensor [N, K], got " +
                                      weight.proto().str());
  Tensor c = weight.contiguous();
  int64_t N = c.size(0), K = c.size(1), K4 = (K + 3) / 4;
  GRAFT_CHECK_OK(checkInt32("prepack", K4 * N));
  const uint8_t *bytes = c.data<uint8_t>();
  std::vector<uint32_t> words(static_cast<std::size_t>(std::max<int64_t>(K4 * N, 1)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k4 = 0; k4 < K4; ++k4) {
      uint32_t word = 0;
      for (int64_t b = 0; b < 4; ++b) {
        int64_t k = 4 * k4 + b;
        if (k < K)
          word |= uint32_t(bytes[n * K + k]) << (8 * b);
      }
      words[static_cast<std::size_t>(k4 * N + n)] = word;
    }
  PackedQ8Weight w;
  w.N = N;
  w.K = K;
  GRAFT_TRY(w.words, ctx.allocate(words.size() * 4));
  GRAFT_CHECK_OK(ctx.upload(*w.words, words.data(), words.size() * 4));
  return w;
}

namespace {
struct Q8Push {
  int32_t M, N, K, hasBias;
  float inputScale, inputInvScale;
  int32_t inputZeroPoint;
  // q8ta_linear's requantize (MODE q8ta_q8to only).
  float outputInvScale;
  int32_t outputZeroPoint, relu;
};
} // namespace

Expected<DeviceTensor> weightInt8PackMm(Context &ctx, const DeviceTensor &x,
                                        const PackedQ8Weight &w, const DeviceTensor &scales) {
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(scales.dtype))
    return kernelError("_weight_int8pack_mm", "self and scales must be f32 or f16");
  if (x.sizes.size() != 2 || x.sizes[1] != w.K || scales.numel() != w.N)
    return kernelError("_weight_int8pack_mm",
                       "shapes do not match: self [M, K], mat2 [N, K], scales [N] expected, got " +
                           sizesStr(x.sizes) + ", [" + std::to_string(w.N) + ", " +
                           std::to_string(w.K) + "], " + sizesStr(scales.sizes));
  int64_t M = x.sizes[0];
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, {M, w.N}));
  Q8Push pc{i32(M), i32(w.N), i32(w.K), 0, 0.f, 0.f, 0, 0.f, 0, 0};
  std::string variant =
      "weight_int8pack_mm_" + shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
  GRAFT_CHECK_OK(checkPackedLoop(ctx, "_weight_int8pack_mm", w.K, 4));
  GRAFT_CHECK_OK(ctx.dispatch1D(
      variant,
      {out.buffer.get(), x.buffer.get(), w.words.get(), scales.buffer.get(), x.buffer.get()}, &pc,
      sizeof(pc), uint64_t((M + kTileM - 1) / kTileM) * uint64_t(w.N)));
  return out;
}

Expected<DeviceTensor> linearQ8taQ8csw(Context &ctx, const DeviceTensor &x, double inputScale,
                                       int64_t inputZeroPoint, const PackedQ8Weight &w,
                                       const DeviceTensor &scales, const DeviceTensor *bias) {
  bool intX = deviceElem(x.dtype) == DeviceElem::I32;
  if ((!intX && !isDeviceFloat(x.dtype)) || !isDeviceFloat(scales.dtype))
    return kernelError("linear_q8ta_q8csw", "unsupported dtypes " + std::string(name(x.dtype)) +
                                                ", " + std::string(name(scales.dtype)));
  if (x.sizes.empty() || x.sizes.back() != w.K)
    return kernelError("linear_q8ta_q8csw",
                       "input features do not match the weight's " + std::to_string(w.K));
  if (scales.numel() < w.N)
    return kernelError("linear_q8ta_q8csw",
                       "weight_scales have fewer than " + std::to_string(w.N) + " entries");
  DType outDType = intX ? DType::F32 : x.dtype;
  if (bias && (bias->dtype != outDType || bias->numel() < w.N))
    return kernelError("linear_q8ta_q8csw", "bias must be " + std::string(name(outDType)) +
                                                " with at least " + std::to_string(w.N) +
                                                " elements");
  int64_t M = x.numel() / std::max<int64_t>(w.K, 1);
  std::vector<int64_t> outSizes(x.sizes.begin(), x.sizes.end() - 1);
  outSizes.push_back(w.N);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, outSizes));
  float s = static_cast<float>(inputScale);
  Q8Push pc{i32(M), i32(w.N), i32(w.K), bias ? 1 : 0, s, 1.0f / s, i32(inputZeroPoint), 0.f, 0, 0};
  std::string variant =
      intX ? "linear_q8ta_q8csw_intx_" + shaderDType(scales.dtype)
           : "linear_q8ta_q8csw_" + shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
  GRAFT_CHECK_OK(checkPackedLoop(ctx, "linear_q8ta_q8csw", w.K, 4));
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), x.buffer.get(), w.words.get(),
                                 scales.buffer.get(), (bias ? bias : &x)->buffer.get()},
                                &pc, sizeof(pc),
                                uint64_t((M + kTileM - 1) / kTileM) * uint64_t(w.N)));
  return out;
}

Expected<DeviceTensor> q8taLinear(Context &ctx, const DeviceTensor &x, double inputScale,
                                  int64_t inputZeroPoint, const PackedQ8Weight &w,
                                  const DeviceTensor &scales, double outputScale,
                                  int64_t outputZeroPoint, const DeviceTensor *bias, bool relu) {
  if (x.dtype != DType::I8 || scales.dtype != DType::F32)
    return kernelError("q8ta_linear", "x must be i8 and weight_scales f32, got " +
                                          std::string(name(x.dtype)) + ", " +
                                          std::string(name(scales.dtype)));
  if (x.sizes.empty() || x.sizes.back() != w.K)
    return kernelError("q8ta_linear",
                       "input features do not match the weight's " + std::to_string(w.K));
  if (scales.numel() < w.N)
    return kernelError("q8ta_linear",
                       "weight_scales have fewer than " + std::to_string(w.N) + " entries");
  if (bias && (bias->dtype != DType::F32 || bias->numel() < w.N))
    return kernelError("q8ta_linear",
                       "bias must be f32 with at least " + std::to_string(w.N) + " elements");
  int64_t M = x.numel() / std::max<int64_t>(w.K, 1);
  std::vector<int64_t> outSizes(x.sizes.begin(), x.sizes.end() - 1);
  outSizes.push_back(w.N);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, DType::I8, outSizes));
  float s = static_cast<float>(inputScale);
  // quantize_per_tensor's inv_scale: 1.0 / scale in double, then f32.
  Q8Push pc{i32(M),
            i32(w.N),
            i32(w.K),
            bias ? 1 : 0,
            s,
            1.0f / s,
            i32(inputZeroPoint),
            static_cast<float>(1.0 / outputScale),
            i32(outputZeroPoint),
            relu ? 1 : 0};
  GRAFT_CHECK_OK(checkPackedLoop(ctx, "q8ta_linear", w.K, 4));
  GRAFT_CHECK_OK(ctx.dispatch1D("q8ta_linear_float",
                                {out.buffer.get(), x.buffer.get(), w.words.get(),
                                 scales.buffer.get(), (bias ? bias : &x)->buffer.get()},
                                &pc, sizeof(pc),
                                uint64_t((M + kTileM - 1) / kTileM) * uint64_t(w.N)));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

std::string sameFloatOperands(const Node &node, const BoundArgs &b,
                              std::initializer_list<const char *> names) {
  DType out = node.output()->proto().dtype;
  if (!isDeviceFloat(out))
    return "result dtype " + std::string(name(out)) + " is not f32/f16";
  for (const char *n : names) {
    const TensorProto *p = protoOf(b, n);
    if (p && p->dtype != out)
      return std::string("operand '") + n + "' is " + std::string(name(p->dtype)) +
             ", not the result's " + std::string(name(out));
  }
  return {};
}

/// matmul.glsl's loop iterations beyond K: up to 4 batch dims and the exit
/// passes of its two loops (the launcher counts the batch dims exactly).
constexpr int64_t kMatmulLoopExtra = 6;

Lowering matmulLowering(const char *lhs, const char *rhs) {
  Lowering l;
  l.kernel = "matmul";
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(sameFloatOperands(node, b, {lhs, rhs}));
    const TensorProto *x = protoOf(b, lhs), *y = protoOf(b, rhs);
    if (!x || !y)
      return "operands are not tensors";
    if (std::max(x->rank(), y->rank()) > 6)
      return "more than 4 batch dims";
    return loopDimReason(b, dev, lhs, -1, kMatmulLoopExtra);
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor(lhs));
    GRAFT_TRY(DeviceTensor y, a.tensor(rhs));
    bool xVec = x.sizes.size() == 1, yVec = y.sizes.size() == 1;
    if (xVec) {
      GRAFT_TRY(x, reshape(x, {1, x.sizes[0]}));
    }
    if (yVec) {
      GRAFT_TRY(y, reshape(y, {y.sizes[0], 1}));
    }
    GRAFT_TRY(DeviceTensor r, matmul(a.ctx(), x, y));
    std::vector<int64_t> sizes(r.sizes.begin(), r.sizes.end() - 2);
    if (!xVec)
      sizes.push_back(r.sizes[r.sizes.size() - 2]);
    if (!yVec)
      sizes.push_back(r.sizes.back());
    GRAFT_TRY(r, reshape(r, sizes));
    return one(std::move(r));
  };
  return l;
}

Lowering linearLowering() {
  Lowering l;
  l.kernel = "matmul";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(sameFloatOperands(node, b, {"input", "weight", "bias"}));
    const TensorProto *w = protoOf(b, "weight");
    const TensorProto *bias = protoOf(b, "bias");
    if (!w || w->rank() != 2)
      return "weight must be 2-D";
    if (bias && bias->rank() != 1)
      return "bias must be 1-D";
    return loopDimReason(b, dev, "input", -1, kMatmulLoopExtra);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(DeviceTensor w, a.tensor("weight"));
    GRAFT_TRY(auto bias, a.optionalTensor("bias"));
    return one(linear(a.ctx(), x, w, bias ? &*bias : nullptr));
  };
  return l;
}

Lowering addmmLowering() {
  Lowering l;
  l.kernel = "matmul";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(sameFloatOperands(node, b, {"self", "mat1", "mat2"}));
    for (const char *n : {"alpha", "beta"}) {
      const Argument *x = b.find(n);
      if (x && !x->isNone() && x->number() != 1.0)
        return std::string(n) + " != 1";
    }
    const TensorProto *bias = protoOf(b, "self");
    const TensorProto *m2 = protoOf(b, "mat2");
    if (!bias || !m2 || m2->rank() != 2)
      return "expects 2-D mat2";
    bool rowBias = bias->rank() == 1 || (bias->rank() == 2 && bias->shape[0] == Dim(1));
    if (!rowBias || bias->shape.back() != m2->shape[1])
      return "bias must be [N] or [1, N]";
    return loopDimReason(b, dev, "mat1", -1, kMatmulLoopExtra);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor bias, a.tensor("self"));
    GRAFT_TRY(DeviceTensor m1, a.tensor("mat1"));
    GRAFT_TRY(DeviceTensor m2, a.tensor("mat2"));
    if (m1.sizes.size() != 2 || m2.sizes.size() != 2 || m1.sizes[1] != m2.sizes[0])
      return a.error("addmm expects [M, K] @ [K, N]");
    // linear() reads the weight as [N, K]: transpose mat2 into that layout.
    GRAFT_TRY(DeviceTensor wt,
              gather(a.ctx(), m2, {m2.sizes[1], m2.sizes[0]}, {1, m2.sizes[1]}, 0));
    GRAFT_TRY(DeviceTensor b1, reshape(bias, {bias.numel()}));
    return one(linear(a.ctx(), m1, wt, &b1));
  };
  return l;
}

/// Why x's known last dim is not a multiple of 4, which the packed-weight
/// linears with a free input width (q4gsw, dq8ca_q4gsw, q8ta) all require.
std::string inChannelsReason(const TensorProto &x) {
  auto k = x.shape.empty() ? std::nullopt : x.shape.back().value();
  if (k && *k % 4 != 0)
    return "in_channels " + std::to_string(*k) + " is not a multiple of 4";
  return {};
}

/// The linears whose weight is a constant packed once at load time share
/// their outline: the check requires the constant `weight` and a K within
/// the device's loop limit before asking `checkRest`; the run reads `input`,
/// the weight packed by `pack` (q4 or q8 layout) and `scales`, then hands
/// them to `apply`, which reads whatever else its op takes and launches the
/// kernel. Each lowering states only that. `valuesPerWord`: the bit-exact
/// kernels (linear_q4gsw.glsl, linear_q8csw.glsl) loop over K one packed
/// 32-bit word at a time, 8 int4 or 4 int8 values (their inner loops are
/// unrolled), plus the loop's exit pass; the fast kernels run fewer.
template <typename Check, typename Pack, typename Apply>
Lowering packedWeightLowering(const char *kernel, const char *input, const char *weight,
                              const char *scales, int64_t valuesPerWord, Check checkRest, Pack pack,
                              Apply apply) {
  Lowering l;
  l.kernel = kernel;
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(requireConstant(node, b, weight));
    GRAFT_VK_REASON(loopDimReason(b, dev, input, -1, 1, valuesPerWord));
    return checkRest(node, b);
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor(input));
    GRAFT_TRY(auto w, pack(a.state(), a.value(weight)));
    GRAFT_TRY(DeviceTensor s, a.tensor(scales));
    return apply(a, x, w, s);
  };
  return l;
}

/// The packings: int4 nibbles in the low-nibble-first order of the et_vk
/// q4gsw ops or the high-nibble-first order of linear_qcs4w, and int8 words.
auto q4Packing(bool lowNibbleFirst) {
  return [=](GraphExecutor::State &s, const Value *v) { return s.packedQ4(v, lowNibbleFirst); };
}
Expected<PackedQ8Weight> q8Packing(GraphExecutor::State &s, const Value *v) {
  return s.packedQ8(v);
}

Lowering q4Lowering(const char *kernel, bool dq8ca) {
  const char *input = dq8ca ? "input" : "self";
  return packedWeightLowering(
      kernel, input, "weights", "weight_scales", 8,
      [=](const Node &node, const BoundArgs &b) -> std::string {
        if (!isFloatOfResultDType(node, b, input))
          return "input must be f32/f16 of the result's dtype";
        const TensorProto *xp = protoOf(b, input);
        GRAFT_VK_REASON(inChannelsReason(*xp));
        const TensorProto *bias = protoOf(b, "bias");
        if (bias && bias->dtype != xp->dtype)
          return "bias dtype differs from the input's";
        return dq8ca ? perTokenScalesReason(b) : std::string();
      },
      q4Packing(true),
      [=](NodeArgs &a, const DeviceTensor &x, const PackedQ4Weight &w,
          const DeviceTensor &scales) -> Results {
        GRAFT_TRY(auto bias, a.optionalTensor("bias"));
        int64_t gs = a.integer("group_size").value_or(0);
        if (dq8ca) {
          GRAFT_TRY(DeviceTensor is, a.tensor("input_scales"));
          GRAFT_TRY(DeviceTensor iz, a.tensor("input_zp"));
          GRAFT_TRY(DeviceTensor sums, a.tensor("weight_sums"));
          return one(
              linearDq8caQ4gsw(a.ctx(), x, is, iz, w, sums, scales, gs, bias ? &*bias : nullptr));
        }
        return one(linearQ4gsw(a.ctx(), x, w, scales, gs, bias ? &*bias : nullptr));
      });
}

Lowering qcs4wLowering() {
  return packedWeightLowering(
      "linear_qcs4w", "self", "weight", "scales", 8,
      [](const Node &node, const BoundArgs &b) -> std::string {
        if (!isFloatOfResultDType(node, b, "self"))
          return "input must be f32/f16 of the result's dtype";
        return {};
      },
      q4Packing(false),
      [](NodeArgs &a, const DeviceTensor &x, const PackedQ4Weight &w, const DeviceTensor &scales)
          -> Results { return one(linearQcs4w(a.ctx(), x, w, scales)); });
}

Lowering int8packLowering() {
  return packedWeightLowering(
      "weight_int8pack_mm", "self", "mat2", "scales", 4,
      [](const Node &, const BoundArgs &b) -> std::string {
        const TensorProto *xp = protoOf(b, "self");
        if (!xp || !isDeviceFloat(xp->dtype))
          return "self must be f32/f16";
        return {};
      },
      q8Packing,
      [](NodeArgs &a, const DeviceTensor &x, const PackedQ8Weight &w, const DeviceTensor &scales)
          -> Results { return one(weightInt8PackMm(a.ctx(), x, w, scales)); });
}

Lowering q8taLowering() {
  return packedWeightLowering(
      "linear_q8ta_q8csw", "x", "weights", "weight_scales", 4,
      [](const Node &, const BoundArgs &b) -> std::string {
        const TensorProto *xp = protoOf(b, "x");
        if (!xp)
          return "x is not a tensor";
        if (!isDeviceFloat(xp->dtype) && deviceElem(xp->dtype) != DeviceElem::I32)
          return "x dtype " + std::string(name(xp->dtype)) + " is unsupported";
        return inChannelsReason(*xp);
      },
      q8Packing,
      [](NodeArgs &a, const DeviceTensor &x, const PackedQ8Weight &w,
         const DeviceTensor &scales) -> Results {
        GRAFT_TRY(auto bias, a.optionalTensor("bias"));
        auto s = a.number("input_scale");
        auto zp = a.integer("input_zero_point");
        if (!s || !zp)
          return a.error("input_scale and input_zero_point must be numbers");
        return one(linearQ8taQ8csw(a.ctx(), x, *s, *zp, w, scales, bias ? &*bias : nullptr));
      });
}

/// q8ta_linear and q8ta_linear_gemv share one kernel: the numbers are the
/// same, and linear_q8csw.glsl's one-thread-per-(row tile, n) layout serves
/// a single row as well (upstream's separate gemv shader is a speed choice).
Lowering q8taLinearLowering(const char *kernel) {
  return packedWeightLowering(
      kernel, "x", "weights", "weight_scales", 4,
      [](const Node &, const BoundArgs &b) -> std::string {
        const TensorProto *xp = protoOf(b, "x");
        if (!xp || xp->dtype != DType::I8)
          return "x must be an i8 tensor";
        const TensorProto *sp = protoOf(b, "weight_scales");
        if (!sp || sp->dtype != DType::F32)
          return "weight_scales must be f32";
        const TensorProto *bp = protoOf(b, "bias");
        if (bp && bp->dtype != DType::F32)
          return "bias must be f32";
        return inChannelsReason(*xp);
      },
      q8Packing,
      [](NodeArgs &a, const DeviceTensor &x, const PackedQ8Weight &w,
         const DeviceTensor &scales) -> Results {
        GRAFT_TRY(auto bias, a.optionalTensor("bias"));
        auto is = a.number("input_scale");
        auto izp = a.integer("input_zero_point");
        auto os = a.number("output_scale");
        auto ozp = a.integer("output_zero_point");
        if (!is || !izp || !os || !ozp)
          return a.error("the input and output scales and zero points must be numbers");
        // Shape inference admits only "none" and "relu" (the schema's default
        // is "none").
        const Argument &act = a.arg("activation");
        bool relu = act.isString() && act.string() == "relu";
        return one(
            q8taLinear(a.ctx(), x, *is, *izp, w, scales, *os, *ozp, bias ? &*bias : nullptr, relu));
      });
}

} // namespace

void addLinearLowerings(LoweringTable &m) {
  m["aten.linear.default"] = linearLowering();
  m["aten.mm.default"] = matmulLowering("self", "mat2");
  m["aten.bmm.default"] = matmulLowering("self", "mat2");
  m["aten.matmul.default"] = matmulLowering("self", "other");
  m["aten.addmm.default"] = addmmLowering();
  m["aten._weight_int8pack_mm.default"] = int8packLowering();
  m["et_vk.linear_q4gsw.default"] = q4Lowering("linear_q4gsw", false);
  m["et_vk.linear_dq8ca_q4gsw.default"] = q4Lowering("linear_dq8ca_q4gsw", true);
  m["et_vk.linear_qcs4w.default"] = qcs4wLowering();
  m["et_vk.linear_q8ta_q8csw.default"] = q8taLowering();
  m["et_vk.q8ta_linear.default"] = q8taLinearLowering("q8ta_linear");
  m["et_vk.q8ta_linear_gemv.default"] = q8taLinearLowering("q8ta_linear_gemv");
}

} // namespace graft::vk
