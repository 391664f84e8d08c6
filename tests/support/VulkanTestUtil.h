//===- VulkanTestUtil.h - Shared helpers of the Vulkan backend tests -*- C++ -*-===//
//
// One Context per test process (device creation is the slow part); tests
// skip only when the machine has no Vulkan device at all. checkGraph runs a
// text-IR graph on the reference interpreter and on the device (with no CPU
// fallback allowed) on the same random inputs and compares every output
// element with |device - reference| <= abs + rel * |reference|.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/interp/Interpreter.h"
#include "graft/serialize/TextIR.h"
#include "graft/vulkan/GraphExecutor.h"
#include "graft/vulkan/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace graft::vktest {

/// The shared context, or null when no Vulkan device exists (the caller
/// skips). A device that exists but cannot be opened fails the test.
inline vk::Context *context() {
  static std::unique_ptr<vk::Context> ctx;
  static bool tried = false;
  if (!tried) {
    tried = true;
    auto devices = vk::listDevices();
    EXPECT_TRUE(devices.ok()) << (devices.ok() ? "" : render(devices.diags()));
    if (devices.ok() && !devices->empty()) {
      auto c = vk::Context::create();
      EXPECT_TRUE(c.ok()) << (c.ok() ? "" : render(c.diags()));
      if (c.ok())
        ctx = std::move(*c);
    }
  }
  return ctx.get();
}

#define GRAFT_REQUIRE_VULKAN()                                                                     \
  do {                                                                                             \
    if (!::graft::vktest::context()) {                                                             \
      auto devices = ::graft::vk::listDevices();                                                   \
      if (devices.ok() && devices->empty())                                                        \
        GTEST_SKIP() << "no Vulkan device";                                                        \
      FAIL() << "a Vulkan device exists but no context could be created";                          \
    }                                                                                              \
  } while (0)

/// Selects the bit-exact kernels (ContextOptions::exactKernels, the
/// `+exact` target profile) on the shared context for a scope; tests that
/// require bit-exactness of kernels whose default form reorders accumulation
/// run under it.
class ExactKernelsScope {
public:
  ExactKernelsScope() : saved_(context()->exactKernels()) { context()->setExactKernels(true); }
  ~ExactKernelsScope() { context()->setExactKernels(saved_); }
  ExactKernelsScope(const ExactKernelsScope &) = delete;
  ExactKernelsScope &operator=(const ExactKernelsScope &) = delete;

private:
  bool saved_;
};

/// gamma_n = n*u / (1 - n*u) for f32 (u = 2^-24): the classic bound on the
/// relative error of n rounded f32 operations applied to one term of a sum
/// (Higham, Accuracy and Stability of Numerical Algorithms, 3.1). Any
/// summation order of n products with at most n roundings each is within
/// gamma_n * sum |terms| of the exact sum.
inline double gammaF32(int64_t n) {
  double nu = double(n) * std::ldexp(1.0, -24);
  return nu / (1.0 - nu);
}

/// The element of `actual` (same shape as `expected`) whose distance to
/// `expected` exceeds bound(i, expected[i]) the most, or -1 when none does.
/// NaN matches NaN and an infinity itself; any other NaN exceeds every bound.
template <class Bound>
int64_t worstOutside(const Tensor &actual, const Tensor &expected, Bound &&bound) {
  double worst = 0;
  int64_t worstAt = -1;
  for (int64_t i = 0, n = actual.numel(); i < n; ++i) {
    double a = actual.getDouble(i), e = expected.getDouble(i);
    if ((std::isnan(e) && std::isnan(a)) || (std::isinf(e) && a == e))
      continue;
    double excess = std::abs(a - e) - bound(i, e);
    if (!(excess <= 0) && (worstAt < 0 || excess > worst)) {
      worst = excess;
      worstAt = i;
    }
  }
  return worstAt;
}

/// Whether |actual[i] - expected[i]| <= bound[i] for every element (NaN and
/// infinities must match); empty when so, else the worst element.
inline std::string withinBound(const Tensor &actual, const Tensor &expected,
                               const std::vector<double> &bound) {
  if (actual.dtype() != expected.dtype() || actual.sizes() != expected.sizes() ||
      static_cast<int64_t>(bound.size()) != expected.numel())
    return "got " + actual.proto().str() + ", expected " + expected.proto().str();
  int64_t worstAt = worstOutside(
      actual, expected, [&](int64_t i, double) { return bound[static_cast<std::size_t>(i)]; });
  if (worstAt < 0)
    return {};
  return "element " + std::to_string(worstAt) + ": got " +
         std::to_string(actual.getDouble(worstAt)) + ", expected " +
         std::to_string(expected.getDouble(worstAt)) + ", error " +
         std::to_string(std::abs(actual.getDouble(worstAt) - expected.getDouble(worstAt))) +
         " > bound " + std::to_string(bound[static_cast<std::size_t>(worstAt)]);
}

