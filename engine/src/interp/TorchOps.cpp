//===- TorchOps.cpp - PyTorch eager CPU operator semantics ----------------===//
//
// Implements TorchOps.h. Each function cites the PyTorch CPU kernel whose
// rounding behaviour it reproduces; see docs/numerics.md for the summary.
//
//===----------------------------------------------------------------------===//
#include "TorchOps.h"

#include "graft/support/FloatBits.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace graft::interp {

namespace {

std::string sizesStr(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// c10's combine_categories(higher, lower) (ScalarType.h / TypeProperties.cpp).
std::optional<DType> combineCategories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher)
    return lower;
  if (!lower)
    return higher;
  if (isComplex(*higher) || isFloatingPoint(*higher))
    return higher;
  if (*higher == DType::Bool || isFloatingPoint(*lower) || isComplex(*lower))
    return promoteTypes(*higher, *lower);
  return higher;
}

std::optional<DType> promoteOpt(std::optional<DType> a, DType b) {
  return a ? promoteTypes(*a, b) : b;
}

/// Opmath of a float dtype: float for f16/bf16/f32 (and f8), double for f64.
bool opmathIsDouble(DType d) {
  return d == DType::F64;
}

/// Whether the dtype stores values we read through getInt (exact int64).
bool isIntLike(DType d) {
  return isIntegral(d, /*includeBool=*/true);
}

double loadDouble(const Tensor &t, int64_t i) {
  if (isIntLike(t.dtype()))
    return static_cast<double>(t.getInt(i));
  return t.getDouble(i);
}

/// Wraps an int64 to the width and signedness of `d` (as a C++ cast would).
int64_t wrapInt(int64_t v, DType d) {
  switch (elementSize(d)) {
  case 1:
    return isSignedIntegral(d) ? int64_t(int8_t(uint8_t(v))) : int64_t(uint8_t(v));
  case 2:
    return isSignedIntegral(d) ? int64_t(int16_t(uint16_t(v))) : int64_t(uint16_t(v));
  case 4:
    return isSignedIntegral(d) ? int64_t(int32_t(uint32_t(v))) : int64_t(uint32_t(v));
  default:
    return v;
  }
}

int64_t floorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}

/// c10::div_floor_floating.
template <class T> T divFloorFloating(T a, T b) {
  if (b == 0)
    return a / b;
  T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if ((mod != 0) && (b < 0) != (mod < 0))
    div -= T(1);
  T floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > T(0.5))
      floordiv += T(1);
  } else {
    floordiv = std::copysign(T(0), a / b);
  }
  return floordiv;
}

template <class T> T remainderFloating(T a, T b) {
  T mod = std::fmod(a, b);
  if ((mod != 0) && ((b < 0) != (mod < 0)))
    mod += b;
  return mod;
}

template <class T> T powFloat(T base, T exp) {
  // PowKernel.cpp pow_tensor_scalar_optimized_kernel special cases.
  if (exp == T(2))
    return base * base;
  if (exp == T(3))
    return base * base * base;
  if (exp == T(0.5))
    return std::sqrt(base);
  if (exp == T(-0.5))
    return T(1) / std::sqrt(base);
  if (exp == T(-1))
    return T(1) / base;
  if (exp == T(-2))
    return T(1) / (base * base);
  return std::pow(base, exp);
}

template <class T> T applyFloat(BinaryOp op, T a, T b, T alpha) {
  switch (op) {
  case BinaryOp::Add:
    return alpha == T(1) ? a + b : a + alpha * b;
  case BinaryOp::Sub:
    return alpha == T(1) ? a - b : a - alpha * b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return a / b;
  case BinaryOp::DivTrunc:
    return std::trunc(a / b);
  case BinaryOp::DivFloor:
    return divFloorFloating(a, b);
  case BinaryOp::Remainder:
    return remainderFloating(a, b);
  case BinaryOp::Pow:
    return powFloat(a, b);
  case BinaryOp::Maximum:
    return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<T>::quiet_NaN() : std::max(a, b);
  case BinaryOp::Minimum:
    return (std::isnan(a) || std::isnan(b)) ? std::numeric_limits<T>::quiet_NaN() : std::min(a, b);
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge:
  case BinaryOp::Eq:
  case BinaryOp::Ne:
    return compareAs(op, a, b);
  default:
    return std::numeric_limits<T>::quiet_NaN();
  }
}

bool isComparison(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}

const char *opName(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return "add";
  case BinaryOp::Sub:
    return "sub";
  case BinaryOp::Mul:
    return "mul";
  case BinaryOp::Div:
  case BinaryOp::DivTrunc:
  case BinaryOp::DivFloor:
    return "div";
  case BinaryOp::Remainder:
    return "remainder";
  case BinaryOp::Pow:
    return "pow";
  default:
    return "binary op";
  }
}

} // namespace

DType Number::wrappedDType() const {
  switch (kind) {
  case Kind::Bool:
    return DType::Bool;
  case Kind::Int:
    return DType::I64;
  case Kind::Float:
    return DType::F64;
  }
  return DType::F64;
}

DType resultType(const std::vector<Operand> &operands) {
  std::optional<DType> dimResult, zeroResult, wrappedResult;
  for (const Operand &o : operands) {
    if (o.isTensor) {
      if (!o.tensor.defined())
        continue;
      if (o.tensor.rank() > 0)
        dimResult = promoteOpt(dimResult, o.tensor.dtype());
      else
        zeroResult = promoteOpt(zeroResult, o.tensor.dtype());
    } else {
      // A wrapped Python float takes the default dtype (f32) once it wins.
      DType d = o.number.wrappedDType();
      if (d == DType::F64)
        d = DType::F32;
      wrappedResult = promoteOpt(wrappedResult, d);
    }
  }
  auto r = combineCategories(dimResult, combineCategories(zeroResult, wrappedResult));
  return r.value_or(DType::F32);
}

