//===- KvCacheOpsTest.cpp - KV-cache, mask and factory ops, by hand -------===//
//
// Each op of engine/ops/aten.yaml "KV cache, masks and their factories" and
// engine/ops/llama.yaml on small inputs whose results are computed by hand
// from PyTorch's documented semantics: shape inference gives the result
// prototype (so a wrong rule fails the interpreter's prototype check), the
// reference kernel the values. In-place ops rebind their mutated argument:
// later readers see the update and a MutableState keeps it across runs.
//
//===----------------------------------------------------------------------===//
#include "InterpTestUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace graft;
using graft::testing::f32;
using graft::testing::values;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor i64(std::vector<int64_t> sizes, std::vector<int64_t> v) {
  return Tensor::fromInts(DType::I64, std::move(sizes), v);
}
Tensor boolean(std::vector<int64_t> sizes, std::vector<int64_t> v) {
  return Tensor::fromInts(DType::Bool, std::move(sizes), v);
}

/// A graph built node by node with inferred result prototypes.
class OpGraph {
public:
  Graph g;
  std::vector<RuntimeValue> inputs;

  Value *input(const std::string &name, const Tensor &t) {
    inputs.emplace_back(t);
    return g.addInput(InputKind::UserInput, name, t.proto());
  }
  Value *constant(InputKind kind, const std::string &fqn, const Tensor &t) {
    std::string n = fqn;
    std::replace(n.begin(), n.end(), '.', '_');
    Value *v = g.addInput(kind, "b_" + n, t.proto(), fqn);
    g.inputs().back().setData(t, InlineInit{});
    return v;
  }
  /// Adds `target` and infers its results; a failed inference fails the test.
  Value *op(const std::string &target, std::vector<Argument> args,
            std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    auto r = tryOp(target, std::move(args), std::move(kwargs));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.diags()[0].message);
    return r.ok() ? *r : nullptr;
  }
  Expected<Value *> tryOp(const std::string &target, std::vector<Argument> args,
                          std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    const OpSchema *s = OpRegistry::builtin().lookup(canonicalTarget(target));
    if (!s)
      return Diagnostic::error("unknown op " + target);
    std::vector<Graph::ResultSpec> specs(1);
    Node *n = g.createNode(target, std::move(args), std::move(kwargs), std::move(specs));
    n->setSchema(s);
    GRAFT_TRY(auto inferred, inferResults(*n, g.symbols()));
    g.setProto(n->output(), inferred[0].proto);
    return n->output();
  }
  Expected<std::vector<RuntimeValue>> run(std::vector<Value *> outs,
                                          MutableState *state = nullptr) {
    for (Value *o : outs)
      g.addOutput(o);
    OpRegistry::builtin().bind(g);
    return state ? Interpreter().run(g, inputs, *state) : Interpreter().run(g, inputs);
  }
  /// Runs for one tensor result.
  Tensor result(Value *out) {
    auto r = run({out});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.diags()[0].message);
    return r.ok() ? std::get<Tensor>((*r)[0]) : Tensor();
  }
  std::string error(Value *out) {
    auto r = run({out});
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.diags()[0].message;
  }
};

Argument list(std::vector<Argument> a) {
  return Argument(Argument::List(std::move(a)));
}

