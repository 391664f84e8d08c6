//===- Reduce.cpp - Reductions, softmax and rms_norm ------------------------===//
//
// Row-wise ops over the innermost dims: sum/mean/amax/amin, softmax over
// the last dim (and ATen's _safe_softmax for attention), et_vk.rms_norm;
// reduce.glsl, softmax.glsl and rms_norm.glsl are next to this file.
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

namespace {
/// The push constants of reduce.glsl, softmax.glsl and rms_norm.glsl (each
/// declares the members it reads, in this order).
struct RowPush {
  int32_t rows, rowLen, begin, end, safe;
  float eps;
};

/// Dispatches a one-invocation-per-row kernel whose invocations take
/// `passes` passes over their row, one loop each: passes * rowLen steps,
/// which the shader runs from pc.begin to pc.end. Where the device limits an
/// invocation's loop iterations (llvmpipe), the steps are cut into
/// dispatches that stay within it, carrying `stateWords` 32-bit words per
/// row from one to the next in a state buffer (bound last); the order of the
/// steps, and so every result, is the one-dispatch one. A single dispatch
/// binds the output in its place (the shader touches it only when it stops
/// before the last step).
Status dispatchRowSteps(Context &ctx, const char *kernel, const std::string &variant,
                        std::vector<Buffer *> bindings, RowPush pc, int64_t passes,
                        int64_t stateWords) {
  const int64_t steps = passes * int64_t(pc.rowLen);
  GRAFT_CHECK_OK(checkInt32(kernel, steps));
  const int64_t chunk = stepsPerDispatch(ctx.info(), steps, passes);
  DeviceTensor state;
  if (chunk < steps) {
    GRAFT_TRY(state, allocateTensor(ctx, DType::F32, {int64_t(pc.rows) * stateWords}));
    bindings.push_back(state.buffer.get());
  } else {
    bindings.push_back(bindings[0]);
  }
  for (int64_t begin = 0; begin < steps; begin += chunk) {
    pc.begin = i32(begin);
    pc.end = i32(std::min(steps, begin + chunk));
    GRAFT_CHECK_OK(
        ctx.dispatch1D(variant, bindings, &pc, sizeof(pc), static_cast<uint64_t>(pc.rows)));
  }
  return okStatus();
}
} // namespace

Expected<DeviceTensor> reduceInner(Context &ctx, ReduceKind op, const DeviceTensor &a,
                                   int64_t numDims, bool keepdim) {
  static const char *names[] = {"sum", "mean", "amax", "amin"};
  const char *opName = names[static_cast<int>(op)];
  if (!isDeviceFloat(a.dtype))
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
  RowPush pc{i32(a.numel() / rowLen), i32(rowLen), 0, 0, 0, 0.f};
  std::string variant = std::string("reduce_") + opName + "_" + shaderDType(a.dtype);
  // State: the running value and (amax/amin) the NaN flag.
  GRAFT_CHECK_OK(
      dispatchRowSteps(ctx, opName, variant, {out.buffer.get(), a.buffer.get()}, pc, 1, 2));
  return out;
}

Expected<DeviceTensor> softmaxLast(Context &ctx, const DeviceTensor &a, DType outDType, bool safe) {
  if (!isDeviceFloat(a.dtype) || !isDeviceFloat(outDType))
    return kernelError("softmax", "unsupported dtype " + std::string(name(a.dtype)) + " -> " +
                                      std::string(name(outDType)));
  if (a.sizes.empty() || a.sizes.back() == 0)
    return kernelError("softmax", "needs a non-empty last dim, got " + sizesStr(a.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, outDType, a.sizes));
  int64_t rowLen = a.sizes.back();
  RowPush pc{i32(a.numel() / rowLen), i32(rowLen), 0, 0, safe ? 1 : 0, 0.f};
  std::string variant = "softmax_" + shaderDType(a.dtype) + "_" + shaderDType(outDType);
  // Max, sum, results; state: the running max and sum.
  GRAFT_CHECK_OK(
      dispatchRowSteps(ctx, "softmax", variant, {out.buffer.get(), a.buffer.get()}, pc, 3, 2));
  return out;
}

