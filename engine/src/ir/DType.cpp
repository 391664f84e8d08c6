//===- DType.cpp - dtype names, sizes and promotion -----------------------===//
#include "graft/ir/DType.h"

#include "graft/support/FloatBits.h"

#include <array>

namespace graft {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view shortName;
  std::string_view torchName;
  uint8_t bytes;
  uint8_t bits;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::Bool, "bool", "bool", 1, 8},
    {DType::U8, "u8", "uint8", 1, 8},
    {DType::I8, "i8", "int8", 1, 8},
    {DType::I16, "i16", "int16", 2, 16},
    {DType::I32, "i32", "int32", 4, 32},
    {DType::I64, "i64", "int64", 8, 64},
    {DType::U16, "u16", "uint16", 2, 16},
    {DType::U32, "u32", "uint32", 4, 32},
    {DType::U64, "u64", "uint64", 8, 64},
    {DType::F16, "f16", "float16", 2, 16},
    {DType::BF16, "bf16", "bfloat16", 2, 16},
    {DType::F32, "f32", "float32", 4, 32},
    {DType::F64, "f64", "float64", 8, 64},
    {DType::C32, "c32", "complex32", 4, 32},
    {DType::C64, "c64", "complex64", 8, 64},
    {DType::C128, "c128", "complex128", 16, 128},
    {DType::F8E4M3FN, "f8e4m3fn", "float8_e4m3fn", 1, 8},
    {DType::F8E4M3FNUZ, "f8e4m3fnuz", "float8_e4m3fnuz", 1, 8},
    {DType::F8E5M2, "f8e5m2", "float8_e5m2", 1, 8},
    {DType::F8E5M2FNUZ, "f8e5m2fnuz", "float8_e5m2fnuz", 1, 8},
    {DType::F8E8M0FNU, "f8e8m0fnu", "float8_e8m0fnu", 1, 8},
    {DType::F4E2M1FNx2, "f4e2m1fn_x2", "float4_e2m1fn_x2", 1, 8},
    {DType::I1, "i1", "int1", 1, 1},
    {DType::I2, "i2", "int2", 1, 2},
    {DType::I3, "i3", "int3", 1, 3},
    {DType::I4, "i4", "int4", 1, 4},
    {DType::I5, "i5", "int5", 1, 5},
    {DType::I6, "i6", "int6", 1, 6},
    {DType::I7, "i7", "int7", 1, 7},
    {DType::U1, "u1", "uint1", 1, 1},
    {DType::U2, "u2", "uint2", 1, 2},
    {DType::U3, "u3", "uint3", 1, 3},
    {DType::U4, "u4", "uint4", 1, 4},
    {DType::U5, "u5", "uint5", 1, 5},
    {DType::U6, "u6", "uint6", 1, 6},
    {DType::U7, "u7", "uint7", 1, 7},
    {DType::QI8, "qi8", "qint8", 1, 8},
    {DType::QU8, "qu8", "quint8", 1, 8},
    {DType::QI32, "qi32", "qint32", 4, 32},
    {DType::QU4x2, "qu4x2", "quint4x2", 1, 8},
    {DType::QU2x4, "qu2x4", "quint2x4", 1, 8},
}};

const DTypeInfo &info(DType d) {
  return kInfo[static_cast<std::size_t>(d)];
}

} // namespace

std::string_view name(DType dtype) {
  return info(dtype).shortName;
}
std::string_view torchName(DType dtype) {
  return info(dtype).torchName;
}

std::optional<DType> parseDType(std::string_view text) {
  if (text.substr(0, 6) == "torch.")
    text.remove_prefix(6);
  for (const DTypeInfo &i : kInfo)
    if (i.shortName == text || i.torchName == text)
      return i.dtype;
  // Common torch aliases.
  if (text == "float" || text == "f32")
    return DType::F32;
  if (text == "half")
    return DType::F16;
  if (text == "double")
    return DType::F64;
  if (text == "long")
    return DType::I64;
  if (text == "int")
    return DType::I32;
  if (text == "short")
    return DType::I16;
  if (text == "cfloat")
    return DType::C64;
  if (text == "cdouble")
    return DType::C128;
  if (text == "chalf")
    return DType::C32;
  return std::nullopt;
}

std::size_t elementSize(DType dtype) {
  return info(dtype).bytes;
}
int bitWidth(DType dtype) {
  return info(dtype).bits;
}

bool isFloat8(DType d) {
  return d == DType::F8E4M3FN || d == DType::F8E4M3FNUZ || d == DType::F8E5M2 ||
         d == DType::F8E5M2FNUZ || d == DType::F8E8M0FNU;
}

bool isFloatingPoint(DType d) {
  return d == DType::F16 || d == DType::BF16 || d == DType::F32 || d == DType::F64 || isFloat8(d) ||
         d == DType::F4E2M1FNx2;
}