TEST(KvCacheOps, Arange) {
  {
    OpGraph t;
    Tensor r = t.result(t.op("aten.arange.default", {int64_t(5)}));
    EXPECT_EQ(r.dtype(), DType::I64);
    EXPECT_EQ(values(r), (std::vector<double>{0, 1, 2, 3, 4}));
  }
  {
    OpGraph t;
    Tensor r = t.result(t.op("aten.arange.start", {int64_t(2), int64_t(5)}));
    EXPECT_EQ(values(r), (std::vector<double>{2, 3, 4}));
  }
  {
    // A float step makes the default float dtype; ceil(1 / 0.3) = 4 elements.
    OpGraph t;
    Tensor r = t.result(t.op("aten.arange.start_step", {int64_t(0), int64_t(1), 0.3}));
    EXPECT_EQ(r.dtype(), DType::F32);
    EXPECT_EQ(values(r), (std::vector<double>{0, 0.30000001192092896, 0.60000002384185791,
                                              0.89999997615814209}));
  }
  {
    OpGraph t;
    Tensor r = t.result(t.op("aten.arange.start_step", {int64_t(5), int64_t(0), int64_t(-2)}));
    EXPECT_EQ(values(r), (std::vector<double>{5, 3, 1}));
  }
  {
    OpGraph t;
    Tensor r = t.result(t.op("aten.arange.default", {int64_t(3)}, {{"dtype", DType::F32}}));
    EXPECT_EQ(r.dtype(), DType::F32);
    EXPECT_EQ(values(r), (std::vector<double>{0, 1, 2}));
  }
  {
    // An integer dtype computes in int64: the float step truncates to 0
    // (RangeFactoriesKernel.cpp: step.to<accscalar_t>()), the size does not.
    OpGraph t;
    Tensor r = t.result(
        t.op("aten.arange.start_step", {int64_t(1), int64_t(3), 0.5}, {{"dtype", DType::I64}}));
    EXPECT_EQ(r.dtype(), DType::I64);
    EXPECT_EQ(values(r), (std::vector<double>{1, 1, 1, 1}));
  }
  {
    OpGraph t;
    auto r = t.tryOp("aten.arange.start_step", {int64_t(0), int64_t(5), int64_t(-1)});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("inconsistent with step sign"), std::string::npos);
  }
}

