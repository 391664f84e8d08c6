//===- ShapeInferenceTest.cpp - Result prototypes for every rule family ---===//
//
// Builds small graphs with the Graph API and checks the inferred result
// kinds, shapes and dtypes: broadcasting and type promotion (incl. Python
// scalars), reductions, views with -1 and symbolic dims, slicing with
// clamping, matmul family, and the torchao / quantized_decomposed / et_vk
// quantization ops; plus the diagnostics for shapes that cannot be derived.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/ShapeInference.h"
#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"

#include <gtest/gtest.h>

#include <limits>

using namespace graft;

namespace {

Dim S(const char *name) {
  return Dim::symbol(name);
}

class Infer : public ::testing::Test {
protected:
  Graph g;

  Value *in(const std::string &name, DType dt, Shape shape) {
    return g.addInput(InputKind::UserInput, name, TensorProto(dt, std::move(shape)));
  }
  Value *symInput(const std::string &name) { return g.addScalarInput(ValueKind::SymInt, name); }
  void declare(const std::string &sym, int64_t min, std::optional<int64_t> max = std::nullopt) {
    g.symbols().declare(sym, SymbolRange{min, max});
  }

  Node *node(const std::string &target, std::vector<Argument> args,
             std::vector<std::pair<std::string, Argument>> kwargs = {},
             ValueKind kind = ValueKind::Tensor) {
    Node *n = g.createNode(target, std::move(args), std::move(kwargs),
                           {{g.uniqueName("y"), kind, TensorProto()}});
    n->setSchema(OpRegistry::builtin().lookup(target));
    EXPECT_NE(n->schema(), nullptr) << target;
    return n;
  }

  Expected<std::vector<InferredResult>>
  run(const std::string &target, std::vector<Argument> args,
      std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    return inferResults(*node(target, std::move(args), std::move(kwargs)), g.symbols());
  }

  /// The single tensor result.
  TensorProto one(const std::string &target, std::vector<Argument> args,
                  std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    auto r = run(target, std::move(args), std::move(kwargs));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
    if (!r.ok() || r->size() != 1) {
      ADD_FAILURE() << target << ": expected one result";
      return TensorProto();
    }
    EXPECT_EQ((*r)[0].kind, ValueKind::Tensor);
    EXPECT_TRUE((*r)[0].proto.strides.empty()); // contiguous
    return (*r)[0].proto;
  }

  /// The first diagnostic's message; fails when inference succeeds.
  std::string err(const std::string &target, std::vector<Argument> args,
                  std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    auto r = run(target, std::move(args), std::move(kwargs));
    EXPECT_FALSE(r.ok()) << target << " inferred "
                         << (r.ok() && !r->empty() ? (*r)[0].proto.str() : "");
    return r.ok() ? std::string() : r.diags()[0].message;
  }
};

#define EXPECT_PROTO(proto, text) EXPECT_EQ((proto).str(), text)
#define EXPECT_ERR(message, needle)                                                                \
  do {                                                                                             \
    std::string m_ = (message);                                                                    \
    EXPECT_NE(m_.find(needle), std::string::npos) << m_;                                           \
  } while (0)

Argument ints(std::vector<int64_t> v) {
  return Argument::ints(v);
}
Argument list(std::vector<Argument> v) {
  return Argument(Argument::List(std::move(v)));
}
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

} // namespace

//===-- Helpers ---------------------------------------------------------------===//

TEST(ShapeHelpers, NormalizeDimAndBroadcast) {
  EXPECT_EQ(normalizeDim(-1, 3), 2);
  EXPECT_EQ(normalizeDim(2, 3), 2);
  EXPECT_EQ(normalizeDim(3, 3), -1);
  EXPECT_EQ(normalizeDim(-4, 3), -1);
  EXPECT_EQ(normalizeDim(0, 0), 0);
  EXPECT_EQ(normalizeDim(-1, 0), 0);
  EXPECT_EQ(broadcastShapes({2, 1, 4}, {3, 1}), Shape({2, 3, 4}));
  EXPECT_EQ(broadcastShapes({S("s0"), 1}, {1, 4}), Shape({S("s0"), 4}));
  EXPECT_EQ(broadcastShapes({S("s0"), 4}, {S("s0"), 4}), Shape({S("s0"), 4}));
  EXPECT_EQ(broadcastShapes({}, {5}), Shape({5}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {4, 3}).has_value());
  EXPECT_FALSE(broadcastShapes({S("s0")}, {S("s1")}).has_value());
}

//===-- Elementwise -----------------------------------------------------------===//

TEST_F(Infer, BinaryBroadcastAndPromotion) {
  Value *a = in("a", DType::F32, {2, 1, 4});
  Value *b = in("b", DType::F32, {3, 1});
  EXPECT_PROTO(one("aten.add.Tensor", {a, b}), "f32[2, 3, 4]");
  Value *i = in("i", DType::I32, {4});
  Value *h = in("h", DType::F16, {4});
  Value *i8 = in("i8", DType::I8, {4});
  Value *bo = in("bo", DType::Bool, {4});
  Value *z64 = in("z64", DType::I64, {});
  Value *zf64 = in("zf64", DType::F64, {});
  // A Python float does not keep an int tensor integral: default float f32.
  EXPECT_PROTO(one("aten.mul.Tensor", {i, 0.5}), "f32[4]");
  EXPECT_PROTO(one("aten.mul.Scalar", {i, 0.5}), "f32[4]");
  // A Python int does not widen a float tensor, nor an int8 tensor.
  EXPECT_PROTO(one("aten.add.Tensor", {h, int64_t(2)}), "f16[4]");
  EXPECT_PROTO(one("aten.add.Scalar", {i8, int64_t(300)}), "i8[4]");
  EXPECT_PROTO(one("aten.add.Tensor", {h, 2.5}), "f16[4]");
  // bool tensor + int scalar -> int64.
  EXPECT_PROTO(one("aten.add.Tensor", {bo, int64_t(1)}), "i64[4]");
  // Zero-dim tensors rank below dimensioned ones unless of a higher category.
  EXPECT_PROTO(one("aten.sub.Tensor", {i8, z64}), "i8[4]");
  EXPECT_PROTO(one("aten.sub.Tensor", {i, zf64}), "f64[4]");
  // Two dimensioned tensors: promote_types.
  EXPECT_PROTO(one("aten.mul.Tensor", {h, a}), "f32[2, 1, 4]");
  EXPECT_PROTO(one("aten.mul.Tensor", {i, i8}), "i32[4]");
  // Symbolic broadcast.
  Value *x = in("x", DType::F32, {S("s0"), 1});
  Value *y = in("y", DType::F32, {1, 8});
  EXPECT_PROTO(one("aten.add.Tensor", {x, y}), "f32[s0, 8]");
  EXPECT_ERR(err("aten.add.Tensor", {in("p", DType::F32, {2, 3}), in("q", DType::F32, {4, 3})}),
             "cannot be broadcast");
  EXPECT_ERR(
      err("aten.add.Tensor", {in("p2", DType::F32, {S("s0")}), in("q2", DType::F32, {S("s1")})}),
      "node %y");
}

TEST_F(Infer, DivisionPowAndUnary) {
  Value *i = in("i", DType::I32, {3});
  Value *f = in("f", DType::BF16, {3});
  EXPECT_PROTO(one("aten.div.Tensor", {i, i}), "f32[3]");
  EXPECT_PROTO(one("aten.div.Tensor", {f, int64_t(2)}), "bf16[3]");
  EXPECT_PROTO(one("aten.div.Tensor_mode", {i, i}, {{"rounding_mode", "trunc"}}), "i32[3]");
  EXPECT_PROTO(one("aten.div.Tensor_mode", {i, i}, {{"rounding_mode", "floor"}}), "i32[3]");
  EXPECT_PROTO(one("aten.div.Tensor_mode", {i, i}, {{"rounding_mode", Argument()}}), "f32[3]");
  EXPECT_ERR(err("aten.div.Tensor_mode", {i, i}, {{"rounding_mode", "up"}}), "rounding_mode");
  EXPECT_PROTO(one("aten.pow.Tensor_Scalar", {i, int64_t(2)}), "i32[3]");
  EXPECT_PROTO(one("aten.pow.Tensor_Scalar", {i, 0.5}), "f32[3]");
  EXPECT_PROTO(one("aten.pow.Tensor_Tensor", {f, in("e", DType::F32, {1})}), "f32[3]");
  EXPECT_PROTO(one("aten.rsqrt.default", {i}), "f32[3]");
  EXPECT_PROTO(one("aten.sqrt.default", {f}), "bf16[3]");
  EXPECT_PROTO(one("aten.sigmoid.default", {i}), "f32[3]");
  EXPECT_PROTO(one("aten.neg.default", {i}), "i32[3]");
  EXPECT_PROTO(one("aten.relu.default", {f}), "bf16[3]");
  EXPECT_PROTO(one("aten.clone.default", {f}), "bf16[3]");
  EXPECT_PROTO(one("aten.silu.default", {f}), "bf16[3]");
  EXPECT_PROTO(one("aten.gelu.default", {f}, {{"approximate", "tanh"}}), "bf16[3]");
  EXPECT_ERR(err("aten.silu.default", {i}), "floating-point");
  EXPECT_ERR(err("aten.gelu.default", {f}, {{"approximate", "fast"}}), "approximate");
}

