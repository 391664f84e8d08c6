//===- MaskKernels.cpp - Comparisons, logical ops and tril on the device --===//
//
// The elementwise ops a KV-cache export builds attention masks with
// (mask_ops.glsl): comparisons and logical ops with a bool result, and
// tril. Operands arrive converted to one dtype (the lowering applies
// torch's promotion), so every comparison is exact.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

#include <algorithm>
#include <limits>

namespace graft::vk {

namespace {

constexpr std::size_t kMaskMaxRank = 6;

Diagnostic maskError(const char *kernel, const std::string &message) {
  return Diagnostic::error(std::string("vulkan ") + kernel + ": " + message);
}

std::string sizesText(const std::vector<int64_t> &sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

/// Strides of `sizes` read as `out` (right-aligned; 0 on broadcast dims).
std::vector<int64_t> stridesInto(const std::vector<int64_t> &sizes,
                                 const std::vector<int64_t> &out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t acc = 1;
  for (std::size_t k = sizes.size(); k-- > 0;) {
    std::size_t o = out.size() - sizes.size() + k;
    st[o] = sizes[k] == 1 ? 0 : acc;
    acc *= sizes[k];
  }
  return st;
}

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
    return maskError(name(op), "operands must have one device dtype, got " +
                                   std::string(graft::name(a.dtype)) + " and " +
                                   std::string(graft::name(b.dtype)));
  std::size_t r = std::max(a.sizes.size(), b.sizes.size());
  std::vector<int64_t> outSizes(r, 1);
  for (const DeviceTensor *t : {&a, &b})
    for (std::size_t i = 0; i < t->sizes.size(); ++i) {
      int64_t s = t->sizes[i];
      int64_t &o = outSizes[r - t->sizes.size() + i];
      if (s != o && s != 1 && o != 1)
        return maskError(name(op), "shapes " + sizesText(a.sizes) + " and " + sizesText(b.sizes) +
                                       " do not broadcast");
      if (s != 1)
        o = s;
    }
  if (r > kMaskMaxRank)
    return maskError(name(op), "rank " + std::to_string(r) + " exceeds 6");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, DType::Bool, outSizes));
  if (out.numel() == 0)
    return out;
  if (out.numel() > std::numeric_limits<int32_t>::max())
    return maskError(name(op), "tensor beyond int32 indexing");
  struct {
    int32_t rank, numel, op;
    int32_t sizes[kMaskMaxRank], aStrides[kMaskMaxRank], bStrides[kMaskMaxRank];
  } pc{};
  pc.rank = static_cast<int32_t>(r);
  pc.numel = static_cast<int32_t>(out.numel());
  pc.op = static_cast<int32_t>(op);
  std::vector<int64_t> sa = stridesInto(a.sizes, outSizes), sb = stridesInto(b.sizes, outSizes);
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
    return maskError("tril", "input must have at least 2 dims, got " + sizesText(x.sizes));
  if (!deviceElem(x.dtype))
    return maskError("tril", "unsupported dtype " + std::string(graft::name(x.dtype)));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  if (out.numel() == 0)
    return out;
  if (out.numel() > std::numeric_limits<int32_t>::max())
    return maskError("tril", "tensor beyond int32 indexing");
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