TEST(KvCacheOps, FactoriesAndTril) {
  {
    OpGraph t;
    Tensor r = t.result(t.op("aten.ones.default", {list({int64_t(2)})}, {{"dtype", DType::I64}}));
    EXPECT_EQ(r.dtype(), DType::I64);
    EXPECT_EQ(values(r), (std::vector<double>{1, 1}));
  }
  {
    OpGraph t;
    Tensor r = t.result(t.op("aten.zeros.default", {list({int64_t(1), int64_t(2)})}));
    EXPECT_EQ(r.dtype(), DType::F32);
    EXPECT_EQ(values(r), (std::vector<double>{0, 0}));
  }
  {
    // torch.scalar_tensor(3) is float32 (not int64 as torch.tensor(3)).
    OpGraph t;
    Tensor r = t.result(t.op("aten.scalar_tensor.default", {int64_t(3)}));
    EXPECT_EQ(r.dtype(), DType::F32);
    EXPECT_EQ(r.rank(), 0);
    EXPECT_EQ(values(r), (std::vector<double>{3}));
  }
  {
    // The causal mask ExecuTorch's AttentionMHA registers: tril(ones(3, 3, bool)).
    OpGraph t;
    Value *ones =
        t.op("aten.ones.default", {list({int64_t(3), int64_t(3)})}, {{"dtype", DType::Bool}});
    Tensor r = t.result(t.op("aten.tril.default", {ones}));
    EXPECT_EQ(r.dtype(), DType::Bool);
    EXPECT_EQ(values(r), (std::vector<double>{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(values(t.result(t.op("aten.tril.default", {x, int64_t(-1)}))),
              (std::vector<double>{0, 0, 0, 4, 0, 0}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(values(t.result(t.op("aten.tril.default", {x, int64_t(1)}))),
              (std::vector<double>{1, 2, 0, 4, 5, 6}));
  }
}

TEST(KvCacheOps, IndexPut) {
  {
    // self[:, [2, 0]] = [[1, 2], [3, 4]]
    OpGraph t;
    Value *x = t.input("x", f32({2, 3}, {0, 0, 0, 0, 0, 0}));
    Value *i = t.input("i", i64({2}, {2, 0}));
    Value *v = t.input("v", f32({2, 2}, {1, 2, 3, 4}));
    EXPECT_EQ(values(t.result(t.op("aten.index_put.default", {x, list({Argument(), i}), v}))),
              (std::vector<double>{2, 0, 1, 4, 0, 3}));
  }
  {
    // A repeated index: the last write wins; with accumulate the values add.
    OpGraph t;
    Value *x = t.input("x", f32({3}, {0, 0, 10}));
    Value *i = t.input("i", i64({3}, {0, 0, -1}));
    Value *v = t.input("v", f32({3}, {1, 2, 5}));
    Value *put = t.op("aten.index_put.default", {x, list({i}), v});
    Value *acc = t.op("aten.index_put.default", {x, list({i}), v, true});
    auto r = t.run({put, acc});
    ASSERT_TRUE(r.ok()) << r.diags()[0].message;
    EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{2, 0, 5}));
    EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{3, 0, 15}));
  }
  {
    // A bool index is its nonzero() positions; one value broadcasts.
    OpGraph t;
    Value *x = t.input("x", f32({3}, {0, 0, 0}));
    Value *m = t.input("m", boolean({3}, {1, 0, 1}));
    Value *v = t.input("v", f32({1}, {7}));
    EXPECT_EQ(values(t.result(t.op("aten.index_put.default", {x, list({m}), v}))),
              (std::vector<double>{7, 0, 7}));
  }
  {
    // Indexed dims 0 and 2 are not adjacent: the index shape [2] goes first,
    // then the kept dim 1. out[0, :, 1] = [1, 2]; out[1, :, 0] = [3, 4].
    OpGraph t;
    Value *x = t.input("x", f32({2, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0}));
    Value *i0 = t.input("i0", i64({2}, {0, 1}));
    Value *i2 = t.input("i2", i64({2}, {1, 0}));
    Value *v = t.input("v", f32({2, 2}, {1, 2, 3, 4}));
    EXPECT_EQ(values(t.result(t.op("aten.index_put.default", {x, list({i0, Argument(), i2}), v}))),
              (std::vector<double>{0, 1, 0, 2, 3, 0, 4, 0}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({3}, {0, 0, 0}));
    Value *i = t.input("i", i64({1}, {3}));
    Value *v = t.input("v", f32({1}, {1}));
    Value *put = t.op("aten.index_put.default", {x, list({i}), v});
    EXPECT_EQ(t.error(put), "node %" + put->name() +
                                " (aten.index_put.default): index 3 is out of bounds for "
                                "dimension 0 with size 3");
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({3}, {0, 0, 0}));
    Value *i = t.input("i", i64({1}, {0}));
    Value *v = t.input("v", i64({1}, {1}));
    auto r = t.tryOp("aten.index_put.default", {x, list({i}), v});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("Index put requires the source and destination dtypes "
                                        "match"),
              std::string::npos);
  }
}

