//===- ScalarKernels.cpp - symbolic-size ops and runtime assertions -------===//
//
// sym_size.int, sym_numel, _local_scalar_dense, and the ephemeral assertion ops
// torch.export leaves in graphs (sym_constrain_range[_for_size],
// _assert_scalar). A failed assertion is a user-facing error naming the node
// and carrying the assertion's message, as PyTorch raises it at run time.
// Also the Python symbolic-scalar ops torch.export records on SymInts
// (operator.add/sub/mul/floordiv/mod/neg, torch.sym_max/min, the
// comparisons, and the rest of serialize.py's _SYM_OPS: truediv, pow, pos,
// and_, or_, sym_not, math.trunc, sym_int, sym_float, sym_sqrt, sym_ite),
// with Python's semantics. SymInts flow as int64_t; an int
// result that leaves int64 is an error (Python ints would not overflow).
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace graft::interp {

namespace {

/// ATen Constraints.cpp sym_constrain_range: min <= size <= max.
Results constrainRange(const KernelArgs &a, bool forSize) {
  auto size = optionalNumberArg(a, "size");
  if (!size)
    return a.error("argument 'size' is not a number");
  std::optional<int64_t> mn = a.isNone("min") ? std::nullopt : a.optionalInteger("min");
  std::optional<int64_t> mx = a.isNone("max") ? std::nullopt : a.optionalInteger("max");
  if (forSize) {
    if (!mn)
      mn = 0;
    if (mx && *mx <= 2)
      return a.error("Max value to constrain_range_for_size must be greater than 2. got: " +
                     std::to_string(*mx));
  }
  int64_t lo = mn.value_or(std::numeric_limits<int64_t>::min());
  int64_t hi = mx.value_or(std::numeric_limits<int64_t>::max());
  if (hi < lo)
    return a.error("Max must be greater than or equal to min. Got min=" + std::to_string(lo) +
                   " max=" + std::to_string(hi));
  int64_t v = size->i;
  if (size->kind == Number::Kind::Float) {
    auto t = truncToInt64(size->f);
    if (!t)
      return a.error("size " + std::to_string(size->f) + " is not an integer");
    v = *t;
  }
  if (v < lo || v > hi)
    return a.error("Invalid value range for " + std::to_string(v) + " between [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "].");
  return std::vector<RuntimeValue>{};
}

enum class SymOp { Add, Sub, Mul, FloorDiv, Mod, Max, Min };

/// Python's a // b and a % b on ints (floor toward -inf; the remainder has
/// the divisor's sign).
std::pair<int64_t, int64_t> pyDivMod(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) {
    --q;
    r += b;
  }
  return {q, r};
}

Results symArith(const KernelArgs &a, SymOp op) {
  auto x = optionalNumberArg(a, "a"), y = optionalNumberArg(a, "b");
  if (!x || !y)
    return a.error("operands must be numbers");
  bool floating = x->kind == Number::Kind::Float || y->kind == Number::Kind::Float;
  if (floating) {
    double p = x->toDouble(), q = y->toDouble();
    switch (op) {
    case SymOp::Add:
      return std::vector<RuntimeValue>{p + q};
    case SymOp::Sub:
      return std::vector<RuntimeValue>{p - q};
    case SymOp::Mul:
      return std::vector<RuntimeValue>{p * q};
    case SymOp::Max:
      return std::vector<RuntimeValue>{std::max(p, q)};
    case SymOp::Min:
      return std::vector<RuntimeValue>{std::min(p, q)};
    case SymOp::FloorDiv:
    case SymOp::Mod: {
      if (q == 0.0)
        return a.error("float floor division or modulo by zero");
      // Python: mod = fmod adjusted to the divisor's sign; div = (p - mod) / q.
      double m = std::fmod(p, q);
      if (m != 0.0 && ((m < 0) != (q < 0)))
        m += q;
      if (op == SymOp::Mod)
        return std::vector<RuntimeValue>{m};
      // (p - m) / q is within rounding of an integer; round it the way
      // CPython's float_floor_div does.
      double d = (p - m) / q, f = std::floor(d);
      if (d - f > 0.5)
        f += 1.0;
      return std::vector<RuntimeValue>{f};
    }
    }
  }
  int64_t p = x->i, q = y->i, r = 0;
  auto overflow = [&]() {
    return a.error("integer result of " + std::to_string(p) + " and " + std::to_string(q) +
                   " does not fit in int64");
  };
  switch (op) {
  case SymOp::Add:
    if (__builtin_add_overflow(p, q, &r))
      return overflow();
    break;
  case SymOp::Sub:
    if (__builtin_sub_overflow(p, q, &r))
      return overflow();
    break;
  case SymOp::Mul:
    if (__builtin_mul_overflow(p, q, &r))
      return overflow();
    break;
  case SymOp::Max:
    r = std::max(p, q);
    break;
  case SymOp::Min:
    r = std::min(p, q);
    break;
  case SymOp::FloorDiv:
  case SymOp::Mod:
    if (q == 0)
      return a.error("integer division or modulo by zero");
    if (p == std::numeric_limits<int64_t>::min() && q == -1) {
      if (op == SymOp::FloorDiv)
        return overflow();
      r = 0;
      break;
    }
    r = op == SymOp::FloorDiv ? pyDivMod(p, q).first : pyDivMod(p, q).second;
    break;
  }
  return std::vector<RuntimeValue>{r};
}

Results symCompare(const KernelArgs &a, BinaryOp op) {
  auto x = optionalNumberArg(a, "a"), y = optionalNumberArg(a, "b");
  if (!x || !y)
    return a.error("operands must be numbers");
  bool floating = x->kind == Number::Kind::Float || y->kind == Number::Kind::Float;
  // Ints compare exactly (a double would round values above 2^53).
  bool r = floating ? compareAs(op, x->toDouble(), y->toDouble()) : compareAs(op, x->i, y->i);
  return std::vector<RuntimeValue>{r};
}

/// The rest of serialize.py's _SYM_OPS (engine/ops/sym.yaml), with Python's
/// semantics: int results that leave int64 are errors, as in symArith.
Results pyPow(const KernelArgs &a) {
  auto x = optionalNumberArg(a, "a"), y = optionalNumberArg(a, "b");
  if (!x || !y)
    return a.error("operands must be numbers");
  bool floating = x->kind == Number::Kind::Float || y->kind == Number::Kind::Float;
  if (!floating && y->i >= 0) {
    // Exponentiation by squaring with overflow checks (Python ints are exact).
    int64_t base = x->i, e = y->i, r = 1;
    while (e > 0) {
      if ((e & 1) && __builtin_mul_overflow(r, base, &r))
        return a.error("integer result of " + std::to_string(x->i) + " ** " + std::to_string(y->i) +
                       " does not fit in int64");
      e >>= 1;
      if (e > 0 && __builtin_mul_overflow(base, base, &base))
        return a.error("integer result of " + std::to_string(x->i) + " ** " + std::to_string(y->i) +
                       " does not fit in int64");
    }
    return std::vector<RuntimeValue>{r};
  }
  // CPython's float_pow (Objects/floatobject.c): a NaN or infinite exponent
  // never raises ((-1.0) ** nan is nan, 0.0 ** -inf is inf), nor does an
  // infinite base ((-inf) ** 0.5 is inf); a finite result that overflows does.
  double p = x->toDouble(), q = y->toDouble();
  if (std::isfinite(q) && p == 0.0 && q < 0)
    return a.error("0.0 cannot be raised to a negative power");
  if (std::isfinite(q) && std::isfinite(p) && p < 0 && q != std::floor(q))
    return a.error("a negative number to a fractional power is complex");
  double r = std::pow(p, q);
  if (std::isinf(r) && std::isfinite(p) && std::isfinite(q))
    return a.error(std::to_string(p) + " ** " + std::to_string(q) +
                   ": numerical result out of range");
  return std::vector<RuntimeValue>{r};
}

/// operator.and_ / or_: logical on two bools, bitwise on ints.
Results pyLogic(const KernelArgs &a, bool isAnd) {
  auto x = optionalNumberArg(a, "a"), y = optionalNumberArg(a, "b");
  if (!x || !y || x->kind == Number::Kind::Float || y->kind == Number::Kind::Float)
    return a.error("operands must be bools or ints");
  int64_t r = isAnd ? (x->i & y->i) : (x->i | y->i);
  if (x->kind == Number::Kind::Bool && y->kind == Number::Kind::Bool)
    return std::vector<RuntimeValue>{r != 0};
  return std::vector<RuntimeValue>{r};
}

/// math.trunc and torch.sym_int: toward zero; an int or bool stays an int.
Results pyTrunc(const KernelArgs &a) {
  auto x = optionalNumberArg(a, "a");
  if (!x)
    return a.error("operand must be a number");
  if (x->kind != Number::Kind::Float)
    return std::vector<RuntimeValue>{x->i};
  auto t = truncToInt64(x->f);
  if (!t)
    return a.error(std::to_string(x->f) + " cannot be converted to an int64 integer");
  return std::vector<RuntimeValue>{*t};
}

} // namespace

