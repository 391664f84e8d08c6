//===- FqnRegistryIndexTest.cpp - The FQN index survives copies and moves -===//
//
// The registry's FQN index keys on views of its own entries' names (no second
// copy of every FQN). A copy must rebuild that index over the copy's entries,
// and a move must keep it valid: lookups through the copy or the moved-to
// registry find that registry's entries, also after the original is gone.
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/FqnRegistry.h"

#include <gtest/gtest.h>

#include <memory>

using namespace graft;
using namespace graft::rewrite;

namespace {

/// Two entries: a long FQN (heap-allocated string) and a short one (stored
/// inline in the string object, so a view of it points into the entry).
std::unique_ptr<FqnRegistry> twoEntries() {
  auto r = std::make_unique<FqnRegistry>();
  r->record(TransformRequest{{"tok_embeddings.weight"}, "pack_int4", "nibbles=low_first"},
            TensorProto(DType::U8, {96, 32}), "embedding", SourceRange(), nullptr);
  r->recordAs(TransformRequest{{"w"}, "transpose", "dim0=0, dim1=1"}, "w.t",
              TensorProto(DType::F32, {4, 2}), "lm_head", SourceRange());
  return r;
}

} // namespace

TEST(FqnRegistryIndex, ACopyLooksUpItsOwnEntries) {
  auto original = twoEntries();
  FqnRegistry copy(*original);
  const ProvenanceEntry *before = original->findByFqn("w.t");
  original.reset(); // the copy must not view the original's strings
  ASSERT_EQ(copy.size(), 2u);
  const ProvenanceEntry *packed = copy.findByFqn("tok_embeddings.weight.pack_int4_low_first");
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed, &copy.entries()[0]);
  const ProvenanceEntry *t = copy.findByFqn("w.t");
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t, before);
  EXPECT_EQ(t, &copy.entries()[1]);
  EXPECT_EQ(t->request.transform, "transpose");
  // Every string of the entry is the copy's own.
  ASSERT_EQ(t->request.sources.size(), 1u);
  EXPECT_EQ(t->request.sources[0], "w");
  EXPECT_EQ(t->request.args, "dim0=0, dim1=1");
  EXPECT_EQ(t->key, (TransformRequest{{"w"}, "transpose", "dim0=0, dim1=1"}.key()));
  EXPECT_EQ(copy.findByKey(t->key), t);
  EXPECT_EQ(t->rule(), "lm_head");
  // Reuses are counted on the copy's own entries.
  copy.noteReuse(*t, "other");
  EXPECT_EQ(copy.findByFqn("w.t")->requests, 2u);
  EXPECT_EQ(copy.findByFqn("w.t")->requestedBy(), (std::vector<std::string>{"lm_head", "other"}));
}

TEST(FqnRegistryIndex, CopyAssignmentAndMoveKeepLookupsValid) {
  auto original = twoEntries();
  FqnRegistry assigned;
  assigned = *original;
  FqnRegistry moved(std::move(*original));
  original.reset();
  for (const FqnRegistry *r : {&assigned, &moved}) {
    ASSERT_NE(r->findByFqn("w.t"), nullptr);
    EXPECT_EQ(r->findByFqn("w.t"), &r->entries()[1]);
    EXPECT_EQ(r->findByFqn("tok_embeddings.weight.pack_int4_low_first"), &r->entries()[0]);
    EXPECT_EQ(r->findByFqn("missing"), nullptr);
    EXPECT_EQ(r->proposeFqn(TransformRequest{{"w"}, "transpose", "dim0=0, dim1=1"}, nullptr),
              "w.transpose_0_1");
  }
  FqnRegistry reassigned;
  reassigned = std::move(moved);
  EXPECT_EQ(reassigned.findByFqn("w.t"), &reassigned.entries()[1]);
}

