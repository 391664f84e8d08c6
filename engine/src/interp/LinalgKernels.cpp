//===- LinalgKernels.cpp - aten matrix products and attention -------------===//
//
// linear/mm/bmm/matmul/addmm, _weight_int8pack_mm and
// scaled_dot_product_attention. Accumulation order (documented in
// docs/numerics.md): each output element is a dot product accumulated in
// opmath (f32 for f16/bf16/f32, f64 for f64) sequentially over k = 0..K-1,
// without FMA; a bias is added to the finished dot product, then the result is
// rounded once to the output dtype. BLAS/oneDNN block and vectorize the sum,
// so float results agree with PyTorch to rounding, not bit for bit.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include <cmath>
#include <limits>

namespace graft::interp {

namespace {

Results mmKernel(const KernelArgs &a, const char *lhs, const char *rhs, int64_t rank) {
  const Tensor &x = a.tensor(lhs);
  const Tensor &y = a.tensor(rhs);
  if (!x.defined() || !y.defined())
    return a.error("expects two tensors");
  if (rank > 0 && (x.rank() != rank || y.rank() != rank))
    return a.error("expects " + std::to_string(rank) + "-D tensors, got " +
                   std::to_string(x.rank()) + "-D and " + std::to_string(y.rank()) + "-D");
  if (rank == 3 && x.size(0) != y.size(0))
    return a.error("batch sizes differ: " + std::to_string(x.size(0)) + " and " +
                   std::to_string(y.size(0)));
  GRAFT_TRY(Tensor r, matmul(x, y));
  return one(r);
}

/// out = beta * self + alpha * (mat1 @ mat2), one rounding per element.
Results addmmKernel(const KernelArgs &a) {
  const Tensor &bias = a.tensor("self");
  const Tensor &m1 = a.tensor("mat1");
  const Tensor &m2 = a.tensor("mat2");
  GRAFT_CHECK_OK(requireTensors(a, {"self", "mat1", "mat2"}));
  if (m1.rank() != 2 || m2.rank() != 2 || m1.size(1) != m2.size(0))
    return a.error("mat1 and mat2 shapes cannot be multiplied");
  if (m1.dtype() != m2.dtype() || bias.dtype() != m1.dtype())
    return a.error("self, mat1 and mat2 must have the same dtype");
  if (!isFloatingPoint(m1.dtype()))
    return a.error("integer addmm is not supported");
  double alpha = a.optionalNumber("alpha").value_or(1.0);
  double beta = a.optionalNumber("beta").value_or(1.0);
  int64_t M = m1.size(0), K = m1.size(1), N = m2.size(1);
  GRAFT_TRY(auto bsz, broadcastSizes(bias.sizes(), {M, N}));
  if (bsz != std::vector<int64_t>{M, N})
    return a.error("self does not broadcast to the product's shape");
  Tensor eb = expandTo(bias, {M, N});
  DType d = m1.dtype();
  Tensor out = Tensor::empty(d, {M, N});
  std::vector<double> v1(static_cast<std::size_t>(M * K)), v2(static_cast<std::size_t>(K * N));
  for (int64_t i = 0; i < M * K; ++i)
    v1[static_cast<std::size_t>(i)] = m1.getDouble(i);
  for (int64_t i = 0; i < K * N; ++i)
    v2[static_cast<std::size_t>(i)] = m2.getDouble(i);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if (d == DType::F64) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += v1[static_cast<std::size_t>(i * K + k)] * v2[static_cast<std::size_t>(k * N + j)];
        double r = alpha == 1.0 ? acc : alpha * acc;
        if (beta != 0.0)
          r += beta == 1.0 ? eb.getDouble(i * N + j) : beta * eb.getDouble(i * N + j);
        out.setDouble(i * N + j, r);
      } else {
        float acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<float>(v1[static_cast<std::size_t>(i * K + k)]) *
                 static_cast<float>(v2[static_cast<std::size_t>(k * N + j)]);
        float r = alpha == 1.0 ? acc : static_cast<float>(alpha) * acc;
        float bv = static_cast<float>(eb.getDouble(i * N + j));
        if (beta != 0.0)
          r += beta == 1.0 ? bv : static_cast<float>(beta) * bv;
        out.setDouble(i * N + j, castValue(r, d));
      }
    }
  return one(out);
}