void registerScalarKernels(KernelRegistry &r) {
  r.add("aten.sym_size.int", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    GRAFT_TRY(int64_t d, wrapDim(a.integer("dim"), x.rank()));
    return std::vector<RuntimeValue>{x.rank() == 0 ? int64_t(1) : x.size(d)};
  });
  r.add("aten.sym_numel.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    return std::vector<RuntimeValue>{x.numel()};
  });
  r.add("aten._local_scalar_dense.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    if (x.numel() != 1)
      return a.error("a Tensor with " + std::to_string(x.numel()) +
                     " elements cannot be converted to Scalar");
    if (x.dtype() == DType::Bool)
      return std::vector<RuntimeValue>{x.getInt(0) != 0};
    if (isIntegral(x.dtype()))
      return std::vector<RuntimeValue>{x.getInt(0)};
    return std::vector<RuntimeValue>{x.getDouble(0)};
  });
  r.add("aten.sym_constrain_range_for_size.default",
        [](const KernelArgs &a) { return constrainRange(a, true); });
  r.add("aten.sym_constrain_range.default",
        [](const KernelArgs &a) { return constrainRange(a, false); });
  r.add("aten._assert_scalar.default", [](const KernelArgs &a) -> Results {
    auto cond = optionalNumberArg(a, "self");
    if (!cond)
      return a.error("argument 'self' is not a scalar");
    if (cond->toDouble() == 0.0) {
      std::string msg = a.string("assert_msg");
      return a.error("assertion failed: " + (msg.empty() ? std::string("<no message>") : msg));
    }
    return std::vector<RuntimeValue>{};
  });
  for (auto [name, op] : {std::pair{"operator.add.default", SymOp::Add},
                          {"operator.sub.default", SymOp::Sub},
                          {"operator.mul.default", SymOp::Mul},
                          {"operator.floordiv.default", SymOp::FloorDiv},
                          {"operator.mod.default", SymOp::Mod},
                          {"torch.sym_max.default", SymOp::Max},
                          {"torch.sym_min.default", SymOp::Min}})
    r.add(name, [op = op](const KernelArgs &a) { return symArith(a, op); });
  r.add("operator.neg.default", [](const KernelArgs &a) -> Results {
    auto x = optionalNumberArg(a, "a");
    if (!x)
      return a.error("operand must be a number");
    if (x->kind == Number::Kind::Float)
      return std::vector<RuntimeValue>{-x->f};
    if (x->i == std::numeric_limits<int64_t>::min())
      return a.error("integer result of -" + std::to_string(x->i) + " does not fit in int64");
    return std::vector<RuntimeValue>{-x->i};
  });
  for (auto [name, op] : {std::pair{"operator.eq.default", BinaryOp::Eq},
                          {"operator.ne.default", BinaryOp::Ne},
                          {"operator.lt.default", BinaryOp::Lt},
                          {"operator.le.default", BinaryOp::Le},
                          {"operator.gt.default", BinaryOp::Gt},
                          {"operator.ge.default", BinaryOp::Ge}})
    r.add(name, [op = op](const KernelArgs &a) { return symCompare(a, op); });
  r.add("operator.truediv.default", [](const KernelArgs &a) -> Results {
    auto x = optionalNumberArg(a, "a"), y = optionalNumberArg(a, "b");
    if (!x || !y)
      return a.error("operands must be numbers");
    if (y->toDouble() == 0.0)
      return a.error("division by zero");
    return std::vector<RuntimeValue>{x->toDouble() / y->toDouble()};
  });
  r.add("operator.pow.default", pyPow);
  r.add("operator.pos.default", [](const KernelArgs &a) -> Results {
    auto x = optionalNumberArg(a, "a");
    if (!x)
      return a.error("operand must be a number");
    if (x->kind == Number::Kind::Float)
      return std::vector<RuntimeValue>{x->f};
    return std::vector<RuntimeValue>{x->i}; // +True is 1
  });
  r.add("operator.and_.default", [](const KernelArgs &a) { return pyLogic(a, true); });
  r.add("operator.or_.default", [](const KernelArgs &a) { return pyLogic(a, false); });
  r.add("torch.sym_not.default", [](const KernelArgs &a) -> Results {
    auto x = optionalNumberArg(a, "a");
    if (!x)
      return a.error("operand must be a number");
    return std::vector<RuntimeValue>{x->toDouble() == 0.0};
  });
  r.add("math.trunc.default", pyTrunc);
  r.add("torch.sym_int.default", pyTrunc);
  r.add("torch.sym_float.default", [](const KernelArgs &a) -> Results {
    auto x = optionalNumberArg(a, "a");
    if (!x)
      return a.error("operand must be a number");
    return std::vector<RuntimeValue>{x->toDouble()};
  });
  r.add("torch.sym_sqrt.default", [](const KernelArgs &a) -> Results {
    auto x = optionalNumberArg(a, "a");
    if (!x)
      return a.error("operand must be a number");
    if (x->toDouble() < 0)
      return a.error("math domain error (sqrt of " + std::to_string(x->toDouble()) + ")");
    return std::vector<RuntimeValue>{std::sqrt(x->toDouble())};
  });
  r.add("torch.sym_ite.default", [](const KernelArgs &a) -> Results {
    auto b = optionalNumberArg(a, "b"), t = optionalNumberArg(a, "t"),
         f = optionalNumberArg(a, "f");
    if (!b || !t || !f)
      return a.error("operands must be numbers");
    // torch.sym_ite asserts isinstance(b, (SymBool, bool)) and
    // type(t) == type(f) (torch/__init__.py).
    if (b->kind != Number::Kind::Bool)
      return a.error("the condition must be a bool");
    if (t->kind != f->kind)
      return a.error("t and f must be of one kind");
    const Number &r = b->i != 0 ? *t : *f;
    if (r.kind == Number::Kind::Float)
      return std::vector<RuntimeValue>{r.f};
    if (r.kind == Number::Kind::Bool)
      return std::vector<RuntimeValue>{r.i != 0};
    return std::vector<RuntimeValue>{r.i};
  });
  r.add("aten._assert_async.msg", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (x.defined() && x.numel() == 1 && x.getDouble(0) == 0.0)
      return a.error("assertion failed: " + a.string("assert_msg"));
    return std::vector<RuntimeValue>{};
  });
}

} // namespace graft::interp
