//===- GenerateTest.cpp - greedy generation with KV-cache programs (#23) -===//
//
// `graft run PROGRAM --generate N` and the library loop behind it
// (graft/Generate.h) on tiny synthesized KV-cache Llamas, both ExecuTorch
// export forms: the tokens the compiled program picks on the Vulkan device
// are those of a greedy loop written out here on the reference interpreter
// (prefill, then one token per call, the caches in a MutableState), --check
// passes, a reference that disagrees fails naming the step, and bad inputs
// are user errors (exit 1) with a message saying what is wrong.
//
//===----------------------------------------------------------------------===//
#include "graft/Generate.h"
#include "graft/Compiler.h"

#include "graft/interp/Interpreter.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/Synth.h"

#include "CliTestUtil.h"
#include "SynthTestUtil.h"
#include "VulkanTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace graft {
namespace {

using graft::testing::runCli;

const std::vector<int64_t> kPrompt = {5, 17, 3, 88};

/// The greedy tokens of `graph` written out on the interpreter: the prompt
/// at position 0, then `steps` calls of one token each (first maximum on
/// ties, as torch.argmax).
std::vector<int64_t> interpreterGreedy(const Graph &graph, const std::vector<int64_t> &prompt,
                                       int steps, bool oneTokenPerCall) {
  Interpreter interp;
  MutableState state;
  std::vector<int64_t> out;
  auto call = [&](const std::vector<int64_t> &ids, int64_t pos) {
    auto r = interp.run(graph,
                        {Tensor::fromInts(DType::I64, {1, int64_t(ids.size())}, ids),
                         Tensor::fromInts(DType::I64, {1}, {pos})},
                        state);
    EXPECT_TRUE(r.ok()) << render(r.diags());
    if (!r.ok())
      return int64_t(-1);
    const Tensor &logits = std::get<Tensor>(r->back());
    int64_t vocab = logits.sizes().back(), base = logits.numel() - vocab, best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (logits.getDouble(base + i) > logits.getDouble(base + best))
        best = i;
    return best;
  };
  int64_t pos = 0, tok = -1;
  if (oneTokenPerCall)
    for (int64_t id : prompt)
      tok = call({id}, pos++);
  else {
    tok = call(prompt, 0);
    pos = int64_t(prompt.size());
  }
  out.push_back(tok);
  for (int i = 0; i < steps && tok >= 0; ++i)
    out.push_back(tok = call({tok}, pos++));
  return out;
}

/// "'[1,2,3]'", quoted for the shell (brackets are glob characters).
std::string idList(const std::vector<int64_t> &ids) {
  std::string s = "'[";
  for (std::size_t i = 0; i < ids.size(); ++i)
    s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]'";
}

/// The JSON object a command printed (stderr lines after it are ignored).
nlohmann::json jsonOf(const std::string &out) {
  auto b = out.find('{'), e = out.rfind('}');
  if (b == std::string::npos || e == std::string::npos)
    return {};
  return nlohmann::json::parse(out.substr(b, e - b + 1), nullptr, false);
}

class GenerateTest : public graft::testing::ScratchDirTest {
protected:
  /// A tiny KV-cache Llama (16 positions, vocab 128), written as a .pt2 and
  /// compiled to a program; returns the program's path.
  std::string compiled(LlamaSynthOptions o, const std::string &name) {
    std::string model = graft::testing::writeSynthesizedPt2(o, path(name + ".pt2"));
    CompileOptions opts;
    opts.output = path(name + ".vkprog");
    auto r = compile(model, opts);
    EXPECT_TRUE(r.ok()) << render(r.diags());
    return opts.output;
  }
  static LlamaSynthOptions kvLlama(SynthKvCache form, SynthQuant quant) {
    LlamaSynthOptions o = graft::testing::tinyLlama(quant);
    o.kvCache = form;
    return o;
  }
};

class GenerateForms : public GenerateTest,
                      public ::testing::WithParamInterface<std::pair<SynthKvCache, SynthQuant>> {};

