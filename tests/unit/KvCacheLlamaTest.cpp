//===- KvCacheLlamaTest.cpp - KV-cache Llama decode against no-cache runs -===//
//
// The correctness oracle for `graft synth llama --kv-cache`: the reference
// interpreter runs a KV-cache model over a prefill and then one decode step
// per token, carrying the caches in a MutableState, and at every position
// its logits must equal those of the model without a cache run on the whole
// prefix (its last-token logits). Both ExecuTorch export forms (custom:
// llama.update_cache + llama.custom_sdpa; plain: index_copy_ + aten SDPA
// with the narrowed tril mask), 4w and 8da4w, tied embeddings, and grouped
// KV heads. The comparison is exact: masked keys get probability 0 and
// every other value is computed by the same per-row sequence of operations
// in both runs (docs/numerics.md), so a stale or misplaced cache entry
// shows up as a difference, not as noise.
//
// The models also go through writePt2 / readPt2, so the BUFFER_MUTATION
// outputs of the graph signature are what the interpreter follows.
//
//===----------------------------------------------------------------------===//
#include "SynthTestUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/Synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace graft;

namespace {

struct Case {
  SynthKvCache form;
  SynthQuant quant;
  int kvHeads;
  /// false: a static one-token sequence (--dynamic-pos --seq-len 1), which
  /// prefills one token per call.
  bool dynamicSeq = true;
};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string q = std::string(name(info.param.quant));
  q.erase(std::remove(q.begin(), q.end(), '-'), q.end());
  return std::string(name(info.param.form)) + "_q" + q + "_kv" +
         std::to_string(info.param.kvHeads) + (info.param.dynamicSeq ? "" : "_seq1");
}

LlamaSynthOptions options(const Case &c, SynthKvCache form) {
  LlamaSynthOptions o;
  o.layers = 2;
  o.dim = 64;
  o.heads = 4;
  o.kvHeads = c.kvHeads;
  o.vocab = 96;
  o.maxSeqLen = 16;
  // The reference model (no cache) always takes the whole prefix.
  bool dynamic = c.dynamicSeq || form == SynthKvCache::None;
  o.seqLen = dynamic ? 4 : 1;
  o.quant = c.quant;
  o.tiedEmbeddings = true;
  o.dynamicSeq = dynamic;
  o.dynamicPos = !dynamic;
  o.kvCache = form;
  o.seed = 7;
  return o;
}

/// The graph after a .pt2 round trip (what a user's file gives).
std::unique_ptr<Graph> throughPt2(const LlamaSynthOptions &o, const std::string &path) {
  auto g = synthesizeLlama(o);
  EXPECT_TRUE(g.ok()) << render(g.diags());
  if (!g.ok())
    return nullptr;
  Status s = writePt2(**g, path, synthWriteOptions(o));
  EXPECT_TRUE(s.ok()) << render(s.diags());
  auto p = readPt2(path);
  EXPECT_TRUE(p.ok()) << render(p.diags());
  if (!p.ok())
    return nullptr;
  return std::move(p->graph);
}

Tensor tokensOf(const std::vector<int64_t> &ids) {
  return Tensor::fromInts(DType::I64, {1, static_cast<int64_t>(ids.size())}, ids);
}
Tensor position(int64_t p) {
  return Tensor::fromInts(DType::I64, {1}, {p});
}

/// The user (logits) output of a run: the last output.
Tensor logitsOf(const std::vector<RuntimeValue> &outs) {
  return std::get<Tensor>(outs.back());
}

class KvCacheDecode : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    std::string leaf = "graft-kvcache-" + std::to_string(::getpid()) + "-" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(leaf.begin(), leaf.end(), '/', '_');
    dir_ = std::filesystem::temp_directory_path() / leaf;
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path dir_;
};

TEST_P(KvCacheDecode, PrefillThenDecodeEqualsFullSequenceLogits) {
  const Case c = GetParam();
  auto cached = throughPt2(options(c, c.form), (dir_ / "kv.pt2").string());
  auto full = throughPt2(options(c, SynthKvCache::None), (dir_ / "full.pt2").string());
  ASSERT_TRUE(cached && full);

  // The signature lists each layer's k_cache and v_cache as mutated.
  int mutations = 0;
  for (const GraphOutput &o : cached->outputs())
    if (o.kind == OutputKind::BufferMutation) {
      ++mutations;
      EXPECT_NE(o.target.find(".attention.kv_cache."), std::string::npos) << o.target;
    }
  EXPECT_EQ(mutations, 4);

  const std::vector<int64_t> ids = {5, 17, 3, 88, 42, 42, 9, 60, 1, 95};
  const std::size_t prefill = c.dynamicSeq ? 4 : 1;
  Interpreter interp;
  MutableState state;
  for (const graft::testing::DecodeStep &s : graft::testing::decodeSteps(ids, prefill)) {
    SCOPED_TRACE(s.trace());
    auto out = interp.run(*cached, s.inputs, state);
    ASSERT_TRUE(out.ok()) << render(out.diags());
    // The model without a cache takes the whole prefix [0, end) every time.
    auto ref =
        interp.run(*full, {tokensOf(std::vector<int64_t>(
                               ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(s.end))),
                           position(0)});
    ASSERT_TRUE(ref.ok()) << render(ref.diags());
    Tensor got = logitsOf(*out), want = logitsOf(*ref);
    ASSERT_EQ(got.sizes(), want.sizes());
    double worst = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      worst = std::max(worst, std::abs(got.getDouble(i) - want.getDouble(i)));
    EXPECT_EQ(worst, 0.0) << "KV-cache logits differ from the full-sequence run";
    // Every layer's caches are in the state once the first step has run.
    EXPECT_EQ(state.buffers.size(), 4u);
  }
  // The cache rows past the last position are still zero; the written ones are not.
  for (const auto &[fqn, t] : state.buffers) {
    SCOPED_TRACE(fqn);
    bool seqAtDim1 = c.form == SynthKvCache::Custom;
    int64_t positions = seqAtDim1 ? t.size(1) : t.size(2);
    ASSERT_EQ(positions, 16);
    for (int64_t pos = 0; pos < positions; ++pos) {
      double sumAbs = 0;
      for (int64_t i = 0; i < t.numel(); ++i) {
        int64_t d = t.size(3);
        int64_t p = seqAtDim1 ? i / (t.size(2) * d) % t.size(1) : i / d % t.size(2);
        if (p == pos)
          sumAbs += std::abs(t.getDouble(i));
      }
      if (pos < static_cast<int64_t>(ids.size()))
        EXPECT_GT(sumAbs, 0.0) << "position " << pos << " was never written";
      else
        EXPECT_EQ(sumAbs, 0.0) << "position " << pos << " was written";
    }
  }
}

