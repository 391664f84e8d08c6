//===- KvCacheRules.cpp - Inference for KV-cache, mask and factory ops ----===//
//
// The ops a Llama export with a KV cache adds (engine/ops/aten.yaml "KV
// cache, masks and their factories", engine/ops/llama.yaml): cache updates
// (index_put, index_copy, slice_scatter, copy_, llama.update_cache) keep the
// cache's shape and dtype; the mask ops (arange, tril, comparisons, logical
// ops, masked_fill) follow torch's meta functions; llama.custom_sdpa /
// sdpa_with_kv_cache give the query's shape and dtype (custom_ops.py
// custom_sdpa / sdpa_with_kv_cache_meta: torch.empty_like(query)).
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"

#include <algorithm>
#include <cmath>

namespace graft::infer {

namespace {

const TensorProto *tensorOrNull(const Argument &a) {
  if (a.isValue() && a.value()->isTensor())
    return &a.value()->proto();
  return nullptr;
}

bool isFloatScalar(const Argument &a) {
  if (a.isFloat())
    return true;
  return a.isValue() && a.value()->kind() == ValueKind::SymFloat;
}

// arange / arange.start / arange.start_step (torch/_refs arange, RangeFactories.cpp):
// the length is ceil((end - start) / step); integer bounds give int64, any
// float bound the default dtype. A symbolic length needs step 1.
Results arangeRule(const InferContext &ctx) {
  const Argument &startArg = ctx.arg("start");
  const Argument &endArg = ctx.arg("end");
  const Argument &stepArg = ctx.arg("step");
  bool anyFloat = isFloatScalar(endArg) || isFloatScalar(startArg) || isFloatScalar(stepArg);
  DType dt = ctx.dtype("dtype").value_or(anyFloat ? kDefaultFloat : DType::I64);
  Dim len(0);
  if (anyFloat) {
    auto num = [](const Argument &a, double dflt) {
      return a.isFloat() ? a.floating() : a.isInt() ? static_cast<double>(a.integer()) : dflt;
    };
    for (const Argument *a : {&startArg, &endArg, &stepArg})
      if (a->isValue())
        return ctx.error("a symbolic float bound gives a data-dependent length");
    double s = num(startArg, 0.0), e = num(endArg, 0.0), st = num(stepArg, 1.0);
    if (st == 0 || (e - s) / st < 0)
      return ctx.error("upper bound and larger bound inconsistent with step sign");
    len = Dim(static_cast<int64_t>(std::ceil((e - s) / st)));
  } else {
    Dim start = startArg.isNone() ? Dim(0) : argumentDim(startArg).value_or(Dim(0));
    auto end = argumentDim(endArg);
    if (!end)
      return ctx.error("end must be a number or a SymInt");
    int64_t step = 1;
    if (!stepArg.isNone()) {
      if (!stepArg.isInt())
        return ctx.error("step must be a constant integer");
      step = stepArg.integer();
    }
    if (step == 0)
      return ctx.error("step must be nonzero");
    Dim diff = *end - start;
    if (diff.isConstant()) {
      int64_t d = diff.constant();
      if ((step > 0 && d < 0) || (step < 0 && d > 0))
        return ctx.error("upper bound and larger bound inconsistent with step sign");
      int64_t n = step > 0 ? (d + step - 1) / step : (d + step + 1) / step;
      len = Dim(n);
    } else if (step == 1) {
      len = diff;
    } else {
      return ctx.error("a symbolic range needs step 1");
    }
  }
  InferredResult r = tensorResult(dt, Shape{len});
  const Argument &dev = ctx.arg("device");
  if (dev.kind() == Argument::Kind::Device)
    r.proto.device = dev.device();
  return one(std::move(r));
}

// scalar_tensor(s, dtype=None): torch.scalar_tensor defaults to the default
// dtype whatever s is (TensorFactories.cpp scalar_tensor: options.dtype()).
Results scalarTensorRule(const InferContext &ctx) {
  InferredResult r = tensorResult(ctx.dtype("dtype").value_or(kDefaultFloat), Shape{});
  const Argument &dev = ctx.arg("device");
  if (dev.kind() == Argument::Kind::Device)
    r.proto.device = dev.device();
  return one(std::move(r));
}

Results trilRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (t.rank() < 2)
    return ctx.error("tril: input tensor must have at least 2 dimensions");
  return one(tensorResult(t.dtype, t.shape, &t));
}

// index_put(self, indices, values, accumulate): self's shape and dtype; each
// index a bool/integer tensor or None, at most self's rank of them, values
// of self's dtype (index_put_ checks "Index put requires the source and
// destination dtypes match").
Results indexPutRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const TensorProto &values = ctx.tensor("values");
  const Argument &idx = ctx.arg("indices");
  if (!idx.isList())
    return ctx.error("indices must be a list of tensors or None");
  if (static_cast<int64_t>(idx.list().size()) > self.rank())
    return ctx.error("too many indices for tensor of dimension " + std::to_string(self.rank()) +
                     " (got " + std::to_string(idx.list().size()) + ")");
  for (const Argument &i : idx.list()) {
    if (i.isNone())
      continue;
    const TensorProto *t = tensorOrNull(i);
    if (!t)
      return ctx.error("indices must be tensors or None");
    if (t->dtype != DType::I64 && t->dtype != DType::I32 && t->dtype != DType::Bool &&
        t->dtype != DType::U8)
      return ctx.error("tensors used as indices must be long, int, byte or bool tensors, got " +
                       std::string(name(t->dtype)));
  }
  if (values.dtype != self.dtype)
    return ctx.error("Index put requires the source and destination dtypes match, got " +
                     std::string(name(self.dtype)) + " for the destination and " +
                     std::string(name(values.dtype)) + " for the source.");
  return one(tensorResult(self.dtype, self.shape, &self));
}

