//===- KernelsTest.cpp - Reference aten kernels ---------------------------===//
//
// The aten kernels of the reference interpreter, each run through the
// Interpreter on a small graph: broadcasting, type promotion, views over
// strided storage, reductions, softmax stability, attention on a 2x2 case
// worked by hand, matrix products. Expected values are hand-computed
// (arithmetic in the comments); transcendental results use a tolerance of a
// few ulps because libm and PyTorch's vectorized exp/erf/tanh may differ in
// the last bit.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace graft;
using graft::testing::f32;
using graft::testing::TestGraph;
using graft::testing::values;

namespace {

void expectNear(const std::vector<double> &got, const std::vector<double> &want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Kernels, BroadcastingAdd) {
  TestGraph t;
  Value *a = t.input("a", f32({2, 1}, {10, 20}));
  Value *b = t.input("b", f32({3}, {1, 2, 3}));
  Value *c = t.op("aten.add.Tensor", {a, b}, {{"alpha", 2.0}}, DType::F32, {2, 3});
  // a + 2 * b, [2, 1] with [3] -> [2, 3]
  EXPECT_EQ(values(t.run1(c)), (std::vector<double>{12, 14, 16, 22, 24, 26}));
}

TEST(Kernels, TypePromotion) {
  // int8 dimensioned tensor + int64 0-dim tensor stays int8 (and wraps):
  //   100 + 100 = 200 -> int8 -56
  {
    TestGraph t;
    Value *a = t.input("a", Tensor::fromInts(DType::I8, {2}, {100, -1}));
    Value *b = t.input("b", Tensor::fromInts(DType::I64, {}, {100}));
    Value *c = t.op("aten.add.Tensor", {a, b}, {}, DType::I8, {2});
    EXPECT_EQ(values(t.run1(c)), (std::vector<double>{-56, 99}));
  }
  // int32 tensor * f32 0-dim tensor: a higher category wins -> f32
  {
    TestGraph t;
    Value *a = t.input("a", Tensor::fromInts(DType::I32, {2}, {3, -4}));
    Value *b = t.input("b", Tensor::fromDoubles(DType::F32, {}, {0.5}));
    Value *c = t.op("aten.mul.Tensor", {a, b}, {}, DType::F32, {2});
    EXPECT_EQ(values(t.run1(c)), (std::vector<double>{1.5, -2}));
  }
  // f16 with bf16 promotes to f32: 1/3 in f16 = 0.333251953125,
  // in bf16 = 0.333984375; the f32 sum is 0.667236328125
  {
    TestGraph t;
    Value *a = t.input("a", Tensor::fromDoubles(DType::F16, {1}, {1.0 / 3}));
    Value *b = t.input("b", Tensor::fromDoubles(DType::BF16, {1}, {1.0 / 3}));
    Value *c = t.op("aten.add.Tensor", {a, b}, {}, DType::F32, {1});
    EXPECT_EQ(values(t.run1(c)), (std::vector<double>{0.667236328125}));
  }
  // integer true division gives f32: 7 / 2 = 3.5
  {
    TestGraph t;
    Value *a = t.input("a", Tensor::fromInts(DType::I64, {1}, {7}));
    Value *b = t.input("b", Tensor::fromInts(DType::I64, {1}, {2}));
    Value *c = t.op("aten.div.Tensor", {a, b}, {}, DType::F32, {1});
    EXPECT_EQ(values(t.run1(c)), (std::vector<double>{3.5}));
  }
  // A Python float does not promote a bf16 tensor: bf16 * 0.1 stays bf16,
  // computed as float(x) * 0.1f and rounded once: 3 * 0.1f = 0.3000000045
  // -> bf16 0.30078125
  {
    TestGraph t;
    Value *a = t.input("a", Tensor::fromDoubles(DType::BF16, {1}, {3.0}));
    Value *c = t.op("aten.mul.Scalar", {a, 0.1}, {}, DType::BF16, {1});
    EXPECT_EQ(values(t.run1(c)), (std::vector<double>{0.30078125}));
  }
  // ... but a Python float does promote an integer tensor to f32.
  {
    TestGraph t;
    Value *a = t.input("a", Tensor::fromInts(DType::I32, {1}, {3}));
    Value *c = t.op("aten.add.Scalar", {a, 0.25}, {}, DType::F32, {1});
    EXPECT_EQ(values(t.run1(c)), (std::vector<double>{3.25}));
  }
}

TEST(Kernels, HalfComputesInF32AndRoundsOnce) {
  // f16: 2049 is not representable (step 2 above 2048); 2048 + 1 computed in
  // f32 = 2049, rounded once to f16 -> 2048 (ties to even).
  // 2048 + 3 = 2051 -> 2052.
  TestGraph t;
  Value *a = t.input("a", Tensor::fromDoubles(DType::F16, {2}, {2048, 2048}));
  Value *b = t.input("b", Tensor::fromDoubles(DType::F16, {2}, {1, 3}));
  Value *c = t.op("aten.add.Tensor", {a, b}, {}, DType::F16, {2});
  EXPECT_EQ(values(t.run1(c)), (std::vector<double>{2048, 2052}));
}

TEST(Kernels, DivisionRoundingModes) {
  TestGraph t;
  Value *a = t.input("a", Tensor::fromInts(DType::I64, {2}, {-7, 7}));
  Value *b = t.input("b", Tensor::fromInts(DType::I64, {2}, {2, 2}));
  Value *tr = t.op("aten.div.Tensor_mode", {a, b}, {{"rounding_mode", "trunc"}}, DType::I64, {2});
  Value *fl = t.op("aten.div.Tensor_mode", {a, b}, {{"rounding_mode", "floor"}}, DType::I64, {2});
  Value *x = t.input("x", f32({2}, {-7.5, 7.5}));
  Value *y = t.input("y", f32({2}, {2, -2}));
  Value *ff = t.op("aten.div.Tensor_mode", {x, y}, {{"rounding_mode", "floor"}}, DType::F32, {2});
  auto r = t.run({tr, fl, ff});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // -7 / 2 = -3.5: trunc -3, floor -4; 7 / 2 = 3.5: 3 and 3
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{-3, 3}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{-4, 3}));
  // -7.5 / 2 = -3.75 -> -4; 7.5 / -2 = -3.75 -> -4
  EXPECT_EQ(values(std::get<Tensor>((*r)[2])), (std::vector<double>{-4, -4}));
}

