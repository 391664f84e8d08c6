//===- Attention.cpp - Attention and the KV-cache ops -----------------------===//
//
// scaled_dot_product_attention and the ops of ExecuTorch's KV-cache Llama
// (both export forms, `graft synth llama --kv-cache custom|plain`):
//
//   custom:  %u = llama.update_cache(%k_val, %k_cache, %pos)    index_copy (offset), in place
//            %o = llama.custom_sdpa(%q, %kc, %vc, %pos, ...)    sdpa_kv + softmax + sdpa_kv
//                                                               (GPUs, fast policy: sdpa_fused)
//            llama.sdpa_with_kv_cache (their fusion)            the three above
//   plain:   %i = aten.arange(%s0) ; add(%i, %pos)              host factory, binary
//            %kc = aten.index_copy_(%k_cache, 2, %i, %k)        index_copy (index), in place
//            aten.index_copy (functional)                       copy + index_copy
//   static:  %kc = aten.index_put_(%k_cache, [None, None, %p], %k)  index_copy (index), in place
//            aten.index_put, aten.slice_scatter (functional)    copy + index_copy
//
// In-place writes go through NodeArgs::mutableTensor: a mutable buffer's own
// device storage, so the caches stay on the device between calls. The
// position (a SymInt read from input_pos by a host step) is resolved per
// call and passed in push constants: no pipeline depends on it. Shaders:
// sdpa_kv.glsl, sdpa_fused.glsl and index_copy.glsl next to this file.
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

/// sdpa_fused.glsl stages a query row in shared memory (MAX_D).
constexpr int64_t kFusedMaxHeadDim = 256;

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
  // An invocation scans the later indices for repeats: up to n - 1, plus the
  // exit pass.
  GRAFT_CHECK_OK(checkLoopIterations(ctx, wrapNegative ? "index_put_" : "index_copy", pc.n));
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
    int32_t headsFirst, kvHeadsFirst, jBegin, jEnd;
  } pc{static_cast<int32_t>(numScores),
       static_cast<int32_t>(S),
       static_cast<int32_t>(H),
       static_cast<int32_t>(D),
       static_cast<int32_t>(M),
       static_cast<int32_t>(Hkv),
       static_cast<int32_t>(o.keys),
       static_cast<int32_t>(o.causalOffset),
       o.mask ? 2 : (o.causal ? 1 : 0),
       static_cast<float>(negative ? 0.0 - sf : sf),
       static_cast<float>(sf),
       o.headsFirst ? 1 : 0,
       o.kvHeadsFirst ? 1 : 0,
       0,
       0};
  // A scores invocation loops over D, plus the exit pass; the softmax and
  // the output pass split long rows of keys over dispatches.
  GRAFT_CHECK_OK(checkLoopIterations(ctx, kn, D + 1));
  GRAFT_TRY(DeviceTensor scores, allocateTensor(ctx, DType::F32, {B, H, S, o.keys}));
  std::string dt = shaderDType(q.dtype);
  // Without a mask the binding is q's buffer, never read.
  Buffer *mask = o.mask ? o.mask->buffer.get() : q.buffer.get();
  // GPUs, fast policy: one dispatch, a workgroup per query row
  // (sdpa_fused.glsl; its invocations loop over all keys or all of D). The
  // scores buffer is its scratch row.
  const int64_t rows = B * H * S;
  if (!ctx.exactKernels() && cooperativeRows(ctx, rows) && D <= kFusedMaxHeadDim &&
      loopLimitReason(ctx.info(), std::max(o.keys, D) + 1).empty()) {
    pc.total = static_cast<int32_t>(rows);
    GRAFT_CHECK_OK(ctx.dispatch("sdpa_fused_" + dt,
                                {out.buffer.get(), scores.buffer.get(), q.buffer.get(),
                                 k.buffer.get(), v.buffer.get(), mask},
                                &pc, sizeof(pc), {static_cast<uint32_t>(rows), 1, 1}));
    return out;
  }
  GRAFT_CHECK_OK(ctx.dispatch1D("sdpa_kv_scores_" + dt,
                                {scores.buffer.get(), q.buffer.get(), k.buffer.get(), mask}, &pc,
                                sizeof(pc), static_cast<uint64_t>(numScores)));
  GRAFT_TRY(DeviceTensor p, softmaxLast(ctx, scores, DType::F32, /*safe=*/true));
  pc.total = static_cast<int32_t>(out.numel());
  // The output pass: one loop over the keys, split where the device limits
  // it; a single dispatch binds the output as the (untouched) state.
  const int64_t chunk = stepsPerDispatch(ctx.info(), o.keys, 1);
  DeviceTensor state;
  if (chunk < o.keys) {
    GRAFT_TRY(state, allocateTensor(ctx, DType::F32, {out.numel()}));
  }
  Buffer *stateBuffer = chunk < o.keys ? state.buffer.get() : out.buffer.get();
  for (int64_t j = 0; j < o.keys; j += chunk) {
    pc.jBegin = static_cast<int32_t>(j);
    pc.jEnd = static_cast<int32_t>(std::min(o.keys, j + chunk));
    GRAFT_CHECK_OK(ctx.dispatch1D("sdpa_kv_output_" + dt,
                                  {out.buffer.get(), p.buffer.get(), v.buffer.get(), stateBuffer},
                                  &pc, sizeof(pc), static_cast<uint64_t>(pc.total)));
  }
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

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