double castValue(double v, DType d) {
  switch (d) {
  case DType::F64:
    return v;
  case DType::F32:
    return static_cast<float>(v);
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0FNU:
    return roundToDType(static_cast<float>(v), d);
  case DType::Bool:
    return v != 0.0 ? 1.0 : 0.0;
  default:
    break;
  }
  if (isIntegral(d)) {
    if (std::isnan(v))
      return 0;
    // Truncate toward zero, then wrap like torch's static_cast on x86.
    double t = std::trunc(v);
    int64_t i = (t >= 9.2233720368547758e18 || t < -9.2233720368547758e18)
                    ? std::numeric_limits<int64_t>::min()
                    : static_cast<int64_t>(t);
    return static_cast<double>(wrapInt(i, d));
  }
  return v;
}

Expected<std::vector<int64_t>> broadcastSizes(const std::vector<int64_t> &a,
                                              const std::vector<int64_t> &b) {
  std::size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      return Diagnostic::error("shapes " + sizesStr(a) + " and " + sizesStr(b) +
                               " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor expandTo(const Tensor &t, const std::vector<int64_t> &sizes) {
  std::size_t n = sizes.size(), r = t.sizes().size();
  std::vector<int64_t> strides(n, 0);
  for (std::size_t i = 0; i < r; ++i) {
    std::size_t o = n - r + i;
    strides[o] = t.sizes()[i] == sizes[o] ? t.strides()[i] : 0;
  }
  if (n == 0)
    return Tensor(t.dtype(), {}, t.storage(), t.offset(), {});
  // A Tensor built with all-zero strides must keep them: pass explicitly.
  return Tensor(t.dtype(), sizes, t.storage(), t.offset(), strides);
}

Expected<Tensor> binary(BinaryOp op, const Operand &a, const Operand &b, double alpha) {
  DType common = resultType({a, b});
  if (op == BinaryOp::Div && !isFloatingPoint(common))
    common = DType::F32; // true division of integers yields the default dtype
  if ((op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::Shl ||
       op == BinaryOp::Shr) &&
      isFloatingPoint(common))
    return Diagnostic::error(std::string("bitwise op is not defined for ") +
                             std::string(name(common)));
  std::vector<int64_t> sa = a.isTensor ? a.tensor.sizes() : std::vector<int64_t>{};
  std::vector<int64_t> sb = b.isTensor ? b.tensor.sizes() : std::vector<int64_t>{};
  GRAFT_TRY(std::vector<int64_t> outSizes, broadcastSizes(sa, sb));
  DType outDType = isComparison(op) ? DType::Bool : common;
  Tensor out = Tensor::empty(outDType, outSizes);
  int64_t n = out.numel();
  Tensor ea = a.isTensor ? expandTo(a.tensor, outSizes) : Tensor();
  Tensor eb = b.isTensor ? expandTo(b.tensor, outSizes) : Tensor();

  if (isFloatingPoint(common)) {
    // Operands converted to the common dtype first (TensorIterator casts).
    auto loadA = [&](int64_t i) {
      return castValue(a.isTensor ? loadDouble(ea, i) : a.number.toDouble(), common);
    };
    // mul/div with a one-element second operand on reduced floats read the
    // operand's original value in opmath (BinaryOpsKernel.cpp).
    bool reduced = common == DType::F16 || common == DType::BF16;
    bool bScalar = !b.isTensor || b.tensor.numel() == 1;
    bool original = reduced && bScalar &&
                    (op == BinaryOp::Mul || op == BinaryOp::Div || op == BinaryOp::DivTrunc ||
                     op == BinaryOp::DivFloor);
    double bOriginal = 0;
    if (original)
      bOriginal = static_cast<float>(b.isTensor ? loadDouble(b.tensor, 0) : b.number.toDouble());
    auto loadB = [&](int64_t i) {
      if (original)
        return bOriginal;
      return castValue(b.isTensor ? loadDouble(eb, i) : b.number.toDouble(), common);
    };
    for (int64_t i = 0; i < n; ++i) {
      double r;
      if (opmathIsDouble(common))
        r = applyFloat<double>(op, loadA(i), loadB(i), alpha);
      else
        r = applyFloat<float>(op, static_cast<float>(loadA(i)), static_cast<float>(loadB(i)),
                              static_cast<float>(alpha));
      if (isComparison(op))
        out.setDouble(i, r);
      else
        out.setDouble(i, castValue(r, common));
    }
    return out;
  }

  // Integer and bool arithmetic in the common dtype, wrapping at its width.
  auto loadIntA = [&](int64_t i) {
    return a.isTensor ? static_cast<int64_t>(castValue(static_cast<double>(ea.getInt(i)), common))
                      : static_cast<int64_t>(castValue(a.number.toDouble(), common));
  };
  auto loadIntB = [&](int64_t i) {
    return b.isTensor ? static_cast<int64_t>(castValue(static_cast<double>(eb.getInt(i)), common))
                      : static_cast<int64_t>(castValue(b.number.toDouble(), common));
  };
  // castValue through double is exact for the int widths used here except
  // int64 values beyond 2^53; read int64 operands directly to stay exact.
  auto rawA = [&](int64_t i) {
    return common == DType::I64 ? (a.isTensor ? ea.getInt(i) : a.number.i) : loadIntA(i);
  };
  auto rawB = [&](int64_t i) {
    return common == DType::I64 ? (b.isTensor ? eb.getInt(i) : b.number.i) : loadIntB(i);
  };
  int64_t ialpha = static_cast<int64_t>(alpha);
  for (int64_t i = 0; i < n; ++i) {
    int64_t x = rawA(i), y = rawB(i);
    uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    int64_t r = 0;
    if (common == DType::Bool) {
      switch (op) {
      case BinaryOp::Add:
      case BinaryOp::BitOr:
      case BinaryOp::Maximum:
        r = (x || y) ? 1 : 0;
        break;
      case BinaryOp::Mul:
      case BinaryOp::BitAnd:
      case BinaryOp::Minimum:
        r = (x && y) ? 1 : 0;
        break;
      case BinaryOp::Lt:
      case BinaryOp::Le:
      case BinaryOp::Gt:
      case BinaryOp::Ge:
      case BinaryOp::Eq:
      case BinaryOp::Ne:
        r = compareAs(op, x, y);
        break;
      default:
        return Diagnostic::error(std::string(opName(op)) + " is not defined for bool tensors");
      }
      out.setInt(i, r);
      continue;
    }
    switch (op) {
    case BinaryOp::Add:
      r = static_cast<int64_t>(ux + static_cast<uint64_t>(ialpha) * uy);
      break;
    case BinaryOp::Sub:
      r = static_cast<int64_t>(ux - static_cast<uint64_t>(ialpha) * uy);
      break;
    case BinaryOp::Mul:
      r = static_cast<int64_t>(ux * uy);
      break;
    case BinaryOp::DivTrunc:
    case BinaryOp::DivFloor:
    case BinaryOp::Remainder:
      if (y == 0)
        return Diagnostic::error("integer division by zero (ZeroDivisionError)");
      if (op == BinaryOp::DivTrunc)
        r = (x == std::numeric_limits<int64_t>::min() && y == -1) ? x : x / y;
      else if (op == BinaryOp::DivFloor)
        r = (x == std::numeric_limits<int64_t>::min() && y == -1) ? x : floorDivInt(x, y);
      else {
        r = (y == -1) ? 0 : x % y;
        if (r != 0 && ((r < 0) != (y < 0)))
          r += y;
      }
      break;
    case BinaryOp::Pow: {
      if (y < 0)
        return Diagnostic::error("integers to negative integer powers are not allowed");
      uint64_t acc = 1, base = ux;
      for (int64_t e = y; e > 0; e >>= 1) {
        if (e & 1)
          acc *= base;
        base *= base;
      }
      r = static_cast<int64_t>(acc);
      break;
    }
    case BinaryOp::Maximum:
      r = std::max(x, y);
      break;
    case BinaryOp::Minimum:
      r = std::min(x, y);
      break;
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      r = compareAs(op, x, y);
      break;
    case BinaryOp::BitAnd:
      r = static_cast<int64_t>(ux & uy);
      break;
    case BinaryOp::BitOr:
      r = static_cast<int64_t>(ux | uy);
      break;
    case BinaryOp::Shl: {
      int64_t bits = static_cast<int64_t>(elementSize(common)) * 8;
      r = (y < 0 || y >= bits) ? 0 : static_cast<int64_t>(ux << y);
      break;
    }
    case BinaryOp::Shr: {
      // BinaryOpsKernel.cpp rshift: keeps the sign bit for signed types.
      int64_t bits =
          static_cast<int64_t>(elementSize(common)) * 8 - (isSignedIntegral(common) ? 1 : 0);
      int64_t s = (y < 0 || y >= bits) ? bits : y;
      if (isSignedIntegral(common))
        r = x >> s;
      else
        r = s >= 64 ? 0 : static_cast<int64_t>(ux >> s);
      break;
    }
    case BinaryOp::Div:
      break; // handled as float above
    }
    if (isComparison(op))
      out.setInt(i, r);
    else
      out.setInt(i, wrapInt(r, common));
  }
  return out;
}

namespace {

template <class T> T applyUnary(UnaryOp op, T x) {
  switch (op) {
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Abs:
    return std::abs(x);
  case UnaryOp::Round:
    return std::nearbyint(x); // default FP environment: ties to even
  case UnaryOp::Trunc:
    return std::trunc(x);
  case UnaryOp::Floor:
    return std::floor(x);
  case UnaryOp::Sqrt:
    return std::sqrt(x);
  case UnaryOp::Rsqrt:
    return T(1) / std::sqrt(x); // Vectorized::rsqrt is 1 / sqrt(x)
  case UnaryOp::Reciprocal:
    return T(1) / x;
  case UnaryOp::Exp:
    return std::exp(x);
  case UnaryOp::Relu:
    return std::isnan(x) ? x : (x > T(0) ? x : T(0));
  case UnaryOp::Sigmoid:
    return T(1) / (T(1) + std::exp(-x));
  case UnaryOp::Silu:
    return x / (T(1) + std::exp(-x));
  case UnaryOp::GeluErf: {
    // GeluKernel.cpp: x * 0.5 * (1 + erf(x * M_SQRT1_2))
    const T kAlpha = static_cast<T>(M_SQRT1_2);
    return x * T(0.5) * (T(1) + std::erf(x * kAlpha));
  }
  case UnaryOp::GeluTanh: {
    // GeluKernel.cpp: 0.5 * x * (1 + tanh(kBeta * (x + kKappa * x^3)))
    const T kBeta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
    const T kKappa = static_cast<T>(0.044715);
    T cube = x * x * x;
    T inner = kBeta * (x + kKappa * cube);
    return T(0.5) * x * (T(1) + std::tanh(inner));
  }
  }
  return x;
}

bool isFloatOnlyUnary(UnaryOp op) {
  switch (op) {
  case UnaryOp::Sqrt:
  case UnaryOp::Rsqrt:
  case UnaryOp::Reciprocal:
  case UnaryOp::Exp:
  case UnaryOp::Sigmoid:
  case UnaryOp::Silu:
  case UnaryOp::GeluErf:
  case UnaryOp::GeluTanh:
    return true;
  default:
    return false;
  }
}

} // namespace

Tensor unary(UnaryOp op, const Tensor &x) {
  DType d = x.dtype();
  bool intIn = isIntLike(d);
  DType outD = (intIn && isFloatOnlyUnary(op)) ? DType::F32 : d;
  Tensor out = Tensor::empty(outD, x.sizes());
  int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (isFloatingPoint(outD)) {
      double v = castValue(loadDouble(x, i), outD);
      double r = opmathIsDouble(outD)
                     ? applyUnary<double>(op, v)
                     : static_cast<double>(applyUnary<float>(op, static_cast<float>(v)));
      out.setDouble(i, castValue(r, outD));
    } else {
      int64_t v = x.getInt(i);
      int64_t r = v;
      if (op == UnaryOp::Neg)
        r = static_cast<int64_t>(0 - static_cast<uint64_t>(v));
      else if (op == UnaryOp::Abs)
        r = v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v;
      else if (op == UnaryOp::Relu)
        r = v > 0 ? v : 0;
      out.setInt(i, d == DType::Bool ? r : wrapInt(r, d));
    }
  }
  return out;
}

