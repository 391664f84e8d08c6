//===- QuantNumericsTest.cpp - Golden tests of the quantization primitives -===//
//
// Every expected value is a literal worked out by hand (the arithmetic is in
// the comment next to it), following the upstream Python each kernel
// transcribes (torchao quant_primitives.py, torch _decomposed.py, ExecuTorch
// _quant_patterns_and_replacements.py and backends/vulkan/custom_ops_lib.py).
// Each op runs through the real Interpreter on a small graph built with the
// Graph API and bound to the builtin op registry.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

using namespace graft;
using graft::testing::f32;
using graft::testing::TestGraph;
using graft::testing::values;

namespace {

//===----------------------------------------------------------------------===//
// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor
//===----------------------------------------------------------------------===//

Value *quantizePerTensor(TestGraph &t, Value *x, double scale, int64_t zp, int64_t qmin,
                         int64_t qmax, DType dtype) {
  return t.op("quantized_decomposed.quantize_per_tensor.default", {x, scale, zp, qmin, qmax, dtype},
              {}, dtype,
              x->proto().shape.size() == 1 ? std::vector<int64_t>{*x->proto().shape[0].value()}
                                           : std::vector<int64_t>{});
}

TEST(QuantNumerics, PerTensorRoundsHalfToEven) {
  TestGraph t;
  Value *x = t.input("x", f32({8}, {0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 2.4999}));
  Tensor q = t.run1(quantizePerTensor(t, x, 1.0, 0, -128, 127, DType::I8));
  // round(x * (1/1.0)): ties go to the even neighbour.
  //   0.5 -> 0, 1.5 -> 2, 2.5 -> 2, 3.5 -> 4, -0.5 -> -0 = 0, -1.5 -> -2,
  //   -2.5 -> -2, 2.4999 -> 2
  EXPECT_EQ(values(q), (std::vector<double>{0, 2, 2, 4, 0, -2, -2, 2}));
  EXPECT_EQ(q.dtype(), DType::I8);
}

TEST(QuantNumerics, PerTensorSaturatesAtQuantRange) {
  TestGraph t;
  Value *x = t.input("x", f32({4}, {1000.0, -1000.0, 127.5, -128.5}));
  Tensor q = t.run1(quantizePerTensor(t, x, 1.0, 0, -128, 127, DType::I8));
  // 1000 -> clamp 127; -1000 -> clamp -128; 127.5 -> round 128 (even) -> 127;
  // -128.5 -> round -128 (even) -> -128
  EXPECT_EQ(values(q), (std::vector<double>{127, -128, 127, -128}));

  TestGraph u;
  Value *y = u.input("y", f32({3}, {-200.0, 200.0, 0.0}));
  Tensor qu = u.run1(quantizePerTensor(u, y, 1.0, 128, 0, 255, DType::U8));
  // uint8, zp 128: -200 + 128 = -72 -> 0; 200 + 128 = 328 -> 255; 0 + 128 = 128
  EXPECT_EQ(values(qu), (std::vector<double>{0, 255, 128}));
}

TEST(QuantNumerics, PerTensorNegativeZeroPoint) {
  TestGraph t;
  Value *x = t.input("x", f32({3}, {1.0, -1.0, 2.25}));
  Tensor q = t.run1(quantizePerTensor(t, x, 0.5, -3, -128, 127, DType::I8));
  // x * (1/0.5) = x * 2 = [2, -2, 4.5]; round -> [2, -2, 4]; + (-3) -> [-1, -5, 1]
  EXPECT_EQ(values(q), (std::vector<double>{-1, -5, 1}));
}

TEST(QuantNumerics, ClampHappensAfterAddingZeroPoint) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {9.0, -12.0}));
  Tensor q = t.run1(quantizePerTensor(t, x, 1.0, -4, -8, 7, DType::I8));
  // int4 range [-8, 7], zp -4:
  //   9:   round 9 + (-4) = 5, inside the range -> 5
  //        (clamping first would give clamp(9) = 7, then 7 - 4 = 3)
  //   -12: round -12 + (-4) = -16 -> clamp -8
  //        (clamping first would give -8 - 4 = -12)
  EXPECT_EQ(values(q), (std::vector<double>{5, -8}));
}

TEST(QuantNumerics, PerTensorMultipliesByTheReciprocal) {
  // scale 0.1 (f32 0x3DCCCCCD = 0.100000001490116), x = 1.55f
  // (0x3FC66666 = 1.5499999523162842).
  //   upstream: inv = 1.0 / 0.1 = 10.0 (exactly, in double and in f32)
  //             x * 10.0 = 15.4999995..., rounded to f32 = 15.5 -> round -> 16
  //   dividing instead: x / 0.100000001 = 15.4999990 in f32 -> round -> 15
  float x = std::bit_cast<float>(0x3FC66666u);
  TestGraph t;
  Value *in = t.input("x", f32({1}, {x}));
  Tensor q = t.run1(quantizePerTensor(t, in, static_cast<double>(0.1f), 0, -128, 127, DType::I8));
  EXPECT_EQ(q.getInt(0), 16);
}

TEST(QuantNumerics, PerTensorUpcastsHalfInputs) {
  TestGraph t;
  Value *x = t.input("x", Tensor::fromDoubles(DType::BF16, {2}, {2.5, -3.5}));
  Tensor q = t.run1(quantizePerTensor(t, x, 1.0, 1, -128, 127, DType::I8));
  // bf16 -> f32 (exact), round(2.5) = 2 + 1 = 3; round(-3.5) = -4 + 1 = -3
  EXPECT_EQ(values(q), (std::vector<double>{3, -3}));
}

TEST(QuantNumerics, PerTensorTensorOverloadUsesItem) {
  TestGraph t;
  Value *x = t.input("x", f32({3}, {0.75, -0.25, 1.25}));
  Value *s = t.constant("s", f32({1}, {0.5}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I64, {1}, {2}));
  Value *q = t.op("quantized_decomposed.quantize_per_tensor.tensor",
                  {x, s, z, int64_t(-128), int64_t(127), DType::I8}, {}, DType::I8, {3});
  // x * 2 = [1.5, -0.5, 2.5] -> round [2, -0, 2] -> + 2 = [4, 2, 4]
  EXPECT_EQ(values(t.run1(q)), (std::vector<double>{4, 2, 4}));
}

TEST(QuantNumerics, DequantizePerTensor) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::I8, {3}, {-128, 0, 127}));
  Value *d =
      t.op("quantized_decomposed.dequantize_per_tensor.default",
           {q, 0.5, int64_t(-3), int64_t(-128), int64_t(127), DType::I8}, {}, DType::F32, {3});
  // (q - (-3)) * 0.5 = [-125 * 0.5, 3 * 0.5, 130 * 0.5] = [-62.5, 1.5, 65]
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{-62.5, 1.5, 65}));
}

TEST(QuantNumerics, DequantizePerTensorBf16RoundsOnce) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::I8, {1}, {-124}));
  Value *d = t.op("quantized_decomposed.dequantize_per_tensor.default",
                  {q, 0.1, int64_t(0), int64_t(-128), int64_t(127), DType::I8},
                  {{"out_dtype", DType::BF16}}, DType::BF16, {1});
  // q.to(bf16) - 0 = -124; * 0.1 with the scalar kept in f32 (reduced-float
  // mul uses the original scalar): -124 * 0.100000001 = -12.4000006 in f32,
  // rounded once to bf16 (step 0.0625 in [8, 16)) -> -12.375.
  // Rounding 0.1 to bf16 first (0.10009765625) would give -12.41 -> -12.4375.
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{-12.375}));
}

//===----------------------------------------------------------------------===//
// Per-channel
//===----------------------------------------------------------------------===//

