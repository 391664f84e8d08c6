//===- VulkanSwigluTest.cpp - et_vk.swiglu on the device ---------------------===//
//
// backends/vulkan/ops/swiglu against the reference interpreter: edge values
// (the exp-based silu's), both profiles, the scalar/vec4/wide forms with and
// without a tail, the texel-read form against the storage-buffer one, f16,
// broadcasting, and a planted gate/up swap the bound must catch.
//
//===----------------------------------------------------------------------===//
#include "VulkanTestUtil.h"
#include "graft/vulkan/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace graft;
using namespace graft::vktest;

namespace {

/// exp comes from the driver (GLSL leaves its precision open): the bound the
/// unary silu kernel is held to (VulkanKernelsTest's kTranscendental), and
/// one f16 ulp for f16 results.
constexpr Tolerance kTranscendental{2e-7, 2e-6};
constexpr Tolerance kHalf{1e-7, 1e-3};

/// The swiglu of `gate` and `up` (whose shapes give the graph's), run on the
/// device and by the interpreter; returns allClose's verdict.
std::string deviceVsInterpreter(const Tensor &gate, const Tensor &up, Tolerance tol,
                                bool swapOnDevice = false) {
  auto shape = [](const Tensor &t) {
    std::string s = std::string(name(t.dtype())) + "[";
    for (std::size_t i = 0; i < t.sizes().size(); ++i)
      s += (i ? ", " : "") + std::to_string(t.sizes()[i]);
    return s + "]";
  };
  // The cases here broadcast one operand over the other's whole shape.
  Tensor outProto = gate.numel() >= up.numel() ? gate : up;
  auto build = [&](bool swap) {
    return "graph @t {\n  input %g : " + shape(gate) + "\n  input %u : " + shape(up) +
           "\n  %s : " + shape(outProto) + " = et_vk.swiglu.default(" +
           (swap ? "%u, %g" : "%g, %u") + ")\n  output %s\n}\n";
  };
  auto ref = parseGraph(build(false), "ref.gir");
  auto dev = parseGraph(build(swapOnDevice), "dev.gir");
  if (!ref.ok() || !dev.ok())
    return "parse: " + render(ref.ok() ? dev.diags() : ref.diags());
  std::vector<RuntimeValue> inputs = {gate, up};
  auto want = runOnInterpreter(**ref, inputs);
  auto got = runOnDevice(**dev, inputs);
  if (!want.ok() || !got.ok())
    return "run: " + render(want.ok() ? got.diags() : want.diags());
  return allClose(std::get<Tensor>((*got)[0]), std::get<Tensor>((*want)[0]), tol);
}

/// Gate values at silu's edges (as the unary silu test's): infinities, NaN,
/// signed zeros, subnormals, where exp(-x) overflows (x < -88.72), large |x|,
/// f32's extremes, and a sweep over [-90, 90]: 545 values, so the wide form
/// runs 17 bodies of 32 values and a tail of one.
std::vector<double> gateEdgeValues() {
  const double inf = std::numeric_limits<double>::infinity();
  const double fmax = std::numeric_limits<float>::max();
  std::vector<double> xs = {-inf,   inf,     std::numeric_limits<double>::quiet_NaN(),
                            -0.0,   0.0,     1e-40,
                            -1e-40, -88.8,   -88.73,
                            -88.72, -87.3,   88.72,
                            -1e30,  1e30,    -fmax,
                            fmax,   -1.2785, 20.0,
                            -20.0,  2.5,     -2.5,
                            0.5,    -0.5,    1.0};
  for (int i = 0; i <= 520; ++i)
    xs.push_back(-90.0 + 0.35 * i);
  return xs;
}

} // namespace

TEST(VulkanSwiglu, EdgeValuesBothProfiles) {
  GRAFT_REQUIRE_VULKAN();
  const std::vector<double> gs = gateEdgeValues();
  std::vector<double> us;
  for (std::size_t i = 0; i < gs.size(); ++i)
    us.push_back(std::ldexp(1.0 + double(i % 7) / 8.0, int(i % 9) - 4) * (i % 3 ? 1 : -1));
  const int64_t n = static_cast<int64_t>(gs.size());
  Tensor g = Tensor::fromDoubles(DType::F32, {n}, gs);
  Tensor u = Tensor::fromDoubles(DType::F32, {n}, us);
  EXPECT_EQ(deviceVsInterpreter(g, u, kTranscendental), "");
  ExactKernelsScope exact;
  EXPECT_EQ(deviceVsInterpreter(g, u, kTranscendental), "");
}

