//===- VulkanBench.cpp - Vulkan kernel throughput vs the device's stream bandwidth -===//
//
// Per kernel: achieved GB/s against the bytes the kernel actually moves (every
// input read once, every output written once) and GFLOP/s where it computes,
// as a fraction of two ceilings measured in the same process:
//   * BM_VkStream: the fastest vec4 copy (stream.glsl, vk::streamCopy),
//     bytes read + written: what this device and driver can move at all (on
//     lavapipe, 8 vec4s per invocation as 32-byte words, read as storage
//     texels where the device has them: llvmpipe's per-lane loads and stores
//     and its per-invocation cost on the host cores; on GPUs the faster of
//     the one-vec4 and the strided four-vec4 copies, BM_VkStreamVariant);
//   * BM_HostMemcpy: one host thread's memcpy, read + written.
// Each kernel benchmark reports counters "% stream" and "% memcpy"; the
// ceilings are measured once, the first time a kernel benchmark needs them
// (best of several runs at 16 MiB in / 16 MiB out on CPU devices, 256 MiB
// each way on GPUs, past their caches), and also run as
// benchmarks of their own. Kernel time is the device's timestamp delta when
// the queue has timestamps (submit/wait overhead not counted), else wall time
// around submit + wait; on GPUs each sample records 16 launches into one
// submission and reports their mean (counter "batch"; GRAFT_BENCH_BATCH=1 for
// one launch per submission), so the GPU runs back to back at its working
// clocks, as in a model's step. Kernels with a fast and a bit-exact form take an
// `exact` argument (0: fast, 1: ContextOptions::exactKernels), so the two are
// compared in one run. On GPUs the linear benchmarks rotate through copies
// of their weights (counter "copies") so no run finds them in L2.
// GRAFT_VK_LINEAR_TILING=<tiling> (ops/linear/Linear.cpp) sweeps the GEMV tilings.
// Results are recorded in docs/benchmarks.md ("Vulkan kernels").
//
//   graft_bench --benchmark_filter='BM_Vk|BM_HostMemcpy'
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/Kernels.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <vector>

using namespace graft;

