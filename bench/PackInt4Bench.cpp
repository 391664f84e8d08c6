//===- PackInt4Bench.cpp - int4 repack throughput vs memcpy ---------------===//
//
// The goal (issue "constant transforms"): the pack_int4 constant transform on
// a large int8 weight runs at >= 50 % of the machine's memcpy bandwidth
// measured in the same run (BM_HostMemcpy in VulkanBench.cpp). Bytes moved are
// what the transform must move: every int8 value read once, every packed
// byte written once (1.5 bytes per element). Two entry points:
//
//   BM_PackInt4Transform  the rewrite engine's path: the builtin registry's
//                         "pack_int4", arguments bound and planned once,
//                         computeTransform per iteration (what a fusion that
//                         repacks a weight runs)
//   BM_PackInt4           graft::rewrite::packInt4 alone
//
// Both allocate a fresh output per iteration, as the rewrite engine does.
// Results are recorded in docs/benchmarks.md ("int4 repack").
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/ConstantTransforms.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace graft;

namespace {

/// int8 values in [-8, 7] (the range pack_int4 accepts for signed inputs).
Tensor int4Values(int64_t rows, int64_t cols) {
  Tensor t = Tensor::empty(DType::I8, {rows, cols});
  int8_t *d = t.mutableData<int8_t>();
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int64_t i = 0, n = rows * cols; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    d[i] = static_cast<int8_t>(static_cast<int>(s >> 60) - 8);
  }
  return t;
}

void setCounters(benchmark::State &state, int64_t elements) {
  double bytes = 1.5 * static_cast<double>(elements);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MiB_moved"] = bytes / (1024.0 * 1024.0);
}

void BM_PackInt4Transform(benchmark::State &state) {
  int64_t rows = state.range(0), cols = state.range(1);
  Tensor w = int4Values(rows, cols);
  const rewrite::ConstantTransform *pack =
      rewrite::ConstantTransformRegistry::builtin().find("pack_int4");
  if (!pack) {
    state.SkipWithError("no pack_int4 transform");
    return;
  }
  auto args =
      rewrite::bindTransformArgs(*pack, {}, {{"nibbles", Argument(std::string("low_first"))}});
  if (!args) {
    state.SkipWithError(render(args.diags()).c_str());
    return;
  }
  TensorProto proto = w.proto();
  std::vector<const TensorProto *> protos{&proto};
  auto plan = rewrite::planTransform(*pack, protos, *args);
  if (!plan) {
    state.SkipWithError(render(plan.diags()).c_str());
    return;
  }
  std::vector<const Tensor *> inputs{&w};
  for (auto _ : state) {
    auto out = rewrite::computeTransform(*pack, inputs, *args, plan->proto);
    if (!out) {
      state.SkipWithError(render(out.diags()).c_str());
      break;
    }
    benchmark::DoNotOptimize(out->storage()->data());
  }
  setCounters(state, rows * cols);
}
BENCHMARK(BM_PackInt4Transform)
    ->Args({4096, 4096})
    ->Args({14336, 4096})
    ->Unit(benchmark::kMillisecond);

void BM_PackInt4(benchmark::State &state) {
  int64_t rows = state.range(0), cols = state.range(1);
  Tensor w = int4Values(rows, cols);
  for (auto _ : state) {
    auto out = rewrite::packInt4(w, NibbleOrder::LowFirst);
    if (!out) {
      state.SkipWithError(render(out.diags()).c_str());
      break;
    }
    benchmark::DoNotOptimize(out->storage()->data());
  }
  setCounters(state, rows * cols);
}
BENCHMARK(BM_PackInt4)->Args({4096, 4096})->Unit(benchmark::kMillisecond);

} // namespace
