//===- ProgramShadersTest.cpp - SPIR-V compiled into the program file -----===//
//
// `graft compile` stores the SPIR-V of every shader variant a program may
// dispatch (the codegen pass, with its statistics); running the program
// creates every pipeline from it with no glslang call (counted), on both the
// prefill and decode shapes of a dynamic-sequence Llama, and matches the
// reference interpreter. Identical variants compile once per process and the
// on-disk cache serves a fresh process. Per-dispatch device timing, and
// `graft run --bench` with its JSON.
//
//===----------------------------------------------------------------------===//
#include "graft/Compiler.h"

#include "graft/interp/Interpreter.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/Synth.h"
#include "graft/support/FileIO.h"
#include "graft/vulkan/GraphExecutor.h"
#include "graft/vulkan/ProgramShaders.h"

#include "CliTestUtil.h"
#include "SynthTestUtil.h"
#include "VulkanTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

namespace graft {
namespace {

namespace fs = std::filesystem;
using graft::testing::runCli;

class ProgramShadersTest : public graft::testing::ScratchDirTest {
protected:
  /// A tiny 2-layer Llama with a symbolic sequence length.
  std::string synth(SynthQuant quant, const std::string &name) {
    return graft::testing::writeSynthesizedPt2(graft::testing::tinyLlama(quant), path(name));
  }

  static double stat(const CompileSummary &s, const std::string &pass, const std::string &key) {
    for (const auto &[name, stats] : s.passStats)
      if (name == pass)
        for (const auto &[k, v] : stats)
          if (k == key)
            return v;
    ADD_FAILURE() << "no statistic " << pass << "." << key;
    return -1;
  }
};

TEST_F(ProgramShadersTest, CompileStoresSpirvAndRunCompilesNothing) {
  std::string model = synth(SynthQuant::W8A8W4, "m.pt2");
  CompileOptions opts;
  opts.output = path("m.vkprog");
  auto r = compile(model, opts);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  const std::vector<ProgramShader> &shaders = r->program.shaders;
  ASSERT_FALSE(shaders.empty());
  // The codegen pass reports what it generated.
  uint64_t bytes = 0;
  std::set<std::string> names, templates;
  for (const ProgramShader &s : shaders) {
    bytes += s.spirv.size() * 4;
    names.insert(s.variant);
    templates.insert(s.templateName);
    EXPECT_EQ(s.spirv.at(0), 0x07230203u) << s.variant;
    EXPECT_GE(s.bindings, 1u) << s.variant;
    // An f32 model needs no f16 variant.
    EXPECT_EQ(s.variant.find("half"), std::string::npos) << s.variant;
  }
  EXPECT_EQ(names.size(), shaders.size());
  EXPECT_EQ(stat(r->summary, "codegen", "shader_variants"), double(shaders.size()));
  EXPECT_EQ(stat(r->summary, "codegen", "spirv_bytes"), double(bytes));
  EXPECT_EQ(stat(r->summary, "codegen", "shader_templates"), double(templates.size()));
  // Every device kernel of the plan has its own shaders in the program.
  for (const ProgramNodePlan &np : r->program.plan)
    if (np.placement == "device" && np.kernel != "view" && np.kernel != "sdpa") {
      bool found = false;
      for (const std::string &n : names)
        found = found || n.starts_with(np.kernel + "_");
      EXPECT_TRUE(found) << np.kernel;
    }
  EXPECT_TRUE(templates.count("linear_q4gsw") || templates.count("linear_q4gsw_fast"));

  ProgramStats st;
  auto back = readProgram(opts.output, {}, &st);
  ASSERT_TRUE(back.ok()) << render(back.diags());
  EXPECT_EQ(back->shaders.size(), shaders.size());
  EXPECT_EQ(st.shaderVariants, shaders.size());
  EXPECT_EQ(back->shaderCompiler, vk::ShaderLibrary::compilerIdentity());

  GRAFT_REQUIRE_VULKAN();
  // A context of its own: usePrecompiledShaders changes its shader library.
  auto ctx = vk::Context::create();
  ASSERT_TRUE(ctx.ok()) << render(ctx.diags());
  ASSERT_TRUE(vk::usePrecompiledShaders(**ctx, *back, opts.output).ok());
  auto plan = vk::compiledPlan(*back);
  ASSERT_TRUE(plan.ok()) << render(plan.diags());
  vk::ExecutorOptions eopts;
  eopts.plan = std::move(*plan);
  auto exec = vk::GraphExecutor::create(**ctx, *back->graph, eopts);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto original = load(model);
  ASSERT_TRUE(original.ok()) << render(original.diags());
  std::string sym;
  for (const GraphInput &in : back->graph->inputs())
    if (in.kind == InputKind::UserInput && in.value->proto().rank() == 2 &&
        in.value->proto().shape[1].isSymbol())
      sym = in.value->proto().shape[1].terms()[0].first;
  ASSERT_FALSE(sym.empty());
  for (int64_t seq : {int64_t(1), int64_t(4)}) { // decode and prefill shapes
    auto inputs = makeRandomInputs(*back->graph, 3, {{sym, seq}});
    ASSERT_TRUE(inputs.ok()) << render(inputs.diags());
    auto out = (*exec)->run(*inputs);
    ASSERT_TRUE(out.ok()) << render(out.diags());
    auto ref = Interpreter().run(*original->graph, *inputs);
    ASSERT_TRUE(ref.ok()) << render(ref.diags());
    vk::Comparison c = vk::compareValues(*out, *ref);
    EXPECT_EQ(c.firstProblem, "");
    EXPECT_LT(c.maxAbsError, 1e-3) << "seq " << seq;
  }
  vk::ShaderLibrary::Stats ls = (*ctx)->shaders().stats();
  EXPECT_EQ(ls.glslangRuns, 0u); // no preprocessing, no compilation
  EXPECT_EQ(ls.compiled, 0u);
  EXPECT_GT(ls.precompiledHits, 0u);

  // A variant the program lacks is an error naming it and the program, not
  // a compile.
  auto missing = (*ctx)->shaders().get("binary_pow_half");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.diags()[0].message.find("program '" + opts.output +
                                            "' carries no SPIR-V for shader variant "
                                            "'binary_pow_half'"),
            std::string::npos)
      << missing.diags()[0].message;
  EXPECT_EQ((*ctx)->shaders().stats().glslangRuns, 0u);

