//===- FoundationBench.cpp - IR, text IR, verifier and interpreter speed --===//
//
// Graphs are graft synth's int4 Llama (bench/BenchLlama.h), the ones the
// rewrite engine is judged on, at 32 and 512 layers.
// Results are recorded in docs/benchmarks.md.
//
//===----------------------------------------------------------------------===//
#include "BenchLlama.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/serialize/TextIR.h"

#include <benchmark/benchmark.h>

#include <cstdlib>

using namespace graft;

namespace {

std::unique_ptr<Graph> synthLayers(benchmark::State &state) {
  return bench::synthOrDie(bench::benchLlama(static_cast<int>(state.range(0))));
}

std::unique_ptr<Graph> parseOrDie(const std::string &text) {
  auto g = parseGraph(text, "bench.gir");
  if (!g) {
    fprintf(stderr, "%s", render(g.diags()).c_str());
    std::abort();
  }
  return std::move(*g);
}

void BM_ParseTextIR(benchmark::State &state) {
  auto printed = printGraph(*synthLayers(state));
  if (!printed) {
    state.SkipWithError(render(printed.diags()).c_str());
    return;
  }
  const std::string &text = *printed;
  std::size_t nodes = 0;
  for (auto _ : state) {
    auto g = parseOrDie(text);
    nodes = g->numNodes();
    benchmark::DoNotOptimize(g);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_ParseTextIR)->Arg(32)->Arg(512)->Unit(benchmark::kMillisecond);

void BM_PrintTextIR(benchmark::State &state) {
  auto g = synthLayers(state);
  for (auto _ : state) {
    auto text = printGraph(*g);
    benchmark::DoNotOptimize(text);
  }
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(g->numNodes()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_PrintTextIR)->Arg(32)->Arg(512)->Unit(benchmark::kMillisecond);

void BM_Verify(benchmark::State &state) {
  auto g = synthLayers(state);
  for (auto _ : state) {
    auto diags = verify(*g);
    if (!diags.empty()) {
      state.SkipWithError(render(diags).c_str());
      break;
    }
  }
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(g->numNodes()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Verify)->Arg(32)->Arg(512)->Unit(benchmark::kMillisecond);

/// End-to-end reference execution of a small Llama (2 layers, dim 64, seq 8).
void BM_InterpretLlama(benchmark::State &state) {
  LlamaSynthOptions shape = bench::benchLlama(2, /*withData=*/true);
  shape.dynamicSeq = false; // seq 8: no position input to choose
  shape.seqLen = 8;
  auto g = bench::synthOrDie(shape);
  auto inputs = makeRandomInputs(*g, 0);
  if (!inputs) {
    state.SkipWithError(render(inputs.diags()).c_str());
    return;
  }
  Interpreter interp;
  for (auto _ : state) {
    auto out = interp.run(*g, *inputs);
    if (!out) {
      state.SkipWithError(render(out.diags()).c_str());
      break;
    }
  }
}
BENCHMARK(BM_InterpretLlama)->Unit(benchmark::kMillisecond);

/// torchao int4 dequantize of a [N, K] weight (group 32), in elements/s.
void BM_DequantizeAffine(benchmark::State &state) {
  int64_t n = state.range(0), k = state.range(0);
  std::string text = "graph @dq {\n  param %w : i8[" + std::to_string(n) + ", " +
                     std::to_string(k) +
                     "] fqn=\"w\" = random(seed=1, min=-8.0, max=7.0)\n  param %s : f32[" +
                     std::to_string(n) + ", " + std::to_string(k / 32) +
                     "] fqn=\"s\" = random(seed=2, min=0.001, max=0.01)\n  %y : f32[" +
                     std::to_string(n) + ", " + std::to_string(k) +
                     "] = torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7, "
                     "output_dtype=f32)\n  output %y\n}\n";
  auto g = parseOrDie(text);
  Interpreter interp;
  for (auto _ : state) {
    auto out = interp.run(*g, {});
    if (!out) {
      state.SkipWithError(render(out.diags()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations() * n * k);
}
BENCHMARK(BM_DequantizeAffine)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