Expected<Tensor> swiglu(const Tensor &gate, const Tensor &up) {
  DType d = gate.dtype();
  if (up.dtype() != d || (d != DType::F32 && d != DType::F16))
    return Diagnostic::error("swiglu: gate and up must share one dtype, f16 or f32; got " +
                             std::string(name(d)) + " and " + std::string(name(up.dtype())));
  GRAFT_TRY(std::vector<int64_t> outSizes, broadcastSizes(gate.sizes(), up.sizes()));
  Tensor out = Tensor::empty(d, outSizes);
  Tensor eg = expandTo(gate, outSizes);
  Tensor eu = expandTo(up, outSizes);
  for (int64_t i = 0; i < out.numel(); ++i) {
    // f32 opmath for both dtypes: the silu value stays f32 (no rounding to
    // f16 between the two steps), the product rounds once to the dtype.
    float s = applyUnary<float>(UnaryOp::Silu, static_cast<float>(loadDouble(eg, i)));
    float r = s * static_cast<float>(loadDouble(eu, i));
    out.setDouble(i, castValue(r, d));
  }
  return out;
}

Tensor clamp(const Tensor &x, std::optional<Number> min, std::optional<Number> max) {
  // TensorCompare.cpp: clamp promotes only when self is not floating.
  DType d = x.dtype();
  if (!isFloatingPoint(d)) {
    std::vector<Operand> ops{x};
    if (min)
      ops.emplace_back(*min);
    if (max)
      ops.emplace_back(*max);
    d = resultType(ops);
  }
  Tensor out = Tensor::empty(d, x.sizes());
  int64_t n = x.numel();
  if (isFloatingPoint(d) && min && max &&
      (std::isnan(min->toDouble()) || std::isnan(max->toDouble()))) {
    // TensorCompare.cpp clamp_out: with both bounds given, a NaN bound fills
    // the result with NaN (a single NaN bound is ignored by std::max/min).
    for (int64_t i = 0; i < n; ++i)
      out.setDouble(i, std::numeric_limits<double>::quiet_NaN());
    return out;
  }
  if (isFloatingPoint(d)) {
    // clamp_scalar_kernel_impl converts the bounds to scalar_t.
    double lo = min ? castValue(min->toDouble(), d) : -std::numeric_limits<double>::infinity();
    double hi = max ? castValue(max->toDouble(), d) : std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      double v = castValue(loadDouble(x, i), d);
      if (!std::isnan(v))
        v = std::min(std::max(v, lo), hi);
      out.setDouble(i, v);
    }
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = x.getInt(i);
    if (min)
      v = std::max(v, static_cast<int64_t>(castValue(min->toDouble(), d)));
    if (max)
      v = std::min(v, static_cast<int64_t>(castValue(max->toDouble(), d)));
    out.setInt(i, v);
  }
  return out;
}