// index.Tensor(self, indices): numpy advanced indexing. The integer index
// tensors broadcast together; their shape replaces the indexed dims when
// those are adjacent, else it goes first. A bool index's size is its number
// of true elements, which only the data knows.
Results indexRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const Argument &idx = ctx.arg("indices");
  if (!idx.isList())
    return ctx.error("indices must be a list of tensors or None");
  const auto &list = idx.list();
  if (static_cast<int64_t>(list.size()) > self.rank())
    return ctx.error("too many indices for tensor of dimension " + std::to_string(self.rank()) +
                     " (got " + std::to_string(list.size()) + ")");
  std::optional<Shape> bshape;
  int first = -1, last = -1;
  for (std::size_t d = 0; d < list.size(); ++d) {
    if (list[d].isNone())
      continue;
    const TensorProto *t = tensorOrNull(list[d]);
    if (!t)
      return ctx.error("indices must be tensors or None");
    if (t->dtype == DType::Bool || t->dtype == DType::U8)
      return ctx.error("a bool index gives a data-dependent shape (its number of true elements)");
    if (t->dtype != DType::I64 && t->dtype != DType::I32)
      return ctx.error("tensors used as indices must be long, int, byte or bool tensors, got " +
                       std::string(name(t->dtype)));
    if (!bshape) {
      bshape = t->shape;
      first = static_cast<int>(d);
    } else {
      auto b = broadcastShapes(*bshape, t->shape);
      if (!b)
        return ctx.error("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " +
                         shapeStr(*bshape) + ", " + shapeStr(t->shape));
      bshape = *b;
    }
    last = static_cast<int>(d);
  }
  bool adjacent = true;
  for (int d = first; first >= 0 && d <= last; ++d)
    adjacent = adjacent && !list[static_cast<std::size_t>(d)].isNone();
  Shape out;
  auto pushIndex = [&] {
    for (const Dim &d : *bshape)
      out.push_back(d);
  };
  if (bshape && !adjacent)
    pushIndex();
  for (std::size_t d = 0; d < static_cast<std::size_t>(self.rank()); ++d) {
    bool indexed = d < list.size() && !list[d].isNone();
    if (indexed) {
      if (adjacent && static_cast<int>(d) == first)
        pushIndex();
      continue;
    }
    out.push_back(self.shape[d]);
  }
  return one(tensorResult(self.dtype, out, &self));
}