TEST(Kernels, ViewsOverStridedStorage) {
  // x = [[0, 1, 2], [3, 4, 5]]
  TestGraph t;
  Value *x = t.input("x", f32({2, 3}, {0, 1, 2, 3, 4, 5}));
  Value *tt = t.op("aten.t.default", {x}, {}, DType::F32, {3, 2});
  // x.t() = [[0, 3], [1, 4], [2, 5]] (strides (1, 3)); reshape copies
  Value *flat = t.op("aten.reshape.default", {tt, Argument::ints({6})}, {}, DType::F32, {6});
  // slice rows 0..3 step 2 of x.t() -> [[0, 3], [2, 5]]
  Value *sl = t.op("aten.slice.Tensor", {tt, int64_t(0), int64_t(0), int64_t(3), int64_t(2)}, {},
                   DType::F32, {2, 2});
  // select column 1 of that -> [3, 5]
  Value *se = t.op("aten.select.int", {sl, int64_t(1), int64_t(1)}, {}, DType::F32, {2});
  // expand [2] -> [2, 2] with stride 0, then permute_copy swaps to [[3, 3], [5, 5]]
  Value *ex = t.op("aten.expand.default", {se, Argument::ints({2, 2})}, {}, DType::F32, {2, 2});
  Value *pc =
      t.op("aten.permute_copy.default", {ex, Argument::ints({1, 0})}, {}, DType::F32, {2, 2});
  Value *us = t.op("aten.unsqueeze.default", {se, int64_t(0)}, {}, DType::F32, {1, 2});
  Value *sq = t.op("aten.squeeze.dims", {us, Argument::ints({0})}, {}, DType::F32, {2});
  Value *tr = t.op("aten.transpose.int", {x, int64_t(0), int64_t(-1)}, {}, DType::F32, {3, 2});
  Value *ca = t.op("aten.cat.default", {Argument::List{x, x}, int64_t(0)}, {}, DType::F32, {4, 3});
  auto r = t.run({flat, sl, se, pc, sq, tr, ca});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  auto v = [&](int i) { return values(std::get<Tensor>((*r)[static_cast<std::size_t>(i)])); };
  EXPECT_EQ(v(0), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(v(1), (std::vector<double>{0, 3, 2, 5}));
  EXPECT_EQ(v(2), (std::vector<double>{3, 5}));
  EXPECT_EQ(v(3), (std::vector<double>{3, 3, 5, 5}));
  EXPECT_EQ(v(4), (std::vector<double>{3, 5}));
  EXPECT_EQ(v(5), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(v(6), (std::vector<double>{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}));
}

TEST(Kernels, ToCopyTruncatesAndRounds) {
  TestGraph t;
  Value *x = t.input("x", f32({4}, {-1.7, 2.9, 1.00390625, 300.0}));
  Value *i = t.op("aten._to_copy.default", {x}, {{"dtype", DType::I8}}, DType::I8, {4});
  Value *b = t.op("aten._to_copy.default", {x}, {{"dtype", DType::BF16}}, DType::BF16, {4});
  auto r = t.run({i, b});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // float -> int truncates toward zero, then wraps: 300 -> 44
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{-1, 2, 1, 44}));
  // bf16 keeps 8 significant bits: -1.7 -> -1.703125, 2.9 -> 2.90625,
  // 1.00390625 = 1 + 2^-8 is a tie between 1 and 1.0078125 -> 1 (even), 300 -> 300
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{-1.703125, 2.90625, 1, 300}));
}