TEST_F(Infer, SoftmaxConversionsAndFactories) {
  Value *h = in("h", DType::F16, {2, 8});
  EXPECT_PROTO(one("aten.softmax.int", {h, int64_t(-1)}), "f16[2, 8]");
  EXPECT_PROTO(one("aten.softmax.int", {h, int64_t(1), DType::F32}), "f32[2, 8]");
  EXPECT_PROTO(one("aten._softmax.default", {h, int64_t(1), true}), "f32[2, 8]");
  EXPECT_PROTO(one("aten._softmax.default", {h, int64_t(1), false}), "f16[2, 8]");
  EXPECT_ERR(err("aten._softmax.default", {h, int64_t(2), false}), "out of range");
  EXPECT_ERR(err("aten._softmax.default", {in("f", DType::F32, {2}), int64_t(0), true}),
             "half_to_float");
  EXPECT_PROTO(one("aten._to_copy.default", {h}, {{"dtype", DType::F32}}), "f32[2, 8]");
  EXPECT_PROTO(one("aten._to_copy.default", {h}), "f16[2, 8]");
  EXPECT_PROTO(one("dim_order_ops._to_dim_order_copy.default", {h},
                   {{"dtype", DType::BF16}, {"dim_order", ints({0, 1})}}),
               "bf16[2, 8]");
  EXPECT_ERR(err("dim_order_ops._to_dim_order_copy.default", {h}, {{"dim_order", ints({0, 0})}}),
             "permutation");
  Value *s0 = symInput("s0");
  EXPECT_PROTO(one("aten.full.default", {list({int64_t(2), s0}), 0.0}), "f32[2, s0]");
  EXPECT_PROTO(one("aten.full.default", {ints({3}), int64_t(1)}), "i64[3]");
  EXPECT_PROTO(one("aten.full.default", {ints({3}), true}), "bool[3]");
  EXPECT_PROTO(one("aten.full.default", {ints({3}), int64_t(1)}, {{"dtype", DType::F16}}),
               "f16[3]");
  EXPECT_ERR(err("aten.full.default", {ints({-3}), 1.0}), "negative");
}

//===-- Reductions -----------------------------------------------------------===//

TEST_F(Infer, Reductions) {
  Value *x = in("x", DType::F32, {2, S("s0"), 8});
  Value *i = in("i", DType::I32, {2, 3});
  Value *b = in("b", DType::Bool, {5});
  EXPECT_PROTO(one("aten.mean.dim", {x, ints({-1}), true}), "f32[2, s0, 1]");
  EXPECT_PROTO(one("aten.mean.dim", {x, ints({0, 2})}), "f32[s0]");
  EXPECT_PROTO(one("aten.mean.dim", {x, Argument()}), "f32[]");
  EXPECT_PROTO(one("aten.mean.dim", {i, ints({1})}, {{"dtype", DType::F64}}), "f64[2]");
  EXPECT_ERR(err("aten.mean.dim", {i, ints({1})}), "mean(): could not infer output dtype");
  EXPECT_PROTO(one("aten.sum.dim_IntList", {i, ints({1})}), "i64[2]");
  EXPECT_PROTO(one("aten.sum.dim_IntList", {b, Argument()}), "i64[]");
  EXPECT_PROTO(one("aten.sum.dim_IntList", {i, ints({})}, {{"dtype", DType::F32}}), "f32[]");
  EXPECT_PROTO(one("aten.sum.dim_IntList", {x, ints({1}), true}), "f32[2, 1, 8]");
  EXPECT_PROTO(one("aten.amax.default", {i}), "i32[]");
  EXPECT_PROTO(one("aten.amax.default", {x, ints({-1}), true}), "f32[2, s0, 1]");
  EXPECT_PROTO(one("aten.amin.default", {x, ints({1})}), "f32[2, 8]");
  EXPECT_ERR(err("aten.amin.default", {x, ints({1, -2})}), "appears multiple times");
  EXPECT_ERR(err("aten.sum.dim_IntList", {x, ints({3})}), "out of range");
}

//===-- Views ------------------------------------------------------------------===//

TEST_F(Infer, ViewAndReshape) {
  Value *c = in("c", DType::F16, {2, 3, 4});
  EXPECT_PROTO(one("aten.view.default", {c, ints({-1, 4})}), "f16[6, 4]");
  EXPECT_PROTO(one("aten.reshape.default", {c, ints({24})}), "f16[24]");
  EXPECT_PROTO(one("aten._unsafe_view.default", {c, ints({4, -1})}), "f16[4, 6]");
  EXPECT_PROTO(one("aten.view_copy.default", {c, ints({2, 12})}), "f16[2, 12]");
  EXPECT_ERR(err("aten.view.default", {c, ints({-1, 5})}), "is invalid for input of size 24");
  EXPECT_ERR(err("aten.view.default", {c, ints({-1, -1})}), "only one dimension can be inferred");
  EXPECT_ERR(err("aten.view.default", {c, ints({5, 5})}), "is invalid for input of size 24");
  EXPECT_ERR(err("aten.view.default", {c, ints({-2, 12})}), "invalid size -2");

  // Symbolic sizes: -1 is inferred only when exactly derivable.
  Value *x = in("x", DType::F32, {1, S("s0"), 4096});
  EXPECT_PROTO(one("aten.view.default", {x, ints({1, -1, 32, 128})}), "f32[1, s0, 32, 128]");
  EXPECT_PROTO(one("aten.view.default", {x, ints({-1, 4096})}), "f32[s0, 4096]");
  EXPECT_PROTO(one("aten.view.default", {x, ints({-1})}), "f32[4096*s0]");
  EXPECT_PROTO(one("aten.view.default", {x, ints({2, -1})}), "f32[2, 2048*s0]");
  Value *y = in("y", DType::F32, {S("s0"), S("s1")});
  Value *s1 = symInput("s1");
  EXPECT_PROTO(one("aten.view.default", {y, list({int64_t(-1), s1})}), "f32[s0, s1]");
  EXPECT_ERR(err("aten.view.default", {y, ints({4, -1})}), "cannot infer -1");
  EXPECT_ERR(err("aten.view.default", {in("z", DType::F32, {S("s0"), 6}), ints({4, -1})}),
             "not provably divisible");
  // Sizes taken from sym_size of another tensor resolve to that tensor's dims.
  Node *sz = node("aten.sym_size.int", {x, int64_t(1)}, {}, ValueKind::SymInt);
  EXPECT_PROTO(one("aten.view.default", {x, list({sz->output(), int64_t(-1)})}), "f32[s0, 4096]");
  EXPECT_EQ(dimOfSymInt(*sz->output()), S("s0"));
  EXPECT_EQ(dimOfSymInt(*s1), S("s1"));
  // All sizes given symbolically: accepted as written.
  EXPECT_PROTO(one("aten.view.default", {x, list({sz->output(), int64_t(64), int64_t(64)})}),
               "f32[s0, 64, 64]");
}