/// ATen's int8mm_kernel.cpp: out[m, n] = (sum_k x[m, k] * w[n, k]) * scales[n]
/// in f32, rounded to x's dtype.
Results weightInt8PackMm(const KernelArgs &a) {
  const Tensor &x = a.tensor("self");
  const Tensor &w = a.tensor("mat2");
  const Tensor &s = a.tensor("scales");
  GRAFT_CHECK_OK(requireTensors(a, {"self", "mat2", "scales"}));
  if (x.rank() != 2 || w.rank() != 2 || s.rank() != 1)
    return a.error("expects 2-D self and mat2 and 1-D scales");
  if (w.dtype() != DType::I8)
    return a.error("mat2 must be int8, got " + std::string(name(w.dtype())));
  int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  if (w.size(1) != K || s.size(0) != N)
    return a.error("shapes do not match: self [M, K], mat2 [N, K], scales [N] expected");
  Tensor out = Tensor::empty(x.dtype(), {M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<float>(x.getDouble(m * K + k)) * static_cast<float>(w.getInt(n * K + k));
      out.setDouble(m * N + n, castValue(acc * static_cast<float>(s.getDouble(n)), x.dtype()));
    }
  return one(out);
}

/// repeat_interleave(x, r, dim=-3).
Expected<Tensor> repeatHeads(const Tensor &x, int64_t r) {
  if (r == 1)
    return x;
  std::vector<Tensor> parts;
  int64_t H = x.size(-3);
  for (int64_t h = 0; h < H; ++h) {
    GRAFT_TRY(Tensor s, slice(x, x.rank() - 3, h, h + 1, 1));
    for (int64_t i = 0; i < r; ++i)
      parts.push_back(s);
  }
  return cat(parts, x.rank() - 3);
}

/// ATen's _scaled_dot_product_attention_math (attention.cpp): f16/bf16 are
/// upcast to f32; q and k^T are each scaled by sqrt(scale); the mask is
/// added; _safe_softmax (all -inf rows give 0); @ v; cast back.
Results sdpaKernel(const KernelArgs &a) {
  const Tensor &q = a.tensor("query"), &k = a.tensor("key"), &v = a.tensor("value");
  GRAFT_CHECK_OK(requireTensors(a, {"query", "key", "value"}));
  if (a.optionalNumber("dropout_p").value_or(0.0) != 0.0)
    return a.error("dropout_p != 0 is random and has no reference result");
  bool causal = a.boolean("is_causal");
  const Tensor *mask = a.optionalTensor("attn_mask");
  if (causal && mask)
    return a.error("explicit attn_mask should not be set when is_causal=True");
  std::optional<double> scale = a.optionalNumber("scale");
  if (a.isNone("scale"))
    scale.reset();
  auto out = sdpaMath(q, k, v, mask, causal ? std::optional<int64_t>(0) : std::nullopt, scale,
                      a.boolean("enable_gqa"));
  if (!out.ok())
    return a.error(out.diags()[0].message);
  return one(*out);
}

} // namespace