// index_copy(self, dim, index, source) (TensorAdvancedIndexing.cpp
// index_copy meta): index 0-/1-D int64; source has self's rank with
// source.size(dim) == index.numel(), the other dims equal; dtypes equal.
Results indexCopyRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const TensorProto &index = ctx.tensor("index");
  const TensorProto &source = ctx.tensor("source");
  GRAFT_TRY(int64_t d, dimArg(ctx, "dim", std::max<int64_t>(self.rank(), 1)));
  if (index.rank() > 1)
    return ctx.error("index_copy_(): Index should have dimension 1 or 0 (got " +
                     std::to_string(index.rank()) + ")");
  if (index.dtype != DType::I64)
    return ctx.error("index_copy_(): Expected a long tensor for index, but got " +
                     std::string(name(index.dtype)));
  if (source.dtype != self.dtype)
    return ctx.error("index_copy_(): self and source expected to have the same dtype, but got " +
                     std::string(name(self.dtype)) + " and " + std::string(name(source.dtype)));
  if (source.rank() != self.rank())
    return ctx.error("index_copy_(): When source and destination are not scalars, their "
                     "dimensionality must match. Source dimensionality (" +
                     std::to_string(source.rank()) + "), destination dimensionality (" +
                     std::to_string(self.rank()) + ")");
  for (int64_t i = 0; i < self.rank(); ++i) {
    const Dim &s = source.shape[static_cast<std::size_t>(i)];
    const Dim &want = i == d ? (index.rank() == 0 ? Dim(1) : index.shape[0])
                             : self.shape[static_cast<std::size_t>(i)];
    if (!mayBeEqual(s, want))
      return ctx.error("index_copy_(): source " + shapeStr(source.shape) + " does not fit self " +
                       shapeStr(self.shape) + " with " + want.str() + " indices along dim " +
                       std::to_string(d));
  }
  return one(tensorResult(self.dtype, self.shape, &self));
}

// slice_scatter(self, src, dim, start, end, step): self's shape and dtype;
// src has self's rank and dtype (the slice's shape is checked at run time).
Results sliceScatterRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const TensorProto &src = ctx.tensor("src");
  GRAFT_TRY(int64_t d, dimArg(ctx, "dim", self.rank()));
  if (src.rank() != self.rank())
    return ctx.error("src " + shapeStr(src.shape) + " must have the rank of self " +
                     shapeStr(self.shape));
  for (int64_t i = 0; i < self.rank(); ++i)
    if (i != d && !mayBeEqual(src.shape[static_cast<std::size_t>(i)],
                              self.shape[static_cast<std::size_t>(i)]))
      return ctx.error("src " + shapeStr(src.shape) + " does not match self " +
                       shapeStr(self.shape) + " outside dim " + std::to_string(d));
  if (src.dtype != self.dtype)
    return ctx.error("src dtype " + std::string(name(src.dtype)) + " must match self dtype " +
                     std::string(name(self.dtype)));
  return one(tensorResult(self.dtype, self.shape, &self));
}

// copy_(self, src): self's shape and dtype; src broadcasts to self.
Results copyRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const TensorProto &src = ctx.tensor("src");
  auto b = broadcastShapes(self.shape, src.shape);
  if (!b || b->size() != self.shape.size())
    return ctx.error("src " + shapeStr(src.shape) + " is not broadcastable to self " +
                     shapeStr(self.shape));
  return one(tensorResult(self.dtype, self.shape, &self));
}

// masked_fill.Scalar: self's dtype; the mask is bool and broadcasts to self
// (masked_fill_ is in place on the expanded self: self's shape must hold it).
Results maskedFillRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const TensorProto &mask = ctx.tensor("mask");
  if (mask.dtype != DType::Bool)
    return ctx.error("masked_fill_ only supports boolean masks, but got mask with dtype " +
                     std::string(name(mask.dtype)));
  auto b = broadcastShapes(self.shape, mask.shape);
  if (!b)
    return ctx.error("mask " + shapeStr(mask.shape) + " cannot be broadcast to self " +
                     shapeStr(self.shape));
  return one(tensorResult(self.dtype, *b, &self));
}

// Broadcast over the tensor (or scalar) operands of `names`.
Expected<std::pair<Shape, DType>> broadcastAll(const InferContext &ctx,
                                               std::initializer_list<const char *> names) {
  TypePromotion tp;
  std::optional<Shape> shape;
  for (const char *n : names) {
    const Argument &a = ctx.arg(n);
    if (const TensorProto *t = tensorOrNull(a)) {
      tp.addTensor(*t);
      if (!shape) {
        shape = t->shape;
      } else {
        auto b = broadcastShapes(*shape, t->shape);
        if (!b)
          return ctx.error("shapes " + shapeStr(*shape) + " and " + shapeStr(t->shape) +
                           " cannot be broadcast together");
        shape = *b;
      }
    } else if (!a.isNone()) {
      tp.addScalar(a);
    }
  }
  auto dt = tp.result();
  if (!shape || !dt)
    return ctx.error("no tensor operand");
  return std::make_pair(*shape, *dt);
}

// clamp.Tensor: broadcast over self, min and max; dtype = result_type of all three.
Results clampTensorRule(const InferContext &ctx) {
  if (ctx.arg("min").isNone() && ctx.arg("max").isNone())
    return ctx.error("torch.clamp: At least one of 'min' or 'max' must not be None");
  GRAFT_TRY(auto sd, broadcastAll(ctx, {"self", "min", "max"}));
  if (sd.second == DType::Bool)
    return ctx.error("clamp is not supported for boolean tensors");
  return one(tensorResult(sd.second, sd.first, &ctx.tensor("self")));
}