TEST_F(Infer, PermuteTransposeAndSqueeze) {
  Value *x = in("x", DType::F32, {2, S("s0"), 4});
  EXPECT_PROTO(one("aten.permute.default", {x, ints({2, 0, 1})}), "f32[4, 2, s0]");
  EXPECT_PROTO(one("aten.permute_copy.default", {x, ints({-1, 1, 0})}), "f32[4, s0, 2]");
  EXPECT_ERR(err("aten.permute.default", {x, ints({0, 0, 1})}), "permutation");
  EXPECT_ERR(err("aten.permute.default", {x, ints({0, 1})}), "exactly once");
  EXPECT_PROTO(one("aten.transpose.int", {x, int64_t(0), int64_t(-1)}), "f32[4, s0, 2]");
  EXPECT_PROTO(one("aten.transpose_copy.int", {x, int64_t(1), int64_t(2)}), "f32[2, 4, s0]");
  EXPECT_ERR(err("aten.transpose.int", {x, int64_t(0), int64_t(3)}), "dim1 3 is out of range");
  // `int dim` also binds a SymInt value, but a dim must be concrete.
  EXPECT_ERR(err("aten.transpose.int", {x, int64_t(0), symInput("d0")}),
             "argument 'dim1' must be a concrete int here");
  Value *m = in("m", DType::F32, {3, 5});
  EXPECT_PROTO(one("aten.t.default", {m}), "f32[5, 3]");
  EXPECT_PROTO(one("aten.t_copy.default", {in("v", DType::F32, {7})}), "f32[7]");
  EXPECT_ERR(err("aten.t.default", {x}), "<= 2 dimensions");
  EXPECT_PROTO(one("aten.unsqueeze.default", {x, int64_t(0)}), "f32[1, 2, s0, 4]");
  EXPECT_PROTO(one("aten.unsqueeze_copy.default", {x, int64_t(-1)}), "f32[2, s0, 4, 1]");
  EXPECT_ERR(err("aten.unsqueeze.default", {x, int64_t(5)}), "out of range");

  Value *q = in("q", DType::F32, {1, 3, 1, 5});
  EXPECT_PROTO(one("aten.squeeze.default", {q}), "f32[3, 5]");
  EXPECT_PROTO(one("aten.squeeze.dim", {q, int64_t(2)}), "f32[1, 3, 5]");
  EXPECT_PROTO(one("aten.squeeze.dim", {q, int64_t(1)}), "f32[1, 3, 1, 5]");
  EXPECT_PROTO(one("aten.squeeze.dims", {q, ints({0, -2})}), "f32[3, 5]");
  EXPECT_PROTO(one("aten.squeeze_copy.dims", {q, ints({0})}), "f32[3, 1, 5]");
  // A symbolic dim is squeezed only when its range says whether it is 1.
  Value *u = in("u", DType::F32, {S("u0"), 1});
  EXPECT_ERR(err("aten.squeeze.default", {u}), "cannot tell whether symbolic dim 0");
  declare("u0", 2, 100);
  EXPECT_PROTO(one("aten.squeeze.default", {u}), "f32[u0]");
}

TEST_F(Infer, Expand) {
  Value *x = in("x", DType::F32, {1, 4});
  Value *s0 = symInput("s0");
  EXPECT_PROTO(one("aten.expand.default", {x, ints({3, -1})}), "f32[3, 4]");
  EXPECT_PROTO(one("aten.expand.default", {x, ints({2, 3, 4})}), "f32[2, 3, 4]");
  EXPECT_PROTO(one("aten.expand_copy.default", {x, list({s0, int64_t(-1)})}), "f32[s0, 4]");
  EXPECT_ERR(err("aten.expand.default", {x, ints({3, 5})}), "only size-1 dims can be expanded");
  EXPECT_ERR(err("aten.expand.default", {x, ints({4})}), "at least the tensor's rank");
  EXPECT_ERR(err("aten.expand.default", {x, ints({-1, 1, 4})}), "new leading dimension");
}

// The rest of ExecuTorch's RemoveRedundantOpsTransform list
// (patterns/redundant_ops.pat) and hardtanh (patterns/fuse_clamp.pat).
TEST_F(Infer, RedundantCopiesRepeatAndHardtanh) {
  Value *x = in("x", DType::F32, {2, S("s0")});
  Value *s1 = symInput("s1");
  EXPECT_PROTO(one("aten.alias_copy.default", {x}), "f32[2, s0]");
  EXPECT_PROTO(one("aten.lift_fresh_copy.default", {x}), "f32[2, s0]");
  EXPECT_PROTO(one("dim_order_ops._clone_dim_order.default", {x}, {{"dim_order", ints({0, 1})}}),
               "f32[2, s0]");
  EXPECT_ERR(err("dim_order_ops._clone_dim_order.default", {x}, {{"dim_order", ints({0, 0})}}),
             "dim_order must be a permutation");
  // copy: self's shape and dtype; src broadcasts to it.
  Value *h = in("h", DType::BF16, {S("s0")});
  EXPECT_PROTO(one("aten.copy.default", {x, h}), "f32[2, s0]");
  EXPECT_ERR(err("aten.copy.default", {h, x}), "not broadcastable");
  // repeat: leading repeats add dims, the others multiply.
  EXPECT_PROTO(one("aten.repeat.default", {x, ints({1, 1})}), "f32[2, s0]");
  EXPECT_PROTO(one("aten.repeat.default", {x, ints({3, 2, 2})}), "f32[3, 4, 2*s0]");
  EXPECT_PROTO(one("aten.repeat.default", {x, list({s1, int64_t(0), int64_t(1)})}),
               "f32[s1, 0, s0]");
  EXPECT_ERR(err("aten.repeat.default", {x, ints({2})}), "can not be smaller");
  EXPECT_ERR(err("aten.repeat.default", {x, ints({1, -1})}), "negative repeat");
  // hardtanh keeps self's dtype: the bounds never promote.
  Value *i = in("i", DType::I32, {4});
  EXPECT_PROTO(one("aten.hardtanh.default", {x}), "f32[2, s0]");
  EXPECT_PROTO(one("aten.hardtanh.default", {i, -0.5, 2.5}), "i32[4]");
  EXPECT_ERR(err("aten.hardtanh.default", {in("b", DType::Bool, {4})}),
             "Bool inputs not supported for hardtanh");
  EXPECT_ERR(err("aten.hardtanh.default", {in("u", DType::U8, {4}), -1.0, 2.0}),
             "unsigned type with negative limits");
  EXPECT_PROTO(one("aten.hardtanh.default", {in("u2", DType::U8, {4}), -0.5, 2.0}), "u8[4]");
}

TEST_F(Infer, SliceAndSelect) {
  Value *x = in("x", DType::F32, {10, 6});
  auto slice = [&](Argument start, Argument end, int64_t step = 1, int64_t dim = 0) {
    return one("aten.slice.Tensor", {x, dim, start, end, step}).str();
  };
  EXPECT_EQ(slice(int64_t(2), int64_t(5)), "f32[3, 6]");
  EXPECT_EQ(slice(int64_t(-3), Argument()), "f32[3, 6]");
  EXPECT_EQ(slice(Argument(), int64_t(100)), "f32[10, 6]");
  EXPECT_EQ(slice(int64_t(0), kMaxInt), "f32[10, 6]");
  EXPECT_EQ(slice(int64_t(1), int64_t(10), 2), "f32[5, 6]");
  EXPECT_EQ(slice(int64_t(1), int64_t(6), 2, 1), "f32[10, 3]");
  EXPECT_EQ(slice(int64_t(8), int64_t(2)), "f32[0, 6]");
  EXPECT_EQ(slice(int64_t(-100), int64_t(-8)), "f32[2, 6]");
  EXPECT_ERR(err("aten.slice.Tensor", {x, int64_t(0), int64_t(0), int64_t(4), int64_t(0)}),
             "step must be a positive");
  EXPECT_PROTO(one("aten.slice_copy.Tensor", {x, int64_t(1), int64_t(1)}), "f32[10, 5]");

  // Symbolic dims: the maxsize end means "to the end".
  declare("s0", 2, 2048);
  Value *y = in("y", DType::F32, {1, S("s0"), 8});
  EXPECT_PROTO(one("aten.slice.Tensor", {y, int64_t(1), int64_t(0), kMaxInt}), "f32[1, s0, 8]");
  EXPECT_PROTO(one("aten.slice.Tensor", {y, int64_t(1), int64_t(1), kMaxInt}), "f32[1, s0-1, 8]");
  EXPECT_PROTO(one("aten.slice.Tensor", {y, int64_t(1), int64_t(-1)}), "f32[1, 1, 8]");
  EXPECT_PROTO(one("aten.slice.Tensor", {y, int64_t(1), int64_t(0), int64_t(2)}), "f32[1, 2, 8]");
  EXPECT_ERR(err("aten.slice.Tensor", {y, int64_t(1), int64_t(0), int64_t(4)}),
             "cannot determine where slice end 4");
  // A KV-cache window: cache[:, :pos + len] with declared ranges.
  Value *cache = in("cache", DType::F32, {1, 2048, 8});
  Value *u0 = symInput("u0");
  declare("u0", 0, 1024);
  Node *end = node("aten.sym_size.int", {y, int64_t(1)}, {}, ValueKind::SymInt);
  EXPECT_PROTO(one("aten.slice.Tensor", {cache, int64_t(1), int64_t(0), end->output()}),
               "f32[1, s0, 8]");
  EXPECT_PROTO(one("aten.slice.Tensor", {cache, int64_t(1), u0, kMaxInt}), "f32[1, -u0+2048, 8]");
  Value *w0 = symInput("w0"); // no declared range
  EXPECT_ERR(err("aten.slice.Tensor", {cache, int64_t(1), int64_t(0), w0}), "cannot determine");

  EXPECT_PROTO(one("aten.select.int", {x, int64_t(0), int64_t(-1)}), "f32[6]");
  EXPECT_PROTO(one("aten.select_copy.int", {y, int64_t(1), u0}), "f32[1, 8]");
  EXPECT_ERR(err("aten.select.int", {x, int64_t(1), int64_t(6)}), "index 6 is out of range");
  EXPECT_ERR(err("aten.select.int", {x, int64_t(2), int64_t(0)}), "out of range");
}

