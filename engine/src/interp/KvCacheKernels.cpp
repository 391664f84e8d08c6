//===- KvCacheKernels.cpp - Reference kernels for KV caches and masks -----===//
//
// The ops of a Llama export with a KV cache (engine/ops/aten.yaml "KV cache,
// masks and their factories", engine/ops/llama.yaml) with PyTorch CPU
// semantics:
//
//   arange            start + i * step computed in double (acc_type of the
//                     CPU kernel, RangeFactoriesKernel.cpp), then rounded
//   index_put(_)      advanced indexing: None takes a whole dim, integer
//                     indices broadcast together (negative ones wrap), a bool
//                     index is its nonzero() positions; adjacent indexed dims
//                     are replaced in place by the index shape, else it goes
//                     first (numpy rules); written in row-major order, so a
//                     repeated index keeps the last value (accumulate adds)
//   index_copy(_)     self.select(dim, index[i]) = source.select(dim, i)
//   llama.update_cache   cache[:, start_pos + s] = value[:, s]
//                     (extension/llm/custom_ops/op_update_cache.cpp)
//   llama.custom_sdpa    attention over keys [0, start_pos + S) of caches
//                     with the sequence at dim 1 (op_sdpa.cpp custom_sdpa_out),
//                     computed as ATen's math SDPA does (sdpaMath): the ET
//                     kernel's tiled flash attention agrees to a few ulps
//
// In-place ops return their new value and report it with
// KernelArgs::setMutated; the interpreter rebinds the mutated argument.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cmath>
#include <limits>

