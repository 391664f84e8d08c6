//===- VulkanKernelsTest.cpp - Every Vulkan kernel against the interpreter ===//
//
// Each kernel runs as a one-node (or few-node) graph on the device and on
// the reference interpreter with the same random inputs, for several shapes
// including sizes that are not multiples of the 64-wide workgroups. The
// tolerance of each kernel is stated in its test (and in
// docs/vulkan-backend.md): 0 means bit-exact.
//
//===----------------------------------------------------------------------===//
#include "VulkanTestUtil.h"

#include "graft/vulkan/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

using namespace graft;
using namespace graft::vktest;

namespace {

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string broadcastShape(std::vector<int64_t> a, std::vector<int64_t> b) {
  while (a.size() < b.size())
    a.insert(a.begin(), 1);
  while (b.size() < a.size())
    b.insert(b.begin(), 1);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = std::max(a[i], b[i]);
  return shapeStr(a);
}

constexpr Tolerance kExact{0, 0};
/// Correctly rounded division / sqrt may differ by an ulp on drivers that
/// do not round them correctly (GLSL allows 2.5 ulp for division).
constexpr Tolerance kUlps{0, 4e-7};
/// exp / tanh come from the driver (GLSL leaves their precision open).
constexpr Tolerance kTranscendental{2e-7, 2e-6};
/// f16 results: one f16 ulp.
constexpr Tolerance kHalfUlp{1e-7, 1e-3};

//===-- Elementwise -----------------------------------------------------===//

struct BinaryCase {
  std::vector<int64_t> a, b;
};
// Same-shape operands take the vec4 kernels: 5 values (a tail only), 64 (no
// tail) and 201 (32-value wide bodies and a tail of 9).
const std::vector<BinaryCase> kBinaryShapes = {
    {{5}, {5}},          {{4, 16}, {4, 16}}, {{3, 67}, {3, 67}}, {{3, 67}, {67}},
    {{2, 1, 7}, {3, 1}}, {{4, 130}, {4, 1}}, {{1}, {129}},       {{64}, {}}};

void checkBinary(const std::string &op, const std::string &dtype, Tolerance tol,
                 const std::string &extra = "") {
  for (const BinaryCase &c : kBinaryShapes) {
    std::ostringstream g;
    g << "graph @t {\n  input %a : " << dtype << shapeStr(c.a) << "\n  input %b : " << dtype
      << shapeStr(c.b) << "\n  %o : " << dtype << broadcastShape(c.a, c.b) << " = aten." << op
      << ".Tensor(%a, %b" << extra << ")\n  output %o\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), tol, 7);
  }
}

TEST(VulkanKernels, BinaryF32) {
  GRAFT_REQUIRE_VULKAN();
  checkBinary("add", "f32", kExact);
  checkBinary("add", "f32", kExact, ", alpha=2.5");
  checkBinary("sub", "f32", kExact);
  checkBinary("mul", "f32", kExact);
  checkBinary("div", "f32", kUlps);
}

TEST(VulkanKernels, BinaryF16) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  checkBinary("add", "f16", kExact);
  checkBinary("mul", "f16", kExact);
  checkBinary("div", "f16", kHalfUlp);
}

TEST(VulkanKernels, BinaryScalarAndPromotion) {
  GRAFT_REQUIRE_VULKAN();
  // Python-number operands, alpha, pow's special exponents, an int tensor
  // promoted to f32, and a 0-dim operand.
  checkGraph(R"(graph @t {
  input %a : f32[3, 70]
  input %i : i32[3, 70]
  input %z : f32[]
  %m : f32[3, 70] = aten.mul.Scalar(%a, 0.1)
  %s : f32[3, 70] = aten.add.Scalar(%m, 1e-05, alpha=3)
  %p : f32[3, 70] = aten.pow.Tensor_Scalar(%s, 2)
  %q : f32[3, 70] = aten.pow.Tensor_Scalar(%a, -0.5)
  %d : f32[3, 70] = aten.div.Tensor(%p, %z)
  %f : f32[3, 70] = aten.mul.Tensor(%i, %a)
  %n : f32[3, 70] = aten.sub.Tensor(%f, %d)
  output %n
  output %q
})",
             kUlps, 3);
}

TEST(VulkanKernels, BinaryScalarF16Rounding) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  // add rounds the scalar to f16 first; mul keeps it in f32.
  checkGraph(R"(graph @t {
  input %a : f16[4, 33]
  %x : f16[4, 33] = aten.add.Scalar(%a, 0.1)
  %y : f16[4, 33] = aten.mul.Scalar(%x, 0.3)
  output %y
})",
             kExact, 5);
}

struct UnaryCase {
  std::string op;
  Tolerance tol;
  std::string args = "";
};

TEST(VulkanKernels, Unary) {
  GRAFT_REQUIRE_VULKAN();
  const std::vector<UnaryCase> cases = {
      {"neg", kExact},           {"relu", kExact},
      {"rsqrt", kUlps},          {"sqrt", kUlps},
      {"silu", kTranscendental}, {"sigmoid", kTranscendental},
      {"gelu", {1e-6, 2e-6}},    {"gelu", kTranscendental, ", approximate=\"tanh\""},
  };
  for (const UnaryCase &c : cases)
    for (const std::vector<int64_t> &shape :
         std::vector<std::vector<int64_t>>{{1}, {63}, {4, 16}, {3, 65}, {2, 3, 129}}) {
      std::string dt = "f32";
      std::ostringstream g;
      g << "graph @t {\n  input %a : f32" << shapeStr(shape) << "\n";
      // rsqrt/sqrt on non-negative inputs.
      std::string src = "%a";
      if (c.op == "rsqrt" || c.op == "sqrt") {
        g << "  %p : f32" << shapeStr(shape) << " = aten.mul.Tensor(%a, %a)\n";
        src = "%p";
      }
      g << "  %o : f32" << shapeStr(shape) << " = aten." << c.op << ".default(" << src << c.args
        << ")\n  output %o\n}\n";
      SCOPED_TRACE(g.str());
      checkGraph(g.str(), c.tol, 11);
    }
}

//===-- The elementwise ops ops.yaml claims -------------------------------===//
// exp, abs, reciprocal, maximum, minimum, clamp and where, on random inputs
// over several shapes (broadcasting, promotion, f16) and on hand-picked edge
// values (NaN, infinities, signed zeros, ties, min > max, NaN bounds).

/// Runs `gir` on the device (every node on the device, no fallback) and on
/// the interpreter with `inputs`; outputs within `tol`, NaN / inf matching,
/// and with a zero tolerance the sign of every zero matching too.
/// Runs `gir` on the device and the interpreter; every output within `tol`.
/// The sign of a zero must match under an exact tolerance, and with `signs`
/// the sign of every element the reference does not make NaN.
void checkWithInputs(const std::string &gir, const std::vector<RuntimeValue> &inputs, Tolerance tol,
                     bool signs = false) {
  SCOPED_TRACE(gir);
  auto g = parseGraph(gir, "test.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto ref = Interpreter().run(**g, inputs);
  ASSERT_TRUE(ref.ok()) << render(ref.diags());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto out = (*exec)->run(inputs);
  ASSERT_TRUE(out.ok()) << render(out.diags());
  ASSERT_EQ(out->size(), ref->size());
  for (std::size_t i = 0; i < out->size(); ++i) {
    const Tensor &a = std::get<Tensor>((*out)[i]);
    const Tensor &e = std::get<Tensor>((*ref)[i]);
    EXPECT_EQ(allClose(a, e, tol), "") << "output " << i;
    if ((signs || (tol.abs == 0 && tol.rel == 0)) && a.sizes() == e.sizes())
      for (int64_t k = 0; k < a.numel(); ++k)
        if (signs ? !std::isnan(e.getDouble(k)) : e.getDouble(k) == 0) {
          EXPECT_EQ(std::signbit(a.getDouble(k)), std::signbit(e.getDouble(k)))
              << "output " << i << " element " << k << ": sign of " << e.getDouble(k);
        }
  }
}

const std::vector<std::vector<int64_t>> kElementwiseShapes = {{1}, {63}, {3, 65}, {2, 3, 129}};

TEST(VulkanKernels, ExpAbsReciprocal) {
  GRAFT_REQUIRE_VULKAN();
  const bool f16 = context()->info().storageBuffer16BitAccess;
  const std::vector<UnaryCase> cases = {
      {"abs", kExact}, {"exp", kTranscendental}, {"reciprocal", kUlps}};
  for (const UnaryCase &c : cases)
    for (const char *dt : {"f32", "f16"}) {
      if (std::string(dt) == "f16" && !f16)
        continue;
      // f16: one rounding of the f32 result, so an f16 ulp at most.
      Tolerance tol = std::string(dt) == "f16" ? kHalfUlp : c.tol;
      for (const std::vector<int64_t> &shape : kElementwiseShapes) {
        std::ostringstream g;
        g << "graph @t {\n  input %a : " << dt << shapeStr(shape) << "\n  %o : " << dt
          << shapeStr(shape) << " = aten." << c.op << ".default(%a)\n  output %o\n}\n";
        SCOPED_TRACE(g.str());
        checkGraph(g.str(), c.op == "abs" ? kExact : tol, 13);
      }
    }
}

TEST(VulkanKernels, MaximumMinimumClampWhere) {
  GRAFT_REQUIRE_VULKAN();
  const bool f16 = context()->info().storageBuffer16BitAccess;
  for (const char *dt : {"f32", "f16"}) {
    if (std::string(dt) == "f16" && !f16)
      continue;
    for (const char *op : {"maximum", "minimum"})
      for (const BinaryCase &c : kBinaryShapes) {
        std::ostringstream g;
        g << "graph @t {\n  input %a : " << dt << shapeStr(c.a) << "\n  input %b : " << dt
          << shapeStr(c.b) << "\n  %o : " << dt << broadcastShape(c.a, c.b) << " = aten." << op
          << ".default(%a, %b)\n  output %o\n}\n";
        SCOPED_TRACE(g.str());
        checkGraph(g.str(), kExact, 7);
      }
    for (const char *bounds : {"min=-0.5, max=0.25", "min=0.7, max=-0.2", "min=0.1", "max=-0.3"})
      for (const std::vector<int64_t> &shape : kElementwiseShapes) {
        std::ostringstream g;
        g << "graph @t {\n  input %a : " << dt << shapeStr(shape) << "\n  %o : " << dt
          << shapeStr(shape) << " = aten.clamp.default(%a, " << bounds << ")\n  output %o\n}\n";
        SCOPED_TRACE(g.str());
        checkGraph(g.str(), kExact, 9);
      }
  }
  // where: three-way broadcasting, promotion of the branches (i32 other
  // with f32 self -> f32), a Python-number branch, integer results.
  const std::string where = R"(graph @t {
  input %c : bool[2, 5, 67]
  input %x : f32[2, 5, 67]
  input %s : f32[5, 1]
  input %i : i32[67]
  input %j : i32[2, 1, 1]
  %w : f32[2, 5, 67] = aten.where.self(%c, %s, %i)
  %v : f32[2, 5, 67] = aten.where.self(%c, %x, 0.5)
  %k : i32[2, 5, 67] = aten.where.self(%c, %i, %j)
  output %w
  output %v
  output %k
})";
  auto g = parseGraph(where, "where.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto inputs = makeRandomInputs(**g, 5);
  ASSERT_TRUE(inputs.ok()) << render(inputs.diags());
  std::vector<int64_t> pattern;
  for (int64_t k = 0; k < 2 * 5 * 67; ++k)
    pattern.push_back((k * 7 + k / 67) % 3 == 0);
  (*inputs)[0] = Tensor::fromInts(DType::Bool, {2, 5, 67}, pattern);
  checkWithInputs(where, *inputs, kExact);
}

TEST(VulkanKernels, ElementwiseEdgeValues) {
  GRAFT_REQUIRE_VULKAN();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> xs = {-2, 0.5, 3, nan, -inf, inf, -0.0, 0.0, 1, -1, 65504, 1e-3};
  std::vector<double> ys = {2, nan, 3, 1, 0, -inf, 0.0, -0.0, 1, -2, -65504, 1e-3};
  const int64_t n = static_cast<int64_t>(xs.size());
  const bool f16 = context()->info().storageBuffer16BitAccess;
  for (DType dt : {DType::F32, DType::F16}) {
    if (dt == DType::F16 && !f16)
      continue;
    std::string d(name(dt));
    Tensor x = Tensor::fromDoubles(dt, {n}, xs);
    Tensor y = Tensor::fromDoubles(dt, {n}, ys);
    Tensor c = Tensor::fromInts(DType::Bool, {n}, {1, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1});
    std::string sig = d + "[" + std::to_string(n) + "]";
    // NaN in either operand, ties (3 vs 3), signed zeros (-0 vs 0: the
    // reference's std::max keeps the first), infinities.
    checkWithInputs("graph @t {\n  input %x : " + sig + "\n  input %y : " + sig +
                        "\n  %a : " + sig + " = aten.maximum.default(%x, %y)\n  %b : " + sig +
                        " = aten.minimum.default(%x, %y)\n  %c : " + sig +
                        " = aten.abs.default(%x)\n  %r : " + sig +
                        " = aten.reciprocal.default(%x)\n  output %a\n  output %b\n  output "
                        "%c\n  output %r\n}\n",
                    {x, y}, kExact);
    checkWithInputs("graph @t {\n  input %x : " + sig + "\n  %e : " + sig +
                        " = aten.exp.default(%x)\n  output %e\n}\n",
                    {x}, dt == DType::F16 ? kHalfUlp : kTranscendental);
    // clamp: both bounds, min > max, one bound at a signed zero, a lone NaN
    // bound (ignored), two bounds with a NaN (all NaN), infinite bounds.
    for (const char *bounds : {"min=-1.0, max=1.0", "min=2.0, max=1.0", "min=0.0", "max=-0.0",
                               "min=nan", "min=-1.0, max=nan", "min=-inf, max=inf", "max=0.1"}) {
      checkWithInputs("graph @t {\n  input %x : " + sig + "\n  %o : " + sig +
                          " = aten.clamp.default(%x, " + bounds + ")\n  output %o\n}\n",
                      {x}, kExact);
    }
    // where selects NaN, infinities and signed zeros unchanged.
    checkWithInputs("graph @t {\n  input %c : bool[" + std::to_string(n) +
                        "]\n  input %x : " + sig + "\n  input %y : " + sig + "\n  %o : " + sig +
                        " = aten.where.self(%c, %x, %y)\n  output %o\n}\n",
                    {c, x, y}, kExact);
  }
  // A clamp bound the dtype cannot hold is the interpreter's error on the device too.
  auto g = parseGraph(R"(graph @t {
  input %x : f32[4]
  %o : f32[4] = aten.clamp.default(%x, max=1e+39)
  output %o
})",
                      "t.gir");
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto exec = vk::GraphExecutor::create(*context(), **g);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  auto out = (*exec)->run({Tensor::fromDoubles(DType::F32, {4}, {1, 2, 3, 4})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.diags()[0].message.find("without overflow"), std::string::npos)
      << out.diags()[0].message;
}

/// Inputs at the edges of the exp-based activations: infinities, NaN, signed
/// zeros, f32 subnormals, the ends of f32 exp's range (exp(-x) overflows below
/// x = -88.72, sigmoid's result is subnormal from about -87.3), large |x|,
/// f32's extremes, and a sweep over [-90, 90] in steps of 0.35: 545 values, so
/// the wide kernels run 17 bodies of 32 values and a tail of one.
std::vector<double> activationEdgeValues() {
  const double inf = std::numeric_limits<double>::infinity();
  const double fmax = std::numeric_limits<float>::max();
  std::vector<double> xs = {-inf,   inf,    std::numeric_limits<double>::quiet_NaN(),
                            -0.0,   0.0,    1e-40,
                            -1e-40, 1e-30,  -1e-30,
                            -88.8,  -88.73, -88.72,
                            -88.0,  -87.4,  -87.3,
                            -86.0,  88.0,   88.72,
                            88.8,   -1e30,  1e30,
                            -fmax,  fmax,   -1.2785};
  for (int i = 0; i <= 520; ++i)
    xs.push_back(-90.0 + 0.35 * i);
  return xs;
}

TEST(VulkanKernels, SiluSigmoidEdgeValues) {
  GRAFT_REQUIRE_VULKAN();
  // silu and sigmoid use the driver's exp, so their bound is the
  // transcendental one; the reference is PyTorch's formula (Activation.cpp:
  // x / (1 + exp(-x)), 1 / (1 + exp(-x))), so silu(-inf) is NaN (-inf / inf),
  // silu(+inf) = +inf, silu(x) = -0 once exp(-x) overflows. Every sign the
  // reference gives (not NaN) must be the device's too.
  const std::vector<double> xs = activationEdgeValues();
  const std::string sig = "f32[" + std::to_string(xs.size()) + "]";
  Tensor x = Tensor::fromDoubles(DType::F32, {int64_t(xs.size())}, xs);
  checkWithInputs("graph @t {\n  input %x : " + sig + "\n  %s : " + sig +
                      " = aten.silu.default(%x)\n  %g : " + sig +
                      " = aten.sigmoid.default(%x)\n  output %s\n  output %g\n}\n",
                  {x}, kTranscendental, /*signs=*/true);
}

TEST(VulkanKernels, TranscendentalToleranceCatchesAnExpOffBy1e4) {
  // The bound the exp-based kernels are held to (|d| <= 2e-7 + 2e-6·|ref|)
  // is tight enough to catch an exp that is wrong by one part in 10^4 inside
  // silu, and passes one that is wrong by 1 ulp (f32, x in [-10, 10]).
  std::vector<double> ref, planted, ulp;
  for (int i = 0; i <= 400; ++i) {
    const float x = -10.0f + 0.05f * float(i);
    const float e = std::exp(-x);
    ref.push_back(x / (1.0f + e));
    planted.push_back(x / (1.0f + e * 1.0001f));
    ulp.push_back(x / (1.0f + std::nextafter(e, 2.0f * e)));
  }
  const int64_t n = static_cast<int64_t>(ref.size());
  const Tensor r = Tensor::fromDoubles(DType::F32, {n}, ref);
  EXPECT_NE(allClose(Tensor::fromDoubles(DType::F32, {n}, planted), r, kTranscendental), "");
  EXPECT_EQ(allClose(Tensor::fromDoubles(DType::F32, {n}, ulp), r, kTranscendental), "");
}

