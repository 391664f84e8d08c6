//===- ShapeKernels.cpp - aten view, layout, copy and factory kernels -----===//
//
// View ops return strided views of their input (no data is copied: the
// interpreter never mutates a tensor, so aliasing is harmless); the *_copy
// variants ExecuTorch's edge dialect uses return contiguous copies. Values
// are identical either way. Also repeat, embedding (a gather) and full.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cstring>

namespace graft::interp {

namespace {

const char *kSelf = "self";

/// Wraps a view kernel so that it also serves the `_copy` op variant.
Kernel asCopy(Kernel view) {
  return [view](const KernelArgs &a) -> Results {
    GRAFT_TRY(auto outs, view(a));
    for (RuntimeValue &v : outs)
      if (Tensor *t = std::get_if<Tensor>(&v))
        *t = copy(*t);
    return outs;
  };
}

void addView(KernelRegistry &r, const std::string &name, const std::string &overload, Kernel k) {
  r.add("aten." + name + "." + overload, k);
  r.add("aten." + name + "_copy." + overload, asCopy(k));
}

Results requireSelf(const KernelArgs &a) {
  if (!a.tensor(kSelf).defined())
    return a.error("argument 'self' is not a tensor");
  return std::vector<RuntimeValue>{};
}

} // namespace

void registerShapeKernels(KernelRegistry &r) {
  addView(r, "t", "default", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    const Tensor &x = a.tensor(kSelf);
    if (x.rank() > 2)
      return a.error("t() expects a tensor with <= 2 dimensions, but self is " +
                     std::to_string(x.rank()) + "-D");
    if (x.rank() < 2)
      return one(x);
    GRAFT_TRY(Tensor y, transpose(x, 0, 1));
    return one(y);
  });
  addView(r, "transpose", "int", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    GRAFT_TRY(Tensor y, transpose(a.tensor(kSelf), a.integer("dim0"), a.integer("dim1")));
    return one(y);
  });
  addView(r, "permute", "default", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    GRAFT_TRY(Tensor y, permute(a.tensor(kSelf), a.intList("dims")));
    return one(y);
  });
  Kernel reshapeK = [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    std::string n = pickArg(a, {"size", "shape"});
    auto sizes = a.optionalIntList(n);
    if (!sizes)
      return a.error("argument '" + n + "' is not a list of ints");
    GRAFT_TRY(Tensor y, reshape(a.tensor(kSelf), *sizes));
    return one(y);
  };
  addView(r, "view", "default", reshapeK);
  addView(r, "reshape", "default", reshapeK);
  r.add("aten._unsafe_view.default", reshapeK);
  r.add("aten._reshape_copy.default", asCopy(reshapeK));
  addView(r, "unsqueeze", "default", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    GRAFT_TRY(Tensor y, unsqueeze(a.tensor(kSelf), a.integer("dim")));
    return one(y);
  });
  Kernel squeezeK = [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    std::vector<int64_t> dims;
    if (hasArg(a, "dim"))
      dims = a.intList("dim");
    const Tensor &x = a.tensor(kSelf);
    if (hasArg(a, "dim") && dims.empty() && x.rank() > 0)
      return one(x); // squeeze.dims with [] squeezes nothing
    GRAFT_TRY(Tensor y, squeeze(x, dims));
    return one(y);
  };
  addView(r, "squeeze", "default", squeezeK);
  addView(r, "squeeze", "dim", squeezeK);
  addView(r, "squeeze", "dims", squeezeK);
  addView(r, "expand", "default", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    GRAFT_TRY(Tensor y, expand(a.tensor(kSelf), a.intList("size")));
    return one(y);
  });
  addView(r, "slice", "Tensor", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    int64_t step = a.optionalInteger("step").value_or(1);
    GRAFT_TRY(Tensor y, slice(a.tensor(kSelf), a.optionalInteger("dim").value_or(0),
                              a.isNone("start") ? std::nullopt : a.optionalInteger("start"),
                              a.isNone("end") ? std::nullopt : a.optionalInteger("end"), step));
    return one(y);
  });
  addView(r, "select", "int", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    GRAFT_TRY(Tensor y, select(a.tensor(kSelf), a.integer("dim"), a.integer("index")));
    return one(y);
  });
  addView(r, "alias", "default", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    return one(a.tensor(kSelf));
  });
  r.add("aten.cat.default", [](const KernelArgs &a) -> Results {
    std::vector<Tensor> xs = a.tensorList("tensors");
    for (const Tensor &t : xs)
      if (!t.defined())
        return a.error("cat: every element of 'tensors' must be a tensor");
    GRAFT_TRY(Tensor y, cat(xs, a.optionalInteger("dim").value_or(0)));
    return one(y);
  });
  r.add("aten.stack.default", [](const KernelArgs &a) -> Results {
    GRAFT_TRY(Tensor y, stack(a.tensorList("tensors"), a.optionalInteger("dim").value_or(0)));
    return one(y);
  });
  Kernel cloneK = [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    return one(copy(a.tensor(kSelf)));
  };
  r.add("aten.clone.default", cloneK);
  r.add("aten.lift_fresh_copy.default", cloneK);
  r.add("dim_order_ops._clone_dim_order.default", cloneK);
  r.add("aten.repeat.default", [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    const Tensor &x = a.tensor(kSelf);
    std::vector<int64_t> repeats = a.intList("repeats");
    if (repeats.size() < static_cast<std::size_t>(x.rank()))
      return a.error("Number of dimensions of repeat dims can not be smaller than number of "
                     "dimensions of tensor");
    // TensorShape.cpp repeat: self padded with leading 1s, then each dim d
    // of size p becomes [r, p] expanded from [1, p] (an index i reads
    // self[i % p]) and the pairs are merged back.
    std::size_t lead = repeats.size() - static_cast<std::size_t>(x.rank());
    std::vector<int64_t> paired, expanded, out;
    for (std::size_t i = 0; i < repeats.size(); ++i) {
      int64_t p = i < lead ? 1 : x.size(static_cast<int64_t>(i - lead));
      if (repeats[i] < 0)
        return a.error("Trying to create tensor with negative dimension " +
                       std::to_string(repeats[i] * p));
      paired.insert(paired.end(), {1, p});
      expanded.insert(expanded.end(), {repeats[i], p});
      out.push_back(repeats[i] * p);
    }
    GRAFT_TRY(Tensor xp, reshape(x, paired));
    GRAFT_TRY(Tensor xe, expand(xp, expanded));
    GRAFT_TRY(Tensor y, reshape(copy(xe), out));
    return one(y);
  });
  Kernel toCopy = [](const KernelArgs &a) -> Results {
    GRAFT_CHECK_OK(requireSelf(a));
    const Tensor &x = a.tensor(kSelf);
    std::optional<DType> d = a.optionalDType("dtype");
    if (!d || *d == x.dtype())
      return one(copy(x));
    if (!isComputable(*d))
      return a.error("cannot convert to " + std::string(name(*d)));
    return one(x.to(*d));
  };
  r.add("aten._to_copy.default", toCopy);
  r.add("aten.to.dtype", toCopy);
  r.add("dim_order_ops._to_dim_order_copy.default", toCopy);
  r.add("aten.embedding.default", [](const KernelArgs &a) -> Results {
    const Tensor &w = a.tensor("weight");
    const Tensor &idx = a.tensor("indices");
    GRAFT_CHECK_OK(requireTensors(a, {"weight", "indices"}));
    if (w.rank() != 2)
      return a.error("embedding: 'weight' must be 2-D, got rank " + std::to_string(w.rank()));
    if (!isIntegral(idx.dtype()))
      return a.error("embedding: 'indices' must be an integer tensor, got " +
                     std::string(name(idx.dtype())));
    int64_t V = w.size(0), D = w.size(1);
    std::vector<int64_t> outSizes = idx.sizes();
    outSizes.push_back(D);
    Tensor out = Tensor::empty(w.dtype(), outSizes);
    Tensor wc = w.contiguous();
    std::size_t es = elementSize(w.dtype());
    for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
      int64_t row = idx.getInt(i);
      if (row < 0 || row >= V)
        return a.error("embedding: index " + std::to_string(row) + " is out of range for " +
                       std::to_string(V) + " rows");
      std::memcpy(out.mutableRawData() + static_cast<std::size_t>(i * D) * es,
                  wc.rawData() + static_cast<std::size_t>(row * D) * es,
                  static_cast<std::size_t>(D) * es);
    }
    return one(out);
  });
  r.add("aten.full.default", [](const KernelArgs &a) -> Results {
    auto fill = optionalNumberArg(a, "fill_value");
    if (!fill)
      return a.error("full: 'fill_value' must be a number");
    std::optional<DType> d = a.optionalDType("dtype");
    DType dt = d ? *d
                 : (fill->kind == Number::Kind::Bool
                        ? DType::Bool
                        : (fill->kind == Number::Kind::Int ? DType::I64 : DType::F32));
    std::vector<int64_t> sizes = a.intList("size");
    for (int64_t s : sizes)
      if (s < 0)
        return a.error("full: negative size " + std::to_string(s));
    Tensor out = Tensor::empty(dt, sizes);
    for (int64_t i = 0, n = out.numel(); i < n; ++i) {
      if (isIntegral(dt) && fill->kind != Number::Kind::Float)
        out.setInt(i, fill->i);
      else
        out.setDouble(i, castValue(fill->toDouble(), dt));
    }
    return one(out);
  });
}

} // namespace graft::interp
