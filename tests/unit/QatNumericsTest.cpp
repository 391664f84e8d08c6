//===- QatNumericsTest.cpp - fake_quantize_affine == quantize -> dequantize ===//
//
// patterns/qat.pat rewrites torchao fake_quantize_affine into
// quantize_affine -> dequantize_affine on the same qparams, and folds the
// quantize of a constant weight with the quantize_affine constant transform.
// Both are claimed bit-exact. These tests prove it on the reference
// interpreter with hand-picked ties (x / s = k + 0.5, round half to even),
// saturation on both sides, negative zero points, per-token and group-wise
// blocks, f32 and bf16 inputs; expected values are worked out by hand in the
// comments. The one representational difference (signed zero without a zero
// point) is pinned down explicitly.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/rewrite/ConstantTransforms.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

using namespace graft;
using graft::testing::values;

namespace {

/// Runs a graph whose only inputs are constants; returns its outputs.
std::vector<Tensor> run(const std::string &text) {
  auto g = parseGraph(text, "qat.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  if (!g.ok())
    return {};
  auto out = Interpreter().run(**g, {});
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : render(out.diags()));
  if (!out.ok())
    return {};
  std::vector<Tensor> ts;
  for (const RuntimeValue &v : *out)
    ts.push_back(std::get<Tensor>(v));
  return ts;
}

/// Same dtype, shape and bytes.
void expectBitIdentical(const Tensor &a, const Tensor &b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.sizes(), b.sizes());
  Tensor ca = a.contiguous(), cb = b.contiguous();
  std::size_t bytes = ca.nbytes();
  EXPECT_EQ(std::memcmp(ca.rawData(), cb.rawData(), bytes), 0)
      << "fake: " << ::testing::PrintToString(values(a))
      << "\nq/dq: " << ::testing::PrintToString(values(b));
}

} // namespace

// Per-token f32 activation with a zero point: ties, saturation, negative zp.
TEST(QatNumerics, PerTokenFakeQuantEqualsQuantizeDequantize) {
  const std::string graph = R"(
graph @qat {
  const %x : f32[2, 8] fqn="x" = [1.25, 1.75, -1.25, 100.0, -100.0, 0.25, -0.75, 0.0, 0.625, 0.875, -0.375, 1000.0, -1000.0, 0.125, -0.125, 31.9]
  const %s : f32[2] fqn="s" = [0.5, 0.25]
  const %zp : i32[2] fqn="zp" = [3, -2]
  %fq : f32[2, 8] = torchao.fake_quantize_affine.default(%x, [1, 8], %s, %zp, i8, -128, 127)
  %q : i8[2, 8] = torchao.quantize_affine.default(%x, [1, 8], %s, %zp, i8, -128, 127)
  %dq : f32[2, 8] = torchao.dequantize_affine.default(%q, [1, 8], %s, %zp, i8, -128, 127, output_dtype=f32)
  output %fq
  output %dq
  output %q
}
)";
  auto out = run(graph);
  ASSERT_EQ(out.size(), 3u);
  // Row 0, s = 0.5 (x * 2), zp = 3: 2.5 -> 2, 3.5 -> 4, -2.5 -> -2 (half to
  // even); 200 + 3 saturates at 127; -200 + 3 at -128; 0.5 -> 0; -1.5 -> -2.
  // Row 1, s = 0.25 (x * 4), zp = -2: 2.5 -> 2, 3.5 -> 4, -1.5 -> -2, 4000
  // and -4000 saturate, 0.5 -> 0, -0.5 -> -0, 127.6 -> 128 - 2 = 126.
  EXPECT_EQ(values(out[2]),
            (std::vector<double>{5, 7, 1, 127, -128, 3, 1, 3, 0, 2, -4, 127, -128, -2, -2, 126}));
  // dequantized: (q - zp) * s.
  EXPECT_EQ(values(out[0]), (std::vector<double>{1.0, 2.0, -1.0, 62.0, -65.5, 0.0, -1.0, 0.0, 0.5,
                                                 1.0, -0.5, 32.25, -31.5, 0.0, 0.0, 32.0}));
  expectBitIdentical(out[0], out[1]);
}

