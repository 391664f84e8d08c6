//===- Lowerings.cpp - The op -> Vulkan kernel table of the executor ------===//
//
// One entry per op target: a static check (on prototypes, constant-ness and
// literal arguments; it returns the reason a node must fall back to the CPU)
// and a run function. Semantics follow the reference interpreter: type
// promotion comes from the node's declared result dtype (operands are
// converted to it first), scalars follow docs/numerics.md's rules for
// reduced-precision dtypes, and view-like ops compute their result's sizes
// and strides by running the reference view kernel on a data-free tensor, so
// shapes, negative dims and index errors match it exactly.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

#include "graft/support/FloatBits.h"

#include <cmath>
#include <limits>

namespace graft::vk {

namespace {

bool isConstantValue(const Node &node, const BoundArgs &b, std::string_view name) {
  const Argument *a = b.find(name);
  if (!a || !a->isValue())
    return false;
  const GraphInput *in = node.graph()->inputFor(a->value());
  return in && in->isConstant() && in->hasData();
}

std::string rankReason(const Node &node, int64_t maxRank) {
  for (unsigned i = 0; i < node.numOutputs(); ++i)
    if (node.output(i)->isTensor() && node.output(i)->proto().rank() > maxRank)
      return "rank " + std::to_string(node.output(i)->proto().rank()) + " exceeds the kernel's " +
             std::to_string(maxRank);
  std::string why;
  node.forEachOperand([&](Value *v) {
    if (why.empty() && v->isTensor() && v->proto().rank() > maxRank)
      why = "an operand of rank " + std::to_string(v->proto().rank()) + " exceeds the kernel's " +
            std::to_string(maxRank);
  });
  return why;
}

/// Converts a tensor to the result dtype (torch converts operands to the
/// common dtype before the op).
Expected<DeviceTensor> asDType(Context &ctx, const DeviceTensor &t, DType d) {
  if (t.dtype == d)
    return t;
  return cast(ctx, t, d);
}

//===-- Elementwise ----------------------------------------------------===//

Lowering binaryLowering(BinaryKind op, bool scalarOther, const char *otherName = "other") {
  Lowering l;
  l.kernel = std::string("binary_") + name(op);
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = rankReason(node, 8);
    if (!r.empty())
      return r;
    DType out = node.output()->proto().dtype;
    bool intOk = (op == BinaryKind::Add || op == BinaryKind::Sub || op == BinaryKind::Mul) &&
                 deviceElem(out) == DeviceElem::I32 && out != DType::Bool;
    if (!isDeviceFloat(out) && !intOk)
      return "result dtype " + std::string(name(out)) + " is not supported by binary_" + name(op);
    // Arguments torch rejects (sub_check, alpha_check): the reference
    // interpreter reports the error, the device must not compute a value.
    if (op == BinaryKind::Sub) {
      const TensorProto *s = protoOf(b, "self"), *o = protoOf(b, otherName);
      const Argument *oa = b.find(otherName);
      if ((s && s->dtype == DType::Bool) || (o && o->dtype == DType::Bool) || (oa && oa->isBool()))
        return "sub of a bool operand is an error in torch";
    }
    if (const Argument *al = b.find("alpha");
        al && (al->isBool() || (al->isFloat() && !isDeviceFloat(out))))
      return "alpha " + std::string(al->isBool() ? "bool" : "float") + " on a " +
             std::string(name(out)) + " result is an error in torch";
    if (op == BinaryKind::Pow) {
      const Argument *e = b.find(otherName);
      auto x = e ? e->number() : std::nullopt;
      if (!x || !(*x == 2 || *x == 3 || *x == 0.5 || *x == -0.5 || *x == -1 || *x == -2))
        return "pow exponent must be one of 2, 3, 0.5, -0.5, -1, -2 (PowKernel.cpp's special "
               "cases)";
    }
    // torch keeps the full f32 value of a one-element second operand of
    // mul/div on f16 ("original_scalar_value"); the kernel would round it.
    if (!scalarOther && out == DType::F16 && (op == BinaryKind::Mul || op == BinaryKind::Div)) {
      const TensorProto *o = protoOf(b, otherName);
      if (o && o->dtype != DType::F16) {
        auto n = o->numel().value();
        if (n && *n == 1)
          return "f16 " + std::string(name(op)) + " by a one-element " +
                 std::string(graft::name(o->dtype)) + " tensor keeps its full precision";
      }
    }
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    DType out = a.outDType();
    double alpha = a.number("alpha").value_or(1.0);
    GRAFT_TRY(DeviceTensor self, a.tensor("self"));
    GRAFT_TRY(self, asDType(a.ctx(), self, out));
    const Argument &other = a.arg(otherName);
    if (other.isValue() && other.value()->isTensor()) {
      GRAFT_TRY(DeviceTensor o, a.tensor(otherName));
      GRAFT_TRY(o, asDType(a.ctx(), o, out));
      GRAFT_TRY(DeviceTensor r, binary(a.ctx(), op, self, o, alpha));
      return one(std::move(r));
    }
    auto s = a.number(otherName);
    if (!s)
      return a.error("argument '" + std::string(otherName) + "' is not a number");
    double v = *s;
    // Scalars: add/sub convert to the common dtype (f16 rounds), mul/div use
    // the original value in f32 (BinaryOpsKernel.cpp original_scalar_value).
    if (out == DType::F16 && (op == BinaryKind::Add || op == BinaryKind::Sub))
      v = roundToDType(static_cast<float>(v), DType::F16);
    GRAFT_TRY(DeviceTensor r, binaryScalar(a.ctx(), op, self, v, alpha));
    return one(std::move(r));
  };
  return l;
}

Lowering unaryLowering(UnaryKind op) {
  Lowering l;
  l.kernel = std::string("unary_") + name(op);
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "self");
    if (!x || !isDeviceFloat(x->dtype) || x->dtype != node.output()->proto().dtype)
      return "needs an f32/f16 input of the result's dtype";
    return {};
  };
  l.run = [op](NodeArgs &a) -> Results {
    UnaryKind k = op;
    if (k == UnaryKind::Gelu && !a.isNone("approximate") && a.arg("approximate").isString()) {
      const std::string &approx = a.arg("approximate").string();
      if (approx == "tanh")
        k = UnaryKind::GeluTanh;
      else if (approx != "none" && !approx.empty())
        return a.error("gelu: approximate must be 'none' or 'tanh', got '" + approx + "'");
    }
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor r, unary(a.ctx(), k, x));
    return one(std::move(r));
  };
  return l;
}