TEST(Kernels, Reductions) {
  TestGraph t;
  Value *x = t.input("x", f32({2, 3}, {1, 2, 3, 4, 5, 9}));
  Value *s = t.op("aten.sum.dim_IntList", {x, Argument::ints({1})}, {}, DType::F32, {2});
  Value *m = t.op("aten.mean.dim", {x, Argument::ints({0}), true}, {}, DType::F32, {1, 3});
  Value *mx = t.op("aten.amax.default", {x, Argument::ints({-1})}, {}, DType::F32, {2});
  Value *mn = t.op("aten.amin.default", {x}, {}, DType::F32, {});
  Value *h = t.input("h", Tensor::fromDoubles(DType::BF16, {3}, {1, 2, 2}));
  Value *hm = t.op("aten.mean.dim", {h, Argument::ints({0})}, {}, DType::BF16, {});
  auto r = t.run({s, m, mx, mn, hm});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{6, 18}));
  // (1 + 4) / 2, (2 + 5) / 2, (3 + 9) / 2
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{2.5, 3.5, 6}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[2])), (std::vector<double>{3, 9}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[3])), (std::vector<double>{1}));
  // bf16 mean: sum 5 in f32, / 3 = 1.6666666 in f32, rounded once to bf16:
  // 1.1010101|01...b -> 1.1010101b = 1.6640625
  EXPECT_EQ(values(std::get<Tensor>((*r)[4])), (std::vector<double>{1.6640625}));
}

TEST(Kernels, SoftmaxIsStable) {
  TestGraph t;
  Value *x = t.input("x", f32({2, 3}, {1000, 1001, 1002, -1e30f, 0, -1e30f}));
  Value *s = t.op("aten.softmax.int", {x, int64_t(-1)}, {}, DType::F32, {2, 3});
  Value *h = t.input("h", Tensor::fromDoubles(DType::BF16, {2}, {0, 0}));
  Value *hs = t.op("aten._softmax.default", {h, int64_t(0), true}, {}, DType::F32, {2});
  auto r = t.run({s, hs});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // exp(x - max) = [e^-2, e^-1, 1] / (1 + e^-1 + e^-2)
  //   = [0.0900305732, 0.2447284711, 0.6652409558] (no overflow from e^1000)
  // row 1: the huge negatives underflow to 0 -> [0, 1, 0]
  expectNear(values(std::get<Tensor>((*r)[0])), {0.0900305732, 0.2447284711, 0.6652409558, 0, 1, 0},
             2e-7);
  // half_to_float: bf16 in, f32 out, [0.5, 0.5]
  EXPECT_EQ(std::get<Tensor>((*r)[1]).dtype(), DType::F32);
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{0.5, 0.5}));
}

