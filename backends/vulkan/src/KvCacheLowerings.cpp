//===- KvCacheLowerings.cpp - Lowerings of the KV-cache ops ---------------===//
//
// The executor's entries for the ops of ExecuTorch's KV-cache Llama (both
// export forms, `graft synth llama --kv-cache custom|plain`):
//
//   custom:  %u = llama.update_cache(%k_val, %k_cache, %pos)    index_copy (offset), in place
//            %o = llama.custom_sdpa(%q, %kc, %vc, %pos, ...)    sdpa_kv + softmax + sdpa_kv
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
// call and passed in push constants: no pipeline depends on it.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include <algorithm>

namespace graft::vk {

namespace {

const TensorProto *argProto(const BoundArgs &b, std::string_view name) {
  const Argument *a = b.find(name);
  if (!a || !a->isValue() || !a->value()->isTensor())
    return nullptr;
  return &a->value()->proto();
}

bool isFloat(DType d) {
  return d == DType::F32 || d == DType::F16;
}

/// Why tensors `names` cannot be the 4-D float operands of one attention /
/// cache kernel (same dtype), or empty.
std::string sameFloat4D(const BoundArgs &b, std::initializer_list<const char *> names) {
  std::optional<DType> dt;
  for (const char *n : names) {
    const TensorProto *p = argProto(b, n);
    if (!p || !isFloat(p->dtype) || p->rank() != 4)
      return std::string(n) + " must be a 4-D f32/f16 tensor";
    if (dt && *dt != p->dtype)
      return std::string(n) + " differs in dtype from the other operands";
    dt = p->dtype;
  }
  return {};
}

/// A symbolic or literal integer argument (start_pos, seq_len).
std::string intArgReason(const BoundArgs &b, const char *name) {
  const Argument *a = b.find(name);
  if (!a || !(a->isInt() || (a->isValue() && a->value()->kind() == ValueKind::SymInt)))
    return std::string(name) + " must be an int";
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
    const TensorProto *v = argProto(b, "value"), *c = argProto(b, "cache");
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
    GRAFT_TRY(DeviceTensor dummy, dummyResult(a.ctx(), value.dtype));
    return std::vector<LoweredValue>{std::move(dummy)};
  };
  return l;
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
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = sameFloat4D(b, {"query", "key", "value"});
    return r.empty() ? sdpaArgsReason(b) : r;
  };
  l.run = [](NodeArgs &a) -> Results {
    auto pos = a.integer("start_pos");
    if (!pos)
      return a.error("start_pos is not resolved");
    GRAFT_TRY(DeviceTensor q, a.tensor("query"));
    GRAFT_TRY(DeviceTensor k, a.tensor("key"));
    GRAFT_TRY(DeviceTensor v, a.tensor("value"));
    bool causal = a.integer("is_causal").value_or(0) != 0;
    GRAFT_TRY(DeviceTensor out, customSdpa(a.ctx(), q, k, v, *pos, causal, scaleArg(a)));
    return std::vector<LoweredValue>{std::move(out)};
  };
  return l;
}

Lowering sdpaWithKvCacheLowering() {
  Lowering l;
  l.kernel = "sdpa_kv";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = sameFloat4D(b, {"query", "key", "value", "key_cache", "value_cache"});
    if (r.empty())
      r = intArgReason(b, "seq_len");
    return r.empty() ? sdpaArgsReason(b) : r;
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
    GRAFT_TRY(DeviceTensor out, customSdpa(a.ctx(), q, kc, vc, *pos, causal, scaleArg(a)));
    return std::vector<LoweredValue>{std::move(out)};
  };
  return l;
}

/// aten.index_copy(_): `inPlace` writes self's storage (a mutable buffer
/// stays on the device); the functional form writes a copy.
Lowering indexCopyLowering(bool inPlace) {
  Lowering l;
  l.kernel = "index_copy";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = argProto(b, "self"), *src = argProto(b, "source"),
                      *index = argProto(b, "index");
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
    return {};
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
    return std::vector<LoweredValue>{std::move(dst)};
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
    const TensorProto *self = argProto(b, "self"), *values = argProto(b, "values");
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
    return std::vector<LoweredValue>{std::move(dst)};
  };
  return l;
}

/// aten.slice_scatter with step 1: a copy of self with the slice [start,
/// end) of `dim` replaced by src (start/end clamped as torch's slice does).
Lowering sliceScatterLowering() {
  Lowering l;
  l.kernel = "index_copy";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *self = argProto(b, "self"), *src = argProto(b, "src");
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
    return std::vector<LoweredValue>{std::move(out)};
  };
  return l;
}

} // namespace

void addKvCacheLowerings(std::map<std::string, Lowering, std::less<>> &m) {
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