TEST_F(Infer, Cat) {
  Value *a = in("a", DType::F32, {S("s0"), 4});
  Value *b = in("b", DType::F32, {3, 4});
  Value *h = in("h", DType::F16, {2, 4});
  EXPECT_PROTO(one("aten.cat.default", {list({a, b})}), "f32[s0+3, 4]");
  EXPECT_PROTO(one("aten.cat.default", {list({b, h}), int64_t(-2)}), "f32[5, 4]");
  EXPECT_PROTO(one("aten.cat.default", {list({b, b}), int64_t(1)}), "f32[3, 8]");
  EXPECT_PROTO(one("aten.cat.default", {list({in("e", DType::F32, {0}), b})}), "f32[3, 4]");
  EXPECT_ERR(err("aten.cat.default", {list({a, b}), int64_t(1)}), "sizes of tensors must match");
  EXPECT_ERR(err("aten.cat.default", {list({b, in("r", DType::F32, {3})})}), "has rank 1");
}

//===-- Linear algebra -------------------------------------------------------===//

TEST_F(Infer, MatmulFamily) {
  Value *x = in("x", DType::F32, {1, S("s0"), 64});
  Value *w = in("w", DType::F32, {96, 64});
  Value *bias = in("bias", DType::F32, {96});
  EXPECT_PROTO(one("aten.linear.default", {x, w}), "f32[1, s0, 96]");
  EXPECT_PROTO(one("aten.linear.default", {x, w, bias}), "f32[1, s0, 96]");
  EXPECT_ERR(err("aten.linear.default", {x, in("w2", DType::F32, {96, 32})}),
             "cannot be multiplied");
  EXPECT_ERR(err("aten.linear.default", {x, in("w3", DType::F16, {96, 64})}), "same dtype");
  EXPECT_ERR(err("aten.linear.default", {x, w, in("b2", DType::F32, {95})}), "does not broadcast");
  Value *a = in("a", DType::F32, {3, 4});
  Value *b = in("b", DType::F32, {4, 5});
  EXPECT_PROTO(one("aten.mm.default", {a, b}), "f32[3, 5]");
  EXPECT_ERR(err("aten.mm.default", {a, a}), "cannot be multiplied");
  EXPECT_PROTO(one("aten.addmm.default", {in("c", DType::F32, {5}), a, b}), "f32[3, 5]");
  Value *ba = in("ba", DType::F32, {2, 3, 4});
  Value *bb = in("bb", DType::F32, {2, 4, 6});
  EXPECT_PROTO(one("aten.bmm.default", {ba, bb}), "f32[2, 3, 6]");
  EXPECT_ERR(err("aten.bmm.default", {ba, b}), "3-D");
  // matmul: vector/matrix/batched with broadcast batch dims.
  Value *v4 = in("v4", DType::F32, {4});
  EXPECT_PROTO(one("aten.matmul.default", {v4, v4}), "f32[]");
  EXPECT_PROTO(one("aten.matmul.default", {a, v4}), "f32[3]");
  EXPECT_PROTO(one("aten.matmul.default", {v4, b}), "f32[5]");
  EXPECT_PROTO(one("aten.matmul.default",
                   {in("m1", DType::F32, {2, 1, 3, 4}), in("m2", DType::F32, {5, 4, 6})}),
               "f32[2, 5, 3, 6]");
  Value *i8w = in("i8w", DType::I8, {96, 64});
  Value *sc = in("sc", DType::F32, {96});
  EXPECT_PROTO(one("aten._weight_int8pack_mm.default", {in("xm", DType::BF16, {7, 64}), i8w, sc}),
               "bf16[7, 96]");
  EXPECT_ERR(err("aten._weight_int8pack_mm.default", {in("xm2", DType::F32, {7, 64}), w, sc}),
             "must be int8");
}

TEST_F(Infer, AttentionAndEmbedding) {
  Value *q = in("q", DType::F16, {1, 8, S("s0"), 64});
  Value *k = in("k", DType::F16, {1, 8, S("s1"), 64});
  Value *v = in("v", DType::F16, {1, 8, S("s1"), 32});
  EXPECT_PROTO(one("aten.scaled_dot_product_attention.default", {q, k, v}), "f16[1, 8, s0, 32]");
  Value *mask = in("mask", DType::Bool, {S("s0"), S("s1")});
  EXPECT_PROTO(
      one("aten.scaled_dot_product_attention.default", {q, k, v, mask}, {{"scale", 0.125}}),
      "f16[1, 8, s0, 32]");
  EXPECT_ERR(err("aten.scaled_dot_product_attention.default",
                 {q, in("k2", DType::F16, {1, 8, 5, 64}), in("v2", DType::F16, {1, 8, 3, 32})}),
             "sequence length");
  Value *w = in("w", DType::BF16, {1000, 64});
  Value *idx = in("idx", DType::I64, {1, S("s0")});
  EXPECT_PROTO(one("aten.embedding.default", {w, idx}), "bf16[1, s0, 64]");
  EXPECT_ERR(err("aten.embedding.default", {w, in("fi", DType::F32, {3})}), "indices must be");
}

//===-- Symbolic scalars and assertions ---------------------------------------===//

TEST_F(Infer, SymbolicScalarsAndAssertions) {
  Value *x = in("x", DType::F32, {2, S("s0")});
  auto r =
      inferResults(*node("aten.sym_size.int", {x, int64_t(1)}, {}, ValueKind::SymInt), g.symbols());
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].kind, ValueKind::SymInt);
  auto item = run("aten._local_scalar_dense.default", {in("i", DType::I64, {1})});
  ASSERT_TRUE(item.ok());
  EXPECT_EQ((*item)[0].kind, ValueKind::SymInt);
  auto fitem = run("aten._local_scalar_dense.default", {in("f", DType::F32, {})});
  ASSERT_TRUE(fitem.ok());
  EXPECT_EQ((*fitem)[0].kind, ValueKind::SymFloat);
  EXPECT_ERR(err("aten._local_scalar_dense.default", {in("many", DType::I64, {3})}),
             "exactly one element");
  Value *u = symInput("u0");
  auto c = run("aten.sym_constrain_range_for_size.default", {u},
               {{"min", int64_t(0)}, {"max", int64_t(10)}});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->empty());
  auto a = run("aten._assert_scalar.default", {u, "u0 >= 0"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->empty());
  auto sel =
      run("et_vk.select_as_symint.default", {in("t", DType::I32, {4}), int64_t(0), int64_t(1)});
  ASSERT_TRUE(sel.ok()) << render(sel.diags());
  EXPECT_EQ((*sel)[0].kind, ValueKind::SymInt);
}