  // Per-dispatch device time: one timing per dispatch, labelled with the
  // kernel of the node that made it, naming a variant of the program.
  if ((*ctx)->info().timestampPeriodNs > 0) {
    ASSERT_TRUE((*ctx)->setProfiling(true).ok());
    auto inputs = makeRandomInputs(*back->graph, 4, {{sym, 4}});
    ASSERT_TRUE(inputs.ok());
    ASSERT_TRUE((*exec)->run(*inputs).ok());
    std::vector<vk::DispatchTiming> timings = (*ctx)->takeDispatchTimings();
    EXPECT_EQ(timings.size(), (*exec)->stats().dispatches);
    std::set<std::string> kernels;
    for (const vk::NodePlan &p : (*exec)->plan())
      kernels.insert(p.kernel);
    double total = 0;
    for (const vk::DispatchTiming &t : timings) {
      EXPECT_TRUE(names.count(t.variant)) << t.variant;
      EXPECT_TRUE(kernels.count(t.label)) << t.label;
      EXPECT_GE(t.ns, 0);
      total += t.ns;
    }
    EXPECT_GT(total, 0);
    EXPECT_TRUE((*ctx)->takeDispatchTimings().empty()); // taken
    ASSERT_TRUE((*ctx)->setProfiling(false).ok());
    ASSERT_TRUE((*exec)->run(*inputs).ok());
    EXPECT_TRUE((*ctx)->takeDispatchTimings().empty()); // not profiling
  }
}

// The stored variant set covers what every kind of model dispatches: each
// quantization scheme the synthesizer writes, in f32 and f16, runs from its
// program's SPIR-V alone (a missing variant would fail the run) and matches
// the interpreter on the original graph.
// linear_qcs4w runs on linear_q4gsw's launcher, so its programs must carry
// every template that launcher may dispatch (the exact, fast and lanes
// linears); before, a qcs4w program's stored SPIR-V lacked the fast ones.
TEST(ProgramShaders, KernelsOnAnotherKernelsLauncherCarryItsTemplates) {
  auto library = vk::ShaderLibrary::builtin();
  ASSERT_TRUE(library.ok()) << render(library.diags());
  std::vector<std::string> q4 = vk::shaderTemplatesFor("linear_q4gsw", **library);
  std::vector<std::string> qcs4 = vk::shaderTemplatesFor("linear_qcs4w", **library);
  EXPECT_TRUE(std::includes(qcs4.begin(), qcs4.end(), q4.begin(), q4.end()))
      << ::testing::PrintToString(qcs4) << " lacks some of " << ::testing::PrintToString(q4);
  EXPECT_NE(std::find(q4.begin(), q4.end(), "linear_q4gsw_lanes"), q4.end());
}

TEST_F(ProgramShadersTest, EveryQuantizationRunsFromItsStoredSpirv) {
  GRAFT_REQUIRE_VULKAN();
  const std::pair<SynthQuant, const char *> quants[] = {
      {SynthQuant::None, "none"},    {SynthQuant::W4, "4w"},
      {SynthQuant::W8A8W4, "8da4w"}, {SynthQuant::Pt2eW8, "pt2e-8w"},
      {SynthQuant::QatW4, "qat-4w"}, {SynthQuant::QatW8A8W4, "qat-8da4w"}};
  for (DType dtype : {DType::F32, DType::F16})
    for (const auto &[quant, name] : quants) {
      std::string label = std::string(name) + "/" + std::string(graft::name(dtype));
      SCOPED_TRACE(label);
      LlamaSynthOptions o = graft::testing::tinyLlama(quant);
      o.layers = 1;
      o.seqLen = 3;
      o.dtype = dtype;
      o.tiedEmbeddings = false;
      std::string model = graft::testing::writeSynthesizedPt2(o, path("q.pt2"));
      ASSERT_FALSE(::testing::Test::HasFailure());
      CompileOptions opts;
      opts.output = path("q.vkprog");
      auto r = compile(model, opts);
      ASSERT_TRUE(r.ok()) << render(r.diags());
      auto back = readProgram(opts.output);
      ASSERT_TRUE(back.ok()) << render(back.diags());
      auto ctx = vk::Context::create();
      ASSERT_TRUE(ctx.ok()) << render(ctx.diags());
      ASSERT_TRUE(vk::usePrecompiledShaders(**ctx, *back, opts.output).ok());
      auto plan = vk::compiledPlan(*back);
      ASSERT_TRUE(plan.ok()) << render(plan.diags());
      vk::ExecutorOptions eopts;
      eopts.plan = std::move(*plan);
      eopts.allowCpuFallback = true; // a device without f16 storage runs those nodes on the CPU
      auto exec = vk::GraphExecutor::create(**ctx, *back->graph, eopts);
      ASSERT_TRUE(exec.ok()) << render(exec.diags());
      auto original = load(model);
      ASSERT_TRUE(original.ok()) << render(original.diags());
      auto asCompiled = [&](const Graph &, const std::vector<RuntimeValue> &in) {
        return (*exec)->run(in);
      };
      EXPECT_LT(vktest::maxAbsErrorVsReference(*back->graph, *original->graph, asCompiled, {}, 5),
                dtype == DType::F16 ? 5e-2 : 1e-3);
      EXPECT_EQ((*ctx)->shaders().stats().glslangRuns, 0u);
      if ((*exec)->numCpuFallbackNodes() == 0) {
        EXPECT_GT((*ctx)->shaders().stats().precompiledHits, 0u);
      }
    }
}

// A program without SPIR-V (version 1, or built through the API without
// compileProgramShaders) leaves the context compiling shaders; one with
// SPIR-V makes it serve those only.
TEST_F(ProgramShadersTest, ProgramsWithoutSpirvCompileAtRunTime) {
  GRAFT_REQUIRE_VULKAN();
  auto ctx = vk::Context::create();
  ASSERT_TRUE(ctx.ok()) << render(ctx.diags());
  Program old;
  old.version = 1;
  ASSERT_TRUE(vk::usePrecompiledShaders(**ctx, old, "old.vkprog").ok());
  EXPECT_FALSE((*ctx)->shaders().precompiledOnly());
  Program bare; // the current version, but no compileProgramShaders
  ASSERT_TRUE(vk::usePrecompiledShaders(**ctx, bare, "bare.vkprog").ok());
  EXPECT_FALSE((*ctx)->shaders().precompiledOnly());
  auto lib = vk::ShaderLibrary::builtin();
  ASSERT_TRUE(lib.ok());
  Program one;
  one.plan.push_back({"x", "aten.add.Tensor", "device", "binary_add", "", 0});
  auto stats = vk::compileProgramShaders(one, **lib);
  ASSERT_TRUE(stats.ok()) << render(stats.diags());
  ASSERT_FALSE(one.shaders.empty());
  ASSERT_TRUE(vk::usePrecompiledShaders(**ctx, one, "one.vkprog").ok());
  EXPECT_TRUE((*ctx)->shaders().precompiledOnly());
  EXPECT_TRUE((*ctx)->shaders().get("binary_add_float").ok());
  auto other = (*ctx)->shaders().get("rms_norm_float_float");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.diags()[0].message.find("program 'one.vkprog' carries no SPIR-V"),
            std::string::npos)
      << other.diags()[0].message;
}

