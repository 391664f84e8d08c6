//===- FloatBits.h - Bit-exact conversions for narrow float formats ---*- C++ -*-===//
//
// Conversions between f32 and f16 / bf16 / the float8 formats with c10's
// semantics: round to nearest, ties to even; e4m3fn and the *fnuz formats
// have no infinity (overflow becomes NaN), e5m2 overflows to infinity.
//
// The formats are named by Float8Format, not by ir's DType, so that support
// depends on nothing in graft; the DType overloads and roundToDType() live in
// graft/ir/DType.h (docs/architecture.md, "Layering").
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace graft {

uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
uint16_t floatToBFloat16Bits(float f);
float bfloat16BitsToFloat(uint16_t b);
/// The 8-bit float formats torch has (torch.float8_e4m3fn, ...).
enum class Float8Format : uint8_t { E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0FNU };
uint8_t floatToFloat8Bits(float f, Float8Format format);
float float8BitsToFloat(uint8_t bits, Float8Format format);
/// E2M1 (fp4) nibble <-> float; used by NVFP4 / float4_e2m1fn_x2.
uint8_t floatToFp4E2M1Bits(float f);
float fp4E2M1BitsToFloat(uint8_t nibble);

/// torch.round on a float: round half to even.
float roundHalfEven(float value);
double roundHalfEven(double value);

} // namespace graft