//===-- Reductions, softmax, rms_norm -----------------------------------===//

TEST(VulkanKernels, MeanSumAmaxLastDims) {
  GRAFT_REQUIRE_VULKAN();
  for (const std::vector<int64_t> &shape :
       std::vector<std::vector<int64_t>>{{7}, {3, 65}, {2, 5, 130}, {1, 67, 64}}) {
    std::vector<int64_t> kept = shape;
    kept.back() = 1;
    std::vector<int64_t> dropped(shape.begin(), shape.end() - 1);
    std::ostringstream g;
    g << "graph @t {\n  input %a : f32" << shapeStr(shape) << "\n"
      << "  %m : f32" << shapeStr(kept) << " = aten.mean.dim(%a, [-1], true)\n"
      << "  %s : f32" << shapeStr(dropped) << " = aten.sum.dim_IntList(%a, [-1])\n"
      << "  %x : f32" << shapeStr(dropped) << " = aten.amax.default(%a, [-1])\n"
      << "  output %m\n  output %s\n  output %x\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kUlps, 13);
  }
  // Two trailing dims at once.
  checkGraph(R"(graph @t {
  input %a : f32[3, 5, 17]
  %m : f32[3] = aten.mean.dim(%a, [-1, -2])
  output %m
})",
             kUlps, 2);
}

TEST(VulkanKernels, Softmax) {
  GRAFT_REQUIRE_VULKAN();
  for (const std::vector<int64_t> &shape :
       std::vector<std::vector<int64_t>>{{5}, {3, 67}, {2, 4, 129}}) {
    std::ostringstream g;
    g << "graph @t {\n  input %a : f32" << shapeStr(shape) << "\n  %o : f32" << shapeStr(shape)
      << " = aten._softmax.default(%a, -1, false)\n  output %o\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kTranscendental, 17);
  }
}

TEST(VulkanKernels, RmsNorm) {
  GRAFT_REQUIRE_VULKAN();
  for (int64_t d : {8, 64, 65, 300}) {
    std::ostringstream g;
    g << "graph @t {\n  param %w : f32[" << d << "] fqn=\"w\" = random(seed=4, min=0.5, max=1.5)\n"
      << "  input %x : f32[2, 3, " << d << "]\n  %o : f32[2, 3, " << d
      << "] = et_vk.rms_norm.default(%x, %w, 1e-06)\n  output %o\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kUlps, 19);
  }
}

// Rows longer than llvmpipe's 65535 loop iterations per invocation
// (DeviceInfo::maxLoopIterations; reduce walks a row once, rms_norm twice,
// softmax three times): lavapipe used to stop the loops there silently
// (amax over 2^19 values read 65536 of them). The kernels now split such rows
// over dispatches that carry the running values, in the same order, so the
// tolerances stay the short rows' ones. On a GPU these are single dispatches.
TEST(VulkanKernels, RowKernelsPastTheLoopLimit) {
  GRAFT_REQUIRE_VULKAN();
  if (context()->info().name.rfind("llvmpipe", 0) == 0) {
    EXPECT_EQ(context()->info().maxLoopIterations, 65535u);
  }
  // 140001 values: three dispatches of reduce, seven of softmax (a boundary
  // inside each pass), five of rms_norm.
  for (int64_t n : {int64_t(70001), int64_t(140001)}) {
    std::string row = "[2, " + std::to_string(n) + "]";
    std::ostringstream g;
    g << "graph @t {\n  input %a : f32" << row << "\n"
      << "  %m : f32[2] = aten.mean.dim(%a, [-1])\n"
      << "  %s : f32[2] = aten.sum.dim_IntList(%a, [-1])\n"
      << "  %x : f32[2] = aten.amax.default(%a, [-1])\n"
      << "  %y : f32[2] = aten.amin.default(%a, [-1])\n"
      << "  output %m\n  output %s\n  output %x\n  output %y\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kUlps, 23);
    // The f32 sum and the extremes are the reference's bit for bit.
    std::ostringstream e;
    e << "graph @t {\n  input %a : f32" << row << "\n"
      << "  %s : f32[2] = aten.sum.dim_IntList(%a, [-1])\n"
      << "  %x : f32[2] = aten.amax.default(%a, [-1])\n"
      << "  %y : f32[2] = aten.amin.default(%a, [-1])\n"
      << "  output %s\n  output %x\n  output %y\n}\n";
    SCOPED_TRACE(e.str());
    checkGraph(e.str(), kExact, 24);
    std::ostringstream sm;
    sm << "graph @t {\n  input %a : f32" << row << "\n  %o : f32" << row
       << " = aten._softmax.default(%a, -1, false)\n  output %o\n}\n";
    SCOPED_TRACE(sm.str());
    checkGraph(sm.str(), kTranscendental, 29);
    std::ostringstream rn;
    rn << "graph @t {\n  param %w : f32[" << n << "] fqn=\"w\" = random(seed=4, min=0.5, max=1.5)\n"
       << "  input %x : f32" << row << "\n  %o : f32" << row
       << " = et_vk.rms_norm.default(%x, %w, 1e-06)\n  output %o\n}\n";
    SCOPED_TRACE(rn.str());
    {
      // The reference's order of squares: on a GPU the default (fast)
      // profile sums them cooperatively (rms_norm_coop, bounded by
      // RmsNormCoopWithinBound), which an NVIDIA H200 showed is ~50 ulp
      // away at 70001 values, inside its (gamma_D + 12u) bound.
      ExactKernelsScope exact;
      checkGraph(rn.str(), kUlps, 31);
    }
  }
  // Attention over 30000 keys (90000 softmax steps, split; one output
  // dispatch) and over 70001 (both split), also causal (top-left: the rows
  // attend to their first keys, later dispatches add zeros). The exact
  // profile: GPUs' fast policy would run sdpa_fused in one dispatch.
  ExactKernelsScope exact;
  checkGraph(R"(graph @t {
  input %q : f32[1, 2, 3, 8]
  input %k : f32[1, 2, 30000, 8]
  input %v : f32[1, 2, 30000, 8]
  input %k2 : f32[1, 1, 70001, 8]
  input %v2 : f32[1, 1, 70001, 8]
  %o : f32[1, 2, 3, 8] = aten.scaled_dot_product_attention.default(%q, %k, %v)
  %o2 : f32[1, 2, 3, 8] = aten.scaled_dot_product_attention.default(%q, %k2, %v2, enable_gqa=true)
  %o3 : f32[1, 2, 3, 8] = aten.scaled_dot_product_attention.default(%q, %k2, %v2, is_causal=true, enable_gqa=true)
  output %o
  output %o2
  output %o3
})",
             kTranscendental, 37);
}

// The NaN flag and the running max cross dispatch boundaries: a NaN after
// the first dispatch still makes amax/amin NaN, and the max found in the
// first dispatch survives the later ones.
TEST(VulkanKernels, AmaxAminCarryAcrossDispatches) {
  GRAFT_REQUIRE_VULKAN();
  const int64_t n = 140001;
  Tensor x = Tensor::empty(DType::F32, {2, n});
  for (int64_t i = 0; i < 2 * n; ++i)
    x.setDouble(i, static_cast<double>(i % 1000) / 1000.0);
  x.setDouble(5, 7.5);                                               // row 0: max in dispatch 1
  x.setDouble(n + 100000, std::numeric_limits<double>::quiet_NaN()); // row 1: NaN in dispatch 2
  auto dx = vk::uploadTensor(*context(), x);
  ASSERT_TRUE(dx.ok());
  for (vk::ReduceKind k : {vk::ReduceKind::Amax, vk::ReduceKind::Amin}) {
    auto r = vk::reduceInner(*context(), k, *dx, 1, false);
    ASSERT_TRUE(r.ok()) << render(r.diags());
    auto h = vk::downloadTensor(*context(), *r);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->getDouble(0), k == vk::ReduceKind::Amax ? 7.5 : 0.0);
    EXPECT_TRUE(std::isnan(h->getDouble(1)));
  }
}

//===-- Matrix products ---------------------------------------------------===//

TEST(VulkanKernels, MatmulBmmLinearAddmm) {
  GRAFT_REQUIRE_VULKAN();
  checkGraph(R"(graph @t {
  input %a : f32[2, 3, 5, 70]
  input %b : f32[3, 70, 9]
  input %x : f32[4, 33]
  input %y : f32[33, 65]
  input %p : f32[6, 7, 8]
  input %q : f32[6, 8, 3]
  param %w : f32[65, 33] fqn="w" = random(seed=3, min=-1, max=1)
  param %bias : f32[65] fqn="b" = random(seed=4, min=-1, max=1)
  input %v : f32[70]
  %m : f32[2, 3, 5, 9] = aten.matmul.default(%a, %b)
  %mm : f32[4, 65] = aten.mm.default(%x, %y)
  %bm : f32[6, 7, 3] = aten.bmm.default(%p, %q)
  %l : f32[4, 65] = aten.linear.default(%x, %w, %bias)
  %am : f32[4, 65] = aten.addmm.default(%bias, %x, %y)
  %mv : f32[2, 3, 5] = aten.matmul.default(%a, %v)
  output %m
  output %mm
  output %bm
  output %l
  output %am
  output %mv
})",
             kExact, 23);
}

//===-- Views and copies --------------------------------------------------===//

TEST(VulkanKernels, ViewLikeOps) {
  GRAFT_REQUIRE_VULKAN();
  checkGraph(R"(graph @t {
  input %a : f32[2, 3, 65]
  input %i : i64[5, 4]
  %v : f32[6, 65] = aten.view.default(%a, [-1, 65])
  %r : f32[2, 195] = aten.reshape.default(%a, [2, 195])
  %p : f32[65, 2, 3] = aten.permute.default(%a, [2, 0, 1])
  %t : f32[2, 65, 3] = aten.transpose.int(%a, 1, 2)
  %s : f32[2, 3, 20] = aten.slice.Tensor(%a, -1, 3, 62, 3)
  %se : f32[2, 65] = aten.select.int(%a, 1, -1)
  %u : f32[2, 1, 3, 65] = aten.unsqueeze.default(%a, 1)
  %e : f32[2, 2, 3, 65] = aten.expand.default(%u, [2, 2, 3, 65])
  %c : f32[2, 3, 150] = aten.cat.default([%a, %a, %s], -1)
  %cp : f32[65, 2, 3] = aten.permute_copy.default(%a, [2, 0, 1])
  %sc : i64[5, 2] = aten.slice_copy.Tensor(%i, 1, 1, 3)
  %tt : f32[65, 6] = aten.t.default(%v)
  %cl : f32[2, 65, 3] = aten.clone.default(%t)
  output %v
  output %r
  output %p
  output %t
  output %s
  output %se
  output %e
  output %c
  output %cp
  output %sc
  output %tt
  output %cl
})",
             kExact, 29);
}

TEST(VulkanKernels, CastsAndCopies) {
  GRAFT_REQUIRE_VULKAN();
  std::string g = R"(graph @t {
  input %a : f32[3, 67]
  input %i : i64[3, 67]
  %h : f16[3, 67] = aten._to_copy.default(%a, dtype=f16)
  %b : f32[3, 67] = aten._to_copy.default(%h, dtype=f32)
  %f : f32[3, 67] = aten._to_copy.default(%i, dtype=f32)
  %k : i8[3, 67] = aten._to_copy.default(%i, dtype=i8)
  %m : f32[3, 67] = aten.mul.Scalar(%a, 100.0)
  %n : i32[3, 67] = aten._to_copy.default(%m, dtype=i32)
  output %b
  output %f
  output %k
  output %n
})";
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  checkGraph(g, kExact, 31);
}

// The bandwidth calibration copy (BM_VkStream) copies every bit: the device's
// variant and each of them (8 vec4s per invocation as u64vec4 words, read
// as storage texels or storage-buffer words; the one-vec4 GPU variant), over
// whole blocks, a partial last block and less than one block; bad operands
// are refused.
TEST(VulkanKernels, StreamCopy) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  for (int64_t n : {4, 52, 4 * (8 * 64 * 3 + 5)}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    Tensor t = Tensor::empty(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i)
      t.setDouble(i, i % 7 == 3 ? -0.0 : double(i) * 0.37 - 11.0);
    auto in = vk::uploadTensor(ctx, t);
    ASSERT_TRUE(in) << render(in.diags());
    // streamCopy's choice, then each variant directly: one vec4 per
    // invocation, four strided by the grid (the GPU candidate; n = 52 and
    // the last size leave its last slice partial), and on devices with
    // shaderInt64 8 (u64vec4 words; read as texels where the device has them).
    std::vector<std::pair<std::string, uint64_t>> variants = {
        {"", 0}, {"stream_copy_vec4", 1}, {"stream_copy_vec4x4", 4}};
    if (ctx.info().shaderInt64) {
      variants.push_back({"stream_copy_vec4w", 8});
      if (ctx.info().storageTexelBuffers)
        variants.push_back({"stream_copy_vec4t", 8});
    }
    for (const auto &[variant, per] : variants) {
      auto out = vk::allocateTensor(ctx, DType::F32, {n});
      ASSERT_TRUE(out) << render(out.diags());
      int32_t numVec4 = static_cast<int32_t>(n / 4);
      Status s = per ? ctx.dispatch1D(variant, {out->buffer.get(), in->buffer.get()}, &numVec4,
                                      sizeof(numVec4), (uint64_t(numVec4) + per - 1) / per)
                     : vk::streamCopy(ctx, *in, *out);
      ASSERT_TRUE(s) << render(s.diags());
      auto back = vk::downloadTensor(ctx, *out);
      ASSERT_TRUE(back) << render(back.diags());
      EXPECT_EQ(0, std::memcmp(back->rawData(), t.rawData(), t.nbytes()))
          << (per ? variant : "streamCopy");
    }
  }
  auto a = vk::allocateTensor(ctx, DType::F32, {6});
  auto b = vk::allocateTensor(ctx, DType::F32, {8});
  auto c = vk::allocateTensor(ctx, DType::I32, {8});
  ASSERT_TRUE(a && b && c);
  // A named copy must be one of the device's candidates.
  auto b2 = vk::allocateTensor(ctx, DType::F32, {8});
  ASSERT_TRUE(b2);
  const std::vector<std::string> candidates = vk::streamCopyVariants(ctx, *b);
  ASSERT_FALSE(candidates.empty());
  EXPECT_TRUE(vk::streamCopy(ctx, *b, *b2, candidates.back()));
  Status unknown = vk::streamCopy(ctx, *b, *b2, "stream_copy_nonesuch");
  ASSERT_FALSE(unknown);
  EXPECT_NE(render(unknown.diags()).find("is not a stream copy this device runs"),
            std::string::npos);
  for (auto [x, y] : {std::pair{&*a, &*a}, std::pair{&*b, &*a}, std::pair{&*c, &*c}}) {
    Status s = vk::streamCopy(ctx, *x, *y);
    ASSERT_FALSE(s);
    EXPECT_NE(render(s.diags()).find("vulkan stream: needs two f32 tensors"), std::string::npos)
        << render(s.diags());
  }
}

TEST(VulkanKernels, RepeatCopiesAndHardtanh) {
  GRAFT_REQUIRE_VULKAN();
  // What patterns/redundant_ops.pat and fuse_clamp.pat leave for the device:
  // repeat with real factors (tiles, new leading dims, a zero factor, of a
  // transposed view, all ones), a copy that broadcasts and converts its src,
  // the copies the rules remove (kept where an in-place update guards them),
  // and hardtanh (default bounds, ReLU6's, inverted bounds give the max).
  checkGraph(R"(graph @t {
  input %a : f32[3, 5]
  input %b : f32[4, 3, 5]
  input %i : i32[5]
  input %o : f32[1, 1]
  %r : f32[2, 6, 10] = aten.repeat.default(%a, [2, 2, 2])
  %t : f32[5, 3] = aten.t.default(%a)
  %rt : f32[5, 9] = aten.repeat.default(%t, [1, 3])
  %ri : i32[3, 5] = aten.repeat.default(%i, [3, 1])
  %rz : f32[0, 5] = aten.repeat.default(%a, [0, 1])
  %r1 : f32[1, 1] = aten.repeat.default(%o, [1, 1])
  %c : f32[4, 3, 5] = aten.copy.default(%b, %i)
  %ac : f32[3, 5] = aten.alias_copy.default(%a)
  %lf : f32[3, 5] = aten.lift_fresh_copy.default(%a)
  %cd : f32[3, 5] = dim_order_ops._clone_dim_order.default(%a, dim_order=[0, 1])
  %a4 : f32[3, 5] = aten.mul.Scalar(%a, 4.0)
  %ht : f32[3, 5] = aten.hardtanh.default(%a4)
  %h6 : f32[3, 5] = aten.hardtanh.default(%a4, 0.0, 6.0)
  %hi : f32[3, 5] = aten.hardtanh.default(%a4, 0.5, -0.5)
  output %r
  output %rt
  output %ri
  output %rz
  output %r1
  output %c
  output %ac
  output %lf
  output %cd
  output %ht
  output %h6
  output %hi
})",
             kExact, 43);
}