/// torch.clamp(self, min, max) with Scalar bounds on f32/f16: the bounds are
/// converted to the result dtype on the host (clamp_scalar_kernel_impl's
/// checked min_.to<scalar_t>()), then unary_clamp compares.
Lowering clampLowering() {
  Lowering l;
  l.kernel = "unary_clamp";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "self");
    if (!x || !isDeviceFloat(x->dtype) || x->dtype != node.output()->proto().dtype)
      return "needs an f32/f16 input of the result's dtype";
    for (const char *bound : {"min", "max"}) {
      const Argument *a = b.find(bound);
      if (a && !a->isNone() && !a->number() && !(a->isValue() && !a->value()->isTensor()))
        return std::string("bound '") + bound + "' is not a number";
    }
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    DType out = a.outDType();
    std::optional<double> lo, hi;
    for (const char *bound : {"min", "max"}) {
      if (a.isNone(bound))
        continue;
      auto v = a.number(bound);
      if (!v)
        return a.error(std::string("clamp bound '") + bound + "' is not a number");
      // c10's checked conversion: a finite bound outside the dtype's range is
      // an error (infinities and NaN convert).
      double lim = out == DType::F16 ? 65504.0 : double(std::numeric_limits<float>::max());
      if (std::isfinite(*v) && (*v < -lim || *v > lim))
        return a.error(std::string("clamp: ") + bound + " value " + std::to_string(*v) +
                       " cannot be converted to type " + std::string(name(out)) +
                       " without overflow");
      (std::string_view(bound) == "min" ? lo : hi) = *v;
    }
    if (!lo && !hi)
      return a.error("torch.clamp: At least one of 'min' or 'max' must not be None");
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    float flo = -inf, fhi = inf;
    if (lo && hi && (std::isnan(*lo) || std::isnan(*hi))) {
      flo = fhi = nan; // clamp_out fills the result with NaN
    } else {
      // A lone NaN bound is ignored (std::max(x, NaN) is x): keep +-inf.
      if (lo && !std::isnan(*lo))
        flo = roundToDType(static_cast<float>(*lo), out);
      if (hi && !std::isnan(*hi))
        fhi = roundToDType(static_cast<float>(*hi), out);
    }
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor r, clampScalar(a.ctx(), x, flo, fhi));
    return one(std::move(r));
  };
  return l;
}

/// torch.where(condition, self, other): self and other are converted to the
/// result dtype first (a Python number becomes a 0-dim tensor of it), then
/// where.glsl selects with three-way broadcasting.
Lowering whereLowering() {
  Lowering l;
  l.kernel = "where";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = rankReason(node, 6);
    if (!r.empty())
      return r;
    const TensorProto *c = protoOf(b, "condition");
    if (!c || (c->dtype != DType::Bool && c->dtype != DType::U8))
      return "condition must be a bool or u8 tensor";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    DType out = a.outDType();
    GRAFT_TRY(DeviceTensor cond, a.tensor("condition"));
    auto operand = [&](const char *which) -> Expected<DeviceTensor> {
      const Argument &arg = a.arg(which);
      if (arg.isValue() && arg.value()->isTensor()) {
        GRAFT_TRY(DeviceTensor t, a.tensor(which));
        return asDType(a.ctx(), t, out);
      }
      auto v = a.number(which);
      if (!v)
        return a.error(std::string("argument '") + which + "' is not a tensor or number");
      // Converted to the result dtype as TensorIterator converts a wrapped
      // number (f16 rounds to nearest even when the host tensor is built).
      Tensor t = Tensor::empty(out, {});
      t.setDouble(0, *v);
      return uploadTensor(a.ctx(), t);
    };
    GRAFT_TRY(DeviceTensor self, operand("self"));
    GRAFT_TRY(DeviceTensor other, operand("other"));
    GRAFT_TRY(DeviceTensor r, where(a.ctx(), cond, self, other));
    return one(std::move(r));
  };
  return l;
}

//===-- Reductions -------------------------------------------------------===//

/// How many trailing dims `dims` reduces, when they are exactly the
/// innermost ones (none/empty: all).
std::optional<int64_t> trailingDims(const Argument *dimArg, int64_t rank) {
  if (!dimArg || dimArg->isNone())
    return rank;
  auto dims = dimArg->intList();
  if (!dims)
    return std::nullopt;
  if (dims->empty())
    return rank;
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int64_t d : *dims) {
    int64_t w = d < 0 ? d + rank : d;
    if (w < 0 || w >= rank || seen[static_cast<std::size_t>(w)])
      return std::nullopt;
    seen[static_cast<std::size_t>(w)] = true;
  }
  int64_t k = static_cast<int64_t>(dims->size());
  for (int64_t i = rank - k; i < rank; ++i)
    if (!seen[static_cast<std::size_t>(i)])
      return std::nullopt;
  return k;
}

Lowering reduceLowering(ReduceKind op, const char *kernel) {
  Lowering l;
  l.kernel = kernel;
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "self");
    if (!x || !isDeviceFloat(x->dtype) || x->dtype != node.output()->proto().dtype)
      return "needs an f32/f16 input of the result's dtype";
    if (x->rank() == 0)
      return "0-dim input";
    if (!trailingDims(b.find("dim"), x->rank()))
      return "reduces dims other than the innermost ones";
    return {};
  };
  l.run = [op](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    auto k = trailingDims(&a.arg("dim"), static_cast<int64_t>(x.sizes.size()));
    if (!k)
      return a.error("reduction dims must be the innermost ones");
    bool keepdim = a.integer("keepdim").value_or(0) != 0;
    GRAFT_TRY(DeviceTensor r, reduceInner(a.ctx(), op, x, *k, keepdim));
    return one(std::move(r));
  };
  return l;
}

Lowering softmaxLowering() {
  Lowering l;
  l.kernel = "softmax";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "self");
    if (!x || !isDeviceFloat(x->dtype) || !isDeviceFloat(node.output()->proto().dtype))
      return "needs f32/f16 input and result";
    auto d = b.find("dim") ? b.find("dim")->intList() : std::nullopt;
    if (!d || d->size() != 1 || x->rank() == 0 || ((*d)[0] != -1 && (*d)[0] != x->rank() - 1))
      return "softmax over a dim other than the last";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor r, softmaxLast(a.ctx(), x, a.outDType()));
    return one(std::move(r));
  };
  return l;
}

//===-- Matrix products -----------------------------------------------===//

std::string sameFloatOperands(const Node &node, const BoundArgs &b,
                              std::initializer_list<const char *> names) {
  DType out = node.output()->proto().dtype;
  if (!isDeviceFloat(out))
    return "result dtype " + std::string(name(out)) + " is not f32/f16";
  for (const char *n : names) {
    const TensorProto *p = protoOf(b, n);
    if (p && p->dtype != out)
      return std::string("operand '") + n + "' is " + std::string(name(p->dtype)) +
             ", not the result's " + std::string(name(out));
  }
  return {};
}

Lowering matmulLowering(const char *lhs, const char *rhs) {
  Lowering l;
  l.kernel = "matmul";
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = sameFloatOperands(node, b, {lhs, rhs});
    if (!r.empty())
      return r;
    const TensorProto *x = protoOf(b, lhs), *y = protoOf(b, rhs);
    if (!x || !y)
      return "operands are not tensors";
    if (std::max(x->rank(), y->rank()) > 6)
      return "more than 4 batch dims";
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor(lhs));
    GRAFT_TRY(DeviceTensor y, a.tensor(rhs));
    bool xVec = x.sizes.size() == 1, yVec = y.sizes.size() == 1;
    if (xVec) {
      GRAFT_TRY(x, reshape(x, {1, x.sizes[0]}));
    }
    if (yVec) {
      GRAFT_TRY(y, reshape(y, {y.sizes[0], 1}));
    }
    GRAFT_TRY(DeviceTensor r, matmul(a.ctx(), x, y));
    std::vector<int64_t> sizes(r.sizes.begin(), r.sizes.end() - 2);
    if (!xVec)
      sizes.push_back(r.sizes[r.sizes.size() - 2]);
    if (!yVec)
      sizes.push_back(r.sizes.back());
    GRAFT_TRY(r, reshape(r, sizes));
    return one(std::move(r));
  };
  return l;
}