TEST(KvCacheOps, Index) {
  {
    // ExecuTorch's static-shape reads: mask[input_pos] of a tril mask.
    OpGraph t;
    Value *ones =
        t.op("aten.ones.default", {list({int64_t(4), int64_t(4)})}, {{"dtype", DType::Bool}});
    Value *mask = t.op("aten.tril.default", {ones});
    Value *pos = t.input("pos", i64({2}, {1, -1}));
    Tensor r = t.result(t.op("aten.index.Tensor", {mask, list({pos})}));
    EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(values(r), (std::vector<double>{1, 1, 0, 0, 1, 1, 1, 1}));
  }
  {
    // x[:, [[2], [0]]]: an index of shape [2, 1] replaces dim 1 in place.
    OpGraph t;
    Value *x = t.input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
    Value *i = t.input("i", i64({2, 1}, {2, 0}));
    Tensor r = t.result(t.op("aten.index.Tensor", {x, list({Argument(), i})}));
    EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2, 1}));
    EXPECT_EQ(values(r), (std::vector<double>{3, 1, 6, 4}));
  }
  {
    // Non-adjacent indexed dims: the index shape goes first. x[[0, 1], :, [1, 0]].
    OpGraph t;
    Value *x = t.input("x", f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
    Value *i0 = t.input("i0", i64({2}, {0, 1}));
    Value *i2 = t.input("i2", i64({2}, {1, 0}));
    Tensor r = t.result(t.op("aten.index.Tensor", {x, list({i0, Argument(), i2})}));
    EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(values(r), (std::vector<double>{1, 3, 4, 6}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({3}, {1, 2, 3}));
    Value *m = t.input("m", boolean({3}, {1, 0, 1}));
    auto r = t.tryOp("aten.index.Tensor", {x, list({m})});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("data-dependent shape"), std::string::npos);
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({3}, {1, 2, 3}));
    Value *i = t.input("i", i64({1}, {-4}));
    Value *r = t.op("aten.index.Tensor", {x, list({i})});
    EXPECT_EQ(t.error(r), "node %" + r->name() +
                              " (aten.index.Tensor): index -4 is out of bounds for dimension 0 "
                              "with size 3");
  }
  {
    // index_put accumulate on integers wraps in the element type.
    OpGraph t;
    Value *x = t.input("x", Tensor::fromInts(DType::I8, {2}, {120, 0}));
    Value *i = t.input("i", i64({2}, {0, 0}));
    Value *v = t.input("v", Tensor::fromInts(DType::I8, {2}, {5, 5}));
    Tensor r = t.result(t.op("aten.index_put.default", {x, list({i}), v, true}));
    EXPECT_EQ(values(r), (std::vector<double>{-126, 0}));
  }
}

TEST(KvCacheOps, IndexCopyAndSliceScatter) {
  {
    OpGraph t;
    Value *x = t.input("x", f32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}));
    Value *i = t.input("i", i64({2}, {3, 0}));
    Value *s = t.input("s", f32({2, 2}, {1, 2, 3, 4}));
    EXPECT_EQ(values(t.result(t.op("aten.index_copy.default", {x, int64_t(1), i, s}))),
              (std::vector<double>{2, 0, 0, 1, 4, 0, 0, 3}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}));
    Value *i = t.input("i", i64({1}, {4}));
    Value *s = t.input("s", f32({2, 1}, {1, 2}));
    Value *c = t.op("aten.index_copy.default", {x, int64_t(1), i, s});
    EXPECT_EQ(t.error(c), "node %" + c->name() +
                              " (aten.index_copy.default): index_copy_(): index 4 is out of "
                              "bounds for dimension 1 with size 4");
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({2, 4}, {0, 0, 0, 0, 0, 0, 0, 0}));
    Value *i = t.input("i", i64({2}, {0, 1}));
    Value *s = t.input("s", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
    auto r = t.tryOp("aten.index_copy.default", {x, int64_t(1), i, s});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("does not fit self"), std::string::npos);
  }
  {
    // x[1:5:2] = [1, 2]
    OpGraph t;
    Value *x = t.input("x", f32({5}, {0, 0, 0, 0, 0}));
    Value *s = t.input("s", f32({2}, {1, 2}));
    EXPECT_EQ(values(t.result(t.op("aten.slice_scatter.default",
                                   {x, s, int64_t(0), int64_t(1), int64_t(5), int64_t(2)}))),
              (std::vector<double>{0, 1, 0, 2, 0}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({5}, {0, 0, 0, 0, 0}));
    Value *s = t.input("s", f32({3}, {1, 2, 3}));
    Value *r = t.op("aten.slice_scatter.default", {x, s, int64_t(0), int64_t(0), int64_t(2)});
    EXPECT_NE(t.error(r).find("expected src to have a size equal to the slice of self"),
              std::string::npos);
  }
}