Expected<DeviceTensor> rmsNorm(Context &ctx, const DeviceTensor &x, const DeviceTensor &weight,
                               double eps) {
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(weight.dtype))
    return kernelError("rms_norm", "unsupported dtypes " + std::string(name(x.dtype)) + ", " +
                                       std::string(name(weight.dtype)));
  if (x.sizes.empty() || x.sizes.back() == 0 || weight.numel() != x.sizes.back())
    return kernelError("rms_norm", "weight " + sizesStr(weight.sizes) +
                                       " does not match the last dim of " + sizesStr(x.sizes));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  int64_t rowLen = x.sizes.back();
  RowPush pc{i32(x.numel() / rowLen), i32(rowLen), 0, 0, 0, static_cast<float>(eps)};
  std::string dtypes = shaderDType(x.dtype) + "_" + shaderDType(weight.dtype);
  std::vector<Buffer *> bindings = {out.buffer.get(), x.buffer.get(), weight.buffer.get()};
  // The cooperative sum reorders the reduction: fast policy only.
  if (!ctx.exactKernels() && cooperativeRows(ctx, pc.rows)) {
    // Each of the 256 invocations walks its slice of the row twice, around
    // an 8-step tree (GRAFT_VK_KERNELS=gpu runs this on lavapipe too).
    constexpr int64_t kCoopWidth = 256;
    const int64_t slice = (rowLen + kCoopWidth - 1) / kCoopWidth;
    GRAFT_CHECK_OK(checkLoopIterations(ctx, "rms_norm", 2 * (slice + 1) + 9));
    GRAFT_CHECK_OK(ctx.dispatch("rms_norm_coop_" + dtypes, bindings, &pc, sizeof(pc),
                                {static_cast<uint32_t>(pc.rows), 1, 1}));
    return out;
  }
  // Sum of squares, results; state: the running sum.
  GRAFT_CHECK_OK(dispatchRowSteps(ctx, "rms_norm", "rms_norm_" + dtypes, bindings, pc, 2, 1));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

/// How many trailing dims `dims` reduces, when they are exactly the
/// innermost ones (none/empty: all).
std::optional<int64_t> trailingDims(const Argument *dimArg, int64_t rank) {
  if (!dimArg || dimArg->isNone())
    return rank;
  auto dims = dimArg->intList();
  if (!dims)
    return std::nullopt;
  if (dims->empty())
    return rank;
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int64_t d : *dims) {
    int64_t w = d < 0 ? d + rank : d;
    if (w < 0 || w >= rank || seen[static_cast<std::size_t>(w)])
      return std::nullopt;
    seen[static_cast<std::size_t>(w)] = true;
  }
  int64_t k = static_cast<int64_t>(dims->size());
  for (int64_t i = rank - k; i < rank; ++i)
    if (!seen[static_cast<std::size_t>(i)])
      return std::nullopt;
  return k;
}

Lowering reduceLowering(ReduceKind op, const char *kernel) {
  Lowering l;
  l.kernel = kernel;
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    if (!isFloatOfResultDType(node, b, "self"))
      return "needs an f32/f16 input of the result's dtype";
    const TensorProto *x = protoOf(b, "self");
    if (x->rank() == 0)
      return "0-dim input";
    if (!trailingDims(b.find("dim"), x->rank()))
      return "reduces dims other than the innermost ones";
    return {};
  };
  l.run = [op](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    auto k = trailingDims(&a.arg("dim"), static_cast<int64_t>(x.sizes.size()));
    if (!k)
      return a.error("reduction dims must be the innermost ones");
    bool keepdim = a.integer("keepdim").value_or(0) != 0;
    return one(reduceInner(a.ctx(), op, x, *k, keepdim));
  };
  return l;
}

Lowering softmaxLowering() {
  Lowering l;
  l.kernel = "softmax";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "self");
    if (!x || !isDeviceFloat(x->dtype) || !isDeviceFloat(node.output()->proto().dtype))
      return "needs f32/f16 input and result";
    auto d = b.find("dim") ? b.find("dim")->intList() : std::nullopt;
    if (!d || d->size() != 1 || x->rank() == 0 || ((*d)[0] != -1 && (*d)[0] != x->rank() - 1))
      return "softmax over a dim other than the last";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    return one(softmaxLast(a.ctx(), x, a.outDType()));
  };
  return l;
}

Lowering rmsNormLowering() {
  Lowering l;
  l.kernel = "rms_norm";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    if (!isFloatOfResultDType(node, b, "x"))
      return "x must be f32/f16";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("x"));
    GRAFT_TRY(DeviceTensor w, a.tensor("weight"));
    return one(rmsNorm(a.ctx(), x, w, a.number("eps").value_or(0.0)));
  };
  return l;
}

} // namespace

void addReduceLowerings(LoweringTable &m) {
  m["aten.sum.dim_IntList"] = reduceLowering(ReduceKind::Sum, "reduce_sum");
  m["aten.mean.dim"] = reduceLowering(ReduceKind::Mean, "reduce_mean");
  m["aten.amax.default"] = reduceLowering(ReduceKind::Amax, "reduce_amax");
  m["aten.amin.default"] = reduceLowering(ReduceKind::Amin, "reduce_amin");
  m["aten.softmax.int"] = softmaxLowering();
  m["aten._softmax.default"] = softmaxLowering();
  m["et_vk.rms_norm.default"] = rmsNormLowering();
}

} // namespace graft::vk
