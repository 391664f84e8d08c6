//===- ReductionKernels.cpp - aten sum/mean/amax/amin and softmax ---------===//
//
// Reductions accumulate sequentially in opmath over the reduced elements in
// row-major order (f32 for f16/bf16/f32 inputs, f64 for f64, int64 for
// integers); mean is that sum divided by the element count, rounded once
// (ATen's CPU mean_out is sum_out(...).div_(n), in f32 for half types).
// Softmax subtracts the row max, exponentiates, sums in f32 (f64 for f64)
// and multiplies by 1/sum, as SoftMaxKernel.cpp's _vec_softmax_lastdim.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

namespace graft::interp {

namespace {

Kernel reduceKernel(ReduceOp op) {
  return [op](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    std::vector<int64_t> dims;
    if (hasArg(a, "dim") && !a.isNone("dim"))
      dims = a.intList("dim");
    bool keepdim = hasArg(a, "keepdim") && a.boolean("keepdim");
    std::optional<DType> dtype = a.optionalDType("dtype");
    if (a.isNone("dtype"))
      dtype.reset();
    GRAFT_TRY(Tensor y, reduce(op, x, dims, keepdim, dtype));
    return one(y);
  };
}

} // namespace

void registerReductionKernels(KernelRegistry &r) {
  r.add("aten.sum.dim_IntList", reduceKernel(ReduceOp::Sum));
  r.add("aten.sum.default", reduceKernel(ReduceOp::Sum));
  r.add("aten.mean.dim", reduceKernel(ReduceOp::Mean));
  r.add("aten.mean.default", reduceKernel(ReduceOp::Mean));
  r.add("aten.amax.default", reduceKernel(ReduceOp::Amax));
  r.add("aten.amin.default", reduceKernel(ReduceOp::Amin));
  r.add("aten.softmax.int", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    std::optional<DType> dtype = a.isNone("dtype") ? std::nullopt : a.optionalDType("dtype");
    Tensor in = dtype ? x.to(*dtype) : x;
    GRAFT_TRY(Tensor y, softmax(in, a.integer("dim"), in.dtype()));
    return one(y);
  });
  r.add("aten._softmax.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("self");
    if (!x.defined())
      return a.error("argument 'self' is not a tensor");
    bool halfToFloat = a.boolean("half_to_float");
    if (halfToFloat && x.dtype() != DType::F16 && x.dtype() != DType::BF16)
      return a.error("half_to_float requires an f16 or bf16 input, got " +
                     std::string(name(x.dtype())));
    GRAFT_TRY(Tensor y, softmax(x, a.integer("dim"), halfToFloat ? DType::F32 : x.dtype()));
    return one(y);
  });
}

} // namespace graft::interp
