//===- CompileCommand.cpp - graft compile / graft run PROGRAM -------------===//
//
//   graft compile MODEL.{pt2,gir} -o MODEL.vkprog [--rules DIR|FILE]...
//       [--no-default-rules] [--target PROFILE] [--report FILE] [--json]
//       [--fused-pt2 OUT.pt2] [--embed-reference] [--quiet]
//   graft run MODEL.vkprog [--inputs ...] [--seed N] [--device N] [--check]
//
// Both are thin layers over graft_compiler (graft/Compiler.h) and the
// program file (graft/serialize/ProgramFile.h); docs/cli.md documents them.
//
//===----------------------------------------------------------------------===//
#include "BenchProgram.h"
#include "Cli.h"
#include "GenerateProgram.h"

#include "graft/Compiler.h"
#include "graft/interp/Interpreter.h"
#include "graft/serialize/CoverageReport.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/vulkan/GraphExecutor.h"
#include "graft/vulkan/Partitioner.h"
#include "graft/vulkan/ProgramShaders.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace graft::cli {
namespace {

/// A one-line progress indicator on stderr, only on a terminal.
class Progress {
public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { clear(); }
  void update(const std::string &phase, double fraction) {
    if (!enabled_)
      return;
    // Redraw only when something visible changes.
    int pct = int(std::lround(fraction * 100));
    if (shown_ && phase == phase_ && pct == pct_)
      return;
    phase_ = phase;
    pct_ = pct;
    std::fprintf(stderr, "\r\033[K%s %3d%%", phase.c_str(), pct);
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (enabled_ && shown_) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
      shown_ = false;
    }
  }

private:
  bool enabled_;
  bool shown_ = false;
  std::string phase_;
  int pct_ = -1;
};

/// A value for `run PROGRAM --json`: the first 16 elements, or every one
/// with `all` (--all-values).
nlohmann::json valueJson(const RuntimeValue &v, bool all) {
  nlohmann::json j;
  if (const Tensor *t = std::get_if<Tensor>(&v)) {
    j["dtype"] = std::string(name(t->dtype()));
    j["shape"] = t->sizes();
    const int64_t n = all ? t->numel() : std::min<int64_t>(t->numel(), 16);
    nlohmann::json vals = nlohmann::json::array();
    for (int64_t i = 0; i < n; ++i) {
      double d = t->getDouble(i);
      vals.push_back(std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(std::to_string(d)));
    }
    j["values"] = vals;
    j["truncated"] = n < t->numel();
  } else {
    j["value"] = str(v);
  }
  return j;
}

} // namespace