TEST(FqnRegistryIndex, EntriesOwnTheirStringsAndInternRuleAndFileNames) {
  FqnRegistry r;
  SourceRange loc;
  loc.begin.file = "patterns/some/rather/long/path/linear.pat";
  loc.begin.line = 7;
  loc.begin.column = 3;
  {
    // Every argument is a temporary: the registry must keep copies.
    std::string rule = "torchao_linear_q4gsw_with_a_long_name";
    std::vector<std::string_view> sources = {"layers.0.attention.wq.weight"};
    std::string fqn = "layers.0.attention.wq.weight.pack_int4_low_first";
    std::string args = "nibbles=low_first";
    r.recordAs(TransformRequestRef{sources, "pack_int4", args}, fqn, TensorProto(DType::U8, {8}),
               rule, loc);
    rule.assign(rule.size(), 'x');
    fqn.assign(fqn.size(), 'x');
    args.assign(args.size(), 'x');
  }
  r.recordAs(TransformRequest{{"layers.1.attention.wq.weight"}, "pack_int4", "nibbles=low_first"},
             "layers.1.attention.wq.weight.pack_int4_low_first", TensorProto(DType::U8, {8}),
             "torchao_linear_q4gsw_with_a_long_name", loc);
  const ProvenanceEntry &a = r.entries()[0], &b = r.entries()[1];
  EXPECT_EQ(a.fqn, "layers.0.attention.wq.weight.pack_int4_low_first");
  EXPECT_EQ(a.request.sources[0], "layers.0.attention.wq.weight");
  EXPECT_EQ(a.request.args, "nibbles=low_first");
  EXPECT_EQ(a.rule(), "torchao_linear_q4gsw_with_a_long_name");
  EXPECT_EQ(a.loc().range().begin.file, "patterns/some/rather/long/path/linear.pat");
  EXPECT_EQ(a.loc().line, 7u);
  // One copy of a rule name, file name, transform and argument text.
  EXPECT_EQ(a.rule().data(), b.rule().data());
  EXPECT_EQ(a.loc().file.data(), b.loc().file.data());
  // ... and of an origin: the same rule at the same statement.
  EXPECT_EQ(a.origin, b.origin);
  EXPECT_EQ(a.request.args.data(), b.request.args.data());
  EXPECT_EQ(r.findByKey(b.key), &b);
  EXPECT_EQ(
      r.find(TransformRequest{{"layers.0.attention.wq.weight"}, "pack_int4", "nibbles=low_first"}),
      &a);
  EXPECT_EQ(a.request.str(), "pack_int4(layers.0.attention.wq.weight, nibbles=low_first)");
  EXPECT_EQ(a.request.owned().key(), a.key);
}

TEST(FqnRegistryIndex, EqualPrototypesAreInternedOnce) {
  FqnRegistry r;
  r.reserve(8);
  const ProvenanceEntry &a = r.recordAs(TransformRequest{{"a"}, "transpose", "0,1"}, "a.t",
                                        TensorProto(DType::F32, {4, 2}), "x", SourceRange());
  const ProvenanceEntry &b = r.recordAs(TransformRequest{{"b"}, "transpose", "0,1"}, "b.t",
                                        TensorProto(DType::F32, {4, 2}), "x", SourceRange());
  const ProvenanceEntry &c = r.recordAs(TransformRequest{{"c"}, "transpose", "0,1"}, "c.t",
                                        TensorProto(DType::F16, {4, 2}), "x", SourceRange());
  const ProvenanceEntry &d = r.recordAs(TransformRequest{{"d"}, "transpose", "0,1"}, "d.t",
                                        TensorProto(DType::F32, {4, 2}), "x", SourceRange());
  EXPECT_EQ(a.proto, b.proto); // one copy for equal prototypes
  EXPECT_EQ(a.proto, d.proto); // found again after a different one
  EXPECT_NE(a.proto, c.proto);
  EXPECT_EQ(c.proto->str(), "f16[4, 2]");
  FqnRegistry copy(r);
  const ProvenanceEntry *ca = copy.findByFqn("a.t");
  ASSERT_NE(ca, nullptr);
  EXPECT_NE(ca->proto, a.proto); // the copy owns its prototypes
  EXPECT_EQ(*ca->proto, *a.proto);
  EXPECT_EQ(copy.findByFqn("d.t")->proto, ca->proto);
  FqnRegistry moved(std::move(copy));
  EXPECT_EQ(moved.findByFqn("a.t")->proto, ca->proto); // a move keeps them in place
}

