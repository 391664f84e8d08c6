//===- FloatBits.cpp - Narrow float conversions ---------------------------===//
#include "graft/support/FloatBits.h"

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft {
namespace {

uint32_t bitsOf(float f) {
  return std::bit_cast<uint32_t>(f);
}
float floatOf(uint32_t u) {
  return std::bit_cast<float>(u);
}

/// Parameters of an IEEE-like minifloat.
struct MiniFloat {
  int expBits;
  int manBits;
  int bias;
  bool hasInf;       ///< e5m2: all-ones exponent is inf/NaN like IEEE
  bool fnuz;         ///< single NaN at 0x80, no negative zero
  bool allOnesIsNaN; ///< e4m3fn: only S.1111.111 is NaN; other all-ones-exp values are finite
};

MiniFloat paramsOf(Float8Format format) {
  switch (format) {
  case Float8Format::E4M3FN:
    return {4, 3, 7, false, false, true};
  case Float8Format::E4M3FNUZ:
    return {4, 3, 8, false, true, false};
  case Float8Format::E5M2FNUZ:
    return {5, 2, 16, false, true, false};
  default:
    return {5, 2, 15, true, false, false};
  }
}

/// Largest finite magnitude of a minifloat, as float.
float maxFinite(const MiniFloat &p) {
  int maxExpField = (1 << p.expBits) - 1;
  int maxMan = (1 << p.manBits) - 1;
  if (p.hasInf)
    maxExpField -= 1; // all-ones exponent reserved
  else if (p.allOnesIsNaN)
    maxMan -= 1; // S.1111.111 is NaN
  return std::ldexp(1.0f + float(maxMan) / float(1 << p.manBits), maxExpField - p.bias);
}

uint8_t encodeMini(float f, const MiniFloat &p) {
  uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isnan(f))
    return p.fnuz ? 0x80 : uint8_t(sign | 0x7F);
  float a = std::fabs(f);
  const int manBits = p.manBits;
  const int minNormalExp = 1 - p.bias;
  // Overflow handling happens after rounding.
  if (a == 0.0f)
    return p.fnuz ? 0 : sign;
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;   // a = 1.xxx * 2^exp
  if (exp < minNormalExp)
    exp = minNormalExp; // subnormal: fixed exponent
  // Quantum at this exponent.
  float quantum = std::ldexp(1.0f, exp - manBits);
  float scaled = a / quantum;       // exact (power-of-two division)
  float r = std::nearbyint(scaled); // default rounding mode: ties to even
  float rounded = r * quantum;
  if (std::isinf(a) || rounded > maxFinite(p)) {
    if (p.hasInf)
      return uint8_t(sign | (((1 << p.expBits) - 1) << manBits)); // inf
    return p.fnuz ? 0x80 : uint8_t(sign | 0x7F);
  }
  // Re-derive fields from the rounded value.
  if (rounded == 0.0f)
    return p.fnuz ? 0 : sign;
  int e2;
  std::frexp(rounded, &e2);
  int exp2 = e2 - 1;
  uint32_t expField, man;
  if (exp2 < minNormalExp) {
    expField = 0;
    man = uint32_t(std::lround(rounded / std::ldexp(1.0f, minNormalExp - manBits)));
  } else {
    expField = uint32_t(exp2 + p.bias);
    man = uint32_t(std::lround((rounded / std::ldexp(1.0f, exp2) - 1.0f) * float(1 << manBits)));
  }
  return uint8_t(sign | (expField << manBits) | man);
}

float decodeMini(uint8_t bits, const MiniFloat &p) {
  if (p.fnuz && bits == 0x80)
    return std::numeric_limits<float>::quiet_NaN();
  bool neg = bits & 0x80;
  uint32_t expField = (bits >> p.manBits) & ((1u << p.expBits) - 1);
  uint32_t man = bits & ((1u << p.manBits) - 1);
  uint32_t maxExp = (1u << p.expBits) - 1;
  float v;
  if (p.hasInf && expField == maxExp) {
    v = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else if (p.allOnesIsNaN && expField == maxExp && man == (1u << p.manBits) - 1) {
    v = std::numeric_limits<float>::quiet_NaN();
  } else if (expField == 0) {
    v = std::ldexp(float(man), 1 - p.bias - p.manBits);
  } else {
    v = std::ldexp(1.0f + float(man) / float(1u << p.manBits), int(expField) - p.bias);
  }
  return neg ? -v : v;
}

} // namespace

uint16_t floatToHalfBits(float f) {
  uint32_t x = bitsOf(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7FFFFFFF;
  if (absx > 0x7F800000) // NaN
    return uint16_t(sign | 0x7E00);
  if (absx >= 0x477FF000) // rounds to >= 65520 -> inf
    return uint16_t(sign | 0x7C00);
  if (absx < 0x38800000) { // subnormal or zero in half: quantum 2^-24
    float a = floatOf(absx);
    float q = std::nearbyint(a * 16777216.0f); // exact scaling by 2^24
    return uint16_t(sign | uint32_t(q));
  }
  // Normal: round mantissa from 23 to 10 bits, ties to even.
  uint32_t mant = absx & 0x7FFFFF;
  int32_t exp = int32_t(absx >> 23) - 127 + 15;
  uint32_t halfMant = mant >> 13;
  uint32_t rest = mant & 0x1FFF;
  uint32_t h = (uint32_t(exp) << 10) | halfMant;
  if (rest > 0x1000 || (rest == 0x1000 && (halfMant & 1)))
    h += 1; // may carry into the exponent, which is correct
  return uint16_t(sign | h);
}

float halfBitsToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  if (exp == 0x1F)
    return floatOf(sign | 0x7F800000 | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(float(mant), -24);
    return sign ? -v : v;
  }
  return floatOf(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t floatToBFloat16Bits(float f) {
  uint32_t x = bitsOf(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000)
    return uint16_t((x >> 16) | 0x40); // quiet NaN (c10: 0x7FC0 for canonical NaN)
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7FFF + lsb;
  return uint16_t(x >> 16);
}

float bfloat16BitsToFloat(uint16_t b) {
  return floatOf(uint32_t(b) << 16);
}

uint8_t floatToFloat8Bits(float f, Float8Format format) {
  if (format == Float8Format::E8M0FNU) {
    uint32_t x = bitsOf(f);
    uint32_t exponent = (x >> 23) & 0xFF;
    if (exponent == 0xFF)
      return 0xFF;
    bool g = x & 0x400000, r = x & 0x200000, s = x & 0x1FFFFF;
    bool lsb = exponent > 0;
    bool roundUp = g && (r || s || lsb);
    if (roundUp && exponent < 0xFE)
      exponent += 1;
    return uint8_t(exponent);
  }
  return encodeMini(f, paramsOf(format));
}

float float8BitsToFloat(uint8_t bits, Float8Format format) {
  if (format == Float8Format::E8M0FNU) {
    if (bits == 0xFF)
      return std::numeric_limits<float>::quiet_NaN();
    if (bits == 0)
      return std::ldexp(1.0f, -127);
    return floatOf(uint32_t(bits) << 23);
  }
  return decodeMini(bits, paramsOf(format));
}

uint8_t floatToFp4E2M1Bits(float f) {
  // E2M1: values 0, 0.5, 1, 1.5, 2, 3, 4, 6; saturates at 6 (no inf/NaN).
  static const float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  uint8_t sign = std::signbit(f) ? 0x8 : 0;
  float a = std::fabs(f);
  if (std::isnan(f))
    return 0x7; // no NaN encoding; saturate like the reference casts do
  uint8_t best = 7;
  for (uint8_t i = 0; i < 7; ++i) {
    float lo = kValues[i], hi = kValues[i + 1];
    if (a <= hi) {
      float mid = (lo + hi) / 2;
      if (a < mid)
        best = i;
      else if (a > mid)
        best = uint8_t(i + 1);
      else
        best = (i % 2 == 0) ? i : uint8_t(i + 1); // tie: even mantissa
      break;
    }
  }
  return uint8_t(sign | best);
}

float fp4E2M1BitsToFloat(uint8_t nibble) {
  static const float kValues[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float v = kValues[nibble & 0x7];
  return (nibble & 0x8) ? -v : v;
}

float roundHalfEven(float value) {
  return std::nearbyint(value);
}
double roundHalfEven(double value) {
  return std::nearbyint(value);
}

} // namespace graft
