//===- ShapeRules.cpp - Inference for view and data-movement ops ----------===//
//
// view/reshape (with -1 inference over symbolic sizes), permute, transpose,
// t, (un)squeeze, expand, slice, select, cat, plus the symbolic-scalar ops
// (sym_size, _local_scalar_dense) and the result-less assertion ops. Views
// keep the input's dtype. Symbolic dims are handled with Dim arithmetic; when
// a size cannot be derived exactly the rule fails with a diagnostic rather
// than guess.
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"

#include <algorithm>
#include <limits>

namespace graft::infer {

namespace {

// A product of dims split into a constant factor and irreducible symbolic
// factors, so that s0*4096 / 4096 cancels exactly.
struct Factors {
  int64_t constant = 1;
  Shape symbolic;

  void multiply(const Dim &d) {
    if (d.isConstant()) {
      constant *= d.constant();
      return;
    }
    // k*s (a single scaled symbol) factors into k and s.
    if (!d.isOpaque() && d.terms().size() == 1 && d.constant() == 0) {
      constant *= d.terms()[0].second;
      symbolic.push_back(Dim::symbol(d.terms()[0].first));
      return;
    }
    symbolic.push_back(d);
  }
  // Removes `other`'s symbolic factors from this; false if one is missing.
  bool cancel(const Factors &other) {
    for (const Dim &d : other.symbolic) {
      auto it = std::find(symbolic.begin(), symbolic.end(), d);
      if (it == symbolic.end())
        return false;
      symbolic.erase(it);
    }
    return true;
  }
  Dim product() const {
    Dim out(constant);
    for (const Dim &d : symbolic)
      out = out * d;
    return out;
  }
};

Factors factorsOf(const Shape &shape) {
  Factors f;
  for (const Dim &d : shape)
    f.multiply(d);
  return f;
}

// view/reshape/_unsafe_view/view_copy: the size list, with one -1 inferred.
Results viewRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  const char *argName = ctx.args.has("size") ? "size" : "shape";
  auto sizes = ctx.dims(argName);
  if (!sizes)
    return ctx.error(std::string(argName) + " must be a list of ints or SymInts");
  int inferIdx = -1;
  Factors known;
  for (std::size_t i = 0; i < sizes->size(); ++i) {
    const Dim &d = (*sizes)[i];
    if (d.isConstant() && d.constant() == -1) {
      if (inferIdx >= 0)
        return ctx.error("only one dimension can be inferred (-1) in " + shapeStr(*sizes));
      inferIdx = static_cast<int>(i);
      continue;
    }
    if (d.isConstant() && d.constant() < 0)
      return ctx.error("invalid size " + std::to_string(d.constant()) + " in " + shapeStr(*sizes));
    known.multiply(d);
  }
  Factors input = factorsOf(t.shape);
  Shape out = *sizes;
  if (inferIdx >= 0) {
    if (known.constant == 0)
      return ctx.error("cannot infer -1 in " + shapeStr(*sizes) + " when other sizes are 0");
    Factors rest = input;
    if (!rest.cancel(known))
      return ctx.error("cannot infer -1 in " + shapeStr(*sizes) + ": the input size " +
                       shapeStr(t.shape) + " is not provably divisible by the other sizes");
    if (rest.constant % known.constant != 0) {
      if (!rest.symbolic.empty())
        return ctx.error("cannot infer -1 in " + shapeStr(*sizes) + ": the input size " +
                         t.numel().str() + " is not provably divisible by the other sizes");
      return ctx.error("shape " + shapeStr(*sizes) + " is invalid for input of size " +
                       t.numel().str());
    }
    rest.constant /= known.constant;
    out[static_cast<std::size_t>(inferIdx)] = rest.product();
    return one(tensorResult(t.dtype, out, &t));
  }
  // All sizes given: reject only provable numel mismatches.
  Factors a = input, b = known;
  bool symbolicMatch = a.cancel(known) && a.symbolic.empty();
  if (symbolicMatch && a.constant != b.constant)
    return ctx.error("shape " + shapeStr(*sizes) + " is invalid for input of size " +
                     t.numel().str());
  if (input.symbolic.empty() && known.symbolic.empty() && input.constant != known.constant)
    return ctx.error("shape " + shapeStr(*sizes) + " is invalid for input of size " +
                     t.numel().str());
  return one(tensorResult(t.dtype, out, &t));
}

Results permuteRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  auto dims = ctx.arg("dims").intList();
  if (!dims || static_cast<int64_t>(dims->size()) != t.rank())
    return ctx.error("dims must list each of the " + std::to_string(t.rank()) +
                     " dimensions exactly once");
  std::vector<bool> seen(dims->size(), false);
  Shape out;
  for (int64_t d : *dims) {
    int64_t n = normalizeDim(d, t.rank());
    if (n < 0 || t.rank() == 0 || seen[static_cast<std::size_t>(n)])
      return ctx.error("dims must be a permutation of the input's dimensions");
    seen[static_cast<std::size_t>(n)] = true;
    out.push_back(t.shape[static_cast<std::size_t>(n)]);
  }
  return one(tensorResult(t.dtype, out, &t));
}

