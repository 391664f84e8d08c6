//===- Kernels.cpp - Host-side launchers of the compute shaders -----------===//
//
// Each launcher validates its operands (user errors for bad shapes/dtypes),
// fills a push-constant struct whose layout mirrors the shader's std430
// block (all members 4 bytes), picks the variant by name
// (<template>_<params...>, see shaders/*.yaml) and records the dispatch.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

#include "KernelCommon.h"

#include "graft/support/FloatBits.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <string_view>

namespace graft::vk {

namespace {

constexpr int kMaxRank = 8;

int64_t product(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

bool isFloatDevice(DType d) {
  return d == DType::F32 || d == DType::F16;
}

int32_t i32(int64_t v) {
  return static_cast<int32_t>(v);
}

} // namespace

int64_t DeviceTensor::numel() const {
  return product(sizes);
}

std::optional<DeviceElem> deviceElem(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return DeviceElem::F32;
  case DType::F16:
    return DeviceElem::F16;
  case DType::Bool:
  case DType::U8:
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::U16:
    return DeviceElem::I32;
  default:
    return std::nullopt;
  }
}

std::size_t deviceElemSize(DeviceElem elem) {
  return elem == DeviceElem::F16 ? 2 : 4;
}

std::string shaderDType(DType dtype) {
  auto e = deviceElem(dtype);
  if (!e)
    return "unsupported";
  switch (*e) {
  case DeviceElem::F32:
    return "float";
  case DeviceElem::F16:
    return "half";
  case DeviceElem::I32:
    return "int";
  }
  return "unsupported";
}

std::string unsupportedDTypeReason(const DeviceInfo &device, DType dtype) {
  if (!deviceElem(dtype))
    return "dtype " + std::string(name(dtype)) + " has no Vulkan representation";
  if (dtype == DType::F16 && !device.storageBuffer16BitAccess)
    return "the device lacks storageBuffer16BitAccess for f16 tensors";
  return {};
}

Expected<DeviceTensor> allocateTensor(Context &ctx, DType dtype, std::vector<int64_t> sizes) {
  std::string why = unsupportedDTypeReason(ctx, dtype);
  if (!why.empty())
    return Diagnostic::error("vulkan: " + why);
  for (int64_t s : sizes)
    if (s < 0)
      return Diagnostic::error("vulkan: negative size in " + sizesStr(sizes));
  int64_t n = product(sizes);
  GRAFT_CHECK_OK(checkInt32("allocate", n));
  DeviceTensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  GRAFT_TRY(t.buffer,
            ctx.allocate(static_cast<std::size_t>(n) * deviceElemSize(*deviceElem(dtype))));
  return t;
}

Expected<DeviceTensor> uploadTensor(Context &ctx, const Tensor &tensor) {
  if (!tensor.defined())
    return Diagnostic::error("vulkan: cannot upload an undefined tensor");
  GRAFT_TRY(DeviceTensor t, allocateTensor(ctx, tensor.dtype(), tensor.sizes()));
  Tensor c = tensor.contiguous();
  int64_t n = c.numel();
  DeviceElem e = *deviceElem(tensor.dtype());
  if (e != DeviceElem::I32) {
    GRAFT_CHECK_OK(ctx.upload(*t.buffer, c.rawData(), c.nbytes()));
    return t;
  }
  std::vector<int32_t> words(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = c.getInt(i);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return Diagnostic::error("vulkan: value " + std::to_string(v) + " of a " +
                               std::string(name(tensor.dtype())) +
                               " tensor does not fit the device's int32 representation");
    words[static_cast<std::size_t>(i)] = static_cast<int32_t>(v);
  }
  GRAFT_CHECK_OK(ctx.upload(*t.buffer, words.data(), words.size() * 4));
  return t;
}

Expected<Tensor> downloadTensor(Context &ctx, const DeviceTensor &tensor) {
  if (!tensor.defined())
    return Diagnostic::internal("vulkan: download of an undefined device tensor");
  Tensor out = Tensor::empty(tensor.dtype, tensor.sizes);
  int64_t n = tensor.numel();
  DeviceElem e = *deviceElem(tensor.dtype);
  if (e != DeviceElem::I32) {
    GRAFT_CHECK_OK(ctx.download(*tensor.buffer, out.mutableRawData(), out.nbytes()));
    return out;
  }
  std::vector<int32_t> words(static_cast<std::size_t>(n));
  GRAFT_CHECK_OK(ctx.download(*tensor.buffer, words.data(), words.size() * 4));
  for (int64_t i = 0; i < n; ++i)
    out.setInt(i, words[static_cast<std::size_t>(i)]);
  return out;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

const char *name(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "add";
  case BinaryKind::Sub:
    return "sub";
  case BinaryKind::Mul:
    return "mul";
  case BinaryKind::Div:
    return "div";
  case BinaryKind::Maximum:
    return "maximum";
  case BinaryKind::Minimum:
    return "minimum";
  case BinaryKind::Pow:
    return "pow";
  }
  return "?";
}

const char *name(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Neg:
    return "neg";
  case UnaryKind::Abs:
    return "abs";
  case UnaryKind::Relu:
    return "relu";
  case UnaryKind::Sigmoid:
    return "sigmoid";
  case UnaryKind::Silu:
    return "silu";
  case UnaryKind::Gelu:
    return "gelu";
  case UnaryKind::GeluTanh:
    return "gelu_tanh";
  case UnaryKind::Rsqrt:
    return "rsqrt";
  case UnaryKind::Sqrt:
    return "sqrt";
  case UnaryKind::Exp:
    return "exp";
  case UnaryKind::Reciprocal:
    return "reciprocal";
  }
  return "?";
}

