//===- BenchProgram.cpp - graft run PROGRAM --bench N ---------------------===//
//
// Model-level numbers for a compiled program: every dispatch is timed on the
// device with timestamp queries (vk::Context::setProfiling), grouped by op
// family (the kernel of the node that dispatched it: linear_q4gsw, sdpa,
// rms_norm, binary_mul, ...), and each phase's throughput is its token count
// over its time:
//
//   prefill  M = the prompt length: --prefill M, else the --sym value of the
//            sequence symbol, else 32 (clamped to the symbol's range)
//   decode   M = 1
//
// for a program whose token input has a symbolic length (`graft synth llama
// --dynamic-seq`); a program with a static length has one phase, named
// after its M. A Llama's position input (`input_pos`, unless --inputs gives
// it) is 0 for the prefill and the prefill's length for the decode step, the
// token that follows the prompt. Each phase runs N times as a user runs it
// (wall time over the whole run: uploads, CPU nodes, the read-back of the
// outputs; the device's span from each submission's first command to its
// last; the host's recording and its latency around the submissions), then
// N times profiled: every dispatch timed alone, summed by op family, and the
// idle gaps between them.
//
//===----------------------------------------------------------------------===//
#include "BenchProgram.h"

#include "graft/vulkan/Context.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

namespace graft::cli {
namespace {

/// The symbol of the token input's length: the first symbolic dim of the
/// first integer user input (Llama's tokens: i64[1, s0]).
std::optional<std::string> sequenceSymbol(const Graph &g) {
  for (const GraphInput &in : g.inputs()) {
    if (in.kind != InputKind::UserInput || !in.value->isTensor())
      continue;
    const TensorProto &p = in.value->proto();
    if (isFloatingPoint(p.dtype) || p.dtype == DType::Bool)
      continue;
    for (const Dim &d : p.shape)
      if (d.isSymbol())
        return d.terms()[0].first;
  }
  return std::nullopt;
}

/// The token count of one run: the element count of the first integer user
/// input (1 when there is none).
int64_t tokensOf(const Graph &g, const std::vector<RuntimeValue> &inputs) {
  std::size_t k = 0;
  for (const GraphInput &in : g.inputs()) {
    if (in.kind != InputKind::UserInput)
      continue;
    const RuntimeValue &v = inputs.at(k++);
    const Tensor *t = std::get_if<Tensor>(&v);
    if (t && !isFloatingPoint(t->dtype()) && t->dtype() != DType::Bool)
      return std::max<int64_t>(t->numel(), 1);
  }
  return 1;
}

struct Family {
  uint64_t dispatches = 0;
  double ns = 0;
};

struct PhaseResult {
  std::string name;
  int64_t tokens = 0;
  std::vector<double> wallMs, deviceMs;
  /// Per run: host time inside Context::flush (submit, wait, read-back); the
  /// rest of the wall time is the host recording (executor, lowerings,
  /// descriptor writes, uploads).
  std::vector<double> flushMs;
  /// Per run: device time of its submissions, first command to last (the
  /// dispatches and the device's idle gaps between them), unprofiled and
  /// profiled (every dispatch timed alone).
  std::vector<double> spanMs, profiledSpanMs;
  uint64_t dispatchesPerRun = 0, flushesPerRun = 0, buffersCreatedPerRun = 0;
  std::map<std::string, Family> families, variants; ///< totals over all runs
};

double mean(const std::vector<double> &v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? 0 : s / double(v.size());
}
double minOf(const std::vector<double> &v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

/// Mean host recording time: the wall time outside flush (which it contains).
double recordMs(const PhaseResult &r) {
  return mean(r.wallMs) - mean(r.flushMs);
}

nlohmann::ordered_json phaseJson(const PhaseResult &r, int runs, bool timestamps) {
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["tokens"] = r.tokens;
  j["runs"] = runs;
  j["dispatches_per_run"] = r.dispatchesPerRun;
  j["flushes_per_run"] = r.flushesPerRun;
  j["buffers_created_per_run"] = r.buffersCreatedPerRun;
  j["wall_ms"] = {{"mean", mean(r.wallMs)}, {"min", minOf(r.wallMs)}};
  j["host_record_ms"] = recordMs(r);
  j["host_flush_ms"] = mean(r.flushMs);
  j["tokens_per_s"] = mean(r.wallMs) > 0 ? double(r.tokens) * 1e3 / mean(r.wallMs) : 0.0;
  if (!timestamps)
    return j;
  double dev = mean(r.deviceMs);
  j["device_ms"] = {{"mean", dev}, {"min", minOf(r.deviceMs)}};
  // Where a run's time goes besides its dispatches: the device's time from
  // first command to last (unprofiled: dependent dispatches only wait for
  // each other); in the profiled runs, the idle gaps between the one-at-a-time
  // dispatches (barriers, launch latency, a clock ramping up); and host
  // latency around the submissions (submit, the wait's wake-up).
  j["device_span_ms"] = mean(r.spanMs);
  j["device_gap_ms"] = std::max(0.0, mean(r.profiledSpanMs) - dev);
  j["host_wait_ms"] = std::max(0.0, mean(r.flushMs) - mean(r.spanMs));
  j["device_tokens_per_s"] = dev > 0 ? double(r.tokens) * 1e3 / dev : 0.0;
  auto table = [&](const std::map<std::string, Family> &m, const char *key) {
    std::vector<std::pair<std::string, Family>> rows(m.begin(), m.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto &a, const auto &b) { return a.second.ns > b.second.ns; });
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    double total = 0;
    for (const auto &row : rows)
      total += row.second.ns;
    for (const auto &[name, f] : rows)
      out.push_back({{key, name},
                     {"dispatches_per_run", double(f.dispatches) / runs},
                     {"device_ms_per_run", f.ns / 1e6 / runs},
                     {"mean_dispatch_us", f.dispatches ? f.ns / 1e3 / double(f.dispatches) : 0.0},
                     {"share", total > 0 ? f.ns / total : 0.0}});
    return out;
  };
  j["families"] = table(r.families, "family");
  j["variants"] = table(r.variants, "variant");
  return j;
}

} // namespace

int benchProgram(const Args &args, const std::string &path, const Program &program,
                 vk::Context &ctx, vk::GraphExecutor &exec) {
  auto runsFlag = parseInt(*args.get("bench"));
  if (!runsFlag || *runsFlag < 1) {
    std::cerr << "graft run: error: --bench expects a positive number of runs\n";
    return int(kUserError);
  }
  const int runs = static_cast<int>(*runsFlag);
  int warmup = 1;
  if (auto w = args.get("warmup")) {
    auto v = parseInt(*w);
    if (!v || *v < 0) {
      std::cerr << "graft run: error: --warmup expects a non-negative number of runs\n";
      return int(kUserError);
    }
    warmup = static_cast<int>(*v);
  }
  auto flags = runFlags(args);
  if (!flags)
    return reportFailure(flags.diags());
  const Graph &g = *program.graph;

  // The phases: (name, symbol values, position).
  struct Phase {
    std::string name;
    std::map<std::string, int64_t> symbols;
    int64_t position = 0;
  };
  std::vector<Phase> phases;
  std::optional<std::string> seq = sequenceSymbol(g);
  if (seq) {
    const SymbolRange *range = g.symbols().find(*seq);
    int64_t lo = range ? range->min : 1;
    int64_t hi = range && range->max ? *range->max : INT64_MAX;
    int64_t prefill = 32;
    if (auto it = flags->symbols.find(*seq); it != flags->symbols.end())
      prefill = it->second;
    if (auto p = args.get("prefill")) {
      auto v = parseInt(*p);
      if (!v || *v < 1) {
        std::cerr << "graft run: error: --prefill expects a positive token count\n";
        return int(kUserError);
      }
      prefill = *v;
    }
    prefill = std::clamp(prefill, std::max<int64_t>(lo, 1), std::max<int64_t>(hi, 1));
    auto symbols = flags->symbols;
    symbols[*seq] = prefill;
    phases.push_back({"prefill", symbols, 0});
    if (lo <= 1) {
      symbols[*seq] = 1;
      // The next token: position `prefill`, or the last one the model has.
      phases.push_back({"decode", symbols, hi == INT64_MAX ? prefill : std::min(prefill, hi - 1)});
    }
  } else {
    phases.push_back({"", flags->symbols, 0});
  }
  bool setPosition = false;
  for (const GraphInput &in : g.inputs())
    if (in.kind == InputKind::UserInput && in.value->name() == "input_pos")
      setPosition = true;
  for (const std::string &spec : args.all("inputs"))
    if (spec.starts_with("input_pos=") || spec.starts_with("%input_pos="))
      setPosition = false; // the user's position wins

  const bool timestamps = ctx.info().timestampPeriodNs > 0;
  std::vector<PhaseResult> results;
  for (Phase &phase : phases) {
    Args phaseArgs = args;
    if (setPosition)
      phaseArgs.values["inputs"].push_back("input_pos=[" + std::to_string(phase.position) + "]");
    auto inputs = buildRunInputs(g, phaseArgs, flags->seed, phase.symbols);
    if (!inputs)
      return reportFailure(inputs.diags());
    PhaseResult r;
    r.tokens = tokensOf(g, *inputs);
    r.name = phase.name.empty() ? "M=" + std::to_string(r.tokens) : phase.name;
    // Warm-up: uploads and prepacks the constants and creates the pipelines,
    // none of which a later run repeats.
    for (int i = 0; i < warmup; ++i)
      if (auto out = exec.run(*inputs); !out)
        return reportFailure(out.diags());
    // The runs as a user gets them: no per-dispatch timestamps, barriers
    // only between dependent dispatches. Wall, host and span come from these.
    for (int i = 0; i < runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto out = exec.run(*inputs);
      double wall =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!out)
        return reportFailure(out.diags());
      r.wallMs.push_back(wall);
      const vk::ExecutorStats &stats = exec.stats();
      r.dispatchesPerRun = stats.dispatches;
      r.flushesPerRun = stats.flushes;
      r.buffersCreatedPerRun = stats.buffersCreated;
      r.flushMs.push_back(stats.flushMs);
      r.spanMs.push_back(stats.submittedDeviceMs);
    }
    if (!timestamps) {
      results.push_back(std::move(r));
      continue;
    }
    // Then the same runs profiled: a timestamp pair around every dispatch,
    // which runs them one at a time (Context::setProfiling).
    if (Status s = ctx.setProfiling(true); !s)
      return reportFailure(s.diags());
    (void)ctx.takeDispatchTimings();
    for (int i = 0; i < runs; ++i) {
      if (auto out = exec.run(*inputs); !out)
        return reportFailure(out.diags());
      r.profiledSpanMs.push_back(exec.stats().submittedDeviceMs);
      double device = 0;
      for (vk::DispatchTiming &t : ctx.takeDispatchTimings()) {
        device += t.ns;
        Family &f = r.families[t.label.empty() ? t.variant : t.label];
        ++f.dispatches;
        f.ns += t.ns;
        Family &v = r.variants[t.variant];
        ++v.dispatches;
        v.ns += t.ns;
      }
      r.deviceMs.push_back(device / 1e6);
    }
    if (Status s = ctx.setProfiling(false); !s)
      return reportFailure(s.diags());
    results.push_back(std::move(r));
  }

