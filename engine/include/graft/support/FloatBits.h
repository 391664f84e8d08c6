//===- FloatBits.h - Bit-exact conversions for narrow float formats ---*- C++ -*-===//
//
// Conversions between f32 and f16 / bf16 / the float8 formats with c10's
// semantics: round to nearest, ties to even; e4m3fn and the *fnuz formats
// have no infinity (overflow becomes NaN), e5m2 overflows to infinity.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/DType.h"

#include <cstdint>

namespace graft {

uint16_t floatToHalfBits(float f);
float halfBitsToFloat(uint16_t h);
uint16_t floatToBFloat16Bits(float f);
float bfloat16BitsToFloat(uint16_t b);
uint8_t floatToFloat8Bits(float f, DType format);
float float8BitsToFloat(uint8_t bits, DType format);
/// E2M1 (fp4) nibble <-> float; used by NVFP4 / float4_e2m1fn_x2.
uint8_t floatToFp4E2M1Bits(float f);
float fp4E2M1BitsToFloat(uint8_t nibble);

/// Rounds a float to the nearest value representable in `dtype` (a float
/// dtype) and returns it as float: the value `x.to(dtype).to(float32)`.
float roundToDType(float value, DType dtype);

/// torch.round on a float: round half to even.
float roundHalfEven(float value);
double roundHalfEven(double value);

} // namespace graft
