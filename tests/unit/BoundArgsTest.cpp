//===- BoundArgsTest.cpp - Binding node arguments to op schemas -----------===//
//
// Positional/keyword binding, defaults, the diagnostics for each kind of bad
// call, the structural type checks of argumentMatchesType, and binding of
// graphs that use the legacy torchao signatures.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/BoundArgs.h"
#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"

#include <gtest/gtest.h>

using namespace graft;

namespace {

const OpSchema &op(const char *name) {
  const OpSchema *s = OpRegistry::builtin().lookup(name);
  EXPECT_NE(s, nullptr) << name;
  return *s;
}

SchemaType type(const char *text) {
  auto s = parseSchema(std::string("t::t(") + text + " x) -> ()");
  EXPECT_TRUE(s.ok()) << text;
  return s.ok() ? s->args[0].type : SchemaType{};
}

struct Fixture {
  Graph g;
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {2, 4}));
  Value *w = g.addInput(InputKind::Parameter, "w", TensorProto(DType::F32, {3, 4}), "l.weight");
  Value *s0 = g.addScalarInput(ValueKind::SymInt, "s0");
  Value *f0 = g.addScalarInput(ValueKind::SymFloat, "f0");
  Value *b0 = g.addScalarInput(ValueKind::SymBool, "b0");
};

std::string bindError(const OpSchema &schema, std::vector<Argument> args,
                      std::vector<std::pair<std::string, Argument>> kwargs) {
  auto b = BoundArgs::bind(schema, args, kwargs, "y");
  EXPECT_FALSE(b.ok());
  return b.ok() ? std::string() : b.diags()[0].message;
}

} // namespace

TEST(BoundArgs, BindsPositionalKeywordAndDefaults) {
  Fixture f;
  auto b = BoundArgs::bind(op("aten.linear.default"), {f.x}, {{"weight", f.w}}, "y");
  ASSERT_TRUE(b.ok()) << render(b.diags());
  EXPECT_EQ(b->size(), 3u);
  EXPECT_EQ(b->at(0).value(), f.x);
  EXPECT_EQ(b->get("weight").value(), f.w);
  EXPECT_TRUE(b->get("bias").isNone());
  EXPECT_TRUE(b->provided(0));
  EXPECT_TRUE(b->provided(1));
  EXPECT_FALSE(b->provided(2));
  EXPECT_TRUE(b->has("bias"));
  EXPECT_FALSE(b->has("zero_point_domain"));
  EXPECT_EQ(b->find("nope"), nullptr);
  EXPECT_FALSE(b->isLegacy());
  EXPECT_EQ(&b->schema(), &op("aten.linear.default"));

  auto add = BoundArgs::bind(op("aten.add.Tensor"), {f.x, f.x}, {}, "y");
  ASSERT_TRUE(add.ok());
  EXPECT_EQ(add->get("alpha"), Argument(int64_t(1)));
}

TEST(BoundArgs, Diagnostics) {
  Fixture f;
  const OpSchema &linear = op("aten.linear.default");
  EXPECT_EQ(bindError(linear, {f.x, f.w}, {{"foo", int64_t(1)}}),
            "node %y (aten.linear.default): unknown keyword argument 'foo'");
  EXPECT_EQ(bindError(linear, {f.x, f.w, Argument(), f.x}, {}),
            "node %y (aten.linear.default): too many positional arguments (got 4, at most 3 "
            "accepted)");
  EXPECT_EQ(bindError(linear, {f.x}, {}),
            "node %y (aten.linear.default): missing required argument 'weight'");
  EXPECT_EQ(bindError(linear, {f.x, f.w, int64_t(3)}, {}),
            "node %y (aten.linear.default): argument 'bias' expects Tensor? but got int");
  EXPECT_EQ(bindError(linear, {f.x, f.w}, {{"weight", f.w}}),
            "node %y (aten.linear.default): duplicate argument 'weight' (given positionally and "
            "by keyword)");
  EXPECT_EQ(bindError(linear, {f.x}, {{"weight", f.w}, {"weight", f.w}}),
            "node %y (aten.linear.default): duplicate argument 'weight' (keyword given twice)");
  // Keyword-only arguments cannot be given positionally.
  EXPECT_NE(
      bindError(op("aten.add.Tensor"), {f.x, f.x, int64_t(2)}, {}).find("too many positional"),
      std::string::npos);
  // A SymInt value is not a tensor.
  EXPECT_EQ(bindError(linear, {f.s0, f.w}, {}),
            "node %y (aten.linear.default): argument 'input' expects Tensor but got SymInt");
  // List elements are checked.
  EXPECT_EQ(
      bindError(op("aten.view.default"), {f.x, Argument(Argument::List{int64_t(2), 1.5})}, {}),
      "node %y (aten.view.default): argument 'size' expects SymInt[] but got a list whose "
      "element 1 is float");
  // Every problem is reported, not just the first.
  auto b = BoundArgs::bind(linear, {f.x}, {{"foo", int64_t(1)}, {"bar", int64_t(1)}}, "y");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.diags().size(), 3u);
}

