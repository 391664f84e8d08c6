//===- MaskKernels.cpp - Comparisons, logical ops and tril on the device --===//
//
// The elementwise ops a KV-cache export builds attention masks with
// (mask_ops.glsl): comparisons and logical ops with a bool result, and
// tril. Operands arrive converted to one dtype (the lowering applies
// torch's promotion), so every comparison is exact.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

#include "KernelCommon.h"

#include <algorithm>
#include <limits>

namespace graft::vk {

namespace {

constexpr std::size_t kMaskMaxRank = 6;

} // namespace

const char *name(CompareKind kind) {
  switch (kind) {
  case CompareKind::Lt:
    return "lt";
  case CompareKind::Le:
    return "le";
  case CompareKind::Gt:
    return "gt";
  case CompareKind::Ge:
    return "ge";
  case CompareKind::Eq:
    return "eq";
  case CompareKind::Ne:
    return "ne";
  case CompareKind::And:
    return "logical_and";
  case CompareKind::Or:
    return "logical_or";
  case CompareKind::Not:
    return "logical_not";
  }
  return "?";
}

Expected<DeviceTensor> compare(Context &ctx, CompareKind op, const DeviceTensor &a,
                               const DeviceTensor &b) {
  // Integer dtypes share the int32 device form, and compare by value.
  if (!deviceElem(a.dtype) || deviceElem(a.dtype) != deviceElem(b.dtype))
    return kernelError(name(op), "operands must have one device dtype, got " +
                                     std::string(graft::name(a.dtype)) + " and " +
                                     std::string(graft::name(b.dtype)));
  GRAFT_TRY(std::vector<int64_t> outSizes, broadcastSizes(name(op), {&a.sizes, &b.sizes}));
  const std::size_t r = outSizes.size();
  if (r > kMaskMaxRank)
    return kernelError(name(op), "rank " + std::to_string(r) + " exceeds 6");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, DType::Bool, outSizes));
  if (out.numel() == 0)
    return out;
  GRAFT_CHECK_OK(checkInt32(name(op), out.numel()));
  struct {
    int32_t rank, numel, op;
    int32_t sizes[kMaskMaxRank], aStrides[kMaskMaxRank], bStrides[kMaskMaxRank];
  } pc{};
  pc.rank = static_cast<int32_t>(r);
  pc.numel = static_cast<int32_t>(out.numel());
  pc.op = static_cast<int32_t>(op);
  std::vector<int64_t> sa = broadcastStrides(a.sizes, outSizes),
                       sb = broadcastStrides(b.sizes, outSizes);
  for (std::size_t i = 0; i < r; ++i) {
    pc.sizes[i] = static_cast<int32_t>(outSizes[i]);
    pc.aStrides[i] = static_cast<int32_t>(sa[i]);
    pc.bStrides[i] = static_cast<int32_t>(sb[i]);
  }
  GRAFT_CHECK_OK(ctx.dispatch1D("compare_" + shaderDType(a.dtype),
                                {out.buffer.get(), a.buffer.get(), b.buffer.get()}, &pc, sizeof(pc),
                                static_cast<uint64_t>(out.numel())));
  return out;
}

Expected<DeviceTensor> tril(Context &ctx, const DeviceTensor &x, int64_t diagonal) {
  if (x.sizes.size() < 2)
    return kernelError("tril", "input must have at least 2 dims, got " + sizesStr(x.sizes));
  if (!deviceElem(x.dtype))
    return kernelError("tril", "unsupported dtype " + std::string(graft::name(x.dtype)));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  if (out.numel() == 0)
    return out;
  GRAFT_CHECK_OK(checkInt32("tril", out.numel()));
  int64_t rows = x.sizes[x.sizes.size() - 2], cols = x.sizes.back();
  // Beyond the matrix, the diagonal keeps everything or nothing.
  int64_t d = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);
  struct {
    int32_t numel, rows, cols, diagonal;
  } pc{static_cast<int32_t>(out.numel()), static_cast<int32_t>(rows), static_cast<int32_t>(cols),
       static_cast<int32_t>(d)};
  GRAFT_CHECK_OK(ctx.dispatch1D("tril_" + shaderDType(x.dtype), {out.buffer.get(), x.buffer.get()},
                                &pc, sizeof(pc), static_cast<uint64_t>(out.numel())));
  return out;
}

} // namespace graft::vk