Lowering linearLowering() {
  Lowering l;
  l.kernel = "matmul";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = sameFloatOperands(node, b, {"input", "weight", "bias"});
    if (!r.empty())
      return r;
    const TensorProto *w = protoOf(b, "weight");
    const TensorProto *bias = protoOf(b, "bias");
    if (!w || w->rank() != 2)
      return "weight must be 2-D";
    if (bias && bias->rank() != 1)
      return "bias must be 1-D";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(DeviceTensor w, a.tensor("weight"));
    GRAFT_TRY(auto bias, a.optionalTensor("bias"));
    GRAFT_TRY(DeviceTensor r, linear(a.ctx(), x, w, bias ? &*bias : nullptr));
    return one(std::move(r));
  };
  return l;
}

Lowering addmmLowering() {
  Lowering l;
  l.kernel = "matmul";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = sameFloatOperands(node, b, {"self", "mat1", "mat2"});
    if (!r.empty())
      return r;
    for (const char *n : {"alpha", "beta"}) {
      const Argument *x = b.find(n);
      if (x && !x->isNone() && x->number() != 1.0)
        return std::string(n) + " != 1";
    }
    const TensorProto *bias = protoOf(b, "self");
    const TensorProto *m2 = protoOf(b, "mat2");
    if (!bias || !m2 || m2->rank() != 2)
      return "expects 2-D mat2";
    bool rowBias = bias->rank() == 1 || (bias->rank() == 2 && bias->shape[0] == Dim(1));
    if (!rowBias || bias->shape.back() != m2->shape[1])
      return "bias must be [N] or [1, N]";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor bias, a.tensor("self"));
    GRAFT_TRY(DeviceTensor m1, a.tensor("mat1"));
    GRAFT_TRY(DeviceTensor m2, a.tensor("mat2"));
    if (m1.sizes.size() != 2 || m2.sizes.size() != 2 || m1.sizes[1] != m2.sizes[0])
      return a.error("addmm expects [M, K] @ [K, N]");
    // linear() reads the weight as [N, K]: transpose mat2 into that layout.
    GRAFT_TRY(DeviceTensor wt,
              gather(a.ctx(), m2, {m2.sizes[1], m2.sizes[0]}, {1, m2.sizes[1]}, 0));
    GRAFT_TRY(DeviceTensor b1, reshape(bias, {bias.numel()}));
    GRAFT_TRY(DeviceTensor r, linear(a.ctx(), m1, wt, &b1));
    return one(std::move(r));
  };
  return l;
}

//===-- Quantized linears and embeddings ------------------------------===//

std::string requireConstant(const Node &node, const BoundArgs &b, const char *arg) {
  if (!isConstantValue(node, b, arg))
    return std::string("'") + arg + "' must be a constant (weights are prepacked at load time)";
  return {};
}

Lowering q4Lowering(const char *kernel, bool dq8ca) {
  Lowering l;
  l.kernel = kernel;
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = requireConstant(node, b, "weights");
    if (!r.empty())
      return r;
    const char *x = dq8ca ? "input" : "self";
    const TensorProto *xp = protoOf(b, x);
    if (!xp || !isDeviceFloat(xp->dtype) || xp->dtype != node.output()->proto().dtype)
      return "input must be f32/f16 of the result's dtype";
    auto k = xp->shape.empty() ? std::nullopt : xp->shape.back().value();
    if (k && *k % 4 != 0)
      return "in_channels " + std::to_string(*k) + " is not a multiple of 4";
    const TensorProto *bias = protoOf(b, "bias");
    if (bias && bias->dtype != xp->dtype)
      return "bias dtype differs from the input's";
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor(dq8ca ? "input" : "self"));
    GRAFT_TRY(PackedQ4Weight w, a.state().packedQ4(a.value("weights"), true));
    GRAFT_TRY(DeviceTensor scales, a.tensor("weight_scales"));
    GRAFT_TRY(auto bias, a.optionalTensor("bias"));
    int64_t gs = a.integer("group_size").value_or(0);
    if (dq8ca) {
      GRAFT_TRY(DeviceTensor is, a.tensor("input_scales"));
      GRAFT_TRY(DeviceTensor iz, a.tensor("input_zp"));
      GRAFT_TRY(DeviceTensor sums, a.tensor("weight_sums"));
      GRAFT_TRY(DeviceTensor r,
                linearDq8caQ4gsw(a.ctx(), x, is, iz, w, sums, scales, gs, bias ? &*bias : nullptr));
      return one(std::move(r));
    }
    GRAFT_TRY(DeviceTensor r, linearQ4gsw(a.ctx(), x, w, scales, gs, bias ? &*bias : nullptr));
    return one(std::move(r));
  };
  return l;
}

Lowering qcs4wLowering() {
  Lowering l;
  l.kernel = "linear_qcs4w";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = requireConstant(node, b, "weight");
    if (!r.empty())
      return r;
    const TensorProto *xp = protoOf(b, "self");
    if (!xp || !isDeviceFloat(xp->dtype) || xp->dtype != node.output()->proto().dtype)
      return "input must be f32/f16 of the result's dtype";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(PackedQ4Weight w, a.state().packedQ4(a.value("weight"), false));
    GRAFT_TRY(DeviceTensor scales, a.tensor("scales"));
    GRAFT_TRY(DeviceTensor r, linearQcs4w(a.ctx(), x, w, scales));
    return one(std::move(r));
  };
  return l;
}

Lowering int8packLowering() {
  Lowering l;
  l.kernel = "weight_int8pack_mm";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = requireConstant(node, b, "mat2");
    if (!r.empty())
      return r;
    const TensorProto *xp = protoOf(b, "self");
    if (!xp || !isDeviceFloat(xp->dtype))
      return "self must be f32/f16";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(PackedQ8Weight w, a.state().packedQ8(a.value("mat2")));
    GRAFT_TRY(DeviceTensor scales, a.tensor("scales"));
    GRAFT_TRY(DeviceTensor r, weightInt8PackMm(a.ctx(), x, w, scales));
    return one(std::move(r));
  };
  return l;
}

Lowering q8taLowering() {
  Lowering l;
  l.kernel = "linear_q8ta_q8csw";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = requireConstant(node, b, "weights");
    if (!r.empty())
      return r;
    const TensorProto *xp = protoOf(b, "x");
    if (!xp)
      return "x is not a tensor";
    if (!isDeviceFloat(xp->dtype) && deviceElem(xp->dtype) != DeviceElem::I32)
      return "x dtype " + std::string(name(xp->dtype)) + " is unsupported";
    auto k = xp->shape.empty() ? std::nullopt : xp->shape.back().value();
    if (k && *k % 4 != 0)
      return "in_channels " + std::to_string(*k) + " is not a multiple of 4";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("x"));
    GRAFT_TRY(PackedQ8Weight w, a.state().packedQ8(a.value("weights")));
    GRAFT_TRY(DeviceTensor scales, a.tensor("weight_scales"));
    GRAFT_TRY(auto bias, a.optionalTensor("bias"));
    auto s = a.number("input_scale");
    auto zp = a.integer("input_zero_point");
    if (!s || !zp)
      return a.error("input_scale and input_zero_point must be numbers");
    GRAFT_TRY(DeviceTensor r,
              linearQ8taQ8csw(a.ctx(), x, *s, *zp, w, scales, bias ? &*bias : nullptr));
    return one(std::move(r));
  };
  return l;
}

