//===- GenerateProgram.cpp - graft run PROGRAM --generate N ---------------===//
//
// Greedy generation with a KV-cache program (graft/Generate.h): a prefill of
// the prompt given as --inputs tokens=[...], then N decode steps, each
// feeding the token chosen last at the next position. Prints the chosen
// tokens and each phase's tokens per second; --check runs the reference
// interpreter on the original graph (resolved as `graft run --check` does)
// with its own cache, fed the same tokens, and fails at the first step
// whose token differs or whose logits differ by more than --atol.
//
//===----------------------------------------------------------------------===//
#include "GenerateProgram.h"

#include "graft/Generate.h"
#include "graft/vulkan/Partitioner.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace graft::cli {
namespace {

/// "[1, 2, 3]": whole numbers only (token ids).
Expected<std::vector<int64_t>> parseTokenList(const std::string &spec, const std::string &rhs) {
  GRAFT_TRY(std::vector<std::string> items,
            inputListItems(rhs, spec, "the prompt must be written [id, id, ...]"));
  std::vector<int64_t> out;
  for (const std::string &v : items) {
    std::optional<int64_t> id = parseInt(v);
    if (!id)
      return Diagnostic::error("--inputs " + spec + ": '" + v +
                               "' is not a token id (a whole number)");
    out.push_back(*id);
  }
  return out;
}

double ms(double seconds) {
  return seconds * 1e3;
}

} // namespace

