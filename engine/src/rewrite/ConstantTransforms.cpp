//===- ConstantTransforms.cpp - The built-in constant transforms ----------===//
//
// pack_int4 / unpack_int4 / unpack_int2 / transpose / pad_to_multiple / group_sums / cast /
// reshape. Formats follow ExecuTorch's Vulkan backend
// (backends/vulkan/patterns/quantized_linear.py, weight_packing_utils.py):
//  * 4-bit values are stored with a +8 offset (signed) two per byte, the
//    even element in the low nibble for the "linear convention" (low_first)
//    and in the high nibble for quantized_decomposed.embedding_4bit
//    (high_first);
//  * group_sums is compute_per_group_sums: int32 [groups, N] transposed from
//    the per-row group sums, N zero-padded to a multiple of 8.
// Every transform returns a fresh contiguous tensor; inputs are never
// modified (tied weights depend on it).
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/ConstantTransforms.h"

#include "QuantTransforms.h"
#include "RewriteUtil.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace graft::rewrite {

using detail::formatArgument;
using detail::visitIntegers;

std::string_view name(TransformParamKind kind) {
  switch (kind) {
  case TransformParamKind::Int:
    return "int";
  case TransformParamKind::Float:
    return "float";
  case TransformParamKind::Bool:
    return "bool";
  case TransformParamKind::Enum:
    return "enum";
  case TransformParamKind::DType:
    return "dtype";
  case TransformParamKind::IntList:
    return "int[]";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// TransformArgs
//===----------------------------------------------------------------------===//

const Argument &TransformArgs::get(std::string_view key) const {
  for (const auto &[k, v] : values_)
    if (k == key)
      return v;
  static const Argument kNone;
  assert(false && "TransformArgs::get: unknown parameter");
  return kNone;
}

double TransformArgs::number(std::string_view key) const {
  auto n = get(key).number();
  return n ? *n : 0.0;
}

std::vector<int64_t> TransformArgs::ints(std::string_view key) const {
  auto l = get(key).intList();
  return l ? *l : std::vector<int64_t>{};
}

void TransformArgs::set(std::string_view key, Argument value) {
  for (auto &[k, v] : values_)
    if (k == key) {
      v = std::move(value);
      return;
    }
  values_.emplace_back(std::string(key), std::move(value));
}

std::string TransformArgs::canonicalText() const {
  std::string out;
  for (const auto &[k, v] : values_) {
    if (!out.empty())
      out += ", ";
    out += k;
    out += '=';
    // Enum values print bare (nibbles=low_first), like the .pat source.
    out += v.isString() ? v.string() : formatArgument(v);
  }
  return out;
}

std::string ConstantTransform::signature() const {
  std::string out = name + "(";
  bool first = true;
  for (const std::string &in : inputs) {
    out += (first ? "" : ", ") + in;
    first = false;
  }
  for (const TransformParam &p : params) {
    out += (first ? "" : ", ") + p.name + ": ";
    first = false;
    if (p.kind == TransformParamKind::Enum) {
      out += "enum{";
      for (std::size_t i = 0; i < p.enumValues.size(); ++i)
        out += (i ? ", " : "") + p.enumValues[i];
      out += "}";
    } else {
      out += std::string(graft::rewrite::name(p.kind));
    }
    if (p.defaultValue)
      out += " = " + (p.defaultValue->isString() ? p.defaultValue->string()
                                                 : formatArgument(*p.defaultValue));
  }
  return out + ")";
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

namespace {

Expected<Argument> checkParam(const ConstantTransform &t, const TransformParam &p,
                              const Argument &a) {
  auto bad = [&](const std::string &why) -> Expected<Argument> {
    return Diagnostic::error(t.name + ": argument '" + p.name + "' " + why);
  };
  switch (p.kind) {
  case TransformParamKind::Int:
    if (!a.isInt())
      return bad("expects an int, got " + formatArgument(a));
    return a;
  case TransformParamKind::Float:
    if (a.isInt())
      return Argument(static_cast<double>(a.integer()));
    if (!a.isFloat())
      return bad("expects a number, got " + formatArgument(a));
    return a;
  case TransformParamKind::Bool:
    if (!a.isBool())
      return bad("expects true or false, got " + formatArgument(a));
    return a;
  case TransformParamKind::Enum: {
    if (a.isString() &&
        std::find(p.enumValues.begin(), p.enumValues.end(), a.string()) != p.enumValues.end())
      return a;
    std::string allowed;
    for (std::size_t i = 0; i < p.enumValues.size(); ++i)
      allowed += (i ? ", " : "") + p.enumValues[i];
    return bad("must be one of " + allowed + ", got " +
               (a.isString() ? a.string() : formatArgument(a)));
  }
  case TransformParamKind::DType:
    if (!a.isDType())
      return bad("expects a dtype, got " + formatArgument(a));
    return a;
  case TransformParamKind::IntList: {
    auto l = a.intList();
    if (!l)
      return bad("expects a list of ints, got " + formatArgument(a));
    return Argument::ints(*l);
  }
  }
  return bad("has an unknown kind");
}

} // namespace

Expected<TransformArgs>
bindTransformArgs(const ConstantTransform &t, const std::vector<Argument> &positional,
                  const std::vector<std::pair<std::string, Argument>> &kwargs) {
  if (positional.size() > t.params.size())
    return Diagnostic::error(t.name + ": too many arguments (takes " +
                             std::to_string(t.inputs.size() + t.params.size()) + ": " +
                             t.signature() + ")");
  std::vector<std::optional<Argument>> slots(t.params.size());
  for (std::size_t i = 0; i < positional.size(); ++i)
    slots[i] = positional[i];
  for (const auto &[k, v] : kwargs) {
    auto it = std::find_if(t.params.begin(), t.params.end(),
                           [&](const TransformParam &p) { return p.name == k; });
    if (it == t.params.end()) {
      bool isInput = std::find(t.inputs.begin(), t.inputs.end(), k) != t.inputs.end();
      return Diagnostic::error(t.name + ": " +
                               (isInput ? "tensor input '" + k + "' must be passed positionally"
                                        : "unknown argument '" + k + "'") +
                               " (signature: " + t.signature() + ")");
    }
    std::size_t idx = static_cast<std::size_t>(it - t.params.begin());
    if (slots[idx])
      return Diagnostic::error(t.name + ": argument '" + k + "' given twice");
    slots[idx] = v;
  }
  std::vector<std::pair<std::string, Argument>> values;
  for (std::size_t i = 0; i < t.params.size(); ++i) {
    const TransformParam &p = t.params[i];
    if (!slots[i]) {
      if (!p.defaultValue)
        return Diagnostic::error(t.name + ": missing required argument '" + p.name +
                                 "' (signature: " + t.signature() + ")");
      slots[i] = *p.defaultValue;
    }
    GRAFT_TRY(Argument checked, checkParam(t, p, *slots[i]));
    values.emplace_back(p.name, std::move(checked));
  }
  return TransformArgs(std::move(values));
}

Expected<TransformPlan> planTransform(const ConstantTransform &t,
                                      const std::vector<const TensorProto *> &inputs,
                                      TransformArgs &args) {
  if (inputs.size() != t.inputs.size())
    return Diagnostic::error(t.name + ": expects " + std::to_string(t.inputs.size()) +
                             " constant input(s), got " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorProto &p = *inputs[i];
    if (p.quant)
      return Diagnostic::error(t.name + ": input '" + t.inputs[i] + "' (" + p.str() +
                               ") has a quantization layout; transform its buffers instead");
    for (const Dim &d : p.shape)
      if (!d.isConstant())
        return Diagnostic::error(t.name + ": input '" + t.inputs[i] + "' has a symbolic shape " +
                                 str(p.shape));
  }
  return t.infer(inputs, args);
}

Expected<Tensor> computeTransform(const ConstantTransform &t,
                                  const std::vector<const Tensor *> &inputs,
                                  const TransformArgs &args, const TensorProto &planned) {
  for (const Tensor *in : inputs)
    if (!in || !in->defined())
      return Diagnostic::error(t.name + ": an input constant has no data");
  GRAFT_TRY(Tensor out, t.compute(inputs, args));
  auto sizes = concreteSizes(planned.shape);
  if (out.dtype() != planned.dtype || !sizes || out.sizes() != *sizes)
    return Diagnostic::internal(t.name + ": computed " + out.proto().str() + " but planned " +
                                planned.str());
  return out;
}

namespace {

/// A transform call computed when its data is needed. Holds its own copy of
/// the transform's compute function (a user registry may not outlive the
/// graph) and handles to its inputs (a mapped weight stays mapped).
class DeferredTransform final : public DeferredData {
public:
  DeferredTransform(const ConstantTransform &t, TransformArgs args, TensorProto planned,
                    std::vector<std::shared_ptr<const DeferredData>> inputs, std::string fqn,
                    std::string what)
      : name_(t.name), compute_(t.compute), args_(std::move(args)), planned_(std::move(planned)),
        inputs_(std::move(inputs)), fqn_(std::move(fqn)), what_(std::move(what)) {
    recipe_.transform = name_;
    recipe_.args = args_.values();
    recipe_.inputs = inputs_;
  }
  const Recipe *recipe() const override { return &recipe_; }

  Expected<Tensor> compute() const override {
    std::vector<Tensor> held;
    held.reserve(inputs_.size());
    for (const auto &in : inputs_) {
      auto t = in->compute();
      if (!t.ok())
        return t.diags().front();
      held.push_back(std::move(*t));
    }
    std::vector<const Tensor *> ptrs;
    for (const Tensor &t : held)
      ptrs.push_back(&t);
    ConstantTransform t;
    t.name = name_;
    t.compute = compute_;
    auto out = computeTransform(t, ptrs, args_, planned_);
    // One pass over each mapped source is done: its pages leave the RSS.
    for (const Tensor &in : held)
      in.releasePages();
    if (!out.ok()) {
      Diagnostic d = out.diags().front();
      d.message = "constant '" + fqn_ + "' = " + what_ + ": " + d.message;
      return d;
    }
    return out;
  }
  std::string describe() const override { return what_; }

private:
  std::string name_;
  TransformComputeFn compute_;
  TransformArgs args_;
  TensorProto planned_;
  std::vector<std::shared_ptr<const DeferredData>> inputs_;
  std::string fqn_;
  std::string what_;
  Recipe recipe_;
};

} // namespace

std::shared_ptr<const DeferredData>
deferTransform(const ConstantTransform &transform, TransformArgs args, TensorProto planned,
               std::vector<std::shared_ptr<const DeferredData>> inputs, std::string fqn,
               std::string what) {
  return std::make_shared<DeferredTransform>(transform, std::move(args), std::move(planned),
                                             std::move(inputs), std::move(fqn), std::move(what));
}

//===----------------------------------------------------------------------===//
// The arithmetic
//===----------------------------------------------------------------------===//

namespace {

/// The hot loop of pack_int4 for 8-bit sources (what every quantized weight
/// is): branch-free, in fixed-size blocks so GCC vectorizes it even at -O2's
/// very-cheap cost model. `bias` maps the source range onto [0, 15] (8 for
/// int8 in [-8, 7], 0 for uint8 in [0, 15]); returns false when some value is
/// outside it, in which case the caller re-runs the checked loop to say which.
template <bool LowFirst>
#if defined(__GNUC__) && !defined(__clang__)
// -O2's very-cheap vectorizer cost model rejects the stride-2 loads; this
// loop is the repacking throughput of whole models, so ask for the full one.
__attribute__((optimize("tree-vectorize", "vect-cost-model=dynamic")))
#endif
bool packNibbles8(const uint8_t *src, uint8_t *dst, int64_t pairs, uint8_t bias) {
  constexpr int64_t kBlock = 64;
  uint8_t outOfRange = 0;
  int64_t j = 0;
  for (; j + kBlock <= pairs; j += kBlock) {
    const uint8_t *s = src + 2 * j;
    uint8_t *d = dst + j;
    for (int64_t k = 0; k < kBlock; ++k) {
      uint8_t even = static_cast<uint8_t>(s[2 * k] + bias);
      uint8_t odd = static_cast<uint8_t>(s[2 * k + 1] + bias);
      outOfRange |= static_cast<uint8_t>(even | odd);
      d[k] = LowFirst ? static_cast<uint8_t>((odd << 4) | (even & 0xF))
                      : static_cast<uint8_t>((even << 4) | (odd & 0xF));
    }
  }
  for (; j < pairs; ++j) {
    uint8_t even = static_cast<uint8_t>(src[2 * j] + bias);
    uint8_t odd = static_cast<uint8_t>(src[2 * j + 1] + bias);
    outOfRange |= static_cast<uint8_t>(even | odd);
    dst[j] = LowFirst ? static_cast<uint8_t>((odd << 4) | (even & 0xF))
                      : static_cast<uint8_t>((even << 4) | (odd & 0xF));
  }
  // In range <=> every biased value is in [0, 15] <=> no high bit set.
  return (outOfRange & 0xF0) == 0;
}

} // namespace

Expected<Tensor> packInt4(const Tensor &values, NibbleOrder order) {
  if (!isIntegral(values.dtype()))
    return Diagnostic::error("pack_int4: input must be an integer tensor, got " +
                             std::string(name(values.dtype())));
  if (values.rank() == 0 || values.size(-1) % 2 != 0)
    return Diagnostic::error("pack_int4: the last dim must be even, got " + values.proto().str() +
                             " (pad it with pad_to_multiple first)");
  bool isSigned = isSignedIntegral(values.dtype());
  int64_t lo = isSigned ? -8 : 0, hi = isSigned ? 7 : 15;
  std::vector<int64_t> outSizes = values.sizes();
  outSizes.back() /= 2;
  // Every output byte is written below (or the call fails): no zero-fill.
  Tensor out = Tensor::uninitialized(DType::U8, outSizes);
  uint8_t *dst = out.mutableData<uint8_t>();
  if (values.dtype() == DType::I8 || values.dtype() == DType::U8) {
    Tensor contiguous = values.contiguous();
    const uint8_t *src = contiguous.rawData();
    int64_t pairs = contiguous.numel() / 2;
    uint8_t bias = isSigned ? 8 : 0;
    bool ok = order == NibbleOrder::LowFirst ? packNibbles8<true>(src, dst, pairs, bias)
                                             : packNibbles8<false>(src, dst, pairs, bias);
    if (ok)
      return out;
    // Fall through: the checked loop names the first value out of range.
  }
  std::optional<Diagnostic> error;
  visitIntegers(values, [&](const auto *src, int64_t n) {
    for (int64_t i = 0; i < n; i += 2) {
      int64_t a = static_cast<int64_t>(src[i]), b = static_cast<int64_t>(src[i + 1]);
      if (a < lo || a > hi || b < lo || b > hi) {
        int64_t bad = (a < lo || a > hi) ? i : i + 1;
        error =
            Diagnostic::error("pack_int4: value " + std::to_string(static_cast<int64_t>(src[bad])) +
                              " at " + detail::formatIndex(values.sizes(), bad) + " is outside [" +
                              std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return;
      }
      uint8_t even = static_cast<uint8_t>(isSigned ? a + 8 : a);
      uint8_t odd = static_cast<uint8_t>(isSigned ? b + 8 : b);
      dst[i / 2] = order == NibbleOrder::LowFirst ? static_cast<uint8_t>((odd << 4) | even)
                                                  : static_cast<uint8_t>((even << 4) | odd);
    }
  });
  if (error)
    return *error;
  return out;
}

Expected<Tensor> unpackInt4(const Tensor &packed, NibbleOrder order, bool isSigned, DType dtype,
                            int64_t length) {
  if (packed.dtype() != DType::U8 && packed.dtype() != DType::I8)
    return Diagnostic::error("unpack_int4: input must be u8 (two nibbles per byte), got " +
                             std::string(name(packed.dtype())));
  if (packed.rank() == 0)
    return Diagnostic::error("unpack_int4: input must have at least one dim");
  const int64_t bytesPerRow = packed.sizes().back();
  if (length < 0)
    length = 2 * bytesPerRow;
  if (length > 2 * bytesPerRow)
    return Diagnostic::error("unpack_int4: length " + std::to_string(length) + " does not fit " +
                             std::to_string(bytesPerRow) + " packed bytes per row");
  std::vector<int64_t> outSizes = packed.sizes();
  outSizes.back() = length;
  Tensor out = Tensor::uninitialized(dtype, outSizes); // every element is written
  Tensor src = packed.contiguous();
  const uint8_t *p = src.data<uint8_t>();
  const int64_t rows = bytesPerRow ? src.numel() / bytesPerRow : 0;
  const int offset = isSigned ? 8 : 0;
  const int evenShift = order == NibbleOrder::LowFirst ? 0 : 4;
  // One loop; `store(i, v)` is a typed store for the usual results (this runs
  // when a program is loaded, over GBs of weights) and setInt for the rest.
  auto unpack = [&](auto store) {
    for (int64_t r = 0, i = 0; r < rows; ++r, p += bytesPerRow)
      for (int64_t k = 0; k < length; ++k, ++i) {
        int shift = (k & 1) ? 4 - evenShift : evenShift;
        store(i, ((p[k >> 1] >> shift) & 0x0F) - offset);
      }
  };
  auto typed = [&](auto *dst) {
    unpack(
        [dst](int64_t i, int v) { dst[i] = static_cast<std::remove_pointer_t<decltype(dst)>>(v); });
  };
  if (dtype == DType::I8)
    typed(out.mutableData<int8_t>());
  else if (dtype == DType::U8)
    typed(out.mutableData<uint8_t>());
  else if (dtype == DType::I32)
    typed(out.mutableData<int32_t>());
  else
    unpack([&out](int64_t i, int v) { out.setInt(i, v); });
  return out;
}

Expected<Tensor> groupSums(const Tensor &weight, int64_t groupSize, int64_t padTo) {
  if (weight.rank() != 2 || !isIntegral(weight.dtype()))
    return Diagnostic::error("group_sums: weight must be a 2-D integer tensor [N, K], got " +
                             weight.proto().str());
  int64_t N = weight.size(0), K = weight.size(1);
  if (groupSize <= 0 || K % groupSize != 0)
    return Diagnostic::error("group_sums: group_size " + std::to_string(groupSize) +
                             " must be positive and divide K = " + std::to_string(K));
  if (padTo <= 0)
    return Diagnostic::error("group_sums: pad_to must be positive");
  int64_t G = K / groupSize;
  int64_t Npad = (N + padTo - 1) / padTo * padTo;
  Tensor out = Tensor::empty(DType::I32, {G, Npad});
  int32_t *dst = out.mutableData<int32_t>();
  visitIntegers(weight, [&](const auto *src, int64_t) {
    for (int64_t row = 0; row < N; ++row)
      for (int64_t g = 0; g < G; ++g) {
        int64_t s = 0;
        for (int64_t k = g * groupSize; k < (g + 1) * groupSize; ++k)
          s += static_cast<int64_t>(src[row * K + k]);
        dst[g * Npad + row] = static_cast<int32_t>(s);
      }
  });
  return out;
}

namespace {

//===----------------------------------------------------------------------===//
// The built-in transforms
//===----------------------------------------------------------------------===//

std::vector<int64_t> sizesOf(const TensorProto &p) {
  return *concreteSizes(p.shape);
}

TensorProto protoOf(DType dtype, const std::vector<int64_t> &sizes) {
  Shape s;
  for (int64_t v : sizes)
    s.push_back(Dim(v));
  TensorProto p(dtype, std::move(s));
  return p;
}

/// Normalizes a dim argument against `rank`, writing the result back so the
/// registry key does not depend on the spelling (-1 vs 1).
Expected<int64_t> normDim(const std::string &transform, TransformArgs &args,
                          const std::string &param, int64_t rank) {
  int64_t d = args.integer(param);
  int64_t r = rank == 0 ? 1 : rank;
  if (d < -r || d >= r)
    return Diagnostic::error(transform + ": " + param + " = " + std::to_string(d) +
                             " is out of range for a tensor of rank " + std::to_string(rank));
  if (d < 0)
    d += r;
  args.set(param, Argument(d));
  return d;
}

NibbleOrder nibbleOrder(const TransformArgs &args) {
  return args.string("nibbles") == "high_first" ? NibbleOrder::HighFirst : NibbleOrder::LowFirst;
}

TransformParam enumParam(std::string name, std::vector<std::string> values,
                         std::optional<std::string> def, std::string doc) {
  TransformParam p;
  p.name = std::move(name);
  p.kind = TransformParamKind::Enum;
  p.enumValues = std::move(values);
  if (def)
    p.defaultValue = Argument(*def);
  p.doc = std::move(doc);
  return p;
}

TransformParam param(std::string name, TransformParamKind kind, std::optional<Argument> def,
                     std::string doc) {
  TransformParam p;
  p.name = std::move(name);
  p.kind = kind;
  p.defaultValue = std::move(def);
  p.doc = std::move(doc);
  return p;
}

ConstantTransform makePackInt4() {
  ConstantTransform t;
  t.name = "pack_int4";
  t.doc = "packs 4-bit integers two per byte along the last dim into u8 [..., K/2]; signed "
          "inputs must lie in [-8, 7] and are stored with a +8 offset, unsigned ones in [0, 15]. "
          "low_first puts the even element in the low nibble (torchao / ET-VK linear and "
          "embedding_q4gsw(is_linear_weight=true)), high_first in the high nibble "
          "(quantized_decomposed.embedding_4bit, linear_qcs4w)";
  t.inputs = {"w"};
  t.params = {enumParam("nibbles", {"low_first", "high_first"}, std::nullopt,
                        "which nibble holds the even element")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &) -> Expected<TransformPlan> {
    const TensorProto &w = *in[0];
    if (!isIntegral(w.dtype))
      return Diagnostic::error("pack_int4: input must be an integer tensor, got " + w.str());
    auto sizes = sizesOf(w);
    if (sizes.empty() || sizes.back() % 2 != 0)
      return Diagnostic::error("pack_int4: the last dim must be even, got " + w.str() +
                               " (pad it with pad_to_multiple first)");
    sizes.back() /= 2;
    return TransformPlan{protoOf(DType::U8, sizes), false};
  };
  t.compute = [](const std::vector<const Tensor *> &in, const TransformArgs &a) {
    return packInt4(*in[0], nibbleOrder(a));
  };
  return t;
}

ConstantTransform makeUnpackInt4() {
  ConstantTransform t;
  t.name = "unpack_int4";
  t.doc = "the inverse of pack_int4: u8 [..., K/2] -> `dtype` [..., K], minus 8 when signed";
  t.inputs = {"packed"};
  t.params = {enumParam("nibbles", {"low_first", "high_first"}, std::nullopt,
                        "which nibble holds the even element"),
              param("signed", TransformParamKind::Bool, Argument(true), "subtract the +8 offset"),
              param("dtype", TransformParamKind::DType, Argument(DType::I8), "result dtype"),
              param("length", TransformParamKind::Int, Argument(int64_t(-1)),
                    "elements kept per row (-1: all, two per byte); fewer drops the padding a "
                    "pad_to_multiple before pack_int4 added")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    const TensorProto &p = *in[0];
    if (p.dtype != DType::U8 && p.dtype != DType::I8)
      return Diagnostic::error("unpack_int4: input must be u8 (two nibbles per byte), got " +
                               p.str());
    auto sizes = sizesOf(p);
    if (sizes.empty())
      return Diagnostic::error("unpack_int4: input must have at least one dim");
    DType dt = a.dtype("dtype");
    if (!isIntegral(dt) || (a.boolean("signed") && !isSignedIntegral(dt)))
      return Diagnostic::error("unpack_int4: dtype " + std::string(name(dt)) +
                               " cannot hold the unpacked values");
    int64_t length = a.integer("length");
    if (length == -1)
      length = 2 * sizes.back();
    if (length < 0 || length > 2 * sizes.back())
      return Diagnostic::error("unpack_int4: length " + std::to_string(length) + " does not fit " +
                               std::to_string(sizes.back()) + " packed bytes per row");
    a.set("length", Argument(length)); // canonical: the same request, the same key
    sizes.back() = length;
    return TransformPlan{protoOf(dt, sizes), false};
  };
  t.compute = [](const std::vector<const Tensor *> &in, const TransformArgs &a) {
    return unpackInt4(*in[0], nibbleOrder(a), a.boolean("signed"), a.dtype("dtype"),
                      a.integer("length"));
  };
  return t;
}

/// quantized_decomposed.embedding_2bit's packing (ExecuTorch
/// examples/models/llama/source_transformation/quantize.py: four values per byte, the
/// first in the lowest two bits, each stored + 2; unpacked by
/// exir/passes/_quant_patterns_and_replacements.py embedding_2bit) -> i8 values in [-2, 1].
ConstantTransform makeUnpackInt2() {
  ConstantTransform t;
  t.name = "unpack_int2";
  t.doc = "u8 [..., K/4] holding four 2-bit values per byte, the first in the lowest bits, "
          "stored + 2 (quantized_decomposed.embedding_2bit) -> i8 [..., K] in [-2, 1]";
  t.inputs = {"packed"};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &) -> Expected<TransformPlan> {
    const TensorProto &p = *in[0];
    if (p.dtype != DType::U8)
      return Diagnostic::error("unpack_int2: input must be u8 (four 2-bit values per byte), got " +
                               p.str());
    auto sizes = sizesOf(p);
    if (sizes.empty())
      return Diagnostic::error("unpack_int2: input must have at least one dim");
    sizes.back() *= 4;
    return TransformPlan{protoOf(DType::I8, sizes), false};
  };
  t.compute = [](const std::vector<const Tensor *> &in, const TransformArgs &) -> Expected<Tensor> {
    Tensor src = in[0]->contiguous();
    std::vector<int64_t> sizes = src.sizes();
    sizes.back() *= 4;
    Tensor out = Tensor::uninitialized(DType::I8, sizes); // every element is written
    const uint8_t *p = src.data<uint8_t>();
    int8_t *dst = out.mutableData<int8_t>();
    for (int64_t i = 0, n = src.numel(); i < n; ++i)
      for (int k = 0; k < 4; ++k)
        dst[4 * i + k] = static_cast<int8_t>(((p[i] >> (2 * k)) & 0x3) - 2);
    return out;
  };
  return t;
}

ConstantTransform makeTranspose() {
  ConstantTransform t;
  t.name = "transpose";
  t.doc = "swaps two dims and materializes the result contiguously (scales [N, G] -> [G, N] "
          "for linear_q4gsw)";
  t.inputs = {"x"};
  t.params = {param("dim0", TransformParamKind::Int, Argument(int64_t(0)), "first dim"),
              param("dim1", TransformParamKind::Int, Argument(int64_t(1)), "second dim")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    auto sizes = sizesOf(*in[0]);
    int64_t rank = static_cast<int64_t>(sizes.size());
    if (rank < 1)
      return Diagnostic::error("transpose: input must have at least one dim");
    GRAFT_TRY(int64_t d0, normDim("transpose", a, "dim0", rank));
    GRAFT_TRY(int64_t d1, normDim("transpose", a, "dim1", rank));
    std::swap(sizes[static_cast<std::size_t>(d0)], sizes[static_cast<std::size_t>(d1)]);
    return TransformPlan{protoOf(in[0]->dtype, sizes), d0 == d1};
  };
  t.compute = [](const std::vector<const Tensor *> &in,
                 const TransformArgs &a) -> Expected<Tensor> {
    const Tensor &x = *in[0];
    std::size_t d0 = static_cast<std::size_t>(a.integer("dim0"));
    std::size_t d1 = static_cast<std::size_t>(a.integer("dim1"));
    std::vector<int64_t> strides = x.strides().empty() ? contiguousStrides(x.sizes()) : x.strides();
    std::vector<int64_t> sizes = x.sizes();
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
    Tensor view(x.dtype(), sizes, x.storage(), x.offset(), strides);
    return view.clone();
  };
  return t;
}

ConstantTransform makePadToMultiple() {
  ConstantTransform t;
  t.name = "pad_to_multiple";
  t.doc = "pads `dim` at its end with `value` up to a multiple of `multiple` (ET-VK aligns N of "
          "scales/bias to 4 or 8 and K of 4-bit weights to 8)";
  t.inputs = {"x"};
  t.params = {param("dim", TransformParamKind::Int, std::nullopt, "the dim to pad"),
              param("multiple", TransformParamKind::Int, std::nullopt, "target multiple (> 0)"),
              param("value", TransformParamKind::Float, Argument(0.0), "padding value")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    auto sizes = sizesOf(*in[0]);
    int64_t rank = static_cast<int64_t>(sizes.size());
    if (rank < 1)
      return Diagnostic::error("pad_to_multiple: input must have at least one dim");
    GRAFT_TRY(int64_t d, normDim("pad_to_multiple", a, "dim", rank));
    int64_t m = a.integer("multiple");
    if (m <= 0)
      return Diagnostic::error("pad_to_multiple: multiple must be positive, got " +
                               std::to_string(m));
    double v = a.number("value");
    DType dt = in[0]->dtype;
    if (isIntegral(dt, true)) {
      auto bounds = integerBounds(dt);
      if (std::trunc(v) != v || (bounds && (v < static_cast<double>(bounds->first) ||
                                            v > static_cast<double>(bounds->second))))
        return Diagnostic::error("pad_to_multiple: value " + detail::formatDouble(v) +
                                 " does not fit " + std::string(name(dt)));
    }
    int64_t &s = sizes[static_cast<std::size_t>(d)];
    if (s % m == 0) // already aligned: the result is the input itself
      return TransformPlan{*in[0], true};
    s = (s + m - 1) / m * m;
    return TransformPlan{protoOf(dt, sizes), false};
  };
  t.compute = [](const std::vector<const Tensor *> &in,
                 const TransformArgs &a) -> Expected<Tensor> {
    const Tensor x = in[0]->contiguous();
    std::size_t d = static_cast<std::size_t>(a.integer("dim"));
    int64_t m = a.integer("multiple");
    std::vector<int64_t> sizes = x.sizes();
    int64_t old = sizes[d];
    sizes[d] = (old + m - 1) / m * m;
    Tensor out = Tensor::empty(x.dtype(), sizes);
    // outer x old*inner blocks copied into outer x new*inner blocks.
    int64_t inner = 1, outer = 1;
    for (std::size_t i = d + 1; i < sizes.size(); ++i)
      inner *= sizes[i];
    for (std::size_t i = 0; i < d; ++i)
      outer *= sizes[i];
    std::size_t es = elementSize(x.dtype());
    const uint8_t *src = x.rawData();
    uint8_t *dst = out.mutableRawData();
    double v = a.number("value");
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + static_cast<std::size_t>(o * sizes[d] * inner) * es,
                  src + static_cast<std::size_t>(o * old * inner) * es,
                  static_cast<std::size_t>(old * inner) * es);
      if (v != 0.0)
        for (int64_t j = old * inner; j < sizes[d] * inner; ++j)
          out.setDouble(o * sizes[d] * inner + j, v);
    }
    return out;
  };
  return t;
}

ConstantTransform makeGroupSums() {
  ConstantTransform t;
  t.name = "group_sums";
  t.doc = "per-group weight sums for dynamically quantized activations (ET-VK "
          "compute_per_group_sums): int32 [K / group_size, N padded to pad_to] from an "
          "unpacked integer weight [N, K]";
  t.inputs = {"w"};
  t.params = {param("group_size", TransformParamKind::Int, std::nullopt, "elements per group"),
              param("pad_to", TransformParamKind::Int, Argument(int64_t(8)),
                    "N is zero-padded to a multiple of this")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    const TensorProto &w = *in[0];
    auto sizes = sizesOf(w);
    if (sizes.size() != 2 || !isIntegral(w.dtype))
      return Diagnostic::error("group_sums: weight must be a 2-D integer tensor [N, K], got " +
                               w.str());
    int64_t gs = a.integer("group_size"), pad = a.integer("pad_to");
    if (gs <= 0 || sizes[1] % gs != 0)
      return Diagnostic::error("group_sums: group_size " + std::to_string(gs) +
                               " must be positive and divide K = " + std::to_string(sizes[1]));
    if (pad <= 0)
      return Diagnostic::error("group_sums: pad_to must be positive");
    int64_t npad = (sizes[0] + pad - 1) / pad * pad;
    return TransformPlan{protoOf(DType::I32, {sizes[1] / gs, npad}), false};
  };
  t.compute = [](const std::vector<const Tensor *> &in, const TransformArgs &a) {
    return groupSums(*in[0], a.integer("group_size"), a.integer("pad_to"));
  };
  return t;
}

ConstantTransform makeCast() {
  ConstantTransform t;
  t.name = "cast";
  t.doc = "converts elements to `dtype` with torch's .to() rules (float -> int truncates)";
  t.inputs = {"x"};
  t.params = {param("dtype", TransformParamKind::DType, std::nullopt, "result dtype")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    DType dt = a.dtype("dtype");
    if (!isComputable(dt) || !isComputable(in[0]->dtype))
      return Diagnostic::error("cast: cannot convert " + std::string(name(in[0]->dtype)) + " to " +
                               std::string(name(dt)));
    return TransformPlan{protoOf(dt, sizesOf(*in[0])), dt == in[0]->dtype};
  };
  t.compute = [](const std::vector<const Tensor *> &in,
                 const TransformArgs &a) -> Expected<Tensor> {
    return in[0]->to(a.dtype("dtype")).clone();
  };
  return t;
}

ConstantTransform makeReshape() {
  ConstantTransform t;
  t.name = "reshape";
  t.doc = "views the elements in row-major order with a new shape (one entry may be -1)";
  t.inputs = {"x"};
  t.params = {param("shape", TransformParamKind::IntList, std::nullopt, "the new shape")};
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    auto sizes = sizesOf(*in[0]);
    int64_t numel = 1;
    for (int64_t s : sizes)
      numel *= s;
    std::vector<int64_t> shape = a.ints("shape");
    int64_t known = 1;
    int inferred = -1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == -1) {
        if (inferred >= 0)
          return Diagnostic::error("reshape: only one dim may be -1");
        inferred = static_cast<int>(i);
      } else if (shape[i] < 0) {
        return Diagnostic::error("reshape: invalid size " + std::to_string(shape[i]));
      } else {
        known *= shape[i];
      }
    }
    if (inferred >= 0) {
      if (known == 0 || numel % known != 0)
        return Diagnostic::error("reshape: cannot infer -1 for " + std::to_string(numel) +
                                 " elements");
      shape[static_cast<std::size_t>(inferred)] = numel / known;
    } else if (known != numel) {
      return Diagnostic::error("reshape: shape " + formatArgument(Argument::ints(shape)) + " has " +
                               std::to_string(known) + " elements, the input has " +
                               std::to_string(numel));
    }
    a.set("shape", Argument::ints(shape));
    return TransformPlan{protoOf(in[0]->dtype, shape), shape == sizes};
  };
  t.compute = [](const std::vector<const Tensor *> &in,
                 const TransformArgs &a) -> Expected<Tensor> {
    return in[0]->contiguous().clone().view(a.ints("shape"));
  };
  return t;
}

} // namespace

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