TEST(FqnRegistryIndex, SourcesViewTheKeyAndSurviveCopies) {
  FqnRegistry r;
  TransformRequest two{{"a.weight", "b.weight"}, "concat", "dim=0"};
  const ProvenanceEntry &e = r.record(two, TensorProto(DType::F32, {4, 2}), "x", {}, nullptr);
  ASSERT_EQ(e.request.sources.size(), 2u);
  EXPECT_EQ(e.request.sources[0], "a.weight");
  EXPECT_EQ(e.request.sources[1], "b.weight");
  EXPECT_EQ(e.key, two.key());
  // Views into the entry's key, not copies of their own.
  EXPECT_EQ(e.request.sources[0].data(), e.key.data());
  // A caller's key that does not start with the sources: they are copied.
  const ProvenanceEntry &f =
      r.recordAs(TransformRequestRef{e.request.sources, "concat", "dim=1"}, "ab.cat1",
                 TensorProto(DType::F32, {2, 4}), "x", SourceRange(), "unrelated-key");
  EXPECT_EQ(f.request.sources[1], "b.weight");
  EXPECT_EQ(r.findByKey("unrelated-key"), &f);
  FqnRegistry copy(r);
  r = FqnRegistry();
  EXPECT_EQ(copy.find(two)->request.sources[1], "b.weight");
  EXPECT_EQ(copy.findByFqn("ab.cat1")->request.sources[0], "a.weight");
}

TEST(FqnRegistryIndex, OriginsAreSharedPerStatementAndOtherRequestersCopied) {
  FqnRegistry r;
  SourceRange at7, at9;
  at7.begin = {"linear.pat", 7, 3};
  at9.begin = {"linear.pat", 9, 3};
  auto pack = [](std::string w) {
    return TransformRequest{{std::move(w)}, "pack_int4", "nibbles=low_first"};
  };
  TensorProto p(DType::U8, {8});
  const ProvenanceEntry &a = r.recordAs(pack("a"), "a.p", p, "linear", at7);
  const ProvenanceEntry &b = r.recordAs(pack("b"), "b.p", p, "linear", at7);
  const ProvenanceEntry &c = r.recordAs(pack("c"), "c.p", p, "linear", at9);
  const ProvenanceEntry &d = r.recordAs(pack("d"), "d.p", p, "embedding", at7);
  EXPECT_EQ(a.origin, b.origin); // same rule, same statement
  EXPECT_NE(a.origin, c.origin); // another statement
  EXPECT_NE(a.origin, d.origin); // another rule
  EXPECT_EQ(c.loc().line, 9u);
  EXPECT_EQ(d.rule(), "embedding");
  EXPECT_TRUE(a.alsoRequestedBy().empty());
  r.noteReuse(a, "lm_head");
  r.noteReuse(a, "linear"); // the first requester is not listed again
  r.noteReuse(a, "lm_head");
  EXPECT_EQ(a.requests, 4u);
  EXPECT_EQ(a.requestedBy(), (std::vector<std::string>{"linear", "lm_head"}));
  EXPECT_TRUE(b.alsoRequestedBy().empty());
  FqnRegistry copy(r);
  const ProvenanceEntry *ca = copy.findByFqn("a.p");
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(ca->requests, 4u);
  EXPECT_EQ(ca->requestedBy(), (std::vector<std::string>{"linear", "lm_head"}));
  EXPECT_NE(ca->alsoRequestedBy().data(), a.alsoRequestedBy().data()); // the copy's own list
  EXPECT_EQ(ca->origin, copy.findByFqn("b.p")->origin);
  EXPECT_NE(ca->origin, a.origin);
  EXPECT_EQ(ca->loc().line, 7u);
}
