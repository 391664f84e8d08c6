//===- OpSchemaTest.cpp - Schema parsing, YAML op files, the registry -----===//
//
// The torch schema parser (types, defaults, returns, errors with columns),
// the YAML loader (errors with file:line:col, unknown keys, legacy
// signatures) and the built-in registry (every op parses, round-trips through
// str(), names an existing inference rule and is documented in docs/ops.md).
//
//===----------------------------------------------------------------------===//
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace graft;
using B = SchemaType::Base;

namespace {

OpSchema parseOk(std::string_view text) {
  auto s = parseSchema(text);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : render(s.diags()));
  return s.ok() ? *s : OpSchema{};
}

std::string parseError(std::string_view text) {
  auto s = parseSchema(text);
  EXPECT_FALSE(s.ok()) << "parsed: " << text;
  return s.ok() ? std::string() : render(s.diags());
}

std::string loadError(const std::string &yaml) {
  OpRegistry r;
  auto s = r.loadYaml(yaml, "ops.yaml");
  EXPECT_FALSE(s.ok()) << yaml;
  return s.ok() ? std::string() : render(s.diags());
}

} // namespace

//===-- Parsing ------------------------------------------------------------===//

TEST(OpSchema, ParsesLinear) {
  OpSchema s = parseOk("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
  EXPECT_EQ(s.ns, "aten");
  EXPECT_EQ(s.name, "linear");
  EXPECT_EQ(s.overload, "default");
  EXPECT_EQ(s.qualifiedName(), "aten.linear.default");
  ASSERT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.args[0].name, "input");
  EXPECT_EQ(s.args[0].type.base, B::Tensor);
  EXPECT_FALSE(s.args[0].type.optional);
  EXPECT_FALSE(s.args[0].defaultValue.has_value());
  EXPECT_TRUE(s.args[2].type.optional);
  ASSERT_TRUE(s.args[2].defaultValue.has_value());
  EXPECT_TRUE(s.args[2].defaultValue->isNone());
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].type.base, B::Tensor);
  EXPECT_EQ(s.numPositional(), 3u);
  EXPECT_EQ(s.argIndex("weight"), 1);
  EXPECT_EQ(s.argIndex("nope"), -1);
}