TEST(Kernels, ScaledDotProductAttention2x2) {
  // q = k = I (2x2), v = [[1, 2], [3, 4]], scale = 1 (sqrt(1) scales q and k)
  //   scores = q k^T = I; softmax rows: [p, 1 - p] and [1 - p, p], p = e / (1 + e)
  //   = 0.7310585786; out row 0 = p [1, 2] + (1 - p) [3, 4] = [3 - 2p, 4 - 2p]
  //   = [1.5378828427, 2.5378828427]; row 1 = [1 + 2p, 2 + 2p] = [2.4621171573, 3.4621171573]
  // causal: row 0 sees only key 0 -> [1, 2]; row 1 unchanged.
  // bool mask [[True, False], [True, True]] is the same as causal here.
  TestGraph t;
  Value *q = t.input("q", f32({1, 2, 2}, {1, 0, 0, 1}));
  Value *v = t.input("v", f32({1, 2, 2}, {1, 2, 3, 4}));
  Value *o = t.op("aten.scaled_dot_product_attention.default", {q, q, v}, {{"scale", 1.0}},
                  DType::F32, {1, 2, 2});
  Value *c = t.op("aten.scaled_dot_product_attention.default",
                  {q, q, v, Argument::none(), 0.0, true}, {{"scale", 1.0}}, DType::F32, {1, 2, 2});
  Value *m = t.constant("m", Tensor::fromInts(DType::Bool, {2, 2}, {1, 0, 1, 1}));
  Value *mm = t.op("aten.scaled_dot_product_attention.default", {q, q, v, m}, {{"scale", 1.0}},
                   DType::F32, {1, 2, 2});
  // default scale 1/sqrt(2): scores = diag(0.7071068) ; p = 1 / (1 + e^-0.7071068)
  //   = 0.6697615493; row 0 = [3 - 2p, 4 - 2p] = [1.6604769014, 2.6604769014]
  Value *d =
      t.op("aten.scaled_dot_product_attention.default", {q, q, v}, {}, DType::F32, {1, 2, 2});
  auto r = t.run({o, c, mm, d});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  expectNear(values(std::get<Tensor>((*r)[0])),
             {1.5378828427, 2.5378828427, 2.4621171573, 3.4621171573}, 1e-6);
  expectNear(values(std::get<Tensor>((*r)[1])), {1, 2, 2.4621171573, 3.4621171573}, 1e-6);
  expectNear(values(std::get<Tensor>((*r)[2])), {1, 2, 2.4621171573, 3.4621171573}, 1e-6);
  std::vector<double> row0 = values(std::get<Tensor>((*r)[3]));
  row0.resize(2);
  expectNear(row0, {1.6604769014, 2.6604769014}, 1e-6);
}

TEST(Kernels, MatrixProducts) {
  TestGraph t;
  Value *x = t.input("x", f32({2, 2}, {1, 2, 3, 4}));
  Value *w = t.constant("w", f32({3, 2}, {1, 0, 0, 1, 1, 1}));
  Value *b = t.constant("b", f32({3}, {0.5, -0.5, 0}));
  Value *lin = t.op("aten.linear.default", {x, w, b}, {}, DType::F32, {2, 3});
  // x @ w.T = [[1, 2, 3], [3, 4, 7]] + b = [[1.5, 1.5, 3], [3.5, 3.5, 7]]
  Value *wt = t.op("aten.t.default", {w}, {}, DType::F32, {2, 3});
  Value *am =
      t.op("aten.addmm.default", {b, x, wt}, {{"beta", 2.0}, {"alpha", 0.5}}, DType::F32, {2, 3});
  // 0.5 * [[1, 2, 3], [3, 4, 7]] + 2 * b = [[1.5, 0, 1.5], [2.5, 1, 3.5]]
  Value *bx = t.op("aten.unsqueeze.default", {x, int64_t(0)}, {}, DType::F32, {1, 2, 2});
  Value *bm = t.op("aten.bmm.default", {bx, bx}, {}, DType::F32, {1, 2, 2});
  // [[1, 2], [3, 4]]^2 = [[7, 10], [15, 22]]
  Value *vec = t.input("vec", f32({2}, {1, -1}));
  Value *mv = t.op("aten.matmul.default", {x, vec}, {}, DType::F32, {2});
  // [1 - 2, 3 - 4] = [-1, -1]
  Value *wi = t.constant("wi", Tensor::fromInts(DType::I8, {2, 2}, {1, 2, 3, 4}));
  Value *sc = t.constant("sc", f32({2}, {0.5, 2}));
  Value *w8 = t.op("aten._weight_int8pack_mm.default", {x, wi, sc}, {}, DType::F32, {2, 2});
  // x @ wi.T = [[5, 11], [11, 25]] * [0.5, 2] = [[2.5, 22], [5.5, 50]]
  auto r = t.run({lin, am, bm, mv, w8});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{1.5, 1.5, 3, 3.5, 3.5, 7}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{1.5, 0, 1.5, 2.5, 1, 3.5}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[2])), (std::vector<double>{7, 10, 15, 22}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[3])), (std::vector<double>{-1, -1}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[4])), (std::vector<double>{2.5, 22, 5.5, 50}));
}