TEST(VulkanKernels, SubDivScalar) {
  GRAFT_REQUIRE_VULKAN();
  // Python-number sub/div: alpha, an i32 tensor kept i32 by an int scalar
  // (sub) and promoted to f32 (true division), and division by zero
  // (±inf, and NaN for the zeros the random i32 input contains).
  checkGraph(R"(graph @t {
  input %a : f32[3, 70]
  input %i : i32[3, 70]
  %s : f32[3, 70] = aten.sub.Scalar(%a, 0.25, alpha=3)
  %si : i32[3, 70] = aten.sub.Scalar(%i, 5, 2)
  %sf : f32[3, 70] = aten.sub.Scalar(%i, 0.5)
  %d : f32[3, 70] = aten.div.Scalar(%s, 0.3)
  %di : f32[3, 70] = aten.div.Scalar(%i, 7)
  %dz : f32[3, 70] = aten.div.Scalar(%a, 0.0)
  %dn : f32[3, 70] = aten.div.Scalar(%i, 0)
  output %s
  output %si
  output %sf
  output %d
  output %di
  output %dz
  output %dn
})",
             kUlps, 11);
}

TEST(VulkanKernels, SubDivScalarF16) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  // sub rounds the scalar to f16 first (as add does); div keeps it in f32.
  checkGraph(R"(graph @t {
  input %a : f16[4, 33]
  %x : f16[4, 33] = aten.sub.Scalar(%a, 0.1, alpha=2)
  %y : f16[4, 33] = aten.div.Scalar(%x, 0.3)
  output %y
})",
             kHalfUlp, 13);
}

TEST(VulkanKernels, AliasSqueezeReshapeCopyToDtypeSymNumel) {
  GRAFT_REQUIRE_VULKAN();
  // The copying/aliasing spellings of the view ops, Tensor.to(dtype), and the
  // host-side sym_numel whose value an assertion checks: all on the device
  // (checkGraph allows no CPU fallback), bit-exact.
  checkGraph(R"(graph @t {
  input %a : f32[3, 1, 67]
  input %i : i64[1, 5, 1]
  %al : f32[3, 1, 67] = aten.alias.default(%a)
  %q : f32[3, 67] = aten.squeeze_copy.default(%al)
  %qd : f32[3, 67] = aten.squeeze_copy.dim(%a, -2)
  %qk : f32[3, 1, 67] = aten.squeeze_copy.dim(%a, 0)
  %qs : f32[3, 67] = aten.squeeze_copy.dims(%a, [0, 1])
  %qi : i64[5] = aten.squeeze_copy.default(%i)
  %r : f32[67, 3] = aten._reshape_copy.default(%q, [67, -1])
  %m : f32[67, 3] = aten.mul.Scalar(%r, 100.0)
  %ti : i32[67, 3] = aten.to.dtype(%m, i32)
  %tf : f32[5] = aten.to.dtype(%qi, f32)
  %ts : f32[3, 67] = aten.to.dtype(%qd, f32, false, true)
  %n : symint = aten.sym_numel.default(%r)
  aten.sym_constrain_range.default(%n, min=201, max=201)
  output %al
  output %qk
  output %qs
  output %ti
  output %tf
  output %ts
  output %n
})",
             kExact, 17);
}

//===-- Quantized linears -------------------------------------------------===//

struct LinearCase {
  int64_t M, K, N, groupSize;
};
const std::vector<LinearCase> kLinearShapes = {{1, 64, 96, 32},    {5, 128, 67, 64},
                                               {3, 32, 129, 32},   {8, 96, 64, 96},
                                               {1, 256, 200, 128}, {40, 64, 70, 32}};

std::string q4Params(const LinearCase &c, uint64_t seed) {
  int64_t G = c.K / c.groupSize, Npad = (c.N + 3) / 4 * 4;
  std::ostringstream g;
  g << "  param %w : u8[" << c.N << ", " << c.K / 2 << "] fqn=\"w\" = random(seed=" << seed
    << ", min=0, max=255)\n"
    << "  param %s : f32[" << G << ", " << Npad << "] fqn=\"s\" = random(seed=" << seed + 1
    << ", min=0.002, max=0.02)\n"
    << "  param %bias : f32[" << Npad << "] fqn=\"b\" = random(seed=" << seed + 2
    << ", min=-1, max=1)\n";
  return g.str();
}

// The bit-exact kernels (the `+exact` target profile): the reference's
// operations in its order. The default kernels are checked against their
// error bounds below (LinearQ4gswFastWithinBound and following).
TEST(VulkanKernels, LinearQ4gswExactProfile) {
  GRAFT_REQUIRE_VULKAN();
  ExactKernelsScope exact;
  for (const LinearCase &c : kLinearShapes) {
    std::ostringstream g;
    g << "graph @t {\n"
      << q4Params(c, 40) << "  input %x : f32[" << c.M << ", " << c.K << "]\n"
      << "  %o : f32[" << c.M << ", " << c.N << "] = et_vk.linear_q4gsw.default(%x, %w, %s, "
      << c.groupSize << ")\n"
      << "  %ob : f32[" << c.M << ", " << c.N << "] = et_vk.linear_q4gsw.default(%x, %w, %s, "
      << c.groupSize << ", %bias)\n  output %o\n  output %ob\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kExact, 41);
  }
}

TEST(VulkanKernels, LinearQ4gswHalfExactProfile) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  ExactKernelsScope exact;
  // f16 activations with f16 scales: the weight is rounded to f16 first,
  // the dot product accumulates in f32, the result is rounded once.
  checkGraph(R"(graph @t {
  param %w : u8[67, 64] fqn="w" = random(seed=5, min=0, max=255)
  param %s : f16[4, 68] fqn="s" = random(seed=6, min=0.002, max=0.02)
  input %x : f16[3, 128]
  %o : f16[3, 67] = et_vk.linear_q4gsw.default(%x, %w, %s, 32)
  output %o
})",
             kExact, 43);
}

TEST(VulkanKernels, LinearDq8caQ4gswExactProfile) {
  GRAFT_REQUIRE_VULKAN();
  ExactKernelsScope exact;
  for (const LinearCase &c : kLinearShapes) {
    // The reference computes what the kernel computes (per-token int8
    // quantization with the given qparams, integer group dot products
    // corrected by weight_sums, one f32 product and sum per group), in the
    // same order: bit-exact. The sums are random here, not the weight's: the
    // kernel must consume the ones it is given, as the reference does.
    std::ostringstream g;
    g << "graph @t {\n"
      << q4Params(c, 50) << "  param %sums : i32[" << c.K / c.groupSize << ", " << (c.N + 7) / 8 * 8
      << "] fqn=\"sums\" = random(seed=52, min=-200, max=200)\n"
      << "  input %x : f32[1, " << c.M << ", " << c.K << "]\n"
      << "  %xs : f32[1, " << c.M << "], %xz : i8[1, " << c.M
      << "] = torchao.choose_qparams_affine.default(%x, \"ASYMMETRIC\", [1, 1, " << c.K
      << "], i8, -128, 127, 1.1920928955078125e-07, f32, i8)\n"
      << "  %o : f32[1, " << c.M << ", " << c.N
      << "] = et_vk.linear_dq8ca_q4gsw.default(%x, %xs, %xz, %w, %sums, %s, " << c.groupSize
      << ", %bias)\n  output %o\n}\n";
    checkGraph(g.str(), kExact, 51);
  }
}

TEST(VulkanKernels, LinearDq8caQ4gswQuantizesAnF16InputInF16) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  // torchao's f16 chain (choose_qparams_affine with scale dtype None -> f16
  // scales) quantizes x in f16: 1 / s and x * (1 / s) rounded to f16
  // (QuantNumerics.LinearDq8caQ4gswQuantizesAnF16InputInF16). The device's
  // activation-quantize pass (quant_affine half x half, roundToHalf) must
  // give the same int8 values: bit-exact against the reference in the exact
  // profile (the fast kernels take x from the same pass, linearDq8caQ4gsw).
  // Quantizing in f32 instead changes several of these tokens' values (a
  // product within an f16 rounding of a half-integer) and fails; so does a
  // choose pass that divides max_pos - min_neg unrounded (f16 scales one ulp
  // off for 4 of 8 tokens of the [8, 96] case).
  ExactKernelsScope exact;
  for (const LinearCase &c : kLinearShapes) {
    int64_t G = c.K / c.groupSize, Npad = (c.N + 3) / 4 * 4;
    std::ostringstream g;
    g << "graph @t {\n"
      << "  param %w : u8[" << c.N << ", " << c.K / 2
      << "] fqn=\"w\" = random(seed=60, min=0, max=255)\n"
      << "  param %s : f16[" << G << ", " << Npad
      << "] fqn=\"s\" = random(seed=61, min=0.002, max=0.02)\n"
      << "  param %sums : i32[" << G << ", " << (c.N + 7) / 8 * 8
      << "] fqn=\"sums\" = random(seed=62, min=-200, max=200)\n"
      << "  input %x : f16[1, " << c.M << ", " << c.K << "]\n"
      << "  %xs : f16[1, " << c.M << "], %xz : i8[1, " << c.M
      << "] = torchao.choose_qparams_affine.default(%x, \"ASYMMETRIC\", [1, 1, " << c.K
      << "], i8, -128, 127, none, none, i8)\n"
      << "  %o : f16[1, " << c.M << ", " << c.N
      << "] = et_vk.linear_dq8ca_q4gsw.default(%x, %xs, %xz, %w, %sums, %s, " << c.groupSize
      << ")\n  output %o\n  output %xs\n  output %xz\n}\n";
    checkGraph(g.str(), kExact, 63);
  }
}

TEST(VulkanKernels, LinearDq8caQ8cswIsBitExact) {
  GRAFT_REQUIRE_VULKAN();
  // et_vk.linear_dq8ca_q8csw (linear_dq8ca_q8csw.glsl) on the per-token
  // qparams choose_qparams_affine gives: exact integer dot products with the
  // int8 weight, minus zp * weight_sums[n], times s_m * ws[n] in f32, + bias,
  // the interpreter's operations in its order, so bit-exact. The sums are
  // random, not the weight's: the kernel must consume the ones it is given.
  // Shapes: small; odd N (sums and bias padded to 4); rank 3 with bias; an
  // f16 activation with f16 scales; Llama-ish 1 x 2048 x 2048.
  struct Case {
    std::vector<int64_t> xSizes;
    int64_t N;
    bool bias;
    const char *dtype;
  };
  const Case cases[] = {{{2, 8}, 4, false, "f32"},
                        {{5, 64}, 7, true, "f32"},
                        {{2, 3, 96}, 12, true, "f32"},
                        {{3, 64}, 10, true, "f16"},
                        {{1, 2048}, 2048, false, "f32"}};
  for (const Case &c : cases) {
    if (std::string(c.dtype) == "f16" && !context()->info().storageBuffer16BitAccess)
      continue;
    int64_t K = c.xSizes.back(), Npad = (c.N + 3) / 4 * 4;
    std::string xs, tokens;
    for (std::size_t i = 0; i < c.xSizes.size(); ++i) {
      xs += (i ? ", " : "") + std::to_string(c.xSizes[i]);
      if (i + 1 < c.xSizes.size())
        tokens += (i ? ", " : "") + std::to_string(c.xSizes[i]);
    }
    std::string block = c.xSizes.size() == 3 ? "[1, 1, " : "[1, ";
    std::ostringstream g;
    g << "graph @t {\n"
      << "  param %w : i8[" << c.N << ", " << K
      << "] fqn=\"w\" = random(seed=70, min=-128, max=127)\n"
      << "  param %s : " << c.dtype << "[" << c.N
      << "] fqn=\"s\" = random(seed=71, min=0.0002, max=0.002)\n"
      << "  param %sums : i32[" << Npad << "] fqn=\"sums\" = random(seed=72, min=-3000, max=3000)\n"
      << "  param %bias : " << c.dtype << "[" << Npad
      << "] fqn=\"bias\" = random(seed=73, min=-1, max=1)\n"
      << "  input %x : " << c.dtype << "[" << xs << "]\n"
      << "  %xs : " << c.dtype << "[" << tokens << "], %xz : i8[" << tokens
      << "] = torchao.choose_qparams_affine.default(%x, \"ASYMMETRIC\", " << block << K
      << "], i8, -128, 127, none, none, i8)\n"
      << "  %o : " << c.dtype << "[" << tokens << ", " << c.N
      << "] = et_vk.linear_dq8ca_q8csw.default(%x, %xs, %xz, %w, %sums, %s"
      << (c.bias ? ", %bias" : "") << ")\n  output %o\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kExact, 74);
  }
}

TEST(VulkanKernels, LinearQcs4wAndInt8ExactProfile) {
  GRAFT_REQUIRE_VULKAN();
  ExactKernelsScope exact;
  checkGraph(R"(graph @t {
  param %w4 : u8[70, 48] fqn="w4" = random(seed=7, min=0, max=255)
  param %s4 : f32[72] fqn="s4" = random(seed=8, min=0.002, max=0.02)
  param %w8 : i8[70, 96] fqn="w8" = random(seed=9, min=-127, max=127)
  param %s8 : f32[70] fqn="s8" = random(seed=10, min=0.002, max=0.02)
  param %s8p : f32[72] fqn="s8p" = random(seed=10, min=0.002, max=0.02)
  param %sums : i32[72] fqn="sums" = full(0)
  param %bias : f32[72] fqn="bias" = random(seed=11, min=-1, max=1)
  input %x : f32[5, 96]
  input %xi : i8[2, 3, 96]
  %a : f32[5, 70] = et_vk.linear_qcs4w.default(%x, %w4, %s4)
  %b : f32[5, 70] = aten._weight_int8pack_mm.default(%x, %w8, %s8)
  %c : f32[2, 3, 70] = et_vk.linear_q8ta_q8csw.default(%xi, 0.05, 3, %w8, %sums, %s8p, %bias)
  output %a
  output %b
  output %c
})",
             kExact, 45);
}

TEST(VulkanKernels, Q8taLinearRequantizesExactly) {
  GRAFT_REQUIRE_VULKAN();
  // et_vk.q8ta_linear(_gemv) on linear_q8csw.glsl MODE q8ta_q8to: the int8
  // result is bit-exact against the interpreter. %a: rank 3, bias, relu, N
  // = 70 (scales padded to 72), outputs past [-128, 127] (saturation); %b:
  // the gemv form, one row, no bias; %c: x a constant 5 and scales 0.5, so
  // every sum is a multiple of 0.125 and many requantized values are exact
  // halves (round half to even decides them).
  checkGraph(R"(graph @t {
  param %w8 : i8[70, 96] fqn="w8" = random(seed=9, min=-127, max=127)
  param %s8p : f32[72] fqn="s8p" = random(seed=10, min=0.002, max=0.02)
  param %sums : i32[72] fqn="sums" = full(0)
  param %bias : f32[72] fqn="bias" = random(seed=11, min=-1, max=1)
  param %half : f32[72] fqn="half" = full(0.5)
  param %xc : i8[2, 96] fqn="xc" = full(5)
  input %xi : i8[2, 3, 96]
  input %x1 : i8[1, 96]
  %a : i8[2, 3, 70] = et_vk.q8ta_linear.default(%xi, 0.05, 3, %w8, %sums, %s8p, 0.02, -7, %bias, "relu")
  %b : i8[1, 70] = et_vk.q8ta_linear_gemv.default(%x1, 0.05, -2, %w8, %sums, %s8p, 0.1, 4)
  %c : i8[2, 70] = et_vk.q8ta_linear.default(%xc, 0.25, 3, %w8, %sums, %half, 2.0, 0, none, "none")
  output %a
  output %b
  output %c
})",
             kExact, 61);
}

//===-- Fast quantized linears: within their error bounds -----------------===//
// The default kernels (linear_q4gsw_fast.glsl) reorder the K reduction and
// contract to FMA. docs/numerics.md ("Fast kernels") derives their bound
// against the reference interpreter; these tests compute it per output
// element from the actual operands and check every element against it, on
// shapes that exercise partial row and column tiles, several groups per
// invocation and group sizes above 32.

/// A graph run on the device (default kernels) and the interpreter, with the
/// inputs and the graph kept for computing bounds.
struct BoundRun {
  std::unique_ptr<Graph> graph;
  std::vector<RuntimeValue> inputs, device, reference;
  const Tensor &constant(const std::string &name) const {
    return graph->inputFor(graph->findValue(name))->data();
  }
  const Tensor &out(std::size_t i) const { return std::get<Tensor>(device[i]); }
  const Tensor &ref(std::size_t i) const { return std::get<Tensor>(reference[i]); }
};

