//===- FqnRegistryTest.cpp - Same request, same constant; never in place --===//
#include "graft/rewrite/FqnRegistry.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace graft;
using namespace graft::rewrite;

namespace {

TransformRequest req(std::vector<std::string> sources, std::string transform, std::string args) {
  return TransformRequest{std::move(sources), std::move(transform), std::move(args)};
}

TensorProto proto(DType dt, Shape s) {
  return TensorProto(dt, std::move(s));
}

} // namespace

TEST(FqnRegistry, DerivedNamesAreDeterministicAndReadable) {
  EXPECT_EQ(
      FqnRegistry::deriveFqn(req({"tok_embeddings.weight"}, "pack_int4", "nibbles=low_first")),
      "tok_embeddings.weight.pack_int4_low_first");
  EXPECT_EQ(FqnRegistry::deriveFqn(
                req({"layers.0.wq.scales"}, "pad_to_multiple", "dim=1, multiple=8, value=0.0")),
            "layers.0.wq.scales.pad_to_multiple_1_8_0");
  EXPECT_EQ(FqnRegistry::deriveFqn(req({"w"}, "reshape", "shape=[4, -1]")), "w.reshape_4xm1");
  EXPECT_EQ(FqnRegistry::deriveFqn(req({"w"}, "pad_to_multiple", "dim=0, multiple=4, value=0.5")),
            "w.pad_to_multiple_0_4_0p5");
  EXPECT_EQ(FqnRegistry::deriveFqn(req({"a", "b"}, "concat", "")), "a+b.concat");
}

TEST(FqnRegistry, TheSameRequestReturnsTheSameConstant) {
  FqnRegistry r;
  auto pack = req({"tok_embeddings.weight"}, "pack_int4", "nibbles=low_first");
  EXPECT_EQ(r.find(pack), nullptr);
  const ProvenanceEntry &e =
      r.record(pack, proto(DType::U8, {96, 32}), "embedding", SourceRange(), nullptr);
  EXPECT_EQ(e.fqn, "tok_embeddings.weight.pack_int4_low_first");
  const ProvenanceEntry *again = r.find(pack);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->fqn, e.fqn);
  r.noteReuse(*again, "lm_head");
  r.noteReuse(*again, "lm_head");
  EXPECT_EQ(r.findByFqn(e.fqn)->requests, 3u);
  EXPECT_EQ(r.findByFqn(e.fqn)->requestedBy(), (std::vector<std::string>{"embedding", "lm_head"}));
  EXPECT_EQ(r.size(), 1u);
}

TEST(FqnRegistry, DifferentTransformsOfOneFqnAreSeparateConstants) {
  FqnRegistry r;
  auto t = req({"tok_embeddings.scales"}, "transpose", "dim0=0, dim1=1");
  auto p = req({"tok_embeddings.scales"}, "pad_to_multiple", "dim=1, multiple=8, value=0.0");
  const ProvenanceEntry &a = r.record(t, proto(DType::F32, {2, 96}), "lm_head", {}, nullptr);
  const ProvenanceEntry &b = r.record(p, proto(DType::F32, {96, 8}), "other", {}, nullptr);
  EXPECT_NE(a.fqn, b.fqn);
  EXPECT_EQ(r.derivedFrom("tok_embeddings.scales").size(), 2u);
  // A chain: transpose, then pad the transposed constant.
  auto chained = req({std::string(a.fqn)}, "pad_to_multiple", "dim=1, multiple=128, value=0.0");
  const ProvenanceEntry &c = r.record(chained, proto(DType::F32, {2, 128}), "lm_head", {}, nullptr);
  EXPECT_EQ(c.fqn, "tok_embeddings.scales.transpose_0_1.pad_to_multiple_1_128_0");
  EXPECT_EQ(r.originsOf(c.fqn), std::vector<std::string>{"tok_embeddings.scales"});
  EXPECT_EQ(r.originsOf("unrelated"), std::vector<std::string>{"unrelated"});
}

TEST(FqnRegistry, NameCollisionsGetASuffix) {
  FqnRegistry r;
  std::set<std::string> graphFqns = {"w.cast_f16"};
  auto taken = [&](const std::string &n) { return graphFqns.count(n) != 0; };
  auto a = req({"w"}, "cast", "dtype=f16");
  EXPECT_EQ(r.proposeFqn(a, taken), "w.cast_f16_2");
  const ProvenanceEntry &e = r.record(a, proto(DType::F16, {4}), "r", {}, taken);
  EXPECT_EQ(e.fqn, "w.cast_f16_2");
  // A request whose derived name collides with an earlier entry.
  auto b = req({"w"}, "cast", "dtype=f16 ");
  EXPECT_EQ(r.record(b, proto(DType::F16, {4}), "r", {}, taken).fqn, "w.cast_f16_3");
}

TEST(FqnRegistry, ProvenancePrintsAsTextAndJson) {
  FqnRegistry r;
  SourceRange loc;
  loc.begin.file = "patterns/embedding.pat";
  loc.begin.line = 9;
  loc.begin.column = 5;
  const ProvenanceEntry &e =
      r.record(req({"tok_embeddings.weight"}, "pack_int4", "nibbles=low_first"),
               proto(DType::U8, {96, 32}), "torchao_embedding_q4gsw", loc, nullptr);
  r.noteReuse(e, "torchao_linear_q4gsw");
  EXPECT_EQ(r.str(), "tok_embeddings.weight.pack_int4_low_first : u8[96, 32] = "
                     "pack_int4(tok_embeddings.weight, nibbles=low_first)  "
                     "[torchao_embedding_q4gsw x2]\n");
  auto j = nlohmann::json::parse(r.toJson());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["fqn"], "tok_embeddings.weight.pack_int4_low_first");
  EXPECT_EQ(j[0]["transform"], "pack_int4");
  EXPECT_EQ(j[0]["sources"][0], "tok_embeddings.weight");
  EXPECT_EQ(j[0]["args"], "nibbles=low_first");
  EXPECT_EQ(j[0]["shape"], "[96, 32]");
  EXPECT_EQ(j[0]["dtype"], "u8");
  EXPECT_EQ(j[0]["loc"], "patterns/embedding.pat:9:5");
  EXPECT_EQ(j[0]["requests"], 2);
  EXPECT_EQ(j[0]["requested_by"][1], "torchao_linear_q4gsw");
  EXPECT_EQ(FqnRegistry().toJson(), "[]");
}