namespace {

vk::Context *context() {
  static std::unique_ptr<vk::Context> ctx = [] {
    // GRAFT_BENCH_MAX_TEXELS=N caps the device's texel-buffer limit (1: the
    // storage-buffer kernels everywhere), to compare the two read paths.
    vk::ContextOptions options;
    if (const char *cap = std::getenv("GRAFT_BENCH_MAX_TEXELS"))
      options.maxTexelBufferElements = static_cast<uint32_t>(std::strtoul(cap, nullptr, 10));
    auto c = vk::Context::create(options);
    if (!c) {
      std::fprintf(stderr, "%s", render(c.diags()).c_str());
      return std::unique_ptr<vk::Context>();
    }
    // A batch's launches of one kernel are independent of each other and
    // would overlap; serial, they run one after another as a model's
    // dependent steps do, each paying its launch.
    (*c)->setSerialCommands(true);
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

bool cpuDevice() {
  return context() && context()->info().type == "cpu";
}

/// Launches recorded into one submission per timed sample: 1 on CPU devices;
/// 16 on GPUs (GRAFT_BENCH_BATCH=N overrides, 1 gives the isolated-dispatch
/// numbers). One dispatch per submission leaves a GPU idle while the host
/// waits for it: the sample then pays the submission's start-up, and an idle
/// GPU drops its clocks (an H200 idles at 345 MHz against 1980), whereas a
/// model's step records its hundreds of dispatches back to back, each after
/// a barrier (Context::dispatch), as the batch does here.
int launchesPerSample() {
  static int batch = [] {
    if (const char *env = std::getenv("GRAFT_BENCH_BATCH"))
      return std::max(1, std::atoi(env));
    return cpuDevice() ? 1 : 16;
  }();
  return batch;
}

/// Seconds one run of `launch` (recorded dispatches) takes, averaged over
/// `repeats` runs recorded into one submission: device timestamps when the
/// queue has them (submit/wait overhead not counted), else wall time around
/// submit + wait.
Expected<double> timeOnce(const std::function<Status()> &launch, int repeats = 1) {
  vk::Context &ctx = *context();
  auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r)
    GRAFT_CHECK_OK(launch());
  GRAFT_CHECK_OK(ctx.flush());
  auto t1 = std::chrono::steady_clock::now();
  double secs = ctx.info().timestampPeriodNs > 0 ? ctx.lastSubmitDeviceNs() * 1e-9
                                                 : std::chrono::duration<double>(t1 - t0).count();
  return secs / repeats;
}

/// The calibration copy: 16 MiB of vec4s read, 16 MiB written, on CPU
/// devices (lavapipe's numbers have always been taken at that size); 256 MiB
/// each way on GPUs, whose last-level caches hold 16 MiB (an H100 has 50 MB of
/// L2), so the ceiling is device memory's, not the cache's.
constexpr int64_t kStreamFloats = int64_t(1) << 22;
constexpr int64_t kGpuStreamFloats = int64_t(1) << 26;

int64_t streamFloats() {
  return cpuDevice() ? kStreamFloats : kGpuStreamFloats;
}

/// How many copies of a kernel's weights a benchmark rotates through, one
/// per run, so that each run reads its weights from device memory rather
/// than from a cache the previous run left warm: one on CPU devices (as
/// before), enough to span 256 MiB on GPUs (up to 512 copies: a 512-wide
/// projection's 0.6 MB would otherwise stay in an H100's 50 MB L2).
std::size_t rotationCopies(double weightBytes) {
  if (cpuDevice() || weightBytes <= 0)
    return 1;
  return static_cast<std::size_t>(std::clamp(256.0 * 1024 * 1024 / weightBytes, 1.0, 512.0) + 0.5);
}

/// The weights a benchmark built for shape `key`, built by `make` on the
/// first call only. Google Benchmark calls a benchmark function several times
/// (once per trial while it sizes the iteration count); on a GPU, repacking
/// and uploading up to 512 rotation copies each time took most of a sweep's
/// wall time. One cache per Setup type: each benchmark function has its own.
/// Function-local statics built after context()'s, so freed before it.
template <class Setup, class Make> const Setup &cachedSetup(std::vector<int64_t> key, Make make) {
  static std::map<std::vector<int64_t>, std::unique_ptr<Setup>> cache;
  std::unique_ptr<Setup> &slot = cache[std::move(key)];
  if (!slot)
    slot = std::make_unique<Setup>(make());
  return *slot;
}

/// Host memcpy GB/s (read + write) of 16 MiB, per CPU second, best of 20.
double hostMemcpyGBs() {
  static double gbs = [] {
    std::size_t n = std::size_t(16) << 20;
    std::vector<char> a(n, 1), b(n, 0);
    double best = 0;
    for (int i = 0; i < 20; ++i) {
      std::clock_t c0 = std::clock();
      std::memcpy(b.data(), a.data(), n);
      benchmark::DoNotOptimize(b.data());
      std::clock_t c1 = std::clock();
      double secs = double(c1 - c0) / CLOCKS_PER_SEC;
      if (secs > 0)
        best = std::max(best, 2.0 * double(n) * 1e-9 / secs);
    }
    return best;
  }();
  return gbs;
}

/// The stream ceiling: the fastest of the device's stream copies
/// (vk::streamCopyVariants: one on CPU devices, the one-vec4 and the strided
/// four-vec4 copy on GPUs) at streamFloats(), best of 20 runs each.
struct StreamCeiling {
  double gbs = 0;      ///< 0 without a device
  std::string variant; ///< the copy that reached it
};

const StreamCeiling &streamCeiling() {
  static StreamCeiling ceiling = [] {
    StreamCeiling best;
    const int64_t n = streamFloats();
    auto in = vk::uploadTensor(*context(), Tensor::empty(DType::F32, {n}));
    auto out = vk::allocateTensor(*context(), DType::F32, {n});
    if (!in || !out)
      return best;
    for (const std::string &variant : vk::streamCopyVariants(*context(), *in)) {
      auto copy = [&] { return vk::streamCopy(*context(), *in, *out, variant); };
      // The first run compiles the shader; on a GPU, about half a second of
      // copies then brings the clocks up before anything is timed.
      if (!timeOnce(copy))
        return StreamCeiling();
      if (!cpuDevice())
        for (auto w0 = std::chrono::steady_clock::now();
             std::chrono::steady_clock::now() - w0 < std::chrono::milliseconds(500);)
          if (!timeOnce(copy, launchesPerSample()))
            return StreamCeiling();
      for (int i = 0; i < 20; ++i) {
        auto secs = timeOnce(copy, launchesPerSample());
        if (!secs)
          return StreamCeiling();
        if (*secs > 0 && 8.0 * double(n) * 1e-9 / *secs > best.gbs)
          best = {8.0 * double(n) * 1e-9 / *secs, variant};
      }
    }
    return best;
  }();
  return ceiling;
}

double streamGBs() {
  return streamCeiling().gbs;
}

/// CPU seconds used by every thread of this process so far. On a CPU device
/// (lavapipe) the kernel runs on the process's own worker threads, so this
/// is the kernel's work, whereas the device time also counts the time the
/// shared machine's other processes held the cores.
double processCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// Times `launch` (which records dispatches) per iteration; reports GB/s of
/// `bytes` moved, its share of the stream and memcpy ceilings, and GFLOP/s.
void runKernel(benchmark::State &state, const std::function<Status()> &launch, double bytes,
               double flops) {
  vk::Context &ctx = *context();
  double stream = streamGBs(), memcpyGBs = hostMemcpyGBs();
  // Warm-up: compiles the shader and creates the pipeline.
  if (Status s = launch(); !s || !ctx.flush()) {
    state.SkipWithError("kernel failed");
    return;
  }
  double total = 0, cpuTotal = 0;
  int64_t iterations = 0;
  for (auto _ : state) {
    double cpu0 = processCpuSeconds();
    auto secs = timeOnce(launch, launchesPerSample());
    cpuTotal += processCpuSeconds() - cpu0;
    if (!secs) {
      state.SkipWithError("kernel failed");
      return;
    }
    state.SetIterationTime(*secs);
    total += *secs;
    ++iterations;
  }
  double gbs = total > 0 ? bytes * double(iterations) * 1e-9 / total : 0;
  state.counters["GB/s"] = gbs;
  state.counters["% stream"] = stream > 0 ? 100.0 * gbs / stream : 0;
  state.counters["% memcpy"] = memcpyGBs > 0 ? 100.0 * gbs / memcpyGBs : 0;
  if (flops > 0)
    state.counters["GFLOP/s"] = total > 0 ? flops * double(iterations) * 1e-9 / total : 0;
  state.counters["MiB"] = bytes / (1024.0 * 1024.0);
  state.counters["batch"] = launchesPerSample();
  if (cpuDevice() && iterations > 0)
    state.counters["cpu ms"] = 1e3 * cpuTotal / double(iterations * launchesPerSample());
}

/// Selects the bit-exact or the fast kernels for one benchmark (restored on exit).
class ExactKernels {
public:
  explicit ExactKernels(bool exact) : saved_(context()->exactKernels()) {
    context()->setExactKernels(exact);
  }
  ~ExactKernels() { context()->setExactKernels(saved_); }

private:
  bool saved_;
};

#define GRAFT_VK_BENCH_GUARD()                                                                     \
  if (!context()) {                                                                                \
    state.SkipWithError("no Vulkan device");                                                       \
    return;                                                                                        \
  }

/// The machine's memcpy bandwidth (read + write bytes), for comparison; per CPU
/// second (single thread), so time spent waiting for a shared core is not counted.
/// Arg 16 touches 32 MiB (cache-resident on large-L3 servers), 64 touches 128 MiB.
void BM_HostMemcpy(benchmark::State &state) {
  std::size_t n = static_cast<std::size_t>(state.range(0)) << 20;
  std::vector<char> a(n, 1), b(n, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * double(n) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HostMemcpy)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond);

/// The device ceiling: the fastest copy of n floats (bytes read + written); n = 0
/// is the calibration size for this device (streamFloats()). It runs the
/// copy that set the ceiling (streamCeiling); counter "variant" is its index
/// in vk::streamCopyVariants.
void BM_VkStream(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0) ? state.range(0) : streamFloats();
  auto in = upload(randomTensor(DType::F32, {n}, -1, 1, 20));
  auto out = orDie(vk::allocateTensor(*context(), DType::F32, {n}));
  const std::vector<std::string> variants = vk::streamCopyVariants(*context(), in);
  const std::string variant = streamCeiling().variant;
  runKernel(
      state, [&] { return vk::streamCopy(*context(), in, out, variant); }, 8.0 * double(n), 0);
  state.counters["floats"] = double(n); // the size Arg(0) stands for, for the table
  state.counters["variant"] =
      double(std::find(variants.begin(), variants.end(), variant) - variants.begin());
  state.SetLabel(variant);
}
BENCHMARK(BM_VkStream)->Arg(0)->UseManualTime()->Unit(benchmark::kMillisecond);

/// Each candidate stream copy of this device (vk::streamCopyVariants, by
/// index; an index past the list is skipped) at the calibration size, so a
/// GPU run shows what the ceiling's choice was made from.
void BM_VkStreamVariant(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  const int64_t n = streamFloats();
  auto in = upload(randomTensor(DType::F32, {n}, -1, 1, 20));
  auto out = orDie(vk::allocateTensor(*context(), DType::F32, {n}));
  const std::vector<std::string> variants = vk::streamCopyVariants(*context(), in);
  const auto index = static_cast<std::size_t>(state.range(0));
  if (index >= variants.size()) {
    state.SkipWithError("this device has fewer stream copies");
    return;
  }
  runKernel(
      state, [&] { return vk::streamCopy(*context(), in, out, variants[index]); }, 8.0 * double(n),
      0);
  state.counters["floats"] = double(n);
  state.SetLabel(variants[index]);
}
BENCHMARK(BM_VkStreamVariant)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

/// linear_q4gsw: M tokens x K -> N, group 32 (M = 1 is decode's GEMV).
/// The 4th argument selects the bit-exact kernel (1) or the fast one (0).
void BM_VkLinearQ4gsw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t M = state.range(0), K = state.range(1), N = state.range(2), gs = 32;
  ExactKernels exact(state.range(3) != 0);
  const double weightBytes = double(N * K / 2) + 4.0 * double(K / gs * N);
  struct Setup {
    std::vector<vk::PackedQ4Weight> w;
    std::vector<vk::DeviceTensor> s;
  };
  const Setup &setup = cachedSetup<Setup>({M, K, N}, [&] {
    const Tensor wt = randomTensor(DType::U8, {N, K / 2}, 0, 256, 1);
    const Tensor st = randomTensor(DType::F32, {K / gs, N}, 0.002, 0.02, 2);
    Setup r;
    for (std::size_t c = 0, n = rotationCopies(weightBytes); c < n; ++c) {
      r.w.push_back(orDie(vk::prepackQ4(*context(), wt, true)));
      r.s.push_back(upload(st));
    }
    return r;
  });
  const auto &w = setup.w;
  const auto &s = setup.s;
  auto x = upload(randomTensor(DType::F32, {M, K}, -1, 1, 3));
  std::size_t run = 0;
  runKernel(
      state,
      [&]() -> Status {
        std::size_t c = run++ % w.size();
        auto r = vk::linearQ4gsw(*context(), x, w[c], s[c], gs, nullptr);
        return r ? okStatus() : r.takeFailure();
      },
      weightBytes + 4.0 * double(M * K + M * N), 2.0 * double(M * N * K));
  state.counters["copies"] = double(w.size());
}
BENCHMARK(BM_VkLinearQ4gsw)
    ->ArgNames({"M", "K", "N", "exact"})
    ->Args({1, 4096, 4096, 0})
    ->Args({1, 4096, 14336, 0})
    ->Args({1, 2048, 8192, 0})
    ->Args({1, 2048, 2048, 0}) // Llama-3.2-1B's q/o, k/v and down projections
    ->Args({1, 2048, 512, 0})
    ->Args({1, 8192, 2048, 0})
    ->Args({32, 2048, 2048, 0})
    ->Args({32, 2048, 8192, 0}) // the 1B model's prefill gate / up projections
    ->Args({1, 4096, 4096, 1})
    ->Args({32, 2048, 2048, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// The dq8ca linears' run: rotationCopies of the weight (`prepack`, with
/// its scales `st` and weight sums `sumst`), float activations [M, K] with
/// per-token scales and zero points, and `launch(x, xs, xz, w, sums, scales)`
/// timed with the weight plus activations and output as bytes moved.
template <class W, class Prepack, class Launch>
void runDq8caLinear(benchmark::State &state, double weightBytes, const Tensor &st,
                    const Tensor &sumst, Prepack prepack, Launch launch) {
  int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  struct Setup {
    std::vector<W> w;
    std::vector<vk::DeviceTensor> s, sums;
  };
  const Setup &setup = cachedSetup<Setup>({M, K, N}, [&] {
    Setup r;
    for (std::size_t c = 0, n = rotationCopies(weightBytes); c < n; ++c) {
      r.w.push_back(orDie(prepack()));
      r.s.push_back(upload(st));
      r.sums.push_back(upload(sumst));
    }
    return r;
  });
  const auto &w = setup.w;
  const auto &s = setup.s;
  const auto &sums = setup.sums;
  auto x = upload(randomTensor(DType::F32, {M, K}, -1, 1, 3));
  auto xs = upload(randomTensor(DType::F32, {M}, 0.004, 0.008, 4));
  auto xz = upload(randomTensor(DType::I8, {M}, -10, 10, 5));
  std::size_t run = 0;
  runKernel(
      state,
      [&]() -> Status {
        std::size_t c = run++ % w.size();
        auto r = launch(x, xs, xz, w[c], sums[c], s[c]);
        return r ? okStatus() : r.takeFailure();
      },
      weightBytes + 4.0 * double(M * K + M * N), 2.0 * double(M * N * K));
  state.counters["copies"] = double(w.size());
}

/// linear_dq8ca_q4gsw: per-token int8 activations (quantize pass included).
void BM_VkLinearDq8caQ4gsw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t K = state.range(1), N = state.range(2), gs = 32;
  ExactKernels exact(state.range(3) != 0);
  const double weightBytes = double(N * K / 2) + 8.0 * double(K / gs * N);
  const Tensor wt = randomTensor(DType::U8, {N, K / 2}, 0, 256, 1);
  runDq8caLinear<vk::PackedQ4Weight>(
      state, weightBytes, randomTensor(DType::F32, {K / gs, N}, 0.002, 0.02, 2),
      randomTensor(DType::I32, {K / gs, (N + 7) / 8 * 8}, -64, 64, 6),
      [&] { return vk::prepackQ4(*context(), wt, true); },
      [&](auto &x, auto &xs, auto &xz, auto &w, auto &sums, auto &s) {
        return vk::linearDq8caQ4gsw(*context(), x, xs, xz, w, sums, s, gs, nullptr);
      });
}
BENCHMARK(BM_VkLinearDq8caQ4gsw)
    ->ArgNames({"M", "K", "N", "exact"})
    ->Args({1, 4096, 4096, 0})
    ->Args({1, 4096, 14336, 0}) // issue 22's second GEMV goal shape
    ->Args({1, 2048, 2048, 0})  // Llama-3.2-1B's shapes (8da4w)
    ->Args({1, 2048, 512, 0})
    ->Args({1, 2048, 8192, 0})
    ->Args({1, 8192, 2048, 0})
    ->Args({32, 2048, 2048, 0})
    ->Args({1, 4096, 4096, 1})
    ->Args({32, 2048, 2048, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// linear_dq8ca_q8csw (8da8w): per-token int8 activations (quantize pass
/// included) times an int8 weight with per-channel scales and weight sums.
/// An int8 weight is N * K bytes, twice dq8ca_q4gsw's.
void BM_VkLinearDq8caQ8csw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t K = state.range(1), N = state.range(2);
  ExactKernels exact(state.range(3) != 0);
  const double weightBytes = double(N * K) + 8.0 * double(N);
  const Tensor wt = randomTensor(DType::I8, {N, K}, -128, 128, 1);
  runDq8caLinear<vk::PackedQ8Weight>(
      state, weightBytes, randomTensor(DType::F32, {N}, 0.0002, 0.002, 2),
      randomTensor(DType::I32, {N}, -3000, 3000, 6), [&] { return vk::prepackQ8(*context(), wt); },
      [&](auto &x, auto &xs, auto &xz, auto &w, auto &sums, auto &s) {
        return vk::linearDq8caQ8csw(*context(), x, xs, xz, w, sums, s, nullptr);
      });
}
BENCHMARK(BM_VkLinearDq8caQ8csw)
    ->ArgNames({"M", "K", "N", "exact"})
    ->Args({1, 4096, 4096, 0})
    ->Args({1, 4096, 4096, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// embedding_q4gsw: gather T rows of a [V, D] int4 table (the bytes of the
/// rows read, their scales, the f32 rows written, and the indices, which the
/// device holds as 32-bit ints).
void BM_VkEmbeddingQ4gsw(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  ExactKernels exact(state.range(2) != 0);
  int64_t T = state.range(0), V = 32000, D = state.range(1), gs = 32;
  auto w = orDie(vk::uploadRawBytes(*context(), randomTensor(DType::U8, {V, D / 2}, 0, 256, 6)));
  auto s = upload(randomTensor(DType::F32, {V, D / gs}, 0.005, 0.02, 7));
  auto idx = upload(randomTensor(DType::I64, {T}, 0, double(V), 8));
  double bytes = double(T) * (double(D / 2) + 4.0 * double(D / gs) + 4.0 * double(D) + 4.0);
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::embeddingQ4gsw(*context(), w, s, gs, idx, true);
        return r ? okStatus() : r.takeFailure();
      },
      bytes, 0);
}
BENCHMARK(BM_VkEmbeddingQ4gsw)
    ->ArgNames({"T", "D", "exact"})
    ->Args({512, 4096, 0})
    ->Args({4096, 2048, 0})
    ->Args({512, 4096, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_VkAdd(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  ExactKernels exact(state.range(1) != 0);
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
BENCHMARK(BM_VkAdd)
    ->ArgNames({"n", "exact"})
    ->Args({1 << 22, 0})
    ->Args({1 << 22, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_VkSilu(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  ExactKernels exact(state.range(1) != 0);
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
BENCHMARK(BM_VkSilu)
    ->ArgNames({"n", "exact"})
    ->Args({1 << 22, 0})
    ->Args({1 << 22, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// et_vk.swiglu: silu(gate) * up in one pass, 12 bytes per f32 value (gate
/// and up read, the result written), where the unfused graph runs BM_VkSilu's
/// pass and a binary mul (20 bytes per value; BM_VkAdd times the same binary
/// kernel and form).
void BM_VkSwiglu(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  ExactKernels exact(state.range(1) != 0);
  int64_t n = state.range(0);
  auto g = upload(randomTensor(DType::F32, {n}, -4, 4, 11));
  auto u = upload(randomTensor(DType::F32, {n}, -4, 4, 12));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::swiglu(*context(), g, u);
        return r ? okStatus() : r.takeFailure();
      },
      12.0 * double(n), 0);
}
BENCHMARK(BM_VkSwiglu)
    ->ArgNames({"n", "exact"})
    ->Args({1 << 22, 0})
    ->Args({1 << 22, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

/// quantize_affine as 8da4w quantizes activations: one group per row of K
/// (per token), f32 -> i8 with a scale and zero point per row
/// (quant_affine.glsl, whose clamp and conversion work on the float bits);
/// integers are 32-bit on the device, so 4 bytes are written per value.
void BM_VkQuantizeAffine(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t rows = state.range(0), K = state.range(1);
  auto x = upload(randomTensor(DType::F32, {rows, K}, -4, 4, 21));
  auto s = upload(randomTensor(DType::F32, {rows}, 0.02, 0.04, 22));
  auto z = upload(randomTensor(DType::I8, {rows}, -10, 10, 23));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::quantizeAffine(*context(), x, K, s, &z, -128, 127, DType::I8);
        return r ? okStatus() : r.takeFailure();
      },
      8.0 * double(rows * K + rows), 0);
}
BENCHMARK(BM_VkQuantizeAffine)->Args({512, 4096})->UseManualTime()->Unit(benchmark::kMillisecond);

/// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor with
/// Python-number qparams (quant_affine.glsl with one group, the qparams as
/// push constants): f32 -> i8 and back, 4 bytes per integer on the device.
void BM_VkQuantizePerTensor(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0);
  auto x = upload(randomTensor(DType::F32, {n}, -4, 4, 24));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::quantizePerTensor(*context(), x, 0.03, 3, -128, 127, DType::I8);
        return r ? okStatus() : r.takeFailure();
      },
      8.0 * double(n), 0);
}
BENCHMARK(BM_VkQuantizePerTensor)->Arg(1 << 22)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_VkDequantizePerTensor(benchmark::State &state) {
  GRAFT_VK_BENCH_GUARD();
  int64_t n = state.range(0);
  auto q = upload(randomTensor(DType::I8, {n}, -128, 128, 25));
  runKernel(
      state,
      [&]() -> Status {
        auto r = vk::dequantizePerTensor(*context(), q, 0.03, 3, DType::F32);
        return r ? okStatus() : r.takeFailure();
      },
      8.0 * double(n), 0);
}
BENCHMARK(BM_VkDequantizePerTensor)->Arg(1 << 22)->UseManualTime()->Unit(benchmark::kMillisecond);

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
BENCHMARK(BM_VkRmsNorm)
    ->Args({512, 4096})
    ->Args({1, 2048}) // one decode token
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

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
