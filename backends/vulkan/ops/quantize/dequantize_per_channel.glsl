// dequantize_per_channel.glsl - quantized_decomposed.dequantize_per_channel
// (torch/ao/quantization/fx/_decomposed.py): out = ((q - zp[c]) * s[c]).to(out)
// with c the index along `axis`, one invocation per element.
//
// The order of operations is torch's type promotion, step for step:
//  * q - zp is an integer subtraction (int8 - int64 in torch; int32 here,
//    exact while |q - zp| < 2^31, and the zero points are int32 on the device);
//  * the integer difference is converted to the scales' dtype (f16 scales:
//    rounded to f16 first, as torch casts both operands to the common dtype),
//    multiplied in f32 and rounded once to the scales' dtype (an f16 x f16
//    product is exact in f32, so rounding it to f16 is torch's f16 multiply);
//  * the product is converted to the output dtype (.to(out_dtype)).
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { int t_in[]; };
layout(set = 0, binding = 2) readonly buffer Scale { SCALE_DTYPE t_scale[]; };
layout(set = 0, binding = 3) readonly buffer Zero { int t_zero[]; };

layout(push_constant) uniform PushConstants {
  int numel;
  int inner;    // elements per step of the channel index (product of the dims after axis)
  int channels; // size of the axis
  int hasZero;
} pc;

void main() {
  uint id = linearId();
  if (id >= uint(pc.numel))
    return;
  int c = (int(id) / pc.inner) % pc.channels;
  int d = pc.hasZero != 0 ? t_in[id] - t_zero[c] : t_in[id];
#if SCALE_DTYPE_IS_HALF
  precise float v = roundToHalf(roundToHalf(float(d)) * float(t_scale[c]));
#else
  precise float v = float(d) * float(t_scale[c]);
#endif
  t_out[id] = TO_DTYPE(v);
}