BoundRun runForBound(const std::string &gir, uint64_t seed) {
  BoundRun r;
  auto g = parseGraph(gir, "test.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  if (!g.ok())
    return r;
  r.graph = std::move(*g);
  auto inputs = makeRandomInputs(*r.graph, seed);
  EXPECT_TRUE(inputs.ok());
  r.inputs = std::move(*inputs);
  auto ref = Interpreter().run(*r.graph, r.inputs);
  EXPECT_TRUE(ref.ok()) << (ref.ok() ? "" : render(ref.diags()));
  auto dev = runOnDevice(*r.graph, r.inputs);
  EXPECT_TRUE(dev.ok()) << (dev.ok() ? "" : render(dev.diags()));
  if (ref.ok() && dev.ok()) {
    r.reference = std::move(*ref);
    r.device = std::move(*dev);
  }
  return r;
}

/// The int4 value of weight row n, column k of a packed [N, K/2] table.
int q4At(const Tensor &packed, int64_t n, int64_t k, bool lowNibbleFirst) {
  int64_t b = packed.getInt(n * packed.size(1) + k / 2) & 0xFF;
  bool low = (k % 2 == 0) == lowNibbleFirst;
  return int(low ? (b & 0xF) : (b >> 4)) - 8;
}

/// sum_k |x[m, k] * w[n, k]| per output (m, n), w = q * scale(g(k), n), in
/// double: the magnitude the bound scales with. With `nibbleOffset` 16, q + 16
/// replaces q: sum_k |x * scale| (stored nibble + 8), the magnitude of the
/// kernel that folds the -8 offset out of each block.
std::vector<double> q4AbsDot(const Tensor &x, const Tensor &packed, const Tensor &scales,
                             int64_t groupSize, int64_t scaleStride, bool lowNibbleFirst,
                             int nibbleOffset = 0) {
  int64_t K = x.sizes().back(), M = x.numel() / K, N = packed.size(0);
  std::vector<double> mag(static_cast<std::size_t>(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc +=
            std::abs(x.getDouble(m * K + k) * (q4At(packed, n, k, lowNibbleFirst) + nibbleOffset) *
                     scales.getDouble((k / groupSize) * scaleStride + n));
      mag[static_cast<std::size_t>(m * N + n)] = acc;
    }
  return mag;
}

/// Runs `body` with the fast linears' tiling forced to `tiling` ("cpu":
/// wide column tiles, no K split; "gpu": the GPU tilings this device
/// supports; "gpu_gemv": K split 16 ways with the shared-memory reduction;
/// "gpu_gemv_sg*": K split 32 ways with a subgroup reduction where the device
/// has 32-lane subgroups, else gpu_gemv; "gpu_gemv_splitk*": K split in
/// 32-value blocks over teams of 64, 256 or (n4, n8) 32 lanes, `_sg` with subgroupAdd,
/// which lavapipe's 8-lane subgroups run; "gpu_gemm_tiled": the GEMMs
/// through shared-memory tiles, weight-only), whatever the device is.
const char *const kLinearTilings[] = {"cpu",
                                      "gpu",
                                      "gpu_gemv",
                                      "gpu_gemv_sg",
                                      "gpu_gemv_sg_n4",
                                      "gpu_gemv_lanes",
                                      "gpu_gemv_lanes_sg",
                                      "gpu_gemv_splitk",
                                      "gpu_gemv_splitk_sg",
                                      "gpu_gemv_splitk_wg_sg",
                                      "gpu_gemv_splitk_n4_sg",
                                      "gpu_gemv_splitk_n8_sg",
                                      "gpu_gemm_tiled"};

/// GEMVs whose K is not a multiple of a split-K iteration (2 x 64 or
/// 2 x 256 blocks of 32): 4160 leaves lanes with one block or none in the
/// last iteration, 8256 gives the 256-lane team a second block on two lanes;
/// N is not a multiple of any tiling's column block.
const std::vector<LinearCase> kSplitKGemvShapes = {{1, 4160, 37, 64}, {1, 8256, 13, 32}};

/// Runs `body` with the environment variable `name` set to `value`
/// (restored afterwards).
template <class F> void withEnv(const char *name, const char *value, F body) {
  SCOPED_TRACE(std::string(name) + "=" + value);
  const char *old = std::getenv(name);
  std::string saved = old ? old : "";
  ::setenv(name, value, 1);
  body();
  if (old)
    ::setenv(name, saved.c_str(), 1);
  else
    ::unsetenv(name);
}

template <class F> void withLinearTiling(const char *tiling, F body) {
  withEnv("GRAFT_VK_LINEAR_TILING", tiling, body);
}

/// Whether the weight-only fast linear may run the CPU kernel that folds the
/// -8 offset out of each block (linear_q4gsw_fast.glsl, PAIRS): any tiling
/// but a forced GPU one.
bool mayFoldOffset() {
  const char *tiling = std::getenv("GRAFT_VK_LINEAR_TILING");
  return !tiling || !std::string_view(tiling).starts_with("gpu");
}

/// The weight-only fast linears' bound on |fast - reference| per output
/// (docs/numerics.md, "Fast kernels"): 2 gamma_{K+3} (sum_k |x w| + |bias|),
/// or where the kernel may fold the -8 offset, gamma_{K+5} (sum_k |x scale|
/// (q + 8) + sum_k |x w| + 2 |bias|), q the stored nibble.
std::vector<double> q4LinearBound(const Tensor &x, const Tensor &packed, const Tensor &scales,
                                  int64_t groupSize, int64_t scaleStride, bool lowNibbleFirst,
                                  const Tensor *bias) {
  int64_t K = x.sizes().back(), N = packed.size(0);
  std::vector<double> mag = q4AbsDot(x, packed, scales, groupSize, scaleStride, lowNibbleFirst);
  std::vector<double> folded;
  if (mayFoldOffset())
    folded = q4AbsDot(x, packed, scales, groupSize, scaleStride, lowNibbleFirst, 16);
  std::vector<double> bound;
  for (std::size_t i = 0; i < mag.size(); ++i) {
    double b = bias ? std::abs(bias->getDouble(int64_t(i) % N)) : 0.0;
    bound.push_back(folded.empty() ? 2 * gammaF32(K + 3) * (mag[i] + b)
                                   : gammaF32(K + 5) * (folded[i] + mag[i] + 2 * b));
  }
  return bound;
}

void checkLinearQ4gswFast() {
  std::vector<LinearCase> shapes = kLinearShapes;
  shapes.push_back({9, 512, 300, 32});  // two GEMM row tiles, many column tiles
  shapes.push_back({1, 1024, 520, 64}); // a GEMV with several tiles
  shapes.insert(shapes.end(), kSplitKGemvShapes.begin(), kSplitKGemvShapes.end());
  for (const LinearCase &c : shapes) {
    std::ostringstream g;
    g << "graph @t {\n"
      << q4Params(c, 40) << "  input %x : f32[" << c.M << ", " << c.K << "]\n"
      << "  %o : f32[" << c.M << ", " << c.N << "] = et_vk.linear_q4gsw.default(%x, %w, %s, "
      << c.groupSize << ")\n"
      << "  %ob : f32[" << c.M << ", " << c.N << "] = et_vk.linear_q4gsw.default(%x, %w, %s, "
      << c.groupSize << ", %bias)\n  output %o\n  output %ob\n}\n";
    SCOPED_TRACE(g.str());
    BoundRun r = runForBound(g.str(), 41);
    ASSERT_EQ(r.device.size(), 2u);
    const Tensor &x = std::get<Tensor>(r.inputs[0]), &s = r.constant("s"),
                 &bias = r.constant("bias");
    EXPECT_EQ(
        withinBound(r.out(0), r.ref(0),
                    q4LinearBound(x, r.constant("w"), s, c.groupSize, s.size(1), true, nullptr)),
        "");
    EXPECT_EQ(
        withinBound(r.out(1), r.ref(1),
                    q4LinearBound(x, r.constant("w"), s, c.groupSize, s.size(1), true, &bias)),
        "");
  }
}

TEST(VulkanKernels, LinearQ4gswFastWithinBound) {
  GRAFT_REQUIRE_VULKAN();
  for (const char *tiling : kLinearTilings)
    withLinearTiling(tiling, checkLinearQ4gswFast);
}

/// f16 x and scales, M rows: the reference rounds each dequantized weight to
/// f16 (relative 2^-11) before its f32 dot product, the fast kernel does not;
/// both round the result to f16 once.
void checkLinearQ4gswHalfFast(int M) {
  std::ostringstream g;
  g << "graph @t {\n"
    << "  param %w : u8[67, 64] fqn=\"w\" = random(seed=5, min=0, max=255)\n"
    << "  param %s : f16[4, 68] fqn=\"s\" = random(seed=6, min=0.002, max=0.02)\n"
    << "  input %x : f16[" << M << ", 128]\n"
    << "  %o : f16[" << M << ", 67] = et_vk.linear_q4gsw.default(%x, %w, %s, 32)\n"
    << "  output %o\n}\n";
  SCOPED_TRACE(g.str());
  BoundRun r = runForBound(g.str(), 43);
  ASSERT_EQ(r.device.size(), 1u);
  const Tensor &x = std::get<Tensor>(r.inputs[0]);
  std::vector<double> mag = q4AbsDot(x, r.constant("w"), r.constant("s"), 32, 68, true);
  std::vector<double> bound =
      q4LinearBound(x, r.constant("w"), r.constant("s"), 32, 68, true, nullptr);
  const double u16 = std::ldexp(1.0, -11);
  for (std::size_t i = 0; i < mag.size(); ++i)
    bound[i] +=
        u16 * mag[i] + 2 * u16 * std::abs(r.ref(0).getDouble(int64_t(i))) + std::ldexp(1.0, -24);
  EXPECT_EQ(withinBound(r.out(0), r.ref(0), bound), "");
}

TEST(VulkanKernels, LinearQ4gswHalfFastWithinBound) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  checkLinearQ4gswHalfFast(9);
  for (const char *tiling : kLinearTilings) // the GEMV tilings' half variants
    withLinearTiling(tiling, [] { checkLinearQ4gswHalfFast(1); });
}

/// linear_qcs4w with M rows: one group spanning K, high nibble first.
void checkLinearQcs4wFast(int M) {
  std::ostringstream g;
  g << "graph @t {\n"
    << "  param %w4 : u8[70, 48] fqn=\"w4\" = random(seed=7, min=0, max=255)\n"
    << "  param %s4 : f32[72] fqn=\"s4\" = random(seed=8, min=0.002, max=0.02)\n"
    << "  input %x : f32[" << M << ", 96]\n"
    << "  %a : f32[" << M << ", 70] = et_vk.linear_qcs4w.default(%x, %w4, %s4)\n"
    << "  output %a\n}\n";
  SCOPED_TRACE(g.str());
  BoundRun r = runForBound(g.str(), 45);
  ASSERT_EQ(r.device.size(), 1u);
  EXPECT_EQ(withinBound(r.out(0), r.ref(0),
                        q4LinearBound(std::get<Tensor>(r.inputs[0]), r.constant("w4"),
                                      r.constant("s4"), 96, 0, false, nullptr)),
            "");
}

TEST(VulkanKernels, LinearQcs4wFastWithinBound) {
  GRAFT_REQUIRE_VULKAN();
  checkLinearQcs4wFast(5);
  for (const char *tiling : kLinearTilings) // the GEMV tilings, scale stride 0
    withLinearTiling(tiling, [] { checkLinearQcs4wFast(1); });
}

/// Shapes for the dq8ca CPU kernel's paths (linear_q4gsw_fast.glsl, PAIRS):
/// groups of 3 blocks, so a group ends inside a pair of blocks and a pair
/// spans two groups (GEMV, and GEMM with a partial second row tile); an odd
/// number of blocks (single blocks only) with scale and weight-sum rows that
/// are not 32-byte aligned (stride 68) and a partial last column tile.
const std::vector<LinearCase> kDq8caPairsShapes = {
    {1, 192, 45, 96}, {10, 192, 45, 96}, {1, 96, 67, 32}};

/// A dq8ca linear of shape `c` on choose_qparams_affine's per-token qparams,
/// with random weight sums [G, N padded to 4] (ET-VK pads N to 4; a stride
/// that is not a multiple of 8 leaves odd groups' rows unaligned for 32-byte
/// loads). Outputs: the result, the input scales, the zero points.
std::string dq8caGraph(const LinearCase &c) {
  int64_t G = c.K / c.groupSize, sumsStride = (c.N + 3) / 4 * 4;
  std::ostringstream g;
  g << "graph @t {\n"
    << q4Params(c, 50) << "  param %sums : i32[" << G << ", " << sumsStride
    << "] fqn=\"sums\" = random(seed=52, min=-200, max=200)\n"
    << "  input %x : f32[1, " << c.M << ", " << c.K << "]\n"
    << "  %xs : f32[1, " << c.M << "], %xz : i8[1, " << c.M
    << "] = torchao.choose_qparams_affine.default(%x, \"ASYMMETRIC\", [1, 1, " << c.K
    << "], i8, -128, 127, 1.1920928955078125e-07, f32, i8)\n"
    << "  %o : f32[1, " << c.M << ", " << c.N
    << "] = et_vk.linear_dq8ca_q4gsw.default(%x, %xs, %xz, %w, %sums, %s, " << c.groupSize
    << ", %bias)\n  output %o\n  output %xs\n  output %xz\n}\n";
  return g.str();
}

/// `perBlock`: the kernel sums one f32 term per 32-value block rather than
/// per group (the split-K tilings; docs/numerics.md).
void checkLinearDq8caQ4gswFast(bool perBlock) {
  std::vector<LinearCase> shapes = kLinearShapes;
  shapes.push_back({9, 512, 300, 32});
  shapes.insert(shapes.end(), kSplitKGemvShapes.begin(), kSplitKGemvShapes.end());
  shapes.insert(shapes.end(), kDq8caPairsShapes.begin(), kDq8caPairsShapes.end());
  for (const LinearCase &c : shapes) {
    const std::string g = dq8caGraph(c);
    SCOPED_TRACE(g);
    BoundRun r = runForBound(g, 51);
    ASSERT_EQ(r.device.size(), 3u);
    // The integer group dot products are exact in both; what differs is the
    // f32 accumulation of G per-group terms float(idot) * (s_m * scale):
    // |fast - reference| <= 2 gamma_{G+3} (sum_g |idot_g * s_m * scale| + |bias|).
    // Per block: U = K / 32 terms, the group's zero-point correction in its
    // first block's idot, 2 gamma_{U+3} (sum_b |idot_b * s_m * scale| + |bias|).
    // The terms' magnitudes, from the reference's own qparams (outputs 1, 2).
    const Tensor &x = std::get<Tensor>(r.inputs[0]);
    const Tensor &xs = r.ref(1), &xz = r.ref(2);
    const Tensor &w = r.constant("w"), &s = r.constant("s"), &sums = r.constant("sums"),
                 &bias = r.constant("bias");
    const int64_t unit = perBlock ? 32 : c.groupSize, U = c.K / unit, sumsStride = sums.size(1);
    std::vector<double> bound;
    for (int64_t m = 0; m < c.M; ++m) {
      float sm = static_cast<float>(xs.getDouble(m));
      float inv = 1.0f / sm;
      int64_t zp = xz.getInt(m);
      for (int64_t n = 0; n < c.N; ++n) {
        double mag = 0;
        for (int64_t u = 0; u < U; ++u) {
          int64_t idot = 0, gi = u * unit / c.groupSize;
          for (int64_t k = u * unit; k < (u + 1) * unit; ++k) {
            float v = static_cast<float>(x.getDouble(m * c.K + k)) * inv;
            int64_t xq = std::clamp<int64_t>(int64_t(std::nearbyint(v)) + zp, -128, 127);
            idot += xq * q4At(w, n, k, true);
          }
          if (u * unit % c.groupSize == 0)
            idot -= zp * sums.getInt(gi * sumsStride + n);
          mag += std::abs(double(idot) * sm * s.getDouble(gi * s.size(1) + n));
        }
        bound.push_back(2 * gammaF32(U + 3) * (mag + std::abs(bias.getDouble(n))));
      }
    }
    EXPECT_EQ(withinBound(r.out(0), r.ref(0), bound), "");
  }
}

TEST(VulkanKernels, LinearDq8caQ4gswFastWithinBound) {
  GRAFT_REQUIRE_VULKAN();
  for (const char *tiling : kLinearTilings) {
    bool perBlock = std::string_view(tiling).starts_with("gpu_gemv_splitk");
    withLinearTiling(tiling, [=] { checkLinearDq8caQ4gswFast(perBlock); });
  }
}

TEST(VulkanKernels, LinearDq8caQ4gswCpuKernelsAgreeBitForBit) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().shaderInt64)
    GTEST_SKIP() << "device lacks shaderInt64 (no PAIRS kernel)";
  // The CPU kernels with 32-byte loads (PAIRS: GEMV and 8 x 16 GEMM tiles)
  // compute each block's integer dot product in f32 on nibbles masked in
  // place, the others (no wide loads: GEMV and 4 x 16 tiles) in int32 on
  // shifted nibbles; both then apply the same per-group correction and
  // scale in the same order. The f32 dot products are exact
  // (docs/numerics.md), so the two results must be the same bits.
  std::vector<LinearCase> shapes = kLinearShapes;
  shapes.push_back({9, 512, 300, 32});
  shapes.insert(shapes.end(), kDq8caPairsShapes.begin(), kDq8caPairsShapes.end());
  shapes.insert(shapes.end(), kSplitKGemvShapes.begin(), kSplitKGemvShapes.end());
  for (const LinearCase &c : shapes) {
    const std::string gir = dq8caGraph(c);
    SCOPED_TRACE(gir);
    auto g = parseGraph(gir, "test.gir");
    ASSERT_TRUE(g.ok()) << render(g.diags());
    auto inputs = makeRandomInputs(**g, 51);
    ASSERT_TRUE(inputs.ok());
    std::optional<Tensor> pairs, ints;
    withLinearTiling("cpu", [&] {
      auto r = runOnDevice(**g, *inputs);
      ASSERT_TRUE(r.ok()) << render(r.diags());
      pairs = std::get<Tensor>((*r)[0]);
      withEnv("GRAFT_VK_NO_WIDE_LOADS", "1", [&] {
        auto q = runOnDevice(**g, *inputs);
        ASSERT_TRUE(q.ok()) << render(q.diags());
        ints = std::get<Tensor>((*q)[0]);
      });
    });
    ASSERT_TRUE(pairs && ints);
    ASSERT_EQ(pairs->numel(), ints->numel());
    for (int64_t i = 0; i < pairs->numel(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(float(pairs->getDouble(i))),
                std::bit_cast<uint32_t>(float(ints->getDouble(i))))
          << "output " << i << ": " << pairs->getDouble(i) << " vs " << ints->getDouble(i);
  }
}