/// Why tensors `names` cannot be the 4-D float operands of one attention /
/// cache kernel (same dtype), or empty.
std::string sameFloat4D(const BoundArgs &b, std::initializer_list<const char *> names) {
  std::optional<DType> dt;
  for (const char *n : names) {
    const TensorProto *p = protoOf(b, n);
    if (!p || !isDeviceFloat(p->dtype) || p->rank() != 4)
      return std::string(n) + " must be a 4-D f32/f16 tensor";
    if (dt && *dt != p->dtype)
      return std::string(n) + " differs in dtype from the other operands";
    dt = p->dtype;
  }
  return {};
}

/// The [1] tensor update_cache returns (update_cache_meta's torch.empty;
/// the reference fills it with zeros).
Expected<DeviceTensor> dummyResult(Context &ctx, DType dtype) {
  GRAFT_TRY(DeviceTensor t, allocateTensor(ctx, dtype, {1}));
  GRAFT_CHECK_OK(ctx.fill(*t.buffer, 0));
  return t;
}

std::optional<double> scaleArg(NodeArgs &a) {
  if (a.isNone("scale"))
    return std::nullopt;
  return a.number("scale");
}

Lowering updateCacheLowering() {
  Lowering l;
  l.kernel = "index_copy";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *v = protoOf(b, "value"), *c = protoOf(b, "cache");
    if (!v || !c || v->rank() != 4 || c->rank() != 4 || v->dtype != c->dtype)
      return "value and cache must be 4-D tensors of one dtype";
    return intArgReason(b, "start_pos");
  };
  l.run = [](NodeArgs &a) -> Results {
    auto pos = a.integer("start_pos");
    if (!pos)
      return a.error("start_pos is not resolved");
    GRAFT_TRY(DeviceTensor value, a.tensor("value"));
    GRAFT_TRY(DeviceTensor cache, a.mutableTensor("cache"));
    GRAFT_CHECK_OK(copyIntoSlice(a.ctx(), cache, value, 1, *pos));
    return one(dummyResult(a.ctx(), value.dtype));
  };
  return l;
}

/// The attention kernels' loop that does not split (attention()): the
/// scores' over the head dim, `key`'s last.
std::string sdpaLoopReason(const BoundArgs &b, const DeviceInfo &dev, std::string_view key) {
  return loopDimReason(b, dev, key, -1, 1);
}

std::string sdpaArgsReason(const BoundArgs &b) {
  if (const Argument *m = b.find("attn_mask"); m && !m->isNone())
    return "an explicit attn_mask (only the causal form has a kernel)";
  if (const Argument *d = b.find("drpout_p"); d && d->number().value_or(0.0) != 0.0)
    return "drpout_p != 0";
  if (const Argument *s = b.find("scale"); s && !s->isNone() && !s->number())
    return "scale is not a number";
  return intArgReason(b, "start_pos");
}