bool isComplex(DType d) {
  return d == DType::C32 || d == DType::C64 || d == DType::C128;
}

bool isSignedIntegral(DType d) {
  switch (d) {
  case DType::I8:
  case DType::I16:
  case DType::I32:
  case DType::I64:
  case DType::I1:
  case DType::I2:
  case DType::I3:
  case DType::I4:
  case DType::I5:
  case DType::I6:
  case DType::I7:
    return true;
  default:
    return false;
  }
}

bool isSubByteUnsigned(DType d) {
  switch (d) {
  case DType::U1:
  case DType::U2:
  case DType::U3:
  case DType::U4:
  case DType::U5:
  case DType::U6:
  case DType::U7:
    return true;
  default:
    return false;
  }
}

bool isIntegral(DType d, bool includeBool) {
  if (d == DType::Bool)
    return includeBool;
  switch (d) {
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return true;
  default:
    return isSubByteUnsigned(d) || isSignedIntegral(d);
  }
}

bool isComputable(DType d) {
  return d == DType::Bool || isIntegral(d) || d == DType::F16 || d == DType::BF16 ||
         d == DType::F32 || d == DType::F64 || isFloat8(d);
}

std::optional<std::pair<int64_t, int64_t>> integerBounds(DType d) {
  if (!isIntegral(d))
    return std::nullopt;
  int bits = bitWidth(d);
  if (d == DType::U64)
    return std::make_pair(int64_t(0), INT64_MAX); // clipped to int64
  if (isSignedIntegral(d)) {
    if (bits == 64)
      return std::make_pair(INT64_MIN, INT64_MAX);
    return std::make_pair(-(int64_t(1) << (bits - 1)), (int64_t(1) << (bits - 1)) - 1);
  }
  return std::make_pair(int64_t(0), (int64_t(1) << bits) - 1);
}

namespace {
int floatRank(DType d) {
  switch (d) {
  case DType::F16:
  case DType::BF16:
    return 1;
  case DType::F32:
    return 2;
  case DType::F64:
    return 3;
  default:
    return 0; // float8 and others
  }
}
} // namespace

DType promoteTypes(DType a, DType b) {
  if (a == b)
    return a;
  if (a == DType::Bool)
    return b;
  if (b == DType::Bool)
    return a;
  if (isComplex(a) || isComplex(b)) {
    if (a == DType::C128 || b == DType::C128 || a == DType::F64 || b == DType::F64)
      return DType::C128;
    return DType::C64;
  }
  bool fa = isFloatingPoint(a), fb = isFloatingPoint(b);
  if (fa && !fb)
    return a;
  if (fb && !fa)
    return b;
  if (fa && fb) {
    // f16 with bf16 (or any float8 mix) promotes to f32, as in torch.
    int ra = floatRank(a), rb = floatRank(b);
    if (ra == rb || ra == 0 || rb == 0)
      return ra == 3 || rb == 3 ? DType::F64 : DType::F32;
    return ra > rb ? a : b;
  }
  // Both integral.
  bool sa = isSignedIntegral(a), sb = isSignedIntegral(b);
  std::size_t wa = elementSize(a), wb = elementSize(b);
  if (sa == sb)
    return wa >= wb ? a : b;
  // Mixed signedness: the signed type must hold every value of the unsigned.
  DType s = sa ? a : b, u = sa ? b : a;
  std::size_t ws = elementSize(s), wu = elementSize(u);
  if (ws > wu)
    return s;
  switch (wu) {
  case 1:
    return DType::I16;
  case 2:
    return DType::I32;
  default:
    return DType::I64;
  }
}

namespace {

Float8Format float8FormatOf(DType dtype) {
  switch (dtype) {
  case DType::F8E4M3FN:
    return Float8Format::E4M3FN;
  case DType::F8E4M3FNUZ:
    return Float8Format::E4M3FNUZ;
  case DType::F8E5M2FNUZ:
    return Float8Format::E5M2FNUZ;
  case DType::F8E8M0FNU:
    return Float8Format::E8M0FNU;
  default:
    return Float8Format::E5M2;
  }
}

} // namespace

uint8_t floatToFloat8Bits(float f, DType format) {
  return floatToFloat8Bits(f, float8FormatOf(format));
}

float float8BitsToFloat(uint8_t bits, DType format) {
  return float8BitsToFloat(bits, float8FormatOf(format));
}

float roundToDType(float value, DType dtype) {
  switch (dtype) {
  case DType::F16:
    return halfBitsToFloat(floatToHalfBits(value));
  case DType::BF16:
    return bfloat16BitsToFloat(floatToBFloat16Bits(value));
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0FNU:
    return float8BitsToFloat(floatToFloat8Bits(value, dtype), dtype);
  default:
    return value;
  }
}

} // namespace graft