// Python sym ops as torch.export writes them (`operator.add`, ...): their
// results' kinds, their Dims (dimOfSymInt), and a narrow's slice
// [u0 : u0 + seqlen] bounded by the symbol ranges or by a runtime assertion.
TEST_F(Infer, SymArithmeticAndNarrowSlices) {
  auto sym = [&](const std::string &target, std::vector<Argument> args,
                 ValueKind kind = ValueKind::SymInt) {
    Node *n = g.createNode(target, std::move(args), {}, {{g.uniqueName("v"), kind, TensorProto()}});
    n->setSchema(OpRegistry::builtin().lookup(canonicalTarget(target)));
    EXPECT_NE(n->schema(), nullptr) << target;
    auto r = inferResults(*n, g.symbols());
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
    if (r.ok() && r->size() == 1) {
      EXPECT_EQ((*r)[0].kind, kind) << target;
    }
    return n->output();
  };
  // The unbacked position, named after its defining value (docs/pt2.md).
  Value *pos = sym("aten._local_scalar_dense.default", {in("input_pos", DType::I64, {1})});
  std::string u = pos->name();
  declare(u, 0, 56);
  Value *end = sym("operator.add", {pos, int64_t(8)});
  EXPECT_EQ(dimOfSymInt(*end), S(u.c_str()) + Dim(8));
  EXPECT_EQ(dimOfSymInt(*sym("operator.sub", {end, pos})), Dim(8));
  EXPECT_EQ(dimOfSymInt(*sym("operator.mul", {pos, int64_t(3)})), S(u.c_str()) * 3);
  EXPECT_EQ(dimOfSymInt(*sym("operator.neg", {pos})), S(u.c_str()) * -1);
  EXPECT_EQ(dimOfSymInt(*sym("operator.floordiv", {int64_t(-7), int64_t(2)})), Dim(-4));
  EXPECT_EQ(dimOfSymInt(*sym("operator.mod", {int64_t(-7), int64_t(2)})), Dim(1));
  EXPECT_EQ(dimOfSymInt(*sym("operator.floordiv", {pos, int64_t(2)})).str(), u + "//2");
  EXPECT_EQ(dimOfSymInt(*sym("operator.mod", {pos, int64_t(4)})).str(), u + "%4");
  EXPECT_EQ(dimOfSymInt(*sym("torch.sym_max", {pos, int64_t(1)})).str(), "Max(" + u + ", 1)");
  EXPECT_EQ(dimOfSymInt(*sym("torch.sym_min", {int64_t(3), int64_t(5)})), Dim(3));
  sym("operator.add", {pos, 0.5}, ValueKind::SymFloat);
  sym("operator.le", {end, int64_t(64)}, ValueKind::SymBool);
  // The rest of serialize.py's _SYM_OPS: each result's kind, as Python's.
  Value *half = sym("operator.truediv", {pos, int64_t(2)}, ValueKind::SymFloat);
  sym("math.trunc", {half});
  sym("torch.sym_int", {half});
  sym("torch.sym_float", {pos}, ValueKind::SymFloat);
  sym("torch.sym_sqrt", {pos}, ValueKind::SymFloat);
  sym("operator.pow", {pos, int64_t(2)});
  sym("operator.pow", {pos, int64_t(-1)}, ValueKind::SymFloat);
  sym("operator.pos", {pos});
  Value *inRange = sym("operator.le", {pos, int64_t(56)}, ValueKind::SymBool);
  Value *outOfRange = sym("torch.sym_not", {inRange}, ValueKind::SymBool);
  sym("operator.and_", {inRange, outOfRange}, ValueKind::SymBool);
  sym("operator.or_", {pos, int64_t(1)});
  sym("torch.sym_ite", {inRange, pos, int64_t(0)});
  sym("torch.sym_ite", {inRange, half, 0.5}, ValueKind::SymFloat);
  // torch.sym_ite asserts a bool condition: an int one is refused.
  Node *intCond = g.createNode("torch.sym_ite", {pos, pos, int64_t(0)}, {},
                               {{g.uniqueName("v"), ValueKind::SymInt, TensorProto()}});
  intCond->setSchema(OpRegistry::builtin().lookup(canonicalTarget("torch.sym_ite")));
  EXPECT_FALSE(inferResults(*intCond, g.symbols()).ok());

  // freqs.narrow(0, u0, 8) with u0 in [0, 56]: slice [u0 : u0 + 8] of 64 rows.
  Value *freqs = in("freqs", DType::F32, {64, 16});
  EXPECT_PROTO(one("aten.slice_copy.Tensor", {freqs, int64_t(0), pos, end}), "f32[8, 16]");
  // Past the table's end the range cannot place the end: an error, not a guess.
  Value *pos2 = sym("aten._local_scalar_dense.default", {in("p2", DType::I64, {1})});
  declare(pos2->name(), 0, 63);
  Value *end2 = sym("operator.add", {pos2, int64_t(8)});
  EXPECT_ERR(err("aten.slice_copy.Tensor", {freqs, int64_t(0), pos2, end2}),
             "cannot determine where slice end");
  // A symbolic length: u0 + s0 <= 64 is a relation between two symbols, which
  // export keeps as a runtime assertion; with it the slice has s0 rows.
  declare("s0", 1, 64);
  Value *tokens = in("tokens", DType::I64, {1, S("s0")});
  Value *seq = sym("aten.sym_size.int", {tokens, int64_t(1)});
  Value *end3 = sym("operator.add", {pos2, seq});
  EXPECT_ERR(err("aten.slice_copy.Tensor", {freqs, int64_t(0), pos2, end3}),
             "cannot determine where slice end");
  Value *le = sym("operator.le", {end3, int64_t(64)}, ValueKind::SymBool);
  g.createNode("aten._assert_scalar.default", {le, std::string("u0 + s0 <= 64")}, {}, {})
      ->setSchema(OpRegistry::builtin().lookup("aten._assert_scalar.default"));
  EXPECT_PROTO(one("aten.slice_copy.Tensor", {freqs, int64_t(0), pos2, end3}), "f32[s0, 16]");
  // An unasserted comparison proves nothing.
  Value *pos4 = sym("aten._local_scalar_dense.default", {in("p4", DType::I64, {1})});
  declare(pos4->name(), 0, 63);
  Value *end4 = sym("operator.add", {pos4, seq});
  sym("operator.le", {end4, int64_t(64)}, ValueKind::SymBool);
  EXPECT_ERR(err("aten.slice_copy.Tensor", {freqs, int64_t(0), pos4, end4}),
             "cannot determine where slice end");
  // A tensor operand is refused with a diagnostic.
  Node *bad = g.createNode("operator.add", {freqs, int64_t(1)}, {},
                           {{g.uniqueName("v"), ValueKind::SymInt, TensorProto()}});
  bad->setSchema(OpRegistry::builtin().lookup("operator.add.default"));
  auto r = inferResults(*bad, g.symbols());
  EXPECT_FALSE(r.ok());
}

TEST_F(Infer, FailuresAreDiagnostics) {
  Value *x = in("x", DType::F32, {2});
  Node *n =
      g.createNode("mylib.unknown.default", {x}, {}, {{"y", ValueKind::Tensor, TensorProto()}});
  auto r = inferResults(*n, g.symbols());
  ASSERT_FALSE(r.ok());
  EXPECT_ERR(r.diags()[0].message, "not registered");
  // Binding errors surface unchanged.
  EXPECT_ERR(err("aten.relu.default", {x}, {{"inplace", true}}),
             "(aten.relu.default): unknown keyword argument 'inplace'");
  EXPECT_FALSE(InferenceRules::builtin().names().empty());
  EXPECT_EQ(InferenceRules::builtin().find("no_such_rule"), nullptr);
}

//===-- Quantization ----------------------------------------------------------===//