TEST(QuantNumerics, PerChannelAxis0And1) {
  Tensor x = f32({2, 3}, {1.0, 2.0, 3.0, -1.0, -2.0, -3.0});
  {
    TestGraph t;
    Value *in = t.input("x", x);
    Value *s = t.constant("s", f32({2}, {0.5, 2.0}));
    Value *z = t.constant("z", Tensor::fromInts(DType::I64, {2}, {1, -1}));
    Value *q =
        t.op("quantized_decomposed.quantize_per_channel.default",
             {in, s, z, int64_t(0), int64_t(-128), int64_t(127), DType::I8}, {}, DType::I8, {2, 3});
    // row 0: x * (1/0.5) = [2, 4, 6] + 1 = [3, 5, 7]
    // row 1: x * (1/2) = [-0.5, -1, -1.5] -> round [-0, -1, -2] + (-1) = [-1, -2, -3]
    EXPECT_EQ(values(t.run1(q)), (std::vector<double>{3, 5, 7, -1, -2, -3}));
  }
  {
    TestGraph t;
    Value *in = t.input("x", x);
    Value *s = t.constant("s", f32({3}, {1.0, 0.5, 4.0}));
    Value *z = t.constant("z", Tensor::fromInts(DType::I64, {3}, {0, 0, 10}));
    Value *q =
        t.op("quantized_decomposed.quantize_per_channel.default",
             {in, s, z, int64_t(1), int64_t(-128), int64_t(127), DType::I8}, {}, DType::I8, {2, 3});
    // col 0: x/1 = [1, -1]; col 1: x*2 = [4, -4]; col 2: x*0.25 = [0.75, -0.75]
    //   -> round [1, -1] + 10 = [11, 9]
    EXPECT_EQ(values(t.run1(q)), (std::vector<double>{1, 4, 11, -1, -4, 9}));
  }
  {
    TestGraph t;
    Value *q = t.input("q", Tensor::fromInts(DType::I8, {2, 3}, {3, 5, 7, -1, -2, -3}));
    Value *s = t.constant("s", f32({2}, {0.5, 2.0}));
    Value *z = t.constant("z", Tensor::fromInts(DType::I64, {2}, {1, -1}));
    Value *d =
        t.op("quantized_decomposed.dequantize_per_channel.default",
             {q, s, z, int64_t(0), int64_t(-128), int64_t(127), DType::I8}, {}, DType::F32, {2, 3});
    // row 0: ([3, 5, 7] - 1) * 0.5 = [1, 2, 3]; row 1: ([-1, -2, -3] + 1) * 2 = [0, -2, -4]
    EXPECT_EQ(values(t.run1(d)), (std::vector<double>{1, 2, 3, 0, -2, -4}));
  }
}

//===----------------------------------------------------------------------===//
// Per-group
//===----------------------------------------------------------------------===//

TEST(QuantNumerics, DequantizePerChannelGroup) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::I8, {2, 4}, {-8, 7, 1, 2, 3, -3, 0, 5}));
  Value *s = t.constant("s", f32({2, 2}, {0.5, 0.25, 2.0, 1.0}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {2, 2}, {0, -2, 1, 0}));
  Value *d = t.op("quantized_decomposed.dequantize_per_channel_group.default",
                  {q, s, z, int64_t(-8), int64_t(7), DType::I8, int64_t(2), DType::F32}, {},
                  DType::F32, {2, 4});
  // groups of 2 along the row: (q - zp[g]) * s[g]
  //   [-8, 7] - 0 -> * 0.5 = [-4, 3.5]   [1, 2] + 2 -> [3, 4] * 0.25 = [0.75, 1]
  //   [3, -3] - 1 -> [2, -4] * 2 = [4, -8]   [0, 5] * 1 = [0, 5]
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{-4, 3.5, 0.75, 1, 4, -8, 0, 5}));
}

TEST(QuantNumerics, QuantizeAffineGroupwise) {
  TestGraph t;
  Value *x = t.input("x", f32({2, 4}, {0.3, -0.3, 1.0, 1.6, 5.0, -5.0, 0.125, 0.375}));
  Value *s = t.constant("s", f32({2, 2}, {0.1, 0.2, 2.0, 0.25}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {2, 2}, {0, 1, -1, 0}));
  Value *q = t.op("torchao.quantize_affine.default",
                  {x, Argument::ints({1, 2}), s, z, DType::I8, int64_t(-8), int64_t(7)}, {},
                  DType::I8, {2, 4});
  // group (0,0): 1/0.1f = 10.0f; 0.3f*10 = 3.0000001 -> 3 ; -0.3 -> -3 ; + 0
  // group (0,1): 1/0.2f = 5.0f; 1.0*5 = 5 + 1 = 6 ; 1.6f*5 = 8.0000002 -> 8 + 1 = 9 -> clamp 7
  // group (1,0): 1/2 = 0.5; 5*0.5 = 2.5 -> 2 (even) - 1 = 1 ; -2.5 -> -2 - 1 = -3
  // group (1,1): 1/0.25 = 4; 0.125*4 = 0.5 -> 0 ; 0.375*4 = 1.5 -> 2
  EXPECT_EQ(values(t.run1(q)), (std::vector<double>{3, -3, 6, 7, 1, -3, 0, 2}));
}

TEST(QuantNumerics, QuantizeAffineF64ScaleComputesInF64) {
  // torch promotes x * (1 / s) to f64 when the scale is f64 (the earlier
  // torchao per-token path). x / s = -126.5 exactly: in f64 1/7 * -885.5 is
  // -126.5 and rounds half to even to -126; with the same scale as f32,
  // 1/7 rounds up to 0.14285715f and -885.5 * that = -126.50000763f -> -127.
  // This is the one-step tie difference quant_f64_legalize.pat's
  // quantize_affine_f64_scale states (tolerance 1).
  auto quantize = [](DType scaleDType) {
    TestGraph t;
    Value *x = t.input("x", f32({1, 2}, {-885.5, 14.0}));
    Value *s = t.constant("s", Tensor::fromDoubles(scaleDType, {1}, {7.0}));
    Value *z = t.constant("z", Tensor::fromInts(DType::I64, {1}, {0}));
    Value *q = t.op("torchao.quantize_affine.default", {x, Argument::ints({1, 2}), s, z, DType::I8},
                    {}, DType::I8, {1, 2});
    return values(t.run1(q));
  };
  EXPECT_EQ(quantize(DType::F64), (std::vector<double>{-126, 2}));
  EXPECT_EQ(quantize(DType::F32), (std::vector<double>{-127, 2}));
}

//===----------------------------------------------------------------------===//
// Per-token
//===----------------------------------------------------------------------===//

TEST(QuantNumerics, PerTokenChooseQuantizeDequantize) {
  TestGraph t;
  // row 0 spans [-1, 127/128]; row 1 is all positive with max 255/64.
  Value *x = t.input(
      "x", f32({2, 4}, {-1.0, 0.9921875, 0.00390625, 0.01171875, 0.5, 1.0078125, 3.984375, 0.25}));
  auto qp = t.opN("quantized_decomposed.choose_qparams_per_token_asymmetric.default",
                  {x, DType::I8}, {}, {{DType::F64, {2, 1}}, {DType::I64, {2, 1}}});
  Value *q = t.op("quantized_decomposed.quantize_per_token.default",
                  {x, qp[0], qp[1], int64_t(-128), int64_t(127), DType::I8}, {}, DType::I8, {2, 4});
  Value *d = t.op("quantized_decomposed.dequantize_per_token.default",
                  {q, qp[0], qp[1], int64_t(-128), int64_t(127), DType::I8, DType::F32}, {},
                  DType::F32, {2, 4});
  auto r = t.run({qp[0], qp[1], q, d});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // row 0: min_neg = -1, max_pos = 127/128; scale = (255/128) / 255 = 1/128
  //   descaled_min = -128, descaled_max = 127; (-128 + -128) + (127 + 127) = -2
  //   is not > 0, so zp = qmax - descaled_max = 127 - 127 = 0
  // row 1: min_neg = 0, max_pos = 255/64; scale = 1/64
  //   descaled (0, 255); (-128 + 0) + (127 + 255) = 254 > 0, so
  //   zp = qmin - descaled_min = -128
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{0.0078125, 0.015625}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{0, -128}));
  // quantize (in f64: f32 x * f64 (1/scale)), add zp, THEN round, clamp:
  //   row 0 * 128: [-128, 127, 0.5 -> 0 (even), 1.5 -> 2]
  //   row 1 * 64 - 128: [32 - 128 = -96, 64.5 - 128 = -63.5 -> -64 (even),
  //                      255 - 128 = 127, 16 - 128 = -112]
  EXPECT_EQ(values(std::get<Tensor>((*r)[2])),
            (std::vector<double>{-128, 127, 0, 2, -96, -64, 127, -112}));
  // dequantize: (q - zp) * scale in f64, then to f32:
  //   row 0: q / 128 = [-1, 0.9921875, 0, 0.015625]
  //   row 1: (q + 128) / 64 = [0.5, 1, 3.984375, 0.25]
  EXPECT_EQ(values(std::get<Tensor>((*r)[3])),
            (std::vector<double>{-1, 0.9921875, 0, 0.015625, 0.5, 1, 3.984375, 0.25}));
}

