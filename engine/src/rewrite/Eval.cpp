//===- Eval.cpp - Evaluating where-predicates and computed attributes -----===//
//
// Expressions see captures (ints, dims, dtypes, values, lists), pattern
// results and, in a rewrite, earlier computed attributes. Arithmetic on
// symbolic dims stays symbolic (Dim algebra); an ordering comparison on a
// symbolic dim is decided from the graph's declared symbol ranges when they
// settle it, and is otherwise Unknown (a failed predicate whose explanation
// says why). Constant-data builtins (values_in, all_zero) read a constant's
// data lazily, once per run.
//
//===----------------------------------------------------------------------===//
#include "Matcher.h"
#include "RewriteUtil.h"

#include "graft/ops/ShapeInference.h"
#include "graft/support/SmallVector.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace graft::rewrite::detail {

//===----------------------------------------------------------------------===//
// EvalValue
//===----------------------------------------------------------------------===//

EvalValue EvalValue::boolean(bool x) {
  EvalValue v;
  v.kind = Kind::Bool;
  v.b = x;
  return v;
}
EvalValue EvalValue::integer(int64_t x) {
  EvalValue v;
  v.kind = Kind::Int;
  v.i = x;
  return v;
}
EvalValue EvalValue::number(double x) {
  EvalValue v;
  v.kind = Kind::Float;
  v.f = x;
  return v;
}
EvalValue EvalValue::string(std::string x) {
  EvalValue v;
  v.kind = Kind::String;
  v.s = std::move(x);
  return v;
}
EvalValue EvalValue::dtype(DType x) {
  EvalValue v;
  v.kind = Kind::DType;
  v.dt = x;
  return v;
}
EvalValue EvalValue::ofDim(const Dim &d) {
  if (d.isConstant())
    return integer(d.constant());
  EvalValue v;
  v.kind = Kind::Dim;
  v.dim = d;
  return v;
}
EvalValue EvalValue::value(const Value *x) {
  EvalValue v;
  v.kind = x ? Kind::Value : Kind::None;
  v.v = x;
  return v;
}
EvalValue EvalValue::unknown(std::string why) {
  EvalValue v;
  v.kind = Kind::Unknown;
  v.s = std::move(why);
  return v;
}

std::string EvalValue::str() const {
  switch (kind) {
  case Kind::None:
    return "none";
  case Kind::Bool:
    return b ? "true" : "false";
  case Kind::Int:
    return std::to_string(i);
  case Kind::Float:
    return formatDouble(f);
  case Kind::String:
    return s;
  case Kind::DType:
    return std::string(name(dt));
  case Kind::Dim:
    return dim.str();
  case Kind::Value:
    return "%" + v->name();
  case Kind::List: {
    std::string out = "[";
    for (std::size_t k = 0; k < list.size(); ++k)
      out += (k ? ", " : "") + list[k].str();
    return out + "]";
  }
  case Kind::Unknown:
    return "<unknown: " + s + ">";
  }
  return "?";
}

EvalValue fromArgument(const Argument &arg) {
  switch (arg.kind()) {
  case Argument::Kind::None:
    return EvalValue::none();
  case Argument::Kind::Value:
    return EvalValue::value(arg.value());
  case Argument::Kind::Bool:
    return EvalValue::boolean(arg.boolean());
  case Argument::Kind::Int:
    return EvalValue::integer(arg.integer());
  case Argument::Kind::Float:
    return EvalValue::number(arg.floating());
  case Argument::Kind::String:
    return EvalValue::string(arg.string());
  case Argument::Kind::DType:
    return EvalValue::dtype(arg.dtype());
  case Argument::Kind::List: {
    EvalValue v;
    v.kind = EvalValue::Kind::List;
    for (const Argument &e : arg.list())
      v.list.push_back(fromArgument(e));
    return v;
  }
  default:
    return EvalValue::string(formatArgument(arg));
  }
}