namespace graft::interp {

namespace {

/// Row-major strides of contiguous `sizes`.
std::vector<int64_t> rowMajor(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;)
    s[i - 1] = s[i] * sizes[i];
  return s;
}

/// Copies element `from` of `src` to element `to` of `dst` (same dtype).
void copyElement(Tensor &dst, int64_t to, const Tensor &src, int64_t from) {
  if (isIntegral(dst.dtype(), true))
    dst.setInt(to, src.getInt(from));
  else
    dst.setDouble(to, src.getDouble(from));
}

std::optional<DType> factoryDType(const KernelArgs &a) {
  return a.optionalDType("dtype");
}

Results arangeKernel(const KernelArgs &a) {
  auto start = hasArg(a, "start") ? optionalNumberArg(a, "start") : std::optional<Number>();
  auto end = optionalNumberArg(a, "end");
  auto step = hasArg(a, "step") ? optionalNumberArg(a, "step") : std::optional<Number>();
  if (!end)
    return a.error("end must be a number");
  Number s0 = start.value_or(Number::fromInt(0)), st = step.value_or(Number::fromInt(1));
  bool anyFloat = s0.kind == Number::Kind::Float || end->kind == Number::Kind::Float ||
                  st.kind == Number::Kind::Float;
  DType dt = factoryDType(a).value_or(anyFloat ? DType::F32 : DType::I64);
  // RangeFactories.cpp arange_out: the size in double, checked.
  double xs = s0.toDouble(), xe = end->toDouble(), xst = st.toDouble();
  if (xst == 0)
    return a.error("step must be nonzero");
  if (!std::isfinite(xs) || !std::isfinite(xe))
    return a.error("unsupported range: " + std::to_string(xs) + " -> " + std::to_string(xe));
  if (!((xst > 0 && xe >= xs) || (xst < 0 && xe <= xs)))
    return a.error("upper bound and larger bound inconsistent with step sign");
  double sized = std::ceil((xe - xs) / xst);
  if (!(sized >= 0 && sized < 9.2233720368547758e18))
    return a.error("invalid size, possible overflow?");
  int64_t n = static_cast<int64_t>(sized);
  Tensor t = Tensor::empty(dt, {n});
  if (isIntegral(dt, true)) {
    // accscalar_t of an integer dtype is int64: start and step are converted
    // first (a float step truncates), then start + step * i.
    auto toInt = [](const Number &x) -> std::optional<int64_t> {
      return x.kind == Number::Kind::Float ? truncToInt64(x.f) : std::optional<int64_t>(x.i);
    };
    auto is = toInt(s0), ist = toInt(st);
    if (!is || !ist)
      return a.error("start or step cannot be converted to " + std::string(name(dt)));
    for (int64_t i = 0; i < n; ++i)
      t.setInt(i, *is + *ist * i);
  } else if (dt == DType::F16 || dt == DType::BF16) {
    // acc_type<Half/BFloat16, /*is_cuda=*/false> is float.
    for (int64_t i = 0; i < n; ++i)
      t.setDouble(i, static_cast<float>(xs) + static_cast<float>(xst) * static_cast<float>(i));
  } else {
    // acc_type<float, false> and acc_type<double, false> are double.
    for (int64_t i = 0; i < n; ++i)
      t.setDouble(i, xs + xst * static_cast<double>(i));
  }
  return one(std::move(t));
}

Results fillKernel(const KernelArgs &a, double value) {
  std::vector<int64_t> sizes = a.intList("size");
  for (int64_t s : sizes)
    if (s < 0)
      return a.error("negative dimension " + std::to_string(s));
  Tensor t = Tensor::empty(factoryDType(a).value_or(DType::F32), sizes);
  if (value != 0)
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      t.setDouble(i, value);
  return one(std::move(t));
}

Results scalarTensorKernel(const KernelArgs &a) {
  auto s = optionalNumberArg(a, "s");
  if (!s)
    return a.error("s must be a number");
  DType dt = factoryDType(a).value_or(DType::F32);
  Tensor t = Tensor::empty(dt, {});
  if (isIntegral(dt, true) && s->kind != Number::Kind::Float)
    t.setInt(0, s->i);
  else
    t.setDouble(0, s->toDouble());
  return one(std::move(t));
}

Results trilKernel(const KernelArgs &a) {
  const Tensor &x = a.tensor("self");
  if (x.rank() < 2)
    return a.error("tril: input tensor must have at least 2 dimensions");
  int64_t diag = a.integer("diagonal");
  Tensor out = copy(x);
  int64_t rows = x.size(-2), cols = x.size(-1);
  int64_t mats = rows * cols == 0 ? 0 : out.numel() / (rows * cols);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        if (j - i > diag)
          out.setInt(m * rows * cols + i * cols + j, 0);
  return one(std::move(out));
}

/// The value a Python number becomes in `dt` (bool: nonzero).
void setNumber(Tensor &t, int64_t i, const Number &n) {
  if (t.dtype() == DType::Bool)
    t.setInt(i, n.toDouble() != 0 ? 1 : 0);
  else if (isIntegral(t.dtype(), true) && n.kind != Number::Kind::Float)
    t.setInt(i, n.i);
  else
    t.setDouble(i, n.toDouble());
}

/// self[indices] with numpy's advanced indexing (TensorAdvancedIndexing.cpp):
/// the result's shape and, per result element in row-major order, the
/// logical element of self it is.
struct IndexMap {
  std::vector<int64_t> shape;
  std::vector<int64_t> selfLinear;
};

Expected<IndexMap> advancedIndex(const KernelArgs &a, const Tensor &self) {
  // Bool indices become their nonzero() positions, one long index per dim.
  std::vector<Tensor> idx;
  for (const Tensor &t : a.tensorList("indices")) {
    if (!t.defined()) {
      idx.emplace_back();
      continue;
    }
    if (t.dtype() == DType::Bool || t.dtype() == DType::U8) {
      int64_t r = t.rank();
      std::vector<std::vector<int64_t>> pos(static_cast<std::size_t>(r));
      std::vector<int64_t> st = rowMajor(t.sizes());
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        if (t.getInt(i))
          for (int64_t d = 0; d < r; ++d)
            pos[static_cast<std::size_t>(d)].push_back(i / st[static_cast<std::size_t>(d)] %
                                                       t.size(d));
      for (auto &p : pos) {
        int64_t count = static_cast<int64_t>(p.size());
        idx.push_back(Tensor::fromInts(DType::I64, {count}, p));
      }
      continue;
    }
    if (!isIntegral(t.dtype()))
      return a.error("tensors used as indices must be long, int, byte or bool tensors");
    idx.push_back(t);
  }
  if (static_cast<int64_t>(idx.size()) > self.rank())
    return a.error("too many indices for tensor of dimension " + std::to_string(self.rank()) +
                   " (got " + std::to_string(idx.size()) + ")");
  idx.resize(static_cast<std::size_t>(self.rank()));
  // Broadcast the index tensors; find whether the indexed dims are adjacent.
  std::vector<int64_t> bshape;
  int first = -1, last = -1;
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (!idx[d].defined())
      continue;
    if (first < 0) {
      bshape = idx[d].sizes();
      first = static_cast<int>(d);
    } else {
      GRAFT_TRY(bshape, broadcastSizes(bshape, idx[d].sizes()));
    }
    last = static_cast<int>(d);
  }
  bool adjacent = true;
  for (int d = first; first >= 0 && d <= last; ++d)
    adjacent = adjacent && idx[static_cast<std::size_t>(d)].defined();
  for (Tensor &t : idx)
    if (t.defined())
      t = expandTo(t, bshape);
  // The result's shape: the kept dims, with the broadcast index shape in
  // place of the indexed dims (adjacent) or in front of them.
  IndexMap m;
  std::vector<int> srcDim; // per result dim: self dim, or -1 for an index dim
  auto pushIndex = [&] {
    for (int64_t s : bshape) {
      m.shape.push_back(s);
      srcDim.push_back(-1);
    }
  };
  if (first >= 0 && !adjacent)
    pushIndex();
  for (std::size_t d = 0; d < idx.size(); ++d) {
    if (idx[d].defined()) {
      if (adjacent && static_cast<int>(d) == first)
        pushIndex();
      continue;
    }
    m.shape.push_back(self.size(static_cast<int64_t>(d)));
    srcDim.push_back(static_cast<int>(d));
  }
  std::vector<int64_t> rst = rowMajor(m.shape), sst = rowMajor(self.sizes()),
                       bst = rowMajor(bshape);
  int64_t total = 1;
  for (int64_t s : m.shape)
    total *= s;
  m.selfLinear.reserve(static_cast<std::size_t>(total));
  for (int64_t r = 0; r < total; ++r) {
    int64_t bLinear = 0, selfLinear = 0;
    std::size_t bi = 0;
    for (std::size_t i = 0; i < m.shape.size(); ++i) {
      int64_t coord = r / rst[i] % m.shape[i];
      if (srcDim[i] < 0)
        bLinear += coord * bst[bi++];
      else
        selfLinear += coord * sst[static_cast<std::size_t>(srcDim[i])];
    }
    for (std::size_t d = 0; d < idx.size(); ++d) {
      if (!idx[d].defined())
        continue;
      int64_t n = self.size(static_cast<int64_t>(d));
      int64_t k = idx[d].getInt(bLinear);
      if (k < -n || k >= n)
        return a.error("index " + std::to_string(k) + " is out of bounds for dimension " +
                       std::to_string(d) + " with size " + std::to_string(n));
      selfLinear += (k < 0 ? k + n : k) * sst[d];
    }
    m.selfLinear.push_back(selfLinear);
  }
  return m;
}

