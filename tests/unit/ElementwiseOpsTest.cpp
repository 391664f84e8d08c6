//===- ElementwiseOpsTest.cpp - exp, abs, reciprocal, max/min, clamp, where, sub/div.Scalar ===//
//
// The elementwise ops backends/vulkan/support/ops.yaml claims (plus clamp
// and where), as declared in engine/ops/aten.yaml: each result prototype
// comes from shape inference (broadcasting, torch's type promotion), then
// the reference interpreter runs the node and the values are compared with
// hand-computed goldens, edge cases included (NaN, infinities, signed
// zeros, ties, min > max, integer wrap, f16 rounding, bound overflow).
// Expected f32/f16 values are exact: the comment next to each gives the
// arithmetic.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"
#include "graft/ops/ShapeInference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace graft;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// A one-node graph (TestGraph's graph and inputs) whose result prototype is
/// what shape inference gives instead of a declared one.
class OneOp : public graft::testing::TestGraph {
public:
  /// Creates the node and infers its result; nullopt (and the diagnostic
  /// in `error`) when inference rejects it.
  std::optional<TensorProto> infer(const std::string &target, std::vector<Argument> args,
                                   std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    node_ = g.createNode(target, std::move(args), std::move(kwargs),
                         {{"y", ValueKind::Tensor, TensorProto()}});
    node_->setSchema(OpRegistry::builtin().lookup(target));
    EXPECT_NE(node_->schema(), nullptr) << target << " is not in the op registry";
    if (!node_->schema())
      return std::nullopt;
    auto r = inferResults(*node_, g.symbols());
    if (!r.ok()) {
      error = r.diags()[0].message;
      return std::nullopt;
    }
    EXPECT_EQ(r->size(), 1u);
    g.setProto(node_->output(0), (*r)[0].proto);
    return (*r)[0].proto;
  }
  /// Runs the graph on the interpreter (after infer()).
  Expected<Tensor> run() {
    g.addOutput(node_->output(0));
    auto r = Interpreter().run(g, inputs);
    if (!r.ok())
      return r.takeFailure();
    return std::get<Tensor>((*r)[0]);
  }
  /// infer() + run(), failing the test on error.
  Tensor eval(const std::string &target, std::vector<Argument> args,
              std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    auto p = infer(target, std::move(args), std::move(kwargs));
    EXPECT_TRUE(p.has_value()) << error;
    if (!p)
      return Tensor();
    auto t = run();
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : render(t.diags()));
    if (!t.ok())
      return Tensor();
    EXPECT_EQ(t->dtype(), p->dtype) << "interpreter vs inference";
    return *t;
  }

  std::string error;

private:
  Node *node_ = nullptr;
};

using graft::testing::f32;

/// Bitwise-meaningful comparison: NaN matches NaN, zeros must agree in sign.
void expectValues(const Tensor &t, DType dtype, std::vector<int64_t> sizes,
                  const std::vector<double> &want) {
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.sizes(), sizes);
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    double got = t.getDouble(static_cast<int64_t>(i));
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i << ": " << got;
      continue;
    }
    EXPECT_EQ(got, want[i]) << "element " << i;
    if (want[i] == 0) {
      EXPECT_EQ(std::signbit(got), std::signbit(want[i])) << "element " << i << ": sign of zero";
    }
  }
}

//===-- maximum / minimum -------------------------------------------------===//

TEST(ElementwiseOps, MaximumMinimumPropagateNaNAndKeepTies) {
  for (const char *op : {"aten.maximum.default", "aten.minimum.default"}) {
    bool isMax = std::string(op) == "aten.maximum.default";
    OneOp t;
    // NaN in either operand, ties, infinities.
    Value *a = t.input("a", f32({6}, {1, kNaN, -0.5, 2, -kInf, 3}));
    Value *b = t.input("b", f32({6}, {2, 1, kNaN, 2, 0, kInf}));
    expectValues(t.eval(op, {a, b}), DType::F32, {6},
                 isMax ? std::vector<double>{2, kNaN, kNaN, 2, 0, kInf}
                       : std::vector<double>{1, kNaN, kNaN, 2, -kInf, 3});
  }
}