bool truthy(const EvalValue &v) {
  return v.kind == EvalValue::Kind::Bool && v.b;
}

namespace {

/// A numeric view of an EvalValue: Int, Float, Bool, or a SymInt value
/// resolved to a constant dim.
struct Num {
  bool isInt = true;
  int64_t i = 0;
  double f = 0;
  double asDouble() const { return isInt ? static_cast<double>(i) : f; }
};

std::optional<Dim> asDim(const EvalValue &v) {
  if (v.kind == EvalValue::Kind::Int)
    return Dim(v.i);
  if (v.kind == EvalValue::Kind::Dim)
    return v.dim;
  if (v.kind == EvalValue::Kind::Value && v.v && v.v->kind() == ValueKind::SymInt)
    return dimOfSymInt(*v.v);
  return std::nullopt;
}

std::optional<Num> asNum(const EvalValue &v) {
  switch (v.kind) {
  case EvalValue::Kind::Int:
    return Num{true, v.i, 0};
  case EvalValue::Kind::Bool:
    return Num{true, v.b ? 1 : 0, 0};
  case EvalValue::Kind::Float:
    return Num{false, 0, v.f};
  case EvalValue::Kind::Dim:
  case EvalValue::Kind::Value: {
    auto d = asDim(v);
    if (d && d->isConstant())
      return Num{true, d->constant(), 0};
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

int64_t floorModInt(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

/// p op q for the integer operators + - * // % (Python semantics); nullopt
/// for other operators and for // or % by zero. Shared by eval() and the
/// EvalValue-free intPredicate, so both compute the same.
std::optional<int64_t> intArithmetic(BinOp op, int64_t p, int64_t q) {
  switch (op) {
  case BinOp::Add:
    return p + q;
  case BinOp::Sub:
    return p - q;
  case BinOp::Mul:
    return p * q;
  case BinOp::FloorDiv:
    return q == 0 ? std::nullopt : std::optional<int64_t>(floorDivInt(p, q));
  case BinOp::Mod:
    return q == 0 ? std::nullopt : std::optional<int64_t>(floorModInt(p, q));
  default:
    return std::nullopt;
  }
}

/// p op q for the ordering operators < <= > >=; nullopt for others.
template <class T> std::optional<bool> ordered(BinOp op, T p, T q) {
  switch (op) {
  case BinOp::Lt:
    return p < q;
  case BinOp::Le:
    return p <= q;
  case BinOp::Gt:
    return p > q;
  case BinOp::Ge:
    return p >= q;
  default:
    return std::nullopt;
  }
}

bool equalValues(const EvalValue &a, const EvalValue &b) {
  using K = EvalValue::Kind;
  if (a.kind == K::None || b.kind == K::None)
    return a.kind == b.kind;
  if (a.kind == K::Value && b.kind == K::Value)
    return a.v == b.v;
  if (a.kind == K::DType || b.kind == K::DType)
    return a.kind == b.kind && a.dt == b.dt;
  if (a.kind == K::String || b.kind == K::String)
    return a.kind == b.kind && a.s == b.s;
  if (a.kind == K::List || b.kind == K::List) {
    if (a.kind != b.kind || a.list.size() != b.list.size())
      return false;
    for (std::size_t i = 0; i < a.list.size(); ++i)
      if (!equalValues(a.list[i], b.list[i]))
        return false;
    return true;
  }
  auto na = asNum(a), nb = asNum(b);
  if (na && nb) {
    if (na->isInt && nb->isInt)
      return na->i == nb->i;
    return na->asDouble() == nb->asDouble();
  }
  auto da = asDim(a), db = asDim(b);
  return da && db && *da == *db;
}

} // namespace

//===----------------------------------------------------------------------===//
// Matcher: evaluation
//===----------------------------------------------------------------------===//

const Matcher::DataRange &Matcher::dataRange(const Value *v) const {
  auto it = ranges_.find(v);
  if (it != ranges_.end())
    return it->second;
  DataRange r;
  const GraphInput *in = graph_.inputFor(v);
  if (in && in->isConstant() && in->hasData() && !v->proto().quant) {
    // load(), not data(): a deferred constant is computed for the scan and
    // dropped, not kept alive by a predicate.
    auto loaded = in->load();
    Tensor t = loaded.ok() ? std::move(*loaded) : Tensor();
    if (t.defined()) {
      r.hasData = true;
      r.min = std::numeric_limits<double>::infinity();
      r.max = -std::numeric_limits<double>::infinity();
      r.numeric = visitIntegers(t, [&](const auto *p, int64_t n) {
        // Min/max in the element type (vectorizes: this scans GBs of int8
        // weights for values_in), converted once.
        using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
        if (n == 0)
          return;
        T lo = p[0], hi = p[0];
        for (int64_t i = 1; i < n; ++i) {
          lo = p[i] < lo ? p[i] : lo;
          hi = p[i] > hi ? p[i] : hi;
        }
        r.min = static_cast<double>(lo);
        r.max = static_cast<double>(hi);
      });
      if (!r.numeric && isComputable(t.dtype()) && !isComplex(t.dtype())) {
        r.numeric = true;
        for (int64_t i = 0, n = t.numel(); i < n; ++i) {
          double x = t.getDouble(i);
          if (std::isnan(x)) {
            r.hasNaN = true;
            continue;
          }
          r.min = std::min(r.min, x);
          r.max = std::max(r.max, x);
        }
      }
      if (t.numel() == 0)
        r.min = r.max = 0;
      // One pass over a mapped weight is done: its pages leave the RSS.
      t.releasePages();
    }
  }
  return ranges_.emplace(v, r).first->second;
}

EvalValue Matcher::slotValue(int slot) const {
  if (slot < 0 || static_cast<std::size_t>(slot) >= captures_.size())
    return EvalValue::unknown("unbound capture");
  const Capture &c = captures_[static_cast<std::size_t>(slot)];
  switch (c.kind) {
  case Capture::Kind::Arg:
    return fromArgument(*c.arg);
  case Capture::Kind::Dim:
    return EvalValue::ofDim(*c.dim);
  case Capture::Kind::DType:
    return EvalValue::dtype(c.dtype);
  case Capture::Kind::Unbound:
    break;
  }
  return EvalValue::unknown("$" + rule_->slotNames[static_cast<std::size_t>(slot)] +
                            " is not bound");
}

namespace {
/// The integer an int-only expression evaluates to (see intPredicate), or
/// false. Mirrors evalBinary's Int x Int cases.
bool intValue(const CExpr &e, const std::vector<Capture> &captures, int64_t &out) {
  switch (e.kind) {
  case Expr::Kind::Literal:
    if (e.literal.kind() != Argument::Kind::Int)
      return false;
    out = e.literal.integer();
    return true;
  case Expr::Kind::Var: {
    if (e.slot < 0 || static_cast<std::size_t>(e.slot) >= captures.size())
      return false;
    const Capture &c = captures[static_cast<std::size_t>(e.slot)];
    if (c.kind == Capture::Kind::Arg && c.arg->kind() == Argument::Kind::Int) {
      out = c.arg->integer();
      return true;
    }
    if (c.kind == Capture::Kind::Dim && c.dim->isConstant()) {
      out = c.dim->constant();
      return true;
    }
    return false;
  }
  case Expr::Kind::Binary: {
    int64_t p = 0, q = 0;
    if (!intValue(e.operands[0], captures, p) || !intValue(e.operands[1], captures, q))
      return false;
    std::optional<int64_t> r = intArithmetic(e.bin, p, q);
    if (r)
      out = *r;
    return r.has_value();
  }
  default:
    return false;
  }
}
} // namespace

bool Matcher::intPredicate(const CExpr &e, bool &truth) const {
  if (e.kind != Expr::Kind::Binary)
    return false;
  int64_t p = 0, q = 0;
  if (!intValue(e.operands[0], captures_, p) || !intValue(e.operands[1], captures_, q))
    return false;
  std::optional<bool> r = e.bin == BinOp::Eq   ? std::optional<bool>(p == q)
                          : e.bin == BinOp::Ne ? std::optional<bool>(p != q)
                                               : ordered(e.bin, p, q);
  if (r)
    truth = *r;
  return r.has_value();
}

const Value *Matcher::valueOf(const CExpr &e, const std::vector<EvalValue> *extraSlots,
                              const std::vector<EvalValue> *rewriteValues) const {
  // Mirrors eval's Var and PatResult cases.
  auto asValue = [](const EvalValue &v) {
    return v.kind == EvalValue::Kind::Value ? v.v : nullptr;
  };
  if (e.kind == Expr::Kind::Var) {
    if (e.slot < 0 || static_cast<std::size_t>(e.slot) >= captures_.size())
      return nullptr;
    const Capture &c = captures_[static_cast<std::size_t>(e.slot)];
    if (c.kind == Capture::Kind::Unbound) {
      if (extraSlots && static_cast<std::size_t>(e.slot) < extraSlots->size())
        return asValue((*extraSlots)[static_cast<std::size_t>(e.slot)]);
      return nullptr;
    }
    return c.kind == Capture::Kind::Arg && c.arg->isValue() ? c.arg->value() : nullptr;
  }
  if (e.kind == Expr::Kind::PatResult) {
    if (e.rewriteValue >= 0)
      return rewriteValues && static_cast<std::size_t>(e.rewriteValue) < rewriteValues->size()
                 ? asValue((*rewriteValues)[static_cast<std::size_t>(e.rewriteValue)])
                 : nullptr;
    return patternValue(e.patNode, e.result);
  }
  return nullptr;
}

EvalValue Matcher::eval(const CExpr &e, const std::vector<EvalValue> *extraSlots,
                        const std::vector<EvalValue> *rewriteValues) const {
  switch (e.kind) {
  case Expr::Kind::Literal:
    return fromArgument(e.literal);
  case Expr::Kind::Var: {
    if (e.slot >= 0 && static_cast<std::size_t>(e.slot) < captures_.size() &&
        captures_[static_cast<std::size_t>(e.slot)].kind == Capture::Kind::Unbound && extraSlots &&
        static_cast<std::size_t>(e.slot) < extraSlots->size() &&
        (*extraSlots)[static_cast<std::size_t>(e.slot)].kind != EvalValue::Kind::Unknown)
      return (*extraSlots)[static_cast<std::size_t>(e.slot)];
    return slotValue(e.slot);
  }
  case Expr::Kind::PatResult:
    if (e.rewriteValue >= 0) {
      if (rewriteValues && static_cast<std::size_t>(e.rewriteValue) < rewriteValues->size())
        return (*rewriteValues)[static_cast<std::size_t>(e.rewriteValue)];
      return EvalValue::unknown("value not yet built");
    }
    return EvalValue::value(patternValue(e.patNode, e.result));
  case Expr::Kind::List: {
    EvalValue v;
    v.kind = EvalValue::Kind::List;
    for (const CExpr &o : e.operands)
      v.list.push_back(eval(o, extraSlots, rewriteValues));
    return v;
  }
  case Expr::Kind::Unary: {
    EvalValue a = eval(e.operands[0], extraSlots, rewriteValues);
    if (a.kind == EvalValue::Kind::Unknown)
      return a;
    if (e.op == "!") {
      if (a.kind != EvalValue::Kind::Bool)
        return EvalValue::unknown("'not' needs a bool, got " + a.str());
      EvalValue r = EvalValue::boolean(!a.b);
      // A failed `not p` says that p holds (explain's "where not p: ...").
      if (explain && a.b && e.operands[0].src)
        r.s = exprText(*e.operands[0].src) + " holds";
      return r;
    }
    if (a.kind == EvalValue::Kind::Int)
      return EvalValue::integer(-a.i);
    if (a.kind == EvalValue::Kind::Float)
      return EvalValue::number(-a.f);
    if (auto d = asDim(a))
      return EvalValue::ofDim(*d * int64_t(-1));
    return EvalValue::unknown("cannot negate " + a.str());
  }
  case Expr::Kind::Binary: {
    EvalValue a = eval(e.operands[0], extraSlots, rewriteValues);
    if (e.bin == BinOp::And || e.bin == BinOp::Or) {
      bool isAnd = e.bin == BinOp::And;
      // Short circuit: a false conjunct / true disjunct decides (and keeps
      // its explanation).
      if (isAnd ? !truthy(a) : truthy(a))
        return a;
      EvalValue b = eval(e.operands[1], extraSlots, rewriteValues);
      if (!isAnd && !truthy(b) && explain) {
        // Both sides of an `or` failed: say why for each.
        auto why = [](const EvalValue &x, const CExpr &src) {
          std::string t = src.src ? exprText(*src.src) : "?";
          if (!x.s.empty())
            return t + ": " + x.s;
          return t + " is " + x.str();
        };
        EvalValue r = EvalValue::boolean(false);
        r.s = why(a, e.operands[0]) + "; " + why(b, e.operands[1]);
        return r;
      }
      return b;
    }
    EvalValue b = eval(e.operands[1], extraSlots, rewriteValues);
    return evalBinary(e, a, b);
  }
  case Expr::Kind::Call: {
    if (e.transform)
      return EvalValue::unknown("constant transform '" + e.transform->name +
                                "' is only evaluated by the rewriter");
    // Inline for the builtins' one to three operands: where-clauses call
    // them at every candidate.
    SmallVector<EvalValue, 3> args;
    for (const CExpr &o : e.operands)
      args.push_back(eval(o, extraSlots, rewriteValues));
    return evalCall(e, std::span<const EvalValue>(args.data(), args.size()));
  }
  }
  return EvalValue::unknown("unknown expression");
}

EvalValue Matcher::evalBinary(const CExpr &e, const EvalValue &a, const EvalValue &b) const {
  using K = EvalValue::Kind;
  if (a.kind == K::Unknown)
    return a;
  if (b.kind == K::Unknown)
    return b;
  auto texts = [&]() {
    std::string out;
    for (int k = 0; k < 2; ++k) {
      const CExpr &o = e.operands[static_cast<std::size_t>(k)];
      const EvalValue &x = k == 0 ? a : b;
      if (o.kind == Expr::Kind::Literal)
        continue;
      if (!out.empty())
        out += ", ";
      out += (o.src ? exprText(*o.src) : "?") + " = " + x.str();
    }
    return out;
  };
  auto result = [&](bool r) {
    EvalValue v = EvalValue::boolean(r);
    if (!r && explain)
      v.s = "got " + texts();
    return v;
  };
  switch (e.bin) {
  case BinOp::Eq:
    return result(equalValues(a, b));
  case BinOp::Ne:
    return result(!equalValues(a, b));
  case BinOp::In:
  case BinOp::NotIn: {
    if (b.kind != K::List)
      return EvalValue::unknown("'in' needs a list on the right, got " + b.str());
    bool found = false;
    for (const EvalValue &x : b.list)
      found = found || equalValues(a, x);
    return result(e.bin == BinOp::In ? found : !found);
  }
  default:
    break;
  }
  auto na = asNum(a), nb = asNum(b);
  bool cmp = e.bin == BinOp::Lt || e.bin == BinOp::Le || e.bin == BinOp::Gt || e.bin == BinOp::Ge;
  if (na && nb) {
    if (cmp) {
      if (na->isInt && nb->isInt)
        return result(*ordered(e.bin, na->i, nb->i));
      return result(*ordered(e.bin, na->asDouble(), nb->asDouble()));
    }
    if (na->isInt && nb->isInt) {
      int64_t p = na->i, q = nb->i;
      bool divides = e.bin == BinOp::Div || e.bin == BinOp::FloorDiv || e.bin == BinOp::Mod;
      if (divides && q == 0)
        return EvalValue::unknown("division by zero in " + (e.src ? exprText(*e.src) : ""));
      if (e.bin == BinOp::Div) {
        if (p % q == 0)
          return EvalValue::integer(p / q);
        return EvalValue::number(static_cast<double>(p) / static_cast<double>(q));
      }
      if (std::optional<int64_t> r = intArithmetic(e.bin, p, q))
        return EvalValue::integer(*r);
    } else {
      double x = na->asDouble(), y = nb->asDouble();
      switch (e.bin) {
      case BinOp::Add:
        return EvalValue::number(x + y);
      case BinOp::Sub:
        return EvalValue::number(x - y);
      case BinOp::Mul:
        return EvalValue::number(x * y);
      case BinOp::Div:
        return EvalValue::number(x / y);
      case BinOp::FloorDiv:
        return EvalValue::number(std::floor(x / y));
      case BinOp::Mod:
        return EvalValue::number(x - std::floor(x / y) * y);
      default:
        break;
      }
    }
    return EvalValue::unknown("bad operands for " + (e.src ? exprText(*e.src) : ""));
  }
  // Symbolic dims.
  auto da = asDim(a), db = asDim(b);
  if (!da || !db)
    return EvalValue::unknown("operator needs numbers, got " + texts());
  const SymbolTable &syms = graph_.symbols();
  switch (e.bin) {
  case BinOp::Add:
    return EvalValue::ofDim(*da + *db);
  case BinOp::Sub:
    return EvalValue::ofDim(*da - *db);
  case BinOp::Mul:
    return EvalValue::ofDim(*da * *db);
  case BinOp::FloorDiv:
  case BinOp::Div:
  case BinOp::Mod: {
    if (!db->isConstant() || db->constant() == 0)
      return EvalValue::unknown("cannot divide by " + db->str());
    int64_t k = db->constant();
    bool divisible = !da->isOpaque() && da->constant() % k == 0;
    for (const auto &t : da->terms())
      divisible = divisible && t.second % k == 0;
    if (e.bin == BinOp::Mod) {
      if (divisible)
        return EvalValue::integer(0);
      return EvalValue::unknown(texts() + " is symbolic; its remainder by " + std::to_string(k) +
                                " is not known");
    }
    if (!divisible)
      return EvalValue::unknown(texts() + " is not known to be divisible by " + std::to_string(k));
    return EvalValue::ofDim(da->floorDiv(k));
  }
  case BinOp::Lt:
  case BinOp::Le:
  case BinOp::Gt:
  case BinOp::Ge: {
    Dim diff = *da - *db; // decide the sign of a - b from symbol ranges
    auto lo = syms.lowerBound(diff), hi = syms.upperBound(diff);
    std::optional<bool> r;
    switch (e.bin) {
    case BinOp::Lt:
      if (hi && *hi < 0)
        r = true;
      else if (lo && *lo >= 0)
        r = false;
      break;
    case BinOp::Le:
      if (hi && *hi <= 0)
        r = true;
      else if (lo && *lo > 0)
        r = false;
      break;
    case BinOp::Gt:
      if (lo && *lo > 0)
        r = true;
      else if (hi && *hi <= 0)
        r = false;
      break;
    default:
      if (lo && *lo >= 0)
        r = true;
      else if (hi && *hi < 0)
        r = false;
      break;
    }
    if (r)
      return result(*r);
    return EvalValue::unknown(texts() + ": the symbol ranges do not decide the comparison");
  }
  default:
    break;
  }
  return EvalValue::unknown("unsupported operator");
}

EvalValue Matcher::evalCall(const CExpr &e, std::span<const EvalValue> args) const {
  using K = EvalValue::Kind;
  std::string_view fn = e.builtin->name;
  for (const EvalValue &a : args)
    if (a.kind == K::Unknown && fn != "is_none")
      return a;
  auto argText = [&](std::size_t i) {
    return e.operands[i].src ? exprText(*e.operands[i].src) : std::string("?");
  };
  auto falseWhy = [&](std::string why) {
    EvalValue v = EvalValue::boolean(false);
    if (explain)
      v.s = std::move(why);
    return v;
  };
  auto tensorOf = [&](const EvalValue &v) -> const Value * {
    return v.kind == K::Value && v.v && v.v->isTensor() ? v.v : nullptr;
  };
  if (fn == "is_none")
    return args[0].kind == K::None ? EvalValue::boolean(true)
                                   : falseWhy(argText(0) + " is " + args[0].str());
  if (fn == "is_param") {
    const GraphInput *in = args[0].kind == K::Value ? graph_.inputFor(args[0].v) : nullptr;
    if (in && in->isConstant() && !in->fqn.empty())
      return EvalValue::boolean(true);
    return falseWhy(argText(0) + " (" + args[0].str() + ") is not a constant parameter");
  }
  if (fn == "all_zero" || fn == "values_in") {
    bool zero = fn == "all_zero";
    double lo = 0, hi = 0;
    if (!zero) {
      auto l = asNum(args[1]), h = asNum(args[2]);
      if (!l || !h)
        return EvalValue::unknown("values_in bounds must be numbers");
      lo = l->asDouble();
      hi = h->asDouble();
    }
    auto inRange = [&](const EvalValue &x) {
      auto n = asNum(x);
      return n && n->asDouble() >= lo && n->asDouble() <= hi;
    };
    if (args[0].kind == K::Int || args[0].kind == K::Float || args[0].kind == K::List) {
      bool ok = args[0].kind == K::List
                    ? std::all_of(args[0].list.begin(), args[0].list.end(), inRange)
                    : inRange(args[0]);
      return ok ? EvalValue::boolean(true) : falseWhy(argText(0) + " is " + args[0].str());
    }
    const Value *v = tensorOf(args[0]);
    if (!v)
      return falseWhy(argText(0) + " is " + args[0].str() + ", not a constant");
    const GraphInput *in = graph_.inputFor(v);
    if (!in || !in->isConstant())
      return falseWhy(argText(0) + " (%" + v->name() + ") is not a constant");
    const DataRange &r = dataRange(v);
    if (!r.hasData)
      return falseWhy("constant %" + v->name() + " (" + in->fqn + ") has no data to check");
    if (!r.numeric || r.hasNaN)
      return falseWhy("constant %" + v->name() + " holds non-numeric or NaN values");
    if (r.min >= lo && r.max <= hi)
      return EvalValue::boolean(true);
    if (!explain)
      return EvalValue::boolean(false);
    // Find the first offending element for the message.
    const Tensor &t = in->data();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      double x = t.getDouble(i);
      if (x < lo || x > hi)
        return falseWhy("%" + v->name() + " has " + formatDouble(x) + " at " +
                        formatIndex(t.sizes(), i) + " (range [" + formatDouble(r.min) + ", " +
                        formatDouble(r.max) + "])");
    }
    return EvalValue::boolean(false);
  }
  if (fn == "dim" || fn == "rank" || fn == "dtype" || fn == "numel" || fn == "fqn" ||
      fn == "uses") {
    const Value *v = args[0].kind == K::Value ? args[0].v : nullptr;
    if (!v)
      return EvalValue::unknown(std::string(fn) + " needs a value, " + argText(0) + " is " +
                                args[0].str());
    if (fn == "uses") {
      return EvalValue::integer(static_cast<int64_t>(v->users().size() + v->numOutputUses()));
    }
    if (fn == "fqn") {
      const GraphInput *in = graph_.inputFor(v);
      if (!in || in->fqn.empty())
        return EvalValue::unknown("%" + v->name() + " has no FQN");
      return EvalValue::string(in->fqn);
    }
    if (!v->isTensor())
      return EvalValue::unknown(std::string(fn) + " needs a tensor, %" + v->name() + " is a " +
                                std::string(name(v->kind())));
    const TensorProto &p = v->proto();
    if (fn == "rank")
      return EvalValue::integer(p.rank());
    if (fn == "dtype")
      return EvalValue::dtype(p.dtype);
    if (fn == "numel")
      return EvalValue::ofDim(p.numel());
    auto idx = asNum(args[1]);
    if (!idx || !idx->isInt)
      return EvalValue::unknown("dim index must be an int");
    int64_t d = normalizeDim(idx->i, p.rank());
    if (d < 0 || p.rank() == 0)
      return EvalValue::unknown("dim " + std::to_string(idx->i) + " is out of range for %" +
                                v->name() + " " + p.str());
    return EvalValue::ofDim(p.shape[static_cast<std::size_t>(d)]);
  }
  if (fn == "is_pow2") {
    auto n = asNum(args[0]);
    if (!n || !n->isInt)
      return EvalValue::unknown("is_pow2 needs an int, got " + args[0].str());
    bool r = n->i > 0 && (n->i & (n->i - 1)) == 0;
    return r ? EvalValue::boolean(true) : falseWhy(argText(0) + " = " + args[0].str());
  }
  if (fn == "is_nan") {
    auto n = asNum(args[0]);
    if (!n)
      return EvalValue::unknown("is_nan needs a number, got " + args[0].str());
    return !n->isInt && std::isnan(n->f) ? EvalValue::boolean(true)
                                         : falseWhy(argText(0) + " = " + args[0].str());
  }
  if (fn == "min" || fn == "max") {
    auto a = asNum(args[0]), b = asNum(args[1]);
    if (!a || !b)
      return EvalValue::unknown(std::string(fn) + " needs numbers");
    bool pickA = fn == "min" ? a->asDouble() <= b->asDouble() : a->asDouble() >= b->asDouble();
    const Num &w = pickA ? *a : *b;
    return w.isInt ? EvalValue::integer(w.i) : EvalValue::number(w.f);
  }
  if (fn == "len") {
    if (args[0].kind != K::List)
      return EvalValue::unknown("len needs a list, got " + args[0].str());
    return EvalValue::integer(static_cast<int64_t>(args[0].list.size()));
  }
  if (fn == "bits" || fn == "is_float") {
    if (args[0].kind != K::DType)
      return EvalValue::unknown(std::string(fn) + " needs a dtype, got " + args[0].str());
    if (fn == "bits")
      return EvalValue::integer(bitWidth(args[0].dt));
    return isFloatingPoint(args[0].dt) ? EvalValue::boolean(true)
                                       : falseWhy(argText(0) + " is " + args[0].str());
  }
  if (fn == "qmin" || fn == "qmax") {
    // torchao's _DTYPE_TO_QVALUE_BOUNDS: the range a None quant_min/quant_max
    // stands for. A float dtype has none, so the rule does not apply.
    if (args[0].kind != K::DType)
      return EvalValue::unknown(std::string(fn) + " needs a dtype, got " + args[0].str());
    auto bounds = integerBounds(args[0].dt);
    if (!bounds)
      return EvalValue::unknown(std::string(fn) + ": " + args[0].str() +
                                " is not an integer dtype");
    return EvalValue::integer(fn == "qmin" ? bounds->first : bounds->second);
  }
  return EvalValue::unknown("builtin '" + std::string(fn) + "' is not implemented");
}

} // namespace graft::rewrite::detail