namespace {

/// Whether the kernels are chosen for a CPU driver (lavapipe) rather than a
/// GPU. `override` ("cpu" or "gpu", else ignored) forces the class: tests
/// run the GPU kernels on lavapipe with GRAFT_VK_KERNELS=gpu.
bool cpuKernels(const Context &ctx, std::string_view override) {
  return override == "cpu" ? true : override == "gpu" ? false : ctx.info().type == "cpu";
}

std::string_view envOr(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string_view(v) : std::string_view();
}

/// Whether the row kernels (rms_norm, choose_qparams_affine) run a workgroup
/// per row (the `_coop` variants) rather than an invocation per row: on GPUs,
/// where one invocation walking a 2048-long row serially costs hundreds of
/// microseconds. CPU drivers keep an invocation per row (llvmpipe runs a
/// workgroup's invocations as SIMD lanes of one thread, so a per-row
/// workgroup adds barriers and no parallelism).
bool cooperativeRows(const Context &ctx, int64_t rows) {
  return !cpuKernels(ctx, envOr("GRAFT_VK_KERNELS")) && rows > 0 &&
         rows <= int64_t(ctx.info().maxComputeWorkGroupCount[0]);
}

/// Whether the vec4 elementwise kernels move f32 vec4s as two 64-bit words
/// (the `vec4w` variants): on CPU drivers each loaded or stored component
/// costs a scalar access per invocation, so this halves them.
bool wideVec4(const Context &ctx, DType dtype) {
  return dtype == DType::F32 && ctx.info().shaderInt64 && ctx.info().type == "cpu";
}

struct BinaryPush {
  int32_t rank, numel, bIsScalar, contiguous;
  float alpha, scalar;
  int32_t sizes[kMaxRank], aStrides[kMaxRank], bStrides[kMaxRank];
};

Status checkBinaryDType(BinaryKind op, DType d) {
  if (isFloatDevice(d))
    return okStatus();
  if (deviceElem(d) == DeviceElem::I32 && d != DType::Bool &&
      (op == BinaryKind::Add || op == BinaryKind::Sub || op == BinaryKind::Mul))
    return okStatus();
  return kernelError(name(op), "unsupported dtype " + std::string(name(d)));
}

Expected<DeviceTensor> binaryImpl(Context &ctx, BinaryKind op, const DeviceTensor &a,
                                  const DeviceTensor *b, double scalar, double alpha) {
  GRAFT_CHECK_OK(checkBinaryDType(op, a.dtype));
  std::vector<int64_t> outSizes = a.sizes;
  if (b) {
    if (b->dtype != a.dtype)
      return kernelError(name(op), "operands must have one dtype, got " +
                                       std::string(name(a.dtype)) + " and " +
                                       std::string(name(b->dtype)));
    GRAFT_TRY(outSizes, broadcastSizes(name(op), {&a.sizes, &b->sizes}));
  }
  if (outSizes.size() > kMaxRank)
    return kernelError(name(op), "rank " + std::to_string(outSizes.size()) + " exceeds 8");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, outSizes));
  BinaryPush pc{};
  pc.rank = i32(static_cast<int64_t>(outSizes.size()));
  pc.numel = i32(out.numel());
  pc.bIsScalar = b ? 0 : 1;
  // Operands already of the output's shape need no index decomposition.
  pc.contiguous = (a.sizes == outSizes ? 1 : 0) | (!b || b->sizes == outSizes ? 2 : 0);
  pc.alpha = static_cast<float>(alpha);
  pc.scalar = static_cast<float>(scalar);
  std::vector<int64_t> sa = broadcastStrides(a.sizes, outSizes);
  std::vector<int64_t> sb = b ? broadcastStrides(b->sizes, outSizes) : sa;
  for (std::size_t i = 0; i < outSizes.size(); ++i) {
    pc.sizes[i] = i32(outSizes[i]);
    pc.aStrides[i] = i32(sa[i]);
    pc.bStrides[i] = i32(sb[i]);
  }
  // Same-shape float operands take the vec4 variant (4 elements per
  // invocation, bit-exact to the scalar one); broadcasting needs the index
  // decomposition per element.
  bool vec4 = !ctx.exactKernels() && isFloatDevice(a.dtype) && pc.contiguous == 3;
  std::string variant = std::string("binary_") + name(op) +
                        (vec4 ? (wideVec4(ctx, a.dtype) ? "_vec4w_" : "_vec4_") : "_") +
                        shaderDType(a.dtype);
  uint64_t n = static_cast<uint64_t>(out.numel());
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), a.buffer.get(), (b ? b : &a)->buffer.get()}, &pc,
                                sizeof(pc), vec4 ? (n + 3) / 4 : n));
  return out;
}

} // namespace

Expected<DeviceTensor> binary(Context &ctx, BinaryKind op, const DeviceTensor &a,
                              const DeviceTensor &b, double alpha) {
  return binaryImpl(ctx, op, a, &b, 0.0, alpha);
}

Expected<DeviceTensor> binaryScalar(Context &ctx, BinaryKind op, const DeviceTensor &a,
                                    double scalar, double alpha) {
  return binaryImpl(ctx, op, a, nullptr, scalar, alpha);
}

namespace {
/// unary.glsl's push constants (lo/hi are clamp's bounds).
struct UnaryPush {
  int32_t numel;
  float lo, hi;
};

Expected<DeviceTensor> unaryImpl(Context &ctx, const char *op, const DeviceTensor &a, float lo,
                                 float hi) {
  if (!isFloatDevice(a.dtype))
    return kernelError(op, "unsupported dtype " + std::string(name(a.dtype)));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, a.sizes));
  UnaryPush pc{i32(a.numel()), lo, hi};
  // The vec4 variant: 4 elements per invocation, bit-exact to the scalar
  // one (which exactKernels keeps, as the kernel the bit-exactness tests and
  // benchmarks compare with).
  bool vec4 = !ctx.exactKernels();
  std::string variant = std::string("unary_") + op +
                        (vec4 ? (wideVec4(ctx, a.dtype) ? "_vec4w_" : "_vec4_") : "_") +
                        shaderDType(a.dtype);
  uint64_t n = static_cast<uint64_t>(a.numel());
  GRAFT_CHECK_OK(ctx.dispatch1D(variant, {out.buffer.get(), a.buffer.get()}, &pc, sizeof(pc),
                                vec4 ? (n + 3) / 4 : n));
  return out;
}
} // namespace