//===----------------------------------------------------------------------===//
// torchao
//===----------------------------------------------------------------------===//

TEST(QuantNumerics, TorchaoQuantizeUsesReciprocalOfF32Scale) {
  // Same pair as the per-tensor case: 1.0f / 0.1f = 10.0f exactly, and
  // 1.55f * 10 rounds to 15.5f, which rounds half-even to 16 (x / s = 15.4999990 -> 15).
  TestGraph t;
  Value *x = t.input("x", f32({1}, {std::bit_cast<float>(0x3FC66666u)}));
  Value *s = t.constant("s", f32({1}, {0.1}));
  Value *q = t.op("torchao.quantize_affine.default",
                  {x, Argument::ints({1}), s, Argument::none(), DType::I8}, {}, DType::I8, {1});
  EXPECT_EQ(values(t.run1(q)), (std::vector<double>{16}));
}

TEST(QuantNumerics, TorchaoDequantizeBf16Output) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::I8, {2}, {-124, 3}));
  Value *s = t.constant("s", f32({1}, {0.1}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {1}, {0}));
  Value *d = t.op("torchao.dequantize_affine.default",
                  {q, Argument::ints({2}), s, z, DType::I8, int64_t(-128), int64_t(127)},
                  {{"output_dtype", DType::BF16}}, DType::BF16, {2});
  // q.to(bf16) - zp.to(bf16) = [-124, 3]; * f32 scale promotes to f32:
  //   -124 * 0.100000001 = -12.4000006 -> bf16 -12.375 (not -12.4375, which a
  //   bf16-rounded scale 0.10009765625 would give)
  //   3 * 0.100000001 = 0.300000004 -> bf16: 0.3 = 1.0011001100..b * 2^-2,
  //   7 fraction bits round up to 1.0011010b -> 0.30078125
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{-12.375, 0.30078125}));
}

TEST(QuantNumerics, TorchaoDequantizeDoesNotClamp) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::I8, {2}, {100, -100}));
  Value *s = t.constant("s", f32({1}, {0.5}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I8, {1}, {-2}));
  Value *d =
      t.op("torchao.dequantize_affine.default",
           {q, Argument::ints({2}), s, z, DType::I8, int64_t(-8), int64_t(7)}, {}, DType::F32, {2});
  // qmin/qmax are only validated: (100 + 2) * 0.5 = 51, (-100 + 2) * 0.5 = -49
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{51, -49}));
}

TEST(QuantNumerics, TorchaoSubByteUintOutputIsUint8) {
  TestGraph t;
  Value *x = t.input("x", f32({3}, {0.0, 7.5, 100.0}));
  Value *s = t.constant("s", f32({1}, {1.0}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {1}, {8}));
  Value *q = t.op("torchao.quantize_affine.default", {x, Argument::ints({3}), s, z, DType::U4}, {},
                  DType::U8, {3});
  // uint4 default range [0, 15]: 0 + 8 = 8; round(7.5) = 8 + 8 = 16 -> 15; 100 -> 15
  Tensor r = t.run1(q);
  EXPECT_EQ(r.dtype(), DType::U8);
  EXPECT_EQ(values(r), (std::vector<double>{8, 15, 15}));
}

TEST(QuantNumerics, TorchaoLegacyFloatZeroPointDomain) {
  TestGraph t;
  Value *x = t.input("x", f32({3}, {1.0, 4.5, -3.25}));
  Value *s = t.constant("s", f32({1}, {0.5}));
  Value *z = t.constant("z", f32({1}, {1.0}));
  Value *q = t.op("torchao.quantize_affine.default",
                  {x, Argument::ints({3}), s, z, DType::U8, int64_t(0), int64_t(15), "FLOAT"}, {},
                  DType::U8, {3});
  Value *d = t.op("torchao.dequantize_affine.default",
                  {q, Argument::ints({3}), s, z, DType::U8, int64_t(0), int64_t(15), "FLOAT"},
                  {{"output_dtype", DType::F32}}, DType::F32, {3});
  auto r = t.run({q, d});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // tinygemm: mid = (15 + 0 + 1) / 2 = 8; min_val = zp - s * mid = 1 - 4 = -3
  //   q = clamp(round((x + 3) / 0.5)): 1 -> 8; 4.5 -> 15; -3.25 -> round(-0.5) = -0 -> 0
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{8, 15, 0}));
  //   dq = (q - 8) * 0.5 + 1 = [1, 4.5, -3]
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{1, 4.5, -3}));
}

TEST(QuantNumerics, ChooseQParamsSymmetric) {
  TestGraph t;
  // row 0: amax = max(1.0, 1.9921875) = 1.9921875 = 255/128
  // row 1: all zeros
  Value *x = t.input("x", f32({2, 4}, {-1.0, 0.5, 1.9921875, 0.0, 0, 0, 0, 0}));
  auto qp = t.opN("torchao.choose_qparams_affine.default",
                  {x, "SYMMETRIC", Argument::ints({1, 4}), DType::I8}, {},
                  {{DType::F32, {2}}, {DType::F32, {2}}});
  auto r = t.run({qp[0], qp[1]});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // int8: scale = amax / ((127 - (-128)) / 2) = (255/128) / 127.5 = 1/64
  // zeros: scale = 0 -> clamp(min = finfo(f32).smallest_normal = 2^-126)
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])),
            (std::vector<double>{0.015625, std::ldexp(1.0, -126)}));
  // zero_point = int((127 + (-128) + 1) / 2) = 0, in the scale's dtype
  // (zero_point_dtype=None keeps full_like(scale)'s f32)
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{0, 0}));
}

TEST(QuantNumerics, ChooseQParamsInt4SymmetricVariants) {
  TestGraph t;
  Value *x = t.input("x", f32({1, 4}, {-2.0, 1.0, 0.5, 0.0}));
  auto sym = t.opN("torchao.choose_qparams_affine.default",
                   {x, "SYMMETRIC", Argument::ints({1, 4}), DType::I8, int64_t(-8), int64_t(7)},
                   {{"zero_point_dtype", DType::I8}}, {{DType::F32, {1}}, {DType::I8, {1}}});
  auto nce = t.opN(
      "torchao.choose_qparams_affine.default",
      {x, "SYMMETRIC_NO_CLIPPING_ERR", Argument::ints({1, 4}), DType::I8, int64_t(-8), int64_t(7)},
      {}, {{DType::F32, {1}}, {DType::F32, {1}}});
  auto r = t.run({sym[0], sym[1], nce[0]});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // SYMMETRIC: amax = max(2, 1) = 2; scale = 2 / ((7 + 8) / 2) = 2 / 7.5 = 0.26666668f
  EXPECT_EQ(std::get<Tensor>((*r)[0]).getDouble(0), static_cast<double>(2.0f / 7.5f));
  // zero point int((7 - 8 + 1) / 2) = 0
  EXPECT_EQ(std::get<Tensor>((*r)[1]).getInt(0), 0);
  // NO_CLIPPING_ERR: smin = -2 / -8 = 0.25, smax = 1 / 7 = 0.142857; smin > smax -> 0.25
  EXPECT_EQ(std::get<Tensor>((*r)[2]).getDouble(0), 0.25);
}

