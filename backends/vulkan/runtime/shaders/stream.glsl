// stream.glsl - the bandwidth calibration kernel: out[i] = in[i] over vec4s
// (16 bytes read and 16 written per invocation), the ceiling every kernel's
// GB/s is compared with in bench/VulkanBench.cpp (BM_VkStream). The same
// dispatch shape as the vectorized elementwise kernels: one vec4 per
// invocation, 64-wide workgroups.
#include "common.glslh"

layout(set = 0, binding = 0) writeonly buffer Out { vec4 t_out[]; };
layout(set = 0, binding = 1) readonly buffer In { vec4 t_in[]; };

layout(push_constant) uniform PushConstants {
  int numVec4;
} pc;

void main() {
  uint id = linearId();
  if (id < uint(pc.numVec4))
    t_out[id] = t_in[id];
}