Lowering embeddingQ4Lowering() {
  Lowering l;
  l.kernel = "embedding_q4gsw";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    std::string r = requireConstant(node, b, "weight");
    if (!r.empty())
      return r;
    const Argument *lw = b.find("is_linear_weight");
    if (lw && !lw->isBool())
      return "is_linear_weight must be a literal bool";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(RawBytes w, a.state().rawBytes(a.value("weight")));
    GRAFT_TRY(DeviceTensor scales, a.tensor("weight_scales"));
    GRAFT_TRY(DeviceTensor idx, a.tensor("indices"));
    bool linearWeight = a.integer("is_linear_weight").value_or(0) != 0;
    GRAFT_TRY(
        DeviceTensor r,
        embeddingQ4gsw(a.ctx(), w, scales, a.integer("group_size").value_or(0), idx, linearWeight));
    return one(std::move(r));
  };
  return l;
}

Lowering embeddingLowering() {
  Lowering l;
  l.kernel = "embedding";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *w = protoOf(b, "weight");
    if (!w || w->rank() != 2)
      return "weight must be 2-D";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor w, a.tensor("weight"));
    GRAFT_TRY(DeviceTensor idx, a.tensor("indices"));
    GRAFT_TRY(DeviceTensor r, embedding(a.ctx(), w, idx));
    return one(std::move(r));
  };
  return l;
}

Lowering rmsNormLowering() {
  Lowering l;
  l.kernel = "rms_norm";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "x");
    if (!x || !isDeviceFloat(x->dtype) || x->dtype != node.output()->proto().dtype)
      return "x must be f32/f16";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("x"));
    GRAFT_TRY(DeviceTensor w, a.tensor("weight"));
    GRAFT_TRY(DeviceTensor r, rmsNorm(a.ctx(), x, w, a.number("eps").value_or(0.0)));
    return one(std::move(r));
  };
  return l;
}

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

//===-- torchao affine quantization -------------------------------------===//

/// The contiguous-group check on prototypes; symbolic leading dims are fine
/// when the block covers only whole trailing dims.
std::string blockReason(const BoundArgs &b, const TensorProto *x) {
  const Argument *bs = b.find("block_size");
  auto block = bs ? bs->intList() : std::nullopt;
  if (!block || !x)
    return "block_size must be a literal list";
  if (static_cast<int64_t>(block->size()) != x->rank())
    return "block_size rank differs from the input's";
  std::vector<int64_t> sizes;
  for (std::size_t i = 0; i < block->size(); ++i) {
    auto v = x->shape[i].value();
    // A symbolic dim only works with block 1 there (it is not inside a group).
    if (!v && (*block)[i] != 1)
      return "a block spans a symbolic dim";
    sizes.push_back(v ? *v : 1);
  }
  if (!contiguousGroupSize(*block, sizes))
    return "blocks are not contiguous runs of memory (block_size [1, ..., 1, b, whole dims...])";
  return {};
}

std::string legacyDomainReason(const BoundArgs &b) {
  if (const Argument *d = b.find("zero_point_domain"))
    if (d->isString() && d->string() != "INT" && d->string() != "NONE")
      return "zero_point_domain " + d->string() + " is not supported on the device";
  return {};
}

Expected<int64_t> groupSizeOf(NodeArgs &a, const std::vector<int64_t> &sizes) {
  auto block = a.intList("block_size");
  if (!block)
    return a.error("block_size must be a list of ints");
  auto g = contiguousGroupSize(*block, sizes);
  if (!g)
    return a.error("block_size does not describe contiguous groups of the input");
  return *g;
}

std::pair<int64_t, int64_t> qrange(NodeArgs &a, DType d) {
  auto bounds = integerBounds(d).value_or(std::make_pair<int64_t, int64_t>(-128, 127));
  return {a.integer("quant_min").value_or(bounds.first),
          a.integer("quant_max").value_or(bounds.second)};
}

Lowering chooseQParamsLowering() {
  Lowering l;
  l.kernel = "choose_qparams_affine";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x || !isDeviceFloat(x->dtype))
      return "input must be f32/f16";
    std::string r = blockReason(b, x);
    if (!r.empty())
      return r;
    const Argument *m = b.find("mapping_type");
    if (!m || !m->isString() ||
        (m->string() != "ASYMMETRIC" && m->string() != "SYMMETRIC" &&
         m->string() != "SYMMETRIC_NO_CLIPPING_ERR"))
      return "mapping_type must be ASYMMETRIC, SYMMETRIC or SYMMETRIC_NO_CLIPPING_ERR";
    if (b.isLegacy())
      return "the legacy (zero_point_domain) signature";
    if (!isDeviceFloat(node.output(0)->proto().dtype) ||
        deviceElem(node.output(1)->proto().dtype) != DeviceElem::I32)
      return "scale must be f32/f16 and the zero point an integer";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(int64_t gs, groupSizeOf(a, x.sizes));
    const std::string &m = a.arg("mapping_type").string();
    MappingType mt = m == "ASYMMETRIC"  ? MappingType::Asymmetric
                     : m == "SYMMETRIC" ? MappingType::Symmetric
                                        : MappingType::SymmetricNoClippingErr;
    DType target = a.arg("target_dtype").isDType() ? a.arg("target_dtype").dtype() : DType::I8;
    auto [qmin, qmax] = qrange(a, target);
    double eps;
    if (auto e = a.number("eps"))
      eps = *e;
    else
      eps = x.dtype == DType::F16 ? 6.103515625e-05 : 1.1754943508222875e-38;
    // The result shape: the node's prototype with symbols resolved from the
    // input (block dims reduce; keepdim keeps them as 1).
    auto block = *a.intList("block_size");
    bool keepdim = a.integer("keepdim").value_or(0) != 0;
    std::vector<int64_t> shape;
    for (std::size_t i = 0; i < x.sizes.size(); ++i) {
      int64_t bsz = block[i] < 0 ? x.sizes[i] : block[i];
      int64_t n = x.sizes[i] / std::max<int64_t>(bsz, 1);
      if (keepdim || bsz == 1)
        shape.push_back(n);
      else if (bsz != x.sizes[i])
        shape.push_back(n);
    }
    GRAFT_TRY(QParams q, chooseQParamsAffine(a.ctx(), x, gs, mt, qmin, qmax, eps, a.outDType(0),
                                             a.outDType(1), shape));
    return std::vector<LoweredValue>{std::move(q.scale), std::move(q.zeroPoint)};
  };
  return l;
}

Lowering quantizeLowering(bool quantize) {
  Lowering l;
  l.kernel = quantize ? "quantize_affine" : "dequantize_affine";
  l.check = [=](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x)
      return "input is not a tensor";
    if (quantize ? !isDeviceFloat(x->dtype) : deviceElem(x->dtype) != DeviceElem::I32)
      return "input dtype " + std::string(name(x->dtype)) + " is unsupported";
    DType out = node.output()->proto().dtype;
    if (quantize ? deviceElem(out) != DeviceElem::I32 : !isDeviceFloat(out))
      return "result dtype " + std::string(name(out)) + " is unsupported";
    std::string r = blockReason(b, x);
    if (!r.empty())
      return r;
    r = legacyDomainReason(b);
    if (!r.empty())
      return r;
    const TensorProto *s = protoOf(b, "scale");
    if (!s || !isDeviceFloat(s->dtype))
      return "scale must be f32/f16";
    const TensorProto *z = protoOf(b, "zero_point");
    if (z && deviceElem(z->dtype) != DeviceElem::I32)
      return "zero_point must be an integer tensor (a float zero point is not supported)";
    return {};
  };
  l.run = [=](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("input"));
    GRAFT_TRY(int64_t gs, groupSizeOf(a, x.sizes));
    GRAFT_TRY(DeviceTensor s, a.tensor("scale"));
    GRAFT_TRY(auto zp, a.optionalTensor("zero_point"));
    bool noZero = false;
    if (const Argument *d = a.bound().find("zero_point_domain"))
      noZero = d->isString() && d->string() == "NONE";
    const DeviceTensor *z = (zp && zp->numel() > 0 && !noZero) ? &*zp : nullptr;
    if (quantize) {
      DType out = a.outDType();
      auto [qmin, qmax] =
          qrange(a, a.arg("output_dtype").isDType() ? a.arg("output_dtype").dtype() : out);
      GRAFT_TRY(DeviceTensor r, quantizeAffine(a.ctx(), x, gs, s, z, qmin, qmax, out));
      return one(std::move(r));
    }
    GRAFT_TRY(DeviceTensor r, dequantizeAffine(a.ctx(), x, gs, s, z, a.outDType()));
    return one(std::move(r));
  };
  return l;
}