std::string shapeText(DType dtype, const std::vector<int64_t> &sizes) {
  return TensorProto(dtype, Shape(sizes.begin(), sizes.end())).str();
}

/// index_put / index_put_: self with self[indices] = values, written in
/// row-major order of the indexed result (a repeated index keeps the last
/// value); accumulate adds in self's dtype instead.
Expected<Tensor> indexPut(const KernelArgs &a) {
  const Tensor &self = a.tensor("self");
  const Tensor &values = a.tensor("values");
  bool accumulate = a.boolean("accumulate");
  if (values.dtype() != self.dtype())
    return a.error("Index put requires the source and destination dtypes match, got " +
                   std::string(name(self.dtype())) + " for the destination and " +
                   std::string(name(values.dtype())) + " for the source.");
  GRAFT_TRY(IndexMap m, advancedIndex(a, self));
  auto vb = broadcastSizes(values.sizes(), m.shape);
  if (!vb.ok() || *vb != m.shape)
    return a.error(
        "shape mismatch: value tensor of shape " + shapeText(values.dtype(), values.sizes()) +
        " cannot be broadcast to indexing result of shape " + shapeText(self.dtype(), m.shape));
  Tensor v = expandTo(values, m.shape);
  Tensor out = copy(self);
  for (std::size_t r = 0; r < m.selfLinear.size(); ++r) {
    int64_t at = m.selfLinear[r], from = static_cast<int64_t>(r);
    if (!accumulate) {
      copyElement(out, at, v, from);
    } else if (isIntegral(self.dtype(), true) && self.dtype() != DType::Bool) {
      // Integer accumulation wraps in the element type (setInt narrows).
      out.setInt(at, static_cast<int64_t>(static_cast<uint64_t>(out.getInt(at)) +
                                          static_cast<uint64_t>(v.getInt(from))));
    } else {
      GRAFT_TRY(Tensor s, binary(BinaryOp::Add, Tensor::scalar(self.dtype(), out.getDouble(at)),
                                 Tensor::scalar(self.dtype(), v.getDouble(from))));
      out.setDouble(at, s.getDouble(0));
    }
  }
  return out;
}