Command makeCompileCommand() {
  Command c;
  c.name = "compile";
  c.usage = "graft compile MODEL.{pt2,gir} -o OUT.vkprog [--rules DIR|FILE]... "
            "[--no-default-rules] [--allow-lossy] [--target PROFILE] [--exact-kernels] "
            "[--report FILE.{json,md,html,xml}] [--json] "
            "[--fused-pt2 OUT.pt2] [--embed-reference] [--shader-cache DIR] [--quiet] "
            "[--print-pipeline]";
  c.summary = "Compile a model to a Vulkan program file (load, legalize, fuse, partition, write).";
  c.details =
      "Runs the whole pipeline: reads the model, applies the shipped rule library (compiled\n"
      "into graft; --no-default-rules leaves it out) and the --rules files or directories,\n"
      "legalization rules first, partitions the fused graph for the target profile (lavapipe,\n"
      "adreno, mali, host; default lavapipe) and writes the program atomically: the fused\n"
      "graph, its constants (byte-identical ones once), the plan of every node, the\n"
      "provenance of every constant the rules made and the SPIR-V of every shader variant\n"
      "the device nodes may dispatch, compiled now so `graft run` needs no GLSL compiler\n"
      "(--shader-cache DIR keeps compiled modules across runs; docs/program-format.md).\n"
      "Prints a short summary; --json prints it as one object. --report writes a\n"
      "rule-coverage report of the fusion pass (format by extension). --fused-pt2 also\n"
      "writes the fused graph as a .pt2. --embed-reference stores the original graph too,\n"
      "so `graft run --check` needs no source model. Progress is shown on a terminal unless\n"
      "--quiet. --print-pipeline lists the passes these options run, in order, and exits\n"
      "(MODEL and -o optional).";
  c.flags = {{"o", true, "the program file to write", "OUT.vkprog"},
             {"rules", true, "rule file or directory, repeatable or comma-separated", "DIR|FILE"},
             {"no-default-rules", false, "leave out the shipped rule library"},
             allowLossyFlag(),
             {"target", true, "device profile (default lavapipe)", "PROFILE"},
             {"exact-kernels", false,
              "run the bit-exact kernels (the target's +exact profile) instead of the fast ones"},
             {"device", true, "with --target host: the Vulkan device index", "N"},
             {"report", true, "write a rule-coverage report (.json, .md, .html, .xml)", "FILE"},
             {"json", false, "print the summary as one JSON object"},
             {"fused-pt2", true, "also write the fused graph as a .pt2", "OUT.pt2"},
             {"embed-reference", false, "store the original graph for `graft run --check`"},
             {"shader-cache", true,
              "cache compiled SPIR-V in DIR across runs (default: $GRAFT_VK_SHADER_CACHE)", "DIR"},
             {"quiet", false, "no progress and no summary (errors only)"},
             {"print-pipeline", false, "list the passes (name and what each does) and exit"}};
  c.run = [](const Args &args) {
    if (args.has("print-pipeline")) {
      CompileOptions opts;
      if (auto out = args.get("o"))
        opts.output = *out;
      else if (args.positional.empty())
        opts.output = "OUT.vkprog"; // show the whole pipeline
      std::size_t i = 0;
      for (const CompilePassInfo &p : compilePipeline(opts)) {
        char line[64];
        std::snprintf(line, sizeof(line), "%2zu. %-10s ", ++i, p.name.c_str());
        std::cout << line << p.description << "\n";
      }
      return int(kOk);
    }
    if (args.positional.size() != 1) {
      std::cerr << "graft compile: error: expected exactly one MODEL\n";
      return int(kUserError);
    }
    auto out = args.get("o");
    if (!out || out->empty()) {
      std::cerr << "graft compile: error: -o OUT.vkprog is required\n";
      return int(kUserError);
    }
    CompileOptions opts;
    opts.output = *out;
    opts.defaultRules = !args.has("no-default-rules");
    opts.allowLossy = args.has("allow-lossy");
    opts.rules = splitList(args.all("rules"));
    if (auto t = args.get("target"))
      opts.target = *t;
    // The kernel policy is part of the target profile (and so recorded in
    // the program): --exact-kernels is the +exact suffix.
    if (args.has("exact-kernels") && !vk::parseTargetName(opts.target).exactKernels)
      opts.target += "+exact";
    auto device = deviceFlag(args);
    if (!device)
      return reportFailure(device.diags());
    opts.deviceIndex = *device;
    opts.embedReference = args.has("embed-reference");
    opts.shaderCache = args.get("shader-cache").value_or("");
    std::optional<CoverageFormat> reportFormat;
    if (auto r = args.get("report")) {
      auto f = coverageFormatFromPath(*r);
      if (!f)
        return reportFailure(f.diags());
      reportFormat = *f;
      opts.coverage = true;
    }
    bool quiet = args.has("quiet");
    Progress progress(!quiet && ::isatty(STDOUT_FILENO) && ::isatty(STDERR_FILENO));
    opts.progress = [&](const std::string &phase, double f) { progress.update(phase, f); };
    SourceManager sources;
    opts.sources = &sources;

    auto result = compile(args.positional[0], opts);
    progress.clear();
    if (!result)
      return reportFailure(result.diags(), &sources);
    for (const Diagnostic &w : result->warnings)
      std::cerr << render(w, &sources);

    // Side outputs: on failure the program is removed too, so a failed run
    // leaves nothing behind.
    auto fail = [&](const std::vector<Diagnostic> &diags) {
      std::error_code ec;
      std::filesystem::remove(*out, ec);
      return reportFailure(diags, &sources);
    };
    if (auto pt2 = args.get("fused-pt2")) {
      Pt2WriteOptions w;
      if (result->pt2)
        w.provenance = &*result->pt2;
      Status s = writePt2(*result->program.graph, *pt2, w);
      if (!s)
        return fail(s.diags());
    }
    if (reportFormat) {
      Status s = writeCoverageReport(*result->coverage, *reportFormat, *args.get("report"));
      if (!s) {
        if (auto pt2 = args.get("fused-pt2")) {
          std::error_code ec;
          std::filesystem::remove(*pt2, ec);
        }
        return fail(s.diags());
      }
    }
    if (args.has("json"))
      std::cout << nlohmann::ordered_json::parse(result->summary.json()).dump(2) << "\n";
    else if (!quiet)
      std::cout << result->summary.text();
    return int(kOk);
  };
  return c;
}