Expected<Tensor> where(const Tensor &cond, const Operand &a, const Operand &b) {
  DType d = resultType({a, b});
  std::vector<int64_t> sa = a.isTensor ? a.tensor.sizes() : std::vector<int64_t>{};
  std::vector<int64_t> sb = b.isTensor ? b.tensor.sizes() : std::vector<int64_t>{};
  GRAFT_TRY(auto s1, broadcastSizes(cond.sizes(), sa));
  GRAFT_TRY(auto outSizes, broadcastSizes(s1, sb));
  Tensor c = expandTo(cond, outSizes);
  Tensor ea = a.isTensor ? expandTo(a.tensor, outSizes) : Tensor();
  Tensor eb = b.isTensor ? expandTo(b.tensor, outSizes) : Tensor();
  Tensor out = Tensor::empty(d, outSizes);
  for (int64_t i = 0, n = out.numel(); i < n; ++i) {
    bool pick = c.getDouble(i) != 0.0;
    const Operand &o = pick ? a : b;
    const Tensor &e = pick ? ea : eb;
    if (isIntLike(d) && d != DType::Bool && (!o.isTensor || isIntLike(e.dtype())))
      out.setInt(i, o.isTensor ? e.getInt(i) : o.number.i);
    else
      out.setDouble(i, castValue(o.isTensor ? loadDouble(e, i) : o.number.toDouble(), d));
  }
  return out;
}