TEST(QuantNumerics, ChooseQParamsAsymmetric) {
  TestGraph t;
  Value *x = t.input("x", f32({1, 4}, {-0.984375, 0.0, 3.0, 2.0}));
  auto qp = t.opN("torchao.choose_qparams_affine.default",
                  {x, "ASYMMETRIC", Argument::ints({1, 4}), DType::U8}, {},
                  {{DType::F32, {1}}, {DType::I32, {1}}});
  auto r = t.run({qp[0], qp[1]});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // min_neg = -63/64, max_pos = 3; scale = (3 + 63/64) / (255 - 0) = (255/64) / 255 = 1/64
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{0.015625}));
  // zp = qmin - round(min_neg / scale) = 0 - round(-63) = 63, clamp [0, 255], int32
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{63}));
  EXPECT_EQ(std::get<Tensor>((*r)[1]).dtype(), DType::I32);
}

TEST(QuantNumerics, FakeQuantizeEqualsDequantizeOfQuantize) {
  TestGraph t;
  std::vector<double> xs;
  for (int i = 0; i < 16; ++i)
    xs.push_back(std::sin(0.37 * i) * 3.0);
  Value *x = t.input("x", f32({2, 8}, xs));
  Value *s = t.constant("s", f32({2, 2}, {0.1, 0.07, 0.3, 0.013}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {2, 2}, {0, 3, -2, 1}));
  auto block = Argument::ints({1, 4});
  Value *fq = t.op("torchao.fake_quantize_affine.default",
                   {x, block, s, z, DType::I8, int64_t(-8), int64_t(7)}, {}, DType::F32, {2, 8});
  Value *q = t.op("torchao.quantize_affine.default",
                  {x, block, s, z, DType::I8, int64_t(-8), int64_t(7)}, {}, DType::I8, {2, 8});
  Value *dq = t.op("torchao.dequantize_affine.default",
                   {q, block, s, z, DType::I8, int64_t(-8), int64_t(7)}, {}, DType::F32, {2, 8});
  auto r = t.run({fq, dq});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_TRUE(std::get<Tensor>((*r)[0]).equal(std::get<Tensor>((*r)[1])));

  // And a hand-worked one: x = 1.0, s = 0.3, zp = 0, int4:
  //   1/0.3f = 3.3333333f; 1 * 3.3333333 -> round 3; dq = 3 * 0.3f = 0.90000004f
  TestGraph u;
  Value *x1 = u.input("x", f32({1}, {1.0}));
  Value *s1 = u.constant("s", f32({1}, {0.3}));
  Value *f1 =
      u.op("torchao.fake_quantize_affine.default",
           {x1, Argument::ints({1}), s1, Argument::none(), DType::I8, int64_t(-8), int64_t(7)}, {},
           DType::F32, {1});
  EXPECT_EQ(u.run1(f1).getDouble(0), static_cast<double>(3.0f * 0.3f));
}

//===----------------------------------------------------------------------===//
// 4-bit embeddings: nibble orders
//===----------------------------------------------------------------------===//

TEST(QuantNumerics, Int4NibbleOrders) {
  // One row of two bytes: 0x1F, 0xA3.
  Tensor packed = Tensor::fromInts(DType::U8, {1, 2}, {0x1F, 0xA3});
  Tensor scales = f32({1, 1}, {0.5});
  Tensor idx = Tensor::fromInts(DType::I64, {1}, {0});
  {
    // quantized_decomposed.embedding_4bit: even = byte div 16 (HIGH nibble)
    //   0x1F -> even 1 - 8 = -7, odd 15 - 8 = 7; 0xA3 -> 10 - 8 = 2, 3 - 8 = -5
    //   times 0.5 -> [-3.5, 3.5, 1, -2.5]
    TestGraph t;
    Value *w = t.constant("w", packed);
    Value *s = t.constant("s", scales);
    Value *i = t.input("i", idx);
    Value *e = t.op("quantized_decomposed.embedding_4bit.dtype",
                    {w, s, Argument::none(), int64_t(-8), int64_t(7), i}, {{"dtype", DType::F32}},
                    DType::F32, {1, 4});
    EXPECT_EQ(values(t.run1(e)), (std::vector<double>{-3.5, 3.5, 1, -2.5}));
  }
  {
    // et_vk.embedding_q4gsw with is_linear_weight = true: LOW nibble first
    //   0x1F -> 15 - 8 = 7, 1 - 8 = -7; 0xA3 -> 3 - 8 = -5, 10 - 8 = 2
    //   times 0.5 -> [3.5, -3.5, -2.5, 1]
    TestGraph t;
    Value *w = t.constant("w", packed);
    Value *s = t.constant("s", scales);
    Value *i = t.input("i", idx);
    Value *e =
        t.op("et_vk.embedding_q4gsw.default", {w, s, int64_t(4), i, true}, {}, DType::F32, {1, 4});
    EXPECT_EQ(values(t.run1(e)), (std::vector<double>{3.5, -3.5, -2.5, 1}));
  }
  {
    // is_linear_weight = false reads the embedding_4bit (HIGH-first) order.
    TestGraph t;
    Value *w = t.constant("w", packed);
    Value *s = t.constant("s", scales);
    Value *i = t.input("i", idx);
    Value *e =
        t.op("et_vk.embedding_q4gsw.default", {w, s, int64_t(4), i, false}, {}, DType::F32, {1, 4});
    EXPECT_EQ(values(t.run1(e)), (std::vector<double>{-3.5, 3.5, 1, -2.5}));
  }
}

TEST(QuantNumerics, Embedding4bitGroupsAndZeroPoints) {
  // 2 rows, 4 columns, groups of 2: row 1 bytes 0x80, 0x9F -> even/odd
  //   0x80 -> 8 - 8 = 0, 0 - 8 = -8; 0x9F -> 9 - 8 = 1, 15 - 8 = 7
  Tensor packed = Tensor::fromInts(DType::U8, {2, 2}, {0x88, 0x88, 0x80, 0x9F});
  TestGraph t;
  Value *w = t.constant("w", packed);
  Value *s = t.constant("s", f32({2, 2}, {1.0, 1.0, 0.25, 2.0}));
  Value *z = t.constant("z", f32({2, 2}, {0, 0, -4, 1}));
  Value *i = t.input("i", Tensor::fromInts(DType::I64, {2}, {1, 0}));
  Value *e = t.op("quantized_decomposed.embedding_4bit.default",
                  {w, s, z, int64_t(-8), int64_t(7), i}, {}, DType::F32, {2, 4});
  // row 1: group 0 ([0, -8] - (-4)) * 0.25 = [1, -1]; group 1 ([1, 7] - 1) * 2 = [0, 12]
  // row 0: 0x88 -> [0, 0, 0, 0]
  EXPECT_EQ(values(t.run1(e)), (std::vector<double>{1, -1, 0, 12, 0, 0, 0, 0}));
}