TEST_F(Infer, TorchaoAffine) {
  Value *x = in("x", DType::BF16, {4, 64});
  Value *scale = in("scale", DType::F32, {4, 2});
  Value *q = in("q", DType::I8, {4, 64});
  Argument bs = ints({1, 32});
  EXPECT_PROTO(one("torchao.quantize_affine.default", {x, bs, scale, Argument(), DType::I8}),
               "i8[4, 64]");
  EXPECT_PROTO(one("torchao.quantize_affine.default", {x, bs, scale, Argument(), DType::U4}),
               "u8[4, 64]");
  EXPECT_PROTO(one("torchao.quantize_affine.default",
                   {x, bs, scale, Argument(), DType::I8, int64_t(-8), int64_t(7), "INT"}),
               "i8[4, 64]"); // legacy
  EXPECT_ERR(err("torchao.quantize_affine.default", {x, ints({32}), scale, Argument(), DType::I8}),
             "one entry per input dim");
  EXPECT_ERR(err("torchao.quantize_affine.default", {q, bs, scale, Argument(), DType::I8}),
             "floating point");
  EXPECT_PROTO(one("torchao.dequantize_affine.default", {q, bs, scale, Argument(), DType::I8}),
               "f32[4, 64]");
  EXPECT_PROTO(one("torchao.dequantize_affine.default",
                   {q, bs, scale, Argument(), DType::I8, int64_t(-8), int64_t(7)},
                   {{"output_dtype", DType::BF16}}),
               "bf16[4, 64]");
  EXPECT_PROTO(
      one("torchao.dequantize_affine.default",
          {q, bs, scale, Argument(), DType::I8, int64_t(-8), int64_t(7), "INT", DType::F16}),
      "f16[4, 64]"); // legacy
  EXPECT_ERR(err("torchao.dequantize_affine.default", {q, bs, scale, Argument(), DType::U8}),
             "input_dtype says u8");
  EXPECT_ERR(err("torchao.dequantize_affine.default", {q, bs, scale, Argument(), DType::I8},
                 {{"output_dtype", DType::F64}}),
             "output_dtype must be");
  EXPECT_PROTO(one("torchao.fake_quantize_affine.default", {x, bs, scale, Argument(), DType::I8}),
               "bf16[4, 64]");
}

TEST_F(Infer, TorchaoChooseQparams) {
  auto cq = [&](Value *x, Argument bs, std::vector<std::pair<std::string, Argument>> kw = {},
                const char *mapping = "ASYMMETRIC") {
    auto r =
        run("torchao.choose_qparams_affine.default", {x, mapping, bs, DType::I8}, std::move(kw));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
    if (!r.ok() || r->size() != 2)
      return std::string("<failed>");
    return (*r)[0].proto.str() + " " + (*r)[1].proto.str();
  };
  Value *tok = in("tok", DType::F32, {1, S("s0"), 64});
  // Per token: block [1, 1, K].
  EXPECT_EQ(cq(tok, ints({1, 1, 64})), "f32[1, s0] i32[1, s0]");
  EXPECT_EQ(cq(tok, ints({1, 1, 64}), {{"keepdim", true}}), "f32[1, s0, 1] i32[1, s0, 1]");
  // Groupwise: [4, 64] with block [1, 32] -> two groups per row.
  Value *w = in("w", DType::BF16, {4, 64});
  EXPECT_EQ(cq(w, ints({1, 32})), "bf16[4, 2] i32[4, 2]");
  EXPECT_EQ(cq(w, ints({1, 32}), {{"keepdim", true}}), "bf16[4, 2] i32[4, 2]");
  // Per tensor.
  EXPECT_EQ(cq(w, ints({4, 64})), "bf16[] i32[]");
  EXPECT_EQ(cq(w, ints({4, 64}), {{"keepdim", true}}), "bf16[1, 1] i32[1, 1]");
  // -1 is the whole dim, a symbolic one or one of size 1 included (torchao's
  // _get_reduction_params reduces it): per tensor over a symbolic sequence length.
  EXPECT_EQ(cq(tok, ints({-1, -1, -1})), "f32[] i32[]");
  EXPECT_EQ(cq(tok, ints({-1, -1, -1}), {{"keepdim", true}}), "f32[1, 1, 1] i32[1, 1, 1]");
  EXPECT_EQ(cq(tok, ints({1, -1, 64})), "f32[1] i32[1]");
  EXPECT_ERR(
      err("torchao.choose_qparams_affine.default", {w, "ASYMMETRIC", ints({-2, 64}), DType::I8}),
      "entries must be positive or -1");
  // dtypes: explicit, and the symmetric default (zero points built like the scale).
  EXPECT_EQ(cq(w, ints({1, 64}), {{"scale_dtype", DType::F32}, {"zero_point_dtype", DType::I8}}),
            "f32[4] i8[4]");
  EXPECT_EQ(cq(w, ints({1, 64}), {}, "SYMMETRIC"), "bf16[4] bf16[4]");
  // Legacy signature: zero points default to the input dtype.
  auto legacy =
      run("torchao.choose_qparams_affine.default", {w, "ASYMMETRIC", ints({1, 64}), DType::I8},
          {{"preserve_zero", true}, {"zero_point_domain", "INT"}});
  ASSERT_TRUE(legacy.ok()) << render(legacy.diags());
  EXPECT_PROTO((*legacy)[1].proto, "bf16[4]");
  EXPECT_ERR(err("torchao.choose_qparams_affine.default", {w, "FANCY", ints({1, 64}), DType::I8}),
             "mapping_type");
  EXPECT_ERR(
      err("torchao.choose_qparams_affine.default", {w, "SYMMETRIC", ints({1, 48}), DType::I8}),
      "not divisible by block size 48");
}

TEST_F(Infer, QuantizedDecomposed) {
  Value *x = in("x", DType::F32, {2, S("s0"), 64});
  Value *q = in("q", DType::I8, {2, S("s0"), 64});
  Value *s = in("s", DType::F64, {2, S("s0"), 1});
  Value *zp = in("zp", DType::I64, {2, S("s0"), 1});
  EXPECT_PROTO(one("quantized_decomposed.quantize_per_tensor.default",
                   {x, 0.1, int64_t(0), int64_t(-128), int64_t(127), DType::I8}),
               "i8[2, s0, 64]");
  EXPECT_PROTO(one("quantized_decomposed.quantize_per_tensor.tensor",
                   {x, in("st", DType::F32, {}), in("zt", DType::I64, {}), int64_t(0), int64_t(255),
                    DType::U8}),
               "u8[2, s0, 64]");
  EXPECT_PROTO(one("quantized_decomposed.dequantize_per_tensor.default",
                   {q, 0.1, int64_t(0), int64_t(-128), int64_t(127), DType::I8}),
               "f32[2, s0, 64]");
  EXPECT_PROTO(one("quantized_decomposed.dequantize_per_tensor.tensor",
                   {q, in("st2", DType::F32, {}), in("zt2", DType::I64, {}), int64_t(-128),
                    int64_t(127), DType::I8},
                   {{"out_dtype", DType::F16}}),
               "f16[2, s0, 64]");
  EXPECT_ERR(err("quantized_decomposed.dequantize_per_tensor.default",
                 {q, 0.1, int64_t(0), int64_t(0), int64_t(255), DType::U8}),
             "dtype says u8");
  Value *w = in("w", DType::F32, {8, 64});
  Value *cs = in("cs", DType::F32, {8});
  Value *cz = in("cz", DType::I32, {8});
  EXPECT_PROTO(one("quantized_decomposed.quantize_per_channel.default",
                   {w, cs, cz, int64_t(0), int64_t(-128), int64_t(127), DType::I8}),
               "i8[8, 64]");
  Value *wq = in("wq", DType::I8, {8, 64});
  EXPECT_PROTO(one("quantized_decomposed.dequantize_per_channel.default",
                   {wq, cs, Argument(), int64_t(0), int64_t(-128), int64_t(127), DType::I8}),
               "f32[8, 64]");
  EXPECT_ERR(err("quantized_decomposed.dequantize_per_channel.default",
                 {wq, cs, Argument(), int64_t(2), int64_t(-128), int64_t(127), DType::I8}),
             "axis 2 is out of range");
  Value *gs = in("gs", DType::F32, {8, 2});
  EXPECT_PROTO(
      one("quantized_decomposed.quantize_per_channel_group.default",
          {w, gs, in("gz", DType::I32, {8, 2}), int64_t(-8), int64_t(7), DType::I8, int64_t(32)}),
      "i8[8, 64]");
  EXPECT_PROTO(
      one("quantized_decomposed.dequantize_per_channel_group.default",
          {wq, gs, Argument(), int64_t(-8), int64_t(7), DType::I8, int64_t(32), DType::BF16}),
      "bf16[8, 64]");
  EXPECT_ERR(err("quantized_decomposed.dequantize_per_channel_group.default",
                 {q, gs, Argument(), int64_t(-8), int64_t(7), DType::I8, int64_t(32), DType::F32}),
             "2-D input");
  auto cq = run("quantized_decomposed.choose_qparams_per_token_asymmetric.default", {x, DType::I8});
  ASSERT_TRUE(cq.ok()) << render(cq.diags());
  ASSERT_EQ(cq->size(), 2u);
  EXPECT_PROTO((*cq)[0].proto, "f64[2, s0, 1]");
  EXPECT_PROTO((*cq)[1].proto, "i64[2, s0, 1]");
  EXPECT_PROTO(one("quantized_decomposed.quantize_per_token.default",
                   {x, s, zp, int64_t(-128), int64_t(127), DType::I8}),
               "i8[2, s0, 64]");
  EXPECT_PROTO(one("quantized_decomposed.dequantize_per_token.default",
                   {q, s, zp, int64_t(-128), int64_t(127), DType::I8, DType::F16}),
               "f16[2, s0, 64]");
}