/// quantized_decomposed.dequantize_per_channel that no fusion rule consumed
/// (dequantize_per_channel.glsl). The reference promotes q - zp (integer)
/// times the scales to the scales' dtype, so the device needs f32/f16 scales;
/// f64 scales (q * s rounded once from f64) and bf16 stay on the CPU.
Lowering dequantizePerChannelLowering() {
  Lowering l;
  l.kernel = "dequantize_per_channel";
  l.check = [](const Node &node, const BoundArgs &b, const DeviceInfo &) -> std::string {
    const TensorProto *x = protoOf(b, "input");
    if (!x)
      return "input is not a tensor";
    // q - zp is an int32 subtraction on the device (int64 in torch): exact
    // for 8- and 16-bit inputs with int32 zero points.
    if (x->dtype != DType::I8 && x->dtype != DType::U8 && x->dtype != DType::I16 &&
        x->dtype != DType::U16)
      return "input dtype " + std::string(name(x->dtype)) +
             " is unsupported (8- or 16-bit integers only)";
    const TensorProto *s = protoOf(b, "scales");
    if (!s || !isDeviceFloat(s->dtype))
      return "scales must be f32/f16" +
             (s ? ", got " + std::string(name(s->dtype)) : std::string());
    const TensorProto *z = protoOf(b, "zero_points");
    if (z && deviceElem(z->dtype) != DeviceElem::I32)
      return "zero_points must be an integer tensor, got " + std::string(name(z->dtype));
    const Argument *za = b.find("zero_points");
    if (!za || (!z && !za->isNone()))
      return "zero_points must be a tensor or None";
    DType out = node.output()->proto().dtype;
    if (!isDeviceFloat(out))
      return "result dtype " + std::string(name(out)) + " is unsupported";
    const Argument *axis = b.find("axis");
    if (!axis || !axis->isInt())
      return "axis must be a literal int";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor q, a.tensor("input"));
    GRAFT_TRY(DeviceTensor s, a.tensor("scales"));
    GRAFT_TRY(auto zp, a.optionalTensor("zero_points"));
    GRAFT_TRY(DeviceTensor r, dequantizePerChannel(a.ctx(), q, s, zp ? &*zp : nullptr,
                                                   *a.integer("axis"), a.outDType()));
    return one(std::move(r));
  };
  return l;
}

//===-- Views, copies, factories ------------------------------------------===//

/// The view op a target (or its *_copy variant) computes.
std::string viewKernelTarget(const std::string &target) {
  std::string t = target;
  auto pos = t.find("_copy.");
  if (pos != std::string::npos && t.rfind("aten._to_copy", 0) != 0 &&
      t.rfind("aten._reshape_copy", 0) != 0)
    t.erase(pos, 5);
  if (t == "aten._reshape_copy.default" || t == "aten._unsafe_view.default")
    t = "aten.reshape.default";
  return t;
}

Lowering viewLowering() {
  Lowering l;
  l.kernel = "view";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    if (!KernelRegistry::builtin().find(viewKernelTarget(node.target())))
      return "no view kernel for " + node.target();
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    // Shapes only: run the reference view kernel on a data-free tensor. An
    // operand that is itself a deferred view (State::deferredViews) enters
    // with its strides and offset into its base buffer, so a chain of views
    // composes into one gather, or none: transpose(transpose(k_cache)), how
    // ExecuTorch's custom KV cache hands its caches to custom_sdpa, is the
    // cache buffer itself.
    const BoundArgs &b = a.bound();
    GraphExecutor::State &st = a.state();
    auto forEachValue = [&](auto &&fn) {
      for (std::size_t i = 0; i < b.size(); ++i)
        b.at(i).forEachValue(fn);
    };
    const Value *input = nullptr;
    forEachValue([&](Value *v) {
      if (v->isTensor() && !input)
        input = v;
    });
    if (!input)
      return a.error("a view needs a tensor operand");
    auto runView = [&](const Tensor &meta) -> Expected<Tensor> {
      std::vector<RuntimeValue> resolved;
      forEachValue([&](Value *v) {
        if (v->isTensor()) {
          resolved.emplace_back(meta);
          return;
        }
        auto it = st.env.find(v);
        resolved.push_back(it == st.env.end() ? RuntimeValue(int64_t(0)) : it->second.scalar);
      });
      const Kernel *k = KernelRegistry::builtin().find(viewKernelTarget(a.node().target()));
      if (!k)
        return a.error("no view kernel for " + a.node().target());
      KernelArgs kargs(b, resolved, a.node().name());
      GRAFT_TRY(auto outs, (*k)(kargs));
      if (outs.size() != 1 || !std::holds_alternative<Tensor>(outs[0]))
        return Diagnostic::internal("view kernel of " + a.node().target() +
                                    " did not return one tensor");
      return std::get<Tensor>(outs[0]);
    };
    DeviceTensor src;
    std::optional<Tensor> view;
    if (auto d = st.deferredViews.find(input); d != st.deferredViews.end()) {
      const GraphExecutor::State::DeferredView &dv = d->second;
      Tensor meta = metadataTensor(dv.base.dtype, dv.sizes, dv.offset, dv.strides);
      auto composed = runView(meta);
      if (composed.ok() && composed->storage() == meta.storage()) {
        src = dv.base;
        view = std::move(*composed);
      } else {
        // A view op that had to copy (reshape of a non-contiguous view) or
        // rejects the strides (view): materialize the operand, then view it.
        GRAFT_TRY(src, gather(a.ctx(), dv.base, dv.sizes, dv.strides, dv.offset));
        GRAFT_TRY(Tensor v, runView(metadataTensor(src.dtype, src.sizes)));
        view = std::move(v);
      }
    }
    if (!view) {
      GRAFT_TRY(src, st.deviceTensor(input));
      GRAFT_TRY(Tensor v, runView(metadataTensor(src.dtype, src.sizes)));
      view = std::move(v);
    }
    if (view->isContiguous() && view->offset() == 0) {
      // A reshape, or a leading prefix of the buffer (slice of dim 0): alias.
      DeviceTensor r = src;
      r.sizes = view->sizes();
      return one(std::move(r));
    }
    if (st.deferrable(a.node())) {
      // Only views read this value: keep it as strides into src.
      st.deferredViews[a.node().output()] = {src, view->sizes(), view->strides(), view->offset()};
      return one(src);
    }
    GRAFT_TRY(DeviceTensor r, gather(a.ctx(), src, view->sizes(), view->strides(), view->offset()));
    return one(std::move(r));
  };
  return l;
}