Lowering customSdpaLowering() {
  Lowering l;
  l.kernel = "sdpa_kv";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(sameFloat4D(b, {"query", "key", "value"}));
    GRAFT_VK_REASON(sdpaLoopReason(b, dev, "key"));
    return sdpaArgsReason(b);
  };
  l.run = [](NodeArgs &a) -> Results {
    auto pos = a.integer("start_pos");
    if (!pos)
      return a.error("start_pos is not resolved");
    GRAFT_TRY(DeviceTensor q, a.tensor("query"));
    GRAFT_TRY(DeviceTensor k, a.tensor("key"));
    GRAFT_TRY(DeviceTensor v, a.tensor("value"));
    bool causal = a.integer("is_causal").value_or(0) != 0;
    return one(customSdpa(a.ctx(), q, k, v, *pos, causal, scaleArg(a)));
  };
  return l;
}

Lowering sdpaWithKvCacheLowering() {
  Lowering l;
  l.kernel = "sdpa_kv";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    GRAFT_VK_REASON(sameFloat4D(b, {"query", "key", "value", "key_cache", "value_cache"}));
    GRAFT_VK_REASON(sdpaLoopReason(b, dev, "key_cache"));
    GRAFT_VK_REASON(intArgReason(b, "seq_len"));
    return sdpaArgsReason(b);
  };
  l.run = [](NodeArgs &a) -> Results {
    auto pos = a.integer("start_pos");
    auto seqLen = a.integer("seq_len");
    if (!pos || !seqLen)
      return a.error("start_pos and seq_len are not resolved");
    GRAFT_TRY(DeviceTensor q, a.tensor("query"));
    if (*seqLen != q.sizes[1])
      return a.error("seq_len " + std::to_string(*seqLen) + " is not the query's sequence length " +
                     std::to_string(q.sizes[1]));
    GRAFT_TRY(DeviceTensor k, a.tensor("key"));
    GRAFT_TRY(DeviceTensor v, a.tensor("value"));
    GRAFT_TRY(DeviceTensor kc, a.mutableTensor("key_cache"));
    GRAFT_TRY(DeviceTensor vc, a.mutableTensor("value_cache"));
    GRAFT_CHECK_OK(copyIntoSlice(a.ctx(), kc, k, 1, *pos));
    GRAFT_CHECK_OK(copyIntoSlice(a.ctx(), vc, v, 1, *pos));
    bool causal = a.integer("is_causal").value_or(0) != 0;
    return one(customSdpa(a.ctx(), q, kc, vc, *pos, causal, scaleArg(a)));
  };
  return l;
}

/// aten.index_copy(_): `inPlace` writes self's storage (a mutable buffer
/// stays on the device); the functional form writes a copy.
Lowering indexCopyLowering(bool inPlace) {
  Lowering l;
  l.kernel = "index_copy";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    const TensorProto *self = protoOf(b, "self"), *src = protoOf(b, "source"),
                      *index = protoOf(b, "index");
    if (!self || !src || !index)
      return "self, index and source must be tensors";
    // The reference's own errors (a non-long index, mismatched dtypes, a 0-D
    // self) stay with the reference kernel.
    if (index->dtype != DType::I64 || index->rank() > 1)
      return "index must be a 0-D or 1-D i64 tensor";
    if (self->dtype != src->dtype || self->rank() == 0 || self->rank() != src->rank())
      return "self and source must have one dtype and one rank >= 1";
    if (!b.find("dim") || !b.find("dim")->isInt())
      return "dim must be an int";
    // Each invocation scans the later indices for repeats (index_copy.glsl).
    return index->rank() == 1 ? loopDimReason(b, dev, "index", 0, 0) : std::string();
  };
  l.run = [inPlace](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor src, a.tensor("source"));
    GRAFT_TRY(DeviceTensor index, a.tensor("index"));
    DeviceTensor dst;
    if (inPlace) {
      GRAFT_TRY(dst, a.mutableTensor("self"));
    } else {
      GRAFT_TRY(DeviceTensor self, a.tensor("self"));
      std::vector<int64_t> strides(self.sizes.size(), 1);
      for (std::size_t i = self.sizes.size(); i-- > 1;)
        strides[i - 1] = strides[i] * self.sizes[i];
      GRAFT_TRY(dst, gather(a.ctx(), self, self.sizes, strides, 0));
    }
    int64_t rank = static_cast<int64_t>(dst.sizes.size());
    int64_t dim = a.integer("dim").value_or(0);
    if (dim < -rank || dim >= rank)
      return a.error("index_copy dim " + std::to_string(dim) + " is out of range");
    if (dim < 0)
      dim += rank;
    GRAFT_CHECK_OK(indexCopyInto(a.ctx(), dst, src, dim, index));
    return one(std::move(dst));
  };
  return l;
}