int generateProgram(const Args &args, const std::string &path, const Program &program,
                    const Graph *reference, const std::string &referenceFrom) {
  auto steps = parseInt(*args.get("generate"));
  if (!steps || *steps < 0) {
    std::cerr << "graft run: error: --generate expects a non-negative number of decode steps, "
                 "not '"
              << *args.get("generate") << "'\n";
    return int(kUserError);
  }
  int64_t warmup = 0;
  if (auto w = args.get("warmup")) {
    auto v = parseInt(*w);
    if (!v || *v < 0) {
      std::cerr << "graft run: error: --warmup expects a non-negative number of runs\n";
      return int(kUserError);
    }
    warmup = *v;
  }
  for (const char *flag : {"bench", "prefill", "sym", "seed", "all-values"})
    if (args.has(flag)) {
      std::cerr << "graft run: error: --" << flag
                << " does not go with --generate (its inputs are the prompt and the positions)\n";
      return int(kUserError);
    }
  auto flags = runFlags(args);
  if (!flags)
    return reportFailure(flags.diags());

  auto iface = decodeInterface(*program.graph);
  if (!iface)
    return reportFailure(iface.diags());
  // The prompt: --inputs TOKENS=[...], TOKENS the program's token input.
  std::optional<std::vector<int64_t>> prompt;
  for (const std::string &spec : args.all("inputs")) {
    auto eq = spec.find('=');
    std::string name = eq == std::string::npos ? spec : spec.substr(0, eq);
    if (!name.empty() && name[0] == '%')
      name = name.substr(1);
    if (eq == std::string::npos || name != iface->tokensName) {
      std::cerr << "graft run: error: --inputs " << spec << ": with --generate the only input is "
                << "the prompt, --inputs " << iface->tokensName
                << "=[id, ...] (the positions are fed step by step)\n";
      return int(kUserError);
    }
    auto ids = parseTokenList(spec, spec.substr(eq + 1));
    if (!ids)
      return reportFailure(ids.diags());
    prompt = std::move(*ids);
  }
  if (!prompt) {
    std::cerr << "graft run: error: --generate needs a prompt of at least one token: --inputs "
              << iface->tokensName << "=[id, ...]\n";
    return int(kUserError);
  }

  // Before any device work: a bad prompt fails fast.
  if (Status s = checkGeneration(*iface, *prompt, *steps); !s)
    return reportFailure(s.diags());

  std::optional<Generator> refGen;
  if (reference) {
    auto refIface = decodeInterface(*reference);
    if (!refIface) {
      std::vector<Diagnostic> diags = refIface.diags();
      diags.front().message =
          "the reference graph (" + referenceFrom + "): " + diags.front().message;
      return reportFailure(diags);
    }
    auto g = Generator::create(std::move(*refIface), interpreterSession(*reference));
    if (!g)
      return reportFailure(g.diags());
    refGen.emplace(std::move(*g));
  }

  vk::ContextOptions copts;
  copts.deviceIndex = flags->deviceIndex;
  copts.exactKernels = vk::targetUsesExactKernels(program.target);
  auto ctx = vk::Context::create(copts);
  if (!ctx)
    return reportFailure(ctx.diags());
  auto session = vulkanSession(**ctx, program, path, args.has("allow-cpu-fallback"));
  if (!session)
    return reportFailure(session.diags());
  auto gen = Generator::create(*iface, std::move(*session));
  if (!gen)
    return reportFailure(gen.diags());

  GenerateOptions opts;
  opts.decodeSteps = *steps;
  opts.warmup = warmup;
  opts.reference = refGen ? &*refGen : nullptr;
  opts.atol = flags->atol;
  auto result = generate(*gen, *prompt, opts);
  if (!result)
    return reportFailure(result.diags());
  const GenerateResult &r = *result;
  const bool failed = !r.checkFailure.empty();
  const std::string device = (*ctx)->info().name;

  if (args.has("json")) {
    nlohmann::ordered_json j;
    j["program"] = path;
    j["target"] = program.target;
    j["device"] = device;
    j["prompt"] = r.prompt;
    j["decode_steps"] = *steps;
    j["warmup"] = warmup;
    j["tokens"] = r.tokens;
    const GenerationStep &pre = r.steps.front();
    j["prefill"] = {{"tokens", pre.fed},
                    {"calls", pre.calls},
                    {"ms", ms(pre.seconds)},
                    {"tokens_per_s", r.prefillTokensPerSecond()}};
    j["decode"] = {{"tokens", r.decodeTokens()},
                   {"ms", ms(r.decodeSeconds())},
                   {"tokens_per_s", r.decodeTokensPerSecond()}};
    nlohmann::ordered_json sj = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < r.steps.size(); ++i) {
      const GenerationStep &s = r.steps[i];
      nlohmann::ordered_json one = {{"step", i},
                                    {"phase", s.prefill ? "prefill" : "decode"},
                                    {"position", s.position},
                                    {"fed", s.fed},
                                    {"token", s.token},
                                    {"ms", ms(s.seconds)}};
      if (i < r.checks.size()) {
        one["reference_token"] = r.checks[i].referenceToken;
        one["max_abs_error"] = r.checks[i].maxAbsError;
      }
      sj.push_back(one);
    }
    j["steps"] = sj;
    if (reference) {
      j["check"] = {{"reference", referenceFrom},
                    {"steps_checked", r.checks.size()},
                    {"max_abs_error", r.maxAbsError},
                    {"ok", !failed}};
      if (flags->atol)
        j["check"]["atol"] = *flags->atol;
      if (failed)
        j["check"]["problem"] = r.checkFailure;
    }
    std::cout << j.dump(2) << "\n";
    if (failed)
      std::cerr << "graft run: error: --check: " << r.checkFailure << "\n";
    return int(failed ? kUserError : kOk);
  }

  const GenerationStep &pre = r.steps.front();
  char line[256];
  std::cout << "program " << path << " (compiled for " << program.target << ") on " << device
            << ": " << r.prompt.size() << "-token prompt, " << *steps << " decode step"
            << (*steps == 1 ? "" : "s") << "\n";
  std::snprintf(line, sizeof(line), "prefill: %lld tokens, %lld call%s, %.3f ms = %.2f tokens/s",
                static_cast<long long>(pre.fed), static_cast<long long>(pre.calls),
                pre.calls == 1 ? "" : "s", ms(pre.seconds), r.prefillTokensPerSecond());
  std::cout << line
            << (warmup ? "\n"
                       : " (the first call: constant uploads and pipeline creation included; "
                         "--warmup 1 leaves them out)\n");
  if (r.decodeTokens() > 0) {
    std::snprintf(line, sizeof(line), "decode: %lld tokens, %.3f ms = %.2f tokens/s\n",
                  static_cast<long long>(r.decodeTokens()), ms(r.decodeSeconds()),
                  r.decodeTokensPerSecond());
    std::cout << line;
  }
  std::cout << "tokens:";
  for (int64_t t : r.tokens)
    std::cout << " " << t;
  std::cout << "\n";
  if (reference) {
    std::cout << "check vs reference interpreter on the original graph (" << referenceFrom
              << "): " << r.checks.size() << " step" << (r.checks.size() == 1 ? "" : "s")
              << (failed ? "" : ", same tokens") << ", max abs error " << r.maxAbsError;
    if (flags->atol)
      std::cout << (failed ? "" : " (within --atol)");
    std::cout << "\n";
    if (failed) {
      std::cerr << "graft run: error: --check: " << r.checkFailure << "\n";
      return int(kUserError);
    }
  }
  return int(kOk);
}

} // namespace graft::cli