// SPIR-V from another graft's shader source is refused, not run: the kernels
// of this graft may bind other operands (the dq8ca GEMVs once read int8
// activations and now quantize floats themselves). A stored variant this
// graft lacks is refused too. Both are user errors asking for a recompile.
TEST_F(ProgramShadersTest, StaleSpirvIsRefused) {
  GRAFT_REQUIRE_VULKAN();
  auto lib = vk::ShaderLibrary::builtin();
  ASSERT_TRUE(lib.ok());
  Program fresh;
  fresh.plan.push_back({"x", "aten.add.Tensor", "device", "binary_add", "", 0});
  ASSERT_TRUE(vk::compileProgramShaders(fresh, **lib).ok());
  ASSERT_FALSE(fresh.shaders.empty());
  {
    auto ctx = vk::Context::create();
    ASSERT_TRUE(ctx.ok()) << render(ctx.diags());
    EXPECT_TRUE(vk::usePrecompiledShaders(**ctx, fresh, "fresh.vkprog").ok());
  }
  Program &stale = fresh;
  stale.shaders[0].sourceHash ^= 1;
  auto ctx = vk::Context::create();
  ASSERT_TRUE(ctx.ok()) << render(ctx.diags());
  Status s = vk::usePrecompiledShaders(**ctx, stale, "stale.vkprog");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diags()[0].kind, DiagKind::User);
  EXPECT_NE(s.diags()[0].message.find("program 'stale.vkprog' was compiled with another version "
                                      "of shader '" +
                                      stale.shaders[0].variant + "'"),
            std::string::npos)
      << s.diags()[0].message;
  EXPECT_NE(s.diags()[0].message.find("compile the model again"), std::string::npos);
  EXPECT_FALSE((*ctx)->shaders().precompiledOnly()) << "nothing of the stale program is used";
  Program &unknown = fresh;
  unknown.shaders[0].sourceHash ^= 1; // the real hash back
  unknown.shaders[0].variant = "binary_nonesuch_float";
  s = vk::usePrecompiledShaders(**ctx, unknown, "unknown.vkprog");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.diags()[0].message.find("carries shader variant 'binary_nonesuch_float', which "
                                      "this graft does not have"),
            std::string::npos)
      << s.diags()[0].message;
}