Expected<DeviceTensor> unary(Context &ctx, UnaryKind op, const DeviceTensor &a) {
  return unaryImpl(ctx, name(op), a, 0.0f, 0.0f);
}

Expected<DeviceTensor> clampScalar(Context &ctx, const DeviceTensor &a, float lo, float hi) {
  return unaryImpl(ctx, "clamp", a, lo, hi);
}

Expected<DeviceTensor> where(Context &ctx, const DeviceTensor &cond, const DeviceTensor &a,
                             const DeviceTensor &b) {
  constexpr std::size_t kWhereMaxRank = 6;
  if (a.dtype != b.dtype)
    return kernelError("where", "operands must have one dtype, got " + std::string(name(a.dtype)) +
                                    " and " + std::string(name(b.dtype)));
  if (cond.dtype != DType::Bool && cond.dtype != DType::U8)
    return kernelError("where",
                       "condition must be bool or u8, got " + std::string(name(cond.dtype)));
  if (!deviceElem(a.dtype))
    return kernelError("where", "unsupported dtype " + std::string(name(a.dtype)));
  GRAFT_TRY(std::vector<int64_t> outSizes,
            broadcastSizes("where", {&cond.sizes, &a.sizes, &b.sizes}));
  const std::size_t r = outSizes.size();
  if (r > kWhereMaxRank)
    return kernelError("where", "rank " + std::to_string(r) + " exceeds 6");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, outSizes));
  struct {
    int32_t rank, numel;
    int32_t sizes[kWhereMaxRank], cStrides[kWhereMaxRank], aStrides[kWhereMaxRank],
        bStrides[kWhereMaxRank];
  } pc{};
  pc.rank = i32(static_cast<int64_t>(r));
  pc.numel = i32(out.numel());
  std::vector<int64_t> sc = broadcastStrides(cond.sizes, outSizes);
  std::vector<int64_t> sa = broadcastStrides(a.sizes, outSizes);
  std::vector<int64_t> sb = broadcastStrides(b.sizes, outSizes);
  for (std::size_t i = 0; i < r; ++i) {
    pc.sizes[i] = i32(outSizes[i]);
    pc.cStrides[i] = i32(sc[i]);
    pc.aStrides[i] = i32(sa[i]);
    pc.bStrides[i] = i32(sb[i]);
  }
  if (out.numel() == 0)
    return out;
  GRAFT_CHECK_OK(
      ctx.dispatch1D("where_" + shaderDType(a.dtype),
                     {out.buffer.get(), cond.buffer.get(), a.buffer.get(), b.buffer.get()}, &pc,
                     sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

//===----------------------------------------------------------------------===//
// Reductions, softmax, rms_norm
//===----------------------------------------------------------------------===//

namespace {
struct RowPush {
  int32_t rows, rowLen, extra;
  float eps;
};
} // namespace

Expected<DeviceTensor> reduceInner(Context &ctx, ReduceKind op, const DeviceTensor &a,
                                   int64_t numDims, bool keepdim) {
  static const char *names[] = {"sum", "mean", "amax", "amin"};
  const char *opName = names[static_cast<int>(op)];
  if (!isFloatDevice(a.dtype))
    return kernelError(opName, "unsupported dtype " + std::string(name(a.dtype)));
  if (numDims < 1 || numDims > static_cast<int64_t>(a.sizes.size()))
    return kernelError(opName, "cannot reduce " + std::to_string(numDims) + " dims of " +
                                   sizesStr(a.sizes));
  std::vector<int64_t> outSizes(a.sizes.begin(), a.sizes.end() - numDims);
  int64_t rowLen = product(std::vector<int64_t>(a.sizes.end() - numDims, a.sizes.end()));
  if (rowLen == 0)
    return kernelError(opName, "reduction over an empty dim");
  if (keepdim)
    outSizes.resize(a.sizes.size(), 1);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, a.dtype, outSizes));
  RowPush pc{i32(a.numel() / rowLen), i32(rowLen), 0, 0.f};
  std::string variant = std::string("reduce_") + opName + "_" + shaderDType(a.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant, {out.buffer.get(), a.buffer.get()}, &pc, sizeof(pc),
                                static_cast<uint64_t>(pc.rows)));
  return out;
}

Expected<DeviceTensor> softmaxLast(Context &ctx, const DeviceTensor &a, DType outDType, bool safe) {
  if (!isFloatDevice(a.dtype) || !isFloatDevice(outDType))
    return kernelError("softmax", "unsupported dtype " + std::string(name(a.dtype)) + " -> " +
                                      std::string(name(outDType)));
  if (a.sizes.empty() || a.sizes.back() == 0)
    return kernelError("softmax", "needs a non-empty last dim, got " + sizesStr(a.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, a.sizes));
  int64_t rowLen = a.sizes.back();
  RowPush pc{i32(a.numel() / rowLen), i32(rowLen), safe ? 1 : 0, 0.f};
  std::string variant = "softmax_" + shaderDType(a.dtype) + "_" + shaderDType(outDType);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant, {out.buffer.get(), a.buffer.get()}, &pc, sizeof(pc),
                                static_cast<uint64_t>(pc.rows)));
  return out;
}

