//===- RewriteUtil.h - Small helpers shared by the rewrite engine files -*- C++ -*-===//
//
// Formatting of arguments, locations and numbers for diagnostics, registry
// keys and explain output, and typed fast paths over constant data (weights
// can have tens of millions of elements, so per-element virtual dispatch is
// avoided). Internal to engine/src/rewrite.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/ir/Tensor.h"
#include "graft/ir/TensorProto.h"
#include "graft/support/Diagnostic.h"

#include <cstdint>
#include <string>

namespace graft::rewrite::detail {

/// Shortest round-trip text of a double, always with a '.' or exponent
/// ("1.0", "0.001", "1e-05", "inf", "nan").
std::string formatDouble(double value);
/// An argument as .pat/text IR spell it: 7, 1.5, true, none, "s", i8, [1, 32], %name.
std::string formatArgument(const Argument &arg);
/// "file:line:col", or "<unknown>" when the range is invalid.
std::string formatLoc(const SourceRange &range);

/// Calls f(const T *data, int64_t n) with the tensor's elements as their
/// C++ storage type T (int8_t, uint8_t, int16_t, int32_t, int64_t, uint16_t,
/// uint32_t, uint64_t) for integer and bool dtypes; returns false for other
/// dtypes. Non-contiguous tensors are made contiguous first.
template <class F> bool visitIntegers(const Tensor &tensor, F &&f) {
  Tensor t = tensor.contiguous();
  const uint8_t *raw = t.rawData();
  int64_t n = t.numel();
  switch (t.dtype()) {
  case DType::I8:
  case DType::I1:
  case DType::I2:
  case DType::I3:
  case DType::I4:
  case DType::I5:
  case DType::I6:
  case DType::I7:
    f(reinterpret_cast<const int8_t *>(raw), n);
    return true;
  case DType::U8:
  case DType::Bool:
  case DType::U1:
  case DType::U2:
  case DType::U3:
  case DType::U4:
  case DType::U5:
  case DType::U6:
  case DType::U7:
    f(reinterpret_cast<const uint8_t *>(raw), n);
    return true;
  case DType::I16:
    f(reinterpret_cast<const int16_t *>(raw), n);
    return true;
  case DType::U16:
    f(reinterpret_cast<const uint16_t *>(raw), n);
    return true;
  case DType::I32:
    f(reinterpret_cast<const int32_t *>(raw), n);
    return true;
  case DType::U32:
    f(reinterpret_cast<const uint32_t *>(raw), n);
    return true;
  case DType::I64:
    f(reinterpret_cast<const int64_t *>(raw), n);
    return true;
  case DType::U64:
    f(reinterpret_cast<const uint64_t *>(raw), n);
    return true;
  default:
    return false;
  }
}

/// Row-major multi-index of a linear index, as "[i, j, k]".
std::string formatIndex(const std::vector<int64_t> &sizes, int64_t linear);

} // namespace graft::rewrite::detail