TEST(QuantNumerics, EmbeddingByteAnd2bit) {
  // ExecuTorch's Llama export writes these for `-E 8,G` / `-E 2,G`
  // (examples/models/llama/source_transformation/quantize.py,
  // QuantizedGroupEmbedding.forward); their meaning is
  // exir/passes/_quant_patterns_and_replacements.py embedding_byte / embedding_2bit:
  // unpack, dequantize_per_channel_group, aten.embedding.
  Tensor idx = Tensor::fromInts(DType::I64, {2}, {1, 0});
  {
    // embedding_byte: the stored values, groups of 2, f32 zero points.
    //   row 1 = [-128, 127, 3, -3]: g0 ([-128, 127] - 1) * 0.5 = [-64.5, 63],
    //   g1 ([3, -3] - (-1)) * 2 = [8, -4]; row 0 = [0, 1, 2, 4] * 1 - 0
    TestGraph t;
    Value *w = t.constant("w", Tensor::fromInts(DType::I8, {2, 4}, {0, 1, 2, 4, -128, 127, 3, -3}));
    Value *s = t.constant("s", f32({2, 2}, {1.0, 1.0, 0.5, 2.0}));
    Value *z = t.constant("z", f32({2, 2}, {0, 0, 1, -1}));
    Value *i = t.input("i", idx);
    Value *e = t.op("quantized_decomposed.embedding_byte.default",
                    {w, s, z, int64_t(-128), int64_t(127), i}, {}, DType::F32, {2, 4});
    EXPECT_EQ(values(t.run1(e)), (std::vector<double>{-64.5, 63, 8, -4, 0, 1, 2, 4}));
  }
  {
    // embedding_2bit (u8 [V, D/4]): element k of a byte is bits 2k..2k+1, minus 2.
    //   0x1B = 0b00'01'10'11 -> [3, 2, 1, 0] - 2 = [1, 0, -1, -2]
    //   0xE4 = 0b11'10'01'00 -> [0, 1, 2, 3] - 2 = [-2, -1, 0, 1]
    //   per-row scales [0.5, 0.25] (1-D: one group per row), dtype = f16
    TestGraph t;
    Value *w = t.constant("w", Tensor::fromInts(DType::U8, {2, 1}, {0x1B, 0xE4}));
    Value *s = t.constant("s", f32({2}, {0.5, 0.25}));
    Value *i = t.input("i", idx);
    Value *e = t.op("quantized_decomposed.embedding_2bit.dtype",
                    {w, s, Argument::none(), int64_t(-2), int64_t(1), i}, {{"dtype", DType::F16}},
                    DType::F16, {2, 4});
    EXPECT_EQ(values(t.run1(e)), (std::vector<double>{-0.5, -0.25, 0, 0.25, 0.5, 0, -0.5, -1}));
  }
  {
    // embedding_2bit's range is fixed upstream (asserted): a clear error otherwise.
    TestGraph t;
    Value *w = t.constant("w", Tensor::fromInts(DType::U8, {1, 1}, {0}));
    Value *s = t.constant("s", f32({1}, {1.0}));
    Value *i = t.input("i", Tensor::fromInts(DType::I64, {1}, {0}));
    Value *e = t.op("quantized_decomposed.embedding_2bit.default",
                    {w, s, Argument::none(), int64_t(-8), int64_t(7), i}, {}, DType::F32, {1, 4});
    auto r = t.run({e});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(render(r.diags()).find("weight_quant_min == -2"), std::string::npos)
        << render(r.diags());
  }
}

TEST(QuantNumerics, ChooseQParamsPerTensorDynamic) {
  // quantized_decomposed.choose_qparams(_symmetric).tensor, what PT2E's convert writes for
  // a dynamically quantized activation (ExecuTorch VulkanQuantizer
  // get_symmetric_quantization_config(is_dynamic=True): PlaceholderObserver,
  // per_tensor_affine, int8 [-128, 127]; torchao quantization/pt2e/convert.py).
  const double eps = 0x1.0p-23; // torch.finfo(torch.float32).eps
  auto run = [&](const Tensor &x, const char *op, int64_t qmin, int64_t qmax, DType dt) {
    TestGraph t;
    Value *in = t.input("x", x);
    auto outs = t.opN(op, {in, qmin, qmax, eps, dt}, {}, {{DType::F64, {1}}, {DType::I64, {1}}});
    auto r = t.run(outs);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
    if (!r.ok())
      return std::pair<double, int64_t>{0, 0};
    return std::pair<double, int64_t>{std::get<Tensor>((*r)[0]).getDouble(0),
                                      std::get<Tensor>((*r)[1]).getInt(0)};
  };
  Tensor x = f32({4}, {-1.0, 0.5, 2.0, 0.25});
  // affine: scale = f32(3 / 255) = 0.0117647061124444; -1 / scale = -85.0 in f32,
  // zp = -128 - (-85) = -43
  auto [s, zp] = run(x, "quantized_decomposed.choose_qparams.tensor", -128, 127, DType::I8);
  EXPECT_EQ(s, static_cast<double>(3.0f / 255.0f));
  EXPECT_EQ(zp, -43);
  // symmetric: scale = f32(max(1, 2) / 127.5), zp 0 (128 for uint8)
  auto [ss, szp] =
      run(x, "quantized_decomposed.choose_qparams_symmetric.tensor", -128, 127, DType::I8);
  EXPECT_EQ(ss, static_cast<double>(2.0f / 127.5f));
  EXPECT_EQ(szp, 0);
  EXPECT_EQ(
      run(x, "quantized_decomposed.choose_qparams_symmetric.tensor", 0, 255, DType::U8).second,
      128);
  // all zeros: the scale is eps, the zero point qmin
  auto [es, ezp] =
      run(f32({3}, {0, 0, 0}), "quantized_decomposed.choose_qparams.tensor", -128, 127, DType::I8);
  EXPECT_EQ(es, eps);
  EXPECT_EQ(ezp, -128);
  // f16 input: max - min and the division round to f16 (1.000244 -> 1.0, then
  // 1 / 255 -> 0.0039215087890625; in f32 it would be 0.0039225...), then the zero point in
  // f32: -0.300048828125 / 0.0039215087890625 = -76.51 -> -77, zp = -128 + 77 = -51
  auto [hs, hzp] = run(Tensor::fromDoubles(DType::F16, {2}, {-0.3, 0.7}),
                       "quantized_decomposed.choose_qparams.tensor", -128, 127, DType::I8);
  EXPECT_EQ(hs, 0.0039215087890625);
  EXPECT_EQ(hzp, -51);
}

TEST(QuantNumerics, ChooseQParamsPerTensorRejectsBadRanges) {
  // validate_qmin_qmax: the range must include 0 (a clear error, not a crash).
  TestGraph t;
  Value *in = t.input("x", f32({2}, {1, 2}));
  auto outs = t.opN("quantized_decomposed.choose_qparams.tensor",
                    {in, int64_t(1), int64_t(127), 0x1.0p-23, DType::I8}, {},
                    {{DType::F64, {1}}, {DType::I64, {1}}});
  auto r = t.run(outs);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(render(r.diags()).find("must include 0"), std::string::npos) << render(r.diags());
}

//===----------------------------------------------------------------------===//
// et_vk linear ops
//===----------------------------------------------------------------------===//

TEST(QuantNumerics, LinearQ4gswLowNibbleFirstTransposedScales) {
  // W (N=2, K=4) = [[-7, 7, 2, -5], [0, 1, -8, 3]], packed low-first:
  //   byte = ((w_odd + 8) << 4) | (w_even + 8)
  //   row 0: (15 << 4 | 1) = 0xF1, (3 << 4 | 10) = 0x3A
  //   row 1: (9 << 4 | 8) = 0x98, (11 << 4 | 0) = 0xB0
  // scales [N, groups=2] = [[0.5, 1], [2, 0.25]], stored transposed [2, N]
  // and padded to N = 4 with zeros: [[0.5, 2, 0, 0], [1, 0.25, 0, 0]].
  TestGraph t;
  Value *x = t.input("x", f32({1, 4}, {1.0, 2.0, 3.0, 4.0}));
  Value *w = t.constant("w", Tensor::fromInts(DType::U8, {2, 2}, {0xF1, 0x3A, 0x98, 0xB0}));
  Value *s = t.constant("s", f32({2, 4}, {0.5, 2.0, 0, 0, 1.0, 0.25, 0, 0}));
  Value *b = t.constant("b", f32({4}, {0.5, -1.0, 0, 0}));
  Value *y = t.op("et_vk.linear_q4gsw.default", {x, w, s, int64_t(2), b}, {}, DType::F32, {1, 2});
  // dequantized row 0: [-7, 7] * 0.5 = [-3.5, 3.5], [2, -5] * 1 = [2, -5]
  //   x . w0 = -3.5 + 7 + 6 - 20 = -10.5; + 0.5 = -10
  // row 1: [0, 1] * 2 = [0, 2], [-8, 3] * 0.25 = [-2, 0.75]
  //   x . w1 = 0 + 4 - 6 + 3 = 1; - 1 = 0
  EXPECT_EQ(values(t.run1(y)), (std::vector<double>{-10, 0}));
}

TEST(QuantNumerics, LinearQcs4wHighNibbleFirst) {
  // Same W as above packed the legacy way: byte = ((w_even + 8) << 4) | (w_odd + 8)
  //   row 0: (1 << 4 | 15) = 0x1F, (10 << 4 | 3) = 0xA3
  //   row 1: (8 << 4 | 9) = 0x89, (0 << 4 | 11) = 0x0B
  TestGraph t;
  Value *x = t.input("x", f32({1, 4}, {1.0, 2.0, 3.0, 4.0}));
  Value *w = t.constant("w", Tensor::fromInts(DType::U8, {2, 2}, {0x1F, 0xA3, 0x89, 0x0B}));
  Value *s = t.constant("s", f32({2}, {0.5, 2.0}));
  Value *y = t.op("et_vk.linear_qcs4w.default", {x, w, s}, {}, DType::F32, {1, 2});
  // row 0: [-7, 7, 2, -5] * 0.5 -> x . = (-7 + 14 + 6 - 20) * 0.5 = -3.5
  // row 1: [0, 1, -8, 3] * 2   -> x . = (0 + 2 - 24 + 12) * 2 = -20
  EXPECT_EQ(values(t.run1(y)), (std::vector<double>{-3.5, -20}));
}