TEST(Kernels, EmbeddingAndFull) {
  TestGraph t;
  Value *w = t.constant("w", f32({3, 2}, {0, 1, 10, 11, 20, 21}));
  Value *i = t.input("i", Tensor::fromInts(DType::I64, {2, 2}, {2, 0, 1, 1}));
  Value *e = t.op("aten.embedding.default", {w, i}, {}, DType::F32, {2, 2, 2});
  Value *f = t.op("aten.full.default", {Argument::ints({2}), 1.5}, {{"dtype", DType::F16}},
                  DType::F16, {2});
  auto r = t.run({e, f});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{20, 21, 0, 1, 10, 11, 10, 11}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{1.5, 1.5}));
}

TEST(Kernels, Activations) {
  TestGraph t;
  Value *x = t.input("x", f32({3}, {1.0, -0.5, std::numeric_limits<double>::quiet_NaN()}));
  Value *g = t.op("aten.gelu.default", {x}, {}, DType::F32, {3});
  Value *gt = t.op("aten.gelu.default", {x}, {{"approximate", "tanh"}}, DType::F32, {3});
  Value *si = t.op("aten.silu.default", {x}, {}, DType::F32, {3});
  Value *re = t.op("aten.relu.default", {x}, {}, DType::F32, {3});
  Value *sg = t.op("aten.sigmoid.default", {x}, {}, DType::F32, {3});
  Value *rs = t.op("aten.rsqrt.default", {x}, {}, DType::F32, {3});
  auto r = t.run({g, gt, si, re, sg, rs});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  auto v = [&](int i) { return values(std::get<Tensor>((*r)[static_cast<std::size_t>(i)])); };
  // gelu(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.8413447461; gelu(-0.5) = -0.1542687694
  expectNear({v(0)[0], v(0)[1]}, {0.8413447461, -0.1542687694}, 2e-7);
  // tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  expectNear({v(1)[0], v(1)[1]}, {0.8411919906, -0.1542859972}, 2e-7);
  // silu = x sigmoid(x): 0.7310585786, -0.5 * 0.3775406688 = -0.1887703344
  expectNear({v(2)[0], v(2)[1]}, {0.7310585786, -0.1887703344}, 2e-7);
  // relu keeps NaN
  EXPECT_EQ(v(3)[0], 1);
  EXPECT_EQ(v(3)[1], 0);
  EXPECT_TRUE(std::isnan(v(3)[2]));
  expectNear({v(4)[0], v(4)[1]}, {0.7310585786, 0.3775406688}, 2e-7);
  EXPECT_EQ(v(5)[0], 1);
  EXPECT_TRUE(std::isnan(v(5)[1]));
}

