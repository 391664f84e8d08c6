//===- SymRules.cpp - Inference for Python symbolic-scalar arithmetic -----===//
//
// operator.add/sub/mul/floordiv/mod/neg, torch.sym_max/sym_min, the
// comparisons operator.eq/ne/lt/le/gt/ge and the rest of serialize.py's
// _SYM_OPS (engine/ops/sym.yaml). They have no
// tensor results: a rule only decides the result's kind, the way Python
// does for a SymInt/SymFloat/SymBool expression. The Dim a SymInt result
// stands for is derived from its producer by dimOfSymInt.
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"

namespace graft::infer {

namespace {

/// The kind of a scalar operand: SymInt for ints and bools (Python's bool is
/// an int), SymFloat for floats; nullopt for anything else (a tensor).
std::optional<ValueKind> scalarKind(const Argument &a) {
  if (a.isInt() || a.isBool())
    return ValueKind::SymInt;
  if (a.isFloat())
    return ValueKind::SymFloat;
  if (a.isValue() && !a.value()->isTensor())
    return a.value()->kind() == ValueKind::SymFloat ? ValueKind::SymFloat : ValueKind::SymInt;
  return std::nullopt;
}

Expected<ValueKind> operandsKind(const InferContext &ctx) {
  ValueKind k = ValueKind::SymInt;
  for (const char *name : {"a", "b"}) {
    if (!ctx.args.has(name))
      continue;
    auto ak = scalarKind(ctx.arg(name));
    if (!ak)
      return ctx.error(std::string("operand '") + name + "' must be an int, float or bool scalar");
    if (*ak == ValueKind::SymFloat)
      k = ValueKind::SymFloat;
  }
  return k;
}

Results symArithRule(const InferContext &ctx) {
  GRAFT_TRY(ValueKind k, operandsKind(ctx));
  InferredResult r;
  r.kind = k;
  return one(std::move(r));
}

Results symCompareRule(const InferContext &ctx) {
  GRAFT_CHECK_OK(operandsKind(ctx));
  InferredResult r;
  r.kind = ValueKind::SymBool;
  return one(std::move(r));
}

/// A rule whose result kind is fixed (truediv, sym_float, sym_sqrt: SymFloat;
/// trunc, sym_int: SymInt; sym_not: SymBool); the operands must be scalars.
InferFn fixedKindRule(ValueKind kind) {
  return [kind](const InferContext &ctx) -> Results {
    GRAFT_CHECK_OK(operandsKind(ctx));
    InferredResult r;
    r.kind = kind;
    return one(std::move(r));
  };
}

/// The kind of a SymBool-or-bool operand, which scalarKind counts as an int.
bool isBoolOperand(const Argument &a) {
  return a.isBool() || (a.isValue() && a.value()->kind() == ValueKind::SymBool);
}

/// operator.and_ / or_: a SymBool when both operands are bools, else a SymInt.
Results symLogicRule(const InferContext &ctx) {
  GRAFT_TRY(ValueKind k, operandsKind(ctx));
  if (k == ValueKind::SymFloat)
    return ctx.error("operands of & and | must be bools or ints");
  InferredResult r;
  r.kind = isBoolOperand(ctx.arg("a")) && isBoolOperand(ctx.arg("b")) ? ValueKind::SymBool
                                                                      : ValueKind::SymInt;
  return one(std::move(r));
}

/// operator.pow: Python gives an int only for int operands and an exponent
/// >= 0, so a negative literal exponent makes a SymFloat.
Results symPowRule(const InferContext &ctx) {
  GRAFT_TRY(ValueKind k, operandsKind(ctx));
  const Argument &b = ctx.arg("b");
  InferredResult r;
  r.kind = b.isInt() && b.integer() < 0 ? ValueKind::SymFloat : k;
  return one(std::move(r));
}

/// torch.sym_ite(b, t, f): the kind of t, which f must share.
Results symIteRule(const InferContext &ctx) {
  auto kindOf = [&](const char *name) -> std::optional<ValueKind> {
    const Argument &a = ctx.arg(name);
    if (isBoolOperand(a))
      return ValueKind::SymBool;
    return scalarKind(a);
  };
  auto b = kindOf("b"), t = kindOf("t"), f = kindOf("f");
  if (!b || !t || !f)
    return ctx.error("operands of sym_ite must be scalars");
  // torch.sym_ite asserts isinstance(b, (SymBool, bool)) (torch/__init__.py).
  if (*b != ValueKind::SymBool)
    return ctx.error("sym_ite's condition must be a bool");
  if (*t != *f)
    return ctx.error("sym_ite's t and f must be of one kind");
  InferredResult r;
  r.kind = *t;
  return one(std::move(r));
}

} // namespace

void registerSymRules(InferenceRules &rules) {
  rules.add("sym_arith", symArithRule);
  rules.add("sym_compare", symCompareRule);
  rules.add("sym_float_result", fixedKindRule(ValueKind::SymFloat));
  rules.add("sym_int_result", fixedKindRule(ValueKind::SymInt));
  rules.add("sym_bool_result", fixedKindRule(ValueKind::SymBool));
  rules.add("sym_logic", symLogicRule);
  rules.add("sym_ite", symIteRule);
  rules.add("sym_pow", symPowRule);
}

} // namespace graft::infer