TEST(QuantNumerics, LinearQ8taQ8cswDequantizesIntActivation) {
  TestGraph t;
  Value *x = t.input("x", Tensor::fromInts(DType::I8, {1, 2}, {10, -6}));
  Value *w = t.constant("w", Tensor::fromInts(DType::I8, {2, 2}, {1, 2, -3, 4}));
  Value *sums = t.constant("sums", Tensor::fromInts(DType::I32, {4}, {3, 1, 0, 0}));
  Value *s = t.constant("s", f32({4}, {0.5, 1.0, 0, 0}));
  Value *y = t.op("et_vk.linear_q8ta_q8csw.default", {x, 0.25, int64_t(2), w, sums, s}, {},
                  DType::F32, {1, 2});
  // x_f = (x - 2) * 0.25 = [2, -2]; w_f = [[0.5, 1], [-3, 4]]
  //   out = [2*0.5 - 2*1, 2*(-3) - 2*4] = [-1, -14]
  EXPECT_EQ(values(t.run1(y)), (std::vector<double>{-1, -14}));
}

// et_vk.q8ta_linear (custom_ops_lib.py): dequantize_per_tensor(x),
// dequantize_per_channel(w), F.linear, + bias[:N], relu if asked, then
// quantize_per_tensor(out, output_scale, output_zero_point, -128, 127, int8).
struct Q8taLinearCase {
  TestGraph t;
  Value *x, *w, *sums, *s, *b;
  Q8taLinearCase(std::vector<int64_t> xShape, std::vector<int64_t> xs) {
    x = t.input("x", Tensor::fromInts(DType::I8, xShape, xs));
    w = t.constant("w",
                   Tensor::fromInts(DType::I8, {3, 4}, {1, 2, 0, 0, -3, 4, 2, 2, 0, 0, 4, -4}));
    sums = t.constant("sums", Tensor::fromInts(DType::I32, {4}, {3, 5, 0, 0}));
    // Padded to a multiple of 4 as upstream's prepacking does; the pad is
    // ignored.
    s = t.constant("s", f32({4}, {0.5, 1.0, 0.25, 0}));
    b = t.constant("b", f32({3}, {0.5, 0, 0.625}));
  }
  Value *op(const char *target, double outScale, int64_t outZp, const char *act,
            std::vector<int64_t> outShape) {
    return t.op(target, {x, 0.25, int64_t(2), w, sums, s, outScale, outZp, b},
                {{"activation", std::string(act)}}, DType::I8, std::move(outShape));
  }
};

// x_f = (x - 2) * 0.25: row 0 [2, -2, 0.5, -0.5], row 1 [0.25] * 4
// w_f = [[0.5, 1, 0, 0], [-3, 4, 2, 2], [0, 0, 1, -1]]
// x_f w_f^T + b: row 0 [-1 + 0.5, -14 + 0, 1 + 0.625] = [-0.5, -14, 1.625]
//                row 1 [0.375 + 0.5, 1.25, 0 + 0.625] = [0.875, 1.25, 0.625]
const std::vector<int64_t> q8taX = {10, -6, 4, 0, 3, 3, 3, 3};

TEST(QuantNumerics, Q8taLinearRequantizesHalfToEven) {
  Q8taLinearCase c({2, 4}, q8taX);
  Value *y = c.op("et_vk.q8ta_linear.default", 0.25, -1, "none", {2, 3});
  // / 0.25: [-2, -56, 6.5], [3.5, 5, 2.5]; ties to even: 6.5 -> 6,
  // 3.5 -> 4, 2.5 -> 2; + (-1): [-3, -57, 5], [3, 4, 1]
  Tensor q = c.t.run1(y);
  EXPECT_EQ(q.dtype(), DType::I8);
  EXPECT_EQ(values(q), (std::vector<double>{-3, -57, 5, 3, 4, 1}));
}

TEST(QuantNumerics, Q8taLinearReluBeforeRequantize) {
  Q8taLinearCase c({2, 4}, q8taX);
  Value *y = c.op("et_vk.q8ta_linear.default", 0.25, -1, "relu", {2, 3});
  // relu: [0, 0, 1.625], [0.875, 1.25, 0.625] -> [-1, -1, 5], [3, 4, 1]: the
  // zero point is added after relu, so negative outputs become -1, not 0.
  EXPECT_EQ(values(c.t.run1(y)), (std::vector<double>{-1, -1, 5, 3, 4, 1}));
}

TEST(QuantNumerics, Q8taLinearSaturates) {
  Q8taLinearCase c({2, 4}, q8taX);
  Value *y = c.op("et_vk.q8ta_linear.default", 0.01, 0, "none", {2, 3});
  // * f32(1 / 0.01) = 100: [-50, -1400, 162.5], [87.5, 125, 62.5]; round
  // half to even, then clamp to [-128, 127]: [-50, -128, 127], [88, 125, 62]
  EXPECT_EQ(values(c.t.run1(y)), (std::vector<double>{-50, -128, 127, 88, 125, 62}));
}

TEST(QuantNumerics, Q8taLinearGemvIsTheSameReference) {
  Q8taLinearCase c({1, 4}, {3, 3, 3, 3});
  Value *y = c.op("et_vk.q8ta_linear_gemv.default", 0.25, -1, "none", {1, 3});
  EXPECT_EQ(values(c.t.run1(y)), (std::vector<double>{3, 4, 1}));
}

TEST(QuantNumerics, Q8taLinearRejectsUnknownActivationAndFloatInput) {
  Q8taLinearCase c({1, 4}, {3, 3, 3, 3});
  auto r = c.t.run({c.op("et_vk.q8ta_linear.default", 0.25, -1, "gelu", {1, 3})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(render(r.diags()).find("activation must be 'none' or 'relu', got 'gelu'"),
            std::string::npos)
      << render(r.diags());
  TestGraph t;
  Value *x = t.input("xf", f32({1, 4}, {1, 2, 3, 4}));
  Value *w = t.constant("w", Tensor::fromInts(DType::I8, {1, 4}, {1, 1, 1, 1}));
  Value *sums = t.constant("sums", Tensor::fromInts(DType::I32, {4}, {4, 0, 0, 0}));
  Value *s = t.constant("s", f32({4}, {1, 0, 0, 0}));
  Value *y = t.op("et_vk.q8ta_linear.default", {x, 0.25, int64_t(0), w, sums, s, 1.0, int64_t(0)},
                  {}, DType::I8, {1, 1});
  auto rf = t.run({y});
  ASSERT_FALSE(rf.ok());
  EXPECT_NE(render(rf.diags()).find("x must be the int8 quantized activation"), std::string::npos)
      << render(rf.diags());
}

TEST(QuantNumerics, QuantizePerChannelGroupRoundsAfterZeroPoint) {
  TestGraph t;
  Value *x = t.input("x", f32({1, 4}, {0.5, -1.5, 0.25, 3.0}));
  Value *s = t.constant("s", f32({2}, {1.0, 0.25}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {2}, {0, 2}));
  Value *q = t.op("quantized_decomposed.quantize_per_channel_group.default",
                  {x, s, z, int64_t(-8), int64_t(7), DType::I8, int64_t(2)}, {}, DType::I8, {1, 4});
  // group 0 (s 1, zp 0): 0.5 -> round(0.5) = 0; -1.5 -> -2
  // group 1 (s 0.25, zp 2): 0.25 * 4 + 2 = 3 -> 3; 3 * 4 + 2 = 14 -> clamp 7
  EXPECT_EQ(values(t.run1(q)), (std::vector<double>{0, -2, 3, 7}));
}

TEST(QuantNumerics, DequantizePerTensorTensorOverload) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::U8, {2}, {0, 255}));
  Value *s = t.constant("s", f32({1}, {0.25}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I64, {1}, {128}));
  Value *d = t.op("quantized_decomposed.dequantize_per_tensor.tensor",
                  {q, s, z, int64_t(0), int64_t(255), DType::U8}, {}, DType::F32, {2});
  // (0 - 128) * 0.25 = -32; (255 - 128) * 0.25 = 31.75
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{-32, 31.75}));
}