TEST(ElementwiseOps, MaximumBroadcastsAndPromotes) {
  {
    // i32 [2, 1] with i32 [3] -> i32 [2, 3]: max(2, {1, 3, -4}), max(-1, ...)
    OneOp t;
    Value *a = t.input("a", Tensor::fromInts(DType::I32, {2, 1}, {2, -1}));
    Value *b = t.input("b", Tensor::fromInts(DType::I32, {3}, {1, 3, -4}));
    expectValues(t.eval("aten.maximum.default", {a, b}), DType::I32, {2, 3}, {2, 3, 2, 1, 3, -1});
  }
  {
    // A 0-dim f32 tensor against a dimensioned i64 one: a higher category,
    // so the result is f32 (result_type). max({1, -5, 7}, 2.5).
    OneOp t;
    Value *a = t.input("a", Tensor::fromInts(DType::I64, {3}, {1, -5, 7}));
    Value *b = t.input("b", f32({}, {2.5}));
    expectValues(t.eval("aten.maximum.default", {a, b}), DType::F32, {3}, {2.5, 2.5, 7});
  }
  {
    // A 0-dim i64 tensor against a dimensioned i8 one: same category, i8 wins.
    OneOp t;
    Value *a = t.input("a", Tensor::fromInts(DType::I8, {3}, {-128, 0, 127}));
    Value *b = t.input("b", Tensor::fromInts(DType::I64, {}, {5}));
    expectValues(t.eval("aten.minimum.default", {a, b}), DType::I8, {3}, {-128, 0, 5});
  }
  {
    // bool: maximum is logical or, minimum logical and.
    OneOp t;
    Value *a = t.input("a", Tensor::fromInts(DType::Bool, {4}, {0, 0, 1, 1}));
    Value *b = t.input("b", Tensor::fromInts(DType::Bool, {4}, {0, 1, 0, 1}));
    expectValues(t.eval("aten.maximum.default", {a, b}), DType::Bool, {4}, {0, 1, 1, 1});
  }
  {
    // f16 with f32 promotes to f32; the f16 value 0.1 is 0.0999755859375.
    OneOp t;
    Value *a = t.input("a", Tensor::fromDoubles(DType::F16, {2}, {0.1, -3}));
    Value *b = t.input("b", f32({2}, {0.0999, -2}));
    expectValues(t.eval("aten.maximum.default", {a, b}), DType::F32, {2}, {0.0999755859375, -2});
  }
  OneOp bad;
  Value *a = bad.input("a", f32({2}, {1, 2}));
  Value *b = bad.input("b", f32({3}, {1, 2, 3}));
  EXPECT_FALSE(bad.infer("aten.maximum.default", {a, b}).has_value());
  EXPECT_NE(bad.error.find("cannot be broadcast"), std::string::npos) << bad.error;
}

//===-- abs, exp, reciprocal ----------------------------------------------===//

TEST(ElementwiseOps, AbsKeepsTheDtypeAndWrapsIntegers) {
  {
    OneOp t;
    Value *x = t.input("x", f32({5}, {-1.5, -0.0, kNaN, -kInf, 3}));
    expectValues(t.eval("aten.abs.default", {x}), DType::F32, {5}, {1.5, 0.0, kNaN, kInf, 3});
  }
  {
    // |-128| does not fit i8 and wraps to -128, as torch's int8 abs does.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I8, {3}, {-128, -3, 5}));
    expectValues(t.eval("aten.abs.default", {x}), DType::I8, {3}, {-128, 3, 5});
  }
  OneOp b;
  Value *x = b.input("x", Tensor::fromInts(DType::Bool, {2}, {0, 1}));
  EXPECT_FALSE(b.infer("aten.abs.default", {x}).has_value());
  EXPECT_NE(b.error.find("bool"), std::string::npos) << b.error;
}