TEST(BoundArgs, BindNode) {
  Fixture f;
  Node *n = f.g.createNode("aten.relu.default", {f.x}, {},
                           {{"r", ValueKind::Tensor, TensorProto(DType::F32, {2, 4})}});
  EXPECT_FALSE(BoundArgs::bind(*n).ok()); // no schema bound yet
  EXPECT_NE(render(BoundArgs::bind(*n).diags()).find("not registered"), std::string::npos);
  OpRegistry::builtin().bind(f.g);
  auto b = BoundArgs::bind(*n);
  ASSERT_TRUE(b.ok()) << render(b.diags());
  EXPECT_EQ(b->get("self").value(), f.x);
}

TEST(BoundArgs, TypeMatching) {
  Fixture f;
  std::string why;
  // Tensors must be Tensor values.
  EXPECT_TRUE(argumentMatchesType(f.x, type("Tensor")));
  EXPECT_FALSE(argumentMatchesType(int64_t(1), type("Tensor"), &why));
  EXPECT_EQ(why, "expects Tensor but got int");
  EXPECT_FALSE(argumentMatchesType(Argument(), type("Tensor"), &why));
  EXPECT_EQ(why, "expects Tensor but got None");
  EXPECT_TRUE(argumentMatchesType(Argument(), type("Tensor?")));
  // SymInt: Int or SymInt value; int also accepts SymInt values.
  EXPECT_TRUE(argumentMatchesType(int64_t(3), type("SymInt")));
  EXPECT_TRUE(argumentMatchesType(f.s0, type("SymInt")));
  EXPECT_TRUE(argumentMatchesType(f.s0, type("int")));
  EXPECT_FALSE(argumentMatchesType(f.f0, type("int")));
  EXPECT_FALSE(argumentMatchesType(2.0, type("int")));
  EXPECT_FALSE(argumentMatchesType(true, type("int")));
  // float: Int or Float (or symbolic float).
  EXPECT_TRUE(argumentMatchesType(int64_t(3), type("float")));
  EXPECT_TRUE(argumentMatchesType(0.5, type("float")));
  EXPECT_TRUE(argumentMatchesType(f.f0, type("float")));
  EXPECT_FALSE(argumentMatchesType("x", type("float")));
  // Scalar: numbers, bools, symbolic scalars; never tensors.
  for (Argument a : {Argument(int64_t(1)), Argument(1.5), Argument(true), Argument(f.s0),
                     Argument(f.f0), Argument(f.b0)})
    EXPECT_TRUE(argumentMatchesType(a, type("Scalar")));
  EXPECT_FALSE(argumentMatchesType(f.x, type("Scalar")));
  EXPECT_FALSE(argumentMatchesType(Argument(), type("Scalar")));
  EXPECT_TRUE(argumentMatchesType(Argument(), type("Scalar?")));
  EXPECT_TRUE(argumentMatchesType(f.b0, type("bool")));
  // Lists.
  EXPECT_TRUE(argumentMatchesType(Argument::ints({1, 2}), type("int[]")));
  EXPECT_TRUE(argumentMatchesType(Argument(Argument::List{int64_t(1), f.s0}), type("SymInt[]")));
  EXPECT_FALSE(argumentMatchesType(int64_t(1), type("int[]")));
  EXPECT_TRUE(argumentMatchesType(int64_t(1), type("int[2]"))); // torch broadcasts it
  EXPECT_TRUE(argumentMatchesType(Argument(), type("int[1]?")));
  EXPECT_TRUE(argumentMatchesType(Argument(Argument::List{f.x, Argument()}), type("Tensor?[]")));
  EXPECT_FALSE(
      argumentMatchesType(Argument(Argument::List{f.x, Argument()}), type("Tensor[]"), &why));
  EXPECT_EQ(why, "expects Tensor[] but got a list whose element 1 is None");
  EXPECT_TRUE(argumentMatchesType(Argument(Argument::List{f.x, f.x}), type("Tensor[]")));
  // Enumerations and strings.
  EXPECT_TRUE(argumentMatchesType(DType::I8, type("ScalarType")));
  EXPECT_FALSE(argumentMatchesType(int64_t(6), type("ScalarType"), &why));
  EXPECT_EQ(why, "expects ScalarType but got int");
  EXPECT_TRUE(argumentMatchesType(Layout::Strided, type("Layout?")));
  EXPECT_TRUE(argumentMatchesType(Device{"cpu", -1}, type("Device?")));
  EXPECT_TRUE(argumentMatchesType(MemoryFormat::Contiguous, type("MemoryFormat?")));
  EXPECT_FALSE(argumentMatchesType(MemoryFormat::Contiguous, type("Layout?")));
  EXPECT_TRUE(argumentMatchesType("INT", type("str?")));
  EXPECT_FALSE(argumentMatchesType(int64_t(0), type("str")));
  EXPECT_TRUE(argumentMatchesType(Argument(), type("Generator?")));
  EXPECT_TRUE(argumentMatchesType(f.x, type("Any")));
}

