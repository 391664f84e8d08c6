// matmul.glsl - batched matrix products: mm, bmm, matmul (broadcast batch
// dims), linear (b read transposed through its strides) and addmm with a
// 1-D bias. out[batch, m, n] = sum_k a[batch, m, k] * b[batch, k, n] (+ bias[n]),
// one invocation per output element, accumulating sequentially over k in
// f32 without FMA, as the reference does; the bias is added to the finished
// dot product and the result is rounded once.
#include "common.glslh"

layout(set = 0, binding = 0) buffer Out { DTYPE t_out[]; };
layout(set = 0, binding = 1) readonly buffer A { DTYPE t_a[]; };
layout(set = 0, binding = 2) readonly buffer B { DTYPE t_b[]; };
layout(set = 0, binding = 3) readonly buffer Bias { DTYPE t_bias[]; };

layout(push_constant) uniform PushConstants {
  int M;
  int N;
  int K;
  int batch;
  int numBatchDims;
  int hasBias;
  int aStrideM;
  int aStrideK;
  int bStrideK;
  int bStrideN;
  int batchSizes[4];
  int aBatchStrides[4];
  int bBatchStrides[4];
} pc;

void main() {
  uint id = linearId();
  uint total = uint(pc.batch) * uint(pc.M) * uint(pc.N);
  if (id >= total)
    return;
  int n = int(id % uint(pc.N));
  int m = int((id / uint(pc.N)) % uint(pc.M));
  int b = int(id / (uint(pc.N) * uint(pc.M)));
  int aBase = 0;
  int bBase = 0;
  int rem = b;
  for (int d = pc.numBatchDims - 1; d >= 0; --d) {
    int i = rem % pc.batchSizes[d];
    rem /= pc.batchSizes[d];
    aBase += i * pc.aBatchStrides[d];
    bBase += i * pc.bBatchStrides[d];
  }
  aBase += m * pc.aStrideM;
  bBase += n * pc.bStrideN;
  precise float acc = 0.0;
  for (int k = 0; k < pc.K; ++k) {
    precise float p = float(t_a[aBase + k * pc.aStrideK]) * float(t_b[bBase + k * pc.bStrideK]);
    acc += p;
  }
  if (pc.hasBias != 0)
    acc = acc + float(t_bias[n]);
  t_out[id] = TO_DTYPE(acc);
}