Status ConstantTransformRegistry::add(ConstantTransform transform) {
  if (find(transform.name))
    return Diagnostic::error("constant transform '" + transform.name + "' is registered twice");
  transforms_.push_back(std::move(transform));
  return okStatus();
}

const ConstantTransform *ConstantTransformRegistry::find(std::string_view n) const {
  for (const ConstantTransform &t : transforms_)
    if (t.name == n)
      return &t;
  return nullptr;
}

std::vector<const ConstantTransform *> ConstantTransformRegistry::all() const {
  std::vector<const ConstantTransform *> out;
  for (const ConstantTransform &t : transforms_)
    out.push_back(&t);
  return out;
}

const ConstantTransformRegistry &ConstantTransformRegistry::builtin() {
  static const ConstantTransformRegistry *registry = [] {
    auto *r = new ConstantTransformRegistry();
    for (ConstantTransform t : {makePackInt4(), makeUnpackInt4(), makeUnpackInt2(), makeTranspose(),
                                makePadToMultiple(), makeGroupSums(), makeCast(), makeReshape()}) {
      Status s = r->add(std::move(t));
      assert(s.ok() && "built-in constant transforms have unique names");
      (void)s;
    }
    // quantize_affine / quantize_affine_no_zp (QuantTransforms.cpp).
    for (ConstantTransform t : detail::quantTransforms()) {
      Status s = r->add(std::move(t));
      assert(s.ok() && "built-in constant transforms have unique names");
      (void)s;
    }
    return r;
  }();
  return *registry;
}

} // namespace graft::rewrite