int runProgramFile(const Args &args) {
  const std::string &path = args.positional[0];
  auto flags = runFlags(args);
  if (!flags)
    return reportFailure(flags.diags());
  const uint64_t seed = flags->seed;
  const int deviceIndex = flags->deviceIndex;
  const std::optional<double> atol = flags->atol;
  std::map<std::string, int64_t> symbols = flags->symbols;

  auto program = readProgram(path);
  if (!program)
    return reportFailure(program.diags());
  const Graph &g = *program->graph;

  // The reference for --check is resolved before running, so a missing one
  // fails fast.
  std::unique_ptr<Graph> loadedReference;
  const Graph *reference = nullptr;
  std::string referenceFrom;
  SourceManager sources;
  if (args.has("check")) {
    std::string model = args.get("reference").value_or("");
    if (model.empty() && !program->reference) {
      std::error_code ec;
      if (!program->sourcePath.empty() && std::filesystem::exists(program->sourcePath, ec))
        model = program->sourcePath;
    }
    if (!model.empty()) {
      auto loaded = loadGraph(model, &sources);
      if (!loaded)
        return reportFailure(loaded.diags(), &sources);
      loadedReference = std::move(loaded->graph);
      reference = loadedReference.get();
      referenceFrom = model;
    } else if (program->reference) {
      reference = program->reference.get();
      referenceFrom = "embedded";
    } else {
      std::cerr << "graft run: error: --check needs the original graph: the program embeds none "
                   "(compile with --embed-reference), and its source model '"
                << program->sourcePath << "' is not readable; pass --reference MODEL\n";
      return int(kUserError);
    }
  } else if (args.has("reference") || atol) {
    std::cerr << "graft run: error: --reference and --atol go with --check\n";
    return int(kUserError);
  }
  if (args.has("generate"))
    return generateProgram(args, path, *program, reference, referenceFrom);
  if (args.has("bench") && args.has("check")) {
    std::cerr << "graft run: error: --bench and --check are separate runs; pass one\n";
    return int(kUserError);
  }
  if (!args.has("bench") && (args.has("warmup") || args.has("prefill"))) {
    std::cerr << "graft run: error: --warmup and --prefill go with --bench\n";
    return int(kUserError);
  }

  auto inputs = buildRunInputs(g, args, seed, symbols);
  if (!inputs)
    return reportFailure(inputs.diags());
  vk::ContextOptions copts;
  copts.deviceIndex = deviceIndex;
  // A program compiled for a +exact profile runs the bit-exact kernels.
  copts.exactKernels = vk::targetUsesExactKernels(program->target);
  auto ctx = vk::Context::create(copts);
  if (!ctx)
    return reportFailure(ctx.diags());
  // The executor runs the plan the program was compiled with: a node planned
  // for the device that cannot run on this one is an error unless the user
  // opted in to a CPU fallback.
  vk::ExecutorOptions eopts;
  auto plan = vk::compiledPlan(*program);
  if (!plan)
    return reportFailure(plan.diags());
  eopts.plan = std::move(*plan);
  eopts.allowCpuFallback = args.has("allow-cpu-fallback");
  // Pipelines come from the program's SPIR-V: no GLSL is compiled from here.
  if (Status s = vk::usePrecompiledShaders(**ctx, *program, path); !s)
    return reportFailure(s.diags());
  auto exec = vk::GraphExecutor::create(**ctx, g, eopts);
  if (!exec)
    return reportFailure(exec.diags());
  if (args.has("bench"))
    return benchProgram(args, path, *program, **ctx, **exec);
  auto outputs = (*exec)->run(*inputs);
  if (!outputs)
    return reportFailure(outputs.diags());

  std::optional<vk::Comparison> cmp;
  if (reference) {
    auto ref = Interpreter().run(*reference, *inputs);
    if (!ref)
      return reportFailure(ref.diags(), &sources);
    cmp = vk::compareValues(*outputs, *ref);
  }
  bool failed = cmp && (!cmp->firstProblem.empty() || cmp->mismatchedNonFinite > 0 ||
                        (atol && cmp->maxAbsError > *atol));
  const vk::ExecutorStats &stats = (*exec)->stats();
  const bool all = args.has("all-values");
  if (args.has("json")) {
    nlohmann::json j;
    j["program"] = path;
    j["target"] = program->target;
    j["device"] = (*ctx)->info().name;
    j["seed"] = seed;
    j["nodes"] = g.numNodes();
    j["cpu_nodes"] = (*exec)->numCpuNodes();
    j["cpu_fallback_nodes"] = (*exec)->numCpuFallbackNodes();
    j["dispatches"] = stats.dispatches;
    // Where the pipelines came from: the program's SPIR-V (glslang_runs 0),
    // or, for a program without SPIR-V, compiles at run time.
    vk::ShaderLibrary::Stats shaders = (*ctx)->shaders().stats();
    j["shaders"] = {{"stored", program->shaders.size()},
                    {"precompiled_used", shaders.precompiledHits},
                    {"glslang_runs", shaders.glslangRuns}};
    nlohmann::json outs = nlohmann::json::array();
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      nlohmann::json oj = valueJson((*outputs)[i], all);
      oj["name"] = g.outputs()[i].value->name();
      outs.push_back(oj);
    }
    j["outputs"] = outs;
    if (cmp) {
      j["check"] = {{"reference", referenceFrom},
                    {"max_abs_error", cmp->maxAbsError},
                    {"max_rel_error", cmp->maxRelError},
                    {"mismatched_non_finite", cmp->mismatchedNonFinite},
                    {"ok", !failed}};
      if (!cmp->firstProblem.empty())
        j["check"]["problem"] = cmp->firstProblem;
    }
    std::cout << j.dump(2) << "\n";
    return int(failed ? kUserError : kOk);
  }
  std::cout << "program " << path << " (compiled for " << program->target << ") on "
            << (*ctx)->info().name << ": " << g.numNodes() << " nodes, " << (*exec)->numCpuNodes()
            << " cpu (planned), " << (*exec)->numCpuFallbackNodes() << " cpu-fallback, "
            << stats.dispatches << " dispatches\n";
  for (const vk::NodePlan &p : (*exec)->plan())
    if (p.placement == vk::Placement::CpuFallback)
      std::cout << "  cpu-fallback  %" << (p.node->numOutputs() ? p.node->name() : std::string("-"))
                << " (" << p.node->target() << "): " << p.reason << "\n";
  for (std::size_t i = 0; i < outputs->size(); ++i)
    std::cout << "output %" << g.outputs()[i].value->name() << " = "
              << str((*outputs)[i], all ? INT64_MAX : 16) << "\n";
  if (cmp) {
    std::cout << "check vs reference interpreter on the original graph (" << referenceFrom
              << "): max abs error " << cmp->maxAbsError << ", max rel error " << cmp->maxRelError;
    if (cmp->mismatchedNonFinite)
      std::cout << ", " << cmp->mismatchedNonFinite << " mismatched non-finite values";
    if (!cmp->firstProblem.empty())
      std::cout << ", " << cmp->firstProblem;
    if (atol)
      std::cout << (failed ? " (exceeds --atol)" : " (within --atol)");
    std::cout << "\n";
  }
  return int(failed ? kUserError : kOk);
}

} // namespace graft::cli