  const vk::DeviceInfo &info = ctx.info();
  if (args.has("json")) {
    nlohmann::ordered_json j;
    j["program"] = path;
    j["target"] = program.target;
    j["device"] = info.name;
    j["driver"] = info.driver;
    j["timestamps"] = timestamps;
    j["timestamp_period_ns"] = info.timestampPeriodNs;
    j["warmup"] = warmup;
    j["runs"] = runs;
    if (seq)
      j["sequence_symbol"] = *seq;
    j["phases"] = nlohmann::ordered_json::array();
    for (const PhaseResult &r : results)
      j["phases"].push_back(phaseJson(r, runs, timestamps));
    std::cout << j.dump(2) << "\n";
    return int(kOk);
  }
  std::cout << "program " << path << " on " << info.name << " (" << info.driver << "): " << runs
            << " run" << (runs == 1 ? "" : "s") << " per phase after " << warmup << " warm-up"
            << (timestamps ? "" : "; the device has no timestamps, wall time only") << "\n";
  for (const PhaseResult &r : results) {
    double wall = mean(r.wallMs), dev = mean(r.deviceMs);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "%s: %lld token%s, %llu dispatches; wall %.3f ms (min %.3f) = %.2f tokens/s",
                  r.name.c_str(), static_cast<long long>(r.tokens), r.tokens == 1 ? "" : "s",
                  static_cast<unsigned long long>(r.dispatchesPerRun), wall, minOf(r.wallMs),
                  wall > 0 ? double(r.tokens) * 1e3 / wall : 0.0);
    std::cout << line;
    if (timestamps) {
      std::snprintf(line, sizeof(line), "; device %.3f ms (min %.3f) = %.2f tokens/s", dev,
                    minOf(r.deviceMs), dev > 0 ? double(r.tokens) * 1e3 / dev : 0.0);
      std::cout << line;
    }
    std::cout << "\n";
    std::snprintf(line, sizeof(line),
                  "  host: %.3f ms recording, %.3f ms in %llu flush%s (submit + wait); %llu "
                  "buffer%s created\n",
                  recordMs(r), mean(r.flushMs), static_cast<unsigned long long>(r.flushesPerRun),
                  r.flushesPerRun == 1 ? "" : "es",
                  static_cast<unsigned long long>(r.buffersCreatedPerRun),
                  r.buffersCreatedPerRun == 1 ? "" : "s");
    std::cout << line;
    if (!timestamps)
      continue;
    auto phase = phaseJson(r, runs, true);
    std::snprintf(line, sizeof(line),
                  "  device: %.3f ms from first command to last, %.3f ms of the flushes outside "
                  "it; profiled one at a time, %.3f ms in dispatches and %.3f ms idle between "
                  "them\n",
                  phase["device_span_ms"].get<double>(), phase["host_wait_ms"].get<double>(), dev,
                  phase["device_gap_ms"].get<double>());
    std::cout << line;
    auto rows = phase["families"];
    std::cout << "  family                      dispatches  device ms   share  mean us/dispatch\n";
    for (const auto &row : rows) {
      std::snprintf(line, sizeof(line), "  %-26s %11.1f %10.3f %6.1f%% %17.1f\n",
                    row["family"].get<std::string>().c_str(),
                    row["dispatches_per_run"].get<double>(), row["device_ms_per_run"].get<double>(),
                    100 * row["share"].get<double>(), row["mean_dispatch_us"].get<double>());
      std::cout << line;
    }
  }
  return int(kOk);
}

} // namespace graft::cli