/// index.Tensor: self[indices] (ExecuTorch's static-shape KV cache reads
/// `self.mask[input_pos]`, Rope `freqs_cos[input_pos]`).
Results indexKernel(const KernelArgs &a) {
  const Tensor &self = a.tensor("self");
  GRAFT_TRY(IndexMap m, advancedIndex(a, self));
  Tensor out = Tensor::empty(self.dtype(), m.shape);
  for (std::size_t r = 0; r < m.selfLinear.size(); ++r)
    copyElement(out, static_cast<int64_t>(r), self, m.selfLinear[r]);
  return one(std::move(out));
}

/// index_copy / index_copy_ (TensorAdvancedIndexing.cpp index_copy_out).
Expected<Tensor> indexCopy(const KernelArgs &a) {
  const Tensor &self = a.tensor("self");
  const Tensor &index = a.tensor("index");
  const Tensor &source = a.tensor("source");
  GRAFT_TRY(int64_t dim, wrapDim(a.integer("dim"), std::max<int64_t>(self.rank(), 1)));
  if (index.rank() > 1)
    return a.error("index_copy_(): Index should have dimension 1 or 0 (got " +
                   std::to_string(index.rank()) + ")");
  if (index.dtype() != DType::I64)
    return a.error("index_copy_(): Expected a long tensor for index, but got " +
                   std::string(name(index.dtype())));
  if (source.dtype() != self.dtype())
    return a.error("index_copy_(): self and source expected to have the same dtype");
  int64_t n = index.numel();
  if (source.rank() != self.rank())
    return a.error("index_copy_(): source and destination dimensionality must match");
  for (int64_t d = 0; d < self.rank(); ++d)
    if (source.size(d) != (d == dim ? n : self.size(d)))
      return a.error(
          "index_copy_(): source " +
          TensorProto(source.dtype(), Shape(source.sizes().begin(), source.sizes().end())).str() +
          " does not fit self with " + std::to_string(n) + " indices along dim " +
          std::to_string(dim));
  Tensor out = copy(self);
  int64_t size = self.rank() == 0 ? 1 : self.size(dim);
  for (int64_t i = 0; i < n; ++i) {
    int64_t k = index.getInt(i);
    if (k < 0 || k >= size)
      return a.error("index_copy_(): index " + std::to_string(k) +
                     " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                     std::to_string(size));
    if (self.rank() == 0) {
      copyElement(out, 0, source, 0);
      continue;
    }
    GRAFT_TRY(Tensor dst, select(out, dim, k));
    GRAFT_TRY(Tensor src, select(source, dim, i));
    for (int64_t e = 0, m = src.numel(); e < m; ++e)
      copyElement(dst, e, src, e);
  }
  return out;
}

Results sliceScatterKernel(const KernelArgs &a) {
  const Tensor &self = a.tensor("self");
  const Tensor &src = a.tensor("src");
  if (self.rank() == 0)
    return a.error("slice_scatter() cannot be applied to a 0-dim tensor");
  if (src.dtype() != self.dtype())
    return a.error("src dtype " + std::string(name(src.dtype())) + " must match self dtype " +
                   std::string(name(self.dtype())));
  int64_t step = a.integer("step");
  if (step <= 0)
    return a.error("slice step must be positive");
  Tensor out = copy(self);
  GRAFT_TRY(Tensor dst, slice(out, a.integer("dim"), a.optionalInteger("start"),
                              a.optionalInteger("end"), step));
  if (dst.sizes() != src.sizes())
    return a.error("expected src to have a size equal to the slice of self: src " +
                   TensorProto(src.dtype(), Shape(src.sizes().begin(), src.sizes().end())).str() +
                   ", slice " +
                   TensorProto(dst.dtype(), Shape(dst.sizes().begin(), dst.sizes().end())).str());
  for (int64_t e = 0, m = src.numel(); e < m; ++e)
    copyElement(dst, e, src, e);
  return one(std::move(out));
}

/// aten.copy (functional) and copy_: src broadcast to self's shape and
/// converted to self's dtype; copy_ also reports self as mutated.
Kernel copyKernel(bool inPlace) {
  return [inPlace](const KernelArgs &a) -> Results {
    const Tensor &self = a.tensor("self");
    const Tensor &src = a.tensor("src");
    auto b = broadcastSizes(self.sizes(), src.sizes());
    if (!b.ok() || *b != self.sizes())
      return a.error("src is not broadcastable to self");
    Tensor s = expandTo(src, self.sizes());
    Tensor out = s.dtype() == self.dtype() ? copy(s) : copy(s).to(self.dtype());
    if (inPlace)
      a.setMutated("self", out);
    return one(std::move(out));
  };
}

Results maskedFillKernel(const KernelArgs &a) {
  const Tensor &self = a.tensor("self");
  const Tensor &mask = a.tensor("mask");
  if (mask.dtype() != DType::Bool)
    return a.error("masked_fill_ only supports boolean masks, but got mask with dtype " +
                   std::string(name(mask.dtype())));
  auto value = optionalNumberArg(a, "value");
  if (!value)
    return a.error("value must be a number");
  if (isIntegral(self.dtype(), true) && self.dtype() != DType::Bool &&
      value->kind == Number::Kind::Float && !std::isfinite(value->f))
    return a.error("value cannot be converted to type " + std::string(name(self.dtype())) +
                   " without overflow");
  GRAFT_TRY(std::vector<int64_t> shape, broadcastSizes(self.sizes(), mask.sizes()));
  Tensor out = copy(expandTo(self, shape));
  Tensor m = expandTo(mask, shape);
  for (int64_t i = 0, n = out.numel(); i < n; ++i)
    if (m.getInt(i))
      setNumber(out, i, *value);
  return one(std::move(out));
}

Results clampTensorKernel(const KernelArgs &a) {
  const Tensor &self = a.tensor("self");
  const Tensor *lo = a.optionalTensor("min");
  const Tensor *hi = a.optionalTensor("max");
  if (!lo && !hi)
    return a.error("torch.clamp: At least one of 'min' or 'max' must not be None");
  std::vector<Operand> ops{self};
  for (const Tensor *b : {lo, hi})
    if (b)
      ops.emplace_back(*b);
  DType dt = resultType(ops);
  if (dt == DType::Bool)
    return a.error("clamp is not supported for boolean tensors");
  auto cast = [&](const Tensor &t) { return t.dtype() == dt ? t : t.to(dt); };
  // clamp_kernel_impl: min(max(a, lo), hi), NaN from any operand propagating,
  // which is maximum then minimum in the common dtype.
  Tensor r = cast(self);
  if (lo) {
    GRAFT_TRY(r, binary(BinaryOp::Maximum, r, cast(*lo)));
  }
  if (hi) {
    GRAFT_TRY(r, binary(BinaryOp::Minimum, r, cast(*hi)));
  }
  return one(std::move(r));
}

std::function<Results(const KernelArgs &)> compareKernel(BinaryOp op) {
  return [op](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor t, binary(op, operand(a, "self"), operand(a, "other")));
    return one(std::move(t));
  };
}