TEST(KvCacheOps, MaskOps) {
  {
    // The additive mask spelling: masked_fill(~mask, -inf).
    OpGraph t;
    Value *x = t.input("x", f32({3}, {1, 2, 3}));
    Value *m = t.input("m", boolean({3}, {0, 1, 0}));
    Value *nm = t.op("aten.logical_not.default", {m});
    EXPECT_EQ(values(t.result(t.op("aten.masked_fill.Scalar", {x, nm, -kInf}))),
              (std::vector<double>{-kInf, 2, -kInf}));
  }
  {
    // The mask broadcasts self: [3] with a [2, 1] mask is [2, 3]; integer self.
    OpGraph t;
    Value *x = t.input("x", i64({3}, {1, 2, 3}));
    Value *m = t.input("m", boolean({2, 1}, {1, 0}));
    Tensor r = t.result(t.op("aten.masked_fill.Scalar", {x, m, int64_t(9)}));
    EXPECT_EQ(r.dtype(), DType::I64);
    EXPECT_EQ(r.sizes(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values(r), (std::vector<double>{9, 9, 9, 1, 2, 3}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({3}, {1, 2, 3}));
    Value *m = t.input("m", i64({3}, {0, 1, 0}));
    auto r = t.tryOp("aten.masked_fill.Scalar", {x, m, 0.0});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("only supports boolean masks"), std::string::npos);
  }
  {
    // RingKVCache's mask arithmetic: pos_q - cache_positions >= 0 & < window.
    OpGraph t;
    Value *a = t.input("a", i64({2, 1}, {1, 2}));
    Value *b = t.input("b", i64({3}, {0, 1, 2}));
    Value *ge = t.op("aten.ge.Tensor", {a, b});
    Value *lt = t.op("aten.lt.Scalar", {b, int64_t(2)});
    Value *both = t.op("aten.logical_and.default", {ge, lt});
    EXPECT_EQ(values(t.result(both)), (std::vector<double>{1, 1, 0, 1, 1, 0}));
  }
  {
    // Comparisons promote first: int 1 == 1.0, 2 != 2.5; NaN != NaN.
    OpGraph t;
    Value *a = t.input("a", i64({3}, {1, 2, 0}));
    Value *b = t.input("b", f32({3}, {1.0, 2.5, std::nan("")}));
    Value *x = t.input("x", f32({1}, {std::nan("")}));
    Value *eq = t.op("aten.eq.Tensor", {a, b});
    Value *ne = t.op("aten.ne.Scalar", {x, 1.0});
    Value *le = t.op("aten.le.Scalar", {a, int64_t(1)});
    Value *gt = t.op("aten.gt.Tensor", {b, a});
    Value *any = t.op("aten.logical_or.default", {le, gt});
    auto r = t.run({eq, ne, le, gt, any});
    ASSERT_TRUE(r.ok()) << r.diags()[0].message;
    EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{1, 0, 0}));
    EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{1}));
    EXPECT_EQ(values(std::get<Tensor>((*r)[2])), (std::vector<double>{1, 0, 1}));
    EXPECT_EQ(values(std::get<Tensor>((*r)[3])), (std::vector<double>{0, 1, 0}));
    EXPECT_EQ(values(std::get<Tensor>((*r)[4])), (std::vector<double>{1, 1, 1}));
    for (const RuntimeValue &v : *r)
      EXPECT_EQ(std::get<Tensor>(v).dtype(), DType::Bool);
  }
  {
    // where over a comparison, as _create_causal_mask_for_ring_buffer writes it.
    OpGraph t;
    Value *m = t.input("m", boolean({2}, {1, 0}));
    Value *eq = t.op("aten.eq.Scalar", {m, true});
    Value *zero = t.op("aten.scalar_tensor.default", {0.0});
    Value *w = t.op("aten.where.self", {eq, zero, -kInf});
    EXPECT_EQ(values(t.result(w)), (std::vector<double>{0, -kInf}));
  }
}