// bf16 weight, int4 range group-wise, integer zero point tensor (QAT 8da4w's
// weight fake quantizer); the dequantize computes in bf16 * f32 -> f32 and
// rounds to bf16 in both forms.
TEST(QatNumerics, GroupwiseBf16FakeQuantEqualsQuantizeDequantize) {
  const std::string graph = R"(
graph @qat {
  const %w : bf16[2, 8] fqn="w" = [0.75, -0.25, 1.25, -1.75, 3.0, 5.0, 100.0, -100.0, 0.1, -0.1, 7.0, -9.0, 0.5, 1.5, -2.5, 2.5]
  const %s : f32[2, 2] fqn="s" = [0.5, 2.0, 1.0, 1.0]
  const %zp : i8[2, 2] fqn="zp" = [0, 0, 1, -1]
  %fq : bf16[2, 8] = torchao.fake_quantize_affine.default(%w, [1, 4], %s, %zp, i8, -8, 7)
  %q : i8[2, 8] = torchao.quantize_affine.default(%w, [1, 4], %s, %zp, i8, -8, 7)
  %dq : bf16[2, 8] = torchao.dequantize_affine.default(%q, [1, 4], %s, %zp, i8, -8, 7, output_dtype=bf16)
  output %fq
  output %dq
  output %q
}
)";
  auto out = run(graph);
  ASSERT_EQ(out.size(), 3u);
  // Group (0,0) s 0.5: 1.5 -> 2, -0.5 -> -0 (+0 after + zp 0), 2.5 -> 2, -3.5 -> -4.
  // Group (0,1) s 2: 1.5 -> 2, 2.5 -> 2, 50 -> 7, -50 -> -8.
  // Group (1,0) s 1, zp 1: 0.1 -> 0 + 1, -0.1 -> -0 + 1, 7 + 1 -> 7 (clamp), -9 + 1 -> -8.
  // Group (1,1) s 1, zp -1: 0.5 -> 0 - 1, 1.5 -> 2 - 1, -2.5 -> -2 - 1, 2.5 -> 2 - 1.
  EXPECT_EQ(values(out[2]),
            (std::vector<double>{2, 0, 2, -4, 2, 2, 7, -8, 1, 1, 7, -8, -1, 1, -3, 1}));
  EXPECT_EQ(values(out[0]), (std::vector<double>{1.0, 0.0, 1.0, -2.0, 4.0, 4.0, 14.0, -16.0, 0.0,
                                                 0.0, 6.0, -9.0, 0.0, 2.0, -2.0, 2.0}));
  expectBitIdentical(out[0], out[1]);
}

// Without a zero point the two forms agree in value, but fake quantization
// keeps the float -0.0 that round(-0.5) gives while the integer cast stores
// 0: the only difference, and not a numeric one (-0.0 == 0.0).
TEST(QatNumerics, NoZeroPointDiffersOnlyInTheSignOfZero) {
  const std::string graph = R"(
graph @qat {
  const %w : f32[1, 4] fqn="w" = [-0.25, 0.75, -1.25, 9.0]
  const %s : f32[1, 1] fqn="s" = [0.5]
  %fq : f32[1, 4] = torchao.fake_quantize_affine.default(%w, [1, 4], %s, none, i8, -8, 7)
  %q : i8[1, 4] = torchao.quantize_affine.default(%w, [1, 4], %s, none, i8, -8, 7)
  %dq : f32[1, 4] = torchao.dequantize_affine.default(%q, [1, 4], %s, none, i8, -8, 7, output_dtype=f32)
  output %fq
  output %dq
}
)";
  auto out = run(graph);
  ASSERT_EQ(out.size(), 2u);
  // -0.5 -> -0, 1.5 -> 2, -2.5 -> -2, 18 -> 7.
  EXPECT_EQ(values(out[0]), (std::vector<double>{0.0, 1.0, -1.0, 3.5}));
  EXPECT_EQ(values(out[1]), values(out[0]));
  EXPECT_TRUE(std::signbit(out[0].getDouble(0)));
  EXPECT_FALSE(std::signbit(out[1].getDouble(0)));
  for (int64_t i = 1; i < 4; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(static_cast<float>(out[0].getDouble(i))),
              std::bit_cast<uint32_t>(static_cast<float>(out[1].getDouble(i))));
}