// Identical variants compile once per process; the on-disk cache, keyed by
// each variant's source hash, serves a fresh process.
TEST_F(ProgramShadersTest, VariantsCompileOnceAndTheDiskCacheServesNewProcesses) {
  std::string model = synth(SynthQuant::W4, "c.pt2");
  CompileOptions opts;
  auto first = compile(model, opts);
  ASSERT_TRUE(first.ok()) << render(first.diags());
  auto second = compile(model, opts);
  ASSERT_TRUE(second.ok()) << render(second.diags());
  EXPECT_EQ(stat(second->summary, "codegen", "shaders_compiled"), 0);
  EXPECT_EQ(stat(second->summary, "codegen", "shader_cache_hits"),
            double(second->program.shaders.size()));

  std::string cache = path("cache");
  int status = 0;
  std::string out = runCli("compile " + model + " -o " + path("a.vkprog") + " --json " +
                               "--shader-cache " + cache,
                           status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::json a = nlohmann::json::parse(out);
  double variants = a["pass_stats"]["codegen"]["shader_variants"].get<double>();
  EXPECT_GT(variants, 0);
  EXPECT_EQ(a["pass_stats"]["codegen"]["shaders_compiled"].get<double>(), variants);
  auto program = readProgram(path("a.vkprog"));
  ASSERT_TRUE(program.ok()) << render(program.diags());
  for (const ProgramShader &s : program->shaders) {
    char name[32];
    std::snprintf(name, sizeof(name), "%016llx.spv", static_cast<unsigned long long>(s.sourceHash));
    auto bytes = readFile((fs::path(cache) / name).string());
    ASSERT_TRUE(bytes.ok()) << s.variant << " not cached as " << name;
    EXPECT_EQ(bytes->size(), s.spirv.size() * 4) << s.variant;
  }
  out = runCli("compile " + model + " -o " + path("b.vkprog") + " --json --shader-cache " + cache,
               status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::json b = nlohmann::json::parse(out);
  EXPECT_EQ(b["pass_stats"]["codegen"]["shaders_compiled"].get<double>(), 0);
  EXPECT_EQ(b["pass_stats"]["codegen"]["shader_cache_hits"].get<double>(), variants);
  // Modules from the cache are the modules glslang made.
  auto pb = readProgram(path("b.vkprog"));
  ASSERT_TRUE(pb.ok());
  ASSERT_EQ(pb->shaders.size(), program->shaders.size());
  for (std::size_t i = 0; i < pb->shaders.size(); ++i)
    EXPECT_EQ(pb->shaders[i].spirv, program->shaders[i].spirv) << pb->shaders[i].variant;
}

TEST_F(ProgramShadersTest, RunBenchReportsPrefillDecodeAndFamilies) {
  std::string model = synth(SynthQuant::W4, "b.pt2");
  std::string prog = path("b.vkprog");
  int status = 0;
  std::string out = runCli("compile " + model + " -o " + prog + " --quiet", status);
  ASSERT_EQ(status, 0) << out;
  // Flag errors first: they need no device.
  out = runCli("run " + prog + " --bench 0", status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--bench expects a positive number of runs"), std::string::npos) << out;
  out = runCli("run " + prog + " --bench 2 --check", status);
  EXPECT_EQ(status, 1) << out;
  out = runCli("run " + prog + " --warmup 2", status);
  EXPECT_EQ(status, 1) << out;
  EXPECT_NE(out.find("--warmup and --prefill go with --bench"), std::string::npos) << out;

  GRAFT_REQUIRE_VULKAN();
  // graft run itself: every pipeline from the program, no glslang call.
  out = runCli("run " + prog + " --json", status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::json run = nlohmann::json::parse(out);
  EXPECT_GT(run["shaders"]["stored"].get<int>(), 0) << out;
  EXPECT_GT(run["shaders"]["precompiled_used"].get<int>(), 0) << out;
  EXPECT_EQ(run["shaders"]["glslang_runs"], 0) << out;

  out = runCli("run " + prog + " --bench 2 --warmup 1 --prefill 6 --json", status);
  ASSERT_EQ(status, 0) << out;
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_EQ(j["runs"], 2);
  EXPECT_EQ(j["warmup"], 1);
  ASSERT_EQ(j["phases"].size(), 2u) << out;
  EXPECT_EQ(j["phases"][0]["name"], "prefill");
  EXPECT_EQ(j["phases"][0]["tokens"], 6);
  EXPECT_EQ(j["phases"][1]["name"], "decode");
  EXPECT_EQ(j["phases"][1]["tokens"], 1);
  for (const auto &phase : j["phases"]) {
    EXPECT_GT(phase["wall_ms"]["mean"].get<double>(), 0);
    EXPECT_GT(phase["tokens_per_s"].get<double>(), 0);
    // One submission per run (the executor flushes once, at the end), every
    // buffer from the pool after the warm-up, and the wall time split into
    // the host's recording and its time in that flush.
    EXPECT_EQ(phase["flushes_per_run"], 1) << phase.dump();
    EXPECT_EQ(phase["buffers_created_per_run"], 0) << phase.dump();
    EXPECT_GT(phase["host_flush_ms"].get<double>(), 0) << phase.dump();
    EXPECT_NEAR(phase["host_record_ms"].get<double>() + phase["host_flush_ms"].get<double>(),
                phase["wall_ms"]["mean"].get<double>(), 1e-6)
        << phase.dump();
    if (!j["timestamps"].get<bool>())
      continue;
    EXPECT_GT(phase["device_ms"]["mean"].get<double>(), 0);
    // The submission's span (unprofiled runs) lies inside the flush (the
    // host's latency is what is left); the profiled runs' gaps are what their
    // span holds besides the dispatches.
    const double span = phase["device_span_ms"].get<double>();
    EXPECT_GT(span, 0) << phase.dump();
    EXPECT_GE(phase["device_gap_ms"].get<double>(), 0) << phase.dump();
    EXPECT_GE(phase["host_flush_ms"].get<double>(), span) << phase.dump();
    EXPECT_NEAR(phase["host_wait_ms"].get<double>(), phase["host_flush_ms"].get<double>() - span,
                1e-6)
        << phase.dump();
    double dispatches = 0, share = 0;
    std::set<std::string> families;
    for (const auto &f : phase["families"]) {
      dispatches += f["dispatches_per_run"].get<double>();
      share += f["share"].get<double>();
      families.insert(f["family"].get<std::string>());
    }
    EXPECT_EQ(dispatches, phase["dispatches_per_run"].get<double>());
    EXPECT_NEAR(share, 1.0, 1e-9);
    EXPECT_TRUE(families.count("linear_q4gsw")) << phase.dump();
    EXPECT_TRUE(families.count("rms_norm")) << phase.dump();
  }
  std::string text = runCli("run " + prog + " --bench 1", status);
  ASSERT_EQ(status, 0) << text;
  // The default prompt, 32 tokens, clamped to the model's 16 positions.
  EXPECT_NE(text.find("prefill: 16 tokens"), std::string::npos) << text;
  EXPECT_NE(text.find("decode: 1 token,"), std::string::npos) << text;
  EXPECT_NE(text.find("tokens/s"), std::string::npos) << text;
  EXPECT_NE(text.find("ms in 1 flush (submit + wait); 0 buffers created"), std::string::npos)
      << text;
  if (j["timestamps"].get<bool>()) {
    EXPECT_NE(text.find("ms from first command to last,"), std::string::npos) << text;
  }
}

} // namespace
} // namespace graft
