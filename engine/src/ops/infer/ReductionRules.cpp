//===- ReductionRules.cpp - Inference for sum/mean/amax/amin --------------===//
//
// Reductions over a dim list (None or [] means every dim), with keepdim and
// the optional dtype kwarg. Result dtypes follow torch: sum of integers and
// bools accumulates in int64, mean needs a floating (or explicit) dtype,
// amax/amin keep the input dtype.
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"

namespace graft::infer {

namespace {

enum class Kind { Sum, Mean, MinMax };

Results reduce(const InferContext &ctx, Kind kind) {
  const TensorProto &t = ctx.tensor("self");
  const Argument &dimList = ctx.arg("dim");
  std::vector<bool> reduced(static_cast<std::size_t>(t.rank()), false);
  bool all = dimList.isNone() || (dimList.isList() && dimList.list().empty());
  if (all) {
    reduced.assign(reduced.size(), true);
  } else {
    auto dims = dimList.intList();
    if (!dims)
      return ctx.error("dim must be a list of ints");
    for (int64_t d : *dims) {
      GRAFT_TRY(int64_t n, checkedDim(ctx, d, t.rank()));
      if (t.rank() == 0)
        continue;
      if (reduced[static_cast<std::size_t>(n)])
        return ctx.error("dim " + std::to_string(n) +
                         " appears multiple times in the list of dims");
      reduced[static_cast<std::size_t>(n)] = true;
    }
  }
  GRAFT_TRY(bool keepdim, boolArg(ctx, "keepdim"));
  Shape out;
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (!reduced[i])
      out.push_back(t.shape[i]);
    else if (keepdim)
      out.push_back(Dim(1));
  }
  DType dt = t.dtype;
  std::optional<DType> requested = ctx.dtype("dtype");
  switch (kind) {
  case Kind::Sum:
    if (requested)
      dt = *requested;
    else if (isIntegral(t.dtype, /*includeBool=*/true))
      dt = DType::I64;
    break;
  case Kind::Mean:
    dt = requested.value_or(t.dtype);
    if (!isFloatingPoint(dt) && !isComplex(dt))
      return ctx.error("mean(): could not infer output dtype; input dtype " +
                       std::string(name(t.dtype)) + " must be floating point or a dtype given");
    break;
  case Kind::MinMax:
    break;
  }
  return one(tensorResult(dt, out, &t));
}

} // namespace

void registerReductionRules(InferenceRules &rules) {
  rules.add("sum", [](const InferContext &ctx) { return reduce(ctx, Kind::Sum); });
  rules.add("mean", [](const InferContext &ctx) { return reduce(ctx, Kind::Mean); });
  rules.add("amax_amin", [](const InferContext &ctx) { return reduce(ctx, Kind::MinMax); });
}

} // namespace graft::infer
