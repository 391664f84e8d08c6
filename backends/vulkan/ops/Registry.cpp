//===- Registry.cpp - The op -> lowering table and the support queries ---===//
//
// The table every op family fills (Lowering.h), the checks the families
// share, and the support interface (OpSupport.h) the partitioner and the
// compiler ask: a node runs on the device when its family has a lowering
// for its target, every tensor it touches has a device representation and
// the lowering's check passes. Semantics follow the reference interpreter:
// type promotion comes from the node's declared result dtype (operands are
// converted to it first), scalars follow docs/numerics.md's rules for
// reduced-precision dtypes.
//
//===----------------------------------------------------------------------===//
#include "Lowering.h"

namespace graft::vk {

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

std::string perTokenScalesReason(const BoundArgs &b) {
  const TensorProto *sp = protoOf(b, "input_scales");
  if (sp && !isDeviceFloat(sp->dtype) && sp->dtype != DType::F64)
    return "input_scales must be f32/f16/f64, got " + std::string(name(sp->dtype));
  return {};
}

std::string requireConstant(const Node &node, const BoundArgs &b, const char *arg) {
  if (!isConstantValue(node, b, arg))
    return std::string("'") + arg + "' must be a constant (weights are prepacked at load time)";
  return {};
}

std::string intArgReason(const BoundArgs &b, const char *name) {
  const Argument *a = b.find(name);
  if (!a || !(a->isInt() || (a->isValue() && a->value()->kind() == ValueKind::SymInt)))
    return std::string(name) + " must be an int";
  return {};
}

std::string loopDimReason(const BoundArgs &b, const DeviceInfo &dev, std::string_view name,
                          int64_t dim, int64_t extra, int64_t per) {
  const TensorProto *p = protoOf(b, name);
  if (!p || dim >= p->rank() || dim < -p->rank())
    return {};
  std::optional<int64_t> n =
      p->shape[static_cast<std::size_t>(dim < 0 ? dim + p->rank() : dim)].value();
  if (!n)
    return {};
  std::string why = loopLimitReason(dev, (*n + per - 1) / per + extra);
  return why.empty() ? why : std::string(name) + "'s size " + std::to_string(*n) + ": " + why;
}

bool isFloatOfResultDType(const Node &node, const BoundArgs &b, std::string_view name) {
  const TensorProto *x = protoOf(b, name);
  return x && isDeviceFloat(x->dtype) && x->dtype == node.output()->proto().dtype;
}

const TensorProto *protoOf(const BoundArgs &b, std::string_view name) {
  const Argument *a = b.find(name);
  if (!a || !a->isValue() || !a->value()->isTensor())
    return nullptr;
  return &a->value()->proto();
}

const LoweringTable &allLowerings() {
  // The families, explicitly: adding one is adding it here.
  static const LoweringTable table = [] {
    LoweringTable m;
    for (void (*add)(LoweringTable &) :
         {addElementwiseLowerings, addReduceLowerings, addLinearLowerings,
          addLinearDq8caQ8cswLowerings, addEmbeddingLowerings, addRotaryLowerings,
          addQuantizeLowerings, addCopyLowerings, addHostLowerings, addAttentionLowerings,
          addMaskLowerings, addSwigluLowerings})
      add(m);
    return m;
  }();
  return table;
}

const Lowering *findLowering(std::string_view target) {
  const auto &t = allLowerings();
  auto it = t.find(target);
  return it == t.end() ? nullptr : &it->second;
}

std::string vulkanUnsupportedReason(const Node &node, const DeviceInfo &device) {
  const Lowering *l = findLowering(node.target());
  if (!l)
    return "no Vulkan kernel for " + node.target();
  if (!node.schema())
    return "op " + node.target() + " is not registered";
  auto bound = BoundArgs::bind(node);
  if (!bound.ok())
    return "arguments do not match the schema: " + bound.diags()[0].message;
  // Every tensor operand and result needs a device representation.
  std::string why;
  auto checkValue = [&](const Value *v, const std::string &what) {
    if (!why.empty() || !v->isTensor())
      return;
    std::string r = unsupportedDTypeReason(device, v->proto().dtype);
    if (!r.empty())
      why = r + " at " + what;
  };
  if (l->placement == Placement::Device) {
    for (std::size_t i = 0; i < bound->size(); ++i) {
      const SchemaArg &sa = bound->schema().args[i];
      bound->at(i).forEachValue([&](Value *v) { checkValue(v, "input '" + sa.name + "'"); });
    }
    for (unsigned i = 0; i < node.numOutputs(); ++i)
      checkValue(node.output(i), "output " + std::to_string(i));
    if (!why.empty())
      return why;
  }
  return l->check ? l->check(node, *bound, device) : std::string();
}

std::vector<std::string> vulkanLoweredOps() {
  std::vector<std::string> out;
  for (const auto &kv : allLowerings())
    out.push_back(kv.first);
  return out;
}

} // namespace graft::vk