TEST(QuantNumerics, TorchaoLegacyNoneDomainIgnoresZeroPoint) {
  TestGraph t;
  Value *q = t.input("q", Tensor::fromInts(DType::I8, {2}, {3, -4}));
  Value *s = t.constant("s", f32({1}, {0.5}));
  Value *z = t.constant("z", Tensor::fromInts(DType::I32, {1}, {100}));
  Value *d = t.op("torchao.dequantize_affine.default",
                  {q, Argument::ints({2}), s, z, DType::I8, int64_t(-128), int64_t(127), "NONE"},
                  {}, DType::F32, {2});
  // NONE: q * s = [1.5, -2] (the zero point 100 is not used)
  EXPECT_EQ(values(t.run1(d)), (std::vector<double>{1.5, -2}));
}

TEST(QuantNumerics, EmbeddingResultDTypeFollowsScales) {
  // embedding_q4gsw computes in f32 and rounds to the scales' dtype (f16):
  //   0x1F low-first -> [7, -7] * 0.1 (f16 0.0999755859375) = 0.6998291015625 in f32
  //   -> f16 0.69970703125 (step 2^-11 in [0.5, 1))
  // embedding_4bit.dtype with dtype=None also takes the scales' dtype.
  Tensor packed = Tensor::fromInts(DType::U8, {1, 1}, {0x1F});
  Tensor scales = Tensor::fromDoubles(DType::F16, {1, 1}, {0.1});
  TestGraph t;
  Value *w = t.constant("w", packed);
  Value *s = t.constant("s", scales);
  Value *i = t.input("i", Tensor::fromInts(DType::I64, {1}, {0}));
  Value *e =
      t.op("et_vk.embedding_q4gsw.default", {w, s, int64_t(2), i, true}, {}, DType::F16, {1, 2});
  Value *e4 = t.op("quantized_decomposed.embedding_4bit.dtype",
                   {w, s, Argument::none(), int64_t(-8), int64_t(7), i}, {}, DType::F16, {1, 2});
  auto r = t.run({e, e4});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])),
            (std::vector<double>{0.69970703125, -0.69970703125}));
  // high-first: [-7, 7] * f16 0.1 -> int8 * f16 computes in f32, rounds to f16
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])),
            (std::vector<double>{-0.69970703125, 0.69970703125}));
}

TEST(QuantNumerics, LinearDq8caQ4gswQuantizesWithItsQParamsAndConsumesWeightSums) {
  // What ET-VK's kernel computes (docs/numerics.md): x quantized per token with
  // input_scales / input_zp, integer group dot products corrected by
  // weight_sums, then float(idot) * (s_m * scale[g, n]) summed over groups.
  // weights (low nibble first, -8): row 0 = [-7, 7, 2, -5], row 1 = [0, 1, -8, 3];
  // group size 2, so the true sums are g0: [0, 1], g1: [-3, -5].
  // scales [G=2, N_pad=4]: g0 = [0.5, 2.0], g1 = [1.0, 0.25].
  auto run = [](const std::vector<int64_t> &sums) {
    TestGraph t;
    Value *x = t.input("x", f32({2, 4}, {1.1, 2.0, 3.0, 4.0, 100.0, -100.0, 0.25, 0.75}));
    Value *is = t.constant("is", f32({2}, {0.5, 0.5}));
    Value *iz = t.constant("iz", Tensor::fromInts(DType::I8, {2}, {1, 1}));
    Value *w = t.constant("w", Tensor::fromInts(DType::U8, {2, 2}, {0xF1, 0x3A, 0x98, 0xB0}));
    Value *ws = t.constant("sums", Tensor::fromInts(DType::I32, {2, 8}, sums));
    Value *s = t.constant("s", f32({2, 4}, {0.5, 2.0, 0, 0, 1.0, 0.25, 0, 0}));
    Value *y = t.op("et_vk.linear_dq8ca_q4gsw.default", {x, is, iz, w, ws, s, int64_t(2)}, {},
                    DType::F32, {2, 2});
    return values(t.run1(y));
  };
  std::vector<int64_t> trueSums = {0, 1, 0, 0, 0, 0, 0, 0, -3, -5, 0, 0, 0, 0, 0, 0};
  // Token 0: x * (1/0.5) + 1 = [3.2 -> 3, 5, 7, 9] (1.1 is quantized: the float
  // input would give -10.85 for row 0).
  //   n0: g0 3*-7 + 5*7 = 14, - 1*0 -> 14 * 0.25 = 3.5; g1 7*2 + 9*-5 = -31, + 3 = -28 * 0.5 = -14
  //   n1: g0 5 - 1 = 4 * 1.0 = 4; g1 -56 + 27 = -29, + 5 = -24 * 0.125 = -3
  // Token 1: [201 -> 127 (saturates), -199 -> -128, 0.5 + 1 (tie: 0.5 rounds to 0) -> 1,
  //           1.5 -> 2 (tie to even) + 1 = 3]
  //   n0: g0 -889 - 896 = -1785 * 0.25 = -446.25; g1 2 - 15 = -13, + 3 = -10 * 0.5 = -5
  //   n1: g0 -128 - 1 = -129 * 1.0; g1 -8 + 9 = 1, + 5 = 6 * 0.125 = 0.75
  EXPECT_EQ(run(trueSums), (std::vector<double>{-10.5, 1, -451.25, -128.25}));
  // Wrong (zero) weight sums change the result: the sums are consumed, not recomputed.
  //   token 0: n0 3.5 + -31 * 0.5 = -12; n1 5 * 1.0 + -29 * 0.125 = 1.375
  std::vector<int64_t> zeroSums(16, 0);
  std::vector<double> wrong = run(zeroSums);
  EXPECT_EQ(wrong[0], -12);
  EXPECT_EQ(wrong[1], 1.375);
}

TEST(QuantNumerics, LinearDq8caQ8cswIsTheOneGroupDq8caKernel) {
  // et_vk.linear_dq8ca_q8csw (executorch 05a4f505 linear_dq8ca_q8csw_tiled.glsl):
  // x quantized per token with input_scales / input_zp, the exact integer dot
  // product with the int8 weight minus zp * weight_sums[n], times
  // (s_m * ws[n]) in f32, + bias. Odd N = 3 with sums and bias padded to 4.
  // weights: row 0 = [-100, 50, 2, -5] (sum -53), row 1 = [127, -128, 0, 1]
  // (sum 0), row 2 = [1, 1, 1, 1] (sum 4); ws = [0.25, 0.5, 2.0];
  // bias = [1, -1, 0.5, pad].
  auto run = [](const std::vector<int64_t> &sums) {
    TestGraph t;
    Value *x = t.input("x", f32({2, 4}, {1.1, 2.0, 3.0, 4.0, 100.0, -100.0, 0.25, 0.75}));
    Value *is = t.constant("is", f32({2, 1}, {0.5, 0.5}));
    Value *iz = t.constant("iz", Tensor::fromInts(DType::I8, {2, 1}, {1, 1}));
    Value *w = t.constant(
        "w", Tensor::fromInts(DType::I8, {3, 4}, {-100, 50, 2, -5, 127, -128, 0, 1, 1, 1, 1, 1}));
    Value *ws = t.constant("sums", Tensor::fromInts(DType::I32, {4}, sums));
    Value *s = t.constant("s", f32({3}, {0.25, 0.5, 2.0}));
    Value *b = t.constant("b", f32({4}, {1.0, -1.0, 0.5, 0.0}));
    Value *y =
        t.op("et_vk.linear_dq8ca_q8csw.default", {x, is, iz, w, ws, s, b}, {}, DType::F32, {2, 3});
    return values(t.run1(y));
  };
  // Token 0: x * (1/0.5) + 1 = [2.2 -> 2 + 1 = 3, 5, 7, 9] (1.1 is quantized).
  //   n0: -300 + 250 + 14 - 45 = -81, + 53 = -28, * 0.125 = -3.5, + 1 = -2.5
  //   n1: 381 - 640 + 9 = -250, * 0.25 = -62.5, - 1 = -63.5
  //   n2: 24 - 4 = 20, * 1.0 = 20, + 0.5 = 20.5
  // Token 1: [201 -> 127 (saturates), -199 -> -128 (saturates), 0.5 (a tie, to
  //           even 0) + 1 = 1, 1.5 (a tie, to even 2) + 1 = 3]
  //   n0: -12700 - 6400 + 2 - 15 = -19113, + 53 = -19060, * 0.125 = -2382.5, + 1
  //   n1: 16129 + 16384 + 3 = 32516, * 0.25 = 8129, - 1 = 8128
  //   n2: 127 - 128 + 1 + 3 = 3, - 4 = -1, + 0.5 = -0.5
  EXPECT_EQ(run({-53, 0, 4, 0}), (std::vector<double>{-2.5, -63.5, 20.5, -2381.5, 8128, -0.5}));
  // The zero-point correction uses the given sums: zero sums give token 0's
  // n0 = -81 * 0.125 + 1 = -9.125 and n2 = 24 + 0.5.
  std::vector<double> wrong = run({0, 0, 0, 0});
  EXPECT_EQ(wrong[0], -9.125);
  EXPECT_EQ(wrong[2], 24.5);
}

