//===- VulkanBench.cpp - Vulkan kernel throughput vs memcpy bandwidth -----===//
//
// Per kernel: achieved GB/s against the bytes the kernel must move (every
// input read once, every output written once) and GFLOP/s where it computes,
// next to the machine's memcpy bandwidth measured in the same run. Kernel
// time is the device's timestamp delta when the queue has timestamps (the
// submit/wait overhead is not counted), else wall time around submit + wait.
// Results are recorded in docs/benchmarks.md ("Vulkan kernels").
//
//   graft_bench --benchmark_filter='BM_Vk|BM_Memcpy'
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

using namespace graft;

namespace {

vk::Context *context() {
  static std::unique_ptr<vk::Context> ctx = [] {
    auto c = vk::Context::create();
    if (!c) {
      std::fprintf(stderr, "%s", render(c.diags()).c_str());
      return std::unique_ptr<vk::Context>();
    }
    return std::move(*c);
  }();
  return ctx.get();
}

template <class T> T orDie(Expected<T> e) {
  if (!e) {
    std::fprintf(stderr, "%s", render(e.diags()).c_str());
    std::abort();
  }
  return std::move(*e);
}

/// Deterministic pseudo-random values in [lo, hi).
Tensor randomTensor(DType d, std::vector<int64_t> sizes, double lo, double hi, uint64_t seed) {
  Tensor t = Tensor::empty(d, std::move(sizes));
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    double v = lo + (hi - lo) * u;
    if (isFloatingPoint(d))
      t.setDouble(i, v);
    else
      t.setInt(i, static_cast<int64_t>(v));
  }
  return t;
}

vk::DeviceTensor upload(const Tensor &t) {
  return orDie(vk::uploadTensor(*context(), t));
}

/// Times `launch` (which records dispatches) per iteration; reports bytes
/// and flops per iteration.
void runKernel(benchmark::State &state, const std::function<Status()> &launch, double bytes,
               double flops) {
  vk::Context &ctx = *context();
  // Warm-up: compiles the shader and creates the pipeline.
  if (Status s = launch(); !s || !ctx.flush()) {
    state.SkipWithError("kernel failed");
    return;
  }
  bool deviceTime = ctx.info().timestampPeriodNs > 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    Status s = launch();
    Status f = ctx.flush();
    auto t1 = std::chrono::steady_clock::now();
    if (!s || !f) {
      state.SkipWithError("kernel failed");
      return;
    }
    double secs = deviceTime ? ctx.lastSubmitDeviceNs() * 1e-9
                             : std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(secs);
  }
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  if (flops > 0)
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MiB"] = bytes / (1024.0 * 1024.0);
}

#define GRAFT_VK_BENCH_GUARD()                                                                     \
  if (!context()) {                                                                                \
    state.SkipWithError("no Vulkan device");                                                       \
    return;                                                                                        \
  }

