//===- VulkanOpKernels.cpp - ET-VK custom ops (et_vk namespace) -----------===//
//
// Reference semantics of the fused ops ExecuTorch's Vulkan backend
// introduces, transcribed from backends/vulkan/custom_ops_lib.py and
// patterns/rope.py (executorch cff6f4dd). Packing conventions:
//
//  * linear_q4gsw / linear_dq8ca_q4gsw: weight [N, K/2] u8, LOW nibble =
//    even k, value = nibble - 8; scales stored transposed [groups, N_pad];
//    dequantized with torchao.dequantize_affine([1, group_size]) in f32, then
//    F.linear.
//  * linear_dq8ca_q4gsw computes what ET-VK's kernel computes, not what
//    custom_ops_lib.py's reference does (that one ignores input_scales,
//    input_zp and weight_sums and is linear_q4gsw on the float input, so a
//    rule wiring the wrong activation qparams would verify). Per token m the
//    activation is quantized with ITS scale and zero point, as
//    torchao.quantize_affine does with those dtypes: xq = clamp(round(x *
//    (1/s_m)) + zp_m, -128, 127), in f32, or in f16 (1/s_m and the product
//    rounded to f16) for an f16 input with an f16 scale; an f64 scale is
//    taken in f32; per group g of output n the integer dot product is
//    corrected with the weight sums, idot = sum_k xq * w - zp_m *
//    weight_sums[g, n] (ET-VK's zero-point correction); then, in f32 without
//    fused multiply-add, acc += float(idot) * (s_m * scale[g, n]) group by
//    group, + bias, cast to the input's dtype. The Vulkan kernel
//    (linear_q4gsw.glsl, MODE dq8ca) does the same operations in the same
//    order, so the two agree bit for bit; docs/numerics.md.
//  * linear_dq8ca_q8csw (executorch 05a4f505) is the same computation with an
//    int8 weight [N, K] and one group of K: per-channel weight_sums [N padded
//    to 4] and weight_scales [N]. ET-VK runs it through the dq8ca pipeline
//    with group_size = K (QuantizedLinear.cpp linear_dq8ca_q8csw;
//    linear_dq8ca_q8csw_tiled.glsl: fma(float(idot), s_m * ws[n], 0), which
//    is the single rounding of the product). custom_ops_lib.py's reference
//    again ignores the activation qparams (weights.to(x.dtype) * scales,
//    F.linear), so graft follows the kernel here too.
//  * embedding_q4gsw: is_linear_weight selects LOW-first (true) or
//    HIGH-first (false) nibble order; value = nibble - 8; scales [V, groups];
//    dequantized as int8.float() * scales.float() in f32, then rounded to
//    the scales' dtype (the dtype the fused node declares).
//  * linear_qcs4w: HIGH nibble = even k. The Python reference omits the -8,
//    but the packing pass stores w + 8 and every shader subtracts 8; graft
//    implements what the op computes on device: (nibble - 8) * scale[n].
//  * linear_q8ta_q8csw: per-channel int8 weights (zero point 0) times
//    scales; an integer activation is dequantized per tensor first.
//  * q8ta_linear / q8ta_linear_gemv: the same f32 linear on the int8
//    activation, then relu if asked, then quantize_per_tensor to int8 with
//    [-128, 127] (round half to even after x * f32(1 / output_scale), + zero
//    point, clamp). Both names share the reference; upstream picks the gemv
//    kernel when the activation has one row.
//
// Where upstream pads N (scales, bias) to a multiple of 4, the padding is
// sliced off (the Python reference would fail to broadcast; the GPU ignores
// it). Where upstream's F.linear would reject mixed dtypes (f16 activations
// with the f32 dequantized weight), the weight is rounded to the activation
// dtype first. See docs/numerics.md.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