TEST(VulkanSwiglu, FormsTailsHalfAndBroadcasting) {
  GRAFT_REQUIRE_VULKAN();
  for (int64_t n : {1, 5, 64, 67, 4099}) {
    std::vector<double> gs, us;
    for (int64_t i = 0; i < n; ++i) {
      gs.push_back(-8.0 + 16.0 * double((i * 37) % 101) / 100.0);
      us.push_back(-2.0 + 4.0 * double((i * 53) % 97) / 96.0);
    }
    SCOPED_TRACE(n);
    EXPECT_EQ(deviceVsInterpreter(Tensor::fromDoubles(DType::F32, {n}, gs),
                                  Tensor::fromDoubles(DType::F32, {n}, us), kTranscendental),
              "");
    // f16: the product rounds once to f16 on both sides.
    EXPECT_EQ(deviceVsInterpreter(Tensor::fromDoubles(DType::F16, {n}, gs),
                                  Tensor::fromDoubles(DType::F16, {n}, us), kHalf),
              "");
  }
  // up [70] broadcast over gate [2, 3, 70], and gate [2, 1, 70] over up [2, 3, 70].
  std::vector<double> big, row;
  for (int i = 0; i < 420; ++i)
    big.push_back(-6.0 + 12.0 * double((i * 29) % 83) / 82.0);
  for (int i = 0; i < 70; ++i)
    row.push_back(-1.5 + 3.0 * double(i) / 69.0);
  std::vector<double> mid(big.begin(), big.begin() + 140);
  EXPECT_EQ(deviceVsInterpreter(Tensor::fromDoubles(DType::F32, {2, 3, 70}, big),
                                Tensor::fromDoubles(DType::F32, {70}, row), kTranscendental),
            "");
  EXPECT_EQ(deviceVsInterpreter(Tensor::fromDoubles(DType::F32, {2, 1, 70}, mid),
                                Tensor::fromDoubles(DType::F32, {2, 3, 70}, big), kTranscendental),
            "");
}

TEST(VulkanSwiglu, SwappedOperandsAreCaught) {
  GRAFT_REQUIRE_VULKAN();
  // The bound must reject gate and up swapped (silu(u) * g for silu(g) * u).
  std::vector<double> gs, us;
  for (int i = 0; i < 64; ++i) {
    gs.push_back(-4.0 + 0.125 * i);
    us.push_back(0.5 - 0.01 * i);
  }
  const std::string verdict =
      deviceVsInterpreter(Tensor::fromDoubles(DType::F32, {64}, gs),
                          Tensor::fromDoubles(DType::F32, {64}, us), kTranscendental,
                          /*swapOnDevice=*/true);
  // A value difference, not a failure to run.
  EXPECT_NE(verdict, "");
  EXPECT_EQ(verdict.rfind("parse:", 0), std::string::npos) << verdict;
  EXPECT_EQ(verdict.rfind("run:", 0), std::string::npos) << verdict;
}

TEST(VulkanSwiglu, TexelAndStorageBufferFormsAgreeBitForBit) {
  GRAFT_REQUIRE_VULKAN();
  // On CPU devices with texel buffers the wide f32 form reads gate and up as
  // rgba32ui texels (swiglu_vec4t, KernelCommon.h elementwiseForm); on a
  // device whose maxTexelBufferElements an input exceeds, as 64-bit
  // storage-buffer words (swiglu_vec4w). Same formula on the same bits: equal
  // outputs, bit for bit, over the edge values (17 bodies of 32 and a tail of
  // one, read from the last partial texel). f16 has no wide form (as unary's
  // and binary's): swiglu_vec4_half under both.
  vk::Context &ctx = *context();
  if (const std::string why = texelFormsUnavailable(ctx.info()); !why.empty())
    GTEST_SKIP() << why;
  const std::vector<double> gs = gateEdgeValues();
  std::vector<double> us(gs.rbegin(), gs.rend());
  const int64_t n = static_cast<int64_t>(gs.size());
  DispatchedOutputs runs[2];
  runTexelAndCapped(
      ctx,
      [&](vk::Context &k, std::vector<vk::DeviceTensor> &results) {
        for (DType dt : {DType::F32, DType::F16}) {
          auto g = vk::uploadTensor(k, Tensor::fromDoubles(dt, {n}, gs));
          auto u = vk::uploadTensor(k, Tensor::fromDoubles(dt, {n}, us));
          ASSERT_TRUE(g.ok() && u.ok());
          auto r = vk::swiglu(k, *g, *u);
          ASSERT_TRUE(r.ok()) << render(r.diags());
          results.push_back(std::move(*r));
        }
      },
      runs);
  EXPECT_EQ(runs[0].variants, (std::vector<std::string>{"swiglu_vec4t_float", "swiglu_vec4_half"}));
  EXPECT_EQ(runs[1].variants, (std::vector<std::string>{"swiglu_vec4w_float", "swiglu_vec4_half"}));
  ASSERT_EQ(runs[0].outputs.size(), 2u);
  expectSameBits(runs);
}