// The CLI on both export forms: --check passes, and the printed tokens are
// the interpreter's greedy tokens.
TEST_P(GenerateForms, CheckedTokensAreTheInterpretersGreedyTokens) {
  auto [form, quant] = GetParam();
  LlamaSynthOptions o = kvLlama(form, quant);
  // Untied: a tied random model tends to pick its input token again and
  // again, which would make the comparison of the sequences weak.
  o.tiedEmbeddings = false;
  std::string prog = compiled(o, "kv");
  ASSERT_FALSE(HasFailure());
  auto model = load(path("kv.pt2"));
  ASSERT_TRUE(model.ok()) << render(model.diags());
  const int steps = 8;
  std::vector<int64_t> want = interpreterGreedy(*model->graph, kPrompt, steps, false);
  ASSERT_EQ(want.size(), std::size_t(steps + 1));

  GRAFT_REQUIRE_VULKAN();
  int status = -1;
  std::string out = runCli("run " + prog + " --generate " + std::to_string(steps) +
                               " --inputs tokens=" + idList(kPrompt) + " --check --json",
                           status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::json j = jsonOf(out);
  ASSERT_TRUE(j.is_object()) << out;
  EXPECT_EQ(j["tokens"].get<std::vector<int64_t>>(), want) << out;
  EXPECT_EQ(j["prompt"].get<std::vector<int64_t>>(), kPrompt);
  EXPECT_EQ(j["prefill"]["tokens"], 4);
  EXPECT_EQ(j["decode"]["tokens"], steps);
  EXPECT_GT(j["decode"]["tokens_per_s"].get<double>(), 0.0);
  EXPECT_EQ(j["check"]["ok"], true);
  EXPECT_EQ(j["check"]["steps_checked"], steps + 1);
  ASSERT_EQ(j["steps"].size(), std::size_t(steps + 1));
  for (std::size_t i = 0; i < j["steps"].size(); ++i) {
    const auto &s = j["steps"][i];
    EXPECT_EQ(s["position"], i == 0 ? 0 : int64_t(kPrompt.size() + i - 1));
    EXPECT_EQ(s["token"], s["reference_token"]);
  }

  // The text form says the same.
  out = runCli("run " + prog + " --generate 2 --inputs tokens=" + idList(kPrompt) + " --check",
               status);
  ASSERT_EQ(status, 0) << out;
  std::string tokens = "tokens:";
  for (std::size_t i = 0; i < 3; ++i)
    tokens += " " + std::to_string(want[i]);
  EXPECT_NE(out.find(tokens + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("prefill: 4 tokens"), std::string::npos) << out;
  EXPECT_NE(out.find("decode: 2 tokens"), std::string::npos) << out;
  EXPECT_NE(out.find("3 steps, same tokens"), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Forms, GenerateForms,
                         ::testing::Values(std::pair{SynthKvCache::Custom, SynthQuant::W8A8W4},
                                           std::pair{SynthKvCache::Plain, SynthQuant::W4}),
                         [](const auto &info) { return std::string(name(info.param.first)); });

// The library loop (what the Python API would call) on a static one-token
// model: the prompt goes in one call per token, and generate() checks every
// step against an interpreter session of the original graph.
TEST_F(GenerateTest, LibraryLoopOnAOneTokenModel) {
  LlamaSynthOptions o = kvLlama(SynthKvCache::Custom, SynthQuant::W4);
  o.dynamicSeq = false;
  o.dynamicPos = true;
  o.seqLen = 1;
  std::string prog = compiled(o, "seq1");
  ASSERT_FALSE(HasFailure());
  auto model = load(path("seq1.pt2"));
  ASSERT_TRUE(model.ok()) << render(model.diags());
  auto program = readProgram(prog);
  ASSERT_TRUE(program.ok()) << render(program.diags());
  auto iface = decodeInterface(*program->graph);
  ASSERT_TRUE(iface.ok()) << render(iface.diags());
  EXPECT_FALSE(iface->seqSymbol.has_value());
  EXPECT_EQ(iface->maxSeqLen, 16);
  EXPECT_EQ(iface->vocab, 128);
  EXPECT_EQ(iface->caches.size(), 4u);
  std::vector<int64_t> want = interpreterGreedy(*model->graph, kPrompt, 5, true);

  GRAFT_REQUIRE_VULKAN();
  auto session = vulkanSession(*vktest::context(), *program, prog);
  ASSERT_TRUE(session.ok()) << render(session.diags());
  auto gen = Generator::create(*iface, std::move(*session));
  ASSERT_TRUE(gen.ok()) << render(gen.diags());
  auto refIface = decodeInterface(*model->graph);
  ASSERT_TRUE(refIface.ok()) << render(refIface.diags());
  auto ref = Generator::create(*refIface, interpreterSession(*model->graph));
  ASSERT_TRUE(ref.ok()) << render(ref.diags());
  GenerateOptions opts;
  opts.decodeSteps = 5;
  opts.reference = &*ref;
  opts.atol = 1e-3;
  auto r = generate(*gen, kPrompt, opts);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(r->checkFailure, "");
  EXPECT_EQ(r->tokens, want);
  ASSERT_EQ(r->steps.size(), 6u);
  EXPECT_EQ(r->steps[0].calls, 4);
  EXPECT_EQ(r->decodeTokens(), 5);
  EXPECT_LT(r->maxAbsError, 1e-3);
  // A second run starts over (prefill resets the cache): same tokens.
  auto again = generate(*gen, kPrompt, opts);
  ASSERT_TRUE(again.ok()) << render(again.diags());
  EXPECT_EQ(again->tokens, want);
}

// A reference that disagrees (same shapes, other weights) fails --check at
// the prefill, naming the step.
TEST_F(GenerateTest, CheckFailureNamesTheStep) {
  LlamaSynthOptions o = kvLlama(SynthKvCache::Custom, SynthQuant::W4);
  std::string prog = compiled(o, "kv");
  o.seed = 99;
  std::string other = graft::testing::writeSynthesizedPt2(o, path("other.pt2"));
  ASSERT_FALSE(HasFailure());
  GRAFT_REQUIRE_VULKAN();
  int status = -1;
  std::string out = runCli("run " + prog + " --generate 3 --inputs tokens=" + idList(kPrompt) +
                               " --check --atol 0.001 --reference " + other,
                           status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--check: step 0 (prefill at position 0): "), std::string::npos) << out;
}

// Bad inputs: user errors (exit 1) with a message saying what is wrong, none
// of which needs the device.
TEST_F(GenerateTest, BadInputsAreUserErrors) {
  std::string prog = compiled(kvLlama(SynthKvCache::Plain, SynthQuant::W4), "kv");
  ASSERT_FALSE(HasFailure());
  struct Case {
    std::string args, message;
  };
  const std::string p4 = " --inputs tokens=" + idList(kPrompt);
  const std::vector<Case> cases = {
      {" --generate 4", "--generate needs a prompt of at least one token: --inputs tokens=[id"},
      {" --generate 4 --inputs tokens='[]'", "the prompt is empty"},
      {" --generate=-1" + p4, "--generate expects a non-negative number of decode steps"},
      {" --generate x" + p4, "--generate expects a non-negative number of decode steps"},
      {" --generate 2 --inputs tokens='[1,2.5]'", "'2.5' is not a token id"},
      {" --generate 2 --inputs tokens='[1,2,]'", "--inputs tokens=[1,2,]: empty value in the list"},
      {" --generate 2 --inputs tokens='[1,128]'", "prompt token 1 is 128, outside the vocabulary"},
      {" --generate 2" + p4 + " --inputs input_pos='[0]'", "with --generate the only input is"},
      {" --generate 2 --inputs tokens=" + idList(std::vector<int64_t>(17, 1)),
       "the prompt has 17 tokens, more than the KV cache holds (max_seq_len 16)"},
      {" --generate 13" + p4,
       "a 4-token prompt and 13 decode steps need 17 positions; the KV cache holds 16"},
      {" --generate 2 --bench 1" + p4, "--bench does not go with --generate"},
  };
  for (const Case &c : cases) {
    int status = -1;
    std::string out = runCli("run " + prog + c.args, status);
    EXPECT_EQ(status, 1) << c.args << "\n" << out;
    EXPECT_NE(out.find(c.message), std::string::npos) << c.args << "\n" << out;
  }
  // A model (not a program) is compiled first.
  int status = -1;
  std::string out = runCli("run " + path("kv.pt2") + " --generate 2" + p4, status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--generate applies to program files (.vkprog); compile the model first"),
            std::string::npos)
      << out;
  // Exactly what fits: 4 + 12 = 16 positions.
  auto program = readProgram(prog);
  ASSERT_TRUE(program.ok()) << render(program.diags());
  auto iface = decodeInterface(*program->graph);
  ASSERT_TRUE(iface.ok()) << render(iface.diags());
  EXPECT_TRUE(checkGeneration(*iface, kPrompt, 12).ok());
  EXPECT_FALSE(checkGeneration(*iface, kPrompt, 13).ok());
}

// Programs that cannot be driven token by token say why.
TEST_F(GenerateTest, ProgramsWithoutInputPosOrCacheAreRefused) {
  LlamaSynthOptions noPos = graft::testing::tinyLlama(SynthQuant::W4);
  noPos.dynamicSeq = false; // a static sequence and no position input
  LlamaSynthOptions noCache = graft::testing::tinyLlama(SynthQuant::W4); // input_pos, no cache
  std::string a = compiled(noPos, "nopos"), b = compiled(noCache, "nocache");
  ASSERT_FALSE(HasFailure());
  int status = -1;
  std::string out = runCli("run " + a + " --generate 2 --inputs tokens='[1]'", status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("cannot generate with this program: it has no `input_pos` input"),
            std::string::npos)
      << out;
  out = runCli("run " + b + " --generate 2 --inputs tokens='[1]'", status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("cannot generate with this program: it keeps no KV cache"), std::string::npos)
      << out;
}

} // namespace
} // namespace graft