/// A contiguous copy of `t` (the functional forms write into it).
Expected<DeviceTensor> copyOf(Context &ctx, const DeviceTensor &t) {
  std::vector<int64_t> strides(t.sizes.size(), 1);
  for (std::size_t i = t.sizes.size(); i-- > 1;)
    strides[i - 1] = strides[i] * t.sizes[i];
  return gather(ctx, t, t.sizes, strides, 0);
}

/// The one index tensor of an index_put whose other entries are None, and
/// the dim it indexes; nullopt for any other spelling.
std::optional<std::pair<const Value *, int64_t>> singleIndex(const Argument &indices) {
  if (!indices.isList())
    return std::nullopt;
  std::optional<std::pair<const Value *, int64_t>> found;
  int64_t d = 0;
  for (const Argument &e : indices.list()) {
    if (!e.isNone()) {
      if (found || !e.isValue() || !e.value()->isTensor())
        return std::nullopt;
      found = std::make_pair(e.value(), d);
    }
    ++d;
  }
  return found;
}

/// aten.index_put(_) with one integer index tensor at some dim and None
/// elsewhere (self[:, :, idx] = values: KVCache.update without dynamic
/// shapes), values of the indexed shape, accumulate=False: index_copy's
/// kernel with negative indices counted from the end. Every other spelling
/// (several index tensors, bool masks, broadcast values, accumulate) stays
/// with the reference kernel.
Lowering indexPutLowering(bool inPlace) {
  Lowering l;
  l.kernel = "index_copy";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = protoOf(b, "self"), *values = protoOf(b, "values");
    if (!self || !values || self->dtype != values->dtype)
      return "self and values must be tensors of one dtype";
    if (const Argument *acc = b.find("accumulate"); acc && !(acc->isBool() && !acc->boolean()))
      return "accumulate=True";
    const Argument *indices = b.find("indices");
    auto idx = indices ? singleIndex(*indices) : std::nullopt;
    if (!idx)
      return "indices other than one index tensor with None elsewhere";
    const TensorProto &ip = idx->first->proto();
    if ((ip.dtype != DType::I64 && ip.dtype != DType::I32) || ip.rank() != 1)
      return "the index must be a 1-D i64/i32 tensor";
    int64_t d = idx->second;
    if (d >= self->rank() || values->rank() != self->rank())
      return "values must have self's rank";
    for (int64_t k = 0; k < self->rank(); ++k) {
      const Dim &want = k == d ? ip.shape[0] : self->shape[static_cast<std::size_t>(k)];
      if (!(values->shape[static_cast<std::size_t>(k)] == want))
        return "values are broadcast to the indexed shape";
    }
    return {};
  };
  l.run = [inPlace](NodeArgs &a) -> Results {
    auto idx = singleIndex(a.arg("indices"));
    if (!idx)
      return a.error("index_put: expected one index tensor");
    GRAFT_TRY(DeviceTensor values, a.tensor("values"));
    GRAFT_TRY(DeviceTensor index, a.state().deviceTensor(idx->first));
    DeviceTensor dst;
    if (inPlace) {
      GRAFT_TRY(dst, a.mutableTensor("self"));
    } else {
      GRAFT_TRY(DeviceTensor self, a.tensor("self"));
      GRAFT_TRY(dst, copyOf(a.ctx(), self));
    }
    GRAFT_CHECK_OK(indexCopyInto(a.ctx(), dst, values, idx->second, index, /*wrapNegative=*/true));
    return one(std::move(dst));
  };
  return l;
}