struct Tolerance {
  double abs = 0;
  double rel = 0;
};

/// Element-wise closeness of two tensors; returns an empty string when
/// close, else a description of the worst element.
inline std::string allClose(const Tensor &actual, const Tensor &expected, Tolerance tol) {
  if (actual.dtype() != expected.dtype() || actual.sizes() != expected.sizes())
    return "got " + actual.proto().str() + ", expected " + expected.proto().str();
  int64_t worstAt = worstOutside(
      actual, expected, [&](int64_t, double e) { return tol.abs + tol.rel * std::abs(e); });
  if (worstAt < 0)
    return {};
  return "element " + std::to_string(worstAt) + ": got " +
         std::to_string(actual.getDouble(worstAt)) + ", expected " +
         std::to_string(expected.getDouble(worstAt)) + " (abs error " +
         std::to_string(std::abs(actual.getDouble(worstAt) - expected.getDouble(worstAt))) + ")";
}

struct GraphRun {
  std::vector<RuntimeValue> device, reference;
  std::vector<vk::NodePlan> plan;
};

/// Runs `gir` on the interpreter and the device; every node must run on
/// the device (or host) unless `allowFallback`.
inline GraphRun runBoth(const std::string &gir, uint64_t seed = 1,
                        const std::map<std::string, int64_t> &symbols = {},
                        bool allowFallback = false) {
  GraphRun r;
  auto g = parseGraph(gir, "test.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  if (!g.ok())
    return r;
  auto inputs = makeRandomInputs(**g, seed, symbols);
  EXPECT_TRUE(inputs.ok()) << (inputs.ok() ? "" : render(inputs.diags()));
  if (!inputs.ok())
    return r;
  auto ref = Interpreter().run(**g, *inputs);
  EXPECT_TRUE(ref.ok()) << (ref.ok() ? "" : render(ref.diags()));
  if (!ref.ok())
    return r;
  vk::ExecutorOptions opts;
  opts.allowCpuFallback = allowFallback;
  auto exec = vk::GraphExecutor::create(*context(), **g, opts);
  EXPECT_TRUE(exec.ok()) << (exec.ok() ? "" : render(exec.diags()));
  if (!exec.ok())
    return r;
  r.plan = (*exec)->plan();
  auto out = (*exec)->run(*inputs);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : render(out.diags()));
  if (!out.ok())
    return r;
  r.device = std::move(*out);
  r.reference = std::move(*ref);
  return r;
}

/// runBoth + every tensor output within `tol`.
inline void checkGraph(const std::string &gir, Tolerance tol, uint64_t seed = 1,
                       const std::map<std::string, int64_t> &symbols = {}) {
  GraphRun r = runBoth(gir, seed, symbols);
  ASSERT_EQ(r.device.size(), r.reference.size());
  for (std::size_t i = 0; i < r.device.size(); ++i) {
    const Tensor *a = std::get_if<Tensor>(&r.device[i]);
    const Tensor *e = std::get_if<Tensor>(&r.reference[i]);
    if (!a || !e) {
      EXPECT_EQ(str(r.device[i]), str(r.reference[i])) << "output " << i;
      continue;
    }
    std::string why = allClose(*a, *e, tol);
    EXPECT_TRUE(why.empty()) << "output " << i << ": " << why << "\n" << gir;
  }
}

/// Runs a graph on inputs: on the device (runOnDevice) or the interpreter.
/// Runs a graph (the device, the interpreter, or an executor built for a
/// program's plan, which ignores the graph it is given).
using GraphRunner = std::function<Expected<std::vector<RuntimeValue>>(
    const Graph &, const std::vector<RuntimeValue> &)>;

/// The graph on the device, strictly as planned: a node that cannot run there
/// is an error, never a silent CPU fallback.
inline Expected<std::vector<RuntimeValue>> runOnDevice(const Graph &graph,
                                                       const std::vector<RuntimeValue> &inputs) {
  vk::ExecutorOptions strict;
  strict.allowCpuFallback = false;
  GRAFT_TRY(auto exec, vk::GraphExecutor::create(*context(), graph, strict));
  return exec->run(inputs);
}

inline Expected<std::vector<RuntimeValue>>
runOnInterpreter(const Graph &graph, const std::vector<RuntimeValue> &inputs) {
  return Interpreter().run(graph, inputs);
}