Expected<int64_t> wrapDim(int64_t dim, int64_t rank, const char *what) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r)
    return Diagnostic::error(std::string(what) + " " + std::to_string(dim) +
                             " is out of range for a tensor of rank " + std::to_string(rank));
  return dim < 0 ? dim + r : dim;
}

Expected<Tensor> permute(const Tensor &x, const std::vector<int64_t> &dims) {
  int64_t r = x.rank();
  if (static_cast<int64_t>(dims.size()) != r)
    return Diagnostic::error("permute: " + std::to_string(dims.size()) +
                             " dims for a tensor of rank " + std::to_string(r));
  std::vector<bool> seen(static_cast<std::size_t>(r), false);
  std::vector<int64_t> sizes, strides;
  for (int64_t d : dims) {
    GRAFT_TRY(int64_t w, wrapDim(d, r));
    if (seen[static_cast<std::size_t>(w)])
      return Diagnostic::error("permute: dim " + std::to_string(d) + " repeats");
    seen[static_cast<std::size_t>(w)] = true;
    sizes.push_back(x.sizes()[static_cast<std::size_t>(w)]);
    strides.push_back(x.strides()[static_cast<std::size_t>(w)]);
  }
  if (r == 0)
    return x;
  return Tensor(x.dtype(), sizes, x.storage(), x.offset(), strides);
}

Expected<Tensor> transpose(const Tensor &x, int64_t d0, int64_t d1) {
  int64_t r = x.rank();
  if (r == 0)
    return x;
  GRAFT_TRY(int64_t a, wrapDim(d0, r));
  GRAFT_TRY(int64_t b, wrapDim(d1, r));
  std::vector<int64_t> dims(static_cast<std::size_t>(r));
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[static_cast<std::size_t>(a)], dims[static_cast<std::size_t>(b)]);
  return permute(x, dims);
}

Expected<Tensor> reshape(const Tensor &x, std::vector<int64_t> sizes) {
  int64_t known = 1;
  int inferIdx = -1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (inferIdx >= 0)
        return Diagnostic::error("only one dimension can be inferred (-1)");
      inferIdx = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      return Diagnostic::error("invalid size " + std::to_string(sizes[i]));
    } else {
      known *= sizes[i];
    }
  }
  int64_t n = x.numel();
  if (inferIdx >= 0) {
    if (known == 0 || n % known != 0)
      return Diagnostic::error("shape " + sizesStr(sizes) + " is invalid for input of size " +
                               std::to_string(n));
    sizes[static_cast<std::size_t>(inferIdx)] = n / known;
  } else if (known != n) {
    return Diagnostic::error("shape " + sizesStr(sizes) + " is invalid for input of size " +
                             std::to_string(n));
  }
  if (auto st = viewStrides(x.sizes(), x.strides(), sizes)) {
    if (sizes.empty())
      return Tensor(x.dtype(), {}, x.storage(), x.offset(), {});
    return Tensor(x.dtype(), sizes, x.storage(), x.offset(), *st);
  }
  Tensor c = copy(x);
  return Tensor(x.dtype(), sizes, c.storage(), 0);
}

Expected<Tensor> expand(const Tensor &x, const std::vector<int64_t> &sizes) {
  if (sizes.size() < x.sizes().size())
    return Diagnostic::error("expand: target " + sizesStr(sizes) + " has fewer dims than " +
                             sizesStr(x.sizes()));
  std::vector<int64_t> target = sizes;
  std::size_t lead = sizes.size() - x.sizes().size();
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (i < lead)
        return Diagnostic::error("expand: -1 is not allowed for a new leading dim");
      target[i] = x.sizes()[i - lead];
    }
    if (i >= lead) {
      int64_t s = x.sizes()[i - lead];
      if (s != 1 && s != target[i])
        return Diagnostic::error("expand: cannot expand " + sizesStr(x.sizes()) + " to " +
                                 sizesStr(sizes));
    }
  }
  return expandTo(x, target);
}

Expected<Tensor> slice(const Tensor &x, int64_t dim, std::optional<int64_t> start,
                       std::optional<int64_t> end, int64_t step) {
  if (x.rank() == 0)
    return Diagnostic::error("slice: cannot slice a 0-dim tensor");
  GRAFT_TRY(int64_t d, wrapDim(dim, x.rank()));
  if (step <= 0)
    return Diagnostic::error("slice: step must be positive");
  int64_t size = x.sizes()[static_cast<std::size_t>(d)];
  int64_t s = start.value_or(0), e = end.value_or(std::numeric_limits<int64_t>::max());
  if (s < 0)
    s += size;
  if (e < 0)
    e += size;
  s = std::clamp<int64_t>(s, 0, size);
  e = std::clamp<int64_t>(e, 0, size);
  if (e < s)
    e = s;
  int64_t len = (e - s + step - 1) / step;
  std::vector<int64_t> sizes = x.sizes(), strides = x.strides();
  sizes[static_cast<std::size_t>(d)] = len;
  int64_t stride = strides[static_cast<std::size_t>(d)];
  strides[static_cast<std::size_t>(d)] = stride * step;
  return Tensor(x.dtype(), sizes, x.storage(), x.offset() + s * stride, strides);
}

Expected<Tensor> select(const Tensor &x, int64_t dim, int64_t index) {
  if (x.rank() == 0)
    return Diagnostic::error("select: cannot select from a 0-dim tensor");
  GRAFT_TRY(int64_t d, wrapDim(dim, x.rank()));
  int64_t size = x.sizes()[static_cast<std::size_t>(d)];
  if (index < -size || index >= size)
    return Diagnostic::error("select: index " + std::to_string(index) +
                             " is out of range for dim " + std::to_string(dim) + " of size " +
                             std::to_string(size));
  if (index < 0)
    index += size;
  std::vector<int64_t> sizes = x.sizes(), strides = x.strides();
  int64_t off = x.offset() + index * strides[static_cast<std::size_t>(d)];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  if (sizes.empty())
    return Tensor(x.dtype(), {}, x.storage(), off, {});
  return Tensor(x.dtype(), sizes, x.storage(), off, strides);
}