Lowering copyLowering() {
  Lowering l;
  l.kernel = "copy";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(DeviceTensor x, a.tensor("self"));
    GRAFT_TRY(DeviceTensor r, cast(a.ctx(), x, a.outDType()));
    if (r.buffer == x.buffer) {
      // clone must not alias: an explicit copy (values are immutable here,
      // but a fresh buffer keeps ownership simple).
      std::vector<int64_t> st(x.sizes.size(), 1);
      for (int64_t i = static_cast<int64_t>(x.sizes.size()) - 2; i >= 0; --i)
        st[static_cast<std::size_t>(i)] =
            st[static_cast<std::size_t>(i + 1)] * x.sizes[static_cast<std::size_t>(i + 1)];
      if (x.sizes.size() <= 8) {
        GRAFT_TRY(r, gather(a.ctx(), x, x.sizes, st, 0));
      }
    }
    return one(std::move(r));
  };
  return l;
}

Lowering catLowering() {
  Lowering l;
  l.kernel = "copy";
  l.check = [](const Node &node, const BoundArgs &, const DeviceInfo &) -> std::string {
    return rankReason(node, 8);
  };
  l.run = [](NodeArgs &a) -> Results {
    GRAFT_TRY(std::vector<DeviceTensor> ts, a.tensorList("tensors"));
    DType out = a.outDType();
    std::vector<DeviceTensor> parts;
    for (DeviceTensor &t : ts) {
      // Legacy 1-D empty tensors are skipped, as torch.cat does.
      if (t.sizes.size() == 1 && t.sizes[0] == 0)
        continue;
      GRAFT_TRY(DeviceTensor c, asDType(a.ctx(), t, out));
      parts.push_back(std::move(c));
    }
    if (parts.empty())
      return a.error("cat of only empty tensors");
    int64_t rank = static_cast<int64_t>(parts[0].sizes.size());
    int64_t dim = a.integer("dim").value_or(0);
    if (dim < -rank || dim >= rank)
      return a.error("cat dim " + std::to_string(dim) + " is out of range");
    if (dim < 0)
      dim += rank;
    GRAFT_TRY(DeviceTensor r, cat(a.ctx(), parts, dim));
    return one(std::move(r));
  };
  return l;
}

/// Ops whose result is computed on the host from arguments alone (no tensor
/// data): factories (full) are uploaded, shape queries and assertions
/// produce scalars.
Lowering hostLowering(const char *kernel, bool readsTensorData, bool upload) {
  Lowering l;
  l.kernel = kernel;
  l.placement = Placement::Host;
  l.run = [=](NodeArgs &a) -> Results {
    const BoundArgs &b = a.bound();
    std::vector<RuntimeValue> resolved;
    Status status;
    for (std::size_t i = 0; i < b.size(); ++i)
      b.at(i).forEachValue([&](Value *v) {
        if (!status.ok())
          return;
        if (v->isTensor()) {
          if (readsTensorData) {
            auto t = a.state().hostTensor(v);
            if (!t.ok()) {
              status = t.takeFailure();
              return;
            }
            resolved.emplace_back(*t);
          } else {
            auto t = a.state().deviceTensor(v);
            if (!t.ok()) {
              status = t.takeFailure();
              return;
            }
            resolved.emplace_back(metadataTensor(t->dtype, t->sizes));
          }
        } else {
          auto it = a.state().env.find(v);
          if (it == a.state().env.end()) {
            status = Diagnostic::internal("operand %" + v->name() + " is undefined");
            return;
          }
          resolved.push_back(it->second.scalar);
        }
      });
    GRAFT_CHECK_OK(status);
    GRAFT_TRY(auto outs, runReferenceKernel(a.node(), b, resolved));
    std::vector<LoweredValue> r;
    for (RuntimeValue &v : outs) {
      if (Tensor *t = std::get_if<Tensor>(&v)) {
        if (upload) {
          GRAFT_TRY(DeviceTensor d, uploadTensor(a.ctx(), *t));
          r.emplace_back(std::move(d));
        } else {
          r.emplace_back(*t);
        }
      } else if (int64_t *i = std::get_if<int64_t>(&v)) {
        r.emplace_back(*i);
      } else if (double *d = std::get_if<double>(&v)) {
        r.emplace_back(*d);
      } else {
        r.emplace_back(std::get<bool>(v));
      }
    }
    return r;
  };
  return l;
}

/// _local_scalar_dense / select_as_symint: read one element back (the
/// host-side scalar read ExecuTorch's select_as_symint does), so a dynamic
/// slice position stays inside the Vulkan program.
Lowering scalarReadLowering(bool select) {
  Lowering l = hostLowering("host_scalar_read", true, false);
  if (select) {
    l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
      const TensorProto *x = protoOf(b, "x");
      if (!x || deviceElem(x->dtype) != DeviceElem::I32)
        return "x must be an integer tensor";
      return {};
    };
    // Gather the one selected element on the device, then read 4 bytes.
    l.run = [](NodeArgs &a) -> Results {
      GRAFT_TRY(DeviceTensor x, a.tensor("x"));
      auto dim = a.integer("dim"), index = a.integer("index");
      if (!dim || !index)
        return a.error("dim and index must be ints");
      int64_t r = static_cast<int64_t>(x.sizes.size());
      int64_t d = *dim < 0 ? *dim + r : *dim;
      if (d < 0 || d >= r)
        return a.error("select dim " + std::to_string(*dim) + " is out of range");
      int64_t size = x.sizes[static_cast<std::size_t>(d)];
      int64_t i = *index < 0 ? *index + size : *index;
      if (i < 0 || i >= size)
        return a.error("select: index " + std::to_string(*index) + " is out of range for dim " +
                       std::to_string(*dim) + " of size " + std::to_string(size));
      if (x.numel() / size != 1)
        return a.error("the selected slice must be a single integer element");
      int64_t stride = 1;
      for (int64_t k = d + 1; k < r; ++k)
        stride *= x.sizes[static_cast<std::size_t>(k)];
      // A user input (input_pos) is still on the host: read it there, so a
      // decode step's position costs no flush of the recorded work.
      if (auto it = a.state().env.find(a.value("x"));
          it != a.state().env.end() && it->second.host.defined())
        return std::vector<LoweredValue>{it->second.host.contiguous().getInt(i * stride)};
      int32_t v = 0;
      GRAFT_CHECK_OK(a.ctx().download(*x.buffer, &v, 4, static_cast<std::size_t>(i * stride) * 4));
      return std::vector<LoweredValue>{int64_t(v)};
    };
  }
  return l;
}