Expected<DeviceTensor> rmsNorm(Context &ctx, const DeviceTensor &x, const DeviceTensor &weight,
                               double eps) {
  if (!isFloatDevice(x.dtype) || !isFloatDevice(weight.dtype))
    return kernelError("rms_norm", "unsupported dtypes " + std::string(name(x.dtype)) + ", " +
                                       std::string(name(weight.dtype)));
  if (x.sizes.empty() || x.sizes.back() == 0 || weight.numel() != x.sizes.back())
    return kernelError("rms_norm", "weight " + sizesStr(weight.sizes) +
                                       " does not match the last dim of " + sizesStr(x.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  int64_t rowLen = x.sizes.back();
  struct {
    int32_t rows, rowLen;
    float eps;
  } pc{i32(x.numel() / rowLen), i32(rowLen), static_cast<float>(eps)};
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(weight.dtype);
  std::vector<Buffer *> bindings = {out.buffer.get(), x.buffer.get(), weight.buffer.get()};
  // The cooperative sum reorders the reduction: fast policy only.
  if (!ctx.exactKernels() && cooperativeRows(ctx, pc.rows)) {
    GRAFT_CHECK_OK(ctx.dispatch("rms_norm_coop_" + dtypes, bindings, &pc, sizeof(pc),
                                {static_cast<uint32_t>(pc.rows), 1, 1}));
    return out;
  }
  GRAFT_CHECK_OK(ctx.dispatch1D("rms_norm_" + dtypes, bindings, &pc, sizeof(pc),
                                static_cast<uint64_t>(pc.rows)));
  return out;
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

namespace {

struct MatmulPush {
  int32_t M, N, K, batch, numBatchDims, hasBias;
  int32_t aStrideM, aStrideK, bStrideK, bStrideN;
  int32_t batchSizes[4], aBatchStrides[4], bBatchStrides[4];
};

Status dispatchMatmul(Context &ctx, const DeviceTensor &out, const DeviceTensor &a,
                      const DeviceTensor &b, const DeviceTensor *bias, MatmulPush &pc) {
  std::string variant = "matmul_" + shaderDType(a.dtype);
  uint64_t total = uint64_t(pc.batch) * uint64_t(pc.M) * uint64_t(pc.N);
  return ctx.dispatch1D(
      variant, {out.buffer.get(), a.buffer.get(), b.buffer.get(), (bias ? bias : &a)->buffer.get()},
      &pc, sizeof(pc), total);
}

} // namespace

Expected<DeviceTensor> matmul(Context &ctx, const DeviceTensor &a, const DeviceTensor &b) {
  if (!isFloatDevice(a.dtype) || a.dtype != b.dtype)
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
  if (!isFloatDevice(x.dtype) || x.dtype != w.dtype || (bias && bias->dtype != x.dtype))
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

//===----------------------------------------------------------------------===//
// Quantized linears
//===----------------------------------------------------------------------===//

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

struct Q4Push {
  int32_t M, N, K, groupSize, scaleStride, hasBias, sumsStride, rowVec4;
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
  uint32_t subgroupLanes;  ///< > 0: the variant reduces over this many subgroup lanes
  bool weightOnly = false; ///< no dq8ca variant (linear_q4gsw_lanes.glsl)
};

/// The GEMV (M = 1) tilings for GPUs. `gpu_gemv` reduces its 16-way K split in
/// shared memory and runs anywhere; the `_sg` ones split K 32 ways and reduce
/// with subgroupClusteredAdd, so they need subgroups of at least 32 lanes.
/// The `lanes` ones (linear_q4gsw_lanes.glsl, weight-only) split K in 8-value
/// chunks over adjacent lanes, so x and weight loads coalesce.
constexpr FastLinearTiling kGpuGemvTilings[] = {
    {"gpu_gemv", 4 * 2, 1, 0},
    {"gpu_gemv_sg", 2 * 2, 1, 32},
    {"gpu_gemv_sg_n4", 4 * 4, 1, 32},
    {"gpu_gemv_lanes", 2 * 4, 1, 0, true},
    {"gpu_gemv_lanes_sg", 2 * 4, 1, 32, true},
};

bool supports(const Context &ctx, const FastLinearTiling &t, bool dq8ca) {
  return (!t.weightOnly || !dq8ca) &&
         (t.subgroupLanes == 0 ||
          (ctx.info().subgroupClusteredAdd && ctx.info().subgroupSize >= t.subgroupLanes));
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
/// it (benchmarks sweep them).
FastLinearTiling fastLinearTiling(const Context &ctx, int64_t M, bool dq8ca) {
  const std::string_view force = envOr("GRAFT_VK_LINEAR_TILING");
  const bool cpu = cpuKernels(ctx, force.starts_with("gpu") ? "gpu"
                                   : force.empty()          ? envOr("GRAFT_VK_KERNELS")
                                                            : force);
  if (M == 1)
    for (const FastLinearTiling &t : kGpuGemvTilings)
      if (force == t.name && supports(ctx, t, dq8ca))
        return t;
  // CPU drivers charge per loaded component: with shaderInt64, 64-bit loads
  // halve the weight and x loads (the `_wide` variants).
  bool wide = ctx.info().shaderInt64 && !std::getenv("GRAFT_VK_NO_WIDE_LOADS");
  if (M == 1) {
    if (cpu)
      return FastLinearTiling{wide ? "cpu_gemv_wide" : "cpu_gemv", 8 * 32, 1, 0};
    // Measured on an H100 (docs/benchmarks.md, "Vulkan kernels on a GPU"):
    // lanes_sg is the fastest weight-only GEMV over the three benchmark
    // shapes, sg_n4 the fastest dq8ca one.
    return firstSupported(ctx, dq8ca,
                          {"gpu_gemv_lanes_sg", "gpu_gemv_sg_n4", "gpu_gemv_lanes", "gpu_gemv"});
  }
  // GEMM: a 4 x 16 tile per invocation. An invocation loads 4 rows of x and
  // 16 columns of weights per block; per output that is 16/16 + 3/4 loaded
  // components per x/weight pair, 26 % fewer than an 8 x 8 tile with the
  // same number of accumulators (measured 2-3x faster on lavapipe).
  return cpu ? FastLinearTiling{wide ? "cpu_gemm_wide" : "cpu_gemm", 8 * 16, 4, 0}
             : FastLinearTiling{"gpu_gemm", 4 * 4, 4, 0};
}

constexpr int64_t kTileM = 4;

Expected<DeviceTensor> q4Linear(Context &ctx, const char *kernel, const DeviceTensor &x,
                                const PackedQ4Weight &w, const DeviceTensor &scales,
                                int64_t groupSize, int64_t scaleStride, const DeviceTensor *bias,
                                const DeviceTensor *xq, const DeviceTensor *inScales,
                                const DeviceTensor *inZeros, const DeviceTensor *sums) {
  if (!isFloatDevice(x.dtype) || !isFloatDevice(scales.dtype))
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
            i32(w.rowWords / 4)};
  std::vector<Buffer *> bindings = {out.buffer.get(), (xq ? xq : &x)->buffer.get(), w.words.get(),
                                    scales.buffer.get(), (bias ? bias : &x)->buffer.get()};
  if (xq) {
    bindings.push_back(inScales->buffer.get());
    bindings.push_back(inZeros->buffer.get());
    bindings.push_back(sums->buffer.get());
  }
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
  std::string op = xq ? "linear_dq8ca_q4gsw_" : "linear_q4gsw_";
  if (M == 0 || w.N == 0)
    return out;
  // The fast kernels read whole 32-value blocks, one quantization group at a
  // time: K and the group size must be multiples of 32.
  FastLinearTiling tiling = fastLinearTiling(ctx, M, xq != nullptr);
  uint64_t groupsX = uint64_t((w.N + tiling.columnsPerGroup - 1) / tiling.columnsPerGroup);
  uint64_t groupsY = uint64_t((M + tiling.tileM - 1) / tiling.tileM);
  bool fast = !ctx.exactKernels() && K % 32 == 0 && groupSize % 32 == 0 && K <= w.K &&
              groupsX <= ctx.info().maxComputeWorkGroupCount[0] &&
              groupsY <= ctx.info().maxComputeWorkGroupCount[1];
  if (fast) {
    GRAFT_CHECK_OK(
        ctx.dispatch(op + "fast_" + tiling.name + "_" + dtypes, bindings, &pc, sizeof(pc),
                     {static_cast<uint32_t>(groupsX), static_cast<uint32_t>(groupsY), 1}));
    return out;
  }
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
                  nullptr, nullptr, nullptr);
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
                  nullptr, nullptr, nullptr);
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
  int64_t M = K ? x.numel() / K : 0;
  if (inputScales.numel() != M || inputZeroPoints.numel() != M)
    return kernelError("linear_dq8ca_q4gsw",
                       "input_scales and input_zp need one entry per token (" + std::to_string(M) +
                           "), got " + sizesStr(inputScales.sizes) + " and " +
                           sizesStr(inputZeroPoints.sizes));
  if (deviceElem(inputZeroPoints.dtype) != DeviceElem::I32)
    return kernelError("linear_dq8ca_q4gsw", "input_zp must be an integer tensor");
  if (weightSums.sizes.size() != 2 || weightSums.sizes[0] != scales.sizes[0] ||
      weightSums.sizes[1] < w.N || deviceElem(weightSums.dtype) != DeviceElem::I32)
    return kernelError("linear_dq8ca_q4gsw",
                       "weight_sums must be integer [" + std::to_string(scales.sizes[0]) +
                           ", >= " + std::to_string(w.N) + "], got " + sizesStr(weightSums.sizes));
  DeviceTensor s32 = inputScales;
  if (s32.dtype != DType::F32) {
    GRAFT_TRY(s32, cast(ctx, inputScales, DType::F32));
  }
  // Per-token int8 activations, exactly as quantize_affine computes them.
  GRAFT_TRY(DeviceTensor xq, quantizeAffine(ctx, x, std::max<int64_t>(K, 1), s32, &inputZeroPoints,
                                            -128, 127, DType::I8));
  return q4Linear(ctx, "linear_dq8ca_q4gsw", x, w, scales, groupSize, scales.sizes[1], bias, &xq,
                  &s32, &inputZeroPoints, &weightSums);
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
};
} // namespace

Expected<DeviceTensor> weightInt8PackMm(Context &ctx, const DeviceTensor &x,
                                        const PackedQ8Weight &w, const DeviceTensor &scales) {
  if (!isFloatDevice(x.dtype) || !isFloatDevice(scales.dtype))
    return kernelError("_weight_int8pack_mm", "self and scales must be f32 or f16");
  if (x.sizes.size() != 2 || x.sizes[1] != w.K || scales.numel() != w.N)
    return kernelError("_weight_int8pack_mm",
                       "shapes do not match: self [M, K], mat2 [N, K], scales [N] expected, got " +
                           sizesStr(x.sizes) + ", [" + std::to_string(w.N) + ", " +
                           std::to_string(w.K) + "], " + sizesStr(scales.sizes));
  int64_t M = x.sizes[0];
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, {M, w.N}));
  Q8Push pc{i32(M), i32(w.N), i32(w.K), 0, 0.f, 0.f, 0};
  std::string variant =
      "weight_int8pack_mm_" + shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
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
  if ((!intX && !isFloatDevice(x.dtype)) || !isFloatDevice(scales.dtype))
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
  Q8Push pc{i32(M), i32(w.N), i32(w.K), bias ? 1 : 0, s, 1.0f / s, i32(inputZeroPoint)};
  std::string variant =
      intX ? "linear_q8ta_q8csw_intx_" + shaderDType(scales.dtype)
           : "linear_q8ta_q8csw_" + shaderDType(x.dtype) + "_" + shaderDType(scales.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), x.buffer.get(), w.words.get(),
                                 scales.buffer.get(), (bias ? bias : &x)->buffer.get()},
                                &pc, sizeof(pc),
                                uint64_t((M + kTileM - 1) / kTileM) * uint64_t(w.N)));
  return out;
}