/// aten.slice_scatter with step 1: a copy of self with the slice [start,
/// end) of `dim` replaced by src (start/end clamped as torch's slice does).
Lowering sliceScatterLowering() {
  Lowering l;
  l.kernel = "index_copy";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = protoOf(b, "self"), *src = protoOf(b, "src");
    if (!self || !src || self->dtype != src->dtype || self->rank() == 0 ||
        src->rank() != self->rank())
      return "self and src must have one dtype and one rank >= 1";
    if (const Argument *st = b.find("step"); st && !(st->isInt() && st->integer() == 1))
      return "step != 1";
    if (const Argument *d = b.find("dim"); d && !d->isInt())
      return "dim must be an int";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor self, a.tensor("self"));
    GRAFT_TRY(DeviceTensor src, a.tensor("src"));
    int64_t rank = static_cast<int64_t>(self.sizes.size());
    int64_t dim = a.integer("dim").value_or(0);
    if (dim < -rank || dim >= rank)
      return a.error("slice_scatter dim " + std::to_string(dim) + " is out of range");
    if (dim < 0)
      dim += rank;
    int64_t size = self.sizes[static_cast<std::size_t>(dim)];
    auto clampPos = [&](std::optional<int64_t> v, int64_t dflt) {
      int64_t x = v.value_or(dflt);
      if (x < 0)
        x += size;
      return std::clamp<int64_t>(x, 0, size);
    };
    int64_t start = a.isNone("start") ? 0 : clampPos(a.integer("start"), 0);
    int64_t end = a.isNone("end") ? size : clampPos(a.integer("end"), size);
    end = std::max(end, start);
    std::vector<int64_t> slice = self.sizes;
    slice[static_cast<std::size_t>(dim)] = end - start;
    if (src.sizes != slice)
      return a.error("expected src to have a size equal to the slice of self");
    GRAFT_TRY(DeviceTensor out, copyOf(a.ctx(), self));
    GRAFT_CHECK_OK(copyIntoSlice(a.ctx(), out, src, dim, start));
    return one(std::move(out));
  };
  return l;
}