Expected<Tensor> unsqueeze(const Tensor &x, int64_t dim) {
  GRAFT_TRY(int64_t d, wrapDim(dim, x.rank() + 1));
  std::vector<int64_t> sizes = x.sizes(), strides = x.strides();
  int64_t st =
      d < x.rank() ? sizes[static_cast<std::size_t>(d)] * strides[static_cast<std::size_t>(d)] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, st);
  return Tensor(x.dtype(), sizes, x.storage(), x.offset(), strides);
}

Expected<Tensor> squeeze(const Tensor &x, const std::vector<int64_t> &dims) {
  std::vector<bool> drop(static_cast<std::size_t>(x.rank()), false);
  if (dims.empty()) {
    for (int64_t i = 0; i < x.rank(); ++i)
      drop[static_cast<std::size_t>(i)] = x.sizes()[static_cast<std::size_t>(i)] == 1;
  } else if (x.rank() > 0) {
    for (int64_t d : dims) {
      GRAFT_TRY(int64_t w, wrapDim(d, x.rank()));
      if (x.sizes()[static_cast<std::size_t>(w)] == 1)
        drop[static_cast<std::size_t>(w)] = true;
    }
  }
  std::vector<int64_t> sizes, strides;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop[static_cast<std::size_t>(i)]) {
      sizes.push_back(x.sizes()[static_cast<std::size_t>(i)]);
      strides.push_back(x.strides()[static_cast<std::size_t>(i)]);
    }
  if (sizes.empty())
    return Tensor(x.dtype(), {}, x.storage(), x.offset(), {});
  return Tensor(x.dtype(), sizes, x.storage(), x.offset(), strides);
}

Tensor copy(const Tensor &x) {
  return x.clone();
}

Expected<Tensor> cat(const std::vector<Tensor> &xs, int64_t dim) {
  // Legacy behaviour: 1-D empty tensors are skipped.
  std::vector<Tensor> parts;
  std::vector<Operand> ops;
  for (const Tensor &t : xs) {
    ops.emplace_back(t);
    if (!(t.rank() == 1 && t.numel() == 0))
      parts.push_back(t);
  }
  if (xs.empty())
    return Diagnostic::error("cat: expected a non-empty list of tensors");
  DType d = resultType(ops);
  if (parts.empty())
    return Tensor::empty(d, {0});
  int64_t r = parts[0].rank();
  GRAFT_TRY(int64_t w, wrapDim(dim, r));
  std::vector<int64_t> outSizes = parts[0].sizes();
  outSizes[static_cast<std::size_t>(w)] = 0;
  for (const Tensor &t : parts) {
    if (t.rank() != r)
      return Diagnostic::error("cat: tensors must have the same rank");
    for (int64_t i = 0; i < r; ++i)
      if (i != w && t.sizes()[static_cast<std::size_t>(i)] != outSizes[static_cast<std::size_t>(i)])
        return Diagnostic::error("cat: sizes " + sizesStr(t.sizes()) + " and " +
                                 sizesStr(parts[0].sizes()) + " differ outside dim " +
                                 std::to_string(w));
    outSizes[static_cast<std::size_t>(w)] += t.sizes()[static_cast<std::size_t>(w)];
  }
  Tensor out = Tensor::empty(d, outSizes);
  int64_t offset = 0;
  for (const Tensor &t : parts) {
    int64_t len = t.sizes()[static_cast<std::size_t>(w)];
    GRAFT_TRY(Tensor dst, slice(out, w, offset, offset + len, 1));
    Tensor src = t.to(d);
    for (int64_t i = 0, n = src.numel(); i < n; ++i) {
      if (isIntLike(d))
        dst.setInt(i, src.getInt(i));
      else
        dst.setDouble(i, src.getDouble(i));
    }
    offset += len;
  }
  return out;
}

Expected<Tensor> stack(const std::vector<Tensor> &xs, int64_t dim) {
  if (xs.empty())
    return Diagnostic::error("stack: expected a non-empty list of tensors");
  std::vector<Tensor> us;
  for (const Tensor &t : xs) {
    if (t.sizes() != xs[0].sizes())
      return Diagnostic::error("stack: all tensors must have the same shape");
    GRAFT_TRY(Tensor u, unsqueeze(t, dim));
    us.push_back(u);
  }
  GRAFT_TRY(int64_t w, wrapDim(dim, xs[0].rank() + 1));
  return cat(us, w);
}

