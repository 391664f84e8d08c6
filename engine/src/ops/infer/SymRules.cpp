//===- SymRules.cpp - Inference for Python symbolic-scalar arithmetic -----===//
//
// operator.add/sub/mul/floordiv/mod/neg, torch.sym_max/sym_min and the
// comparisons operator.eq/ne/lt/le/gt/ge (engine/ops/sym.yaml). They have no
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

} // namespace

void registerSymRules(InferenceRules &rules) {
  rules.add("sym_arith", symArithRule);
  rules.add("sym_compare", symCompareRule);
}

} // namespace graft::infer