TEST(OpSchema, OverloadAndKeywordOnly) {
  OpSchema s = parseOk("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.overload, "Tensor");
  EXPECT_EQ(s.qualifiedName(), "aten.add.Tensor");
  EXPECT_EQ(s.numPositional(), 2u);
  EXPECT_TRUE(s.args[2].keywordOnly);
  EXPECT_EQ(s.args[2].type.base, B::Scalar);
  EXPECT_EQ(*s.args[2].defaultValue, Argument(int64_t(1)));
}

TEST(OpSchema, AllTypeForms) {
  OpSchema s = parseOk(
      "ns::f(Tensor a, Tensor? b, Tensor[] c, Tensor?[] d, Tensor(a) e, Tensor(a!) f, "
      "Tensor(a -> *)[] g, int h, int? i, int[] j, int[2] k, int[1]? l, SymInt m, SymInt[] n, "
      "SymInt[]? o, float p, float? q, float[] r, bool s, bool[] t, str u, str? v, Scalar w, "
      "Scalar? x, ScalarType y, ScalarType? z, Layout? aa, Device? bb, MemoryFormat? cc, "
      "Generator? dd, Any ee) -> Tensor");
  auto type = [&](const char *name) {
    return s.args[static_cast<std::size_t>(s.argIndex(name))].type;
  };
  EXPECT_TRUE(type("c").isList);
  EXPECT_FALSE(type("c").elementOptional);
  EXPECT_TRUE(type("d").isList && type("d").elementOptional && !type("d").optional);
  EXPECT_EQ(type("e").alias, "a");
  EXPECT_FALSE(type("e").isMutable());
  EXPECT_TRUE(type("f").isMutable());
  EXPECT_EQ(type("g").alias, "a -> *");
  EXPECT_TRUE(type("g").isList);
  EXPECT_EQ(type("k").fixedLength, 2);
  EXPECT_TRUE(type("l").isList && type("l").optional && type("l").fixedLength == 1);
  EXPECT_EQ(type("m").base, B::SymInt);
  EXPECT_TRUE(type("o").isList && type("o").optional && type("o").base == B::SymInt);
  EXPECT_EQ(type("p").base, B::Float);
  EXPECT_EQ(type("u").base, B::Str);
  EXPECT_EQ(type("y").base, B::ScalarType);
  EXPECT_EQ(type("aa").base, B::Layout);
  EXPECT_EQ(type("bb").base, B::Device);
  EXPECT_EQ(type("cc").base, B::MemoryFormat);
  EXPECT_EQ(type("dd").base, B::Generator);
  EXPECT_EQ(type("ee").base, B::Any);
  // SchemaType::str spells each form back.
  EXPECT_EQ(type("d").str(), "Tensor?[]");
  EXPECT_EQ(type("g").str(), "Tensor(a -> *)[]");
  EXPECT_EQ(type("l").str(), "int[1]?");
  EXPECT_EQ(type("f").str(), "Tensor(a!)");
  EXPECT_EQ(type("o").str(), "SymInt[]?");
}

TEST(OpSchema, Defaults) {
  OpSchema s = parseOk(
      "ns::f(Tensor x, int a=-1, int b=3, float c=1e-05, float d=0.0, float e=2, bool f=True, "
      "bool g=False, str h=\"mean\", str i='none', int[] j=[0,1], int[] k=[], "
      "MemoryFormat m=contiguous_format, ScalarType n=float32, ScalarType o=6, ScalarType p=15, "
      "ScalarType q=11, ScalarType r=4, Layout s=strided, Scalar t=1.5, int[2] u=1, "
      "Device v=\"cpu\", float w=-inf) -> Tensor");
  auto def = [&](const char *name) {
    return *s.args[static_cast<std::size_t>(s.argIndex(name))].defaultValue;
  };
  EXPECT_EQ(def("a"), Argument(int64_t(-1)));
  EXPECT_EQ(def("b"), Argument(int64_t(3)));
  EXPECT_EQ(def("c"), Argument(1e-05));
  EXPECT_EQ(def("d"), Argument(0.0));
  EXPECT_EQ(def("e"), Argument(2.0)); // an int literal for a float parameter
  EXPECT_EQ(def("f"), Argument(true));
  EXPECT_EQ(def("g"), Argument(false));
  EXPECT_EQ(def("h"), Argument("mean"));
  EXPECT_EQ(def("i"), Argument("none"));
  EXPECT_EQ(def("j"), Argument::ints({0, 1}));
  EXPECT_EQ(def("k"), Argument(Argument::List{}));
  EXPECT_EQ(def("m"), Argument(MemoryFormat::Contiguous));
  EXPECT_EQ(def("n"), Argument(DType::F32));
  EXPECT_EQ(def("o"), Argument(DType::F32)); // c10 ScalarType numbering
  EXPECT_EQ(def("p"), Argument(DType::BF16));
  EXPECT_EQ(def("q"), Argument(DType::Bool));
  EXPECT_EQ(def("r"), Argument(DType::I64));
  EXPECT_EQ(def("s"), Argument(Layout::Strided));
  EXPECT_EQ(def("t"), Argument(1.5));
  EXPECT_EQ(def("u"), Argument(int64_t(1)));
  EXPECT_EQ(def("v"), Argument(Device{"cpu", -1}));
  EXPECT_TRUE(def("w").isFloat() && std::isinf(def("w").floating()) && def("w").floating() < 0);
}

TEST(OpSchema, ScalarTypeNumbering) {
  EXPECT_EQ(dtypeFromScalarTypeIndex(0), DType::U8);
  EXPECT_EQ(dtypeFromScalarTypeIndex(1), DType::I8);
  EXPECT_EQ(dtypeFromScalarTypeIndex(2), DType::I16);
  EXPECT_EQ(dtypeFromScalarTypeIndex(3), DType::I32);
  EXPECT_EQ(dtypeFromScalarTypeIndex(4), DType::I64);
  EXPECT_EQ(dtypeFromScalarTypeIndex(5), DType::F16);
  EXPECT_EQ(dtypeFromScalarTypeIndex(6), DType::F32);
  EXPECT_EQ(dtypeFromScalarTypeIndex(7), DType::F64);
  EXPECT_EQ(dtypeFromScalarTypeIndex(11), DType::Bool);
  EXPECT_EQ(dtypeFromScalarTypeIndex(15), DType::BF16);
  EXPECT_EQ(dtypeFromScalarTypeIndex(24), DType::F8E4M3FN);
  EXPECT_EQ(dtypeFromScalarTypeIndex(20), std::nullopt); // bits4x2: no graft dtype
  EXPECT_EQ(dtypeFromScalarTypeIndex(-1), std::nullopt);
  EXPECT_EQ(dtypeFromScalarTypeIndex(1000), std::nullopt);
  for (int64_t i = 0; i < 46; ++i) {
    if (auto d = dtypeFromScalarTypeIndex(i)) {
      EXPECT_EQ(scalarTypeIndex(*d), i);
    }
  }
}

TEST(OpSchema, Returns) {
  EXPECT_EQ(parseOk("a::f(Tensor(a) x) -> Tensor(a)").returns[0].type.alias, "a");
  OpSchema two = parseOk("a::f(Tensor x) -> (Tensor, Tensor)");
  EXPECT_EQ(two.returns.size(), 2u);
  OpSchema named = parseOk(
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(named.returns.size(), 2u);
  EXPECT_EQ(named.returns[0].name, "values");
  EXPECT_EQ(named.returns[1].name, "indices");
  OpSchema list = parseOk("a::f(Tensor x) -> Tensor[]");
  EXPECT_TRUE(list.returns[0].type.isList);
  EXPECT_EQ(parseOk("a::f(Tensor x) -> SymInt").returns[0].type.base, B::SymInt);
  EXPECT_EQ(parseOk("a::f(Tensor x) -> Scalar").returns[0].type.base, B::Scalar);
  EXPECT_TRUE(parseOk("a::f(Scalar x) -> ()").returns.empty());
  EXPECT_TRUE(parseOk("a::f() -> ()").args.empty());
}

TEST(OpSchema, ErrorsQuoteSchemaAndColumn) {
  std::string e = parseError("aten::foo(Tensor x, Tensr y) -> Tensor");
  EXPECT_NE(e.find("column 21"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown type 'Tensr'"), std::string::npos) << e;
  EXPECT_NE(e.find("aten::foo(Tensor x, Tensr y) -> Tensor"), std::string::npos) << e;
  auto s = parseSchema("aten::foo(Tensor x, Tensr y) -> Tensor");
  ASSERT_TRUE(s.diags()[0].range.has_value());
  EXPECT_EQ(s.diags()[0].range->begin.column, 21u);

  EXPECT_NE(parseError("aten::foo(Tensor x").find("expected ',' or ')'"), std::string::npos);
  EXPECT_NE(parseError("foo(Tensor x) -> Tensor").find("expected '::'"), std::string::npos);
  EXPECT_NE(parseError("aten::foo(Tensor x)").find("expected '->'"), std::string::npos);
  EXPECT_NE(parseError("aten::foo(int x=None) -> Tensor").find("default None for non-optional"),
            std::string::npos);
  EXPECT_NE(parseError("aten::foo(int x=1.5) -> Tensor").find("does not fit type 'int'"),
            std::string::npos);
  EXPECT_NE(parseError("aten::foo(bool x=1) -> Tensor").find("does not fit"), std::string::npos);
  EXPECT_NE(parseError("aten::foo(ScalarType x=99) -> Tensor").find("unknown ScalarType number 99"),
            std::string::npos);
  EXPECT_NE(parseError("aten::foo(ScalarType x=floaty) -> Tensor").find("unknown dtype 'floaty'"),
            std::string::npos);
  EXPECT_NE(
      parseError("aten::foo(Tensor x, Tensor x) -> Tensor").find("duplicate argument name 'x'"),
      std::string::npos);
  EXPECT_NE(
      parseError("aten::foo(Tensor x, *, int a, *, int b) -> Tensor").find("'*' appears twice"),
      std::string::npos);
  EXPECT_NE(parseError("aten::foo(str s=\"abc) -> Tensor").find("unterminated string"),
            std::string::npos);
  EXPECT_NE(parseError("aten::foo(int[] x=[1,) -> Tensor").find("expected a default value"),
            std::string::npos);
  EXPECT_NE(parseError("aten::foo(int[] x=1) -> Tensor").find("scalar default for list type"),
            std::string::npos);
  EXPECT_NE(parseError("aten::foo(Tensor x) -> Tensor junk").find("unexpected text"),
            std::string::npos);
  EXPECT_NE(
      parseError("aten::foo(int a=1, int b) -> Tensor").find("follows an argument with a default"),
      std::string::npos);
  EXPECT_NE(parseError("aten::foo(int a=99999999999999999999) -> Tensor").find("out-of-range"),
            std::string::npos);
}

TEST(OpSchema, StrRoundTrips) {
  const char *schemas[] = {
      "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
      "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
      "ns::f(Tensor x, float eps=1e-05, float z=0.0, int d=-1, int[] l=[0, 1], "
      "MemoryFormat m=contiguous_format, str s='a', ScalarType t=6, int[2] u=1) -> ()",
  };
  for (const char *text : schemas) {
    OpSchema a = parseOk(text);
    std::string once = a.str();
    OpSchema b = parseOk(once);
    EXPECT_EQ(b.str(), once) << text;
    ASSERT_EQ(a.args.size(), b.args.size());
    for (std::size_t i = 0; i < a.args.size(); ++i) {
      EXPECT_EQ(a.args[i].name, b.args[i].name);
      EXPECT_EQ(a.args[i].type.str(), b.args[i].type.str());
      EXPECT_EQ(a.args[i].defaultValue, b.args[i].defaultValue) << once;
      EXPECT_EQ(a.args[i].keywordOnly, b.args[i].keywordOnly);
    }
  }
  EXPECT_EQ(parseOk("aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor").str(),
            "aten::linear.default(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
  EXPECT_EQ(parseOk("a::f(Tensor x, float e=1e-05, float z=0.0) -> Tensor").str(),
            "a::f.default(Tensor x, float e=1e-05, float z=0.0) -> Tensor");
}

//===-- YAML ---------------------------------------------------------------===//

TEST(OpRegistry, LoadsYaml) {
  OpRegistry r;
  auto s = r.loadYaml(R"(
- schema: "my::op(Tensor x, int k=2) -> Tensor"
  infer: same_as_input
  kernel: my_kernel
  doc: "identity"
  properties: [elementwise, commutative, view, side_effects, ephemeral]
- schema: "my::op.other(Tensor x) -> Tensor"
  legacy_schemas:
    - "my::op.other(Tensor x, str mode='a') -> Tensor"
)",
                      "my.yaml");
  ASSERT_TRUE(s.ok()) << render(s.diags());
  EXPECT_EQ(r.size(), 2u);
  const OpSchema *op = r.lookup("my.op.default");
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->inferRule, "same_as_input");
  EXPECT_EQ(op->kernel, "my_kernel");
  EXPECT_EQ(op->doc, "identity");
  EXPECT_EQ(op->source, "my.yaml");
  EXPECT_TRUE(op->properties.elementwise && op->properties.commutative && op->properties.view &&
              op->properties.sideEffects && op->properties.ephemeral);
  const OpSchema *other = r.lookup("my.op.other");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->kernel, "my.op.other"); // the default kernel name
  ASSERT_EQ(other->legacySchemas.size(), 1u);
  EXPECT_EQ(other->legacySchemas[0].args.size(), 2u);
  EXPECT_EQ(r.overloads("my.op").size(), 2u);
  EXPECT_TRUE(r.overloads("my.o").empty());
  EXPECT_EQ(r.all().size(), 2u);
  EXPECT_TRUE(r.loadYaml("", "empty.yaml").ok());
}

TEST(OpRegistry, YamlErrorsNameLineAndColumn) {
  std::string e = loadError("- schema: \"a::f(Tensor x) -> Tensor\"\n  infr: same_as_input\n");
  EXPECT_NE(e.find("ops.yaml:2:3"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'infr'"), std::string::npos) << e;

  // A schema error points into the YAML file: line 2, the quote at col 11, 'Tensr' 8 further.
  e = loadError("- doc: x\n  schema: \"a::f(Tensr x) -> Tensor\"\n");
  EXPECT_NE(e.find("ops.yaml:2:17"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown type 'Tensr'"), std::string::npos) << e;

  e = loadError("- schema: \"a::f(Tensor x) -> Tensor\"\n  properties: [elementwize]\n");
  EXPECT_NE(e.find("ops.yaml:2:16"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown op property 'elementwize'"), std::string::npos) << e;

  e = loadError("- infer: x\n");
  EXPECT_NE(e.find("ops.yaml:1:3"), std::string::npos) << e;
  EXPECT_NE(e.find("has no 'schema'"), std::string::npos) << e;

  e = loadError("- schema: \"a::f(Tensor x) -> Tensor\"\n- schema: \"a::f(Tensor y) -> Tensor\"\n");
  EXPECT_NE(e.find("ops.yaml:2:3"), std::string::npos) << e;
  EXPECT_NE(e.find("a.f.default is declared twice"), std::string::npos) << e;

  e = loadError(
      "- schema: \"a::f(Tensor x) -> Tensor\"\n  legacy_schemas: [\"a::g(Tensor x) -> Tensor\"]\n");
  EXPECT_NE(e.find("legacy schema names a.g.default, expected a.f.default"), std::string::npos)
      << e;

  e = loadError("- schema: [1, 2]\n");
  EXPECT_NE(e.find("ops.yaml:1:11"), std::string::npos) << e;
  EXPECT_NE(e.find("must be a string"), std::string::npos) << e;

  e = loadError("schema: x\n");
  EXPECT_NE(e.find("must be a YAML list"), std::string::npos) << e;

  e = loadError("- schema: \"a::f(Tensor x) -> Tensor\"\n  doc: [unclosed\n");
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
  EXPECT_NE(e.find("ops.yaml:"), std::string::npos) << e;

  // A bad file adds nothing, and re-registering a known op is an error.
  OpRegistry r;
  EXPECT_FALSE(
      r.loadYaml("- schema: \"a::f(Tensor x) -> Tensor\"\n- schema: \"a::g(Tensr x) -> Tensor\"\n",
                 "x.yaml")
          .ok());
  EXPECT_EQ(r.size(), 0u);
  ASSERT_TRUE(r.loadYaml("- schema: \"a::f(Tensor x) -> Tensor\"\n", "x.yaml").ok());
  EXPECT_FALSE(r.loadYaml("- schema: \"a::f(Tensor x) -> Tensor\"\n", "y.yaml").ok());
  EXPECT_FALSE(r.add(*parseSchema("a::f(Tensor x) -> Tensor")).ok());
}

TEST(OpRegistry, CanonicalTarget) {
  EXPECT_EQ(canonicalTarget("aten.linear.default"), "aten.linear.default");
  EXPECT_EQ(canonicalTarget("torch.ops.aten.linear.default"), "aten.linear.default");
  EXPECT_EQ(canonicalTarget("aten::linear"), "aten.linear.default");
  EXPECT_EQ(canonicalTarget("aten::add.Tensor"), "aten.add.Tensor");
  EXPECT_EQ(canonicalTarget("aten.linear"), "aten.linear.default");
  EXPECT_EQ(canonicalTarget("torch.ops.torchao.dequantize_affine.default"),
            "torchao.dequantize_affine.default");
}

//===-- Built-in registry ----------------------------------------------------===//

TEST(BuiltinOps, EveryOpRoundTripsAndHasARule) {
  const OpRegistry &r = OpRegistry::builtin();
  const InferenceRules &rules = InferenceRules::builtin();
  ASSERT_GT(r.size(), 80u);
  for (const OpSchema *op : r.all()) {
    SCOPED_TRACE(op->qualifiedName());
    EXPECT_FALSE(op->doc.empty());
    EXPECT_NE(rules.find(op->inferRule), nullptr) << op->inferRule;
    EXPECT_EQ(op->kernel, op->qualifiedName());
    std::vector<const OpSchema *> all{op};
    for (const OpSchema &l : op->legacySchemas)
      all.push_back(&l);
    for (const OpSchema *s : all) {
      auto again = parseSchema(s->str());
      ASSERT_TRUE(again.ok()) << render(again.diags());
      EXPECT_EQ(again->str(), s->str());
      EXPECT_EQ(again->qualifiedName(), op->qualifiedName());
      ASSERT_EQ(again->args.size(), s->args.size());
      for (std::size_t i = 0; i < s->args.size(); ++i)
        EXPECT_EQ(again->args[i].defaultValue, s->args[i].defaultValue) << s->str();
    }
  }
}

TEST(BuiltinOps, RequiredOpsAndProperties) {
  const OpRegistry &r = OpRegistry::builtin();
  const char *required[] = {"aten.embedding.default",
                            "aten.linear.default",
                            "aten.mm.default",
                            "aten.bmm.default",
                            "aten.matmul.default",
                            "aten.addmm.default",
                            "aten.t.default",
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
                            "aten.cat.default",
                            "aten.clone.default",
                            "aten._to_copy.default",
                            "aten.add.Tensor",
                            "aten.add.Scalar",
                            "aten.sub.Tensor",
                            "aten.mul.Tensor",
                            "aten.mul.Scalar",
                            "aten.div.Tensor",
                            "aten.div.Tensor_mode",
                            "aten.neg.default",
                            "aten.pow.Tensor_Scalar",
                            "aten.pow.Tensor_Tensor",
                            "aten.rsqrt.default",
                            "aten.sqrt.default",
                            "aten.mean.dim",
                            "aten.sum.dim_IntList",
                            "aten.amax.default",
                            "aten.amin.default",
                            "aten.softmax.int",
                            "aten._softmax.default",
                            "aten.silu.default",
                            "aten.gelu.default",
                            "aten.relu.default",
                            "aten.sigmoid.default",
                            "aten.scaled_dot_product_attention.default",
                            "aten.full.default",
                            "aten._local_scalar_dense.default",
                            "aten.sym_constrain_range_for_size.default",
                            "aten._assert_scalar.default",
                            "aten._weight_int8pack_mm.default",
                            "aten.sym_size.int",
                            "aten.view_copy.default",
                            "aten.permute_copy.default",
                            "aten.t_copy.default",
                            "aten.transpose_copy.int",
                            "aten.slice_copy.Tensor",
                            "aten.select_copy.int",
                            "aten.unsqueeze_copy.default",
                            "aten.squeeze_copy.dims",
                            "aten.expand_copy.default",
                            "dim_order_ops._to_dim_order_copy.default",
                            "torchao.quantize_affine.default",
                            "torchao.dequantize_affine.default",
                            "torchao.choose_qparams_affine.default",
                            "torchao.fake_quantize_affine.default",
                            "quantized_decomposed.quantize_per_tensor.default",
                            "quantized_decomposed.quantize_per_tensor.tensor",
                            "quantized_decomposed.dequantize_per_tensor.default",
                            "quantized_decomposed.dequantize_per_tensor.tensor",
                            "quantized_decomposed.quantize_per_channel.default",
                            "quantized_decomposed.dequantize_per_channel.default",
                            "quantized_decomposed.quantize_per_channel_group.default",
                            "quantized_decomposed.dequantize_per_channel_group.default",
                            "quantized_decomposed.choose_qparams_per_token_asymmetric.default",
                            "quantized_decomposed.choose_qparams.tensor",
                            "quantized_decomposed.choose_qparams_symmetric.tensor",
                            "quantized_decomposed.quantize_per_token.default",
                            "quantized_decomposed.dequantize_per_token.default",
                            "quantized_decomposed.embedding_4bit.default",
                            "quantized_decomposed.embedding_4bit.dtype",
                            "quantized_decomposed.embedding_2bit.default",
                            "quantized_decomposed.embedding_2bit.dtype",
                            "quantized_decomposed.embedding_byte.default",
                            "quantized_decomposed.embedding_byte.dtype",
                            "et_vk.embedding_q4gsw.default",
                            "et_vk.linear_q4gsw.default",
                            "et_vk.linear_dq8ca_q4gsw.default",
                            "et_vk.linear_dq8ca_q8csw.default",
                            "et_vk.linear_qcs4w.default",
                            "et_vk.linear_q8ta_q8csw.default",
                            "et_vk.q8ta_linear.default",
                            "et_vk.q8ta_linear_gemv.default",
                            "et_vk.rms_norm.default",
                            "et_vk.apply_rotary_emb.default",
                            "et_vk.apply_rotary_emb_hf.default"};
  for (const char *name : required)
    EXPECT_NE(r.lookup(name), nullptr) << name;
  EXPECT_TRUE(r.lookup("aten.add.Tensor")->properties.commutative);
  EXPECT_TRUE(r.lookup("aten.mul.Tensor")->properties.commutative);
  EXPECT_FALSE(r.lookup("aten.sub.Tensor")->properties.commutative);
  EXPECT_TRUE(r.lookup("aten.relu.default")->properties.elementwise);
  EXPECT_TRUE(r.lookup("aten.view.default")->properties.view);
  EXPECT_FALSE(r.lookup("aten.view_copy.default")->properties.view);
  for (const char *n :
       {"aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"}) {
    EXPECT_TRUE(r.lookup(n)->properties.sideEffects) << n;
    EXPECT_TRUE(r.lookup(n)->properties.ephemeral) << n;
    EXPECT_TRUE(r.lookup(n)->returns.empty()) << n;
  }
  EXPECT_EQ(r.overloads("aten.squeeze").size(), 3u);
  EXPECT_EQ(r.lookup("torchao.dequantize_affine.default")->legacySchemas.size(), 1u);
  EXPECT_EQ(r.lookup(canonicalTarget("torch.ops.aten.linear.default"))->name, "linear");
  // The legacy torchao signature from pytorch/executorch#10663 is what we declare.
  auto legacy = parseSchema(
      "torchao::dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale, Tensor? "
      "zero_point, ScalarType input_dtype, Scalar? quant_min=None, Scalar? quant_max=None, str? "
      "zero_point_domain=\"INT\", ScalarType output_dtype=6) -> Tensor");
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ(legacy->str(), r.lookup("torchao.dequantize_affine.default")->legacySchemas[0].str());
}

// docs/ops.md is the op catalogue: every registered op must appear in it.
TEST(BuiltinOps, EveryOpIsDocumented) {
  auto doc = readFile(std::string(GRAFT_TEST_DATA_DIR) + "/../docs/ops.md");
  ASSERT_TRUE(doc.ok()) << render(doc.diags());
  for (const OpSchema *op : OpRegistry::builtin().all())
    EXPECT_NE(doc->find("`" + op->qualifiedName() + "`"), std::string::npos)
        << op->qualifiedName() << " is missing from docs/ops.md";
}

TEST(OpRegistry, NoneMeansDeclaresTheQuantRangeOfADTypeArgument) {
  const OpSchema *q = OpRegistry::builtin().lookup("torchao.quantize_affine.default");
  ASSERT_NE(q, nullptr);
  const SchemaArg &qmin = q->args[static_cast<std::size_t>(q->argIndex("quant_min"))];
  const SchemaArg &qmax = q->args[static_cast<std::size_t>(q->argIndex("quant_max"))];
  EXPECT_EQ(qmin.noneRangeOf, q->argIndex("output_dtype"));
  EXPECT_FALSE(qmin.noneRangeMax);
  EXPECT_EQ(qmax.noneRangeOf, q->argIndex("output_dtype"));
  EXPECT_TRUE(qmax.noneRangeMax);
  // The legacy signature (zero_point_domain) carries it too.
  ASSERT_FALSE(q->legacySchemas.empty());
  const OpSchema &old = q->legacySchemas[0];
  EXPECT_EQ(old.args[static_cast<std::size_t>(old.argIndex("quant_min"))].noneRangeOf,
            old.argIndex("output_dtype"));
  // dequantize_affine's range is its input dtype's.
  const OpSchema *dq = OpRegistry::builtin().lookup("torchao.dequantize_affine.default");
  ASSERT_NE(dq, nullptr);
  EXPECT_EQ(dq->args[static_cast<std::size_t>(dq->argIndex("quant_min"))].noneRangeOf,
            dq->argIndex("input_dtype"));

  const std::string op = "- schema: \"a::q(Tensor x, ScalarType dt, Scalar? lo=None, int n=0) "
                         "-> Tensor\"\n";
  std::string e = loadError(op + "  none_means: {hi: qmin(dt)}\n");
  EXPECT_NE(e.find("ops.yaml:2:16"), std::string::npos) << e;
  EXPECT_NE(e.find("'none_means' names 'hi'"), std::string::npos) << e;
  e = loadError(op + "  none_means: {lo: qmid(dt)}\n");
  EXPECT_NE(e.find("must be qmin(<dtype argument>) or qmax(<dtype argument>)"), std::string::npos)
      << e;
  e = loadError(op + "  none_means: {lo: qmin(x)}\n");
  EXPECT_NE(e.find("needs a ScalarType argument, 'x'"), std::string::npos) << e;
  e = loadError(op + "  none_means: {n: qmin(dt)}\n");
  EXPECT_NE(e.find("'n' must be an optional scalar"), std::string::npos) << e;
  e = loadError(op + "  none_means: [lo]\n");
  EXPECT_NE(e.find("'none_means' must map argument names"), std::string::npos) << e;
}
