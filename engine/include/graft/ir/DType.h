//===- DType.h - Element types: every torch dtype ---*- C++ -*-===//
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace graft {

/// Every dtype torch can put in an exported program. Sub-byte integer dtypes
/// (torch.int1..int7, uint1..uint7) are logical: a tensor of them occupies one
/// byte per element unless a quantization layout packs it.
enum class DType : uint8_t {
  Bool,
  U8,
  I8,
  I16,
  I32,
  I64,
  U16,
  U32,
  U64,
  F16,
  BF16,
  F32,
  F64,
  C32, ///< complex32 (chalf)
  C64,
  C128,
  F8E4M3FN,
  F8E4M3FNUZ,
  F8E5M2,
  F8E5M2FNUZ,
  F8E8M0FNU,
  F4E2M1FNx2, ///< two fp4 values per byte (torch.float4_e2m1fn_x2)
  I1,
  I2,
  I3,
  I4,
  I5,
  I6,
  I7,
  U1,
  U2,
  U3,
  U4,
  U5,
  U6,
  U7,
  QI8, ///< legacy quantized dtypes (torch.qint8, ...), kept for completeness
  QU8,
  QI32,
  QU4x2,
  QU2x4,
};

inline constexpr int kNumDTypes = static_cast<int>(DType::QU2x4) + 1;

/// Short name used in text IR and diagnostics: "f32", "bf16", "i8", "f8e4m3fn".
std::string_view name(DType dtype);
/// torch spelling without the "torch." prefix: "float32", "bfloat16", "int8".
std::string_view torchName(DType dtype);
/// Accepts the short name, the torch name, or "torch.<name>".
std::optional<DType> parseDType(std::string_view text);

/// Storage bytes per element (1 for sub-byte logical integer dtypes).
std::size_t elementSize(DType dtype);
/// Bits of information per element (4 for i4, 8 for f8e4m3fn).
int bitWidth(DType dtype);

bool isFloatingPoint(DType dtype); ///< f16/bf16/f32/f64 and the f8/f4 formats
bool isFloat8(DType dtype);
bool isComplex(DType dtype);
bool isIntegral(DType dtype, bool includeBool = false); ///< plain and sub-byte ints
bool isSignedIntegral(DType dtype);
/// u1..u7, torch's sub-byte unsigned dtypes: torchao's quantize_affine returns
/// them as uint8 (one value per byte), so they name a range, not a storage type.
bool isSubByteUnsigned(DType dtype);
/// Types the reference interpreter can compute on directly.
bool isComputable(DType dtype);

/// Quantization range of an integer dtype (torchao _DTYPE_TO_QVALUE_BOUNDS):
/// i8 -> (-128, 127), i4 -> (-8, 7), u4 -> (0, 15). nullopt for non-integers.
std::optional<std::pair<int64_t, int64_t>> integerBounds(DType dtype);

/// torch's type promotion for two tensor operands of the given dtypes
/// (torch.promote_types).
DType promoteTypes(DType a, DType b);

/// The bit conversions of graft/support/FloatBits.h for a float8 dtype
/// (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0fnu; any other dtype is
/// treated as f8e5m2).
uint8_t floatToFloat8Bits(float f, DType format);
float float8BitsToFloat(uint8_t bits, DType format);

/// Rounds a float to the nearest value representable in `dtype` (a float
/// dtype) and returns it as float: the value `x.to(dtype).to(float32)`.
float roundToDType(float value, DType dtype);

} // namespace graft