/// The machine's memcpy bandwidth (read + write bytes), for comparison; per CPU
/// second (single thread), so time spent waiting for a shared core is not counted.
/// Arg 16 touches 32 MiB (cache-resident on large-L3 servers), 64 touches 128 MiB.
void BM_Memcpy(benchmark::State &state) {
  std::size_t n = static_cast<std::size_t>(state.range(0)) << 20;
  std::vector<char> a(n, 1), b(n, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * double(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Memcpy)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);

/// linear_q4gsw: M tokens x K -> N, group 32 (M = 1 is decode's GEMV).
void BM_VkLinearQ4gsw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t M = state.range(0), K = state.range(1), N = state.range(2), gs = 32;
  auto w = orDie(vk::prepackQ4(*context(), randomTensor(DType::U8, {N, K / 2}, 0, 256, 1), true));
  auto s = upload(randomTensor(DType::F32, {K / gs, N}, 0.002, 0.02, 2));
  auto x = upload(randomTensor(DType::F32, {M, K}, -1, 1, 3));
  double bytes = double(N * K / 2) + 4.0 * double(K / gs * N) + 4.0 * double(M * K + M * N);
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::linearQ4gsw(*context(), x, w, s, gs, nullptr);
        return r ? okStatus() : r.takeFailure();
      },
      bytes, 2.0 * double(M * N * K));
}
BENCHMARK(BM_VkLinearQ4gsw)
    ->Args({1, 4096, 4096})
    ->Args({1, 2048, 8192})
    ->Args({32, 2048, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// linear_dq8ca_q4gsw: per-token int8 activations (quantize pass included).
void BM_VkLinearDq8caQ4gsw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t M = state.range(0), K = state.range(1), N = state.range(2), gs = 32;
  auto w = orDie(vk::prepackQ4(*context(), randomTensor(DType::U8, {N, K / 2}, 0, 256, 1), true));
  auto s = upload(randomTensor(DType::F32, {K / gs, N}, 0.002, 0.02, 2));
  auto x = upload(randomTensor(DType::F32, {M, K}, -1, 1, 3));
  auto xs = upload(randomTensor(DType::F32, {M}, 0.004, 0.008, 4));
  auto xz = upload(randomTensor(DType::I8, {M}, -10, 10, 5));
  auto sums = upload(randomTensor(DType::I32, {K / gs, (N + 7) / 8 * 8}, -64, 64, 6));
  double bytes = double(N * K / 2) + 8.0 * double(K / gs * N) + 4.0 * double(M * K + M * N);
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::linearDq8caQ4gsw(*context(), x, xs, xz, w, sums, s, gs, nullptr);
        return r ? okStatus() : r.takeFailure();
      },
      bytes, 2.0 * double(M * N * K));
}
BENCHMARK(BM_VkLinearDq8caQ4gsw)
    ->Args({1, 4096, 4096})
    ->Args({32, 2048, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// embedding_q4gsw: gather T rows of a [V, D] int4 table (the bytes of the
/// rows read, their scales, the f32 rows written).
void BM_VkEmbeddingQ4gsw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t T = state.range(0), V = 32000, D = state.range(1), gs = 32;
  auto w = orDie(vk::uploadRawBytes(*context(), randomTensor(DType::U8, {V, D / 2}, 0, 256, 6)));
  auto s = upload(randomTensor(DType::F32, {V, D / gs}, 0.005, 0.02, 7));
  auto idx = upload(randomTensor(DType::I64, {T}, 0, double(V), 8));
  double bytes = double(T) * (double(D / 2) + 4.0 * double(D / gs) + 4.0 * double(D) + 8.0);
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::embeddingQ4gsw(*context(), w, s, gs, idx, true);
        return r ? okStatus() : r.takeFailure();
      },
      bytes, 0);
}
BENCHMARK(BM_VkEmbeddingQ4gsw)
    ->Args({512, 4096})
    ->Args({4096, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_VkAdd(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0);
  auto a = upload(randomTensor(DType::F32, {n}, -1, 1, 9));
  auto b = upload(randomTensor(DType::F32, {n}, -1, 1, 10));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::binary(*context(), vk::BinaryKind::Add, a, b);
        return r ? okStatus() : r.takeFailure();
      },
      12.0 * double(n), double(n));
}
BENCHMARK(BM_VkAdd)->Arg(1 << 22)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_VkSilu(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0);
  auto a = upload(randomTensor(DType::F32, {n}, -4, 4, 11));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::unary(*context(), vk::UnaryKind::Silu, a);
        return r ? okStatus() : r.takeFailure();
      },
      8.0 * double(n), 0);
}
BENCHMARK(BM_VkSilu)->Arg(1 << 22)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_VkRmsNorm(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t rows = state.range(0), D = state.range(1);
  auto x = upload(randomTensor(DType::F32, {rows, D}, -1, 1, 12));
  auto w = upload(randomTensor(DType::F32, {D}, 0.9, 1.1, 13));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::rmsNorm(*context(), x, w, 1e-5);
        return r ? okStatus() : r.takeFailure();
      },
      4.0 * double(2 * rows * D + D), 0);
}
BENCHMARK(BM_VkRmsNorm)->Args({512, 4096})->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_VkSoftmax(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t rows = state.range(0), D = state.range(1);
  auto x = upload(randomTensor(DType::F32, {rows, D}, -4, 4, 14));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::softmaxLast(*context(), x, DType::F32);
        return r ? okStatus() : r.takeFailure();
      },
      8.0 * double(rows * D), 0);
}
BENCHMARK(BM_VkSoftmax)->Args({512, 2048})->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_VkMatmul(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0);
  auto a = upload(randomTensor(DType::F32, {n, n}, -1, 1, 15));
  auto b = upload(randomTensor(DType::F32, {n, n}, -1, 1, 16));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::matmul(*context(), a, b);
        return r ? okStatus() : r.takeFailure();
      },
      12.0 * double(n * n), 2.0 * double(n * n * n));
}
BENCHMARK(BM_VkMatmul)->Arg(512)->UseManualTime()->Unit(benchmark::kMillisecond);

/// A transpose of the last two dims (the view-like ops' strided copy).
void BM_VkTranspose(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0);
  auto a = upload(randomTensor(DType::F32, {n, n}, -1, 1, 17));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::gather(*context(), a, {n, n}, {1, n}, 0);
        return r ? okStatus() : r.takeFailure();
      },
      8.0 * double(n * n), 0);
}
BENCHMARK(BM_VkTranspose)->Arg(2048)->UseManualTime()->Unit(benchmark::kMillisecond);

} // namespace
