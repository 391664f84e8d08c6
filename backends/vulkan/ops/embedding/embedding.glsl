// embedding.glsl - aten.embedding(weight [V, D], indices): a row gather.
// An index outside [0, V) writes 0 and sets t_status[0] = 1 (embedding.glslh).
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer Indices { int t_indices[]; };
layout(set = 0, binding = 2) readonly buffer W { DTYPE t_weight[]; };
layout(set = 0, binding = 3) buffer Status { uint t_status[]; };

layout(push_constant) uniform PushConstants {
  int numIndices;
  int D;
  int V;
} pc;

#include "embedding.glslh"

void main() {
  uint id = linearId();
  int row, d;
  if (!gatherElement(id, row, d))
    return;
  t_out[id] = t_weight[row * pc.D + d];
}