TEST_F(Infer, Embedding4bit) {
  Value *w = in("w", DType::U8, {100, 16});
  Value *s = in("s", DType::F16, {100, 1});
  Value *idx = in("idx", DType::I64, {1, S("s0")});
  EXPECT_PROTO(one("quantized_decomposed.embedding_4bit.default",
                   {w, s, Argument(), int64_t(-8), int64_t(7), idx}),
               "f16[1, s0, 32]");
  EXPECT_PROTO(one("quantized_decomposed.embedding_4bit.dtype",
                   {w, s, Argument(), int64_t(-8), int64_t(7), idx}, {{"dtype", DType::F32}}),
               "f32[1, s0, 32]");
  EXPECT_ERR(err("quantized_decomposed.embedding_4bit.default",
                 {w, s, Argument(), int64_t(-128), int64_t(127), idx}),
             "weight_quant_min == -8");
  EXPECT_ERR(err("quantized_decomposed.embedding_4bit.default",
                 {w, in("s2", DType::F16, {99, 1}), Argument(), int64_t(-8), int64_t(7), idx}),
             "rows");
}

TEST_F(Infer, EmbeddingByteAnd2bit) {
  // embedding_byte: [V, D] -> D; embedding_2bit: [V, D/4] -> 4 * (D/4); range asserted
  // only for the packed form (_quant_patterns_and_replacements.py).
  Value *w8 = in("w8", DType::I8, {100, 32});
  Value *w2 = in("w2", DType::U8, {100, 8});
  Value *s = in("s", DType::BF16, {100});
  Value *idx = in("idx", DType::I64, {1, S("s0")});
  EXPECT_PROTO(one("quantized_decomposed.embedding_byte.default",
                   {w8, s, Argument(), int64_t(-128), int64_t(127), idx}),
               "bf16[1, s0, 32]");
  EXPECT_PROTO(one("quantized_decomposed.embedding_byte.dtype",
                   {w8, s, Argument(), int64_t(-128), int64_t(127), idx}, {{"dtype", DType::F32}}),
               "f32[1, s0, 32]");
  EXPECT_PROTO(one("quantized_decomposed.embedding_2bit.dtype",
                   {w2, s, Argument(), int64_t(-2), int64_t(1), idx}, {{"dtype", DType::F32}}),
               "f32[1, s0, 32]");
  EXPECT_ERR(err("quantized_decomposed.embedding_2bit.default",
                 {w2, s, Argument(), int64_t(-8), int64_t(7), idx}),
             "embedding_2bit expects weight_quant_min == -2 and weight_quant_max == 1");
}

TEST_F(Infer, ChooseQParamsPerTensor) {
  // The Meta kernels: scale f64 [1], zero point i64 [1], whatever the input's shape.
  Value *x = in("x", DType::F32, {1, S("s0"), 64});
  auto r = run("quantized_decomposed.choose_qparams.tensor",
               {x, int64_t(-128), int64_t(127), 0x1.0p-23, DType::I8});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].proto.str(), "f64[1]");
  EXPECT_EQ((*r)[1].proto.str(), "i64[1]");
  EXPECT_ERR(err("quantized_decomposed.choose_qparams_symmetric.tensor",
                 {x, int64_t(127), int64_t(-128), 0x1.0p-23, DType::I8}),
             "smaller than quant_max");
}