Results transposeRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  Shape out = t.shape;
  if (t.rank() == 0)
    return one(tensorResult(t.dtype, out, &t));
  GRAFT_TRY(int64_t a, dimArg(ctx, "dim0", t.rank()));
  GRAFT_TRY(int64_t b, dimArg(ctx, "dim1", t.rank()));
  std::swap(out[static_cast<std::size_t>(a)], out[static_cast<std::size_t>(b)]);
  return one(tensorResult(t.dtype, out, &t));
}

Results tRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (t.rank() > 2)
    return ctx.error("t() expects a tensor with <= 2 dimensions, got " + shapeStr(t.shape));
  Shape out = t.shape;
  std::reverse(out.begin(), out.end());
  return one(tensorResult(t.dtype, out, &t));
}

Results unsqueezeRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  GRAFT_TRY(int64_t d, intArg(ctx, "dim"));
  int64_t n = d < 0 ? d + t.rank() + 1 : d;
  if (n < 0 || n > t.rank())
    return ctx.error("dim " + std::to_string(d) + " is out of range for unsqueeze of rank " +
                     std::to_string(t.rank()));
  Shape out = t.shape;
  out.insert(out.begin() + n, Dim(1));
  return one(tensorResult(t.dtype, out, &t));
}

// squeeze (all size-1 dims), squeeze.dim, squeeze.dims, squeeze_copy.dims.
Results squeezeRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  std::vector<bool> candidate(static_cast<std::size_t>(t.rank()), !ctx.args.has("dim"));
  if (ctx.args.has("dim")) {
    auto dims = ctx.arg("dim").intList();
    if (!dims)
      return ctx.error("dim must be an int or a list of ints");
    for (int64_t d : *dims) {
      if (t.rank() == 0 && (d == 0 || d == -1))
        continue;
      GRAFT_TRY(int64_t n, checkedDim(ctx, d, t.rank()));
      candidate[static_cast<std::size_t>(n)] = true;
    }
  }
  Shape out;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    const Dim &d = t.shape[i];
    if (!candidate[i] || provablyNotOne(d, ctx.symbols)) {
      out.push_back(d);
      continue;
    }
    if (provablyOne(d))
      continue;
    return ctx.error("cannot tell whether symbolic dim " + std::to_string(i) + " (" + d.str() +
                     ") is 1, so the squeezed shape is unknown");
  }
  return one(tensorResult(t.dtype, out, &t));
}