Expected<Tensor> reduce(ReduceOp op, const Tensor &x, std::vector<int64_t> dims, bool keepdim,
                        std::optional<DType> dtype) {
  int64_t r = x.rank();
  std::vector<bool> red(static_cast<std::size_t>(r), dims.empty());
  for (int64_t d : dims) {
    GRAFT_TRY(int64_t w, wrapDim(d, r));
    red[static_cast<std::size_t>(w)] = true;
  }
  std::vector<int64_t> outSizes, keptSizes, redSizes;
  for (int64_t i = 0; i < r; ++i) {
    int64_t s = x.sizes()[static_cast<std::size_t>(i)];
    if (red[static_cast<std::size_t>(i)]) {
      redSizes.push_back(s);
      if (keepdim)
        outSizes.push_back(1);
    } else {
      keptSizes.push_back(s);
      outSizes.push_back(s);
    }
  }
  // Result dtype: sum of integers/bool is int64; dtype= casts the input first.
  DType in = dtype.value_or(x.dtype());
  DType outD = in;
  if (op == ReduceOp::Sum && !dtype && isIntLike(x.dtype()))
    outD = DType::I64;
  if (op == ReduceOp::Mean && !isFloatingPoint(outD))
    return Diagnostic::error("mean(): could not infer output dtype; input dtype " +
                             std::string(name(outD)) + " is not floating point");
  Tensor src = dtype ? x.to(*dtype) : x;
  // Permute reduced dims last so each output element's inputs are a
  // contiguous run in logical order.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    if (!red[static_cast<std::size_t>(i)])
      perm.push_back(i);
  for (int64_t i = 0; i < r; ++i)
    if (red[static_cast<std::size_t>(i)])
      perm.push_back(i);
  GRAFT_TRY(Tensor p, permute(src, perm));
  int64_t redN = 1;
  for (int64_t s : redSizes)
    redN *= s;
  Tensor out = Tensor::empty(outD, outSizes);
  int64_t outN = out.numel();
  if ((op == ReduceOp::Amax || op == ReduceOp::Amin) && redN == 0 && outN > 0)
    return Diagnostic::error("amax/amin: cannot reduce over a zero-size dimension");
  bool isFloat = isFloatingPoint(outD);
  bool dbl = outD == DType::F64;
  for (int64_t o = 0; o < outN; ++o) {
    int64_t base = o * redN;
    if (op == ReduceOp::Amax || op == ReduceOp::Amin) {
      bool mx = op == ReduceOp::Amax;
      if (isFloat) {
        double best = loadDouble(p, base);
        for (int64_t k = 1; k < redN && !std::isnan(best); ++k) {
          double v = loadDouble(p, base + k);
          if (std::isnan(v) || (mx ? v > best : v < best))
            best = v;
        }
        out.setDouble(o, best);
      } else {
        int64_t best = p.getInt(base);
        for (int64_t k = 1; k < redN; ++k) {
          int64_t v = p.getInt(base + k);
          best = mx ? std::max(best, v) : std::min(best, v);
        }
        out.setInt(o, best);
      }
      continue;
    }
    if (!isFloat) {
      uint64_t acc = 0;
      for (int64_t k = 0; k < redN; ++k)
        acc += static_cast<uint64_t>(p.getInt(base + k));
      out.setInt(o, wrapInt(static_cast<int64_t>(acc), outD));
      continue;
    }
    if (dbl) {
      double acc = 0;
      for (int64_t k = 0; k < redN; ++k)
        acc += loadDouble(p, base + k);
      if (op == ReduceOp::Mean)
        acc /= static_cast<double>(redN);
      out.setDouble(o, acc);
    } else {
      // f16/bf16 accumulate in f32; mean = (sum in f32) / N, then rounded
      // (ReduceOps.cpp mean_out on CPU: sum_out(...).div_(dim_prod)).
      float acc = 0;
      for (int64_t k = 0; k < redN; ++k)
        acc += static_cast<float>(loadDouble(p, base + k));
      if (op == ReduceOp::Mean)
        acc = acc / static_cast<float>(redN);
      out.setDouble(o, castValue(acc, outD));
    }
  }
  return out;
}

Expected<Tensor> softmax(const Tensor &x, int64_t dim, DType outDType) {
  if (!isFloatingPoint(x.dtype()))
    return Diagnostic::error("softmax: input must be floating point");
  int64_t r = x.rank();
  GRAFT_TRY(int64_t d, wrapDim(dim, r));
  Tensor out = Tensor::empty(outDType, x.sizes());
  if (x.numel() == 0)
    return out;
  // Move dim last in both input and output views.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    if (i != d)
      perm.push_back(i);
  if (r > 0)
    perm.push_back(d);
  GRAFT_TRY(Tensor p, permute(x, perm));
  GRAFT_TRY(Tensor po, permute(out, perm));
  int64_t len = r == 0 ? 1 : x.sizes()[static_cast<std::size_t>(d)];
  int64_t rows = x.numel() / len;
  bool dbl = x.dtype() == DType::F64 || outDType == DType::F64;
  std::vector<double> buf(static_cast<std::size_t>(len));
  for (int64_t row = 0; row < rows; ++row) {
    int64_t base = row * len;
    // SoftMaxKernel.cpp _vec_softmax_lastdim: max, exp(x - max), sum,
    // then multiply by 1/sum; reduced floats compute in f32.
    if (dbl) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, loadDouble(p, base + k));
      double sum = 0;
      for (int64_t k = 0; k < len; ++k) {
        buf[static_cast<std::size_t>(k)] = std::exp(loadDouble(p, base + k) - mx);
        sum += buf[static_cast<std::size_t>(k)];
      }
      double inv = 1.0 / sum;
      for (int64_t k = 0; k < len; ++k)
        po.setDouble(base + k, castValue(buf[static_cast<std::size_t>(k)] * inv, outDType));
    } else {
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < len; ++k) {
        float v = static_cast<float>(loadDouble(p, base + k));
        mx = (std::isnan(v) || v > mx) ? v : mx;
      }
      float sum = 0;
      for (int64_t k = 0; k < len; ++k) {
        float e = std::exp(static_cast<float>(loadDouble(p, base + k)) - mx);
        buf[static_cast<std::size_t>(k)] = e;
        sum += e;
      }
      float inv = 1.0f / sum;
      for (int64_t k = 0; k < len; ++k)
        po.setDouble(base + k, castValue(static_cast<float>(buf[static_cast<std::size_t>(k)]) * inv,
                                         outDType));
    }
  }
  return out;
}