TEST(ElementwiseOps, ExpInOpmathRoundedOnce) {
  {
    // e in f32 is 2.71828174591064453125; exp(89) > FLT_MAX overflows to inf.
    OneOp t;
    Value *x = t.input("x", f32({6}, {0, 1, -kInf, kInf, kNaN, 89}));
    expectValues(t.eval("aten.exp.default", {x}), DType::F32, {6},
                 {1, 2.71828174591064453125, 0, kInf, kNaN, kInf});
  }
  {
    // Integer inputs compute in the default float dtype.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I64, {2}, {0, 1}));
    expectValues(t.eval("aten.exp.default", {x}), DType::F32, {2}, {1, 2.71828174591064453125});
  }
  {
    // f16: exp(1) in f32, rounded once to f16: 2.71828 / 2^-9 = 1391.8 -> 1392 * 2^-9.
    OneOp t;
    Value *x = t.input("x", Tensor::fromDoubles(DType::F16, {1}, {1}));
    expectValues(t.eval("aten.exp.default", {x}), DType::F16, {1}, {2.71875});
  }
}

TEST(ElementwiseOps, ReciprocalOfZerosInfinitiesAndIntegers) {
  {
    // 1/3 in f32 is 0.3333333432674407958984375.
    OneOp t;
    Value *x = t.input("x", f32({6}, {2, -0.0, 0, kInf, kNaN, 3}));
    expectValues(t.eval("aten.reciprocal.default", {x}), DType::F32, {6},
                 {0.5, -kInf, kInf, 0, kNaN, 0.3333333432674407958984375});
  }
  {
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {2}, {4, 0}));
    expectValues(t.eval("aten.reciprocal.default", {x}), DType::F32, {2}, {0.25, kInf});
  }
  {
    // f16: 1/3 in f32, then to f16: 0.33333334 / 2^-12 = 1365.33 -> 1365 * 2^-12.
    OneOp t;
    Value *x = t.input("x", Tensor::fromDoubles(DType::F16, {1}, {3}));
    expectValues(t.eval("aten.reciprocal.default", {x}), DType::F16, {1}, {0.333251953125});
  }
}

//===-- clamp -------------------------------------------------------------===//

Tensor clampF32(std::vector<std::pair<std::string, Argument>> bounds) {
  OneOp t;
  Value *x = t.input("x", f32({6}, {-2, 0.5, 3, kNaN, -kInf, kInf}));
  return t.eval("aten.clamp.default", {x}, std::move(bounds));
}

