//===- KvCacheKernels.cpp - KV-cache writes and attention over the caches -===//
//
// The device kernels of a Llama export with a KV cache (ExecuTorch's
// export_llama, both forms; docs/vulkan-backend.md):
//
//   llama.update_cache(value, cache, start_pos)   copyIntoSlice(cache, value, 1, start_pos)
//   aten.index_copy_(cache, dim, index, source)   indexCopyInto(cache, source, dim, index)
//   aten.index_put_(cache, [None.., idx], v)       indexCopyInto(..., wrapNegative)
//   aten.slice_scatter(self, src, dim, start)      copyIntoSlice on a copy of self
//   llama.custom_sdpa(q, k_cache, v_cache, pos)   customSdpa: sdpa_kv scores -> softmax
//                                                 (safe) -> sdpa_kv output
//
// The writes go into the destination's own buffer (the executor hands them
// a mutable buffer's device storage), so a KV cache never leaves the device.
// start_pos is a per-call value (push constants), never part of a pipeline.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

#include "KernelCommon.h"

#include <cmath>
#include <limits>

namespace graft::vk {

namespace {

struct IndexCopyPush {
  int32_t numel, n, inner, dstLen, start, wrapNegative;
};

/// The [outer, dstLen, inner] view of `dst` and [outer, n, inner] of `src`
/// around `dim`, after checking that they differ only there.
Expected<IndexCopyPush> sliceGeometry(const char *kernel, const DeviceTensor &dst,
                                      const DeviceTensor &src, int64_t dim) {
  int64_t rank = static_cast<int64_t>(dst.sizes.size());
  if (rank == 0 || dim < 0 || dim >= rank)
    return kernelError(kernel, "dim " + std::to_string(dim) + " is out of range for " +
                                   sizesStr(dst.sizes));
  if (src.dtype != dst.dtype)
    return kernelError(kernel, "source " + std::string(name(src.dtype)) + " and destination " +
                                   std::string(name(dst.dtype)) + " differ in dtype");
  if (!deviceElem(dst.dtype))
    return kernelError(kernel, "dtype " + std::string(name(dst.dtype)) + " has no device form");
  if (src.sizes.size() != dst.sizes.size())
    return kernelError(kernel, "source " + sizesStr(src.sizes) + " and destination " +
                                   sizesStr(dst.sizes) + " differ in rank");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    std::size_t k = static_cast<std::size_t>(d);
    if (d != dim && src.sizes[k] != dst.sizes[k])
      return kernelError(kernel, "source " + sizesStr(src.sizes) + " does not fit destination " +
                                     sizesStr(dst.sizes) + " outside dim " + std::to_string(dim));
    if (d < dim)
      outer *= dst.sizes[k];
    else if (d > dim)
      inner *= dst.sizes[k];
  }
  GRAFT_CHECK_OK(checkInt32(kernel, dst.numel()));
  GRAFT_CHECK_OK(checkInt32(kernel, src.numel()));
  IndexCopyPush pc{};
  pc.numel = static_cast<int32_t>(src.numel());
  pc.n = static_cast<int32_t>(src.sizes[static_cast<std::size_t>(dim)]);
  pc.inner = static_cast<int32_t>(inner);
  pc.dstLen = static_cast<int32_t>(dst.sizes[static_cast<std::size_t>(dim)]);
  (void)outer;
  return pc;
}

} // namespace

Status copyIntoSlice(Context &ctx, const DeviceTensor &dst, const DeviceTensor &src, int64_t dim,
                     int64_t start) {
  GRAFT_TRY(IndexCopyPush pc, sliceGeometry("update_cache", dst, src, dim));
  if (start < 0 || start + pc.n > pc.dstLen)
    return kernelError("update_cache", "start_pos " + std::to_string(start) + " + " +
                                           std::to_string(pc.n) + " positions exceed the cache's " +
                                           std::to_string(pc.dstLen));
  if (pc.numel == 0)
    return okStatus();
  pc.start = static_cast<int32_t>(start);
  return ctx.dispatch1D("index_copy_offset_" + shaderDType(dst.dtype),
                        {dst.buffer.get(), src.buffer.get()}, &pc, sizeof(pc),
                        static_cast<uint64_t>(pc.numel));
}

Status indexCopyInto(Context &ctx, const DeviceTensor &dst, const DeviceTensor &src, int64_t dim,
                     const DeviceTensor &index, bool wrapNegative) {
  GRAFT_TRY(IndexCopyPush pc, sliceGeometry("index_copy", dst, src, dim));
  pc.wrapNegative = wrapNegative ? 1 : 0;
  if (deviceElem(index.dtype) != DeviceElem::I32 || index.dtype == DType::Bool)
    return kernelError("index_copy", "index must be an integer tensor");
  if (index.sizes.size() > 1 || index.numel() != pc.n)
    return kernelError("index_copy", "index " + sizesStr(index.sizes) + " must list the " +
                                         std::to_string(pc.n) + " slices of the source");
  if (pc.numel == 0)
    return okStatus();
  GRAFT_TRY(auto status,
            ctx.statusBuffer(std::string("vulkan ") +
                             (wrapNegative ? "index_put_" : "index_copy_") +
                             ": an index is out of bounds for dimension " + std::to_string(dim) +
                             " with size " + std::to_string(pc.dstLen)));
  return ctx.dispatch1D("index_copy_index_" + shaderDType(dst.dtype),
                        {dst.buffer.get(), src.buffer.get(), index.buffer.get(), status.get()}, &pc,
                        sizeof(pc), static_cast<uint64_t>(pc.numel));
}