namespace graft::interp {

namespace {

/// F.linear after converting weight/bias to the input's dtype.
Expected<Tensor> linearAs(const Tensor &x, const Tensor &w, const std::optional<Tensor> &bias) {
  Tensor wc = w.dtype() == x.dtype() ? w : w.to(x.dtype());
  std::optional<Tensor> bc;
  if (bias)
    bc = bias->dtype() == x.dtype() ? *bias : bias->to(x.dtype());
  return linear(x, wc, bc ? &*bc : nullptr);
}

/// First `n` entries along dim 0 (drops upstream's alignment padding).
Expected<Tensor> trimRows(const KernelArgs &a, const Tensor &t, int64_t n, const char *what) {
  if (t.rank() == 0 || t.size(0) < n)
    return a.error(std::string(what) + " has " + std::to_string(t.rank() ? t.size(0) : 0) +
                   " entries, fewer than the " + std::to_string(n) + " output channels");
  if (t.size(0) == n)
    return t;
  return slice(t, 0, 0, n, 1);
}

/// unpack_4bit_weight_tensor: unpacked[:, ::2] = low, [:, 1::2] = high,
/// .to(int8) - 8, trimmed to `k` columns.
Expected<Tensor> unpackLowFirst(const KernelArgs &a, const Tensor &w, int64_t k) {
  if (w.rank() != 2 || (w.dtype() != DType::U8 && w.dtype() != DType::I8))
    return a.error("packed 4-bit weight must be a 2-D uint8 tensor, got " +
                   std::string(name(w.dtype())) + " of rank " + std::to_string(w.rank()));
  GRAFT_TRY(Tensor low, binary(BinaryOp::BitAnd, w, Operand::integer(0x0F)));
  GRAFT_TRY(Tensor sh, binary(BinaryOp::Shr, w, Operand::integer(4)));
  GRAFT_TRY(Tensor high, binary(BinaryOp::BitAnd, sh, Operand::integer(0x0F)));
  GRAFT_TRY(Tensor st, stack({low, high}, -1));
  GRAFT_TRY(Tensor u, reshape(st, {w.size(0), -1}));
  GRAFT_TRY(Tensor centered, binary(BinaryOp::Sub, u.to(DType::I8), Operand::integer(8)));
  if (k > centered.size(1))
    return a.error("input has " + std::to_string(k) +
                   " features but the packed weight holds only " +
                   std::to_string(centered.size(1)));
  if (k == centered.size(1))
    return centered;
  return slice(centered, 1, 0, k, 1);
}

Results linearQ4gsw(const KernelArgs &a, const char *xName) {
  const Tensor &x = a.tensor(xName);
  const Tensor &w = a.tensor("weights");
  const Tensor &scales = a.tensor("weight_scales");
  GRAFT_CHECK_OK(requireTensors(a, {xName, "weights", "weight_scales"}));
  if (x.rank() == 0)
    return a.error("input must have at least 1 dim");
  int64_t groupSize = a.integer("group_size");
  if (groupSize <= 0)
    return a.error("group_size must be positive");
  if (scales.rank() != 2)
    return a.error("weight_scales must be 2-D [groups, N], got rank " +
                   std::to_string(scales.rank()));
  int64_t K = x.size(-1), N = w.size(0);
  GRAFT_TRY(Tensor wq, unpackLowFirst(a, w, K));
  GRAFT_TRY(Tensor st, transpose(scales, 0, 1));
  GRAFT_TRY(Tensor s, trimRows(a, st, N, "weight_scales (transposed)"));
  Tensor zeros = Tensor::empty(DType::I32, s.sizes());
  auto dq = torchaoDequantizeAffine(wq, {1, groupSize}, s, &zeros, DType::I8, -8, 7, DType::F32);
  if (!dq.ok())
    return a.error("dequantizing the weight: " + dq.diags()[0].message);
  std::optional<Tensor> bias;
  if (const Tensor *b = a.optionalTensor("bias")) {
    GRAFT_TRY(Tensor bt, trimRows(a, *b, N, "bias"));
    bias = bt;
  }
  GRAFT_TRY(Tensor out, linearAs(x, *dq, bias));
  return one(out);
}

/// The dq8ca linears as the device computes them (see the header): the input
/// quantized per token with input_scales / input_zp, the integer dot product of
/// each group of `groupSize` features with the int8 weight `wq` [N, K],
/// corrected by weight_sums, times s_m * scale in f32, summed over the groups,
/// + bias. `sums` and `scales` are [groups, >= N] (N may be padded); a
/// per-channel weight is the one-group case (groupSize == K), as ET-VK's
/// linear_dq8ca_q8csw synthesizes group_size = K (QuantizedLinear.cpp).
Results dq8caLinear(const KernelArgs &a, const Tensor &x, const Tensor &wq, const Tensor &sums,
                    const Tensor &scales, int64_t groupSize) {
  const Tensor &inScales = a.tensor("input_scales");
  const Tensor &inZeros = a.tensor("input_zp");
  int64_t K = x.size(-1), N = wq.size(0), M = K ? x.numel() / K : 0;
  if (scales.rank() != 2 || scales.size(1) < N)
    return a.error("weight_scales must be 2-D [groups, >= N], got " + scales.proto().str());
  if (K % groupSize != 0 || scales.size(0) != K / groupSize)
    return a.error("group_size " + std::to_string(groupSize) + " with " +
                   std::to_string(scales.size(0)) + " scale groups does not cover " +
                   std::to_string(K) + " input features");
  if (sums.rank() != 2 || sums.size(0) != K / groupSize || sums.size(1) < N ||
      !isIntegral(sums.dtype()))
    return a.error("weight_sums must be integer [groups, >= N], got " + sums.proto().str());
  if (inScales.numel() != M || inZeros.numel() != M || !isIntegral(inZeros.dtype()))
    return a.error("input_scales and an integer input_zp need one entry per token (" +
                   std::to_string(M) + "), got " + inScales.proto().str() + " and " +
                   inZeros.proto().str());
  // The scale each token is quantized with: the given one, so that an f16
  // activation with an f16 scale is quantized in f16 as torchao's chain does
  // (1 / s and x * (1 / s) rounded to f16); an f64 scale (the
  // quantized_decomposed chain) in the kernel's f32. The scale products below
  // take it in f32, which holds f16 and bf16 values exactly.
  Tensor qScale = inScales.dtype() == DType::F64 ? inScales.to(DType::F32) : inScales;
  GRAFT_TRY(Tensor qs2, reshape(qScale, {M, 1}));
  GRAFT_TRY(Tensor s2, reshape(inScales.to(DType::F32), {M, 1}));
  GRAFT_TRY(Tensor z2, reshape(inZeros, {M, 1}));
  GRAFT_TRY(Tensor x2, reshape(x, {M, K}));
  auto xq = torchaoQuantizeAffine(x2, {1, K}, qs2, &z2, DType::I8, -128, 127);
  if (!xq.ok())
    return a.error("quantizing the input per token: " + xq.diags()[0].message);
  const Tensor xqc = xq->contiguous(), wqc = wq.contiguous();
  const int8_t *xqd = xqc.data<int8_t>();
  const int8_t *wd = wqc.data<int8_t>();
  std::optional<Tensor> bias;
  if (const Tensor *b = a.optionalTensor("bias")) {
    GRAFT_TRY(Tensor bt, trimRows(a, *b, N, "bias"));
    bias = bt;
  }
  const int64_t groups = K / groupSize;
  Tensor out = Tensor::uninitialized(DType::F32, {M, N});
  float *od = out.mutableData<float>();
  for (int64_t m = 0; m < M; ++m) {
    const float sm = static_cast<float>(s2.getDouble(m));
    const int64_t zp = z2.getInt(m);
    const int8_t *xrow = xqd + m * K;
    for (int64_t n = 0; n < N; ++n) {
      const int8_t *wrow = wd + n * K;
      float acc = 0.0f;
      for (int64_t g = 0; g < groups; ++g) {
        int64_t idot = 0;
        for (int64_t k = g * groupSize; k < (g + 1) * groupSize; ++k)
          idot += int64_t{xrow[k]} * int64_t{wrow[k]};
        idot -= zp * sums.getInt(g * sums.size(1) + n);
        // Three f32 roundings (scale product, term, sum), no FMA, as in
        // LinalgKernels.cpp.
        float scale = sm * static_cast<float>(scales.getDouble(g * scales.size(1) + n));
        float term = static_cast<float>(idot) * scale;
        acc += term;
      }
      if (bias)
        acc += static_cast<float>(bias->getDouble(n));
      od[m * N + n] = acc;
    }
  }
  std::vector<int64_t> outSizes = x.sizes();
  outSizes.back() = N;
  GRAFT_TRY(Tensor shaped, reshape(out, outSizes));
  return one(shaped.to(x.dtype()));
}

/// The float activation every dq8ca linear takes.
Expected<Tensor> dq8caInput(const KernelArgs &a) {
  const Tensor &x = a.tensor("input");
  if (x.rank() == 0 || !isFloatingPoint(x.dtype()))
    return a.error("input must be a floating-point tensor of at least 1 dim");
  return x;
}

/// et_vk.linear_dq8ca_q4gsw: 4-bit packed weight, per-group sums and scales.
Results linearDq8caQ4gsw(const KernelArgs &a) {
  GRAFT_CHECK_OK(requireTensors(
      a, {"input", "input_scales", "input_zp", "weights", "weight_sums", "weight_scales"}));
  GRAFT_TRY(Tensor x, dq8caInput(a));
  int64_t groupSize = a.integer("group_size");
  if (groupSize <= 0)
    return a.error("group_size must be positive");
  GRAFT_TRY(Tensor wq, unpackLowFirst(a, a.tensor("weights"), x.size(-1)));
  return dq8caLinear(a, x, wq, a.tensor("weight_sums"), a.tensor("weight_scales"), groupSize);
}

/// et_vk.linear_dq8ca_q8csw: int8 weight [N, K], per-channel sums [>= N] and
/// scales [>= N] (upstream pads the sums to a multiple of 4), one group of K.
Results linearDq8caQ8csw(const KernelArgs &a) {
  GRAFT_CHECK_OK(requireTensors(
      a, {"input", "input_scales", "input_zp", "weights", "weight_sums", "weight_scales"}));
  GRAFT_TRY(Tensor x, dq8caInput(a));
  const Tensor &w = a.tensor("weights");
  const Tensor &sums = a.tensor("weight_sums");
  const Tensor &scales = a.tensor("weight_scales");
  const int64_t K = x.size(-1);
  if (w.rank() != 2 || w.dtype() != DType::I8 || w.size(1) != K)
    return a.error("weights must be int8 [N, " + std::to_string(K) + "], got " + w.proto().str());
  if (sums.rank() != 1 || scales.rank() != 1)
    return a.error("weight_sums and weight_scales must be 1-D per output channel, got " +
                   sums.proto().str() + " and " + scales.proto().str());
  if (K == 0)
    return a.error("input has no features");
  GRAFT_TRY(Tensor sums2, reshape(sums, {1, sums.size(0)}));
  GRAFT_TRY(Tensor scales2, reshape(scales, {1, scales.size(0)}));
  return dq8caLinear(a, x, w, sums2, scales2, K);
}

Results linearQcs4w(const KernelArgs &a) {
  const Tensor &x = a.tensor("self");
  const Tensor &w = a.tensor("weight");
  const Tensor &scales = a.tensor("scales");
  GRAFT_CHECK_OK(requireTensors(a, {"self", "weight", "scales"}));
  if (w.rank() != 2)
    return a.error("weight must be 2-D [N, K/2]");
  int64_t N = w.size(0);
  GRAFT_TRY(Tensor sh, binary(BinaryOp::Shr, w, Operand::integer(4)));
  GRAFT_TRY(Tensor even, binary(BinaryOp::BitAnd, sh, Operand::integer(0x0F)));
  GRAFT_TRY(Tensor odd, binary(BinaryOp::BitAnd, w, Operand::integer(0x0F)));
  GRAFT_TRY(Tensor st, stack({even, odd}, -1));
  GRAFT_TRY(Tensor u, reshape(st, {N, -1}));
  GRAFT_TRY(Tensor wq, binary(BinaryOp::Sub, u.to(DType::I8), Operand::integer(8)));
  GRAFT_TRY(Tensor s0, trimRows(a, scales, N, "scales"));
  // dequantize_per_channel(w, scales, None, axis 0): input * scales.view(N, 1)
  GRAFT_TRY(Tensor s, reshape(s0, {N, 1}));
  GRAFT_TRY(Tensor dq, binary(BinaryOp::Mul, wq, s));
  if (x.rank() == 0 || x.size(-1) != dq.size(1))
    return a.error("input features do not match the unpacked weight's " +
                   std::to_string(dq.size(1)));
  GRAFT_TRY(Tensor out, linearAs(x, dq.to(DType::F32), std::nullopt));
  return one(out);
}

/// linear_q8ta_q8csw's result, and q8ta_linear's before the requantize: an
/// integer x is dequantized per tensor, the weights per channel, then
/// F.linear and + bias[:N] as a separate add (custom_ops_lib.py).
Expected<Tensor> q8cswLinear(const KernelArgs &a) {
  Tensor x = a.tensor("x");
  const Tensor &w = a.tensor("weights");
  const Tensor &scales = a.tensor("weight_scales");
  GRAFT_CHECK_OK(requireTensors(a, {"x", "weights", "weight_scales"}));
  if (w.rank() != 2)
    return a.error("weights must be 2-D [N, K]");
  int64_t N = w.size(0);
  if (isIntegral(x.dtype())) {
    // A statically quantized int8 activation: dequantize_per_tensor first.
    GRAFT_TRY(Tensor d, binary(BinaryOp::Sub, x.to(DType::F32),
                               Operand::integer(a.integer("input_zero_point"))));
    GRAFT_TRY(x, binary(BinaryOp::Mul, d, Operand::num(a.number("input_scale"))));
  }
  GRAFT_TRY(Tensor s0, trimRows(a, scales, N, "weight_scales"));
  GRAFT_TRY(Tensor s, reshape(s0, {N, 1}));
  // dequantize_per_channel(w, scales, zeros_like(scales, int32), 0, ...):
  // (w - zeros) in int32, times scales.
  Tensor zeros = Tensor::empty(DType::I32, {N, 1});
  GRAFT_TRY(Tensor d, binary(BinaryOp::Sub, w, zeros));
  GRAFT_TRY(Tensor dq, binary(BinaryOp::Mul, d, s));
  GRAFT_TRY(Tensor out, linearAs(x, dq.to(DType::F32), std::nullopt));
  if (const Tensor *b = a.optionalTensor("bias")) {
    GRAFT_TRY(Tensor bt, trimRows(a, *b, N, "bias"));
    GRAFT_TRY(out, binary(BinaryOp::Add, out, bt));
  }
  return out;
}

Results linearQ8taQ8csw(const KernelArgs &a) {
  GRAFT_TRY(Tensor out, q8cswLinear(a));
  return one(out);
}

/// q8ta_linear and q8ta_linear_gemv (one reference, two ET-VK kernels): the
/// f32 linear above, relu when activation is "relu", then
/// quantize_per_tensor(out, output_scale, output_zero_point, -128, 127, int8).
Results q8taLinear(const KernelArgs &a) {
  const Tensor &x = a.tensor("x");
  if (!x.defined() || x.dtype() != DType::I8)
    return a.error("x must be the int8 quantized activation");
  std::string act = a.string("activation");
  if (act != "none" && act != "relu")
    return a.error("activation must be 'none' or 'relu', got '" + act + "'");
  GRAFT_TRY(Tensor out, q8cswLinear(a));
  if (act == "relu")
    out = unary(UnaryOp::Relu, out);
  GRAFT_TRY(Tensor q, quantizePerTensorF32(out, a.number("output_scale"),
                                           a.integer("output_zero_point"), -128, 127, DType::I8));
  return one(q);
}

Results embeddingQ4gsw(const KernelArgs &a) {
  const Tensor &w = a.tensor("weight");
  const Tensor &scales = a.tensor("weight_scales");
  const Tensor &idx = a.tensor("indices");
  GRAFT_CHECK_OK(requireTensors(a, {"weight", "weight_scales", "indices"}));
  if (w.rank() != 2)
    return a.error("weight must be 2-D [V, D/2]");
  if (!isIntegral(idx.dtype()))
    return a.error("indices must be an integer tensor");
  int64_t V = w.size(0);
  int64_t groupSize = a.integer("group_size");
  bool linearWeight = a.boolean("is_linear_weight");
  // high = (w >> 4).to(int8) - 8; low = (w & 0xF).to(int8) - 8
  GRAFT_TRY(Tensor sh, binary(BinaryOp::Shr, w, Operand::integer(4)));
  GRAFT_TRY(Tensor high, binary(BinaryOp::Sub, sh.to(DType::I8), Operand::integer(8)));
  GRAFT_TRY(Tensor lo, binary(BinaryOp::BitAnd, w, Operand::integer(0x0F)));
  GRAFT_TRY(Tensor low, binary(BinaryOp::Sub, lo.to(DType::I8), Operand::integer(8)));
  GRAFT_TRY(Tensor st, linearWeight ? stack({low, high}, -1) : stack({high, low}, -1));
  GRAFT_TRY(Tensor unpacked, reshape(st, {V, -1}));
  int64_t D = unpacked.size(1);
  int64_t groups = scales.rank() > 1 ? scales.size(1) : 1;
  if (groupSize <= 0 || groups * groupSize != D)
    return a.error("group_size " + std::to_string(groupSize) + " times " + std::to_string(groups) +
                   " groups does not cover the embedding dim " + std::to_string(D));
  GRAFT_TRY(Tensor grouped, reshape(unpacked, {V, groups, groupSize}));
  Tensor s;
  if (scales.rank() > 1) {
    GRAFT_TRY(s, unsqueeze(scales, -1));
  } else if (scales.numel() == 1) {
    GRAFT_TRY(s, reshape(scales, {1, 1, 1}));
  } else {
    // 1-D per-row scales [V] (the shader reads scales[row * 1 + 0]).
    GRAFT_TRY(s, reshape(scales, {-1, 1, 1}));
  }
  auto dq = binary(BinaryOp::Mul, grouped.to(DType::F32), s.to(DType::F32));
  if (!dq.ok())
    return a.error("weight_scales do not match the weight: " + dq.diags()[0].message);
  GRAFT_TRY(Tensor table, reshape(*dq, {V, -1}));
  std::vector<int64_t> outSizes = idx.sizes();
  outSizes.push_back(D);
  // Upstream's reference returns the f32 product; the fused node keeps the
  // replaced embedding's dtype, which graft declares as the scales' dtype.
  // Round the f32 values to it (a no-op for f32 scales).
  Tensor out = Tensor::empty(scales.dtype(), outSizes);
  Tensor tc = table.contiguous();
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    int64_t row = idx.getInt(i);
    if (row < 0 || row >= V)
      return a.error("index " + std::to_string(row) + " is out of range for " + std::to_string(V) +
                     " rows");
    for (int64_t j = 0; j < D; ++j)
      out.setDouble(i * D + j, tc.getDouble(row * D + j));
  }
  return one(out);
}

// et_vk.swiglu(gate, up) (executorch backends/vulkan/patterns/swiglu.py).
Results swigluKernel(const KernelArgs &a) {
  GRAFT_CHECK_OK(requireTensors(a, {"gate", "up"}));
  GRAFT_TRY(Tensor out, swiglu(a.tensor("gate"), a.tensor("up")));
  return one(std::move(out));
}

Results rmsNorm(const KernelArgs &a) {
  const Tensor &x = a.tensor("x");
  const Tensor &w = a.tensor("weight");
  GRAFT_CHECK_OK(requireTensors(a, {"x", "weight"}));
  if (!isFloatingPoint(x.dtype()))
    return a.error("x must be floating point");
  // variance = x.float().pow(2).mean(-1, keepdim=True)
  Tensor xf = x.to(DType::F32);
  GRAFT_TRY(Tensor sq, binary(BinaryOp::Pow, xf, Operand::num(2.0)));
  GRAFT_TRY(Tensor var, reduce(ReduceOp::Mean, sq, {-1}, true));
  // x_normed = x.float() * rsqrt(variance + eps)
  GRAFT_TRY(Tensor ve, binary(BinaryOp::Add, var, Operand::num(a.number("eps"))));
  GRAFT_TRY(Tensor normed, binary(BinaryOp::Mul, xf, unary(UnaryOp::Rsqrt, ve)));
  // (x_normed * weight.float()).to(input_dtype)
  GRAFT_TRY(Tensor out, binary(BinaryOp::Mul, normed, w.to(DType::F32)));
  return one(out.to(x.dtype()));
}

/// _reshape_for_broadcast in RotaryEmbeddingPattern.
Expected<Tensor> freqsForBroadcast(const KernelArgs &a, const Tensor &f, const Tensor &xr) {
  int64_t nd = xr.rank();
  std::vector<int64_t> shape(static_cast<std::size_t>(nd), 1);
  if (f.rank() == 3) {
    if (nd < 3 || f.size(0) != xr.size(-3) || f.size(1) != xr.size(-2) || f.size(2) != xr.size(-1))
      return a.error("3-D freqs must be [seq_len, n_heads, head_dim/2] of the input");
    for (int64_t i = nd - 3; i < nd; ++i)
      shape[static_cast<std::size_t>(i)] = xr.size(i);
  } else {
    if (f.rank() != 2 || nd < 2 || f.size(0) != xr.size(1) || f.size(1) != xr.size(-1))
      return a.error("freqs must be [seq_len, head_dim/2] matching dim 1 and the last dim of the "
                     "input");
    shape[1] = xr.size(1);
    shape[static_cast<std::size_t>(nd - 1)] = xr.size(-1);
  }
  return reshape(f, shape);
}

Results applyRotaryEmb(const KernelArgs &a) {
  const Tensor &xq = a.tensor("xq");
  const Tensor &xk = a.tensor("xk");
  const Tensor &cos0 = a.tensor("freqs_cos");
  const Tensor &sin0 = a.tensor("freqs_sin");
  GRAFT_CHECK_OK(requireTensors(a, {"xq", "xk", "freqs_cos", "freqs_sin"}));
  if (xq.rank() < 2 || xk.rank() < 2 || xq.size(-1) % 2 || xk.size(-1) % 2)
    return a.error("xq and xk need an even last dim");
  // x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
  auto split = [&](const Tensor &x) -> Expected<std::pair<Tensor, Tensor>> {
    std::vector<int64_t> s = x.sizes();
    s.back() = -1;
    s.push_back(2);
    GRAFT_TRY(Tensor v, reshape(x.to(DType::F32), s));
    GRAFT_TRY(Tensor re, select(v, -1, 0));
    GRAFT_TRY(Tensor im, select(v, -1, 1));
    return std::make_pair(re, im);
  };
  GRAFT_TRY(auto q, split(xq));
  GRAFT_TRY(auto k, split(xk));
  GRAFT_TRY(Tensor cosv, freqsForBroadcast(a, cos0, q.first));
  GRAFT_TRY(Tensor sinv, freqsForBroadcast(a, sin0, q.first));
  auto rotate = [&](const std::pair<Tensor, Tensor> &x, const Tensor &orig) -> Expected<Tensor> {
    // out_r = x_r * cos - x_i * sin ; out_i = x_r * sin + x_i * cos
    GRAFT_TRY(Tensor rc, binary(BinaryOp::Mul, x.first, cosv));
    GRAFT_TRY(Tensor is, binary(BinaryOp::Mul, x.second, sinv));
    GRAFT_TRY(Tensor outR, binary(BinaryOp::Sub, rc, is));
    GRAFT_TRY(Tensor rs, binary(BinaryOp::Mul, x.first, sinv));
    GRAFT_TRY(Tensor ic, binary(BinaryOp::Mul, x.second, cosv));
    GRAFT_TRY(Tensor outI, binary(BinaryOp::Add, rs, ic));
    GRAFT_TRY(Tensor st, stack({outR, outI}, -1));
    GRAFT_TRY(Tensor flat, reshape(st, orig.sizes()));
    return flat.to(orig.dtype()); // type_as
  };
  auto qo = rotate(q, xq);
  if (!qo.ok())
    return a.error("rotating xq: " + qo.diags()[0].message);
  auto ko = rotate(k, xk);
  if (!ko.ok())
    return a.error("rotating xk: " + ko.diags()[0].message);
  return std::vector<RuntimeValue>{*qo, *ko};
}

/// apply_rotary_emb_hf_impl in ExecuTorch's backends/vulkan/custom_ops_lib.py:
/// the table rows at start_pos, then HfRotaryEmbeddingPattern.forward
/// (backends/vulkan/patterns/rope_hf.py), op by op so each product and sum is
/// rounded where PyTorch rounds it:
///   freqs = freqs[start_pos : start_pos + xq.shape[1]]
///   cos, sin = freqs_cos.unsqueeze(1), freqs_sin.unsqueeze(1)
///   x_rot, x_pass = x[..., :R], x[..., R:]           (R = cos.shape[-1])
///   out = cat([x_rot.float() * cos + rotate_half(x_rot.float()) * sin, x_pass], -1).type_as(x)
///   rotate_half(x) = cat((-x[..., R/2:], x[..., :R/2]), -1)
Results applyRotaryEmbHf(const KernelArgs &a) {
  const Tensor &xq = a.tensor("xq");
  const Tensor &xk = a.tensor("xk");
  const Tensor &cos0 = a.tensor("freqs_cos");
  const Tensor &sin0 = a.tensor("freqs_sin");
  GRAFT_CHECK_OK(requireTensors(a, {"xq", "xk", "freqs_cos", "freqs_sin"}));
  if (xq.rank() != 4 || xk.rank() != 4 || cos0.rank() != 2 || sin0.rank() != 2)
    return a.error("expects 4-D xq and xk and 2-D freqs");
  const int64_t start = a.integer("start_pos");
  const int64_t seq = xq.size(1);
  // Python slicing: a negative start counts from the end, like aten.slice.
  GRAFT_TRY(Tensor cosRows, slice(cos0, 0, start, start + seq, 1));
  GRAFT_TRY(Tensor sinRows, slice(sin0, 0, start, start + seq, 1));
  if (cosRows.size(0) != seq || sinRows.size(0) != seq)
    return a.error("freqs rows [" + std::to_string(start) + ", " + std::to_string(start + seq) +
                   ") of tables with " + std::to_string(cos0.size(0)) + " and " +
                   std::to_string(sin0.size(0)) + " rows are not the " + std::to_string(seq) +
                   " positions of xq");
  GRAFT_TRY(Tensor cos, unsqueeze(cosRows, 1));
  GRAFT_TRY(Tensor sin, unsqueeze(sinRows, 1));
  const int64_t rot = cos.size(-1);
  if (rot % 2 != 0 || rot > xq.size(-1) || rot > xk.size(-1))
    return a.error("rotary_dim " + std::to_string(rot) + " must be even and at most head_dim");
  auto embed = [&](const Tensor &x) -> Expected<Tensor> {
    GRAFT_TRY(Tensor xr, slice(x, -1, 0, rot, 1));
    GRAFT_TRY(Tensor xp, slice(x, -1, rot, std::nullopt, 1));
    Tensor xf = xr.to(DType::F32);
    GRAFT_TRY(Tensor xc, binary(BinaryOp::Mul, xf, cos));
    GRAFT_TRY(Tensor x1, slice(xf, -1, 0, rot / 2, 1));
    GRAFT_TRY(Tensor x2, slice(xf, -1, rot / 2, std::nullopt, 1));
    GRAFT_TRY(Tensor half, cat({unary(UnaryOp::Neg, x2), x1}, -1));
    GRAFT_TRY(Tensor hs, binary(BinaryOp::Mul, half, sin));
    GRAFT_TRY(Tensor sum, binary(BinaryOp::Add, xc, hs));
    GRAFT_TRY(Tensor out, cat({sum, xp}, -1));
    return out.to(x.dtype()); // type_as
  };
  auto qo = embed(xq);
  if (!qo.ok())
    return a.error("rotating xq: " + qo.diags()[0].message);
  auto ko = embed(xk);
  if (!ko.ok())
    return a.error("rotating xk: " + ko.diags()[0].message);
  return std::vector<RuntimeValue>{*qo, *ko};
}

} // namespace