TEST(ElementwiseOps, ClampFollowsTorch) {
  // min(max(x, -1), 1); NaN stays NaN.
  expectValues(clampF32({{"min", -1.0}, {"max", 1.0}}), DType::F32, {6}, {-1, 0.5, 1, kNaN, -1, 1});
  // min > max: min(max(x, 2), 1) = 1 everywhere but NaN.
  expectValues(clampF32({{"min", 2.0}, {"max", 1.0}}), DType::F32, {6}, {1, 1, 1, kNaN, 1, 1});
  // One bound.
  expectValues(clampF32({{"min", 0.0}}), DType::F32, {6}, {0, 0.5, 3, kNaN, 0, kInf});
  expectValues(clampF32({{"max", 0.0}}), DType::F32, {6}, {-2, 0, 0, kNaN, -kInf, 0});
  // Both bounds with one NaN: clamp_out fills the result with NaN ...
  expectValues(clampF32({{"min", -1.0}, {"max", kNaN}}), DType::F32, {6},
               {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
  // ... while a lone NaN bound is ignored (std::max(x, NaN) is x).
  expectValues(clampF32({{"min", kNaN}}), DType::F32, {6}, {-2, 0.5, 3, kNaN, -kInf, kInf});
  // Infinite bounds convert to any float dtype.
  expectValues(clampF32({{"min", -kInf}, {"max", kInf}}), DType::F32, {6},
               {-2, 0.5, 3, kNaN, -kInf, kInf});
}

TEST(ElementwiseOps, ClampPromotesIntegersAndRoundsBounds) {
  {
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {3}, {-5, 0, 9}));
    expectValues(t.eval("aten.clamp.default", {x}, {{"min", int64_t(-1)}, {"max", int64_t(4)}}),
                 DType::I32, {3}, {-1, 0, 4});
  }
  {
    // A float bound makes an integer clamp f32: max({-5, 0, 9}, 0.5).
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {3}, {-5, 0, 9}));
    expectValues(t.eval("aten.clamp.default", {x}, {{"min", 0.5}}), DType::F32, {3}, {0.5, 0.5, 9});
  }
  {
    // The bound is converted to f16 first: 0.1 -> 0.0999755859375.
    OneOp t;
    Value *x = t.input("x", Tensor::fromDoubles(DType::F16, {2}, {0, 1}));
    expectValues(t.eval("aten.clamp.default", {x}, {{"min", 0.1}}), DType::F16, {2},
                 {0.0999755859375, 1});
  }
  {
    // Saturation of an i8 tensor at its own range is fine ...
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I8, {2}, {-128, 127}));
    expectValues(t.eval("aten.clamp.default", {x}, {{"min", int64_t(-127)}, {"max", int64_t(127)}}),
                 DType::I8, {2}, {-127, 127});
  }
  // ... but a bound the result dtype cannot hold is torch's checked-conversion error.
  for (auto [dtype, bound] :
       {std::pair{DType::I8, Argument(int64_t(300))}, std::pair{DType::F16, Argument(70000.0)}}) {
    OneOp t;
    Value *x = t.input("x", Tensor::fromDoubles(dtype, {1}, {1}));
    ASSERT_TRUE(t.infer("aten.clamp.default", {x}, {{"max", bound}}).has_value()) << t.error;
    auto r = t.run();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("without overflow"), std::string::npos)
        << r.diags()[0].message;
  }
  OneOp none;
  Value *x = none.input("x", f32({1}, {1}));
  EXPECT_FALSE(none.infer("aten.clamp.default", {x}).has_value());
  EXPECT_NE(none.error.find("At least one of 'min' or 'max'"), std::string::npos) << none.error;
}

//===-- where -------------------------------------------------------------===//

TEST(ElementwiseOps, WhereBroadcastsThreeWaysAndPromotes) {
  {
    // cond [3], self f32 [2, 1], other i32 [3] -> f32 [2, 3]:
    // row r = cond ? self[r] : other  ({1, 2} against {10, 20, 30}).
    OneOp t;
    Value *c = t.input("c", Tensor::fromInts(DType::Bool, {3}, {1, 0, 1}));
    Value *a = t.input("a", f32({2, 1}, {1, 2}));
    Value *b = t.input("b", Tensor::fromInts(DType::I32, {3}, {10, 20, 30}));
    expectValues(t.eval("aten.where.self", {c, a, b}), DType::F32, {2, 3}, {1, 20, 1, 2, 20, 2});
  }
  {
    // A 0-dim i64 other against a dimensioned i32 self: i32 (same category).
    OneOp t;
    Value *c = t.input("c", Tensor::fromInts(DType::Bool, {2}, {0, 1}));
    Value *a = t.input("a", Tensor::fromInts(DType::I32, {2}, {7, 8}));
    Value *b = t.input("b", Tensor::fromInts(DType::I64, {}, {-1}));
    expectValues(t.eval("aten.where.self", {c, a, b}), DType::I32, {2}, {-1, 8});
  }
  {
    // A Python number passed as `other` is a wrapped number: f16 stays f16,
    // and NaN is selected like any value.
    OneOp t;
    Value *c = t.input("c", Tensor::fromInts(DType::Bool, {3}, {1, 0, 1}));
    Value *a = t.input("a", Tensor::fromDoubles(DType::F16, {3}, {kNaN, 1, -0.0}));
    expectValues(t.eval("aten.where.self", {c, a, 0.1}), DType::F16, {3},
                 {kNaN, 0.0999755859375, -0.0});
  }
  {
    // uint8 conditions are accepted (deprecated in torch).
    OneOp t;
    Value *c = t.input("c", Tensor::fromInts(DType::U8, {2}, {0, 3}));
    Value *a = t.input("a", f32({2}, {1, 2}));
    Value *b = t.input("b", f32({2}, {5, 6}));
    expectValues(t.eval("aten.where.self", {c, a, b}), DType::F32, {2}, {5, 2});
  }
  OneOp bad;
  Value *c = bad.input("c", f32({2}, {0, 1}));
  Value *a = bad.input("a", f32({2}, {1, 2}));
  EXPECT_FALSE(bad.infer("aten.where.self", {c, a, a}).has_value());
  EXPECT_NE(bad.error.find("boolean"), std::string::npos) << bad.error;
}