Expected<DeviceTensor> attention(Context &ctx, const DeviceTensor &q, const DeviceTensor &k,
                                 const DeviceTensor &v, const AttentionOptions &o) {
  const char *kn = o.headsFirst ? "scaled_dot_product_attention" : "custom_sdpa";
  if (q.sizes.size() != 4 || k.sizes.size() != 4 || v.sizes.size() != 4)
    return kernelError(kn, "query, key and value must be 4-D");
  if ((q.dtype != DType::F32 && q.dtype != DType::F16) || k.dtype != q.dtype || v.dtype != q.dtype)
    return kernelError(kn, "query, key and value must all be f32 or all f16");
  // [B, S, H, D] or [B, H, S, D]; caches [B, M, Hkv, D] or [B, Hkv, M, D].
  int64_t B = q.sizes[0], D = q.sizes[3];
  int64_t S = o.headsFirst ? q.sizes[2] : q.sizes[1], H = o.headsFirst ? q.sizes[1] : q.sizes[2];
  int64_t M = o.kvHeadsFirst ? k.sizes[2] : k.sizes[1];
  int64_t Hkv = o.kvHeadsFirst ? k.sizes[1] : k.sizes[2];
  if (k.sizes != v.sizes || k.sizes[0] != B || k.sizes[3] != D)
    return kernelError(kn, "key " + sizesStr(k.sizes) + " and value " + sizesStr(v.sizes) +
                               " do not fit query " + sizesStr(q.sizes));
  if (Hkv == 0 || H % Hkv != 0)
    return kernelError(kn, "query heads " + std::to_string(H) +
                               " are not a multiple of key heads " + std::to_string(Hkv));
  if (o.keys < 0 || o.keys > M || o.causalOffset < 0)
    return kernelError(kn, "start_pos " + std::to_string(o.causalOffset) + " + " +
                               std::to_string(S) + " positions exceed the cache's " +
                               std::to_string(M));
  if (o.mask && (o.mask->dtype != DType::F32 || o.mask->numel() != S * o.keys))
    return kernelError(kn, "the additive mask must be f32 [" + std::to_string(S) + ", " +
                               std::to_string(o.keys) + "]");
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, q.dtype, q.sizes));
  if (out.numel() == 0)
    return out;
  if (o.keys == 0)
    return kernelError(kn, "no key to attend to");
  int64_t numScores = B * H * S * o.keys;
  for (int64_t n : {numScores, k.numel(), q.numel()})
    GRAFT_CHECK_OK(checkInt32(kn, n));
  // sdpaMath: s = |scale| (default 1/sqrt(D)), each of q and k^T scaled by
  // sqrt(s) rounded to the f32 opmath; a negative scale negates q's factor.
  bool negative = o.scale && *o.scale < 0;
  double sc = o.scale ? std::abs(*o.scale) : 1.0 / std::sqrt(static_cast<double>(D));
  double sf = std::sqrt(sc);
  struct {
    int32_t total, S, H, D, M, Hkv, keys, causalOffset, maskMode;
    float sfQ, sfK;
    int32_t headsFirst, kvHeadsFirst;
  } pc{static_cast<int32_t>(numScores), static_cast<int32_t>(S),
       static_cast<int32_t>(H),         static_cast<int32_t>(D),
       static_cast<int32_t>(M),         static_cast<int32_t>(Hkv),
       static_cast<int32_t>(o.keys),    static_cast<int32_t>(o.causalOffset),
       o.mask ? 2 : (o.causal ? 1 : 0), static_cast<float>(negative ? 0.0 - sf : sf),
       static_cast<float>(sf),          o.headsFirst ? 1 : 0,
       o.kvHeadsFirst ? 1 : 0};
  GRAFT_TRY(DeviceTensor scores, allocateTensor(ctx, DType::F32, {B, H, S, o.keys}));
  std::string dt = shaderDType(q.dtype);
  // Without a mask the binding is q's buffer, never read.
  Buffer *mask = o.mask ? o.mask->buffer.get() : q.buffer.get();
  GRAFT_CHECK_OK(ctx.dispatch1D("sdpa_kv_scores_" + dt,
                                {scores.buffer.get(), q.buffer.get(), k.buffer.get(), mask}, &pc,
                                sizeof(pc), static_cast<uint64_t>(numScores)));
  GRAFT_TRY(DeviceTensor p, softmaxLast(ctx, scores, DType::F32, /*safe=*/true));
  pc.total = static_cast<int32_t>(out.numel());
  GRAFT_CHECK_OK(ctx.dispatch1D("sdpa_kv_output_" + dt,
                                {out.buffer.get(), p.buffer.get(), v.buffer.get()}, &pc, sizeof(pc),
                                static_cast<uint64_t>(pc.total)));
  return out;
}

Expected<DeviceTensor> customSdpa(Context &ctx, const DeviceTensor &q, const DeviceTensor &kCache,
                                  const DeviceTensor &vCache, int64_t startPos, bool causal,
                                  std::optional<double> scale) {
  if (q.sizes.size() != 4)
    return kernelError("custom_sdpa", "query, key and value must be 4-D [B, S, H, D]");
  AttentionOptions o;
  o.keys = startPos + q.sizes[1];
  o.causal = causal;
  o.causalOffset = startPos;
  o.scale = scale;
  if (startPos < 0)
    return kernelError("custom_sdpa", "start_pos " + std::to_string(startPos) + " is negative");
  return attention(ctx, q, kCache, vCache, o);
}

} // namespace graft::vk