// hardtanh is clamp_out with both bounds (Activation.cpp hardtanh_out): the
// min first, so inverted bounds give the max; NaN stays NaN and a NaN bound
// fills with NaN; an integral self truncates the bounds and keeps its dtype.
TEST(Kernels, Hardtanh) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TestGraph t;
  Value *x = t.input("x", f32({4}, {-2.0, 0.5, 3.0, nan}));
  Value *i = t.input("i", Tensor::fromDoubles(DType::I32, {3}, {-5, 1, 5}));
  Value *d = t.op("aten.hardtanh.default", {x}, {}, DType::F32, {4});
  Value *b = t.op("aten.hardtanh.default", {x, 0.0, 6.0}, {}, DType::F32, {4});
  Value *inv = t.op("aten.hardtanh.default", {x, 2.0, 1.0}, {}, DType::F32, {4});
  Value *nb = t.op("aten.hardtanh.default", {x, nan, 1.0}, {}, DType::F32, {4});
  Value *it = t.op("aten.hardtanh.default", {i, -1.5, 2.7}, {}, DType::I32, {3});
  auto r = t.run({d, b, inv, nb, it});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  auto v = [&](int k) { return values(std::get<Tensor>((*r)[static_cast<std::size_t>(k)])); };
  expectNear({v(0)[0], v(0)[1], v(0)[2]}, {-1.0, 0.5, 1.0}, 0);
  EXPECT_TRUE(std::isnan(v(0)[3]));
  expectNear({v(1)[0], v(1)[1], v(1)[2]}, {0.0, 0.5, 3.0}, 0);
  expectNear({v(2)[0], v(2)[1], v(2)[2]}, {1.0, 1.0, 1.0}, 0);
  for (double e : v(3))
    EXPECT_TRUE(std::isnan(e));
  EXPECT_EQ(std::get<Tensor>((*r)[4]).dtype(), DType::I32);
  expectNear(v(4), {-1, 1, 2}, 0); // bounds truncated to -1 and 2

  TestGraph bad;
  Value *bx = bad.input("b", Tensor::fromDoubles(DType::Bool, {2}, {0, 1}));
  auto e = bad.run({bad.op("aten.hardtanh.default", {bx}, {}, DType::Bool, {2})});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(render(e.diags()).find("Bool inputs not supported for hardtanh"), std::string::npos);
  TestGraph neg;
  Value *u = neg.input("u", Tensor::fromDoubles(DType::U8, {2}, {0, 9}));
  e = neg.run({neg.op("aten.hardtanh.default", {u, int64_t(-1), int64_t(3)}, {}, DType::U8, {2})});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(render(e.diags()).find("unsigned type with negative limits"), std::string::npos);
}

// repeat (TensorShape.cpp): self padded with leading 1s, each dim tiled;
// the copies of ExecuTorch's RemoveRedundantOpsTransform list.
TEST(Kernels, RepeatAndCopies) {
  TestGraph t;
  Value *x = t.input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  Value *self = t.input("self", f32({2, 3}, {9, 9, 9, 9, 9, 9}));
  Value *h = t.input("h", Tensor::fromDoubles(DType::BF16, {3}, {1.5, -2, 0.25}));
  Value *rep =
      t.op("aten.repeat.default", {x, Argument::ints({2, 1, 2})}, {}, DType::F32, {2, 2, 6});
  Value *zero = t.op("aten.repeat.default", {x, Argument::ints({0, 1})}, {}, DType::F32, {0, 3});
  Value *cp = t.op("aten.copy.default", {self, h}, {}, DType::F32, {2, 3});
  Value *lf = t.op("aten.lift_fresh_copy.default", {x}, {}, DType::F32, {2, 3});
  Value *ac = t.op("aten.alias_copy.default", {x}, {}, DType::F32, {2, 3});
  Value *cd = t.op("dim_order_ops._clone_dim_order.default", {x},
                   {{"dim_order", Argument::ints({0, 1})}}, DType::F32, {2, 3});
  auto r = t.run({rep, zero, cp, lf, ac, cd});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  auto tensor = [&](int k) { return std::get<Tensor>((*r)[static_cast<std::size_t>(k)]); };
  EXPECT_EQ(tensor(0).sizes(), (std::vector<int64_t>{2, 2, 6}));
  std::vector<double> rows = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
  std::vector<double> want = rows;
  want.insert(want.end(), rows.begin(), rows.end());
  expectNear(values(tensor(0)), want, 0);
  EXPECT_EQ(tensor(1).sizes(), (std::vector<int64_t>{0, 3}));
  // copy: src broadcast over self's rows and converted to f32; self unread.
  expectNear(values(tensor(2)), {1.5, -2, 0.25, 1.5, -2, 0.25}, 0);
  for (int k = 3; k < 6; ++k)
    expectNear(values(tensor(k)), {1, 2, 3, 4, 5, 6}, 0);

  TestGraph neg;
  Value *nx = neg.input("x", f32({2}, {1, 2}));
  auto e =
      neg.run({neg.op("aten.repeat.default", {nx, Argument::ints({-1})}, {}, DType::F32, {2})});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(render(e.diags()).find("negative dimension"), std::string::npos);
}