TEST(QuantNumerics, LinearDq8caQ8cswScalesOnceInF32) {
  // float(idot) * (s_m * ws[n]): the scale product is rounded to f32 first, then
  // the term (the kernel's fma with a zero accumulator rounds once). x = 1 with
  // s = 0.1f, zp = 0 quantizes to 10; weight 77: idot = 770.
  TestGraph t;
  Value *x = t.input("x", f32({1, 4}, {1.0, 0.0, 0.0, 0.0}));
  Value *is = t.constant("is", f32({1}, {0.1}));
  Value *iz = t.constant("iz", Tensor::fromInts(DType::I8, {1}, {0}));
  Value *w = t.constant("w", Tensor::fromInts(DType::I8, {1, 4}, {77, 0, 0, 0}));
  Value *ws = t.constant("sums", Tensor::fromInts(DType::I32, {4}, {77, 0, 0, 0}));
  Value *s = t.constant("s", f32({1}, {0.3}));
  Value *y =
      t.op("et_vk.linear_dq8ca_q8csw.default", {x, is, iz, w, ws, s}, {}, DType::F32, {1, 1});
  const float scale = 0.1f * 0.3f;
  EXPECT_EQ(values(t.run1(y)), (std::vector<double>{double(770.0f * scale)}));
}

TEST(QuantNumerics, LinearDq8caQ8cswRefusesMalformedOperands) {
  auto run = [](Tensor w, Tensor sums) {
    TestGraph t;
    Value *x = t.input("x", f32({1, 4}, {1.0, 2.0, 3.0, 4.0}));
    Value *is = t.constant("is", f32({1}, {0.1}));
    Value *iz = t.constant("iz", Tensor::fromInts(DType::I8, {1}, {0}));
    Value *wv = t.constant("w", w);
    Value *ws = t.constant("sums", sums);
    Value *s = t.constant("s", f32({4}, {1, 1, 1, 1}));
    Value *y =
        t.op("et_vk.linear_dq8ca_q8csw.default", {x, is, iz, wv, ws, s}, {}, DType::F32, {1, 4});
    auto r = t.run({y});
    return r.ok() ? std::string() : render(r.diags());
  };
  Tensor w = Tensor::fromInts(DType::I8, {4, 4}, std::vector<int64_t>(16, 1));
  EXPECT_EQ(run(w, Tensor::fromInts(DType::I32, {4}, {4, 4, 4, 4})), "");
  EXPECT_NE(run(w, Tensor::fromInts(DType::I32, {2}, {4, 4})).find("weight_sums"),
            std::string::npos);
  EXPECT_NE(run(w, Tensor::fromInts(DType::I32, {1, 4}, {4, 4, 4, 4})).find("1-D"),
            std::string::npos);
  EXPECT_NE(run(Tensor::fromInts(DType::I8, {4, 8}, std::vector<int64_t>(32, 1)),
                Tensor::fromInts(DType::I32, {4}, {4, 4, 4, 4}))
                .find("weights must be int8 [N, 4]"),
            std::string::npos);
}

TEST(QuantNumerics, LinearDq8caQ4gswQuantizesAnF16InputInF16) {
  // torchao's f16 8da4w chain quantizes with an f16 scale in f16: 1.0 / s and
  // x * (1 / s) are each computed in f32 and rounded to f16
  // (quant_primitives.py _quantize_affine_no_dtype_cast). The fused op takes
  // the scale in its dtype and must produce the same int8 values.
  //   s = f16(0.3) = 0.300048828125, 1 / s = 3.33279... -> f16 3.33203125
  //   x0 = -2.55078125:  f16 product -8.5 (a tie) -> -8;  in f32 -8.50122 -> -9
  //   x1 = -1.951171875: f16 product -6.5 (a tie) -> -6;  in f32 -6.50285 -> -7
  //   x2 = 1, x3 = 2: 3.33203125 -> 3 and 6.6640625 -> 7 either way.
  // Weights row 0 = [1, 0, 0, 0], row 1 = [0, 1, 0, 0] (nibble - 8), one group
  // of 4, weight scales 1, sums [1, 1]: output n is (q_n - zp) * s, zp = 3.
  auto run = [](DType scaleDType) {
    TestGraph t;
    Value *x = t.input(
        "x", Tensor::fromDoubles(DType::F16, {1, 4}, {-2.55078125, -1.951171875, 1.0, 2.0}));
    Value *is = t.constant("is", Tensor::fromDoubles(scaleDType, {1}, {0.300048828125}));
    Value *iz = t.constant("iz", Tensor::fromInts(DType::I8, {1}, {3}));
    Value *w = t.constant("w", Tensor::fromInts(DType::U8, {2, 2}, {0x89, 0x88, 0x98, 0x88}));
    Value *ws = t.constant("sums", Tensor::fromInts(DType::I32, {1, 8}, {1, 1, 0, 0, 0, 0, 0, 0}));
    Value *s = t.constant("s", Tensor::fromDoubles(DType::F16, {1, 4}, {1, 1, 0, 0}));
    Value *y = t.op("et_vk.linear_dq8ca_q4gsw.default", {x, is, iz, w, ws, s, int64_t(4)}, {},
                    DType::F16, {1, 2});
    Value *q = t.op("torchao.quantize_affine.default",
                    {x, Argument::ints({1, 4}), is, iz, DType::I8, int64_t(-128), int64_t(127)}, {},
                    DType::I8, {1, 4});
    auto r = t.run({y, q});
    EXPECT_TRUE(r.ok()) << render(r.diags());
    return r.ok() ? std::make_pair(values(std::get<Tensor>((*r)[0])),
                                   values(std::get<Tensor>((*r)[1])))
                  : std::make_pair(std::vector<double>{}, std::vector<double>{});
  };
  auto [y16, q16] = run(DType::F16);
  EXPECT_EQ(q16, (std::vector<double>{-5, -3, 6, 10}));
  // (-5 - 3) * s = -2.400390625 (exact in f16); (-3 - 3) * s = -1.80029296875,
  // an f16 tie -> -1.80078125. Quantized in f32 (q = -6, -4) they would be
  // -9 * s and -7 * s rounded to f16, the f32-scale results below.
  EXPECT_EQ(y16, (std::vector<double>{-2.400390625, -1.80078125}));
  // With an f32 scale torchao computes in f32 (f16 * f32 promotes), and so does
  // the fused op.
  auto [y32, q32] = run(DType::F32);
  EXPECT_EQ(q32, (std::vector<double>{-6, -4, 6, 10}));
  EXPECT_EQ(y32, (std::vector<double>{-2.701171875, -2.099609375}));
}

} // namespace