void registerVulkanOpKernels(KernelRegistry &r) {
  r.add("et_vk.linear_q4gsw.default", [](const KernelArgs &a) { return linearQ4gsw(a, "self"); });
  r.add("et_vk.linear_dq8ca_q4gsw.default", linearDq8caQ4gsw);
  r.add("et_vk.linear_dq8ca_q8csw.default", linearDq8caQ8csw);
  r.add("et_vk.linear_qcs4w.default", linearQcs4w);
  r.add("et_vk.linear_q8ta_q8csw.default", linearQ8taQ8csw);
  r.add("et_vk.q8ta_linear.default", q8taLinear);
  r.add("et_vk.q8ta_linear_gemv.default", q8taLinear);
  r.add("et_vk.embedding_q4gsw.default", embeddingQ4gsw);
  r.add("et_vk.rms_norm.default", rmsNorm);
  r.add("et_vk.swiglu.default", swigluKernel);
  r.add("et_vk.apply_rotary_emb.default", applyRotaryEmb);
  r.add("et_vk.apply_rotary_emb_hf.default", applyRotaryEmbHf);
  // _local_scalar_dense(select_copy.int(x, dim, index)), fused.
  r.add("et_vk.select_as_symint.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("x");
    GRAFT_CHECK_OK(requireTensors(a, {"x"}));
    GRAFT_TRY(Tensor s, select(x, a.integer("dim"), a.integer("index")));
    if (s.numel() != 1 || !isIntegral(s.dtype(), true))
      return a.error("the selected slice must be a single integer element");
    return std::vector<RuntimeValue>{s.getInt(0)};
  });
}

} // namespace graft::interp