// The dq8ca GEMVs quantize x themselves as they load it (FUSED_QUANT, with
// quant_affine.glsl's arithmetic in quantize_value.glslh); the GEMMs read the
// int8 values a quantize_affine dispatch wrote. On the CPU tilings both then
// compute each group's exact integer dot product and apply the same
// per-group correction and scale in the same order, so a row through the
// GEMV and the same row through the GEMM must be the same bits: any
// difference in a quantized value would show. f32 activations with f32
// scales, and f16 ones with f16 scales (the reciprocal and the product
// rounded to f16, as torchao's f16 chain does).
TEST(VulkanKernels, Dq8caGemvQuantizesLikeTheQuantizeKernel) {
  GRAFT_REQUIRE_VULKAN();
  for (const char *dt : {"f32", "f16"}) {
    if (std::string(dt) == "f16" && !context()->info().storageBuffer16BitAccess)
      continue;
    for (const LinearCase &c : {LinearCase{1, 192, 45, 96}, LinearCase{1, 256, 70, 32}}) {
      int64_t G = c.K / c.groupSize, sumsStride = (c.N + 3) / 4 * 4;
      std::ostringstream g;
      g << "graph @t {\n"
        << "  param %w : u8[" << c.N << ", " << c.K / 2
        << "] fqn=\"w\" = random(seed=60, min=0, max=255)\n"
        << "  param %s : " << dt << "[" << G << ", " << sumsStride
        << "] fqn=\"s\" = random(seed=61, min=0.002, max=0.02)\n"
        << "  param %sums : i32[" << G << ", " << sumsStride
        << "] fqn=\"sums\" = random(seed=62, min=-200, max=200)\n"
        << "  input %x : " << dt << "[1, 1, " << c.K << "]\n"
        << "  %x2 : " << dt << "[1, 2, " << c.K << "] = aten.cat.default([%x, %x], 1)\n"
        << "  %xs : " << dt << "[1, 1], %xz : i8[1, 1] = torchao.choose_qparams_affine.default(%x, "
        << "\"ASYMMETRIC\", [1, 1, " << c.K << "], i8, -128, 127, 1.1920928955078125e-07, " << dt
        << ", i8)\n"
        << "  %xs2 : " << dt << "[1, 2], %xz2 : i8[1, 2] = torchao.choose_qparams_affine.default("
        << "%x2, \"ASYMMETRIC\", [1, 1, " << c.K << "], i8, -128, 127, 1.1920928955078125e-07, "
        << dt << ", i8)\n"
        << "  %gemv : " << dt << "[1, 1, " << c.N
        << "] = et_vk.linear_dq8ca_q4gsw.default(%x, %xs, %xz, %w, %sums, %s, " << c.groupSize
        << ")\n"
        << "  %gemm : " << dt << "[1, 2, " << c.N
        << "] = et_vk.linear_dq8ca_q4gsw.default(%x2, %xs2, %xz2, %w, %sums, %s, " << c.groupSize
        << ")\n"
        << "  output %gemv\n  output %gemm\n}\n";
      SCOPED_TRACE(g.str());
      auto graph = parseGraph(g.str(), "test.gir");
      ASSERT_TRUE(graph.ok()) << render(graph.diags());
      auto inputs = makeRandomInputs(**graph, 63);
      ASSERT_TRUE(inputs.ok()) << render(inputs.diags());
      for (bool wide : {true, false}) {
        SCOPED_TRACE(wide ? "64-bit loads" : "no 64-bit loads");
        std::optional<std::vector<RuntimeValue>> out;
        auto run = [&] {
          auto r = runOnDevice(**graph, *inputs);
          ASSERT_TRUE(r.ok()) << render(r.diags());
          out = std::move(*r);
        };
        withLinearTiling("cpu", [&] {
          if (wide)
            run();
          else
            withEnv("GRAFT_VK_NO_WIDE_LOADS", "1", run);
        });
        ASSERT_TRUE(out);
        const Tensor &gemv = std::get<Tensor>((*out)[0]), &gemm = std::get<Tensor>((*out)[1]);
        for (int64_t n = 0; n < c.N; ++n)
          ASSERT_EQ(gemv.getDouble(n), gemm.getDouble(n)) << "column " << n;
        for (int64_t n = 0; n < c.N; ++n)
          ASSERT_EQ(gemm.getDouble(n), gemm.getDouble(c.N + n)) << "column " << n;
      }
    }
  }
}

TEST(VulkanKernels, LinearQ8taFloatInput) {
  GRAFT_REQUIRE_VULKAN();
  // A float x is quantized per tensor on the device; the op's reference
  // ignores that, so the error is the activation quantization error:
  // <= K * (input_scale / 2) * max|w|.
  std::string g = R"(graph @t {
  param %w8 : i8[33, 64] fqn="w8" = random(seed=9, min=-127, max=127)
  param %s8 : f32[36] fqn="s8" = random(seed=10, min=0.002, max=0.02)
  param %sums : i32[36] fqn="sums" = full(0)
  input %x : f32[4, 64]
  %c : f32[4, 33] = et_vk.linear_q8ta_q8csw.default(%x, 0.01, 0, %w8, %sums, %s8)
  output %c
})";
  checkGraph(g, {64 * 0.005 * 127 * 0.02, 0}, 47);
}

//===-- Embeddings and RoPE ------------------------------------------------===//

/// A [V, D] int4 table gathered by 15 indices, group size gs, scales (and
/// result) of dtype `dt`, either nibble order.
std::string embeddingQ4gswGraph(int V, int D, int gs, const char *dt, const char *lw) {
  std::ostringstream g;
  g << "graph @t {\n  param %w : u8[" << V << ", " << D / 2
    << "] fqn=\"w\" = random(seed=12, min=0, max=255)\n  param %s : " << dt << "[" << V << ", "
    << D / gs << "] fqn=\"s\" = random(seed=13, min=0.005, max=0.05)\n"
    << "  input %idx : i64[3, 5]\n  %o : " << dt << "[3, 5, " << D
    << "] = et_vk.embedding_q4gsw.default(%w, %s, " << gs << ", %idx, " << lw
    << ")\n  output %o\n}\n";
  return g.str();
}

// Every path of embeddingQ4gsw, bit-exact: the 64-value wide gather (f32 on
// CPU drivers; D % 64 == 0) with two groups per invocation (gs 32), one
// group (gs 64, 128) and 3 invocations per row (D 192: the division instead
// of the shift), the 32-value vec4 gather (D 96, and every f16 case), and
// the per-element kernel (gs 16).
TEST(VulkanKernels, EmbeddingQ4gswBothLayouts) {
  GRAFT_REQUIRE_VULKAN();
  for (const char *lw : {"true", "false"})
    for (auto [V, D, gs, dt] :
         std::vector<std::tuple<int, int, int, const char *>>{{96, 64, 32, "f32"},
                                                              {37, 128, 128, "f32"},
                                                              {50, 96, 32, "f32"},
                                                              {200, 256, 64, "f32"},
                                                              {40, 192, 64, "f32"},
                                                              {30, 128, 32, "f16"},
                                                              {30, 96, 32, "f16"},
                                                              {30, 64, 16, "f32"}}) {
      std::string g = embeddingQ4gswGraph(V, D, gs, dt, lw);
      SCOPED_TRACE(g);
      checkGraph(g, kExact, 53);
    }
}

// An index outside the table is a user error on every path (the wide,
// vec4 and per-element gathers write zeros and flag the status buffer).
TEST(VulkanKernels, EmbeddingQ4gswOutOfRangeIndex) {
  GRAFT_REQUIRE_VULKAN();
  for (auto [D, gs] : std::vector<std::pair<int, int>>{{128, 32}, {96, 32}, {64, 16}}) {
    auto graph = parseGraph(embeddingQ4gswGraph(20, D, gs, "f32", "true"), "t.gir");
    ASSERT_TRUE(graph.ok());
    auto exec = vk::GraphExecutor::create(*context(), **graph);
    ASSERT_TRUE(exec.ok());
    for (int64_t bad : {int64_t(20), int64_t(-1)}) {
      std::vector<int64_t> idx(15, 3);
      idx[7] = bad;
      auto out = (*exec)->run({Tensor::fromInts(DType::I64, {3, 5}, idx)});
      ASSERT_FALSE(out.ok()) << "D " << D << " index " << bad;
      EXPECT_NE(out.diags()[0].message.find("out of range"), std::string::npos)
          << out.diags()[0].message;
    }
  }
}

// On CPU devices with texel buffers the wide q4 gather reads its packed
// table, indices and scales as rgba32ui texels (embedding_q4gsw_fastt,
// Embedding.cpp texelReads); on a device whose maxTexelBufferElements they
// exceed, as storage-buffer words (fastw). Same bits, same arithmetic: equal
// outputs, bit for bit, in both nibble orders (tied-embedding linear weight
// and embedding_4bit's), with two groups per invocation (gs 32), one (gs
// 64), three invocations per row (D 192: the division), a per-row scale
// ([V], group = D) and Llama-sized rows (D 2048, 4096).
TEST(VulkanKernels, EmbeddingQ4gswTexelTableMatchesStorageBufferKernelBitForBit) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  if (const std::string why = texelFormsUnavailable(ctx.info()); !why.empty())
    GTEST_SKIP() << why;
  struct Case {
    int64_t V, D, gs, T;
    bool perRow;
  };
  for (Case c : std::vector<Case>{{96, 64, 32, 15, false},
                                  {200, 256, 64, 33, false},
                                  {40, 192, 64, 7, false},
                                  {50, 128, 128, 9, true},
                                  {300, 2048, 32, 64, false},
                                  {100, 4096, 32, 17, false}})
    for (bool linearWeight : {true, false}) {
      SCOPED_TRACE("V " + std::to_string(c.V) + " D " + std::to_string(c.D) + " gs " +
                   std::to_string(c.gs) + (linearWeight ? " linear weight" : " embedding_4bit"));
      std::vector<int64_t> bytes(static_cast<std::size_t>(c.V * c.D / 2)), idx;
      for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = int64_t((i * 2654435761u) >> 11 & 0xFF);
      for (int64_t t = 0; t < c.T; ++t)
        idx.push_back((t * 7919 + 3) % c.V);
      const std::vector<int64_t> scaleSizes =
          c.perRow ? std::vector<int64_t>{c.V} : std::vector<int64_t>{c.V, c.D / c.gs};
      std::vector<double> sv(static_cast<std::size_t>(c.perRow ? c.V : c.V * (c.D / c.gs)));
      for (std::size_t i = 0; i < sv.size(); ++i)
        sv[i] = 0.002 + 0.0001 * double(i % 157);
      const Tensor table = Tensor::fromInts(DType::U8, {c.V, c.D / 2}, bytes);
      const Tensor scales = Tensor::fromDoubles(DType::F32, scaleSizes, sv);
      const Tensor indices = Tensor::fromInts(DType::I64, {c.T}, idx);
      DispatchedOutputs runs[2];
      runTexelAndCapped(
          ctx,
          [&](vk::Context &k, std::vector<vk::DeviceTensor> &results) {
            auto w = vk::uploadRawBytes(k, table);
            auto s = vk::uploadTensor(k, scales);
            auto i = vk::uploadTensor(k, indices);
            ASSERT_TRUE(w.ok() && s.ok() && i.ok());
            auto r = vk::embeddingQ4gsw(k, *w, *s, c.perRow ? c.D : c.gs, *i, linearWeight);
            ASSERT_TRUE(r.ok()) << render(r.diags());
            results.push_back(std::move(*r));
          },
          runs);
      const std::string suffix = linearWeight ? "_linear_weight_float" : "_float";
      EXPECT_EQ(runs[0].variants, std::vector<std::string>{"embedding_q4gsw_fastt" + suffix});
      EXPECT_EQ(runs[1].variants, std::vector<std::string>{"embedding_q4gsw_fastw" + suffix});
      expectSameBits(runs);
    }
}

// quantized_decomposed.embedding_byte (ExecuTorch's -E 8,G) against the
// reference kernel, bit-exact: int8 and uint8 tables, per-row scales [V]
// (group = D) and grouped ones [V, NG], zero points absent or given
// (fractional, in the scales' dtype, so q - zp rounds for f16), f32 and f16
// scales, .default (the scales' dtype) and .dtype (f32 from f16 scales, f16
// from f32 ones).
TEST(VulkanKernels, EmbeddingByte) {
  GRAFT_REQUIRE_VULKAN();
  struct Case {
    const char *wdt, *sdt, *out;
    int V, D, groups; // groups 0: 1-D scales [V]
    bool zp, dtypeOverload;
  };
  for (Case c : {Case{"i8", "f32", "f32", 40, 64, 2, false, true},
                 Case{"i8", "f32", "f32", 37, 48, 0, false, false},
                 Case{"u8", "f32", "f32", 50, 96, 3, true, true},
                 Case{"i8", "f16", "f16", 41, 64, 4, true, false},
                 Case{"u8", "f16", "f32", 38, 40, 0, true, true},
                 Case{"i8", "f32", "f16", 45, 32, 1, true, true}}) {
    const bool isU8 = std::string_view(c.wdt) == "u8";
    std::string sShape =
        std::to_string(c.V) + (c.groups ? ", " + std::to_string(c.groups) : std::string());
    std::ostringstream g;
    g << "graph @t {\n  param %w : " << c.wdt << "[" << c.V << ", " << c.D
      << "] fqn=\"w\" = random(seed=61, min=" << (isU8 ? 0 : -128) << ", max=" << (isU8 ? 255 : 127)
      << ")\n  param %s : " << c.sdt << "[" << sShape
      << "] fqn=\"s\" = random(seed=62, min=0.001, max=0.05)\n";
    if (c.zp)
      g << "  param %z : " << c.sdt << "[" << sShape
        << "] fqn=\"z\" = random(seed=63, min=-3.7, max=9.3)\n";
    g << "  input %idx : i64[3, 5]\n  %o : " << c.out << "[3, 5, " << c.D
      << "] = quantized_decomposed.embedding_byte." << (c.dtypeOverload ? "dtype" : "default")
      << "(%w, %s, " << (c.zp ? "%z" : "none") << ", " << (isU8 ? 0 : -128) << ", "
      << (isU8 ? 255 : 127) << ", %idx" << (c.dtypeOverload ? std::string(", dtype=") + c.out : "")
      << ")\n  output %o\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kExact, 59);
  }
}

// What the kernel does not reproduce stays on the CPU with a reason: bf16
// scales (no device bf16), and a group of one value, which the reference
// itself rejects (its diagnostic is the user's). Outside a compiled plan the
// executor reports such a node as a CPU fallback.
TEST(VulkanKernels, EmbeddingByteUnsupportedStaysOnCpu) {
  GRAFT_REQUIRE_VULKAN();
  for (const char *scales : {"bf16[40]", "f32[40, 32]"}) {
    std::string g = std::string(R"(graph @t {
  param %w : i8[40, 32] fqn="w" = random(seed=61, min=-128, max=127)
  param %s : )") + scales +
                    R"( fqn="s" = random(seed=62, min=0.001, max=0.05)
  input %idx : i64[4]
  %o : f32[4, 32] = quantized_decomposed.embedding_byte.dtype(%w, %s, none, -128, 127, %idx, dtype=f32)
  output %o
})";
    SCOPED_TRACE(g);
    auto graph = parseGraph(g, "t.gir");
    ASSERT_TRUE(graph.ok()) << render(graph.diags());
    vk::ExecutorOptions opts;
    opts.allowCpuFallback = true;
    auto exec = vk::GraphExecutor::create(*context(), **graph, opts);
    ASSERT_TRUE(exec.ok()) << render(exec.diags());
    bool found = false;
    for (const vk::NodePlan &p : (*exec)->plan())
      if (p.node->target() == "quantized_decomposed.embedding_byte.dtype") {
        found = true;
        EXPECT_EQ(p.placement, vk::Placement::CpuFallback);
        EXPECT_FALSE(p.reason.empty());
      }
    EXPECT_TRUE(found);
  }
}

TEST(VulkanKernels, EmbeddingFloatAndOutOfRangeIndex) {
  GRAFT_REQUIRE_VULKAN();
  std::string g = R"(graph @t {
  param %w : f32[70, 33] fqn="w" = random(seed=14, min=-1, max=1)
  input %idx : i64[2, 9]
  %o : f32[2, 9, 33] = aten.embedding.default(%w, %idx)
  output %o
})";
  checkGraph(g, kExact, 55);
  // An index outside the table is a user error, not garbage or a crash.
  auto graph = parseGraph(g, "t.gir");
  ASSERT_TRUE(graph.ok());
  auto exec = vk::GraphExecutor::create(*context(), **graph);
  ASSERT_TRUE(exec.ok());
  Tensor idx =
      Tensor::fromInts(DType::I64, {2, 9}, {0, 1, 2, 3, 4, 5, 6, 7, 70, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  auto out = (*exec)->run({idx});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.diags()[0].message.find("out of range"), std::string::npos)
      << out.diags()[0].message;
}

TEST(VulkanKernels, ApplyRotaryEmb) {
  GRAFT_REQUIRE_VULKAN();
  for (auto [S, H, Hk, D] :
       std::vector<std::tuple<int, int, int, int>>{{1, 4, 2, 32}, {7, 3, 3, 64}, {5, 2, 1, 34}}) {
    std::ostringstream g;
    g << "graph @t {\n  input %q : f32[1, " << S << ", " << H << ", " << D << "]\n"
      << "  input %k : f32[1, " << S << ", " << Hk << ", " << D << "]\n"
      << "  input %c : f32[" << S << ", " << D / 2 << "]\n  input %s : f32[" << S << ", " << D / 2
      << "]\n  %qo : f32[1, " << S << ", " << H << ", " << D << "], %ko : f32[1, " << S << ", "
      << Hk << ", " << D
      << "] = et_vk.apply_rotary_emb.default(%q, %k, %c, %s)\n  output %qo\n  output %ko\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kExact, 57);
  }
}

