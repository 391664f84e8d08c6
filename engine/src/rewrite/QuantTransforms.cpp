//===- QuantTransforms.cpp - Ahead-of-time quantization of constants ------===//
//
// quantize_affine / quantize_affine_no_zp: torchao's quantize_affine applied
// to a constant weight at rewrite time. QAT "convert" needs it: a
// fake-quantized weight (torchao fake_quantize_affine on a parameter with
// frozen scale / zero point) becomes the int weight + dequantize_affine that
// torchao's real quantized tensors export as, so the int4/8da4w linear rules
// can fuse it. The arithmetic is the reference interpreter's own
// torchao.quantize_affine kernel (round half to even, reciprocal multiply,
// clamp after the zero point), so the folded constant is bit-identical to
// running quantize_affine in the graph.
//
//===----------------------------------------------------------------------===//
#include "QuantTransforms.h"

#include "interp/Kernels.h"

namespace graft::rewrite::detail {

namespace {

std::vector<int64_t> sizesOf(const TensorProto &p) {
  return *concreteSizes(p.shape);
}

/// Checks the block structure data-free: block_size has the input's rank,
/// divides each dim, and the scale (and zero point) hold one entry per block.
Expected<TransformPlan> planQuantize(const std::string &name,
                                     const std::vector<const TensorProto *> &in, TransformArgs &a) {
  const TensorProto &x = *in[0];
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    return Diagnostic::error(name + ": input must be f32, f16 or bf16, got " + x.str());
  auto sizes = sizesOf(x);
  std::vector<int64_t> block = a.ints("block_size");
  if (block.size() != sizes.size())
    return Diagnostic::error(name + ": block_size has " + std::to_string(block.size()) +
                             " entries for an input of rank " + std::to_string(sizes.size()));
  int64_t blocks = 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (block[i] <= 0 || sizes[i] % block[i] != 0)
      return Diagnostic::error(name + ": block_size[" + std::to_string(i) +
                               "] = " + std::to_string(block[i]) + " does not divide dim " +
                               std::to_string(sizes[i]));
    blocks *= sizes[i] / block[i];
  }
  for (std::size_t i = 1; i < in.size(); ++i) {
    auto n = in[i]->numel().value();
    if (!n || *n != blocks)
      return Diagnostic::error(name + ": " + (i == 1 ? "scale " : "zero_point ") + in[i]->str() +
                               " must hold one entry per block (" + std::to_string(blocks) + ")");
  }
  if (!isFloatingPoint(in[1]->dtype))
    return Diagnostic::error(name + ": scale must be floating point, got " + in[1]->str());
  DType dt = a.dtype("dtype");
  auto range = interp::checkedQuantRange(dt, interp::Number::fromInt(a.integer("quant_min")),
                                         interp::Number::fromInt(a.integer("quant_max")));
  if (!range.ok())
    return Diagnostic::error(name + ": " + range.diags()[0].message);
  DType stored = dt;
  if (dt == DType::U1 || dt == DType::U2 || dt == DType::U3 || dt == DType::U4 || dt == DType::U5 ||
      dt == DType::U6 || dt == DType::U7)
    stored = DType::U8; // torchao stores sub-byte uints as uint8
  Shape shape;
  for (int64_t s : sizes)
    shape.push_back(Dim(s));
  return TransformPlan{TensorProto(stored, std::move(shape)), false};
}

std::vector<TransformParam> quantizeParams() {
  auto p = [](std::string n, TransformParamKind k, std::string doc) {
    TransformParam t;
    t.name = std::move(n);
    t.kind = k;
    t.doc = std::move(doc);
    return t;
  };
  return {p("block_size", TransformParamKind::IntList, "elements sharing one scale, per dim"),
          p("dtype", TransformParamKind::DType, "the quantized dtype (torchao output_dtype)"),
          p("quant_min", TransformParamKind::Int, "lower clamp bound"),
          p("quant_max", TransformParamKind::Int, "upper clamp bound")};
}

ConstantTransform makeQuantize(bool withZeroPoint) {
  ConstantTransform t;
  t.name = withZeroPoint ? "quantize_affine" : "quantize_affine_no_zp";
  t.doc = withZeroPoint ? "torchao quantize_affine of a constant: clamp(round_half_even(x * (1 / "
                          "scale)) + zero_point, quant_min, quant_max).to(dtype), per block"
                        : "torchao quantize_affine of a constant without a zero point: "
                          "clamp(round_half_even(x * (1 / scale)), quant_min, quant_max).to(dtype)";
  t.inputs = withZeroPoint ? std::vector<std::string>{"x", "scale", "zero_point"}
                           : std::vector<std::string>{"x", "scale"};
  t.params = quantizeParams();
  std::string name = t.name;
  t.infer = [name](const std::vector<const TensorProto *> &in,
                   TransformArgs &a) -> Expected<TransformPlan> {
    return planQuantize(name, in, a);
  };
  t.compute = [withZeroPoint](const std::vector<const Tensor *> &in,
                              const TransformArgs &a) -> Expected<Tensor> {
    return interp::torchaoQuantizeAffine(*in[0], a.ints("block_size"), *in[1],
                                         withZeroPoint ? in[2] : nullptr, a.dtype("dtype"),
                                         a.integer("quant_min"), a.integer("quant_max"));
  };
  return t;
}

} // namespace

std::vector<ConstantTransform> quantTransforms() {
  std::vector<ConstantTransform> out;
  out.push_back(makeQuantize(true));
  out.push_back(makeQuantize(false));
  return out;
}

} // namespace graft::rewrite::detail
