//===- Rotary.cpp - et_vk.apply_rotary_emb ----------------------------------===//
//
// Rotary position embeddings of q and k (rotary.glsl).
//
//===----------------------------------------------------------------------===//
#include "KernelCommon.h"
#include "Lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace graft::vk {

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

Expected<DeviceTensor> rotary(Context &ctx, const DeviceTensor &x, const DeviceTensor &freqsCos,
                              const DeviceTensor &freqsSin) {
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(freqsCos.dtype) || freqsCos.dtype != freqsSin.dtype)
    return kernelError("apply_rotary_emb", "x and freqs must be f32 or f16");
  if (x.sizes.size() < 2 || x.sizes.back() % 2 != 0)
    return kernelError("apply_rotary_emb",
                       "x needs at least 2 dims and an even last dim, got " + sizesStr(x.sizes));
  if (freqsCos.sizes != freqsSin.sizes)
    return kernelError("apply_rotary_emb", "freqs_cos and freqs_sin differ in shape");
  int64_t halfD = x.sizes.back() / 2;
  int64_t S = x.sizes[1];
  int64_t innerPairs = product(std::vector<int64_t>(x.sizes.begin() + 2, x.sizes.end())) / 2;
  int64_t heads = 0;
  const auto &f = freqsCos.sizes;
  if (f.size() == 2) {
    if (f[0] != S || f[1] != halfD)
      return kernelError("apply_rotary_emb", "freqs " + sizesStr(f) + " must be [" +
                                                 std::to_string(S) + ", " + std::to_string(halfD) +
                                                 "] for x " + sizesStr(x.sizes));
  } else if (f.size() == 3 && x.sizes.size() == 4) {
    if (f[0] != S || f[1] != x.sizes[2] || f[2] != halfD)
      return kernelError("apply_rotary_emb", "3-D freqs " + sizesStr(f) +
                                                 " must be [seq_len, n_heads, head_dim/2] of x " +
                                                 sizesStr(x.sizes));
    heads = f[1];
  } else {
    return kernelError("apply_rotary_emb",
                       "freqs must be [S, D/2], or [S, H, D/2] for a 4-D x; got " + sizesStr(f));
  }
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  struct {
    int32_t numPairs, S, innerPairs, halfD, freqsHeads;
  } pc{i32(x.numel() / 2), i32(S), i32(innerPairs), i32(halfD), i32(heads)};
  std::string variant = "rotary_" + shaderDType(x.dtype) + "_" + shaderDType(freqsCos.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(
      variant, {out.buffer.get(), x.buffer.get(), freqsCos.buffer.get(), freqsSin.buffer.get()},
      &pc, sizeof(pc), static_cast<uint64_t>(pc.numPairs)));
  return out;
}

//===----------------------------------------------------------------------===//
// Lowerings
//===----------------------------------------------------------------------===//

namespace {

Lowering rotaryLowering() {
  Lowering l;
  l.kernel = "rotary";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    for (const char *n : {"xq", "xk"}) {
      const TensorProto *x = protoOf(b, n);
      if (!x || !isDeviceFloat(x->dtype))
        return std::string(n) + " must be f32/f16";
    }
    const TensorProto *q = protoOf(b, "xq"), *k = protoOf(b, "xk");
    if (q->shape.size() > 1 && k->shape.size() > 1 && q->shape[1] != k->shape[1])
      return "xq and xk differ in dim 1";
    (void)node;
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor q, a.tensor("xq"));
    GRAFT_TRY(DeviceTensor k, a.tensor("xk"));
    GRAFT_TRY(DeviceTensor c, a.tensor("freqs_cos"));
    GRAFT_TRY(DeviceTensor s, a.tensor("freqs_sin"));
    GRAFT_TRY(DeviceTensor qo, rotary(a.ctx(), q, c, s));
    GRAFT_TRY(DeviceTensor ko, rotary(a.ctx(), k, c, s));
    return std::vector<LoweredValue>{std::move(qo), std::move(ko)};
  };
  return l;
}

} // namespace

void addRotaryLowerings(LoweringTable &m) {
  m["et_vk.apply_rotary_emb.default"] = rotaryLowering();
}

} // namespace graft::vk