std::function<Results(const KernelArgs &)> logicalKernel(bool isAnd) {
  return [isAnd](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self"), &y = a.tensor("other");
    GRAFT_TRY(std::vector<int64_t> shape, broadcastSizes(x.sizes(), y.sizes()));
    Tensor xe = expandTo(x, shape), ye = expandTo(y, shape);
    Tensor out = Tensor::empty(DType::Bool, shape);
    for (int64_t i = 0, n = out.numel(); i < n; ++i) {
      bool p = xe.getDouble(i) != 0, q = ye.getDouble(i) != 0;
      out.setInt(i, isAnd ? (p && q) : (p || q));
    }
    return one(std::move(out));
  };
}

/// op_update_cache.cpp update_cache_out: checks, then copies value's S
/// positions into the cache at start_pos.
Expected<Tensor> updateCache(const KernelArgs &a, const Tensor &value, const Tensor &cache,
                             int64_t startPos, const char *what) {
  if (value.rank() != 4 || cache.rank() != 4)
    return a.error(std::string(what) + ": value and cache must be 4-D");
  if (value.dtype() != cache.dtype())
    return a.error(std::string(what) + ": value and cache must have the same dtype");
  for (int64_t d : {0, 2, 3})
    if (value.size(d) != cache.size(d))
      return a.error(std::string(what) + ": value and cache differ in dim " + std::to_string(d) +
                     " (" + std::to_string(value.size(d)) + " vs " + std::to_string(cache.size(d)) +
                     ")");
  int64_t S = value.size(1), M = cache.size(1);
  if (startPos < 0 || startPos + S > M)
    return a.error(std::string(what) + ": start_pos " + std::to_string(startPos) + " + " +
                   std::to_string(S) + " positions exceed the cache's " + std::to_string(M));
  Tensor out = copy(cache);
  GRAFT_TRY(Tensor dst, slice(out, 1, startPos, startPos + S, 1));
  for (int64_t e = 0, m = value.numel(); e < m; ++e)
    copyElement(dst, e, value, e);
  return out;
}

