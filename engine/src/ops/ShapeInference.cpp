//===- ShapeInference.cpp - Rule table, contexts and shared helpers -------===//
//
// Result prototypes are computed by named rules (see engine/ops/*.yaml
// `infer:`). This file holds the rule table, the InferContext accessors,
// inferResults() and the helpers every rule family shares (broadcasting, dim
// normalisation, type promotion). The rules themselves live in
// engine/src/ops/infer/*.cpp, one file per family.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/ShapeInference.h"

#include "graft/ops/OpRegistry.h"
#include "infer/InferUtil.h"

#include <algorithm>
#include <cassert>

namespace graft {

//===----------------------------------------------------------------------===//
// Symbolic scalars
//===----------------------------------------------------------------------===//

namespace {

std::string parenthesized(const Dim &d) {
  std::string s = d.str();
  return d.isConstant() || d.isSymbol() ? s : "(" + s + ")";
}

/// Python's floor division and modulo on constants (floor toward -inf, the
/// remainder takes the divisor's sign); nullopt when b is 0.
std::optional<int64_t> pyFloorDiv(int64_t a, int64_t b) {
  if (b == 0)
    return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

/// The Dim of a Python sym-op result (operator.add, ..., torch.sym_max),
/// from its operands' Dims; nullopt when `target` is no such op or an
/// operand is not an int. Non-linear results are opaque dims spelled the way
/// the text IR and SymExpr.cpp spell them (`u0//2`, `u0%4`, `Max(u0, 1)`).
std::optional<Dim> symArithDim(const Node &p, const std::string &target) {
  static const char *const kOps[] = {"operator.add.default",  "operator.sub.default",
                                     "operator.mul.default",  "operator.floordiv.default",
                                     "operator.mod.default",  "operator.neg.default",
                                     "torch.sym_max.default", "torch.sym_min.default"};
  bool known = false;
  for (const char *op : kOps)
    known = known || target == op;
  if (!known)
    return std::nullopt;
  const auto &args = p.args();
  bool unary = target == "operator.neg.default";
  if (args.size() != (unary ? 1u : 2u) || !p.kwargs().empty())
    return std::nullopt;
  // Python bools are ints: True + 1 == 2.
  auto operand = [](const Argument &a) -> std::optional<Dim> {
    if (a.isBool())
      return Dim(a.boolean() ? 1 : 0);
    return argumentDim(a);
  };
  auto a = operand(args[0]);
  if (!a)
    return std::nullopt;
  if (unary)
    return *a * -1;
  auto b = operand(args[1]);
  if (!b)
    return std::nullopt;
  if (target == "operator.add.default")
    return *a + *b;
  if (target == "operator.sub.default")
    return *a - *b;
  if (target == "operator.mul.default")
    return *a * *b;
  if (a->isConstant() && b->isConstant()) {
    int64_t x = a->constant(), y = b->constant();
    if (target == "torch.sym_max.default")
      return Dim(std::max(x, y));
    if (target == "torch.sym_min.default")
      return Dim(std::min(x, y));
    auto q = pyFloorDiv(x, y);
    if (!q)
      return std::nullopt; // division by zero: the interpreter reports it
    return target == "operator.floordiv.default" ? Dim(*q) : Dim(x - *q * y);
  }
  if (target == "operator.floordiv.default") {
    if (b->isConstant() && b->constant() > 0)
      return a->floorDiv(b->constant());
    return Dim::opaque(parenthesized(*a) + "//" + parenthesized(*b));
  }
  if (target == "operator.mod.default")
    return Dim::opaque(parenthesized(*a) + "%" + parenthesized(*b));
  if (*a == *b)
    return *a;
  return Dim::opaque(std::string(target == "torch.sym_max.default" ? "Max(" : "Min(") + a->str() +
                     ", " + b->str() + ")");
}

} // namespace

Dim dimOfSymInt(const Value &value) {
  const Value *v = &value;
  if (const Node *p = v->producer()) {
    std::string target = canonicalTarget(p->target());
    // Follow sym_size chains: the size of a tensor is whatever its proto says.
    if ((target == "aten.sym_size.int") && p->args().size() == 2 && p->args()[0].isValue() &&
        p->args()[1].isInt()) {
      const TensorProto &t = p->args()[0].value()->proto();
      int64_t d = normalizeDim(p->args()[1].integer(), t.rank());
      if (d >= 0)
        return t.shape[static_cast<std::size_t>(d)];
    }
    // sym_numel is the product of the dims (an opaque dim when two of them
    // are symbolic, as for any non-linear product).
    if (target == "aten.sym_numel.default" && p->args().size() == 1 && p->args()[0].isValue() &&
        p->args()[0].value()->isTensor())
      return p->args()[0].value()->proto().numel();
    // Arithmetic on SymInts is the expression over its operands' Dims (the
    // end u0 + 8 of a narrow), recursively; chains are a few nodes long.
    if (auto d = symArithDim(*p, target))
      return *d;
  }
  return Dim::symbol(v->name());
}

std::vector<Dim> assertedNonPositive(const Value &value) {
  std::vector<Dim> facts;
  for (const Node *user : value.users()) {
    if (user->numOutputs() != 1 || user->args().size() != 2)
      continue;
    std::string t = canonicalTarget(user->target());
    bool le = t == "operator.le.default", lt = t == "operator.lt.default";
    bool ge = t == "operator.ge.default", gt = t == "operator.gt.default";
    if (!le && !lt && !ge && !gt)
      continue;
    const Value *cond = user->output();
    bool asserted = false;
    for (const Node *c : cond->users())
      asserted = asserted || canonicalTarget(c->target()) == "aten._assert_scalar.default";
    if (!asserted)
      continue;
    auto a = argumentDim(user->args()[0]), b = argumentDim(user->args()[1]);
    if (!a || !b || a->isOpaque() || b->isOpaque())
      continue;
    // a <= b  <=>  a - b <= 0;  a < b  <=>  a - b + 1 <= 0 (integers).
    Dim f = (le || lt) ? *a - *b : *b - *a;
    if (lt || gt)
      f = f + Dim(1);
    facts.push_back(std::move(f));
  }
  return facts;
}

std::optional<Dim> argumentDim(const Argument &arg) {
  if (arg.isInt())
    return Dim(arg.integer());
  if (arg.isValue() && arg.value()->kind() == ValueKind::SymInt)
    return dimOfSymInt(*arg.value());
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// InferContext
//===----------------------------------------------------------------------===//

const TensorProto &InferContext::tensor(std::string_view name) const {
  const Argument &a = args.get(name);
  assert(a.isValue() && a.value()->isTensor() && "InferContext::tensor: not a tensor");
  return a.value()->proto();
}

const TensorProto *InferContext::optionalTensor(std::string_view name) const {
  const Argument *a = args.find(name);
  if (!a || !a->isValue() || !a->value()->isTensor())
    return nullptr;
  return &a->value()->proto();
}

Diagnostic InferContext::error(const std::string &message) const {
  std::string n(nodeName);
  if (!n.empty() && n[0] != '%')
    n = "%" + n;
  return Diagnostic::error("node " + n + " (" + args.schema().qualifiedName() + "): " + message);
}

const Argument &InferContext::arg(std::string_view name) const {
  static const Argument kNone;
  const Argument *a = args.find(name);
  return a ? *a : kNone;
}

std::optional<Dim> InferContext::dim(std::string_view name) const {
  return argumentDim(arg(name));
}

std::optional<Shape> InferContext::dims(std::string_view name) const {
  const Argument &a = arg(name);
  Shape out;
  if (!a.isList()) {
    auto d = argumentDim(a);
    if (!d)
      return std::nullopt;
    out.push_back(*d);
    return out;
  }
  for (const Argument &e : a.list()) {
    auto d = argumentDim(e);
    if (!d)
      return std::nullopt;
    out.push_back(*d);
  }
  return out;
}

std::optional<DType> InferContext::dtype(std::string_view name) const {
  const Argument &a = arg(name);
  if (a.isDType())
    return a.dtype();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Rule table
//===----------------------------------------------------------------------===//

void InferenceRules::add(std::string name, InferFn fn) {
  for (auto &[n, f] : rules_)
    if (n == name) {
      f = std::move(fn);
      return;
    }
  rules_.emplace_back(std::move(name), std::move(fn));
}

const InferFn *InferenceRules::find(std::string_view name) const {
  for (const auto &[n, f] : rules_)
    if (n == name)
      return &f;
  return nullptr;
}

std::vector<std::string> InferenceRules::names() const {
  std::vector<std::string> out;
  for (const auto &kv : rules_)
    out.push_back(kv.first);
  return out;
}

const InferenceRules &InferenceRules::builtin() {
  static const InferenceRules *rules = [] {
    auto *r = new InferenceRules();
    infer::registerElementwiseRules(*r);
    infer::registerShapeRules(*r);
    infer::registerReductionRules(*r);
    infer::registerLinalgRules(*r);
    infer::registerQuantRules(*r);
    infer::registerSymRules(*r);
    infer::registerKvCacheRules(*r);
    return r;
  }();
  return *rules;
}

Expected<std::vector<InferredResult>> inferResults(const Node &node, const SymbolTable &symbols) {
  const OpSchema *schema = node.schema();
  if (!schema)
    return Diagnostic::error("node %" + node.name() + " (" + node.target() +
                             "): op is not registered, so its results cannot be inferred");
  if (schema->inferRule.empty())
    return Diagnostic::error("node %" + node.name() + " (" + schema->qualifiedName() +
                             "): op declares no inference rule");
  const InferFn *fn = InferenceRules::builtin().find(schema->inferRule);
  if (!fn)
    return Diagnostic::internal("node %" + node.name() + " (" + schema->qualifiedName() +
                                "): unknown inference rule '" + schema->inferRule + "'");
  GRAFT_TRY(BoundArgs bound, BoundArgs::bind(node));
  InferContext ctx{bound, symbols, node.name()};
  return (*fn)(ctx);
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

int64_t normalizeDim(int64_t dim, int64_t rank) {
  // torch treats a scalar (rank 0) as if it had one dim for dim wrapping.
  int64_t r = rank == 0 ? 1 : rank;
  if (dim < -r || dim >= r)
    return -1;
  return dim < 0 ? dim + r : dim;
}

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Align from the right.
    const Dim *da = i < n - a.size() ? nullptr : &a[i - (n - a.size())];
    const Dim *db = i < n - b.size() ? nullptr : &b[i - (n - b.size())];
    if (!da) {
      out[i] = *db;
    } else if (!db) {
      out[i] = *da;
    } else if (*da == *db) {
      out[i] = *da;
    } else if (da->isConstant() && da->constant() == 1) {
      out[i] = *db;
    } else if (db->isConstant() && db->constant() == 1) {
      out[i] = *da;
    } else {
      // Different sizes, neither provably 1: torch.export would have guarded
      // them equal; without that guard the result is unknowable.
      return std::nullopt;
    }
  }
  return out;
}

namespace infer {

InferredResult tensorResult(DType dtype, Shape shape, const TensorProto *like) {
  InferredResult r;
  r.kind = ValueKind::Tensor;
  r.proto = TensorProto(dtype, std::move(shape));
  if (like)
    r.proto.device = like->device;
  return r;
}

Results one(InferredResult r) {
  std::vector<InferredResult> v;
  v.push_back(std::move(r));
  return v;
}

std::string shapeStr(const Shape &shape) {
  return graft::str(shape);
}

bool mayBeEqual(const Dim &a, const Dim &b) {
  if (a == b)
    return true;
  Dim diff = a - b;
  return !diff.isConstant();
}

bool provablyOne(const Dim &d) {
  return d.isConstant() && d.constant() == 1;
}

bool provablyNotOne(const Dim &d, const SymbolTable &symbols) {
  if (d.isConstant())
    return d.constant() != 1;
  auto lo = symbols.lowerBound(d);
  if (lo && *lo >= 2)
    return true;
  auto hi = symbols.upperBound(d);
  return hi && *hi <= 0;
}

namespace {
int category(DType d) {
  if (d == DType::Bool)
    return 0;
  if (isComplex(d))
    return 3;
  if (isFloatingPoint(d))
    return 2;
  return 1;
}

void accumulate(std::optional<DType> &acc, DType d) {
  acc = acc ? promoteTypes(*acc, d) : d;
}

// c10's combine_categories: the higher-priority class wins unless the lower
// one is of a higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher)
    return lower;
  if (!lower)
    return higher;
  if (category(*higher) >= 2 && category(*lower) <= category(*higher))
    return higher;
  if (category(*lower) > category(*higher))
    return promoteTypes(*higher, *lower);
  return higher;
}
} // namespace

void TypePromotion::addTensor(const TensorProto &t) {
  accumulate(t.rank() == 0 ? zeroResult_ : dimResult_, t.dtype);
}

void TypePromotion::addScalar(const Argument &a) {
  if (a.isBool())
    accumulate(wrappedResult_, DType::Bool);
  else if (a.isInt())
    accumulate(wrappedResult_, DType::I64);
  else if (a.isFloat())
    accumulate(wrappedResult_, kDefaultFloat);
  else if (a.isValue()) {
    switch (a.value()->kind()) {
    case ValueKind::SymInt:
      accumulate(wrappedResult_, DType::I64);
      break;
    case ValueKind::SymFloat:
      accumulate(wrappedResult_, kDefaultFloat);
      break;
    case ValueKind::SymBool:
      accumulate(wrappedResult_, DType::Bool);
      break;
    case ValueKind::Tensor:
      addTensor(a.value()->proto());
      break;
    }
  }
}

std::optional<DType> TypePromotion::result() const {
  return combine(dimResult_, combine(zeroResult_, wrappedResult_));
}

Expected<int64_t> checkedDim(const InferContext &ctx, int64_t dim, int64_t rank, const char *what) {
  int64_t d = normalizeDim(dim, rank);
  if (d < 0)
    return ctx.error(std::string(what) + " " + std::to_string(dim) +
                     " is out of range for a tensor of rank " + std::to_string(rank));
  return d;
}

Expected<int64_t> intArg(const InferContext &ctx, const char *name) {
  const Argument &a = ctx.arg(name);
  if (!a.isInt())
    return ctx.error(std::string("argument '") + name + "' must be a concrete int here, got " +
                     std::string(graft::name(a.kind())));
  return a.integer();
}

Expected<bool> boolArg(const InferContext &ctx, const char *name) {
  const Argument &a = ctx.arg(name);
  if (!a.isBool())
    return ctx.error(std::string("argument '") + name + "' must be a concrete bool here, got " +
                     std::string(graft::name(a.kind())));
  return a.boolean();
}

Expected<int64_t> dimArg(const InferContext &ctx, const char *name, int64_t rank) {
  GRAFT_TRY(int64_t d, intArg(ctx, name));
  return checkedDim(ctx, d, rank, name);
}

} // namespace infer
} // namespace graft