// The quantize_affine constant transform (the weight fold of qat.pat) gives
// the bytes the interpreter's quantize_affine kernel computes.
TEST(QatNumerics, QuantizeAffineTransformMatchesTheKernel) {
  const std::string graph = R"(
graph @qat {
  const %w : f32[4, 64] fqn="w" = random(seed=5, min=-0.2, max=0.2)
  const %s : f32[4, 2] fqn="s" = random(seed=6, min=0.01, max=0.03)
  const %zp : i32[4, 2] fqn="zp" = random(seed=7, min=-2, max=2)
  %q : i8[4, 64] = torchao.quantize_affine.default(%w, [1, 32], %s, %zp, i8, -8, 7)
  %q0 : i8[4, 64] = torchao.quantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7)
  output %q
  output %q0
  output %w
  output %s
  output %zp
}
)";
  auto out = run(graph);
  ASSERT_EQ(out.size(), 5u);
  const auto &reg = rewrite::ConstantTransformRegistry::builtin();
  for (bool withZp : {true, false}) {
    const rewrite::ConstantTransform *t =
        reg.find(withZp ? "quantize_affine" : "quantize_affine_no_zp");
    ASSERT_NE(t, nullptr);
    auto args = rewrite::bindTransformArgs(*t, {},
                                           {{"block_size", Argument::ints({1, 32})},
                                            {"dtype", Argument(DType::I8)},
                                            {"quant_min", Argument(int64_t(-8))},
                                            {"quant_max", Argument(int64_t(7))}});
    ASSERT_TRUE(args.ok()) << render(args.diags());
    TensorProto wProto = out[2].proto(), sProto = out[3].proto(), zpProto = out[4].proto();
    std::vector<const TensorProto *> protos{&wProto, &sProto};
    std::vector<const Tensor *> inputs{&out[2], &out[3]};
    if (withZp) {
      protos.push_back(&zpProto);
      inputs.push_back(&out[4]);
    }
    auto plan = rewrite::planTransform(*t, protos, *args);
    ASSERT_TRUE(plan.ok()) << render(plan.diags());
    EXPECT_EQ(plan->proto.dtype, DType::I8);
    auto q = rewrite::computeTransform(*t, inputs, *args, plan->proto);
    ASSERT_TRUE(q.ok()) << render(q.diags());
    expectBitIdentical(*q, withZp ? out[0] : out[1]);
  }
}

// The transform refuses what torchao would: a block size that does not tile
// the weight, scales with the wrong number of entries, a range outside the
// dtype.
TEST(QatNumerics, QuantizeAffineTransformChecksItsArguments) {
  const rewrite::ConstantTransform *t =
      rewrite::ConstantTransformRegistry::builtin().find("quantize_affine_no_zp");
  ASSERT_NE(t, nullptr);
  TensorProto w(DType::F32, Shape{Dim(4), Dim(64)});
  TensorProto s(DType::F32, Shape{Dim(4), Dim(2)});
  auto plan = [&](std::vector<int64_t> block, const TensorProto &scale, int64_t qmin) {
    auto args = rewrite::bindTransformArgs(*t, {},
                                           {{"block_size", Argument::ints(block)},
                                            {"dtype", Argument(DType::I8)},
                                            {"quant_min", Argument(qmin)},
                                            {"quant_max", Argument(int64_t(7))}});
    EXPECT_TRUE(args.ok());
    auto p = rewrite::planTransform(*t, {&w, &scale}, *args);
    return p.ok() ? std::string() : p.diags()[0].message;
  };
  EXPECT_EQ(plan({1, 32}, s, -8), "");
  EXPECT_NE(plan({1, 48}, s, -8).find("does not divide dim 64"), std::string::npos);
  TensorProto s3(DType::F32, Shape{Dim(4), Dim(3)});
  EXPECT_NE(plan({1, 32}, s3, -8).find("one entry per block (8)"), std::string::npos);
  EXPECT_NE(plan({1, 32}, s, -200), "");
}