Expected<Tensor> sdpaMath(Tensor q, Tensor k, Tensor v, const Tensor *mask,
                          std::optional<int64_t> causalOffset, std::optional<double> scale,
                          bool enableGqa) {
  auto fail = [](const std::string &m) { return Failure(Diagnostic::error(m)); };
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2)
    return fail("query, key and value need at least 2 dims");
  DType origin = q.dtype();
  auto up = [](const Tensor &t) {
    return (t.dtype() == DType::F16 || t.dtype() == DType::BF16) ? t.to(DType::F32) : t;
  };
  q = up(q);
  k = up(k);
  v = up(v);
  if (q.dtype() != k.dtype() || q.dtype() != v.dtype())
    return fail("query, key and value must have the same dtype");
  if (enableGqa && q.rank() >= 3 && k.rank() >= 3) {
    int64_t hq = q.size(-3), hk = k.size(-3);
    if (hk == 0 || hq % hk != 0)
      return fail("enable_gqa: query heads " + std::to_string(hq) +
                  " are not a multiple of key heads " + std::to_string(hk));
    GRAFT_TRY(k, repeatHeads(k, hq / hk));
    GRAFT_TRY(v, repeatHeads(v, hq / v.size(-3)));
  }
  bool negative = scale && *scale < 0;
  double s = scale ? std::abs(*scale) : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  double sf = std::sqrt(s);
  GRAFT_TRY(Tensor qs, binary(BinaryOp::Mul, q, Operand::num(negative ? 0.0 - sf : sf)));
  GRAFT_TRY(Tensor kt, transpose(k, -2, -1));
  GRAFT_TRY(Tensor ks, binary(BinaryOp::Mul, kt, Operand::num(sf)));
  GRAFT_TRY(Tensor attn, matmul(qs, ks));
  int64_t L = q.size(-2), S = k.size(-2);
  DType maskDType = origin == DType::F64 ? DType::F64 : origin;
  Tensor addMask;
  if (causalOffset) {
    // is_causal: query i sees keys j <= i (+ the position of query 0 for a
    // cache, llama.custom_sdpa's start_pos).
    addMask = Tensor::empty(maskDType, {L, S});
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j)
        addMask.setDouble(i * S + j,
                          j <= i + *causalOffset ? 0.0 : -std::numeric_limits<double>::infinity());
  } else if (mask) {
    if (mask->dtype() == DType::Bool) {
      addMask = Tensor::empty(maskDType, mask->sizes());
      for (int64_t i = 0, n = mask->numel(); i < n; ++i)
        addMask.setDouble(i, mask->getInt(i) ? 0.0 : -std::numeric_limits<double>::infinity());
    } else {
      addMask = *mask;
    }
  }
  if (addMask.defined()) {
    // attn.add_(mask): in place, so the result keeps attn's dtype.
    GRAFT_TRY(Tensor sum, binary(BinaryOp::Add, attn, addMask));
    attn = sum.dtype() == attn.dtype() ? sum : sum.to(attn.dtype());
  }
  GRAFT_TRY(Tensor p, softmax(attn, -1, attn.dtype()));
  // _safe_softmax: rows whose inputs are all -inf become 0 instead of NaN.
  int64_t rows = attn.numel() / std::max<int64_t>(S, 1);
  for (int64_t r = 0; r < rows; ++r) {
    bool allMasked = S > 0;
    for (int64_t j = 0; j < S && allMasked; ++j)
      allMasked = attn.getDouble(r * S + j) == -std::numeric_limits<double>::infinity();
    if (allMasked)
      for (int64_t j = 0; j < S; ++j)
        p.setDouble(r * S + j, 0.0);
  }
  GRAFT_TRY(Tensor out, matmul(p, v));
  return out.dtype() == origin ? out : out.to(origin);
}

namespace {} // namespace

void registerLinalgKernels(KernelRegistry &r) {
  r.add("aten.linear.default", [](const KernelArgs &a) -> Results {
    const Tensor &x = a.tensor("input");
    const Tensor &w = a.tensor("weight");
    GRAFT_CHECK_OK(requireTensors(a, {"input", "weight"}));
    GRAFT_TRY(Tensor y, linear(x, w, a.optionalTensor("bias")));
    return one(y);
  });
  r.add("aten.mm.default", [](const KernelArgs &a) { return mmKernel(a, "self", "mat2", 2); });
  r.add("aten.bmm.default", [](const KernelArgs &a) { return mmKernel(a, "self", "mat2", 3); });
  r.add("aten.matmul.default", [](const KernelArgs &a) { return mmKernel(a, "self", "other", 0); });
  r.add("aten.addmm.default", addmmKernel);
  r.add("aten._weight_int8pack_mm.default", weightInt8PackMm);
  r.add("aten.scaled_dot_product_attention.default", sdpaKernel);
}

} // namespace graft::interp