// expand/expand_copy: -1 keeps a dim, new leading dims may be added, only
// size-1 dims grow.
Results expandRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  auto sizes = ctx.dims("size");
  if (!sizes)
    return ctx.error("size must be a list of ints or SymInts");
  if (sizes->size() < t.shape.size())
    return ctx.error("the number of sizes (" + std::to_string(sizes->size()) +
                     ") must be at least the tensor's rank (" + std::to_string(t.rank()) + ")");
  std::size_t lead = sizes->size() - t.shape.size();
  Shape out;
  for (std::size_t i = 0; i < sizes->size(); ++i) {
    const Dim &s = (*sizes)[i];
    bool keep = s.isConstant() && s.constant() == -1;
    if (i < lead) {
      if (keep)
        return ctx.error("-1 is not allowed for a new leading dimension in expand");
      out.push_back(s);
      continue;
    }
    const Dim &in = t.shape[i - lead];
    if (keep || s == in) {
      out.push_back(in);
    } else if (provablyOne(in)) {
      out.push_back(s);
    } else if (!mayBeEqual(s, in) || in.isConstant()) {
      return ctx.error("cannot expand dim " + std::to_string(i - lead) + " of size " + in.str() +
                       " to " + s.str() + " (only size-1 dims can be expanded)");
    } else {
      return ctx.error("cannot prove that symbolic dim " + in.str() + " equals " + s.str());
    }
  }
  return one(tensorResult(t.dtype, out, &t));
}

// repeat (TensorShape.cpp): self padded with leading 1s to len(repeats) dims,
// each dim multiplied by its repeat; a negative repeat is at::empty's error.
Results repeatRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  auto repeats = ctx.dims("repeats");
  if (!repeats)
    return ctx.error("repeats must be a list of ints or SymInts");
  if (repeats->size() < t.shape.size())
    return ctx.error("Number of dimensions of repeat dims (" + std::to_string(repeats->size()) +
                     ") can not be smaller than number of dimensions of tensor (" +
                     std::to_string(t.rank()) + ")");
  std::size_t lead = repeats->size() - t.shape.size();
  Shape out;
  for (std::size_t i = 0; i < repeats->size(); ++i) {
    const Dim &r = (*repeats)[i];
    if (r.isConstant() && r.constant() < 0)
      return ctx.error("repeats " + shapeStr(*repeats) + " has a negative repeat");
    out.push_back(i < lead ? r : t.shape[i - lead] * r);
  }
  return one(tensorResult(t.dtype, out, &t));
}

// torch.export spells "to the end" as a huge end (sys.maxsize).
bool isToEnd(const Dim &d) {
  return d.isConstant() && d.constant() >= (std::numeric_limits<int64_t>::max() >> 1);
}

// Facts `f <= 0` the graph's runtime assertions give about a slice bound:
// about the bound's own value and about the SymInts it is computed from
// (narrow's check `u0 + s0 <= 64` may be asserted on the end u0 + s0 or on
// u0 itself, as `u0 <= 64 - s0`).
std::vector<Dim> boundFacts(const Argument &arg) {
  std::vector<Dim> facts;
  if (!arg.isValue() || arg.value()->kind() != ValueKind::SymInt)
    return facts;
  auto collect = [&](const Value &v) {
    for (Dim &f : assertedNonPositive(v))
      facts.push_back(std::move(f));
  };
  const Value *v = arg.value();
  collect(*v);
  if (const Node *p = v->producer())
    for (const Argument &a : p->args())
      if (a.isValue() && a.value()->kind() == ValueKind::SymInt)
        collect(*a.value());
  return facts;
}

// Whether x <= 0 follows from the symbol ranges alone, or from one asserted
// fact f <= 0 plus the ranges (x = f + (x - f) and x - f <= 0).
bool provablyNonPositive(const Dim &x, const SymbolTable &st, const std::vector<Dim> &facts) {
  auto hi = x.isConstant() ? std::optional<int64_t>(x.constant()) : st.upperBound(x);
  if (hi && *hi <= 0)
    return true;
  for (const Dim &f : facts) {
    Dim rest = x - f;
    auto r = rest.isConstant() ? std::optional<int64_t>(rest.constant()) : st.upperBound(rest);
    if (r && *r <= 0)
      return true;
  }
  return false;
}