Lowering sdpaLowering() {
  Lowering l;
  l.kernel = "sdpa";
  l.check = [](const Node &, const BoundArgs &b, const DeviceInfo &) -> std::string {
    for (const char *n : {"query", "key", "value"}) {
      const TensorProto *p = protoOf(b, n);
      if (!p || !isDeviceFloat(p->dtype) || p->rank() < 3 || p->rank() > 6)
        return std::string(n) + " must be f32/f16 with 3 to 6 dims";
    }
    const Argument *drop = b.find("dropout_p");
    if (drop && drop->number().value_or(0.0) != 0.0)
      return "dropout_p != 0";
    const TensorProto *mask = protoOf(b, "attn_mask");
    if (mask && mask->dtype != DType::Bool && !isDeviceFloat(mask->dtype))
      return "attn_mask dtype " + std::string(name(mask->dtype)) + " is unsupported";
    return {};
  };
  l.run = [](NodeArgs &a) -> Results {
    Context &ctx = a.ctx();
    GRAFT_TRY(DeviceTensor q, a.tensor("query"));
    GRAFT_TRY(DeviceTensor k, a.tensor("key"));
    GRAFT_TRY(DeviceTensor v, a.tensor("value"));
    DType origin = q.dtype;
    if (k.dtype != origin || v.dtype != origin)
      return a.error("query, key and value must have the same dtype");
    bool causal = a.integer("is_causal").value_or(0) != 0;
    if (causal && !a.isNone("attn_mask"))
      return a.error("explicit attn_mask should not be set when is_causal=True");
    // The attention mask as the reference adds it: f32, bool as 0 / -inf.
    auto additiveMask = [&]() -> Expected<DeviceTensor> {
      const Value *mv = a.value("attn_mask");
      if (const Tensor *c = a.state().constantData(mv); c && mv->proto().dtype == DType::Bool) {
        Tensor add = Tensor::empty(DType::F32, c->sizes());
        for (int64_t i = 0, n = c->numel(); i < n; ++i)
          add.setDouble(i, c->getInt(i) ? 0.0 : -std::numeric_limits<double>::infinity());
        return uploadTensor(ctx, add);
      }
      GRAFT_TRY(DeviceTensor m, a.tensor("attn_mask"));
      if (mv->proto().dtype != DType::Bool)
        return asDType(ctx, m, DType::F32);
      // A mask computed at run time (a KV cache's tril rows narrowed at the
      // position): where(mask, 0, -inf) on the device.
      GRAFT_TRY(DeviceTensor zero, uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {}, {0.0})));
      GRAFT_TRY(DeviceTensor ninf,
                uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {},
                                                      {-std::numeric_limits<double>::infinity()})));
      return where(ctx, m, zero, ninf);
    };
    // 4-D operands (the Llama attention, a KV cache's [B, Hkv, M, D]): one
    // kernel reads q, k and v in place (sdpa_kv.glsl, the same operations in
    // the same order), with no transposed or repeated copy of k and v.
    if (q.sizes.size() == 4 && k.sizes.size() == 4 && k.sizes == v.sizes &&
        k.sizes[0] == q.sizes[0] && k.sizes[3] == q.sizes[3] && k.sizes[1] > 0) {
      int64_t hq = q.sizes[1], hk = k.sizes[1], L = q.sizes[2], S = k.sizes[2];
      bool gqa = a.integer("enable_gqa").value_or(0) != 0;
      std::optional<DeviceTensor> mask;
      bool maskFits = true;
      if (!a.isNone("attn_mask")) {
        GRAFT_TRY(DeviceTensor m, additiveMask());
        // Only a mask of exactly [..., L, S] with leading ones: the kernel
        // reads mask[i, j].
        maskFits = m.sizes.size() >= 2 && m.sizes[m.sizes.size() - 2] == L && m.sizes.back() == S &&
                   m.numel() == L * S;
        mask = std::move(m);
      }
      if ((hq == hk || (gqa && hq % hk == 0)) && maskFits) {
        AttentionOptions o;
        o.keys = S;
        o.causal = causal;
        o.mask = mask ? &*mask : nullptr;
        o.scale = a.number("scale");
        o.headsFirst = o.kvHeadsFirst = true;
        GRAFT_TRY(DeviceTensor out, attention(ctx, q, k, v, o));
        return one(std::move(out));
      }
    }
    // ATen's math reference: upcast, scale q and k^T by sqrt(scale) each.
    GRAFT_TRY(q, asDType(ctx, q, DType::F32));
    GRAFT_TRY(k, asDType(ctx, k, DType::F32));
    GRAFT_TRY(v, asDType(ctx, v, DType::F32));
    if (a.integer("enable_gqa").value_or(0) != 0 && q.sizes.size() >= 3 && k.sizes.size() >= 3) {
      // repeat_interleave of the kv heads on dim -3, as a strided gather.
      auto repeat = [&](const DeviceTensor &t, int64_t hq) -> Expected<DeviceTensor> {
        std::size_t r = t.sizes.size();
        int64_t hk = t.sizes[r - 3];
        if (hk == 0 || hq % hk != 0)
          return a.error("enable_gqa: query heads " + std::to_string(hq) +
                         " are not a multiple of key heads " + std::to_string(hk));
        if (hq == hk)
          return t;
        int64_t rep = hq / hk, S = t.sizes[r - 2], E = t.sizes[r - 1];
        std::vector<int64_t> sizes(t.sizes.begin(), t.sizes.end() - 3), strides;
        int64_t inner = hk * S * E, outer = 1;
        for (int64_t s : sizes)
          outer *= s;
        (void)outer;
        std::vector<int64_t> lead(sizes.size());
        int64_t acc = inner;
        for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
          lead[static_cast<std::size_t>(i)] = acc;
          acc *= sizes[static_cast<std::size_t>(i)];
        }
        sizes.insert(sizes.end(), {hk, rep, S, E});
        strides = lead;
        strides.insert(strides.end(), {S * E, 0, E, 1});
        GRAFT_TRY(DeviceTensor g, gather(ctx, t, sizes, strides, 0));
        std::vector<int64_t> out(t.sizes.begin(), t.sizes.end() - 3);
        out.insert(out.end(), {hq, S, E});
        return reshape(g, out);
      };
      int64_t hq = q.sizes[q.sizes.size() - 3];
      GRAFT_TRY(k, repeat(k, hq));
      GRAFT_TRY(v, repeat(v, hq));
    }
    int64_t E = q.sizes.back();
    auto scale = a.number("scale");
    bool negative = scale && *scale < 0;
    double s = scale ? std::abs(*scale) : 1.0 / std::sqrt(static_cast<double>(E));
    double sf = std::sqrt(s);
    GRAFT_TRY(DeviceTensor qs, binaryScalar(ctx, BinaryKind::Mul, q, negative ? 0.0 - sf : sf));
    std::size_t kr = k.sizes.size();
    std::vector<int64_t> ktSizes = k.sizes, ktStrides(kr, 1);
    for (int64_t i = static_cast<int64_t>(kr) - 2; i >= 0; --i)
      ktStrides[static_cast<std::size_t>(i)] =
          ktStrides[static_cast<std::size_t>(i + 1)] * k.sizes[static_cast<std::size_t>(i + 1)];
    std::swap(ktSizes[kr - 1], ktSizes[kr - 2]);
    std::swap(ktStrides[kr - 1], ktStrides[kr - 2]);
    GRAFT_TRY(DeviceTensor kt, gather(ctx, k, ktSizes, ktStrides, 0));
    GRAFT_TRY(DeviceTensor ks, binaryScalar(ctx, BinaryKind::Mul, kt, sf));
    GRAFT_TRY(DeviceTensor attn, matmul(ctx, qs, ks));
    int64_t L = q.sizes[q.sizes.size() - 2], S = k.sizes[kr - 2];
    if (causal) {
      std::vector<double> m(static_cast<std::size_t>(L * S));
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j)
          m[static_cast<std::size_t>(i * S + j)] =
              j <= i ? 0.0 : -std::numeric_limits<double>::infinity();
      GRAFT_TRY(DeviceTensor mask, uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {L, S}, m)));
      GRAFT_TRY(attn, binary(ctx, BinaryKind::Add, attn, mask));
    } else if (!a.isNone("attn_mask")) {
      GRAFT_TRY(DeviceTensor mask, additiveMask());
      GRAFT_TRY(attn, binary(ctx, BinaryKind::Add, attn, mask));
    }
    GRAFT_TRY(DeviceTensor p, softmaxLast(ctx, attn, DType::F32, /*safe=*/true));
    GRAFT_TRY(DeviceTensor out, matmul(ctx, p, v));
    GRAFT_TRY(out, asDType(ctx, out, origin));
    return one(std::move(out));
  };
  return l;
}