TEST(Kernels, RmsNormAndRotaryEmbedding) {
  TestGraph t;
  Value *x = t.input("x", f32({1, 2}, {3, 4}));
  Value *w = t.constant("w", f32({2}, {1, 2}));
  Value *n = t.op("et_vk.rms_norm.default", {x, w, 0.0}, {}, DType::F32, {1, 2});
  // mean(x^2) = (9 + 16) / 2 = 12.5; rsqrt = 0.28284271; x * that * w
  //   = [0.84852814, 2.26274170]
  // rope: xq [1, 1, 1, 4] pairs (1, 2), (3, 4); cos = [0, 1], sin = [1, 0]
  //   pair 0 rotates by 90 degrees: (1*0 - 2*1, 1*1 + 2*0) = (-2, 1)
  //   pair 1 is unchanged: (3, 4)
  Value *q = t.input("q", f32({1, 1, 1, 4}, {1, 2, 3, 4}));
  Value *k = t.input("k", f32({1, 1, 2, 4}, {1, 0, 0, 1, 2, 2, 2, 2}));
  Value *c = t.constant("c", f32({1, 2}, {0, 1}));
  Value *s = t.constant("s", f32({1, 2}, {1, 0}));
  auto rope = t.opN("et_vk.apply_rotary_emb.default", {q, k, c, s}, {},
                    {{DType::F32, {1, 1, 1, 4}}, {DType::F32, {1, 1, 2, 4}}});
  auto r = t.run({n, rope[0], rope[1]});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  expectNear(values(std::get<Tensor>((*r)[0])), {0.848528137, 2.2627417}, 1e-6);
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{-2, 1, 3, 4}));
  // k head 0: (1, 0) -> (0, 1); (0, 1) unchanged. head 1: (2, 2) -> (-2, 2); (2, 2)
  EXPECT_EQ(values(std::get<Tensor>((*r)[2])), (std::vector<double>{0, 1, 0, 1, -2, 2, 2, 2}));
}

// et_vk.swiglu (executorch backends/vulkan/patterns/swiglu.py): silu(gate)
// = gate / (1 + exp(-gate)) in f32, times up in f32, rounded once to the
// dtype. Expected values are that formula in float32 with exp correctly
// rounded (exp(20) = 485165184 in f32).
TEST(Kernels, Swiglu) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  TestGraph t;
  Value *g = t.input("g", f32({12}, {0, 1, -1, 2, 100, -100, inf, -inf, nan, -20, 3, 0}));
  Value *u = t.input("u", f32({12}, {5, 3, 2, -0.5, 3, 3, 2, 2, 1, 7, inf, inf}));
  Value *s = t.op("et_vk.swiglu.default", {g, u}, {}, DType::F32, {12});
  // f16: silu(0.126708984375) * 7 = 0.47144... rounds once to 0.471435546875;
  // silu rounded to f16 first (the decomposed graph) would give 0.4716796875.
  // 300 * silu(300) overflows f16 to inf. up [2] broadcasts against gate [2, 2].
  Value *gh = t.input("gh", Tensor::fromDoubles(DType::F16, {2, 2}, {0.126708984375, 300, 1, -1}));
  Value *uh = t.input("uh", Tensor::fromDoubles(DType::F16, {2}, {7, 300}));
  Value *h = t.op("et_vk.swiglu.default", {gh, uh}, {}, DType::F16, {2, 2});
  auto r = t.run({s, h});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  std::vector<double> got = values(std::get<Tensor>((*r)[0]));
  // -inf / (1 + exp(inf)) and 0 * inf are NaN, as in aten.silu / aten.mul.
  std::vector<double> want = {0.0,
                              2.193175792694092,
                              -0.5378828644752502,
                              -0.8807970285415649,
                              300.0,
                              -0.0,
                              inf,
                              nan,
                              nan,
                              -2.885615231207339e-07,
                              inf,
                              nan};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
      continue;
    }
    EXPECT_EQ(got[i], want[i]) << i;
    EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
  }
  // silu(1) * 7 = 5.117... -> 5.1171875; silu(-1) * 300 = -80.68... -> -80.6875.
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])),
            (std::vector<double>{0.471435546875, inf, 5.1171875, -80.6875}));

  TestGraph bad;
  Value *bg = bad.input("g", Tensor::fromDoubles(DType::F16, {2}, {1, 2}));
  Value *bu = bad.input("u", f32({2}, {1, 2}));
  auto e = bad.run({bad.op("et_vk.swiglu.default", {bg, bu}, {}, DType::F32, {2})});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(render(e.diags()).find("share one dtype"), std::string::npos);
}

