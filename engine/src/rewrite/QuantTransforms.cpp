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
// choose_qparams_affine(x, ..., output = scale | zero_point): torchao's
// choose_qparams_affine of a constant, one result per call. A QAT-prepared
// model exports its weight's qparams computed in the graph from the weight
// (torchao/quantization/qat/fake_quantizer.py IntxFakeQuantizer
// _per_channel_or_group_forward -> get_group_qparams_symmetric ->
// torch.ops.torchao.choose_qparams_affine); evaluating that node once ahead
// of time gives the frozen qparams QAT convert needs
// (patterns/qat_decomposed_legalize.pat). Both halves run the reference
// interpreter's own choose_qparams_affine kernel on a one-node graph, so the
// folded scale and zero point are the bytes the graph would compute.
//
//===----------------------------------------------------------------------===//
#include "QuantTransforms.h"

#include "graft/interp/Interpreter.h"
#include "graft/interp/TorchaoQuant.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"

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
  auto range = interp::torchaoQuantRange(dt, a.integer("quant_min"), a.integer("quant_max"));
  if (!range.ok())
    return Diagnostic::error(name + ": " + range.diags()[0].message);
  DType stored = isSubByteUnsigned(dt) ? DType::U8 : dt; // torchao stores u1..u7 as uint8
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

constexpr const char *kChooseQParams = "torchao.choose_qparams_affine.default";

std::vector<TransformParam> chooseQParamsParams() {
  auto p = [](std::string n, TransformParamKind k, std::string doc,
              std::vector<std::string> values = {}) {
    TransformParam t;
    t.name = std::move(n);
    t.kind = k;
    t.doc = std::move(doc);
    t.enumValues = std::move(values);
    return t;
  };
  return {p("mapping_type", TransformParamKind::Enum, "torchao MappingType",
            {"SYMMETRIC", "ASYMMETRIC", "SYMMETRIC_NO_CLIPPING_ERR"}),
          p("block_size", TransformParamKind::IntList, "elements sharing one scale, per dim"),
          p("target_dtype", TransformParamKind::DType, "the quantized dtype"),
          p("quant_min", TransformParamKind::Int, "lower bound of the quantized range"),
          p("quant_max", TransformParamKind::Int, "upper bound of the quantized range"),
          p("eps", TransformParamKind::Float, "smallest scale (the scale is clamped to it)"),
          p("scale_dtype", TransformParamKind::DType, "dtype of the scale"),
          p("zero_point_dtype", TransformParamKind::DType, "dtype of the zero point"),
          p("output", TransformParamKind::Enum, "which result: the scale or the zero point",
            {"scale", "zero_point"})};
}

/// A graph of one choose_qparams_affine node (keepdim false, the current
/// torchao signature) on a user input of prototype `x`, with both results as
/// outputs; the node's result prototypes come from graft's shape rule.
Expected<std::unique_ptr<Graph>> chooseQParamsGraph(const TensorProto &x, const TransformArgs &a) {
  const OpSchema *schema = OpRegistry::builtin().lookup(kChooseQParams);
  if (!schema)
    return Diagnostic::internal("choose_qparams_affine: the op registry lacks " +
                                std::string(kChooseQParams));
  auto g = std::make_unique<Graph>("choose_qparams_affine");
  Value *in = g->addInput(InputKind::UserInput, "x", x);
  std::vector<Argument> args = {Argument(in),
                                Argument(a.string("mapping_type")),
                                Argument::ints(a.ints("block_size")),
                                Argument(a.dtype("target_dtype")),
                                Argument(a.integer("quant_min")),
                                Argument(a.integer("quant_max")),
                                Argument(a.number("eps")),
                                Argument(a.dtype("scale_dtype")),
                                Argument(a.dtype("zero_point_dtype"))};
  std::vector<Graph::ResultSpec> results(2);
  results[0].name = "scale";
  results[1].name = "zero_point";
  Node *n = g->createNode(kChooseQParams, std::move(args), {}, std::move(results));
  n->setSchema(schema);
  GRAFT_TRY(std::vector<InferredResult> inferred, inferResults(*n, g->symbols()));
  if (inferred.size() != 2)
    return Diagnostic::internal("choose_qparams_affine: expected two inferred results");
  for (std::size_t i = 0; i < 2; ++i)
    g->setProto(n->outputs()[i], inferred[i].proto);
  g->addOutput(n->outputs()[0]);
  g->addOutput(n->outputs()[1]);
  return g;
}

std::size_t chooseQParamsOutput(const TransformArgs &a) {
  return a.string("output") == "scale" ? 0 : 1;
}

ConstantTransform makeChooseQParams() {
  ConstantTransform t;
  t.name = "choose_qparams_affine";
  t.doc = "torchao choose_qparams_affine of a constant (keepdim false): its scale or its zero "
          "point, as the reference interpreter computes them";
  t.inputs = {"x"};
  t.params = chooseQParamsParams();
  t.infer = [](const std::vector<const TensorProto *> &in,
               TransformArgs &a) -> Expected<TransformPlan> {
    if (!isFloatingPoint(in[0]->dtype))
      return Diagnostic::error("choose_qparams_affine: input must be floating point, got " +
                               in[0]->str());
    if (!concreteSizes(in[0]->shape))
      return Diagnostic::error("choose_qparams_affine: input " + in[0]->str() +
                               " must have a concrete shape");
    GRAFT_TRY(std::unique_ptr<Graph> g, chooseQParamsGraph(*in[0], a));
    return TransformPlan{g->outputs()[chooseQParamsOutput(a)].value->proto(), false};
  };
  t.compute = [](const std::vector<const Tensor *> &in,
                 const TransformArgs &a) -> Expected<Tensor> {
    TensorProto proto(in[0]->dtype(), Shape(in[0]->sizes().begin(), in[0]->sizes().end()));
    GRAFT_TRY(std::unique_ptr<Graph> g, chooseQParamsGraph(proto, a));
    Interpreter interp;
    GRAFT_TRY(std::vector<RuntimeValue> out, interp.run(*g, {RuntimeValue(*in[0])}));
    const RuntimeValue &r = out[chooseQParamsOutput(a)];
    if (!std::holds_alternative<Tensor>(r))
      return Diagnostic::internal("choose_qparams_affine: the kernel returned no tensor");
    return std::get<Tensor>(r);
  };
  return t;
}

} // namespace

std::vector<ConstantTransform> quantTransforms() {
  std::vector<ConstantTransform> out;
  out.push_back(makeQuantize(true));
  out.push_back(makeQuantize(false));
  out.push_back(makeChooseQParams());
  return out;
}

} // namespace graft::rewrite::detail