/// custom_sdpa_out on [B, S, H, D] query and [B, M, Hkv, D] caches: keys
/// [0, start_pos + S) attend, causal with query i at position start_pos + i
/// (or an additive [S, M'] mask when given, start_pos then unused).
Expected<Tensor> customSdpa(const KernelArgs &a, const Tensor &q, const Tensor &k, const Tensor &v,
                            int64_t startPos) {
  if (a.optionalNumber("drpout_p").value_or(0.0) != 0.0)
    return a.error("drpout_p != 0 is random and has no reference result");
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    return a.error("query, key and value must be 4-D [B, S, H, D]");
  int64_t S = q.size(1), H = q.size(2), Hk = k.size(2);
  if (Hk == 0 || H % Hk != 0 || v.size(2) != Hk)
    return a.error("query heads " + std::to_string(H) + " are not a multiple of key heads " +
                   std::to_string(Hk));
  const Tensor *mask = a.optionalTensor("attn_mask");
  bool causal = a.boolean("is_causal");
  std::optional<double> scale = a.optionalNumber("scale");
  if (a.isNone("scale"))
    scale.reset();
  int64_t keys = mask ? mask->size(-1) : startPos + S;
  if (startPos < 0 || keys > k.size(1))
    return a.error("start_pos " + std::to_string(startPos) + " + " + std::to_string(S) +
                   " positions exceed the cache's " + std::to_string(k.size(1)));
  GRAFT_TRY(Tensor ks, slice(k, 1, 0, keys, 1));
  GRAFT_TRY(Tensor vs, slice(v, 1, 0, keys, 1));
  GRAFT_TRY(Tensor qt, transpose(q, 1, 2));
  GRAFT_TRY(Tensor kt, transpose(ks, 1, 2));
  GRAFT_TRY(Tensor vt, transpose(vs, 1, 2));
  auto out =
      sdpaMath(qt, kt, vt, mask, causal && !mask ? std::optional<int64_t>(startPos) : std::nullopt,
               scale, /*enableGqa=*/true);
  if (!out.ok())
    return a.error(out.diags()[0].message);
  GRAFT_TRY(Tensor o, transpose(*out, 1, 2));
  return copy(o);
}

} // namespace