// et_vk.apply_rotary_emb_hf against the reference kernel: full rotation,
// partial rotation (the pass-through tail), f16 activations, a start row
// other than 0; bit-exact. Too few table rows is a diagnostic.
TEST(VulkanKernels, ApplyRotaryEmbHf) {
  GRAFT_REQUIRE_VULKAN();
  struct Case {
    int S, H, Hk, D, R, M, start;
    const char *dt;
  };
  for (Case c : {Case{1, 4, 2, 32, 32, 8, 5, "f32"}, Case{3, 2, 2, 24, 8, 6, 3, "f32"},
                 Case{5, 3, 1, 16, 8, 5, 0, "f16"}, Case{2, 2, 1, 20, 16, 9, 4, "f32"}}) {
    std::ostringstream g;
    auto x = [&](int h) {
      std::ostringstream t;
      t << c.dt << "[1, " << c.S << ", " << h << ", " << c.D << "]";
      return t.str();
    };
    g << "graph @t {\n  input %q : " << x(c.H) << "\n  input %k : " << x(c.Hk)
      << "\n  input %c : f32[" << c.M << ", " << c.R << "]\n  input %s : f32[" << c.M << ", " << c.R
      << "]\n  %qo : " << x(c.H) << ", %ko : " << x(c.Hk)
      << " = et_vk.apply_rotary_emb_hf.default(%q, %k, %c, %s, " << c.start
      << ")\n  output %qo\n  output %ko\n}\n";
    SCOPED_TRACE(g.str());
    checkGraph(g.str(), kExact, 58);
  }
  // Rows [4, 6) of a 5-row table: one row for two positions.
  auto graph = parseGraph(R"(graph @t {
  input %q : f32[1, 2, 1, 8]
  input %c : f32[5, 8]
  %qo : f32[1, 2, 1, 8], %ko : f32[1, 2, 1, 8] = et_vk.apply_rotary_emb_hf.default(%q, %q, %c, %c, 4)
  output %qo
})",
                          "t.gir");
  ASSERT_TRUE(graph.ok()) << render(graph.diags());
  auto exec = vk::GraphExecutor::create(*context(), **graph);
  ASSERT_TRUE(exec.ok()) << render(exec.diags());
  Tensor q = Tensor::empty(DType::F32, {1, 2, 1, 8});
  Tensor c = Tensor::empty(DType::F32, {5, 8});
  auto out = (*exec)->run({q, c});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.diags()[0].message.find("freqs rows [4, 6)"), std::string::npos)
      << out.diags()[0].message;
}

//===-- torchao affine quantization and attention ---------------------------===//

void checkTorchaoAffineQuant() {
  checkGraph(R"(graph @t {
  param %w : i8[70, 64] fqn="w" = random(seed=15, min=-8, max=7)
  param %ws : f32[70, 2] fqn="ws" = random(seed=16, min=0.005, max=0.02)
  input %x : f32[1, 5, 64]
  %s : f32[1, 5], %z : i8[1, 5] = torchao.choose_qparams_affine.default(%x, "ASYMMETRIC", [1, 1, 64], i8, -128, 127, 1.1920928955078125e-07, f32, i8)
  %q : i8[1, 5, 64] = torchao.quantize_affine.default(%x, [1, 1, 64], %s, %z, i8, -128, 127)
  %d : f32[1, 5, 64] = torchao.dequantize_affine.default(%q, [1, 1, 64], %s, %z, i8, -128, 127, output_dtype=f32)
  %wd : f32[70, 64] = torchao.dequantize_affine.default(%w, [1, 32], %ws, none, i8, -8, 7, output_dtype=f32)
  %ss : f32[1, 5], %sz : i8[1, 5] = torchao.choose_qparams_affine.default(%x, "SYMMETRIC", [1, 1, 64], i8, -128, 127, 1.1920928955078125e-07, f32, i8)
  output %d
  output %wd
  output %ss
  output %sz
  output %z
})",
             kExact, 59);
}

TEST(VulkanKernels, TorchaoAffineQuant) {
  GRAFT_REQUIRE_VULKAN();
  // "gpu": choose_qparams_affine's cooperative variant, exact like the
  // per-group loop (min and max are order-free).
  for (const char *kernels : {"cpu", "gpu"})
    withEnv("GRAFT_VK_KERNELS", kernels, [] { checkTorchaoAffineQuant(); });
}

// PT2E's dynamic per-tensor activation on the device: quant_f64_legalize.pat's
// pt2e_choose_qparams_tensor(_3d) write quantized_decomposed.choose_qparams.tensor as
// choose_qparams_affine over block [-1, -1, -1] (the whole tensor, whatever s0 is at run
// time) with an f32 scale. Its kernel (one group: one workgroup, or with
// GRAFT_VK_KERNELS=cpu one invocation) must give the reference choose_qparams.tensor's
// numbers bit for bit: the f64 scale is the device's f32 scale widened, the i64 zero point
// the device's. Hand-picked inputs: zero points at ties (min / scale = -10.5 and -11.5,
// round half to even: -10 and -12), all zeros and -0.0 (scale = eps), negative only
// (max(max, 0) = 0), positive only (zero point qmin), a range below eps; then random values
// at run-time sizes of 1, 7 and 300 rows of 64, and 1031 and 2048 rows with the extreme last:
// over 32768 values a group is reduced in chunks first (minmax_affine; lavapipe ends an
// invocation's loops after 65535 iterations, so one pass read only the first 65536 values).
TEST(VulkanKernels, ChooseQParamsWholeTensorMatchesPt2eChooseQParams) {
  GRAFT_REQUIRE_VULKAN();
  struct Range {
    int64_t qmin, qmax;
    const char *dt;
  };
  std::string dev = "graph @dev {\n  sym s0 : [1, 4096]\n  input %x : f32[1, s0, 64]\n";
  std::string ref = "graph @ref {\n  sym s0 : [1, 4096]\n  input %x : f32[1, s0, 64]\n";
  int outputs = 0;
  for (const Range &r : {Range{-128, 127, "i8"}, Range{0, 255, "u8"}, Range{-127, 127, "i8"}})
    for (const char *eps : {"1.1920928955078125e-07", "0.001"}) {
      std::string n = std::to_string(outputs++),
                  qr = std::to_string(r.qmin) + ", " + std::to_string(r.qmax);
      dev += "  %s" + n + " : f32[], %z" + n +
             " : i64[] = torchao.choose_qparams_affine.default(%x, \"ASYMMETRIC\", [-1, -1, -1], " +
             r.dt + ", " + qr + ", " + eps + ", f32, i64)\n  output %s" + n + "\n  output %z" + n +
             "\n";
      ref += "  %s" + n + " : f64[1], %z" + n +
             " : i64[1] = quantized_decomposed.choose_qparams.tensor(%x, " + qr + ", " + eps +
             ", " + r.dt + ")\n  output %s" + n + "\n  output %z" + n + "\n";
    }
  auto devGraph = parseGraph(dev + "}\n", "dev.gir");
  auto refGraph = parseGraph(ref + "}\n", "ref.gir");
  ASSERT_TRUE(devGraph.ok()) << render(devGraph.diags());
  ASSERT_TRUE(refGraph.ok()) << render(refGraph.diags());

  // [1, rows, 64] holding `head` first, the rest `fill`, or uniform in [lo, hi).
  auto rowsOf = [](int64_t rows, std::vector<double> head, double fill) {
    head.resize(static_cast<std::size_t>(rows * 64), fill);
    return Tensor::fromDoubles(DType::F32, {1, rows, 64}, head);
  };
  auto uniform = [](int64_t rows, double lo, double hi, uint32_t seed, double last = NAN) {
    std::vector<double> v(static_cast<std::size_t>(rows * 64));
    for (double &e : v) {
      seed = seed * 1664525u + 1013904223u;
      e = lo + (hi - lo) * (seed >> 8) / double(1u << 24);
    }
    if (!std::isnan(last))
      v.back() = last;
    return Tensor::fromDoubles(DType::F32, {1, rows, 64}, v);
  };
  // scale = 15.9375 / 255 = 2^-4 exactly; min / scale = -10.5 and -11.5.
  const std::vector<std::pair<std::string, Tensor>> inputs = {
      {"tie -10.5", rowsOf(1, {-0.65625, 15.28125}, 1.0)},
      {"tie -11.5", rowsOf(2, {15.21875, 3.0, -0.71875}, -0.5)},
      {"all zero", rowsOf(2, {-0.0}, 0.0)},
      {"negative only", uniform(3, -3.0, -0.5, 7)},
      {"positive only", uniform(1, 0.5, 2.0, 8)},
      {"below eps", uniform(2, -1e-9, 1e-9, 9)},
      {"1 row", uniform(1, -4.0, 6.0, 10)},
      {"7 rows", uniform(7, -4.0, 6.0, 11)},
      {"300 rows", uniform(300, -6.0, 4.0, 12)},
      {"1031 rows, min last", uniform(1031, -4.0, 6.0, 13, -50.0)},
      {"2048 rows, max last", uniform(2048, -4.0, 6.0, 14, 100.0)}};
  for (const char *kernels : {"cpu", "gpu"})
    withEnv("GRAFT_VK_KERNELS", kernels, [&] {
      for (const auto &[name, x] : inputs) {
        SCOPED_TRACE(std::string(kernels) + " " + name);
        auto got = runOnDevice(**devGraph, {x});
        auto want = runOnInterpreter(**refGraph, {x});
        ASSERT_TRUE(got.ok()) << render(got.diags());
        ASSERT_TRUE(want.ok()) << render(want.diags());
        ASSERT_EQ(got->size(), want->size());
        for (std::size_t i = 0; i < got->size(); i += 2) {
          const Tensor &s = std::get<Tensor>((*got)[i]), &z = std::get<Tensor>((*got)[i + 1]);
          const Tensor &rs = std::get<Tensor>((*want)[i]), &rz = std::get<Tensor>((*want)[i + 1]);
          ASSERT_EQ(s.numel(), 1);
          ASSERT_EQ(z.numel(), 1);
          EXPECT_EQ(s.dtype(), DType::F32);
          EXPECT_EQ(s.getDouble(0), rs.getDouble(0)) << "scale " << i / 2;
          EXPECT_EQ(z.getInt(0), rz.getInt(0)) << "zero point " << i / 2;
        }
      }
    });
  // An f16 input split into chunks: the (min, max) pairs stay f16, so the choose pass
  // rounds its f16 steps as it would on the input.
  if (context()->info().storageBuffer16BitAccess) {
    auto half = parseGraph(R"(graph @h {
  sym s0 : [1, 4096]
  input %x : f16[1, s0, 64]
  %s : f16[], %z : i64[] = torchao.choose_qparams_affine.default(%x, "ASYMMETRIC", [-1, -1, -1], i8, -128, 127, none, f16, i64)
  output %s
  output %z
}
)",
                           "h.gir");
    ASSERT_TRUE(half.ok()) << render(half.diags());
    Tensor xh = uniform(1100, -4.0, 6.0, 15, -30.0).to(DType::F16);
    for (const char *kernels : {"cpu", "gpu"})
      withEnv("GRAFT_VK_KERNELS", kernels, [&] {
        SCOPED_TRACE(std::string(kernels) + " f16");
        auto got = runOnDevice(**half, {xh});
        auto want = runOnInterpreter(**half, {xh});
        ASSERT_TRUE(got.ok()) << render(got.diags());
        ASSERT_TRUE(want.ok()) << render(want.diags());
        EXPECT_EQ(std::get<Tensor>((*got)[0]).getDouble(0),
                  std::get<Tensor>((*want)[0]).getDouble(0));
        EXPECT_EQ(std::get<Tensor>((*got)[1]).getInt(0), std::get<Tensor>((*want)[1]).getInt(0));
      });
  }
  // The hand-computed ties, so a reference that rounded half away from zero fails too.
  auto tie = runOnInterpreter(**refGraph, {inputs[0].second});
  ASSERT_TRUE(tie.ok());
  EXPECT_EQ(std::get<Tensor>((*tie)[0]).getDouble(0), 0.0625);
  EXPECT_EQ(std::get<Tensor>((*tie)[1]).getInt(0), -118);
  auto tie2 = runOnInterpreter(**refGraph, {inputs[1].second});
  ASSERT_TRUE(tie2.ok());
  EXPECT_EQ(std::get<Tensor>((*tie2)[1]).getInt(0), -116);
  EXPECT_EQ(std::get<Tensor>((*tie2)[5]).getInt(0), 12);
}

// rms_norm's cooperative variant (GPUs, fast policy) reorders the sum of
// squares: docs/numerics.md bounds the result by (gamma_D + 12u) |reference|.
TEST(VulkanKernels, RmsNormCoopWithinBound) {
  GRAFT_REQUIRE_VULKAN();
  withEnv("GRAFT_VK_KERNELS", "gpu", [] {
    for (int64_t d : {8, 65, 300, 2048, 70001}) {
      std::ostringstream g;
      g << "graph @t {\n  param %w : f32[" << d
        << "] fqn=\"w\" = random(seed=4, min=0.5, max=1.5)\n"
        << "  input %x : f32[3, " << d << "]\n  %o : f32[3, " << d
        << "] = et_vk.rms_norm.default(%x, %w, 1e-06)\n  output %o\n}\n";
      SCOPED_TRACE(g.str());
      BoundRun r = runForBound(g.str(), 61);
      ASSERT_EQ(r.device.size(), 1u);
      std::vector<double> bound;
      for (int64_t i = 0; i < r.ref(0).numel(); ++i)
        bound.push_back((gammaF32(d) + 12 * std::ldexp(1.0, -24)) *
                        std::abs(r.ref(0).getDouble(i)));
      EXPECT_EQ(withinBound(r.out(0), r.ref(0), bound), "");
    }
  });
}

// quantized_decomposed.dequantize_per_channel (PT2E) that no rule consumed:
// axis 0, a middle axis, a negative axis, i64 / i32 / absent zero points, u8
// and i16 inputs, sizes that are not multiples of the 64-wide workgroup.
TEST(VulkanKernels, DequantizePerChannel) {
  GRAFT_REQUIRE_VULKAN();
  checkGraph(R"(graph @t {
  param %w : i8[70, 64] fqn="w" = random(seed=21, min=-127, max=127)
  param %s : f32[70] fqn="s" = random(seed=22, min=0.0005, max=0.02)
  param %z : i64[70] fqn="z" = random(seed=23, min=-5, max=5)
  param %u : u8[3, 67, 5] fqn="u" = random(seed=24, min=0, max=255)
  param %us : f32[67] fqn="us" = random(seed=25, min=0.001, max=0.1)
  param %uz : i32[67] fqn="uz" = random(seed=26, min=100, max=140)
  param %h : i16[9, 130] fqn="h" = random(seed=27, min=-30000, max=30000)
  param %hs : f32[130] fqn="hs" = random(seed=28, min=0.0001, max=0.001)
  input %q : i8[2, 70]
  %d : f32[70, 64] = quantized_decomposed.dequantize_per_channel.default(%w, %s, %z, 0, -127, 127, i8)
  %e : f32[3, 67, 5] = quantized_decomposed.dequantize_per_channel.default(%u, %us, %uz, 1, 0, 255, u8)
  %f : f32[9, 130] = quantized_decomposed.dequantize_per_channel.default(%h, %hs, none, -1, -32768, 32767, i16)
  %g : f32[2, 70] = quantized_decomposed.dequantize_per_channel.default(%q, %s, none, 1, -128, 127, i8)
  output %d
  output %e
  output %f
  output %g
})",
             kExact, 61);
}

// f16 scales: torch multiplies (q - zp) by them in f16 (the integer operand is
// cast to f16 first), then converts to out_dtype (f32 by default, or f16).
TEST(VulkanKernels, DequantizePerChannelHalf) {
  GRAFT_REQUIRE_VULKAN();
  if (!context()->info().storageBuffer16BitAccess)
    GTEST_SKIP() << "device lacks 16-bit storage";
  checkGraph(R"(graph @t {
  param %w : i8[70, 64] fqn="w" = random(seed=31, min=-128, max=127)
  param %s : f16[70] fqn="s" = random(seed=32, min=0.0005, max=0.5)
  param %z : i64[70] fqn="z" = random(seed=33, min=-100, max=100)
  param %fs : f32[64] fqn="fs" = random(seed=34, min=0.0001, max=0.01)
  %d : f32[70, 64] = quantized_decomposed.dequantize_per_channel.default(%w, %s, %z, 0, -128, 127, i8)
  %e : f16[70, 64] = quantized_decomposed.dequantize_per_channel.default(%w, %s, %z, 0, -128, 127, i8, out_dtype=f16)
  %f : f16[70, 64] = quantized_decomposed.dequantize_per_channel.default(%w, %fs, none, 1, -128, 127, i8, out_dtype=f16)
  output %d
  output %e
  output %f
})",
             kExact, 62);
}

// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor (PT2E's
// activation qdq) on quant_affine.glsl, bit-exact against the interpreter on
// hand-picked values: ties (x * inv_scale exactly k + 0.5, both signs),
// saturation at both ends, zero points, NaN (0) and infinities, -0.0, an
// int32 range whose f32(quant_max) = 2^31 wraps to INT_MIN as the reference
// converts it, quant_min > quant_max, and scale 0.017, whose double
// reciprocal rounded to f32 (the reference's) differs from the f32
// reciprocal of f32(0.017): x = 0.0255 gives exactly 1.5 (-> 2) with the
// former and 1.4999999 (-> 1) with the latter.
TEST(VulkanKernels, QuantizePerTensorExact) {
  GRAFT_REQUIRE_VULKAN();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> xs = {0.25,
                            0.75,
                            1.25,
                            -0.25,
                            -0.75,
                            -1.25,
                            0.025499999523162842,
                            0.042500004172325134,
                            0.05950000137090683,
                            -0.0595,
                            63.75,
                            -64.25,
                            100,
                            -100,
                            1e30,
                            -1e30,
                            nan,
                            inf,
                            -inf,
                            -0.0,
                            0.0,
                            3.0,
                            -2.5,
                            1e-3,
                            0.4999};
  const int64_t n = static_cast<int64_t>(xs.size());
  const std::string sig = "[" + std::to_string(n) + "]";
  Tensor x = Tensor::fromDoubles(DType::F32, {n}, xs);
  checkWithInputs(
      "graph @t {\n  input %x : f32" + sig + R"(
  %a : i8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.5, 3, -128, 127, i8)
  %b : u8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.017, 128, 0, 255, u8)
  %c : i16)" +
          sig +
          R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.001, -5, -32768, 32767, i16)
  %d : i32)" +
          sig +
          R"( = quantized_decomposed.quantize_per_tensor.default(%x, 1e-30, 7, -2147483648, 2147483647, i32)
  %e : i8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.5, 0, 10, -10, i8)
  %f : u16)" +
          sig +
          R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.01, 30000, 0, 65535, u16)
  %g : f32)" +
          sig + R"( = quantized_decomposed.dequantize_per_tensor.default(%a, 0.5, 3, -128, 127, i8)
  %h : f32)" +
          sig + R"( = quantized_decomposed.dequantize_per_tensor.default(%b, 0.017, 128, 0, 255, u8)
  %i : f32)" +
          sig +
          R"( = quantized_decomposed.dequantize_per_tensor.default(%c, 0.001, -5, -32768, 32767, i16)
  %j : f32)" +
          sig +
          R"( = quantized_decomposed.dequantize_per_tensor.default(%d, 0.25, 7, -2147483648, 2147483647, i32)
  %k : f32)" +
          sig +
          R"( = quantized_decomposed.dequantize_per_tensor.default(%f, 0.01, 30000, 0, 65535, u16)
  output %a
  output %b
  output %c
  output %d
  output %e
  output %f
  output %g
  output %h
  output %i
  output %j
  output %k
}
)",
      {x}, kExact);
  // The .tensor overloads: one-element qparam tensors on the device (an f32
  // scale inverted in the shader, an f16 one converted to f32 first).
  checkWithInputs(
      "graph @t {\n  param %s : f32[] fqn=\"s\" = full(0.017)\n"
      "  param %sh : f16[] fqn=\"sh\" = full(0.017)\n"
      "  param %z : i64[] fqn=\"z\" = full(128)\n  input %x : f32" +
          sig + R"(
  %a : u8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.tensor(%x, %s, %z, 0, 255, u8)
  %b : u8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.tensor(%x, %sh, %z, 0, 255, u8)
  %c : f32)" +
          sig + R"( = quantized_decomposed.dequantize_per_tensor.tensor(%a, %s, %z, 0, 255, u8)
  %d : f32)" +
          sig + R"( = quantized_decomposed.dequantize_per_tensor.tensor(%b, %sh, %z, 0, 255, u8)
  output %a
  output %b
  output %c
  output %d
}
)",
      {x}, kExact);
  // Random inputs over shapes that are not multiples of the workgroup, with
  // saturation (|x| / 0.0078 > 127 for much of them).
  for (const char *shape : {"[1]", "[3, 67]", "[2, 3, 129]"}) {
    std::string sh(shape);
    checkGraph("graph @t {\n  input %x : f32" + sh + "\n  %q : i8" + sh +
                   " = quantized_decomposed.quantize_per_tensor.default(%x, 0.0078, -3, -128, "
                   "127, i8)\n  %d : f32" +
                   sh +
                   " = quantized_decomposed.dequantize_per_tensor.default(%q, 0.0078, -3, -128, "
                   "127, i8)\n  output %q\n  output %d\n}\n",
               kExact, 63);
  }
  if (!context()->info().storageBuffer16BitAccess)
    return;
  // f16: an f16 input is quantized as its f32 value; an f16 result of an
  // 8-bit dequantize is (q - zp) * f32(scale) rounded once.
  Tensor xh = Tensor::fromDoubles(DType::F16, {n}, xs);
  checkWithInputs(
      "graph @t {\n  input %x : f16" + sig + R"(
  %a : u8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.017, 128, 0, 255, u8)
  %b : f16)" +
          sig +
          R"( = quantized_decomposed.dequantize_per_tensor.default(%a, 0.017, 128, 0, 255, u8, out_dtype=f16)
  %c : i8)" +
          sig + R"( = quantized_decomposed.quantize_per_tensor.default(%x, 0.1, -7, -128, 127, i8)
  %d : f16)" +
          sig +
          R"( = quantized_decomposed.dequantize_per_tensor.default(%c, 0.1, -7, -128, 127, i8, out_dtype=f16)
  output %a
  output %b
  output %c
  output %d
}
)",
      {xh}, kExact);
}

// The bit-exact path (three dispatches in the reference's order): the exact
// profile, since GPUs' fast policy runs sdpa_fused (SdpaFusedWithinBound).
TEST(VulkanKernels, ScaledDotProductAttention) {
  GRAFT_REQUIRE_VULKAN();
  ExactKernelsScope exact;
  checkGraph(R"(graph @t {
  input %q : f32[1, 4, 7, 16]
  input %k : f32[1, 2, 7, 16]
  input %v : f32[1, 2, 7, 16]
  %o : f32[1, 4, 7, 16] = aten.scaled_dot_product_attention.default(%q, %k, %v, is_causal=true, enable_gqa=true)
  output %o
})",
             kTranscendental, 61);
  checkGraph(R"(graph @t {
  input %q : f32[2, 3, 5, 8]
  input %k : f32[2, 3, 9, 8]
  input %v : f32[2, 3, 9, 8]
  input %m : f32[5, 9]
  %o : f32[2, 3, 5, 8] = aten.scaled_dot_product_attention.default(%q, %k, %v, %m, scale=0.3)
  output %o
})",
             kTranscendental, 63);
}

// The fused attention (sdpa_fused.glsl: GPUs, fast policy; forced here with
// GRAFT_VK_KERNELS=gpu) against docs/numerics.md's bound: per output
// element (eps_w + 2 gamma_keys + 2u) * sum_j w_j |v[j, d]|, with
// eps_w = exp(2 Delta) - 1 + 2 gamma_keys + 4u and Delta the largest score
// perturbation over the keys with weight: 2 gamma_{D+1} (sum_d |qs ks| +
// |mask|) for the reordered FMA dot product, 2u |x_j| for the shift by the
// max and 2 (3 + 2 |x_j|) 2^-23 for the two exps (the device's GLSL bound
// and the host's). A 3 % error in the scale (planted) fails it.
struct AttentionCase {
  std::string gir;
  bool headsFirst;           // q [B, H, S, D] (aten) or [B, S, H, D] (custom_sdpa)
  double scale;              // the softmax scale (1 / sqrt(D) by default)
  int64_t causalOffset = -1; // >= 0: causal, key j < offset + i + 1
  bool mask = false;         // an additive [S, keys] mask input %m
};

std::vector<double> fusedAttentionBound(const AttentionCase &c, const BoundRun &r) {
  const Tensor &q = std::get<Tensor>(r.inputs[0]);
  const Tensor &k = std::get<Tensor>(r.inputs[1]);
  const Tensor &v = std::get<Tensor>(r.inputs[2]);
  const Tensor *m = c.mask ? &std::get<Tensor>(r.inputs[3]) : nullptr;
  const int64_t B = q.size(0), D = q.size(3);
  const int64_t H = c.headsFirst ? q.size(1) : q.size(2), S = c.headsFirst ? q.size(2) : q.size(1);
  const int64_t Hkv = c.headsFirst ? k.size(1) : k.size(2);
  const int64_t M = c.headsFirst ? k.size(2) : k.size(1);
  const int64_t keys = c.causalOffset >= 0 ? std::min(M, c.causalOffset + S) : M;
  const double u = std::ldexp(1.0, -24), sf = std::sqrt(std::abs(c.scale));
  auto f32 = [](double x) { return double(float(x)); };
  auto qAt = [&](int64_t b, int64_t h, int64_t i, int64_t d) {
    return q.getDouble(c.headsFirst ? ((b * H + h) * S + i) * D + d
                                    : ((b * S + i) * H + h) * D + d);
  };
  auto kvAt = [&](const Tensor &t, int64_t b, int64_t hk, int64_t j, int64_t d) {
    return t.getDouble(c.headsFirst ? ((b * Hkv + hk) * M + j) * D + d
                                    : ((b * M + j) * Hkv + hk) * D + d);
  };
  std::vector<double> bound(static_cast<std::size_t>(q.numel()));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t hk = h / (H / Hkv);
        std::vector<double> sc(keys), mag(keys), mk(keys, 0.0);
        for (int64_t j = 0; j < keys; ++j) {
          double acc = 0, a = 0;
          for (int64_t d = 0; d < D; ++d) {
            double p = f32(qAt(b, h, i, d) * sf) * f32(kvAt(k, b, hk, j, d) * sf);
            acc += p;
            a += std::abs(p);
          }
          if (m)
            mk[j] = m->getDouble(i * keys + j);
          if (c.causalOffset >= 0 && j > c.causalOffset + i)
            mk[j] = -INFINITY;
          sc[j] = acc + mk[j];
          mag[j] = a;
        }
        double mx = *std::max_element(sc.begin(), sc.end()), z = 0;
        for (double x : sc)
          z += std::exp(x - mx);
        double delta = 0;
        std::vector<double> w(keys);
        for (int64_t j = 0; j < keys; ++j) {
          w[j] = std::exp(sc[j] - mx) / z;
          if (w[j] == 0)
            continue;
          double x = std::abs(sc[j] - mx);
          delta = std::max(delta, 2 * gammaF32(D + 1) * (mag[j] + std::abs(mk[j])) + 2 * u * x +
                                      2 * (3 + 2 * x) * std::ldexp(1.0, -23));
        }
        const double epsW = std::expm1(2 * delta) + 2 * gammaF32(keys) + 4 * u;
        for (int64_t d = 0; d < D; ++d) {
          double wv = 0;
          for (int64_t j = 0; j < keys; ++j)
            wv += w[j] * std::abs(kvAt(v, b, hk, j, d));
          int64_t at = c.headsFirst ? ((b * H + h) * S + i) * D + d : ((b * S + i) * H + h) * D + d;
          bound[static_cast<std::size_t>(at)] = (epsW + 2 * gammaF32(keys) + 2 * u) * wv;
        }
      }
  return bound;
}

TEST(VulkanKernels, SdpaFusedWithinBound) {
  GRAFT_REQUIRE_VULKAN();
  std::vector<AttentionCase> cases = {
      // Prefill-shaped aten SDPA with GQA, causal (top-left).
      {R"(graph @t {
  input %q : f32[1, 8, 5, 64]
  input %k : f32[1, 2, 37, 64]
  input %v : f32[1, 2, 37, 64]
  %o : f32[1, 8, 5, 64] = aten.scaled_dot_product_attention.default(%q, %k, %v, is_causal=true, enable_gqa=true)
  output %o
})",
       true, 0.125, 0},
      // An additive mask and an explicit scale, more keys than invocations.
      {R"(graph @t {
  input %q : f32[2, 3, 5, 8]
  input %k : f32[2, 3, 150, 8]
  input %v : f32[2, 3, 150, 8]
  input %m : f32[5, 150]
  %o : f32[2, 3, 5, 8] = aten.scaled_dot_product_attention.default(%q, %k, %v, %m, scale=0.3)
  output %o
})",
       true, 0.3, -1, true},
      // ExecuTorch's decode step: custom_sdpa over a 128-position cache at
      // start_pos 90, 32 query heads on 8 key heads, D 64.
      {R"(graph @t {
  input %q : f32[1, 1, 32, 64]
  input %k : f32[1, 128, 8, 64]
  input %v : f32[1, 128, 8, 64]
  %o : f32[1, 1, 32, 64] = llama.custom_sdpa.default(%q, %k, %v, 90, none, 0.0, true)
  output %o
})",
       false, 0.125, 90},
  };
  // The decode case in f16 (the kernel computes in f32, rounds once to f16).
  AttentionCase half = cases.back();
  for (std::size_t at; (at = half.gir.find("f32[")) != std::string::npos;)
    half.gir.replace(at, 3, "f16");
  cases.push_back(half);
  withEnv("GRAFT_VK_KERNELS", "gpu", [&] {
    for (const AttentionCase &c : cases) {
      SCOPED_TRACE(c.gir);
      BoundRun r;
      std::vector<std::string> ran =
          dispatchedVariants(*context(), [&] { r = runForBound(c.gir, 71); });
      ASSERT_EQ(r.device.size(), 1u);
      EXPECT_TRUE(std::any_of(ran.begin(), ran.end(), [](const std::string &v) {
        return v.starts_with("sdpa_fused_");
      })) << "the fused kernel did not run";
      std::vector<double> bound = fusedAttentionBound(c, r);
      // f16: both sides round to f16 once, at most one f16 ulp apart more.
      if (r.ref(0).dtype() == DType::F16)
        for (std::size_t e = 0; e < bound.size(); ++e)
          bound[e] += std::ldexp(1.0, -10) * std::abs(r.ref(0).getDouble(int64_t(e)));
      EXPECT_EQ(withinBound(r.out(0), r.ref(0), bound), "");
    }
    // Planted: the kernel's output at scale 0.309 against the bound at 0.3.
    AttentionCase c = cases[1];
    std::string wrong = c.gir;
    wrong.replace(wrong.find("scale=0.3"), 9, "scale=0.309");
    BoundRun good = runForBound(c.gir, 71), bad = runForBound(wrong, 71);
    ASSERT_EQ(bad.device.size(), 1u);
    EXPECT_NE(withinBound(bad.out(0), good.ref(0), fusedAttentionBound(c, good)), "");
  });
}

//===-- Direct kernel API ---------------------------------------------------===//

TEST(VulkanKernels, PrepackQ4Layout) {
  GRAFT_REQUIRE_VULKAN();
  // One row, K = 16: bytes 0x10, 0x32, ... low nibble first means k0 = 0,
  // k1 = 1, ...; the prepacked word for k8 = 0 holds nibbles 0..7 in order.
  Tensor packed =
      Tensor::fromInts(DType::U8, {1, 8}, {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE});
  auto w = vk::prepackQ4(*context(), packed, true);
  ASSERT_TRUE(w.ok());
  uint32_t words[2];
  ASSERT_TRUE(context()->download(*w->words, words, 8).ok());
  EXPECT_EQ(words[0], 0x76543210u);
  EXPECT_EQ(words[1], 0xFEDCBA98u);
  auto h = vk::prepackQ4(*context(), packed, false);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(context()->download(*h->words, words, 8).ok());
  EXPECT_EQ(words[0], 0x67452301u);
}