//===-- sub.Scalar / div.Scalar -------------------------------------------===//

/// infer() succeeds, run() fails with a message containing `needle`.
void expectRunError(OneOp &t, const std::string &target, std::vector<Argument> args,
                    std::vector<std::pair<std::string, Argument>> kwargs,
                    const std::string &needle) {
  ASSERT_TRUE(t.infer(target, std::move(args), std::move(kwargs)).has_value()) << t.error;
  auto r = t.run();
  ASSERT_FALSE(r.ok()) << target << " ran";
  EXPECT_NE(r.diags()[0].message.find(needle), std::string::npos) << r.diags()[0].message;
}

TEST(ElementwiseOps, SubScalarAlphaAndPromotion) {
  {
    // self - alpha * other in f32: {1.5, -2, 0, inf} - 2 * 0.5.
    OneOp t;
    Value *x = t.input("x", f32({4}, {1.5, -2, 0, kInf}));
    expectValues(t.eval("aten.sub.Scalar", {x, 0.5}, {{"alpha", int64_t(2)}}), DType::F32, {4},
                 {0.5, -3, -1, kInf});
  }
  {
    // An i32 tensor minus a Python float is f32 (the float's category wins).
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {3}, {10, -3, 7}));
    expectValues(t.eval("aten.sub.Scalar", {x, 0.5}), DType::F32, {3}, {9.5, -3.5, 6.5});
  }
  {
    // An int scalar keeps i32; alpha multiplies in the integer domain:
    // {10, -3} - 3 * 5 = {-5, -18}.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {2}, {10, -3}));
    expectValues(t.eval("aten.sub.Scalar", {x, int64_t(5), int64_t(3)}), DType::I32, {2},
                 {-5, -18});
  }
  {
    // i8 - 300 stays i8 (same category, the tensor wins). The scalar is
    // converted to i8 first (300 -> 44) and the difference wraps:
    // -128 - 44 = -172 -> 84, 0 - 44 = -44, 127 - 44 = 83.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I8, {3}, {-128, 0, 127}));
    expectValues(t.eval("aten.sub.Scalar", {x, int64_t(300)}), DType::I8, {3}, {84, -44, 83});
  }
  {
    // Integer arithmetic wraps at the result width: INT32_MIN - 1.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {1}, {INT32_MIN}));
    expectValues(t.eval("aten.sub.Scalar", {x, int64_t(1)}), DType::I32, {1}, {INT32_MAX});
  }
  {
    // f16: the scalar is converted to f16 (0.1 -> 0.0999755859375), the
    // difference computed in f32 and rounded once to f16:
    // 2048 - 2 * 0.0999755859375 = 2047.800048828125 -> 2048 (spacing 1
    // below 2048); 1 - 0.199951171875 = 0.800048828125, exactly halfway
    // between 1638 and 1639 units of 2^-11 -> even: 0.7998046875.
    OneOp t;
    Value *x = t.input("x", Tensor::fromDoubles(DType::F16, {2}, {2048, 1}));
    expectValues(t.eval("aten.sub.Scalar", {x, 0.1}, {{"alpha", int64_t(2)}}), DType::F16, {2},
                 {2048, 0.7998046875});
  }
  // torch's sub_check and alpha_check, before anything is computed.
  {
    OneOp t;
    Value *b = t.input("b", Tensor::fromInts(DType::Bool, {2}, {0, 1}));
    expectRunError(t, "aten.sub.Scalar", {b, true}, {}, "with two bool tensors is not supported");
  }
  {
    OneOp t;
    Value *b = t.input("b", Tensor::fromInts(DType::Bool, {2}, {0, 1}));
    expectRunError(t, "aten.sub.Scalar", {b, int64_t(1)}, {},
                   "with a bool tensor is not supported");
  }
  {
    OneOp t;
    Value *x = t.input("x", f32({2}, {1, 2}));
    expectRunError(t, "aten.sub.Scalar", {x, true}, {}, "with a bool tensor is not supported");
  }
  {
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {2}, {1, 2}));
    expectRunError(t, "aten.sub.Scalar", {x, int64_t(1)}, {{"alpha", 0.5}},
                   "alpha must not be a floating point number");
  }
  {
    OneOp t;
    Value *x = t.input("x", f32({2}, {1, 2}));
    expectRunError(t, "aten.sub.Scalar", {x, int64_t(1)}, {{"alpha", true}},
                   "Boolean alpha only supported for Boolean results");
  }
}