TEST(KvCacheOps, ClampTensor) {
  {
    // min(max(x, lo), hi), the bounds broadcasting; NaN propagates.
    OpGraph t;
    Value *x = t.input("x", f32({3}, {1, 5, std::nan("")}));
    Value *lo = t.input("lo", f32({1}, {2}));
    Value *hi = t.input("hi", f32({3}, {4, 4, 4}));
    Tensor r = t.result(t.op("aten.clamp.Tensor", {x, lo, hi}));
    EXPECT_EQ(r.getDouble(0), 2);
    EXPECT_EQ(r.getDouble(1), 4);
    EXPECT_TRUE(std::isnan(r.getDouble(2)));
  }
  {
    // Only a lower bound; an integer self with a float bound promotes to f32.
    OpGraph t;
    Value *x = t.input("x", i64({3}, {1, 5, 9}));
    Value *lo = t.input("lo", f32({3}, {2.5, 2.5, 2.5}));
    Tensor r = t.result(t.op("aten.clamp.Tensor", {x, lo}));
    EXPECT_EQ(r.dtype(), DType::F32);
    EXPECT_EQ(values(r), (std::vector<double>{2.5, 5, 9}));
  }
  {
    OpGraph t;
    Value *x = t.input("x", f32({1}, {1}));
    auto r = t.tryOp("aten.clamp.Tensor", {x});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("At least one of 'min' or 'max'"), std::string::npos);
  }
}

TEST(KvCacheOps, InPlaceOpsRebindAndPersistThroughTheState) {
  // b.copy_(src) then b + 1 reads the mutated buffer (no signature entry:
  // the in-place rebind alone updates the state); c.index_put_([i], 1,
  // accumulate) is listed as c's BUFFER_MUTATION output. A second run with
  // the same state continues from the first; the graph's data stays zero.
  OpGraph t;
  Value *b = t.constant(InputKind::Buffer, "state.b", f32({2}, {0, 0}));
  Value *c = t.constant(InputKind::Buffer, "state.c", f32({3}, {0, 0, 0}));
  Value *src = t.input("src", f32({1}, {3}));
  Value *i = t.input("i", i64({1}, {1}));
  Value *one = t.op("aten.ones.default", {list({int64_t(1)})});
  t.op("aten.copy_.default", {b, src});
  Value *after = t.op("aten.add.Tensor", {b, 1.0});
  Value *put = t.op("aten.index_put_.default", {c, list({i}), one, true});
  Value *readC = t.op("aten.add.Tensor", {c, 1.0});
  t.g.addOutput(put, OutputKind::BufferMutation, "state.c");
  MutableState state;
  auto r1 = t.run({after, readC}, &state);
  ASSERT_TRUE(r1.ok()) << r1.diags()[0].message;
  EXPECT_EQ(values(std::get<Tensor>((*r1)[0])), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(std::get<Tensor>((*r1)[1])), (std::vector<double>{4, 4}));
  EXPECT_EQ(values(std::get<Tensor>((*r1)[2])), (std::vector<double>{1, 2, 1}));
  ASSERT_NE(state.find("state.b"), nullptr);
  ASSERT_NE(state.find("state.c"), nullptr);
  EXPECT_EQ(values(*state.find("state.b")), (std::vector<double>{3, 3}));
  EXPECT_EQ(values(*state.find("state.c")), (std::vector<double>{0, 1, 0}));
  auto r2 = Interpreter().run(t.g, t.inputs, state);
  ASSERT_TRUE(r2.ok()) << r2.diags()[0].message;
  EXPECT_EQ(values(std::get<Tensor>((*r2)[2])), (std::vector<double>{1, 3, 1}));
  EXPECT_EQ(values(*state.find("state.c")), (std::vector<double>{0, 2, 0}));
  // Without a state every run starts from the graph's data.
  auto r3 = Interpreter().run(t.g, t.inputs);
  ASSERT_TRUE(r3.ok()) << r3.diags()[0].message;
  EXPECT_EQ(values(std::get<Tensor>((*r3)[2])), (std::vector<double>{1, 2, 1}));
  EXPECT_EQ(values(t.g.inputs()[1].data()), (std::vector<double>{0, 0, 0}));
}