Lowering sdpaLowering() {
  Lowering l;
  l.kernel = "sdpa";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &dev) -> std::string {
    for (const char *n : {"query", "key", "value"}) {
      const TensorProto *p = protoOf(b, n);
      if (!p || !isDeviceFloat(p->dtype) || p->rank() < 3 || p->rank() > 6)
        return std::string(n) + " must be f32/f16 with 3 to 6 dims";
    }
    const Argument *drop = b.find("dropout_p");
    if (drop && drop->number().value_or(0.0) != 0.0)
      return "dropout_p != 0";
    const TensorProto *mask = protoOf(b, "attn_mask");
    if (mask && mask->dtype != DType::Bool && !isDeviceFloat(mask->dtype))
      return "attn_mask dtype " + std::string(name(mask->dtype)) + " is unsupported";
    return sdpaLoopReason(b, dev, "key");
  };
  l.run = [](NodeArgs &a) -> Results {
    Context &ctx = a.ctx();
    GRAFT_TRY(DeviceTensor q, a.tensor("query"));
    GRAFT_TRY(DeviceTensor k, a.tensor("key"));
    GRAFT_TRY(DeviceTensor v, a.tensor("value"));
    DType origin = q.dtype;
    if (k.dtype != origin || v.dtype != origin)
      return a.error("query, key and value must have the same dtype");
    bool causal = a.integer("is_causal").value_or(0) != 0;
    if (causal && !a.isNone("attn_mask"))
      return a.error("explicit attn_mask should not be set when is_causal=True");
    // The attention mask as the reference adds it: f32, bool as 0 / -inf.
    auto additiveMask = [&]() -> Expected<DeviceTensor> {
      const Value *mv = a.value("attn_mask");
      if (const Tensor *c = a.state().constantData(mv); c && mv->proto().dtype == DType::Bool) {
        Tensor add = Tensor::empty(DType::F32, c->sizes());
        for (int64_t i = 0, n = c->numel(); i < n; ++i)
          add.setDouble(i, c->getInt(i) ? 0.0 : -std::numeric_limits<double>::infinity());
        return uploadTensor(ctx, add);
      }
      GRAFT_TRY(DeviceTensor m, a.tensor("attn_mask"));
      if (mv->proto().dtype != DType::Bool)
        return asDType(ctx, m, DType::F32);
      // A mask computed at run time (a KV cache's tril rows narrowed at the
      // position): where(mask, 0, -inf) on the device.
      GRAFT_TRY(DeviceTensor zero, uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {}, {0.0})));
      GRAFT_TRY(DeviceTensor ninf,
                uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {},
                                                      {-std::numeric_limits<double>::infinity()})));
      return where(ctx, m, zero, ninf);
    };
    // 4-D operands (the Llama attention, a KV cache's [B, Hkv, M, D]): one
    // kernel reads q, k and v in place (sdpa_kv.glsl, the same operations in
    // the same order), with no transposed or repeated copy of k and v.
    if (q.sizes.size() == 4 && k.sizes.size() == 4 && k.sizes == v.sizes &&
        k.sizes[0] == q.sizes[0] && k.sizes[3] == q.sizes[3] && k.sizes[1] > 0) {
      int64_t hq = q.sizes[1], hk = k.sizes[1], L = q.sizes[2], S = k.sizes[2];
      bool gqa = a.integer("enable_gqa").value_or(0) != 0;
      std::optional<DeviceTensor> mask;
      bool maskFits = true;
      if (!a.isNone("attn_mask")) {
        GRAFT_TRY(DeviceTensor m, additiveMask());
        // Only a mask of exactly [..., L, S] with leading ones: the kernel
        // reads mask[i, j].
        maskFits = m.sizes.size() >= 2 && m.sizes[m.sizes.size() - 2] == L && m.sizes.back() == S &&
                   m.numel() == L * S;
        mask = std::move(m);
      }
      if ((hq == hk || (gqa && hq % hk == 0)) && maskFits) {
        AttentionOptions o;
        o.keys = S;
        o.causal = causal;
        o.mask = mask ? &*mask : nullptr;
        o.scale = a.number("scale");
        o.headsFirst = o.kvHeadsFirst = true;
        return one(attention(ctx, q, k, v, o));
      }
    }
    // ATen's math reference: upcast, scale q and k^T by sqrt(scale) each.
    GRAFT_TRY(q, asDType(ctx, q, DType::F32));
    GRAFT_TRY(k, asDType(ctx, k, DType::F32));
    GRAFT_TRY(v, asDType(ctx, v, DType::F32));
    if (a.integer("enable_gqa").value_or(0) != 0 && q.sizes.size() >= 3 && k.sizes.size() >= 3) {
      // repeat_interleave of the kv heads on dim -3, as a strided gather.
      auto repeat = [&](const DeviceTensor &t, int64_t hq) -> Expected<DeviceTensor> {
        std::size_t r = t.sizes.size();
        int64_t hk = t.sizes[r - 3];
        if (hk == 0 || hq % hk != 0)
          return a.error("enable_gqa: query heads " + std::to_string(hq) +
                         " are not a multiple of key heads " + std::to_string(hk));
        if (hq == hk)
          return t;
        int64_t rep = hq / hk, S = t.sizes[r - 2], E = t.sizes[r - 1];
        std::vector<int64_t> sizes(t.sizes.begin(), t.sizes.end() - 3), strides;
        int64_t inner = hk * S * E, outer = 1;
        for (int64_t s : sizes)
          outer *= s;
        (void)outer;
        std::vector<int64_t> lead(sizes.size());
        int64_t acc = inner;
        for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
          lead[static_cast<std::size_t>(i)] = acc;
          acc *= sizes[static_cast<std::size_t>(i)];
        }
        sizes.insert(sizes.end(), {hk, rep, S, E});
        strides = lead;
        strides.insert(strides.end(), {S * E, 0, E, 1});
        GRAFT_TRY(DeviceTensor g, gather(ctx, t, sizes, strides, 0));
        std::vector<int64_t> out(t.sizes.begin(), t.sizes.end() - 3);
        out.insert(out.end(), {hq, S, E});
        return reshape(g, out);
      };
      int64_t hq = q.sizes[q.sizes.size() - 3];
      GRAFT_TRY(k, repeat(k, hq));
      GRAFT_TRY(v, repeat(v, hq));
    }
    int64_t E = q.sizes.back();
    auto scale = a.number("scale");
    bool negative = scale && *scale < 0;
    double s = scale ? std::abs(*scale) : 1.0 / std::sqrt(static_cast<double>(E));
    double sf = std::sqrt(s);
    GRAFT_TRY(DeviceTensor qs, binaryScalar(ctx, BinaryKind::Mul, q, negative ? 0.0 - sf : sf));
    std::size_t kr = k.sizes.size();
    std::vector<int64_t> ktSizes = k.sizes, ktStrides(kr, 1);
    for (int64_t i = static_cast<int64_t>(kr) - 2; i >= 0; --i)
      ktStrides[static_cast<std::size_t>(i)] =
          ktStrides[static_cast<std::size_t>(i + 1)] * k.sizes[static_cast<std::size_t>(i + 1)];
    std::swap(ktSizes[kr - 1], ktSizes[kr - 2]);
    std::swap(ktStrides[kr - 1], ktStrides[kr - 2]);
    GRAFT_TRY(DeviceTensor kt, gather(ctx, k, ktSizes, ktStrides, 0));
    GRAFT_TRY(DeviceTensor ks, binaryScalar(ctx, BinaryKind::Mul, kt, sf));
    GRAFT_TRY(DeviceTensor attn, matmul(ctx, qs, ks));
    int64_t L = q.sizes[q.sizes.size() - 2], S = k.sizes[kr - 2];
    if (causal) {
      std::vector<double> m(static_cast<std::size_t>(L * S));
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j)
          m[static_cast<std::size_t>(i * S + j)] =
              j <= i ? 0.0 : -std::numeric_limits<double>::infinity();
      GRAFT_TRY(DeviceTensor mask, uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {L, S}, m)));
      GRAFT_TRY(attn, binary(ctx, BinaryKind::Add, attn, mask));
    } else if (!a.isNone("attn_mask")) {
      GRAFT_TRY(DeviceTensor mask, additiveMask());
      GRAFT_TRY(attn, binary(ctx, BinaryKind::Add, attn, mask));
    }
    GRAFT_TRY(DeviceTensor p, softmaxLast(ctx, attn, DType::F32, /*safe=*/true));
    GRAFT_TRY(DeviceTensor out, matmul(ctx, p, v));
    GRAFT_TRY(out, asDType(ctx, out, origin));
    return one(std::move(out));
  };
  return l;
}

} // namespace

void addAttentionLowerings(LoweringTable &m) {
  m["aten.scaled_dot_product_attention.default"] = sdpaLowering();
  m["llama.update_cache.default"] = updateCacheLowering();
  m["llama.custom_sdpa.default"] = customSdpaLowering();
  m["llama.sdpa_with_kv_cache.default"] = sdpaWithKvCacheLowering();
  m["aten.index_copy_.default"] = indexCopyLowering(true);
  m["aten.index_copy.default"] = indexCopyLowering(false);
  m["aten.index_put_.default"] = indexPutLowering(true);
  m["aten.index_put.default"] = indexPutLowering(false);
  m["aten.slice_scatter.default"] = sliceScatterLowering();
}

} // namespace graft::vk