TEST(ElementwiseOps, DivScalarTrueDivisionAndZero) {
  {
    OneOp t;
    Value *x = t.input("x", f32({4}, {1, -3, 0, kInf}));
    expectValues(t.eval("aten.div.Scalar", {x, int64_t(2)}), DType::F32, {4}, {0.5, -1.5, 0, kInf});
  }
  {
    // IEEE division by zero: ±inf, and NaN for 0/0; the sign of a zero
    // divisor counts.
    OneOp t;
    Value *x = t.input("x", f32({4}, {1, -1, 0, -0.0}));
    expectValues(t.eval("aten.div.Scalar", {x, 0.0}), DType::F32, {4}, {kInf, -kInf, kNaN, kNaN});
    OneOp n;
    Value *y = n.input("y", f32({2}, {1, -1}));
    expectValues(n.eval("aten.div.Scalar", {y, -0.0}), DType::F32, {2}, {-kInf, kInf});
  }
  {
    // Integers divide truly into the default float dtype, also by an int
    // zero: {1, -1, 0} / 0 = {inf, -inf, nan}.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I32, {3}, {1, -1, 0}));
    expectValues(t.eval("aten.div.Scalar", {x, int64_t(0)}), DType::F32, {3}, {kInf, -kInf, kNaN});
    OneOp u;
    Value *y = u.input("y", Tensor::fromInts(DType::I64, {3}, {7, -7, 0}));
    expectValues(u.eval("aten.div.Scalar", {y, int64_t(2)}), DType::F32, {3}, {3.5, -3.5, 0});
  }
  {
    // i8 / 300 is not an i8 division (300 would wrap): f32 -120 / 300 is
    // the f32 nearest -0.4 (IEEE division rounds correctly).
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::I8, {2}, {-120, 75}));
    expectValues(t.eval("aten.div.Scalar", {x, int64_t(300)}), DType::F32, {2},
                 {static_cast<double>(-0.4f), 0.25});
  }
  {
    // bool / 2 is f32.
    OneOp t;
    Value *x = t.input("x", Tensor::fromInts(DType::Bool, {2}, {1, 0}));
    expectValues(t.eval("aten.div.Scalar", {x, int64_t(2)}), DType::F32, {2}, {0.5, 0});
  }
  {
    // f16 divides by the scalar's f32 value, not its f16 rounding:
    // 1 / 0.3f = 3.3333332... -> f16 3.333984375 (by the f16 0.30004883 it
    // would be 3.33203125).
    OneOp t;
    Value *x = t.input("x", Tensor::fromDoubles(DType::F16, {1}, {1}));
    expectValues(t.eval("aten.div.Scalar", {x, 0.3}), DType::F16, {1}, {3.333984375});
  }
}

} // namespace