/// A whole program against the original model: `program` run by `run` and
/// the reference interpreter on `reference`, on the same random inputs
/// (symbol values from `symbols`). Returns the max abs error; any problem
/// fails the test and returns infinity.
inline double maxAbsErrorVsReference(const Graph &program, const Graph &reference, GraphRunner run,
                                     const std::map<std::string, int64_t> &symbols = {},
                                     uint64_t seed = 3) {
  auto inputs = makeRandomInputs(program, seed, symbols);
  EXPECT_TRUE(inputs.ok()) << (inputs.ok() ? "" : render(inputs.diags()));
  if (!inputs.ok())
    return INFINITY;
  auto out = run(program, *inputs);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : render(out.diags()));
  auto ref = Interpreter().run(reference, *inputs);
  EXPECT_TRUE(ref.ok()) << (ref.ok() ? "" : render(ref.diags()));
  if (!out.ok() || !ref.ok())
    return INFINITY;
  vk::Comparison c = vk::compareValues(*out, *ref);
  EXPECT_EQ(c.firstProblem, "");
  return c.maxAbsError;
}

/// maxAbsErrorVsReference with the program on the device.
inline double deviceVsReference(const Graph &program, const Graph &reference,
                                const std::map<std::string, int64_t> &symbols = {},
                                uint64_t seed = 3) {
  return maxAbsErrorVsReference(program, reference, runOnDevice, symbols, seed);
}

/// The shader variants `run` dispatches on `ctx` (profiled), in order: what
/// the launchers chose, for the tests of their forms.
template <class F> std::vector<std::string> dispatchedVariants(vk::Context &ctx, F run) {
  EXPECT_TRUE(ctx.setProfiling(true).ok());
  run();
  EXPECT_TRUE(ctx.flush().ok());
  std::vector<std::string> names;
  for (const vk::DispatchTiming &t : ctx.takeDispatchTimings())
    names.push_back(t.variant);
  EXPECT_TRUE(ctx.setProfiling(false).ok());
  return names;
}

/// Why the texel-read forms (the *_vec4t / *_texel variants) cannot be
/// compared on `d`, or "" when they can: they run on CPU devices with
/// shaderInt64 and storage texel buffers, and the tests list the dispatched
/// variants from timestamps. Use: if (auto why = ...; !why.empty())
/// GTEST_SKIP() << why;
inline std::string texelFormsUnavailable(const vk::DeviceInfo &d) {
  if (d.type != "cpu" || !d.shaderInt64 || !d.storageTexelBuffers)
    return "the texel forms run on CPU devices with shaderInt64 and texel buffers";
  if (d.timestampPeriodNs == 0)
    return "no timestamps on the compute queue: dispatches are not listed";
  return "";
}

/// What one run of a kernel sequence dispatched and produced.
struct DispatchedOutputs {
  std::vector<std::string> variants;
  std::vector<Tensor> outputs;
};

/// Runs `run(k, results)` on `ctx` (index 0: the texel forms) and on a second
/// context of the same device whose maxTexelBufferElements is 1, so every
/// input is too large for a texel view (index 1: the storage-buffer forms);
/// `run` appends the device tensors to compare to `results`.
template <class F> void runTexelAndCapped(vk::Context &ctx, F run, DispatchedOutputs (&out)[2]) {
  for (int capped : {0, 1}) {
    vk::ContextOptions o;
    o.deviceIndex = static_cast<int>(ctx.info().index);
    o.maxTexelBufferElements = 1;
    auto own = capped ? vk::Context::create(o) : Expected<std::unique_ptr<vk::Context>>(nullptr);
    ASSERT_TRUE(own.ok()) << render(own.diags());
    vk::Context &k = capped ? **own : ctx;
    std::vector<vk::DeviceTensor> results;
    out[capped].variants = dispatchedVariants(k, [&] { run(k, results); });
    for (const vk::DeviceTensor &r : results) {
      auto back = vk::downloadTensor(k, r);
      ASSERT_TRUE(back.ok()) << render(back.diags());
      out[capped].outputs.push_back(std::move(*back));
    }
  }
}

/// Both runs produced as many outputs, equal bit for bit.
inline void expectSameBits(const DispatchedOutputs (&out)[2]) {
  ASSERT_EQ(out[0].outputs.size(), out[1].outputs.size());
  for (std::size_t i = 0; i < out[0].outputs.size(); ++i) {
    const Tensor &a = out[0].outputs[i], &b = out[1].outputs[i];
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(0, std::memcmp(a.rawData(), b.rawData(), a.nbytes()))
        << "output " << i << ": "
        << (i < out[0].variants.size() ? out[0].variants[i] : std::string("?")) << " vs "
        << (i < out[1].variants.size() ? out[1].variants[i] : std::string("?"));
  }
}

} // namespace graft::vktest

namespace graft::testing {

/// A fixture with a private scratch directory per test, removed afterwards.
class ScratchDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("graft-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_suite()->name() + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

} // namespace graft::testing
