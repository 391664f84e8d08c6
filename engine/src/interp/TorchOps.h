//===- TorchOps.h - PyTorch eager CPU operator semantics, one op at a time -*- C++ -*-===//
//
// The reference kernels are written as the same sequence of tensor operations
// upstream's Python performs (torchao quant_primitives.py, torch's
// _decomposed.py, ExecuTorch's reference implementations), so every
// intermediate is rounded to the dtype PyTorch would round it to. This file is
// that small op set, with PyTorch CPU semantics:
//
//  * type promotion: torch.result_type (dimensioned tensors > 0-dim tensors >
//    Python numbers; a lower-priority operand only matters when it is of a
//    higher category, and a Python float then means the default dtype f32);
//  * operands are cast to the common dtype, then computed in "opmath"
//    (float for f16/bf16/f32, double for f64) and rounded once to the result;
//  * mul/div with a single-element second operand on f16/bf16 use the
//    operand's *original* value in opmath (BinaryOpsKernel.cpp's
//    `original_scalar_value`), add/sub use the value rounded to the common
//    dtype (the generated ufunc kernel reads the converted operand);
//  * integer ops wrap to the result width, integer division/remainder follow
//    Python (floor) or C (trunc) as torch does;
//  * `1.0 / t` is `t.reciprocal() * 1.0` (torch/_tensor.py __rdiv__), so the
//    reciprocal is rounded to t's dtype;
//  * reductions accumulate sequentially in opmath (f32 for f16/bf16/f32, f64
//    for f64, int64 for integers) in row-major order of the reduced elements.
//
// Internal to the interpreter; not a public API.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Tensor.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graft::interp {

/// A Python number passed where torch accepts a Scalar ("wrapped number").
struct Number {
  enum class Kind { Bool, Int, Float };
  Kind kind = Kind::Float;
  double f = 0;
  int64_t i = 0;

  static Number fromDouble(double v) { return {Kind::Float, v, 0}; }
  static Number fromInt(int64_t v) { return {Kind::Int, static_cast<double>(v), v}; }
  static Number fromBool(bool v) { return {Kind::Bool, v ? 1.0 : 0.0, v ? 1 : 0}; }
  double toDouble() const { return kind == Kind::Float ? f : static_cast<double>(i); }
  /// The dtype torch gives the number when it takes part in promotion.
  DType wrappedDType() const;
};

/// An operand of an elementwise op: a tensor or a Python number.
struct Operand {
  Operand(const Tensor &t) : isTensor(true), tensor(t) {} // NOLINT: implicit on purpose
  Operand(Number n) : isTensor(false), number(n) {}       // NOLINT
  static Operand num(double v) { return Operand(Number::fromDouble(v)); }
  static Operand integer(int64_t v) { return Operand(Number::fromInt(v)); }

  bool isTensor;
  Tensor tensor;
  Number number;
};

/// torch.result_type over the operands.
DType resultType(const std::vector<Operand> &operands);

/// Converts a value to what `dtype` can hold, returned as double (float
/// types round to nearest even, integers truncate toward zero and wrap).
double castValue(double value, DType dtype);

/// Broadcast sizes of two shapes, or an error naming both.
Expected<std::vector<int64_t>> broadcastSizes(const std::vector<int64_t> &a,
                                              const std::vector<int64_t> &b);
/// A stride-0 view of `t` expanded to `sizes` (t must be broadcastable).
Tensor expandTo(const Tensor &t, const std::vector<int64_t> &sizes);

enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,      ///< true division (ints promote to f32)
  DivTrunc, ///< div(rounding_mode="trunc")
  DivFloor, ///< div(rounding_mode="floor") / floor_divide
  Remainder,
  Pow,
  Maximum,
  Minimum,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  BitAnd,
  BitOr,
  Shl,
  Shr,
};

/// `a op b` (for Add/Sub: a + alpha * b). Errors: shapes that do not
/// broadcast, integer division by zero.
Expected<Tensor> binary(BinaryOp op, const Operand &a, const Operand &b, double alpha = 1.0);