//===----------------------------------------------------------------------===//
// Embeddings and RoPE
//===----------------------------------------------------------------------===//

Expected<DeviceTensor> embedding(Context &ctx, const DeviceTensor &weight,
                                 const DeviceTensor &indices) {
  if (weight.sizes.size() != 2)
    return kernelError("embedding", "weight must be 2-D, got " + sizesStr(weight.sizes));
  if (deviceElem(indices.dtype) != DeviceElem::I32 || indices.dtype == DType::Bool)
    return kernelError("embedding", "indices must be an integer tensor");
  int64_t V = weight.sizes[0], D = weight.sizes[1];
  std::vector<int64_t> outSizes = indices.sizes;
  outSizes.push_back(D);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, weight.dtype, outSizes));
  GRAFT_TRY(auto status, ctx.statusBuffer("vulkan embedding: an index is out of range for " +
                                          std::to_string(V) + " rows"));
  struct {
    int32_t numIndices, D, V;
  } pc{i32(indices.numel()), i32(D), i32(V)};
  GRAFT_CHECK_OK(
      ctx.dispatch1D("embedding_" + shaderDType(weight.dtype),
                     {out.buffer.get(), indices.buffer.get(), weight.buffer.get(), status.get()},
                     &pc, sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

Expected<RawBytes> uploadRawBytes(Context &ctx, const Tensor &tensor) {
  if (tensor.rank() != 2 || (tensor.dtype() != DType::U8 && tensor.dtype() != DType::I8))
    return kernelError("upload",
                       "expected a 2-D u8 tensor of packed bytes, got " + tensor.proto().str());
  Tensor c = tensor.contiguous();
  RawBytes r;
  r.rows = c.size(0);
  r.rowBytes = c.size(1);
  GRAFT_TRY(r.buffer, ctx.allocate(c.nbytes()));
  GRAFT_CHECK_OK(ctx.upload(*r.buffer, c.rawData(), c.nbytes()));
  return r;
}

Expected<DeviceTensor> embeddingQ4gsw(Context &ctx, const RawBytes &weight,
                                      const DeviceTensor &scales, int64_t groupSize,
                                      const DeviceTensor &indices, bool isLinearWeight) {
  if (!isFloatDevice(scales.dtype))
    return kernelError("embedding_q4gsw", "scales must be f32 or f16");
  if (deviceElem(indices.dtype) != DeviceElem::I32 || indices.dtype == DType::Bool)
    return kernelError("embedding_q4gsw", "indices must be an integer tensor");
  int64_t V = weight.rows, D = 2 * weight.rowBytes;
  int64_t groups = scales.sizes.size() > 1 ? scales.sizes[1] : 1;
  if (groupSize <= 0 || groups * groupSize != D)
    return kernelError("embedding_q4gsw", "group_size " + std::to_string(groupSize) + " times " +
                                              std::to_string(groups) +
                                              " groups does not cover the embedding dim " +
                                              std::to_string(D));
  int64_t stride;
  if (scales.sizes.size() > 1) {
    if (scales.sizes[0] != V)
      return kernelError("embedding_q4gsw", "weight_scales " + sizesStr(scales.sizes) +
                                                " do not have one row per embedding row");
    stride = groups;
  } else if (scales.numel() == 1) {
    stride = 0;
  } else if (scales.numel() == V) {
    stride = 1;
  } else {
    return kernelError("embedding_q4gsw",
                       "1-D weight_scales must have 1 or " + std::to_string(V) + " entries");
  }
  std::vector<int64_t> outSizes = indices.sizes;
  outSizes.push_back(D);
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, scales.dtype, outSizes));
  GRAFT_TRY(auto status, ctx.statusBuffer("vulkan embedding_q4gsw: an index is out of range for " +
                                          std::to_string(V) + " rows"));
  int32_t shift = -1;
  for (int32_t b = 0; b < 31; ++b)
    if ((int64_t(1) << b) == groupSize)
      shift = b;
  struct {
    int32_t numIndices, D, rowBytes, V, groupSize, scaleRowStride, groupShift;
  } pc{i32(indices.numel()), i32(D), i32(weight.rowBytes), i32(V), i32(groupSize),
       i32(stride),          shift};
  // The vectorized gather takes whole 32-value chunks of one group (bit-exact
  // like the per-element kernel, which handles the other shapes).
  bool fast = !ctx.exactKernels() && D % 32 == 0 && groupSize % 32 == 0;
  std::string variant = std::string(fast ? "embedding_q4gsw_fast" : "embedding_q4gsw") +
                        (isLinearWeight ? "_linear_weight_" : "_") + shaderDType(scales.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), indices.buffer.get(), weight.buffer.get(),
                                 scales.buffer.get(), status.get()},
                                &pc, sizeof(pc),
                                fast ? static_cast<uint64_t>(out.numel() / 32)
                                     : static_cast<uint64_t>(out.numel())));
  return out;
}