TEST(KvCacheOps, MutatingAViewOrAParameterIsAnError) {
  {
    OpGraph t;
    Value *b = t.constant(InputKind::Buffer, "b", f32({2, 2}, {0, 0, 0, 0}));
    Value *row = t.op("aten.select.int", {b, int64_t(0), int64_t(0)});
    Value *src = t.input("src", f32({2}, {1, 2}));
    Value *c = t.op("aten.copy_.default", {row, src});
    std::string e = t.error(c);
    EXPECT_NE(e.find("node %" + c->name() + " (aten.copy_.default): mutates %" + row->name() +
                     ", a view made by aten.select.int"),
              std::string::npos)
        << e;
  }
  {
    OpGraph t;
    Value *w = t.constant(InputKind::Parameter, "w", f32({2}, {0, 0}));
    Value *src = t.input("src", f32({2}, {1, 2}));
    Value *c = t.op("aten.copy_.default", {w, src});
    EXPECT_NE(t.error(c).find("only buffers and user inputs are mutable"), std::string::npos);
  }
}

TEST(KvCacheOps, UpdateCacheWritesAtStartPos) {
  // value [1, 2, 1, 2] into cache [1, 4, 1, 2] at start_pos 1: positions 1, 2.
  OpGraph t;
  Value *cache =
      t.constant(InputKind::Buffer, "kv.k_cache", f32({1, 4, 1, 2}, std::vector<double>(8, 0)));
  Value *v = t.input("v", f32({1, 2, 1, 2}, {1, 2, 3, 4}));
  Value *u = t.op("llama.update_cache.default", {v, cache, int64_t(1)});
  Value *read = t.op("aten.clone.default", {cache});
  auto r = t.run({u, read});
  ASSERT_TRUE(r.ok()) << r.diags()[0].message;
  EXPECT_EQ(std::get<Tensor>((*r)[0]).sizes(), (std::vector<int64_t>{1}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{0, 0, 1, 2, 3, 4, 0, 0}));

  OpGraph bad;
  Value *c2 =
      bad.constant(InputKind::Buffer, "kv.k_cache", f32({1, 4, 1, 2}, std::vector<double>(8, 0)));
  Value *v2 = bad.input("v", f32({1, 2, 1, 2}, {1, 2, 3, 4}));
  Value *u2 = bad.op("llama.update_cache.default", {v2, c2, int64_t(3)});
  EXPECT_EQ(bad.error(u2), "node %" + u2->name() +
                               " (llama.update_cache.default): update_cache: start_pos 3 + 2 "
                               "positions exceed the cache's 4");

  OpGraph shape;
  Value *c3 = shape.constant(InputKind::Buffer, "kv.k_cache",
                             f32({1, 4, 2, 2}, std::vector<double>(16, 0)));
  Value *v3 = shape.input("v", f32({1, 2, 1, 2}, {1, 2, 3, 4}));
  auto r3 = shape.tryOp("llama.update_cache.default", {v3, c3, int64_t(0)});
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.diags()[0].message.find("same size in dimension 2"), std::string::npos);
}