void registerKvCacheKernels(KernelRegistry &r) {
  r.add("aten.arange.default", arangeKernel);
  r.add("aten.arange.start", arangeKernel);
  r.add("aten.arange.start_step", arangeKernel);
  r.add("aten.ones.default", [](const KernelArgs &a) { return fillKernel(a, 1.0); });
  r.add("aten.zeros.default", [](const KernelArgs &a) { return fillKernel(a, 0.0); });
  r.add("aten.scalar_tensor.default", scalarTensorKernel);
  r.add("aten.tril.default", trilKernel);
  r.add("aten.index.Tensor", indexKernel);
  r.add("aten.index_put.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor t, indexPut(a));
    return one(std::move(t));
  });
  r.add("aten.index_put_.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor t, indexPut(a));
    a.setMutated("self", t);
    return one(std::move(t));
  });
  r.add("aten.index_copy.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor t, indexCopy(a));
    return one(std::move(t));
  });
  r.add("aten.index_copy_.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor t, indexCopy(a));
    a.setMutated("self", t);
    return one(std::move(t));
  });
  r.add("aten.slice_scatter.default", sliceScatterKernel);
  r.add("aten.copy_.default", copyKernel(true));
  r.add("aten.copy.default", copyKernel(false));
  r.add("aten.masked_fill.Scalar", maskedFillKernel);
  r.add("aten.clamp.Tensor", clampTensorKernel);
  for (const auto &[n, op] : {std::pair{"lt", BinaryOp::Lt}, std::pair{"le", BinaryOp::Le},
                              std::pair{"gt", BinaryOp::Gt}, std::pair{"ge", BinaryOp::Ge},
                              std::pair{"eq", BinaryOp::Eq}, std::pair{"ne", BinaryOp::Ne}}) {
    r.add(std::string("aten.") + n + ".Tensor", compareKernel(op));
    r.add(std::string("aten.") + n + ".Scalar", compareKernel(op));
  }
  r.add("aten.logical_and.default", logicalKernel(true));
  r.add("aten.logical_or.default", logicalKernel(false));
  r.add("aten.logical_not.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    Tensor out = Tensor::empty(DType::Bool, x.sizes());
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      out.setInt(i, x.getDouble(i) == 0);
    return one(std::move(out));
  });
  r.add("llama.update_cache.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor c, updateCache(a, a.tensor("value"), a.tensor("cache"), a.integer("start_pos"),
                                    "update_cache"));
    a.setMutated("cache", c);
    // update_cache_meta: torch.empty((1,), dtype=value.dtype); its contents
    // are unspecified upstream, zero here.
    return one(Tensor::empty(a.tensor("value").dtype(), {1}));
  });
  r.add("llama.custom_sdpa.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor o, customSdpa(a, a.tensor("query"), a.tensor("key"), a.tensor("value"),
                                   a.integer("start_pos")));
    return one(std::move(o));
  });
  r.add("llama.sdpa_with_kv_cache.default", [](const KernelArgs &a) -> Results {
    int64_t pos = a.integer("start_pos");
    const Tensor &q = a.tensor("query");
    if (q.rank() == 4 && a.integer("seq_len") != q.size(1))
      return a.error("seq_len " + std::to_string(a.integer("seq_len")) +
                     " is not the query's sequence length " + std::to_string(q.size(1)));
    GRAFT_TRY(Tensor kc,
              updateCache(a, a.tensor("key"), a.tensor("key_cache"), pos, "sdpa_with_kv_cache"));
    GRAFT_TRY(Tensor vc, updateCache(a, a.tensor("value"), a.tensor("value_cache"), pos,
                                     "sdpa_with_kv_cache"));
    a.setMutated("key_cache", kc);
    a.setMutated("value_cache", vc);
    GRAFT_TRY(Tensor o, customSdpa(a, q, kc, vc, pos));
    return one(std::move(o));
  });
}

} // namespace graft::interp