/// `a op b` for the comparison ops (Lt, Le, Gt, Ge, Eq, Ne) on two values of
/// one type: binary() compares tensors in their common dtype with it, and the
/// symbolic-scalar kernels compare Python numbers.
template <class T> bool compareAs(BinaryOp op, T a, T b) {
  switch (op) {
  case BinaryOp::Lt:
    return a < b;
  case BinaryOp::Le:
    return a <= b;
  case BinaryOp::Gt:
    return a > b;
  case BinaryOp::Ge:
    return a >= b;
  case BinaryOp::Eq:
    return a == b;
  default:
    return a != b;
  }
}

enum class UnaryOp {
  Neg,
  Abs,
  Round, ///< torch.round: half to even
  Trunc,
  Floor,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Exp,
  Relu,
  Sigmoid,
  Silu,
  GeluErf,
  GeluTanh,
};

/// Elementwise unary op. Float ops on integer tensors compute in f32 like
/// torch's int-to-float unary ops.
Tensor unary(UnaryOp op, const Tensor &x);

/// et_vk.swiglu: (silu(gate.float()) * up.float()).to(dtype), gate and up
/// broadcast and of one dtype, f16 or f32. In f32 each step rounds where
/// aten.silu then aten.mul round; in f16 the product rounds once.
Expected<Tensor> swiglu(const Tensor &gate, const Tensor &up);

/// torch.clamp(x, min, max) with Python-number bounds (NaN propagates).
Tensor clamp(const Tensor &x, std::optional<Number> min, std::optional<Number> max);
/// torch.where(cond, a, b).
Expected<Tensor> where(const Tensor &cond, const Operand &a, const Operand &b);

//===-- Views and layout (results share storage unless noted) -------------===//

Expected<Tensor> permute(const Tensor &x, const std::vector<int64_t> &dims);
Expected<Tensor> transpose(const Tensor &x, int64_t d0, int64_t d1);
/// torch.view semantics, including one -1 entry; copies only when the
/// strides cannot express the new shape (callers wanting `view` strictness
/// check isViewable themselves).
Expected<Tensor> reshape(const Tensor &x, std::vector<int64_t> sizes);
Expected<Tensor> expand(const Tensor &x, const std::vector<int64_t> &sizes);
Expected<Tensor> slice(const Tensor &x, int64_t dim, std::optional<int64_t> start,
                       std::optional<int64_t> end, int64_t step);
Expected<Tensor> select(const Tensor &x, int64_t dim, int64_t index);
Expected<Tensor> unsqueeze(const Tensor &x, int64_t dim);
Expected<Tensor> squeeze(const Tensor &x, const std::vector<int64_t> &dims);
Expected<Tensor> cat(const std::vector<Tensor> &xs, int64_t dim);
Expected<Tensor> stack(const std::vector<Tensor> &xs, int64_t dim);
/// Contiguous copy in fresh storage.
Tensor copy(const Tensor &x);

//===-- Reductions -----------------------------------------------------===//

enum class ReduceOp { Sum, Mean, Amax, Amin };
/// Reduces over `dims` (empty: all dims). `dtype` is torch's `dtype=`
/// argument for sum/mean.
Expected<Tensor> reduce(ReduceOp op, const Tensor &x, std::vector<int64_t> dims, bool keepdim,
                        std::optional<DType> dtype = std::nullopt);
/// Softmax along `dim`; `outDType` for half_to_float / dtype=.
Expected<Tensor> softmax(const Tensor &x, int64_t dim, DType outDType);

//===-- Linear algebra ---------------------------------------------------===//

/// torch.matmul with broadcasting batch dims (1-D operands as in torch).
/// Accumulation: in opmath (f32 for f16/bf16/f32, f64 for f64, int64 for
/// integers), sequentially over k = 0..K-1, result rounded once.
Expected<Tensor> matmul(const Tensor &a, const Tensor &b);
/// F.linear: x @ w.T + bias (bias added after the full dot product, then
/// rounded once for f32; see docs/numerics.md).
Expected<Tensor> linear(const Tensor &x, const Tensor &w, const Tensor *bias);

/// Index of a (possibly negative) dim, or an error.
Expected<int64_t> wrapDim(int64_t dim, int64_t rank, const char *what = "dim");

} // namespace graft::interp
