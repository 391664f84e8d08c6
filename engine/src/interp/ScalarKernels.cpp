//===- ScalarKernels.cpp - symbolic-size ops and runtime assertions -------===//
//
// sym_size.int, _local_scalar_dense, and the ephemeral assertion ops
// torch.export leaves in graphs (sym_constrain_range[_for_size],
// _assert_scalar). A failed assertion is a user-facing error naming the node
// and carrying the assertion's message, as PyTorch raises it at run time.
// SymInts flow as int64_t.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

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
    return std::vector<RuntimeValue>{a.tensor("self").numel()};
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
  r.add("aten._assert_async.msg", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (x.defined() && x.numel() == 1 && x.getDouble(0) == 0.0)
      return a.error("assertion failed: " + a.string("assert_msg"));
    return std::vector<RuntimeValue>{};
  });
}

} // namespace graft::interp