// Without a state, each call starts from the graph's (zero) caches: a decode
// step alone then attends to an empty history and differs from the decode
// step that follows a prefill.
TEST_P(KvCacheDecode, StatelessRunsStartFromTheGraphsCaches) {
  const Case c = GetParam();
  auto g = synthesizeLlama(options(c, c.form));
  ASSERT_TRUE(g.ok()) << render(g.diags());
  Interpreter interp;
  const std::vector<int64_t> first =
      c.dynamicSeq ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{1};
  const int64_t next = static_cast<int64_t>(first.size());
  auto a = interp.run(**g, {tokensOf({7}), position(next)});
  auto b = interp.run(**g, {tokensOf({7}), position(next)});
  ASSERT_TRUE(a.ok() && b.ok()) << render(a.diags()) << render(b.diags());
  EXPECT_TRUE(logitsOf(*a).equal(logitsOf(*b)));
  MutableState state;
  ASSERT_TRUE(interp.run(**g, {tokensOf(first), position(0)}, state).ok());
  auto c2 = interp.run(**g, {tokensOf({7}), position(next)}, state);
  ASSERT_TRUE(c2.ok()) << render(c2.diags());
  EXPECT_FALSE(logitsOf(*a).equal(logitsOf(*c2)));
  // The graph's own cache data is untouched by the stateful runs.
  for (const GraphInput &in : (*g)->inputs()) {
    if (in.kind != InputKind::Buffer || std::string(in.fqn).find("cache") == std::string::npos)
      continue;
    for (int64_t i = 0; i < in.data().numel(); ++i)
      ASSERT_EQ(in.data().getDouble(i), 0.0) << in.fqn;
  }
}

// A position past the cache fails the runtime assertion export wrote for it,
// naming the node.
TEST_P(KvCacheDecode, PositionPastTheCacheIsAnError) {
  const Case c = GetParam();
  auto g = synthesizeLlama(options(c, c.form));
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto r = c.dynamicSeq ? Interpreter().run(**g, {tokensOf({1, 2}), position(15)})
                        : Interpreter().run(**g, {tokensOf({1}), position(16)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diags()[0].message.find("node "), std::string::npos) << r.diags()[0].message;
  EXPECT_NE(r.diags()[0].message.find(c.dynamicSeq ? "<= 16" : "<= 15"), std::string::npos)
      << r.diags()[0].message;
}

INSTANTIATE_TEST_SUITE_P(Forms, KvCacheDecode,
                         ::testing::Values(Case{SynthKvCache::Custom, SynthQuant::W4, 2},
                                           Case{SynthKvCache::Plain, SynthQuant::W4, 2},
                                           Case{SynthKvCache::Custom, SynthQuant::W8A8W4, 4},
                                           Case{SynthKvCache::Plain, SynthQuant::W8A8W4, 4},
                                           Case{SynthKvCache::Custom, SynthQuant::W8A8W4, 1},
                                           Case{SynthKvCache::Plain, SynthQuant::None, 2},
                                           Case{SynthKvCache::Custom, SynthQuant::W4, 2, false},
                                           Case{SynthKvCache::Plain, SynthQuant::W8A8W4, 2, false}),
                         caseName);

TEST(KvCacheSynth, OptionsAreChecked) {
  LlamaSynthOptions o;
  o.kvCache = SynthKvCache::Plain;
  o.ropePrefixSlice = true;
  auto g = synthesizeLlama(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diags()[0].message.find("--kv-cache"), std::string::npos);
  EXPECT_EQ(parseSynthKvCache("custom"), SynthKvCache::Custom);
  EXPECT_EQ(parseSynthKvCache("plain"), SynthKvCache::Plain);
  EXPECT_FALSE(parseSynthKvCache("sdpa").has_value());
}

} // namespace