// Clamps a slice bound to [0, size] (aten.slice's Python semantics: a
// negative bound counts from the end, then clamps), symbolically when the
// symbol ranges and the graph's runtime assertions decide where it falls.
// `arg` is the bound as written (a SymInt value carries assertions).
Expected<Dim> clampBound(const InferContext &ctx, const Dim &v, const Dim &size, const char *what,
                         const Argument &arg) {
  if (v.isConstant() && size.isConstant()) {
    int64_t x = v.constant(), n = size.constant();
    if (x < 0)
      x += n;
    return Dim(std::clamp<int64_t>(x, 0, n));
  }
  if (isToEnd(v))
    return size;
  if (v == size)
    return size;
  const SymbolTable &st = ctx.symbols;
  if (v.isConstant() && v.constant() < 0) {
    // size + v, provided that stays >= 0.
    auto lo = st.lowerBound(size);
    if (lo && *lo + v.constant() >= 0)
      return size + v;
  } else {
    std::vector<Dim> facts = boundFacts(arg);
    // A bound that may be negative would count from the end: it must be
    // provably >= 0 (an unbacked position is, by _check_is_size).
    if (provablyNonPositive(v * -1, st, facts)) {
      if (provablyNonPositive(v - size, st, facts))
        return v; // 0 <= v <= size: no clamping
      if (provablyNonPositive(size - v, st, facts))
        return size; // v >= size: clamps to the end
    }
  }
  return ctx.error(std::string("cannot determine where slice ") + what + " " + v.str() +
                   " falls in a dim of size " + size.str() + " under the declared symbol ranges");
}

Results sliceRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (t.rank() == 0)
    return ctx.error("slice() cannot be applied to a 0-dim tensor");
  GRAFT_TRY(int64_t d, dimArg(ctx, "dim", t.rank()));
  const Dim &size = t.shape[static_cast<std::size_t>(d)];
  auto step = ctx.dim("step");
  if (!step || !step->isConstant() || step->constant() <= 0)
    return ctx.error("slice step must be a positive integer");
  Dim start = ctx.arg("start").isNone() ? Dim(0) : ctx.dim("start").value_or(Dim(0));
  Dim end = ctx.arg("end").isNone() ? size : ctx.dim("end").value_or(size);
  GRAFT_TRY(Dim s, clampBound(ctx, start, size, "start", ctx.arg("start")));
  GRAFT_TRY(Dim e, clampBound(ctx, end, size, "end", ctx.arg("end")));
  Dim len = e - s;
  if (len.isConstant() && len.constant() < 0)
    len = Dim(0);
  int64_t k = step->constant();
  if (k != 1) {
    if (len.isConstant())
      len = Dim((len.constant() + k - 1) / k);
    else
      len = (len + Dim(k - 1)).floorDiv(k);
  }
  Shape out = t.shape;
  out[static_cast<std::size_t>(d)] = len;
  return one(tensorResult(t.dtype, out, &t));
}

Results selectRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  if (t.rank() == 0)
    return ctx.error("select() cannot be applied to a 0-dim tensor");
  GRAFT_TRY(int64_t d, dimArg(ctx, "dim", t.rank()));
  const Dim &size = t.shape[static_cast<std::size_t>(d)];
  auto idx = ctx.dim("index");
  if (idx && idx->isConstant() && size.isConstant()) {
    int64_t i = idx->constant(), n = size.constant();
    if (i < -n || i >= n)
      return ctx.error("index " + std::to_string(i) + " is out of range for dim " +
                       std::to_string(d) + " of size " + std::to_string(n));
  }
  Shape out = t.shape;
  out.erase(out.begin() + d);
  return one(tensorResult(t.dtype, out, &t));
}

