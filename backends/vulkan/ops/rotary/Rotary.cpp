//===- Rotary.cpp - et_vk.apply_rotary_emb, apply_rotary_emb_hf -----------===//
//
// Rotary position embeddings of q and k: Llama's interleaved pairs
// (rotary.glsl) and HuggingFace's rotate_half with partial rotation at a
// start position (rotary_hf.glsl).
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

Expected<DeviceTensor> rotaryHf(Context &ctx, const DeviceTensor &x, const DeviceTensor &freqsCos,
                                const DeviceTensor &freqsSin, int64_t startPos) {
  const char *k = "apply_rotary_emb_hf";
  if (!isDeviceFloat(x.dtype) || !isDeviceFloat(freqsCos.dtype) || freqsCos.dtype != freqsSin.dtype)
    return kernelError(k, "x and freqs must be f32 or f16");
  if (x.sizes.size() != 4)
    return kernelError(k, "x must be 4-D [batch, seq, heads, head_dim], got " + sizesStr(x.sizes));
  const std::vector<int64_t> &f = freqsCos.sizes;
  if (f.size() != 2 || f != freqsSin.sizes)
    return kernelError(k, "freqs_cos " + sizesStr(f) + " and freqs_sin " +
                              sizesStr(freqsSin.sizes) +
                              " must be 2-D [max_seq, rotary_dim] of one shape");
  const int64_t S = x.sizes[1], D = x.sizes[3], M = f[0], R = f[1];
  if (R % 2 != 0 || R > D)
    return kernelError(k, "rotary_dim " + std::to_string(R) +
                              " must be even and at most head_dim " + std::to_string(D));
  // The rows freqs[start_pos : start_pos + S], with Python's slicing like the
  // reference (a negative bound counts from the end, both are clamped).
  auto row = [M](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + M : v, 0, M); };
  const int64_t first = row(startPos), last = std::max(first, row(startPos + S));
  if (last - first != S)
    return kernelError(k, "freqs rows [" + std::to_string(startPos) + ", " +
                              std::to_string(startPos + S) + ") of a table with " +
                              std::to_string(M) + " rows are not the " + std::to_string(S) +
                              " positions of x " + sizesStr(x.sizes));
  GRAFT_CHECK_OK(checkInt32(k, x.numel()));
  GRAFT_CHECK_OK(checkInt32(k, M * R));
  GRAFT_TRY(DeviceTensor out, allocateTensor(ctx, x.dtype, x.sizes));
  struct {
    int32_t numel, S, inner, D, R, start;
  } pc{i32(x.numel()), i32(S), i32(x.sizes[2] * D), i32(D), i32(R), i32(first)};
  std::string variant = "rotary_hf_" + shaderDType(x.dtype) + "_" + shaderDType(freqsCos.dtype);
  GRAFT_CHECK_OK(ctx.dispatch1D(
      variant, {out.buffer.get(), x.buffer.get(), freqsCos.buffer.get(), freqsSin.buffer.get()},
      &pc, sizeof(pc), static_cast<uint64_t>(pc.numel)));
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

/// et_vk.apply_rotary_emb_hf: rotary_hf.glsl on xq, then on xk, at start_pos
/// (a literal or a symbolic scalar resolved per call).
Lowering rotaryHfLowering() {
  Lowering l;
  l.kernel = "rotary_hf";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    for (const char *n : {"xq", "xk"}) {
      const TensorProto *x = protoOf(b, n);
      if (!x || !isDeviceFloat(x->dtype) || x->rank() != 4)
        return std::string(n) + " must be 4-D f32/f16";
    }
    return intArgReason(b, "start_pos");
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor q, a.tensor("xq"));
    GRAFT_TRY(DeviceTensor k, a.tensor("xk"));
    GRAFT_TRY(DeviceTensor c, a.tensor("freqs_cos"));
    GRAFT_TRY(DeviceTensor s, a.tensor("freqs_sin"));
    auto pos = a.integer("start_pos");
    if (!pos)
      return a.error("start_pos is not resolved");
    GRAFT_TRY(DeviceTensor qo, rotaryHf(a.ctx(), q, c, s, *pos));
    GRAFT_TRY(DeviceTensor ko, rotaryHf(a.ctx(), k, c, s, *pos));
    return std::vector<LoweredValue>{std::move(qo), std::move(ko)};
  };
  return l;
}

} // namespace

void addRotaryLowerings(LoweringTable &m) {
  m["et_vk.apply_rotary_emb.default"] = rotaryLowering();
  m["et_vk.apply_rotary_emb_hf.default"] = rotaryHfLowering();
}

} // namespace graft::vk