Expected<DeviceTensor> rotary(Context &ctx, const DeviceTensor &x, const DeviceTensor &freqsCos,
                              const DeviceTensor &freqsSin) {
  if (!isFloatDevice(x.dtype) || !isFloatDevice(freqsCos.dtype) || freqsCos.dtype != freqsSin.dtype)
    return kernelError("apply_rotary_emb", "x and freqs must be f32 or f16");
  if (x.sizes.size() < 2 || x.sizes.back() % 2 != 0)
    return kernelError("apply_rotary_emb",
                       "x needs at least 2 dims and an even last dim, got " + sizesStr(x.sizes));
  if (freqsCos.sizes != freqsSin.sizes)
    return kernelError("apply_rotary_emb", "freqs_cos and freqs_sin differ in shape");
  int64_t halfD = x.sizes.back() / 2;
  int64_t S = x.sizes[1];
  int64_t innerPairs = product(std::vector<int64_t>(x.sizes.begin() + 2, x.sizes.end())) / 2;
  int64_t heads = 0;
  const auto &f = freqsCos.sizes;
  if (f.size() == 2) {
    if (f[0] != S || f[1] != halfD)
      return kernelError("apply_rotary_emb", "freqs " + sizesStr(f) + " must be [" +
                                                 std::to_string(S) + ", " + std::to_string(halfD) +
                                                 "] for x " + sizesStr(x.sizes));
  } else if (f.size() == 3 && x.sizes.size() == 4) {
    if (f[0] != S || f[1] != x.sizes[2] || f[2] != halfD)
      return kernelError("apply_rotary_emb", "3-D freqs " + sizesStr(f) +
                                                 " must be [seq_len, n_heads, head_dim/2] of x " +
                                                 sizesStr(x.sizes));
    heads = f[1];
  } else {
    return kernelError("apply_rotary_emb",
                       "freqs must be [S, D/2], or [S, H, D/2] for a 4-D x; got " + sizesStr(f));
  }
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  struct {
    int32_t numPairs, S, innerPairs, halfD, freqsHeads;
  } pc{i32(x.numel() / 2), i32(S), i32(innerPairs), i32(halfD), i32(heads)};
  std::string variant = "rotary_" + shaderDType(x.dtype) + "_" + shaderDType(freqsCos.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(
      variant, {out.buffer.get(), x.buffer.get(), freqsCos.buffer.get(), freqsSin.buffer.get()},
      &pc, sizeof(pc), static_cast<uint64_t>(pc.numPairs)));
  return out;
}