TEST(BoundArgs, WrappedNumbersForElementwiseOps) {
  Fixture f;
  // aten.mul.Tensor(%x, 0.5) as torch.export writes it.
  EXPECT_TRUE(BoundArgs::bind(op("aten.mul.Tensor"), {f.x, 0.5}, {}, "y").ok());
  EXPECT_TRUE(BoundArgs::bind(op("aten.add.Tensor"), {f.x, int64_t(1)}, {}, "y").ok());
  // ... but not for the first operand, nor for non-elementwise ops.
  EXPECT_FALSE(BoundArgs::bind(op("aten.mul.Tensor"), {0.5, f.x}, {}, "y").ok());
  EXPECT_FALSE(BoundArgs::bind(op("aten.mm.default"), {f.x, 0.5}, {}, "y").ok());
}

TEST(BoundArgs, LegacyTorchaoSignatures) {
  Graph g;
  Value *q = g.addInput(InputKind::Parameter, "q", TensorProto(DType::I8, {4, 32}), "w");
  Value *s = g.addInput(InputKind::Parameter, "s", TensorProto(DType::F32, {4, 1}), "s");
  const OpSchema &dq = op("torchao.dequantize_affine.default");
  Argument bs = Argument::ints({1, 32});

  // Current signature: output_dtype positional or keyword.
  auto cur = BoundArgs::bind(dq, {q, bs, s, Argument(), DType::I8, int64_t(-8), int64_t(7)},
                             {{"output_dtype", DType::F16}}, "dq");
  ASSERT_TRUE(cur.ok()) << render(cur.diags());
  EXPECT_FALSE(cur->isLegacy());
  EXPECT_FALSE(cur->has("zero_point_domain"));
  EXPECT_EQ(cur->get("output_dtype"), Argument(DType::F16));

  // Old graphs pass zero_point_domain positionally ...
  auto old = BoundArgs::bind(
      dq, {q, bs, s, Argument(), DType::I8, int64_t(-8), int64_t(7), "INT", DType::F32}, {}, "dq");
  ASSERT_TRUE(old.ok()) << render(old.diags());
  EXPECT_TRUE(old->isLegacy());
  EXPECT_EQ(old->legacyIndex(), 0);
  EXPECT_TRUE(old->has("zero_point_domain"));
  EXPECT_EQ(old->get("zero_point_domain"), Argument("INT"));
  EXPECT_EQ(old->get("output_dtype"), Argument(DType::F32));
  EXPECT_EQ(&old->schema(), &dq.legacySchemas[0]);

  // ... or by keyword.
  auto kw = BoundArgs::bind(dq, {q, bs, s, Argument(), DType::I8},
                            {{"zero_point_domain", Argument()}}, "dq");
  ASSERT_TRUE(kw.ok()) << render(kw.diags());
  EXPECT_TRUE(kw->isLegacy());
  EXPECT_TRUE(kw->get("zero_point_domain").isNone());
  EXPECT_EQ(kw->get("output_dtype"), Argument(DType::F32)); // the legacy default (6)

  // Neither fits: the current schema's diagnostics, with a note on the legacy one.
  auto bad = BoundArgs::bind(dq, {q, bs, s}, {{"zero_point_domain", int64_t(0)}}, "dq");
  ASSERT_FALSE(bad.ok());
  std::string msg = render(bad.diags());
  EXPECT_NE(msg.find("unknown keyword argument 'zero_point_domain'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("legacy signature"), std::string::npos) << msg;

  // quantize_affine and choose_qparams_affine too.
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {4, 32}));
  auto qa =
      BoundArgs::bind(op("torchao.quantize_affine.default"),
                      {x, bs, s, Argument(), DType::I8, int64_t(-8), int64_t(7), "INT"}, {}, "qa");
  ASSERT_TRUE(qa.ok()) << render(qa.diags());
  EXPECT_TRUE(qa->isLegacy());
  auto cq =
      BoundArgs::bind(op("torchao.choose_qparams_affine.default"), {x, "ASYMMETRIC", bs, DType::I8},
                      {{"preserve_zero", true}, {"zero_point_domain", "INT"}}, "cq");
  ASSERT_TRUE(cq.ok()) << render(cq.diags());
  EXPECT_TRUE(cq->isLegacy());
  EXPECT_FALSE(cq->has("keepdim"));
}