// Comparisons and logical_and/or: broadcast, bool result.
Results compareRule(const InferContext &ctx) {
  GRAFT_TRY(auto sd, broadcastAll(ctx, {"self", "other"}));
  return one(tensorResult(DType::Bool, sd.first, &ctx.tensor("self")));
}

Results logicalNotRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  return one(tensorResult(DType::Bool, t.shape, &t));
}

// llama.update_cache(value, cache, start_pos) (custom_ops.py
// _validate_update_cache_params): 4-D value [B, S, H, D] of the cache's
// dtype, dims 0, 2 and 3 equal to the cache's; a [1] result.
Results updateCacheRule(const InferContext &ctx) {
  const TensorProto &value = ctx.tensor("value");
  const TensorProto &cache = ctx.tensor("cache");
  if (value.rank() != 4)
    return ctx.error("Expected value to be 4 dimensional but got " + std::to_string(value.rank()) +
                     " dimensions.");
  if (cache.rank() != 4)
    return ctx.error("Expected cache to be 4 dimensional but got " + std::to_string(cache.rank()) +
                     " dimensions.");
  if (value.dtype != cache.dtype)
    return ctx.error("Expected value and cache to be of the same type but got value type " +
                     std::string(name(value.dtype)) + " and cache type " +
                     std::string(name(cache.dtype)));
  for (std::size_t i : {0u, 2u, 3u})
    if (!mayBeEqual(value.shape[i], cache.shape[i]))
      return ctx.error("Expected value and cache to have same size in dimension " +
                       std::to_string(i) + " but got " + value.shape[i].str() + " and " +
                       cache.shape[i].str());
  return one(tensorResult(value.dtype, Shape{Dim(1)}, &value));
}

// llama.custom_sdpa / sdpa_with_kv_cache (custom_ops.py _validate_params):
// 4-D query, key, value (and caches) of one float dtype; a 2-D float mask.
Results llamaSdpaRule(const InferContext &ctx) {
  const TensorProto &q = ctx.tensor("query");
  std::vector<std::pair<const char *, const TensorProto *>> all = {
      {"query", &q}, {"key", &ctx.tensor("key")}, {"value", &ctx.tensor("value")}};
  if (ctx.args.has("key_cache")) {
    all.emplace_back("key_cache", &ctx.tensor("key_cache"));
    all.emplace_back("value_cache", &ctx.tensor("value_cache"));
  }
  if (q.dtype != DType::F32 && q.dtype != DType::BF16 && q.dtype != DType::F16)
    return ctx.error("Expected query to be float32, bfloat16, or float16 but got " +
                     std::string(name(q.dtype)));
  for (const auto &[n, t] : all) {
    if (t->rank() != 4)
      return ctx.error(std::string("Expected ") + n + " to be 4 dimensional but got " +
                       std::to_string(t->rank()) + " dimensions.");
    if (t->dtype != q.dtype)
      return ctx.error(std::string("Expected ") + n + " to have the same dtype as query but got " +
                       std::string(name(t->dtype)));
  }
  if (const TensorProto *m = ctx.optionalTensor("attn_mask")) {
    if (m->rank() != 2)
      return ctx.error("Expected attn_mask to be 2 dimensional but got " +
                       std::to_string(m->rank()) + " dimensions.");
    if (m->dtype != DType::F32 && m->dtype != DType::F16)
      return ctx.error("Expected attn_mask to be float but got " + std::string(name(m->dtype)));
  }
  return one(tensorResult(q.dtype, q.shape, &q));
}

} // namespace

void registerKvCacheRules(InferenceRules &rules) {
  rules.add("arange", arangeRule);
  rules.add("scalar_tensor", scalarTensorRule);
  rules.add("tril", trilRule);
  rules.add("index", indexRule);
  rules.add("index_put", indexPutRule);
  rules.add("index_copy", indexCopyRule);
  rules.add("slice_scatter", sliceScatterRule);
  rules.add("copy_", copyRule);
  rules.add("masked_fill", maskedFillRule);
  rules.add("clamp_tensor", clampTensorRule);
  rules.add("compare", compareRule);
  rules.add("logical_not", logicalNotRule);
  rules.add("update_cache", updateCacheRule);
  rules.add("llama_sdpa", llamaSdpaRule);
}

} // namespace graft::infer