// et_vk.apply_rotary_emb_hf (ExecuTorch backends/vulkan/custom_ops_lib.py
// apply_rotary_emb_hf_impl): rows start_pos.. of the tables, rotate_half on
// the first R = 4 of head_dim 6, the last 2 passed through.
TEST(Kernels, RotaryEmbeddingHf) {
  TestGraph t;
  Value *q = t.input("q", f32({1, 2, 1, 6}, {1, 2, 3, 4, 7, 8, 1, 1, 2, 2, 9, 10}));
  Value *k = t.input("k", f32({1, 2, 1, 6}, {2, 0, 0, 0, 5, 6, 0, 1, 0, 0, -1, -2}));
  // Row 0 must not be read (start_pos = 1).
  Value *c = t.constant("c", f32({3, 4}, {5, 5, 5, 5, 0, 1, 0, 1, 1, 0, 2, 0.5}));
  Value *s = t.constant("s", f32({3, 4}, {5, 5, 5, 5, 1, 0, 1, 0, 0, 1, 0.5, 3}));
  auto rope = t.opN("et_vk.apply_rotary_emb_hf.default", {q, k, c, s, int64_t(1)}, {},
                    {{DType::F32, {1, 2, 1, 6}}, {DType::F32, {1, 2, 1, 6}}});
  auto r = t.run({rope[0], rope[1]});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  // q, position 0 (row 1: cos [0, 1, 0, 1], sin [1, 0, 1, 0]): rotate_half([1, 2, 3, 4])
  //   = [-3, -4, 1, 2]; x * cos + that * sin = [-3, 2, 1, 4], then [7, 8].
  // q, position 1 (row 2: cos [1, 0, 2, 0.5], sin [0, 1, 0.5, 3]): rotate_half([1, 1, 2, 2])
  //   = [-2, -2, 1, 1]; [1 + 0, 0 - 2, 4 + 0.5, 1 + 3] = [1, -2, 4.5, 4], then [9, 10].
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])),
            (std::vector<double>{-3, 2, 1, 4, 7, 8, 1, -2, 4.5, 4, 9, 10}));
  // k: rotate_half([2, 0, 0, 0]) = [0, 0, 2, 0] -> [0, 0, 2, 0]; rotate_half([0, 1, 0, 0])
  //   = [0, 0, 0, 1] -> [0, 0, 0, 3].
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])),
            (std::vector<double>{0, 0, 2, 0, 5, 6, 0, 0, 0, 3, -1, -2}));

  // start_pos 2 leaves one row for two positions: a diagnostic, not a broadcast.
  TestGraph t2;
  Value *q2 = t2.input("q", f32({1, 2, 1, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  Value *c2 = t2.constant("c", f32({3, 4}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
  auto bad = t2.opN("et_vk.apply_rotary_emb_hf.default", {q2, q2, c2, c2, int64_t(2)}, {},
                    {{DType::F32, {1, 2, 1, 4}}, {DType::F32, {1, 2, 1, 4}}});
  auto e = t2.run({bad[0]});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(render(e.diags()).find("freqs rows [2, 4)"), std::string::npos) << render(e.diags());
}

TEST(Kernels, SymbolicScalars) {
  TestGraph t;
  Value *x = t.input("x", Tensor::fromInts(DType::I64, {3}, {5, 6, 7}));
  Node *sz = t.g.createNode("aten.sym_size.int", {x, int64_t(0)}, {},
                            {{"n", ValueKind::SymInt, TensorProto()}});
  Value *one = t.op("aten.select.int", {x, int64_t(0), int64_t(2)}, {}, DType::I64, {});
  Node *item = t.g.createNode("aten._local_scalar_dense.default", {one}, {},
                              {{"u0", ValueKind::SymInt, TensorProto()}});
  t.g.createNode("aten.sym_constrain_range_for_size.default", {item->output()},
                 {{"min", int64_t(0)}, {"max", int64_t(100)}}, {});
  Node *sel = t.g.createNode("et_vk.select_as_symint.default", {x, int64_t(0), int64_t(1)}, {},
                             {{"u1", ValueKind::SymInt, TensorProto()}});
  auto r = t.run({sz->output(), item->output(), sel->output()});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(std::get<int64_t>((*r)[0]), 3);
  EXPECT_EQ(std::get<int64_t>((*r)[1]), 7);
  EXPECT_EQ(std::get<int64_t>((*r)[2]), 6);
}

} // namespace