//===----------------------------------------------------------------------===//
// Affine quantization
//===----------------------------------------------------------------------===//

std::optional<int64_t> contiguousGroupSize(const std::vector<int64_t> &blockSize,
                                           const std::vector<int64_t> &sizes) {
  if (blockSize.size() != sizes.size())
    return std::nullopt;
  std::vector<int64_t> block = blockSize;
  for (std::size_t i = 0; i < block.size(); ++i)
    if (block[i] < 0)
      block[i] = sizes[i];
  std::size_t first = block.size();
  for (std::size_t i = 0; i < block.size(); ++i)
    if (block[i] != 1) {
      first = i;
      break;
    }
  if (first == block.size())
    return 1;
  if (block[first] <= 0 || sizes[first] % block[first] != 0)
    return std::nullopt;
  for (std::size_t j = first + 1; j < block.size(); ++j)
    if (block[j] != sizes[j])
      return std::nullopt;
  return product(block);
}

namespace {
struct QuantPush {
  int32_t numel, groupSize, qmin, qmax, hasZero, mapping;
  float eps;
};
} // namespace

Expected<QParams> chooseQParamsAffine(Context &ctx, const DeviceTensor &x, int64_t groupSize,
                                      MappingType mapping, int64_t qmin, int64_t qmax, double eps,
                                      DType scaleDType, DType zeroPointDType,
                                      std::vector<int64_t> scaleSizes) {
  if (!isFloatDevice(x.dtype) || !isFloatDevice(scaleDType) ||
      deviceElem(zeroPointDType) != DeviceElem::I32)
    return kernelError("choose_qparams_affine", "unsupported dtypes");
  if (groupSize <= 0 || x.numel() % groupSize != 0 || product(scaleSizes) != x.numel() / groupSize)
    return kernelError("choose_qparams_affine", "blocks of " + std::to_string(groupSize) +
                                                    " do not tile " + sizesStr(x.sizes));
  QParams r;
  GRAFT_TRY(r.scale, allocateTensor(ctx, scaleDType, scaleSizes));
  GRAFT_TRY(r.zeroPoint, allocateTensor(ctx, zeroPointDType, scaleSizes));
  QuantPush pc{i32(x.numel()),
               i32(groupSize),
               i32(qmin),
               i32(qmax),
               1,
               static_cast<int32_t>(mapping),
               static_cast<float>(eps)};
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(scaleDType);
  std::vector<Buffer *> bindings = {r.scale.buffer.get(), r.zeroPoint.buffer.get(), x.buffer.get()};
  int64_t groups = x.numel() / groupSize;
  // Min and max are order-free: the cooperative variant is exact, both policies.
  if (cooperativeRows(ctx, groups)) {
    GRAFT_CHECK_OK(ctx.dispatch("choose_qparams_affine_coop_" + dtypes, bindings, &pc, sizeof(pc),
                                {static_cast<uint32_t>(groups), 1, 1}));
    return r;
  }
  GRAFT_CHECK_OK(ctx.dispatch1D("choose_qparams_affine_" + dtypes, bindings, &pc, sizeof(pc),
                                static_cast<uint64_t>(groups)));
  return r;
}

Expected<DeviceTensor> quantizeAffine(Context &ctx, const DeviceTensor &x, int64_t groupSize,
                                      const DeviceTensor &scale, const DeviceTensor *zeroPoint,
                                      int64_t qmin, int64_t qmax, DType outDType) {
  if (!isFloatDevice(x.dtype) || !isFloatDevice(scale.dtype) ||
      deviceElem(outDType) != DeviceElem::I32 ||
      (zeroPoint && deviceElem(zeroPoint->dtype) != DeviceElem::I32))
    return kernelError("quantize_affine", "unsupported dtypes");
  if (groupSize <= 0 || x.numel() % groupSize != 0 || scale.numel() != x.numel() / groupSize ||
      (zeroPoint && zeroPoint->numel() != scale.numel()))
    return kernelError("quantize_affine",
                       "scale " + sizesStr(scale.sizes) + " does not match blocks of " +
                           std::to_string(groupSize) + " of " + sizesStr(x.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, x.sizes));
  QuantPush pc{i32(x.numel()), i32(groupSize), i32(qmin), i32(qmax), zeroPoint ? 1 : 0, 0, 0.f};
  std::string variant = "quantize_affine_" + shaderDType(x.dtype) + "_" + shaderDType(scale.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), x.buffer.get(), scale.buffer.get(),
                                 (zeroPoint ? zeroPoint : &scale)->buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(x.numel())));
  return out;
}

