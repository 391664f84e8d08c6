//===- KernelCommon.h - What the kernel launchers share -------*- C++ -*-===//
//
// Private to backends/vulkan/ops: the error spelling, size text, int32 check,
// stride arithmetic and device-class decisions the launchers of every op
// family (ops/<family>/<Family>.cpp) need, kept once instead of per file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Shape.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"
#include "graft/vulkan/Kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace graft::vk {

/// The most dims the strided kernels (copy, binary) index.
constexpr int kMaxRank = 8;

inline int64_t product(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

/// The float dtypes the device kernels take (f32, f16).
inline bool isDeviceFloat(DType d) {
  return d == DType::F32 || d == DType::F16;
}

/// A push-constant member (sizes were checked by checkInt32).
inline int32_t i32(int64_t v) {
  return static_cast<int32_t>(v);
}

inline std::string_view envOr(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}

/// Whether the kernels are chosen for a CPU driver (lavapipe) rather than a
/// GPU. `override` ("cpu" or "gpu", else ignored) forces the class: tests
/// run the GPU kernels on lavapipe with GRAFT_VK_KERNELS=gpu.
inline bool cpuKernels(const Context &ctx, std::string_view override) {
  return override == "cpu" ? true : override == "gpu" ? false : ctx.info().type == "cpu";
}

/// Whether the row kernels (rms_norm, choose_qparams_affine) run a workgroup
/// per row (the `_coop` variants) rather than an invocation per row: on GPUs,
/// where one invocation walking a 2048-long row serially costs hundreds of
/// microseconds. CPU drivers keep an invocation per row (llvmpipe runs a
/// workgroup's invocations as SIMD lanes of one thread, so a per-row
/// workgroup adds barriers and no parallelism).
inline bool cooperativeRows(const Context &ctx, int64_t rows) {
  return !cpuKernels(ctx, envOr("GRAFT_VK_KERNELS")) && rows > 0 &&
         rows <= int64_t(ctx.info().maxComputeWorkGroupCount[0]);
}

/// Whether the vec4 elementwise kernels move f32 vec4s as two 64-bit words
/// (the `vec4w` variants): on CPU drivers each loaded or stored component
/// costs a scalar access per invocation, so this halves them.
inline bool wideVec4(const Context &ctx, DType dtype) {
  return dtype == DType::F32 && ctx.info().shaderInt64 && ctx.info().type == "cpu";
}

/// Whether a CPU-driver kernel reads a buffer of `bytes` through a storage
/// texel buffer (a `rgba32ui` uimageBuffer binding; the `vec4t` / `_texel`
/// variants): llvmpipe loads a texel per lane through its image path, a
/// storage-buffer component per lane in a scalar loop (2-3x the CPU time for
/// a GEMV's weights, docs/benchmarks.md). Needs the device's support and a
/// buffer within its maxTexelBufferElements, else the kernel falls back to
/// its storage-buffer variant.
inline bool texelReads(const Context &ctx, std::size_t bytes) {
  const DeviceInfo &d = ctx.info();
  return d.type == "cpu" && d.shaderInt64 && d.storageTexelBuffers &&
         (bytes + 15) / 16 <= d.maxTexelBufferElements;
}

/// How an elementwise kernel (elementwise/unary.glsl and binary.glsl,
/// swiglu/swiglu.glsl) covers its values: the variant infix and the values
/// per invocation. Scalar: one; vec4: four (the scalar variant's per-element
/// formula); on CPU drivers 32, the shaders' PER (four 32-byte words per
/// operand): vec4t reading the inputs as storage texels where texelReads
/// allows for the largest of them (`inputBytes`), vec4w as storage-buffer
/// words otherwise. Every form computes the same values.
struct ElementwiseForm {
  const char *infix;
  uint64_t perInvocation;
};

inline ElementwiseForm elementwiseForm(const Context &ctx, DType dtype, bool vec4,
                                       std::size_t inputBytes) {
  if (!vec4)
    return {"_", 1};
  if (!wideVec4(ctx, dtype))
    return {"_vec4_", 4};
  return texelReads(ctx, inputBytes) ? ElementwiseForm{"_vec4t_", 32}
                                     : ElementwiseForm{"_vec4w_", 32};
}

/// The push constants of the two-input elementwise shaders (binary.glsl and
/// swiglu.glsl, one layout in elementwise/elementwise_ab.glslh): out (of
/// `sizes`) = f(a, b) with a and b read through broadcast strides, or b the
/// scalar `scalar` (bIsScalar, binary only); alpha is add/sub's.
struct TwoInputPush {
  int32_t rank, numel, bIsScalar, contiguous;
  float alpha, scalar;
  int32_t sizes[kMaxRank], aStrides[kMaxRank], bStrides[kMaxRank];
};

/// TwoInputPush for an output of `outSizes` (rank <= kMaxRank, the caller's
/// check) read from operands of `aSizes` and `bSizes` (null: b is the
/// scalar), with alpha 1: rank, numel, sizes, broadcast strides and the
/// same-shape bits of `contiguous`. Elementwise.cpp.
TwoInputPush twoInputPush(const std::vector<int64_t> &outSizes, const std::vector<int64_t> &aSizes,
                          const std::vector<int64_t> *bSizes);

/// "[2, 3]".
inline std::string sizesStr(const std::vector<int64_t> &sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

/// A user error of kernel `kernel` ("vulkan rms_norm: ...").
inline Diagnostic kernelError(const char *kernel, const std::string &message) {
  return Diagnostic::error(std::string("vulkan ") + kernel + ": " + message);
}

/// Element counts and indices are int32 in the shaders.
inline Status checkInt32(const char *kernel, int64_t n) {
  if (n > std::numeric_limits<int32_t>::max())
    return kernelError(kernel, "tensor of " + std::to_string(n) +
                                   " elements exceeds the kernels' int32 indexing");
  return okStatus();
}

/// Why a dispatch whose invocations each run up to `iterations` loop
/// iterations (every loop counts its iterations plus one: llvmpipe's counter
/// also counts the pass that leaves the loop) cannot run on `info`, or ""
/// when it can. The one place every kernel with size-dependent loops asks:
/// the lowerings' checks, so the partitioner keeps such nodes on the CPU,
/// and the launchers, for sizes only known at run time.
inline std::string loopLimitReason(const DeviceInfo &info, int64_t iterations) {
  if (info.maxLoopIterations == 0 || iterations <= int64_t(info.maxLoopIterations))
    return {};
  return "an invocation would run " + std::to_string(iterations) +
         " loop iterations, over the device's limit of " + std::to_string(info.maxLoopIterations) +
         " (llvmpipe ends longer loops silently)";
}

/// How many of `steps` loop iterations one dispatch may run per invocation
/// when a kernel splits them over dispatches (all where the device has no
/// limit): the limit less one exit pass for each of the kernel's `loops`.
inline int64_t stepsPerDispatch(const DeviceInfo &info, int64_t steps, int64_t loops) {
  if (info.maxLoopIterations == 0)
    return steps;
  return std::min(steps, int64_t(info.maxLoopIterations) - loops);
}

/// The dq8ca linears' activation (linear_dq8ca_q4gsw, linear_dq8ca_q8csw):
/// `xq` the per-token int8 values exactly as quantize_affine computes them
/// with the given scale (an f16 input with an f16 scale in f16, as torchao's
/// f16 chain does; other device dtypes as given; f64, not a device dtype, in
/// f32), `scalesF32` the scales in f32 for the kernels' epilogue.
struct PerTokenInt8 {
  DeviceTensor xq;
  DeviceTensor scalesF32;
};
/// One scale and one integer zero point per token of M rows (errors name
/// `kernel`). Defined in Linear.cpp.
Status checkPerTokenQParams(const char *kernel, int64_t M, const DeviceTensor &inputScales,
                            const DeviceTensor &inputZeroPoints);
/// Checks one scale and one integer zero point per token of x's M = numel / K
/// rows (errors name `kernel`) and quantizes x. Defined in Linear.cpp.
Expected<PerTokenInt8> quantizePerTokenInt8(Context &ctx, const char *kernel, const DeviceTensor &x,
                                            int64_t K, const DeviceTensor &inputScales,
                                            const DeviceTensor &inputZeroPoints);

/// loopLimitReason as kernel `kernel`'s error.
inline Status checkLoopIterations(const Context &ctx, const char *kernel, int64_t iterations) {
  std::string why = loopLimitReason(ctx.info(), iterations);
  if (!why.empty())
    return kernelError(kernel, why);
  return okStatus();
}

/// Strides of a contiguous tensor of `sizes` read as `outSizes`
/// (right-aligned; 0 on the dims it is broadcast along).
inline std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &sizes,
                                             const std::vector<int64_t> &outSizes) {
  std::vector<int64_t> st(outSizes.size(), 0);
  std::vector<int64_t> c = contiguousStrides(sizes);
  std::size_t off = outSizes.size() - sizes.size();
  for (std::size_t i = 0; i < sizes.size(); ++i)
    st[off + i] = sizes[i] == 1 && outSizes[off + i] != 1 ? 0 : c[i];
  return st;
}

/// The broadcast of `shapes` (numpy rules), or kernel `kernel`'s error
/// "shapes A, B and C do not broadcast".
inline Expected<std::vector<int64_t>>
broadcastSizes(const char *kernel, std::initializer_list<const std::vector<int64_t> *> shapes) {
  std::size_t r = 0;
  for (const std::vector<int64_t> *s : shapes)
    r = std::max(r, s->size());
  std::vector<int64_t> out(r, 1);
  for (const std::vector<int64_t> *t : shapes)
    for (std::size_t i = 0; i < t->size(); ++i) {
      int64_t s = (*t)[i];
      int64_t &o = out[r - t->size() + i];
      if (s != o && s != 1 && o != 1) {
        std::string list;
        std::size_t k = 0;
        for (const std::vector<int64_t> *u : shapes) {
          if (k > 0)
            list += k + 1 == shapes.size() ? " and " : ", ";
          list += sizesStr(*u);
          ++k;
        }
        return kernelError(kernel, "shapes " + list + " do not broadcast");
      }
      if (s != 1)
        o = s;
    }
  return out;
}

} // namespace graft::vk
