//===- Kernels.h - Shared helpers and registration hooks of the kernels -*- C++ -*-===//
//
// Each kernel family lives in its own file and registers itself through an
// explicit function called from KernelRegistry::builtin() (static
// initializers in a static library would be dropped by the linker).
//
// Internal to the interpreter; not a public API.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "TorchOps.h"

#include "graft/interp/Interpreter.h"
#include "graft/interp/TorchaoQuant.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graft::interp {

using Results = Expected<std::vector<RuntimeValue>>;

inline Results one(Tensor t) {
  return std::vector<RuntimeValue>{std::move(t)};
}

// Python's tensor arithmetic (`x * s`, `x - zp`, ...) for the kernels that
// transcribe upstream Python one operation at a time: torch.add / sub / mul
// / div with torch's type promotion.
inline Expected<Tensor> add(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Add, a, b);
}
inline Expected<Tensor> sub(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Sub, a, b);
}
inline Expected<Tensor> mul(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Mul, a, b);
}
inline Expected<Tensor> div(const Operand &a, const Operand &b) {
  return binary(BinaryOp::Div, a, b);
}
/// `1.0 / t` in Python: torch/_tensor.py __rdiv__ is t.reciprocal() * 1.0.
inline Expected<Tensor> rdivOne(const Tensor &t) {
  return mul(unary(UnaryOp::Reciprocal, t), Operand::num(1.0));
}

/// Whether the bound schema has an argument called `name` (legacy and
/// current signatures differ, and so may registry spellings).
bool hasArg(const KernelArgs &args, std::string_view name);
/// The first of `names` the bound schema has, or empty.
std::string pickArg(const KernelArgs &args, std::initializer_list<std::string_view> names);
/// The error for a kernel whose tensor arguments `names` are not all
/// tensors: "expects tensor 'x'", "expects tensors 'a', 'b' and 'c'".
Status requireTensors(const KernelArgs &args, std::initializer_list<std::string_view> names);

/// A Tensor or Scalar argument as an elementwise operand (Python numbers
/// keep their int/float/bool kind for type promotion).
Operand operand(const KernelArgs &args, std::string_view name);
/// A Python-number argument (int, float, bool, or a resolved SymInt).
std::optional<Number> optionalNumberArg(const KernelArgs &args, std::string_view name);

/// A double truncated toward zero to int64, or nullopt for NaN and values
/// outside int64's range (a plain cast would be undefined behaviour).
std::optional<int64_t> truncToInt64(double value);

/// torch's ScalarType enum value -> DType (old schemas write defaults such
/// as `ScalarType output_dtype=6`).
std::optional<DType> dtypeFromTorchEnum(int64_t value);

void registerElementwiseKernels(KernelRegistry &registry);
void registerShapeKernels(KernelRegistry &registry);
void registerLinalgKernels(KernelRegistry &registry);
void registerReductionKernels(KernelRegistry &registry);
void registerScalarKernels(KernelRegistry &registry);
void registerTorchaoQuantKernels(KernelRegistry &registry);
void registerDecomposedQuantKernels(KernelRegistry &registry);
void registerVulkanOpKernels(KernelRegistry &registry);
void registerKvCacheKernels(KernelRegistry &registry);

/// ATen's math SDPA (_scaled_dot_product_attention_math) on [..., L, E]
/// query and [..., S, E] key/value: `mask` bool (select) or additive;
/// `causalOffset` set: causal with query i seeing keys j <= i + offset
/// (0 for is_causal); enableGqa repeats key/value heads (dim -3).
Expected<Tensor> sdpaMath(Tensor q, Tensor k, Tensor v, const Tensor *mask,
                          std::optional<int64_t> causalOffset, std::optional<double> scale,
                          bool enableGqa);

//===-- Quantization building blocks shared by the quant kernel files -----===//

/// torchao _get_reduction_params: the shape to view the input as, and the
/// dims of that shape reduced over (block dims).
struct ReductionParams {
  std::vector<int64_t> shapeForReduction;
  std::vector<int64_t> reductionDims;
  /// shapeForReduction with the reduction dims set to 1 (what scale and
  /// zero_point are viewed as).
  std::vector<int64_t> shapeAfterReduction;
};
Expected<ReductionParams> reductionParams(const std::vector<int64_t> &blockSize,
                                          const std::vector<int64_t> &inputSize);

/// torchao _get_and_check_qmin_qmax: defaults from the dtype, bounds checked.
Expected<std::pair<int64_t, int64_t>> checkedQuantRange(DType dtype, std::optional<Number> qmin,
                                                        std::optional<Number> qmax);

/// quantized_decomposed.quantize_per_tensor on an f32 tensor: round(x *
/// f32(1.0 / scale)) (half to even) + zero_point, clamped to [qmin, qmax],
/// cast to `dtype`. The reciprocal is Python's double division, as in
/// _decomposed.py; the fused ops that requantize their result share it.
Expected<Tensor> quantizePerTensorF32(const Tensor &x, double scale, int64_t zeroPoint,
                                      int64_t qmin, int64_t qmax, DType dtype);

} // namespace graft::interp