TEST(VulkanKernels, TexelWeightGemvMatchesStorageBufferKernelBitForBit) {
  GRAFT_REQUIRE_VULKAN();
  // On CPU devices with storage texel buffers the weight-only GEMV reads its
  // weights as rgba32ui texels (cpu_gemv_texel, Linear.cpp texelReads); a
  // device whose maxTexelBufferElements the weight exceeds runs the
  // storage-buffer kernel (cpu_gemv_wide), as does the calibration copy
  // (stream_copy_vec4t / vec4w). The two GEMVs do the same arithmetic on the
  // same bits: equal outputs, bit for bit. Shapes: small, Llama-sized
  // (K 2048, N 8192: Llama-3.2-1B's gate/up projection), and K with an odd
  // number of 32-value blocks per row (no 32-byte pairs: the single-block
  // path) with N not a multiple of the 32-column tile.
  vk::Context &ctx = *context();
  const vk::DeviceInfo &d = ctx.info();
  if (const std::string why = texelFormsUnavailable(d); !why.empty())
    GTEST_SKIP() << why;
  for (LinearCase c : std::vector<LinearCase>{
           {1, 64, 96, 32}, {1, 2048, 8192, 32}, {1, 4128, 37, 32}, {1, 96, 45, 32}}) {
    SCOPED_TRACE("K " + std::to_string(c.K) + " N " + std::to_string(c.N));
    std::vector<int64_t> bytes(static_cast<std::size_t>(c.N * c.K / 2));
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = int64_t((i * 2654435761u) >> 11 & 0xFF);
    const int64_t G = c.K / c.groupSize;
    std::vector<double> sv(static_cast<std::size_t>(G * c.N)), xv(static_cast<std::size_t>(c.K));
    for (std::size_t i = 0; i < sv.size(); ++i)
      sv[i] = 0.002 + 0.0001 * double(i % 157);
    for (std::size_t i = 0; i < xv.size(); ++i)
      xv[i] = double(int64_t(i * 37 % 101) - 50) / 17.0;
    const Tensor packed = Tensor::fromInts(DType::U8, {c.N, c.K / 2}, bytes);
    const Tensor scales = Tensor::fromDoubles(DType::F32, {G, c.N}, sv);
    const Tensor x = Tensor::fromDoubles(DType::F32, {1, c.K}, xv);
    // The weight's texels: prepackQ4 pads each row to whole 32-value blocks.
    const uint32_t texels = static_cast<uint32_t>(c.N * ((c.K + 31) / 32));
    std::vector<std::optional<Tensor>> outs;
    for (uint32_t cap : {0u, texels - 1}) {
      vk::ContextOptions o;
      o.deviceIndex = static_cast<int>(d.index);
      o.maxTexelBufferElements = cap;
      auto own = cap ? vk::Context::create(o) : Expected<std::unique_ptr<vk::Context>>(nullptr);
      ASSERT_TRUE(own.ok()) << render(own.diags());
      vk::Context &k = cap ? **own : ctx;
      auto w = vk::prepackQ4(k, packed, true);
      auto s = vk::uploadTensor(k, scales);
      auto xd = vk::uploadTensor(k, x);
      ASSERT_TRUE(w.ok() && s.ok() && xd.ok());
      std::optional<vk::DeviceTensor> out;
      std::vector<std::string> ran = dispatchedVariants(k, [&] {
        auto r = vk::linearQ4gsw(k, *xd, *w, *s, c.groupSize, nullptr);
        ASSERT_TRUE(r.ok()) << render(r.diags());
        out = std::move(*r);
      });
      ASSERT_TRUE(out);
      EXPECT_EQ(ran, std::vector<std::string>{std::string("linear_q4gsw_fast_cpu_gemv_") +
                                              (cap ? "wide" : "texel") + "_float_float"});
      auto back = vk::downloadTensor(k, *out);
      ASSERT_TRUE(back.ok()) << render(back.diags());
      outs.push_back(std::move(*back));
      // The calibration copy of as many floats as the weight has words.
      auto in = vk::allocateTensor(k, DType::F32, {int64_t(texels) * 4});
      auto copy = vk::allocateTensor(k, DType::F32, {int64_t(texels) * 4});
      ASSERT_TRUE(in.ok() && copy.ok());
      EXPECT_EQ(dispatchedVariants(k, [&] { ASSERT_TRUE(vk::streamCopy(k, *in, *copy).ok()); }),
                std::vector<std::string>{cap ? "stream_copy_vec4w" : "stream_copy_vec4t"});
    }
    ASSERT_EQ(outs[0]->numel(), outs[1]->numel());
    for (int64_t i = 0; i < outs[0]->numel(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(float(outs[0]->getDouble(i))),
                std::bit_cast<uint32_t>(float(outs[1]->getDouble(i))))
          << "output " << i << ": " << outs[0]->getDouble(i) << " vs " << outs[1]->getDouble(i);
  }
}

TEST(VulkanKernels, LinearDq8caQ8cswGemvKernelsAgreeBitForBit) {
  GRAFT_REQUIRE_VULKAN();
  // On CPU devices an M = 1 et_vk.linear_dq8ca_q8csw runs the bandwidth
  // GEMV (linear_dq8ca_q8csw.glsl `_cpu_gemv`, 32 columns per invocation):
  // `_texel` where N % 4 == 0 and the weight fits maxTexelBufferElements,
  // else the storage-buffer form. Both sum the same exact integer products
  // in another order and share the exact kernel's epilogue, so all three
  // must give the same bits. Shapes: small, odd N (word-by-word loads, a
  // partial last tile), N % 32 != 0 with N % 4 == 0 (the texel kernel's
  // partial tile), with bias, f16 activations, 1x2048x2048, 1x4096x4096.
  vk::Context &ctx = *context();
  const vk::DeviceInfo &d = ctx.info();
  if (d.type != "cpu")
    GTEST_SKIP() << "the bandwidth GEMV runs on CPU devices";
  if (d.timestampPeriodNs == 0)
    GTEST_SKIP() << "no timestamps on the compute queue: dispatches are not listed";
  struct Case {
    int64_t K, N;
    bool bias;
    DType dtype;
  };
  for (const Case &c : std::vector<Case>{{64, 32, false, DType::F32},
                                         {96, 37, true, DType::F32},
                                         {128, 44, true, DType::F32},
                                         {64, 40, true, DType::F16},
                                         {2048, 2048, false, DType::F32},
                                         {4096, 4096, true, DType::F32}}) {
    if (c.dtype == DType::F16 && !d.storageBuffer16BitAccess)
      continue;
    SCOPED_TRACE("K " + std::to_string(c.K) + " N " + std::to_string(c.N));
    std::vector<int64_t> wv(static_cast<std::size_t>(c.N * c.K)), sums(c.N);
    for (std::size_t i = 0; i < wv.size(); ++i)
      wv[i] = int64_t((i * 2654435761u) >> 11 & 0xFF) - 128;
    std::vector<double> sv(c.N), bv(c.N), xv(c.K);
    for (int64_t n = 0; n < c.N; ++n) {
      sums[n] = n * 37 % 6001 - 3000;
      sv[n] = 0.0002 + 0.00001 * double(n % 157);
      bv[n] = double(n % 19) / 9.5 - 1.0;
    }
    // Extreme activations (-128 and 127 after quantization) included.
    for (int64_t k = 0; k < c.K; ++k)
      xv[k] = k % 61 == 0 ? -100.0 : k % 67 == 0 ? 100.0 : double(k * 37 % 101 - 50) / 17.0;
    const Tensor w = Tensor::fromInts(DType::I8, {c.N, c.K}, wv);
    const Tensor ws = Tensor::fromInts(DType::I32, {c.N}, sums);
    const Tensor s = Tensor::fromDoubles(c.dtype, {c.N}, sv);
    const Tensor b = Tensor::fromDoubles(c.dtype, {c.N}, bv);
    const Tensor x = Tensor::fromDoubles(c.dtype, {1, c.K}, xv);
    const Tensor xs = Tensor::fromDoubles(c.dtype, {1}, {100.0 / 127.5});
    const Tensor xz = Tensor::fromInts(DType::I32, {1}, {-1});
    const uint32_t texels = static_cast<uint32_t>(c.K / 4 * c.N / 4);
    const bool texel = c.N % 4 == 0 && d.shaderInt64 && d.storageTexelBuffers;
    std::vector<std::optional<Tensor>> outs;
    // The exact kernel, the default GEMV, and the GEMV on a device whose
    // texel limit the weight exceeds.
    for (int run = 0; run < 3; ++run) {
      vk::ContextOptions o;
      o.deviceIndex = static_cast<int>(d.index);
      o.maxTexelBufferElements = texels - 1;
      auto own =
          run == 2 ? vk::Context::create(o) : Expected<std::unique_ptr<vk::Context>>(nullptr);
      ASSERT_TRUE(own.ok()) << render(own.diags());
      vk::Context &k = run == 2 ? **own : ctx;
      k.setExactKernels(run == 0);
      auto pw = vk::prepackQ8(k, w);
      auto dws = vk::uploadTensor(k, ws), ds = vk::uploadTensor(k, s), db = vk::uploadTensor(k, b),
           dx = vk::uploadTensor(k, x), dxs = vk::uploadTensor(k, xs),
           dxz = vk::uploadTensor(k, xz);
      ASSERT_TRUE(pw.ok() && dws.ok() && ds.ok() && db.ok() && dx.ok() && dxs.ok() && dxz.ok());
      std::optional<vk::DeviceTensor> out;
      std::vector<std::string> ran = dispatchedVariants(k, [&] {
        auto r = vk::linearDq8caQ8csw(k, *dx, *dxs, *dxz, *pw, *dws, *ds, c.bias ? &*db : nullptr);
        ASSERT_TRUE(r.ok()) << render(r.diags());
        out = std::move(*r);
      });
      k.setExactKernels(false);
      ASSERT_TRUE(out);
      const std::string form = run == 0 ? "" : run == 1 && texel ? "_cpu_gemv_texel" : "_cpu_gemv";
      const std::string dt = c.dtype == DType::F16 ? "half" : "float";
      EXPECT_EQ(ran.back(), "linear_dq8ca_q8csw" + form + "_" + dt + "_" + dt);
      auto back = vk::downloadTensor(k, *out);
      ASSERT_TRUE(back.ok()) << render(back.diags());
      outs.push_back(std::move(*back));
    }
    for (int run = 1; run < 3; ++run) {
      ASSERT_EQ(outs[0]->numel(), outs[run]->numel());
      for (int64_t i = 0; i < outs[0]->numel(); ++i)
        ASSERT_EQ(std::bit_cast<uint64_t>(outs[0]->getDouble(i)),
                  std::bit_cast<uint64_t>(outs[run]->getDouble(i)))
            << "run " << run << " output " << i << ": " << outs[0]->getDouble(i) << " vs "
            << outs[run]->getDouble(i);
    }
  }
}

TEST(VulkanKernels, TexelDescriptorsSpanSeveralPools) {
  GRAFT_REQUIRE_VULKAN();
  // 1100 GEMVs (on CPU devices with texel buffers 3 texel bindings each)
  // recorded before one flush take more descriptor sets than a pool holds
  // (512): allocation moves on to new pools, and every dispatch computes the
  // same result.
  vk::Context &ctx = *context();
  std::vector<int64_t> bytes(96 * 32);
  std::vector<double> xs(64);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = int64_t(i * 37 % 256);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = double(i % 7) - 3;
  auto w = vk::prepackQ4(ctx, Tensor::fromInts(DType::U8, {96, 32}, bytes), true);
  auto s = vk::uploadTensor(
      ctx, Tensor::fromDoubles(DType::F32, {2, 96}, std::vector<double>(192, 0.5)));
  auto x = vk::uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {1, 64}, xs));
  ASSERT_TRUE(w.ok() && s.ok() && x.ok());
  std::vector<vk::DeviceTensor> outs;
  for (int i = 0; i < 1100; ++i) {
    auto r = vk::linearQ4gsw(ctx, *x, *w, *s, 32, nullptr);
    ASSERT_TRUE(r.ok()) << "dispatch " << i << ": " << render(r.diags());
    outs.push_back(std::move(*r));
  }
  ASSERT_TRUE(ctx.flush().ok());
  auto first = vk::downloadTensor(ctx, outs.front());
  ASSERT_TRUE(first.ok());
  for (std::size_t i = 1; i < outs.size(); i += 99) {
    auto back = vk::downloadTensor(ctx, outs[i]);
    ASSERT_TRUE(back.ok()) << render(back.diags());
    EXPECT_EQ(0, std::memcmp(back->rawData(), first->rawData(), first->nbytes())) << i;
  }
}

TEST(VulkanKernels, ElementwiseTexelAndStorageBufferFormsAgreeBitForBit) {
  GRAFT_REQUIRE_VULKAN();
  // On CPU devices with texel buffers the wide unary and binary kernels read
  // their inputs as rgba32ui texels (the vec4t variants, Elementwise.cpp
  // elementwiseForm); on a device whose maxTexelBufferElements an input
  // exceeds, as 64-bit storage-buffer words (vec4w). Both compute the same
  // per-element formula on the same bits: equal outputs, bit for bit, for
  // every unary and binary op (and binary's scalar form) over the activation
  // edge values (17 bodies of 32 and a tail).
  vk::Context &ctx = *context();
  if (const std::string why = texelFormsUnavailable(ctx.info()); !why.empty())
    GTEST_SKIP() << why;
  std::vector<double> xs = activationEdgeValues(), ys = xs;
  std::reverse(ys.begin(), ys.end());
  const int64_t n = static_cast<int64_t>(xs.size());
  const Tensor x = Tensor::fromDoubles(DType::F32, {n}, xs);
  const Tensor y = Tensor::fromDoubles(DType::F32, {n}, ys);
  using vk::BinaryKind;
  using vk::UnaryKind;
  DispatchedOutputs runs[2];
  runTexelAndCapped(
      ctx,
      [&](vk::Context &k, std::vector<vk::DeviceTensor> &results) {
        auto a = vk::uploadTensor(k, x);
        auto b = vk::uploadTensor(k, y);
        ASSERT_TRUE(a.ok() && b.ok());
        auto keep = [&](Expected<vk::DeviceTensor> r) {
          ASSERT_TRUE(r.ok()) << render(r.diags());
          results.push_back(std::move(*r));
        };
        for (UnaryKind u : {UnaryKind::Neg, UnaryKind::Abs, UnaryKind::Relu, UnaryKind::Sigmoid,
                            UnaryKind::Silu, UnaryKind::Gelu, UnaryKind::GeluTanh, UnaryKind::Rsqrt,
                            UnaryKind::Sqrt, UnaryKind::Exp, UnaryKind::Reciprocal})
          keep(vk::unary(k, u, *a));
        keep(vk::clampScalar(k, *a, -1.0f, 1.0f));
        for (BinaryKind op : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div,
                              BinaryKind::Maximum, BinaryKind::Minimum, BinaryKind::Pow})
          keep(vk::binary(k, op, *a, *b));
        keep(vk::binary(k, BinaryKind::Add, *a, *b, 2.5));
        keep(vk::binaryScalar(k, BinaryKind::Mul, *a, 0.1));
      },
      runs);
  ASSERT_EQ(runs[0].variants.size(), runs[0].outputs.size());
  ASSERT_EQ(runs[0].variants.size(), runs[1].variants.size());
  for (std::size_t i = 0; i < runs[0].variants.size(); ++i) {
    // The same kernel, read through texels on the device and through
    // storage-buffer words under the cap.
    std::string texel = runs[0].variants[i];
    ASSERT_NE(texel.find("_vec4t_"), std::string::npos) << texel;
    EXPECT_EQ(texel.replace(texel.find("_vec4t_"), 7, "_vec4w_"), runs[1].variants[i]);
  }
  expectSameBits(runs);
}

TEST(VulkanKernels, SplitKGemvTilingsRunWhereSupported) {
  GRAFT_REQUIRE_VULKAN();
  // The *FastWithinBound tests cover the split-K kernels only if a forced
  // tiling really dispatches them: the shared-memory one everywhere, the
  // subgroupAdd ones where subgroups have arithmetic and at most a team's
  // lanes (lavapipe: 8).
  vk::Context &ctx = *context();
  if (ctx.info().timestampPeriodNs == 0)
    GTEST_SKIP() << "no timestamps on the compute queue: dispatches are not listed";
  std::vector<int64_t> bytes(13 * 32);
  std::vector<double> xs(64);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = int64_t(i * 37 % 256);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = double(i % 7) - 3;
  auto w = vk::prepackQ4(ctx, Tensor::fromInts(DType::U8, {13, 32}, bytes), true);
  auto s =
      vk::uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {2, 13}, std::vector<double>(26, 0.5)));
  auto x = vk::uploadTensor(ctx, Tensor::fromDoubles(DType::F32, {1, 64}, xs));
  ASSERT_TRUE(w.ok() && s.ok() && x.ok());
  const vk::DeviceInfo &d = ctx.info();
  auto subgroupTeams = [&](uint32_t lanes) {
    return d.subgroupArithmetic && d.subgroupSize > 0 && d.subgroupSize <= lanes;
  };
  for (auto [tiling, supported] :
       std::vector<std::pair<std::string, bool>>{{"gpu_gemv_splitk", true},
                                                 {"gpu_gemv_splitk_sg", subgroupTeams(64)},
                                                 {"gpu_gemv_splitk_wg_sg", subgroupTeams(256)},
                                                 {"gpu_gemv_splitk_n4_sg", subgroupTeams(32)},
                                                 {"gpu_gemv_splitk_n8_sg", subgroupTeams(32)}})
    withLinearTiling(tiling.c_str(), [&] {
      std::vector<std::string> ran = dispatchedVariants(ctx, [&] {
        auto out = vk::linearQ4gsw(ctx, *x, *w, *s, 32, nullptr);
        ASSERT_TRUE(out.ok()) << render(out.diags());
      });
      bool dispatched =
          std::count(ran.begin(), ran.end(), "linear_q4gsw_fast_" + tiling + "_float_float") > 0;
      EXPECT_EQ(dispatched, supported);
    });
}

// The *FastWithinBound tests cover the shared-memory GEMM only if forcing
// it really dispatches it (weight-only, M > 1; dq8ca keeps gpu_gemm).
TEST(VulkanKernels, TiledGemmRunsWhenForced) {
  GRAFT_REQUIRE_VULKAN();
  vk::Context &ctx = *context();
  if (ctx.info().timestampPeriodNs == 0)
    GTEST_SKIP() << "no timestamps on the compute queue: dispatches are not listed";
  std::vector<int64_t> bytes(70 * 32);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = int64_t(i * 37 % 256);
  auto w = vk::prepackQ4(ctx, Tensor::fromInts(DType::U8, {70, 32}, bytes), true);
  auto s = vk::uploadTensor(
      ctx, Tensor::fromDoubles(DType::F32, {2, 70}, std::vector<double>(140, 0.5)));
  auto x = vk::uploadTensor(
      ctx, Tensor::fromDoubles(DType::F32, {33, 64}, std::vector<double>(33 * 64, 0.25)));
  ASSERT_TRUE(w.ok() && s.ok() && x.ok());
  withLinearTiling("gpu_gemm_tiled", [&] {
    std::vector<std::string> ran = dispatchedVariants(ctx, [&] {
      auto out = vk::linearQ4gsw(ctx, *x, *w, *s, 32, nullptr);
      ASSERT_TRUE(out.ok()) << render(out.diags());
    });
    EXPECT_EQ(ran, std::vector<std::string>{"linear_q4gsw_fast_gpu_gemm_tiled_float_float"});
  });
}

TEST(VulkanKernels, KernelErrorsAreDiagnostics) {
  GRAFT_REQUIRE_VULKAN();
  auto a =
      vk::uploadTensor(*context(), Tensor::fromDoubles(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  auto b = vk::uploadTensor(*context(), Tensor::fromDoubles(DType::F32, {4}, {1, 2, 3, 4}));
  ASSERT_TRUE(a.ok() && b.ok());
  auto r = vk::binary(*context(), vk::BinaryKind::Add, *a, *b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diags()[0].message, "vulkan add: shapes [2, 3] and [4] do not broadcast");
  auto lt = vk::compare(*context(), vk::CompareKind::Lt, *a, *b);
  ASSERT_FALSE(lt.ok());
  EXPECT_NE(lt.diags()[0].message.find("shapes [2, 3] and [4] do not broadcast"), std::string::npos)
      << lt.diags()[0].message;
  auto cond = vk::uploadTensor(*context(), Tensor::fromInts(DType::Bool, {3}, {1, 0, 1}));
  ASSERT_TRUE(cond.ok());
  auto wh = vk::where(*context(), *cond, *a, *b);
  ASSERT_FALSE(wh.ok());
  EXPECT_EQ(wh.diags()[0].message, "vulkan where: shapes [3], [2, 3] and [4] do not broadcast");
  auto m = vk::matmul(*context(), *a, *a);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.diags()[0].message.find("cannot be multiplied"), std::string::npos);
  auto big = vk::uploadTensor(*context(), Tensor::fromInts(DType::I64, {1}, {int64_t(1) << 40}));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.diags()[0].message.find("int32"), std::string::npos);
}

} // namespace