TEST_F(Infer, EtVkOps) {
  Value *x = in("x", DType::F16, {1, S("s0"), 60});
  // Packed int4 weights [N, K_pad/2]: K = 60 padded to 64.
  Value *w = in("w", DType::U8, {96, 32});
  Value *scales = in("scales", DType::F16, {2, 96});
  EXPECT_PROTO(one("et_vk.linear_q4gsw.default", {x, w, scales, int64_t(30)}), "f16[1, s0, 96]");
  EXPECT_ERR(
      err("et_vk.linear_q4gsw.default", {in("xb", DType::F16, {1, 80}), w, scales, int64_t(40)}),
      "holds K = 64");
  EXPECT_ERR(err("et_vk.linear_q4gsw.default", {x, w, scales, int64_t(7)}), "group_size 7");
  EXPECT_PROTO(one("et_vk.linear_dq8ca_q4gsw.default",
                   {x, in("is", DType::F32, {1, S("s0")}), in("iz", DType::I8, {1, S("s0")}), w,
                    in("sums", DType::I32, {2, 96}), scales, int64_t(30)}),
               "f16[1, s0, 96]");
  EXPECT_PROTO(one("et_vk.linear_qcs4w.default", {x, w, in("cs", DType::F16, {96})}),
               "f16[1, s0, 96]");
  Value *x8 = in("x8", DType::F32, {4, 64});
  EXPECT_PROTO(one("et_vk.linear_q8ta_q8csw.default",
                   {x8, 0.05, int64_t(3), in("w8", DType::I8, {10, 64}), in("ws", DType::I32, {12}),
                    in("wsc", DType::F32, {12})}),
               "f32[4, 10]");
  // The statically quantized int8 activation itself yields f32.
  EXPECT_PROTO(one("et_vk.linear_q8ta_q8csw.default",
                   {in("xq", DType::I8, {4, 64}), 0.05, int64_t(3), in("w8b", DType::I8, {10, 64}),
                    in("wsb", DType::I32, {12}), in("wscb", DType::F32, {12})}),
               "f32[4, 10]");
  EXPECT_ERR(err("et_vk.linear_q8ta_q8csw.default",
                 {x8, 0.05, int64_t(3), in("w9", DType::I8, {10, 32}), in("ws2", DType::I32, {12}),
                  in("wsc2", DType::F32, {12})}),
             "holds K = 32");
  // linear_dq8ca_q8csw: float input [..., K], int8 weight [N, K] -> [..., N]; an
  // int8 input is refused (it quantizes the float activation itself).
  EXPECT_PROTO(one("et_vk.linear_dq8ca_q8csw.default",
                   {in("dx", DType::F32, {2, S("s0"), 64}), in("dis", DType::F32, {2, S("s0")}),
                    in("diz", DType::I8, {2, S("s0")}), in("dw", DType::I8, {10, 64}),
                    in("dsums", DType::I32, {12}), in("dsc", DType::F32, {10})}),
               "f32[2, s0, 10]");
  EXPECT_ERR(err("et_vk.linear_dq8ca_q8csw.default",
                 {in("dxq", DType::I8, {4, 64}), in("dis2", DType::F32, {4}),
                  in("diz2", DType::I8, {4}), in("dw2", DType::I8, {10, 64}),
                  in("dsums2", DType::I32, {12}), in("dsc2", DType::F32, {10})}),
             "input");
  EXPECT_ERR(err("et_vk.linear_dq8ca_q8csw.default",
                 {x8, in("dis3", DType::F32, {4}), in("diz3", DType::I8, {4}),
                  in("dw3", DType::I8, {10, 32}), in("dsums3", DType::I32, {12}),
                  in("dsc3", DType::F32, {10})}),
             "holds K = 32");
  // q8ta_linear(_gemv): int8 in, int8 out [..., N]; activation none/relu.
  for (const char *op : {"et_vk.q8ta_linear.default", "et_vk.q8ta_linear_gemv.default"}) {
    std::string o(op);
    EXPECT_PROTO(one(op,
                     {in("qx" + o, DType::I8, {2, S("s0"), 64}), 0.05, int64_t(3),
                      in("qw" + o, DType::I8, {10, 64}), in("qs" + o, DType::I32, {12}),
                      in("qsc" + o, DType::F32, {12}), 0.1, int64_t(-2)},
                     {{"activation", "relu"}}),
                 "i8[2, s0, 10]");
  }
  Value *qw = in("qw", DType::I8, {10, 64});
  Value *qsums = in("qsums", DType::I32, {12});
  Value *qsc = in("qsc", DType::F32, {12});
  EXPECT_ERR(
      err("et_vk.q8ta_linear.default", {x8, 0.05, int64_t(3), qw, qsums, qsc, 0.1, int64_t(0)}),
      "x must be the int8 quantized activation, got f32");
  Value *qx = in("qx", DType::I8, {4, 64});
  EXPECT_ERR(err("et_vk.q8ta_linear.default",
                 {qx, 0.05, int64_t(3), qw, qsums, qsc, 0.1, int64_t(0)}, {{"activation", "gelu"}}),
             "activation must be 'none' or 'relu', got 'gelu'");
  EXPECT_ERR(
      err("et_vk.q8ta_linear_gemv.default",
          {qx, 0.05, int64_t(3), in("qw32", DType::I8, {10, 32}), qsums, qsc, 0.1, int64_t(0)}),
      "holds K = 32");
  Value *ew = in("ew", DType::U8, {100, 16});
  Value *idx = in("idx", DType::I32, {2, 3});
  EXPECT_PROTO(one("et_vk.embedding_q4gsw.default",
                   {ew, in("es", DType::F16, {100, 1}), int64_t(32), idx, true}),
               "f16[2, 3, 32]");
  EXPECT_ERR(
      err("et_vk.embedding_q4gsw.default", {ew, in("es2", DType::F32, {100, 1}), int64_t(5), idx}),
      "group_size 5");
  EXPECT_PROTO(one("et_vk.rms_norm.default", {x, in("nw", DType::F16, {60}), 1e-5}),
               "f16[1, s0, 60]");
  EXPECT_ERR(err("et_vk.rms_norm.default", {x, in("nw2", DType::F16, {61}), 1e-5}), "weight");
  Value *xq = in("xq", DType::F32, {1, S("s0"), 8, 64});
  Value *xk = in("xk", DType::F32, {1, S("s0"), 2, 64});
  Value *cos = in("cos", DType::F32, {S("s0"), 32});
  Value *sin = in("sin", DType::F32, {S("s0"), 32});
  auto rot = run("et_vk.apply_rotary_emb.default", {xq, xk, cos, sin});
  ASSERT_TRUE(rot.ok()) << render(rot.diags());
  ASSERT_EQ(rot->size(), 2u);
  EXPECT_PROTO((*rot)[0].proto, "f32[1, s0, 8, 64]");
  EXPECT_PROTO((*rot)[1].proto, "f32[1, s0, 2, 64]");
  EXPECT_ERR(err("et_vk.apply_rotary_emb.default", {xq, xk, in("c2", DType::F32, {S("s0"), 16}),
                                                    in("s2", DType::F32, {S("s0"), 16})}),
             "head_dim mismatch");
  // The operand checks both rotary ops share, each naming its own table dims.
  EXPECT_ERR(err("et_vk.apply_rotary_emb.default",
                 {in("xq3", DType::F32, {S("s0"), 8, 64}), xk, cos, sin}),
             "xq and xk must be 4-D");
  EXPECT_ERR(
      err("et_vk.apply_rotary_emb.default", {xq, xk, cos, in("s5", DType::F16, {S("s0"), 32})}),
      "2-D [seq, head_dim/2] of one shape");
  EXPECT_ERR(err("et_vk.apply_rotary_emb_hf.default",
                 {xq, in("xk5", DType::F32, {1, S("s0"), 64}), cos, sin, int64_t(0)}),
             "xq and xk must be 4-D");
  // apply_rotary_emb_hf: whole [max_seq, R] tables, R <= head_dim (partial rotation).
  Value *tc = in("tc", DType::F32, {128, 48});
  Value *ts = in("ts", DType::F32, {128, 48});
  auto hf = run("et_vk.apply_rotary_emb_hf.default", {xq, xk, tc, ts, int64_t(3)});
  ASSERT_TRUE(hf.ok()) << render(hf.diags());
  ASSERT_EQ(hf->size(), 2u);
  EXPECT_PROTO((*hf)[0].proto, "f32[1, s0, 8, 64]");
  EXPECT_PROTO((*hf)[1].proto, "f32[1, s0, 2, 64]");
  EXPECT_ERR(
      err("et_vk.apply_rotary_emb_hf.default",
          {xq, xk, in("tc2", DType::F32, {128, 66}), in("ts2", DType::F32, {128, 66}), int64_t(0)}),
      "at most head_dim 64");
  EXPECT_ERR(err("et_vk.apply_rotary_emb_hf.default",
                 {xq, in("xk3", DType::F32, {1, S("s0"), 2, 32}), tc, ts, int64_t(0)}),
             "same seq and head_dim");
  EXPECT_ERR(err("et_vk.apply_rotary_emb_hf.default",
                 {xq, xk, tc, in("ts4", DType::F32, {64, 48}), int64_t(0)}),
             "one shape");
}

// The ops backends/vulkan/support/ops.yaml claims beyond the core set: the
// Scalar overloads of sub/div (Python-number promotion), the copying and
// aliasing spellings of the views, Tensor.to(dtype), sym_numel (whose value
// stands for the product of the dims) and sym_constrain_range.
TEST_F(Infer, VulkanClaimedScalarCopyAndSymOps) {
  Value *i = in("i", DType::I32, {2, 3});
  Value *h = in("h", DType::F16, {2, 3});
  EXPECT_PROTO(one("aten.sub.Scalar", {i, int64_t(300)}), "i32[2, 3]");
  EXPECT_PROTO(one("aten.sub.Scalar", {i, 0.5}), "f32[2, 3]");
  EXPECT_PROTO(one("aten.sub.Scalar", {h, 2.0}, {{"alpha", int64_t(3)}}), "f16[2, 3]");
  EXPECT_PROTO(one("aten.div.Scalar", {i, int64_t(2)}), "f32[2, 3]");
  EXPECT_PROTO(one("aten.div.Scalar", {h, int64_t(2)}), "f16[2, 3]");
  EXPECT_PROTO(one("aten.div.Scalar", {in("b", DType::Bool, {4}), true}), "f32[4]");

  Value *q = in("q", DType::F32, {1, S("s0"), 1});
  declare("s0", 2, 64);
  EXPECT_PROTO(one("aten.squeeze_copy.default", {q}), "f32[s0]");
  EXPECT_PROTO(one("aten.squeeze_copy.dim", {q, int64_t(-1)}), "f32[1, s0]");
  EXPECT_PROTO(one("aten.squeeze_copy.dim", {q, int64_t(1)}), "f32[1, s0, 1]");
  EXPECT_ERR(err("aten.squeeze_copy.dim", {q, int64_t(3)}), "out of range");
  EXPECT_PROTO(one("aten.alias.default", {q}), "f32[1, s0, 1]");
  EXPECT_PROTO(one("aten._reshape_copy.default", {q, ints({-1, 1})}), "f32[s0, 1]");
  EXPECT_PROTO(one("aten.to.dtype", {q, DType::I8}), "i8[1, s0, 1]");
  EXPECT_PROTO(one("aten.to.dtype", {i, DType::I32, false, true}), "i32[2, 3]");

  Value *x = in("x", DType::F32, {2, S("s0"), 3});
  Node *n = node("aten.sym_numel.default", {x}, {}, ValueKind::SymInt);
  auto r = inferResults(*n, g.symbols());
  ASSERT_TRUE(r.ok()) << render(r.diags());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].kind, ValueKind::SymInt);
  EXPECT_EQ(dimOfSymInt(*n->output()).str(), "6*s0");
  EXPECT_PROTO(one("aten.view.default", {x, list({n->output()})}), "f32[6*s0]");
  Node *n0 = node("aten.sym_numel.default", {in("z", DType::F32, {})}, {}, ValueKind::SymInt);
  EXPECT_EQ(dimOfSymInt(*n0->output()), Dim(1));

  auto c = run("aten.sym_constrain_range.default", {n->output()},
               {{"min", int64_t(12)}, {"max", int64_t(384)}});
  ASSERT_TRUE(c.ok()) << render(c.diags());
  EXPECT_TRUE(c->empty());
}