namespace {

/// Values of a tensor as doubles in logical row-major order (already
/// representable in the tensor's dtype).
std::vector<double> toVector(const Tensor &t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::F32 && t.isContiguous()) {
    const float *p = t.data<float>();
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = p[i];
    return v;
  }
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = loadDouble(t, static_cast<int64_t>(i));
  return v;
}

} // namespace

Expected<Tensor> matmul(const Tensor &a0, const Tensor &b0) {
  if (a0.rank() == 0 || b0.rank() == 0)
    return Diagnostic::error("matmul: both arguments need at least 1 dimension");
  if (a0.dtype() != b0.dtype())
    return Diagnostic::error("matmul: expected both operands to have the same dtype, got " +
                             std::string(name(a0.dtype())) + " and " +
                             std::string(name(b0.dtype())));
  Tensor a = a0, b = b0;
  bool aVec = a.rank() == 1, bVec = b.rank() == 1;
  if (aVec) {
    GRAFT_TRY(a, unsqueeze(a, 0));
  }
  if (bVec) {
    GRAFT_TRY(b, unsqueeze(b, 1));
  }
  int64_t M = a.size(-2), K = a.size(-1), K2 = b.size(-2), N = b.size(-1);
  if (K != K2)
    return Diagnostic::error("matmul: shapes " + sizesStr(a0.sizes()) + " and " +
                             sizesStr(b0.sizes()) + " cannot be multiplied");
  std::vector<int64_t> ba(a.sizes().begin(), a.sizes().end() - 2);
  std::vector<int64_t> bb(b.sizes().begin(), b.sizes().end() - 2);
  GRAFT_TRY(auto batch, broadcastSizes(ba, bb));
  std::vector<int64_t> fa = batch, fb = batch;
  fa.push_back(M);
  fa.push_back(K);
  fb.push_back(K);
  fb.push_back(N);
  std::vector<double> va = toVector(expandTo(a, fa)), vb = toVector(expandTo(b, fb));
  int64_t B = 1;
  for (int64_t s : batch)
    B *= s;
  std::vector<int64_t> outSizes = batch;
  if (!aVec)
    outSizes.push_back(M);
  if (!bVec)
    outSizes.push_back(N);
  DType d = a.dtype();
  Tensor out = Tensor::empty(d, outSizes);
  bool isFloat = isFloatingPoint(d);
  for (int64_t bi = 0; bi < B; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double *pa = va.data() + (bi * M + i) * K;
        const double *pb = vb.data() + bi * K * N + j;
        int64_t o = (bi * M + i) * N + j;
        if (!isFloat) {
          uint64_t acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<uint64_t>(static_cast<int64_t>(pa[k])) *
                   static_cast<uint64_t>(static_cast<int64_t>(pb[k * N]));
          out.setInt(o, wrapInt(static_cast<int64_t>(acc), d));
        } else if (d == DType::F64) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += pa[k] * pb[k * N];
          out.setDouble(o, acc);
        } else {
          float acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += static_cast<float>(pa[k]) * static_cast<float>(pb[k * N]);
          out.setDouble(o, castValue(acc, d));
        }
      }
  return out;
}

Expected<Tensor> linear(const Tensor &x, const Tensor &w, const Tensor *bias) {
  if (w.rank() != 2 && w.rank() != 1)
    return Diagnostic::error("linear: weight must be 1-D or 2-D, got " + sizesStr(w.sizes()));
  if (x.dtype() != w.dtype() || (bias && bias->dtype() != x.dtype()))
    return Diagnostic::error("linear: input, weight and bias must have the same dtype, got " +
                             std::string(name(x.dtype())) + ", " + std::string(name(w.dtype())) +
                             (bias ? ", " + std::string(name(bias->dtype())) : std::string()));
  if (x.rank() == 0)
    return Diagnostic::error("linear: input must have at least 1 dimension");
  int64_t K = x.size(-1);
  if (w.size(-1) != K)
    return Diagnostic::error("linear: input " + sizesStr(x.sizes()) + " and weight " +
                             sizesStr(w.sizes()) + " have different in_features");
  int64_t N = w.rank() == 2 ? w.size(0) : 1;
  int64_t M = x.numel() / std::max<int64_t>(K, 1);
  if (K == 0)
    M = x.numel() == 0 ? 0 : 1;
  std::vector<double> vx = toVector(x), vw = toVector(w);
  std::vector<double> vb;
  Tensor eb;
  if (bias) {
    std::vector<int64_t> bs = {N};
    if (w.rank() == 1)
      bs = {};
    auto bsz = broadcastSizes(bias->sizes(), bs);
    if (!bsz.ok() || *bsz != bs)
      return Diagnostic::error("linear: bias " + sizesStr(bias->sizes()) +
                               " does not broadcast to out_features " + std::to_string(N));
    vb = toVector(expandTo(*bias, bs));
  }
  std::vector<int64_t> outSizes(x.sizes().begin(), x.sizes().end() - 1);
  if (w.rank() == 2)
    outSizes.push_back(N);
  DType d = x.dtype();
  Tensor out = Tensor::empty(d, outSizes);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      const double *px = vx.data() + i * K;
      const double *pw = vw.data() + j * K;
      if (d == DType::F64) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += px[k] * pw[k];
        if (bias)
          acc += vb[static_cast<std::size_t>(j)];
        out.setDouble(i * N + j, acc);
      } else if (isFloatingPoint(d)) {
        float acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<float>(px[k]) * static_cast<float>(pw[k]);
        if (bias)
          acc += static_cast<float>(vb[static_cast<std::size_t>(j)]);
        out.setDouble(i * N + j, castValue(acc, d));
      } else {
        return Diagnostic::error("linear: integer inputs are not supported (got " +
                                 std::string(name(d)) + ")");
      }
    }
  return out;
}

} // namespace graft::interp