std::map<std::string, Lowering, std::less<>> buildLowerings() {
  std::map<std::string, Lowering, std::less<>> m;
  for (const char *ov : {"Tensor", "Scalar"}) {
    std::string o(ov);
    bool scalar = o == "Scalar";
    m["aten.add." + o] = binaryLowering(BinaryKind::Add, scalar);
    m["aten.sub." + o] = binaryLowering(BinaryKind::Sub, scalar);
    m["aten.mul." + o] = binaryLowering(BinaryKind::Mul, scalar);
    m["aten.div." + o] = binaryLowering(BinaryKind::Div, scalar);
  }
  m["aten.maximum.default"] = binaryLowering(BinaryKind::Maximum, false);
  m["aten.minimum.default"] = binaryLowering(BinaryKind::Minimum, false);
  m["aten.pow.Tensor_Scalar"] = binaryLowering(BinaryKind::Pow, true, "exponent");
  m["aten.neg.default"] = unaryLowering(UnaryKind::Neg);
  m["aten.abs.default"] = unaryLowering(UnaryKind::Abs);
  m["aten.relu.default"] = unaryLowering(UnaryKind::Relu);
  m["aten.sigmoid.default"] = unaryLowering(UnaryKind::Sigmoid);
  m["aten.silu.default"] = unaryLowering(UnaryKind::Silu);
  m["aten.gelu.default"] = unaryLowering(UnaryKind::Gelu);
  m["aten.rsqrt.default"] = unaryLowering(UnaryKind::Rsqrt);
  m["aten.sqrt.default"] = unaryLowering(UnaryKind::Sqrt);
  m["aten.exp.default"] = unaryLowering(UnaryKind::Exp);
  m["aten.reciprocal.default"] = unaryLowering(UnaryKind::Reciprocal);
  m["aten.clamp.default"] = clampLowering();
  m["aten.where.self"] = whereLowering();
  m["aten.sum.dim_IntList"] = reduceLowering(ReduceKind::Sum, "reduce_sum");
  m["aten.mean.dim"] = reduceLowering(ReduceKind::Mean, "reduce_mean");
  m["aten.amax.default"] = reduceLowering(ReduceKind::Amax, "reduce_amax");
  m["aten.amin.default"] = reduceLowering(ReduceKind::Amin, "reduce_amin");
  m["aten.softmax.int"] = softmaxLowering();
  m["aten._softmax.default"] = softmaxLowering();
  m["aten.linear.default"] = linearLowering();
  m["aten.mm.default"] = matmulLowering("self", "mat2");
  m["aten.bmm.default"] = matmulLowering("self", "mat2");
  m["aten.matmul.default"] = matmulLowering("self", "other");
  m["aten.addmm.default"] = addmmLowering();
  m["aten._weight_int8pack_mm.default"] = int8packLowering();
  m["aten.embedding.default"] = embeddingLowering();
  m["aten.scaled_dot_product_attention.default"] = sdpaLowering();
  for (const char *v : {"aten.t.default",
                        "aten.transpose.int",
                        "aten.permute.default",
                        "aten.view.default",
                        "aten.reshape.default",
                        "aten._unsafe_view.default",
                        "aten.unsqueeze.default",
                        "aten.squeeze.default",
                        "aten.squeeze.dim",
                        "aten.squeeze.dims",
                        "aten.expand.default",
                        "aten.slice.Tensor",
                        "aten.select.int",
                        "aten.alias.default",
                        "aten.t_copy.default",
                        "aten.transpose_copy.int",
                        "aten.permute_copy.default",
                        "aten.view_copy.default",
                        "aten.unsqueeze_copy.default",
                        "aten.squeeze_copy.dims",
                        "aten.squeeze_copy.dim",
                        "aten.squeeze_copy.default",
                        "aten.expand_copy.default",
                        "aten.slice_copy.Tensor",
                        "aten.select_copy.int",
                        "aten._reshape_copy.default"})
    m[v] = viewLowering();
  m["aten.cat.default"] = catLowering();
  m["aten.clone.default"] = copyLowering();
  m["aten._to_copy.default"] = copyLowering();
  m["aten.to.dtype"] = copyLowering();
  m["dim_order_ops._to_dim_order_copy.default"] = copyLowering();
  m["aten.full.default"] = hostLowering("host_full", false, true);
  m["aten.sym_size.int"] = hostLowering("host", false, false);
  m["aten.sym_numel.default"] = hostLowering("host", false, false);
  m["aten.sym_constrain_range_for_size.default"] = hostLowering("host", false, false);
  m["aten.sym_constrain_range.default"] = hostLowering("host", false, false);
  m["aten._assert_scalar.default"] = hostLowering("host", false, false);
  // Python sym arithmetic on host scalars (engine/ops/sym.yaml), run by the
  // reference kernels: the narrow end u0 + seqlen stays in the program.
  for (const char *t :
       {"operator.add", "operator.sub", "operator.mul", "operator.floordiv", "operator.mod",
        "operator.neg", "torch.sym_max", "torch.sym_min", "operator.eq", "operator.ne",
        "operator.lt", "operator.le", "operator.gt", "operator.ge"})
    m[t] = hostLowering("host", false, false);
  m["aten._local_scalar_dense.default"] = scalarReadLowering(false);
  m["et_vk.select_as_symint.default"] = scalarReadLowering(true);
  m["et_vk.linear_q4gsw.default"] = q4Lowering("linear_q4gsw", false);
  m["et_vk.linear_dq8ca_q4gsw.default"] = q4Lowering("linear_dq8ca_q4gsw", true);
  m["et_vk.linear_qcs4w.default"] = qcs4wLowering();
  m["et_vk.linear_q8ta_q8csw.default"] = q8taLowering();
  m["et_vk.embedding_q4gsw.default"] = embeddingQ4Lowering();
  m["et_vk.rms_norm.default"] = rmsNormLowering();
  m["et_vk.apply_rotary_emb.default"] = rotaryLowering();
  m["torchao.choose_qparams_affine.default"] = chooseQParamsLowering();
  m["torchao.quantize_affine.default"] = quantizeLowering(true);
  m["torchao.dequantize_affine.default"] = quantizeLowering(false);
  m["quantized_decomposed.dequantize_per_channel.default"] = dequantizePerChannelLowering();
  // Factories of the KV-cache export's indices (arange(seq_len) + start_pos):
  // computed on the host from per-call scalars and uploaded.
  m["aten.arange.default"] = hostLowering("host_arange", false, true);
  m["aten.arange.start"] = hostLowering("host_arange", false, true);
  m["aten.arange.start_step"] = hostLowering("host_arange", false, true);
  m["aten.ones.default"] = hostLowering("host_full", false, true);
  m["aten.zeros.default"] = hostLowering("host_full", false, true);
  m["aten.scalar_tensor.default"] = hostLowering("host_full", false, true);
  addKvCacheLowerings(m);
  addMaskLowerings(m);
  return m;
}

} // namespace

const std::map<std::string, Lowering, std::less<>> &allLowerings() {
  static const auto table = buildLowerings();
  return table;
}

const TensorProto *protoOf(const BoundArgs &b, std::string_view name) {
  const Argument *a = b.find(name);
  if (!a || !a->isValue() || !a->value()->isTensor())
    return nullptr;
  return &a->value()->proto();
}

const Lowering *findLowering(std::string_view target) {
  const auto &t = allLowerings();
  auto it = t.find(target);
  return it == t.end() ? nullptr : &it->second;
}

} // namespace graft::vk