Expected<DeviceTensor> dequantizeAffine(Context &ctx, const DeviceTensor &q, int64_t groupSize,
                                        const DeviceTensor &scale, const DeviceTensor *zeroPoint,
                                        DType outDType) {
  if (deviceElem(q.dtype) != DeviceElem::I32 || !isFloatDevice(scale.dtype) ||
      !isFloatDevice(outDType) || (zeroPoint && deviceElem(zeroPoint->dtype) != DeviceElem::I32))
    return kernelError("dequantize_affine", "unsupported dtypes");
  if (groupSize <= 0 || q.numel() % groupSize != 0 || scale.numel() != q.numel() / groupSize ||
      (zeroPoint && zeroPoint->numel() != scale.numel()))
    return kernelError("dequantize_affine",
                       "scale " + sizesStr(scale.sizes) + " does not match blocks of " +
                           std::to_string(groupSize) + " of " + sizesStr(q.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, q.sizes));
  QuantPush pc{i32(q.numel()), i32(groupSize), 0, 0, zeroPoint ? 1 : 0, 0, 0.f};
  std::string variant =
      "dequantize_affine_" + shaderDType(outDType) + "_" + shaderDType(scale.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(variant,
                                {out.buffer.get(), q.buffer.get(), scale.buffer.get(),
                                 (zeroPoint ? zeroPoint : &scale)->buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(q.numel())));
  return out;
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

namespace {

struct CopyPush {
  int32_t rank, numel, inOffset, outOffset;
  int32_t sizes[kMaxRank], inStrides[kMaxRank], outStrides[kMaxRank];
  int32_t intBits;
  int32_t contiguous;
};

int32_t intBitsOf(DType d) {
  switch (d) {
  case DType::Bool:
    return 0;
  case DType::I8:
    return 8;
  case DType::U8:
    return -8;
  case DType::I16:
    return 16;
  case DType::U16:
    return -16;
  default:
    return 32;
  }
}

Status copyInto(Context &ctx, const DeviceTensor &out, const DeviceTensor &src,
                const std::vector<int64_t> &sizes, const std::vector<int64_t> &inStrides,
                int64_t inOffset, const std::vector<int64_t> &outStrides, int64_t outOffset) {
  if (sizes.size() > kMaxRank)
    return kernelError("copy", "rank " + std::to_string(sizes.size()) + " exceeds 8");
  CopyPush pc{};
  pc.rank = i32(static_cast<int64_t>(sizes.size()));
  pc.numel = i32(product(sizes));
  pc.inOffset = i32(inOffset);
  pc.outOffset = i32(outOffset);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    pc.sizes[i] = i32(sizes[i]);
    pc.inStrides[i] = i32(inStrides[i]);
    pc.outStrides[i] = i32(outStrides[i]);
  }
  pc.intBits = intBitsOf(out.dtype);
  std::vector<int64_t> c = contiguousStrides(sizes);
  pc.contiguous = inStrides == c && outStrides == c ? 1 : 0;
  std::string variant = "copy_" + shaderDType(src.dtype) + "_" + shaderDType(out.dtype);
  return ctx.dispatch1D(variant, {out.buffer.get(), src.buffer.get()}, &pc, sizeof(pc),
                        static_cast<uint64_t>(pc.numel));
}

} // namespace

Expected<DeviceTensor> gather(Context &ctx, const DeviceTensor &src, std::vector<int64_t> sizes,
                              std::vector<int64_t> strides, int64_t offset) {
  if (sizes.size() != strides.size())
    return Diagnostic::internal("vulkan gather: sizes and strides differ in rank");
  // Bounds: the largest index read must lie inside src.
  int64_t maxIndex = offset, minIndex = offset;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0)
      return allocateTensor(ctx, src.dtype, sizes);
    int64_t span = (sizes[i] - 1) * strides[i];
    (span > 0 ? maxIndex : minIndex) += span;
  }
  if (minIndex < 0 || maxIndex >= std::max<int64_t>(src.numel(), 1))
    return Diagnostic::internal("vulkan gather: view reads outside its source " +
                                sizesStr(src.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, src.dtype, sizes));
  GRAFT_CHECK_OK(copyInto(ctx, out, src, sizes, strides, offset, contiguousStrides(sizes), 0));
  return out;
}

Expected<DeviceTensor> cast(Context &ctx, const DeviceTensor &src, DType dtype) {
  if (src.dtype == dtype)
    return src;
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, dtype, src.sizes));
  std::vector<int64_t> c = contiguousStrides(src.sizes);
  if (src.sizes.size() > kMaxRank) {
    // Flatten: a cast does not care about the shape.
    std::vector<int64_t> flat = {src.numel()};
    GRAFT_CHECK_OK(copyInto(ctx, out, src, flat, {1}, 0, {1}, 0));
    return out;
  }
  GRAFT_CHECK_OK(copyInto(ctx, out, src, src.sizes, c, 0, c, 0));
  return out;
}

Expected<DeviceTensor> cat(Context &ctx, const std::vector<DeviceTensor> &inputs, int64_t dim) {
  if (inputs.empty())
    return kernelError("cat", "needs at least one tensor");
  const DeviceTensor &first = inputs[0];
  int64_t rank = static_cast<int64_t>(first.sizes.size());
  if (dim < 0 || dim >= rank)
    return kernelError("cat", "dim out of range");
  std::vector<int64_t> outSizes = first.sizes;
  outSizes[static_cast<std::size_t>(dim)] = 0;
  for (const DeviceTensor &t : inputs) {
    if (t.dtype != first.dtype || static_cast<int64_t>(t.sizes.size()) != rank)
      return kernelError("cat", "inputs must share dtype and rank");
    for (int64_t d = 0; d < rank; ++d)
      if (d != dim &&
          t.sizes[static_cast<std::size_t>(d)] != first.sizes[static_cast<std::size_t>(d)])
        return kernelError("cat", "sizes " + sizesStr(t.sizes) + " and " + sizesStr(first.sizes) +
                                      " differ outside dim " + std::to_string(dim));
    outSizes[static_cast<std::size_t>(dim)] += t.sizes[static_cast<std::size_t>(dim)];
  }
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, first.dtype, outSizes));
  std::vector<int64_t> outStrides = contiguousStrides(outSizes);
  int64_t at = 0;
  for (const DeviceTensor &t : inputs) {
    if (t.numel() > 0)
      GRAFT_CHECK_OK(copyInto(ctx, out, t, t.sizes, contiguousStrides(t.sizes), 0, outStrides,
                              at * outStrides[static_cast<std::size_t>(dim)]));
    at += t.sizes[static_cast<std::size_t>(dim)];
  }
  return out;
}

Expected<DeviceTensor> reshape(const DeviceTensor &src, std::vector<int64_t> sizes) {
  if (product(sizes) != src.numel())
    return kernelError("view", "cannot view " + sizesStr(src.sizes) + " as " + sizesStr(sizes));
  DeviceTensor out = src;
  out.sizes = std::move(sizes);
  return out;
}

} // namespace graft::vk