Results catRule(const InferContext &ctx) {
  const Argument &list = ctx.arg("tensors");
  std::vector<const TensorProto *> ts;
  for (const Argument &a : list.list())
    ts.push_back(&a.value()->proto());
  if (ts.empty())
    return ctx.error("cat() expects a non-empty list of tensors");
  // torch skips legacy empty 1-D tensors of shape [0].
  auto skipped = [](const TensorProto *p) {
    return p->rank() == 1 && p->shape[0].isConstant() && p->shape[0].constant() == 0;
  };
  const TensorProto *ref = nullptr;
  TypePromotion tp;
  for (const TensorProto *p : ts) {
    tp.addTensor(*p);
    if (!ref && !skipped(p))
      ref = p;
  }
  DType dt = tp.result().value_or(ts[0]->dtype);
  if (!ref)
    return one(tensorResult(dt, ts[0]->shape, ts[0]));
  if (ref->rank() == 0)
    return ctx.error("zero-dimensional tensors cannot be concatenated");
  GRAFT_TRY(int64_t d, dimArg(ctx, "dim", ref->rank()));
  Shape out = ref->shape;
  Dim total(0);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const TensorProto *p = ts[i];
    if (skipped(p))
      continue;
    if (p->rank() != ref->rank())
      return ctx.error("tensor " + std::to_string(i) + " has rank " + std::to_string(p->rank()) +
                       ", expected " + std::to_string(ref->rank()));
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (static_cast<int64_t>(j) == d)
        continue;
      if (p->shape[j] != out[j])
        return ctx.error("sizes of tensors must match except in dim " + std::to_string(d) +
                         ": tensor " + std::to_string(i) + " has " + shapeStr(p->shape) +
                         ", expected " + shapeStr(out) + " there");
    }
    total = total + p->shape[static_cast<std::size_t>(d)];
  }
  out[static_cast<std::size_t>(d)] = total;
  return one(tensorResult(dt, out, ref));
}

Results symSizeRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  GRAFT_CHECK_OK(dimArg(ctx, "dim", t.rank()));
  InferredResult r;
  r.kind = ValueKind::SymInt;
  return one(std::move(r));
}

// sym_numel: a SymInt; dimOfSymInt follows it to the product of self's dims.
// (Binding has already checked that self is a tensor.)
Results symNumelRule(const InferContext &) {
  InferredResult r;
  r.kind = ValueKind::SymInt;
  return one(std::move(r));
}

// _local_scalar_dense (Tensor.item()): the symbolic scalar kind follows the dtype.
Results localScalarRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("self");
  Dim n = t.numel();
  if (n.isConstant() && n.constant() != 1)
    return ctx.error("item() needs a tensor with exactly one element, got " + shapeStr(t.shape));
  InferredResult r;
  r.kind = t.dtype == DType::Bool ? ValueKind::SymBool
           : isIntegral(t.dtype)  ? ValueKind::SymInt
                                  : ValueKind::SymFloat;
  return one(std::move(r));
}

// et_vk.select_as_symint(x, dim, index): x.select(dim, index).item() as a SymInt.
Results selectAsSymIntRule(const InferContext &ctx) {
  const TensorProto &t = ctx.tensor("x");
  if (t.rank() == 0)
    return ctx.error("select() cannot be applied to a 0-dim tensor");
  GRAFT_CHECK_OK(dimArg(ctx, "dim", t.rank()));
  if (!isIntegral(t.dtype))
    return ctx.error("x must be an integer tensor, got " + std::string(name(t.dtype)));
  InferredResult r;
  r.kind = ValueKind::SymInt;
  return one(std::move(r));
}

Results noResults(const InferContext &) {
  return std::vector<InferredResult>{};
}

} // namespace

void registerShapeRules(InferenceRules &rules) {
  rules.add("view", viewRule);
  rules.add("permute", permuteRule);
  rules.add("transpose", transposeRule);
  rules.add("t", tRule);
  rules.add("unsqueeze", unsqueezeRule);
  rules.add("squeeze", squeezeRule);
  rules.add("expand", expandRule);
  rules.add("repeat", repeatRule);
  rules.add("slice", sliceRule);
  rules.add("select", selectRule);
  rules.add("cat", catRule);
  rules.add("sym_size", symSizeRule);
  rules.add("sym_numel", symNumelRule);
  rules.add("local_scalar_dense", localScalarRule);
  rules.add("select_as_symint", selectAsSymIntRule);
  rules.add("no_results", noResults);
}

} // namespace graft::infer