// Query 1 at position start_pos attends to keys 0..start_pos of a cache
// holding k = [0, 1, 100], v = [2, 4, 1000] (head dim 1, scale 1):
// start_pos 1 gives softmax([0, 1]) . [2, 4] = (2 + 4e) / (1 + e).
TEST(KvCacheOps, CustomSdpaAttendsToTheCachedPrefix) {
  const double e = std::exp(1.0);
  for (int64_t pos : {0, 1, 2}) {
    OpGraph t;
    Value *q = t.input("q", f32({1, 1, 1, 1}, {1}));
    Value *k = t.input("k", f32({1, 3, 1, 1}, {0, 1, 100}));
    Value *v = t.input("v", f32({1, 3, 1, 1}, {2, 4, 1000}));
    Tensor r = t.result(t.op("llama.custom_sdpa.default", {q, k, v, pos, Argument(), 0.0, true}));
    double want = pos == 0 ? 2.0 : pos == 1 ? (2 + 4 * e) / (1 + e) : 1000.0;
    EXPECT_NEAR(r.getDouble(0), want, 1e-4 * std::abs(want)) << "start_pos " << pos;
  }
  {
    // Two query rows at positions 1 and 2 (S = 2): causal per row.
    OpGraph t;
    Value *q = t.input("q", f32({1, 2, 1, 1}, {1, 1}));
    Value *k = t.input("k", f32({1, 4, 1, 1}, {0, 1, 0, 50}));
    Value *v = t.input("v", f32({1, 4, 1, 1}, {2, 4, 6, 1000}));
    Tensor r =
        t.result(t.op("llama.custom_sdpa.default", {q, k, v, int64_t(1), Argument(), 0.0, true}));
    EXPECT_NEAR(r.getDouble(0), (2 + 4 * e) / (1 + e), 1e-5);
    EXPECT_NEAR(r.getDouble(1), (2 + 4 * e + 6) / (2 + e), 1e-5);
  }
  {
    OpGraph t;
    Value *q = t.input("q", f32({1, 2, 1, 1}, {1, 1}));
    Value *k = t.input("k", f32({1, 2, 1, 1}, {0, 1}));
    Value *v = t.input("v", f32({1, 2, 1, 1}, {2, 4}));
    Value *a = t.op("llama.custom_sdpa.default", {q, k, v, int64_t(1), Argument(), 0.0, true});
    EXPECT_NE(t.error(a).find("start_pos 1 + 2 positions exceed the cache's 2"), std::string::npos);
  }
  {
    OpGraph t;
    Value *q = t.input("q", i64({1, 1, 1, 1}, {1}));
    auto r = t.tryOp("llama.custom_sdpa.default", {q, q, q, int64_t(0)});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.diags()[0].message.find("Expected query to be float32, bfloat16, or float16"),
              std::string::npos);
  }
}

// ET-VK's fused op: both caches updated at start_pos, then custom_sdpa over
// them; the caches persist in the state.
TEST(KvCacheOps, SdpaWithKvCacheUpdatesBothCaches) {
  OpGraph t;
  Value *kc = t.constant(InputKind::Buffer, "kv.k_cache", f32({1, 3, 1, 1}, {0, 0, 0}));
  Value *vc = t.constant(InputKind::Buffer, "kv.v_cache", f32({1, 3, 1, 1}, {2, 0, 0}));
  Value *q = t.input("q", f32({1, 1, 1, 1}, {1}));
  Value *k = t.input("k", f32({1, 1, 1, 1}, {1}));
  Value *v = t.input("v", f32({1, 1, 1, 1}, {4}));
  Value *a = t.op("llama.sdpa_with_kv_cache.default",
                  {q, k, v, kc, vc, int64_t(1), int64_t(1), Argument(), 0.0, true});
  t.g.addOutput(kc, OutputKind::BufferMutation, "kv.k_cache");
  t.g.addOutput(vc, OutputKind::BufferMutation, "kv.v_cache");
  MutableState state;
  auto r = t.run({a}, &state);
  ASSERT_TRUE(r.ok()) << r.diags()[0].message;
  const double e = std::exp(1.0);
  EXPECT_NEAR(std::get<Tensor>((*r)[2]).getDouble(0), (2 + 4 * e) / (1 + e), 1e-5);
  EXPECT_EQ(values(*state.find("kv.k_cache")), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(values(*state.find("kv.v_cache")), (std::vector<double>{2, 4, 0}));
}

} // namespace
