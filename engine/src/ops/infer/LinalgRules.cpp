//===- LinalgRules.cpp - Inference for matmul-family ops and embedding ----===//
//
// linear, mm, bmm, matmul (1-D/2-D/batched with broadcast batch dims), addmm,
// _weight_int8pack_mm, scaled_dot_product_attention and embedding. Operand
// dtypes must agree as torch requires (no implicit promotion in matmuls);
// inner dims must not be provably different.
//
//===----------------------------------------------------------------------===//
#include "InferUtil.h"

namespace graft::infer {

namespace {

Status sameDType(const InferContext &ctx, const TensorProto &a, const TensorProto &b,
                 const char *an, const char *bn) {
  if (a.dtype != b.dtype)
    return ctx.error(std::string("expected ") + an + " and " + bn +
                     " to have the same dtype, got " + std::string(name(a.dtype)) + " and " +
                     std::string(name(b.dtype)));
  return okStatus();
}

Status innerMatch(const InferContext &ctx, const Dim &a, const Dim &b, const TensorProto &x,
                  const TensorProto &y) {
  if (!mayBeEqual(a, b))
    return ctx.error("shapes " + shapeStr(x.shape) + " and " + shapeStr(y.shape) +
                     " cannot be multiplied (" + a.str() + " vs " + b.str() + ")");
  return okStatus();
}

Results linearRule(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("input");
  const TensorProto &w = ctx.tensor("weight");
  const TensorProto *b = ctx.optionalTensor("bias");
  if (x.rank() == 0)
    return ctx.error("input must have at least one dimension");
  if (w.rank() != 1 && w.rank() != 2)
    return ctx.error("weight must be 1-D or 2-D, got " + shapeStr(w.shape));
  GRAFT_CHECK_OK(sameDType(ctx, x, w, "input", "weight"));
  GRAFT_CHECK_OK(innerMatch(ctx, x.shape.back(), w.shape.back(), x, w));
  Shape out(x.shape.begin(), x.shape.end() - 1);
  if (w.rank() == 2)
    out.push_back(w.shape[0]);
  if (b) {
    GRAFT_CHECK_OK(sameDType(ctx, x, *b, "input", "bias"));
    if (!broadcastShapes(out, b->shape) || *broadcastShapes(out, b->shape) != out)
      return ctx.error("bias " + shapeStr(b->shape) + " does not broadcast to the output " +
                       shapeStr(out));
  }
  return one(tensorResult(x.dtype, out, &x));
}

Results mmRule(const InferContext &ctx) {
  const TensorProto &a = ctx.tensor("self");
  const TensorProto &b = ctx.tensor("mat2");
  if (a.rank() != 2 || b.rank() != 2)
    return ctx.error("mm expects 2-D tensors, got " + shapeStr(a.shape) + " and " +
                     shapeStr(b.shape));
  GRAFT_CHECK_OK(sameDType(ctx, a, b, "self", "mat2"));
  GRAFT_CHECK_OK(innerMatch(ctx, a.shape[1], b.shape[0], a, b));
  return one(tensorResult(a.dtype, {a.shape[0], b.shape[1]}, &a));
}

Results bmmRule(const InferContext &ctx) {
  const TensorProto &a = ctx.tensor("self");
  const TensorProto &b = ctx.tensor("mat2");
  if (a.rank() != 3 || b.rank() != 3)
    return ctx.error("bmm expects 3-D tensors, got " + shapeStr(a.shape) + " and " +
                     shapeStr(b.shape));
  GRAFT_CHECK_OK(sameDType(ctx, a, b, "self", "mat2"));
  if (!mayBeEqual(a.shape[0], b.shape[0]))
    return ctx.error("batch sizes differ: " + shapeStr(a.shape) + " and " + shapeStr(b.shape));
  GRAFT_CHECK_OK(innerMatch(ctx, a.shape[2], b.shape[1], a, b));
  return one(tensorResult(a.dtype, {a.shape[0], a.shape[1], b.shape[2]}, &a));
}

// torch.matmul: 1-D operands get a dim prepended/appended and removed again;
// batch dims broadcast.
Results matmulRule(const InferContext &ctx) {
  const TensorProto &a = ctx.tensor("self");
  const TensorProto &b = ctx.tensor("other");
  if (a.rank() == 0 || b.rank() == 0)
    return ctx.error("both arguments to matmul need to be at least 1-D");
  GRAFT_CHECK_OK(sameDType(ctx, a, b, "self", "other"));
  Shape sa = a.shape, sb = b.shape;
  bool aVec = a.rank() == 1, bVec = b.rank() == 1;
  if (aVec)
    sa.insert(sa.begin(), Dim(1));
  if (bVec)
    sb.push_back(Dim(1));
  GRAFT_CHECK_OK(innerMatch(ctx, sa.back(), sb[sb.size() - 2], a, b));
  Shape batchA(sa.begin(), sa.end() - 2), batchB(sb.begin(), sb.end() - 2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return ctx.error("batch dims of " + shapeStr(a.shape) + " and " + shapeStr(b.shape) +
                     " cannot be broadcast");
  Shape out = *batch;
  if (!aVec)
    out.push_back(sa[sa.size() - 2]);
  if (!bVec)
    out.push_back(sb.back());
  return one(tensorResult(a.dtype, out, &a));
}

Results addmmRule(const InferContext &ctx) {
  const TensorProto &self = ctx.tensor("self");
  const TensorProto &a = ctx.tensor("mat1");
  const TensorProto &b = ctx.tensor("mat2");
  if (a.rank() != 2 || b.rank() != 2)
    return ctx.error("addmm expects 2-D mat1 and mat2, got " + shapeStr(a.shape) + " and " +
                     shapeStr(b.shape));
  GRAFT_CHECK_OK(sameDType(ctx, a, b, "mat1", "mat2"));
  GRAFT_CHECK_OK(sameDType(ctx, self, a, "self", "mat1"));
  GRAFT_CHECK_OK(innerMatch(ctx, a.shape[1], b.shape[0], a, b));
  Shape out{a.shape[0], b.shape[1]};
  auto bc = broadcastShapes(out, self.shape);
  if (!bc || *bc != out)
    return ctx.error("self " + shapeStr(self.shape) + " does not broadcast to " + shapeStr(out));
  return one(tensorResult(a.dtype, out, &a));
}

// _weight_int8pack_mm(self [M, K], mat2 int8 [N, K], scales [N]) -> [M, N].
Results int8PackMmRule(const InferContext &ctx) {
  const TensorProto &x = ctx.tensor("self");
  const TensorProto &w = ctx.tensor("mat2");
  const TensorProto &s = ctx.tensor("scales");
  if (x.rank() != 2 || w.rank() != 2)
    return ctx.error("expects 2-D self and mat2, got " + shapeStr(x.shape) + " and " +
                     shapeStr(w.shape));
  if (w.dtype != DType::I8)
    return ctx.error("mat2 must be int8, got " + std::string(name(w.dtype)));
  if (!isFloatingPoint(x.dtype))
    return ctx.error("self must be floating point, got " + std::string(name(x.dtype)));
  GRAFT_CHECK_OK(innerMatch(ctx, x.shape[1], w.shape[1], x, w));
  if (s.rank() != 1 || !mayBeEqual(s.shape[0], w.shape[0]))
    return ctx.error("scales must be 1-D of size N = " + w.shape[0].str() + ", got " +
                     shapeStr(s.shape));
  return one(tensorResult(x.dtype, {x.shape[0], w.shape[0]}, &x));
}

// scaled_dot_product_attention: q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev].
Results sdpaRule(const InferContext &ctx) {
  const TensorProto &q = ctx.tensor("query");
  const TensorProto &k = ctx.tensor("key");
  const TensorProto &v = ctx.tensor("value");
  if (q.rank() < 2 || k.rank() < 2 || v.rank() < 2)
    return ctx.error("query, key and value must be at least 2-D");
  GRAFT_CHECK_OK(sameDType(ctx, q, k, "query", "key"));
  GRAFT_CHECK_OK(sameDType(ctx, q, v, "query", "value"));
  GRAFT_CHECK_OK(innerMatch(ctx, q.shape.back(), k.shape.back(), q, k));
  if (!mayBeEqual(k.shape[k.shape.size() - 2], v.shape[v.shape.size() - 2]))
    return ctx.error("key " + shapeStr(k.shape) + " and value " + shapeStr(v.shape) +
                     " disagree on the sequence length");
  Shape out = q.shape;
  out.back() = v.shape.back();
  if (const TensorProto *m = ctx.optionalTensor("attn_mask")) {
    Shape scores = q.shape;
    scores.back() = k.shape[k.shape.size() - 2];
    if (!broadcastShapes(scores, m->shape))
      return ctx.error("attn_mask " + shapeStr(m->shape) +
                       " does not broadcast to the attention scores " + shapeStr(scores));
  }
  return one(tensorResult(q.dtype, out, &q));
}

Results embeddingRule(const InferContext &ctx) {
  const TensorProto &w = ctx.tensor("weight");
  const TensorProto &idx = ctx.tensor("indices");
  if (w.rank() != 2)
    return ctx.error("weight must be 2-D, got " + shapeStr(w.shape));
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32)
    return ctx.error("indices must be int32 or int64, got " + std::string(name(idx.dtype)));
  Shape out = idx.shape;
  out.push_back(w.shape[1]);
  return one(tensorResult(w.dtype, out, &w));
}

} // namespace

void registerLinalgRules(InferenceRules &rules) {
  rules.add("linear", linearRule);
  rules.add("mm", mmRule);
  rules.add("bmm", bmmRule);
  rules.add("matmul", matmulRule);
  rules.add("addmm", addmmRule);
  rules.add("weight_int8pack_mm", int8PackMmRule);
  rules.add("sdpa", sdpaRule);
  rules.add("embedding", embeddingRule);
}

} // namespace graft::infer
