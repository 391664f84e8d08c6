//===- InterpreterTest.cpp - Interpreter diagnostics and random inputs ----===//
//
// Errors must name the node (or input) at fault: unknown ops, constants
// without data, failed runtime assertions, results that disagree with their
// declared prototypes (dtype, concrete and symbolic dims). Random inputs are
// deterministic per seed and respect index bounds and symbol ranges.
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

std::string firstError(const Expected<std::vector<RuntimeValue>> &r) {
  return r.ok() ? std::string("<no error>") : r.diags()[0].message;
}

TEST(Interpreter, UnknownOpNamesTheNode) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {1, 2}));
  Value *y = t.op("foo.bar.default", {x}, {}, DType::F32, {2});
  auto r = t.run({y});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(firstError(r), "node %" + y->name() +
                               ": no reference kernel for op 'foo.bar.default' (the op is not "
                               "registered)");
}

TEST(Interpreter, MissingConstantDataNamesTheFqn) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {1, 2}));
  Value *w = t.g.addInput(InputKind::Parameter, "w", TensorProto(DType::F32, {2}),
                          "layers.0.attention.wq.weight");
  Value *y = t.op("aten.add.Tensor", {x, w}, {}, DType::F32, {2});
  auto r = t.run({y});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(firstError(r).find("layers.0.attention.wq.weight"), std::string::npos) << firstError(r);
  EXPECT_NE(firstError(r).find("has no data"), std::string::npos) << firstError(r);
}

// A constant no node reads needs no data: program files store only the
// constants a graph reads, so an embedded reference graph's unused buffer
// (a KV-cache export's attention mask) comes back without any.
TEST(Interpreter, UnreadConstantNeedsNoData) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {1, 2}));
  t.g.addInput(InputKind::Buffer, "mask", TensorProto(DType::F32, {2}), "layers.0.attention.mask");
  Value *y = t.op("aten.add.Tensor", {x, x}, {}, DType::F32, {2});
  EXPECT_EQ(values(t.run1(y)), (std::vector<double>{2, 4}));
}

TEST(Interpreter, FailedAssertScalarIsAUserError) {
  TestGraph t;
  Value *x = t.input("x", Tensor::fromInts(DType::I64, {}, {0}));
  Node *item = t.g.createNode("aten._local_scalar_dense.default", {x}, {},
                              {{"u0", ValueKind::SymInt, TensorProto()}});
  t.g.createNode("aten._assert_scalar.default",
                 {item->output(), "Runtime assertion failed for expression u0 >= 1"}, {}, {});
  auto r = t.run({item->output()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diags()[0].kind, DiagKind::User);
  EXPECT_EQ(firstError(r), "node #1 (aten._assert_scalar.default): assertion failed: Runtime "
                           "assertion failed for expression u0 >= 1");
}

TEST(Interpreter, ConstrainRangeViolation) {
  TestGraph t;
  Value *x = t.input("x", Tensor::fromInts(DType::I64, {}, {500}));
  Node *item = t.g.createNode("aten._local_scalar_dense.default", {x}, {},
                              {{"u0", ValueKind::SymInt, TensorProto()}});
  t.g.createNode("aten.sym_constrain_range_for_size.default", {item->output()},
                 {{"max", int64_t(100)}}, {});
  auto r = t.run({item->output()});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(firstError(r), "node #1 (aten.sym_constrain_range_for_size.default): Invalid value "
                           "range for 500 between [0, 100].");
}

// The Python sym ops torch.export writes on SymInts, with Python semantics:
// floor division toward -inf, the remainder with the divisor's sign, float
// promotion, comparisons as SymBools; errors name the node.
TEST(Interpreter, PythonSymOps) {
  auto eval = [](const std::string &target, std::vector<Argument> args, ValueKind kind,
                 std::vector<RuntimeValue> in = {}) -> Expected<std::vector<RuntimeValue>> {
    TestGraph t;
    std::vector<Argument> bound;
    for (Argument &a : args)
      bound.push_back(std::move(a));
    // A SymInt user input stands for the first operand when `in` is given.
    if (!in.empty()) {
      Value *s = t.g.addScalarInput(ValueKind::SymInt, "s");
      t.inputs = in;
      bound[0] = Argument(s);
    }
    Node *n = t.g.createNode(target, std::move(bound), {}, {{"r", kind, TensorProto()}});
    return t.run({n->output()});
  };
  auto i64 = [&](const std::string &target, int64_t a, int64_t b) -> int64_t {
    auto r = eval(target, {a, b}, ValueKind::SymInt, {RuntimeValue(a)});
    EXPECT_TRUE(r.ok()) << target << ": " << (r.ok() ? "" : render(r.diags()));
    return r.ok() ? std::get<int64_t>((*r)[0]) : 0;
  };
  EXPECT_EQ(i64("operator.add", 40, 8), 48);
  EXPECT_EQ(i64("operator.sub", 3, 8), -5);
  EXPECT_EQ(i64("operator.mul", -6, 7), -42);
  EXPECT_EQ(i64("operator.floordiv", 7, 2), 3);
  EXPECT_EQ(i64("operator.floordiv", -7, 2), -4);
  EXPECT_EQ(i64("operator.floordiv", 7, -2), -4);
  EXPECT_EQ(i64("operator.mod", -7, 2), 1);
  EXPECT_EQ(i64("operator.mod", 7, -2), -1);
  EXPECT_EQ(i64("torch.sym_max", 3, 9), 9);
  EXPECT_EQ(i64("torch.sym_min", 3, 9), 3);

  auto neg = eval("operator.neg", {int64_t(5)}, ValueKind::SymInt, {RuntimeValue(int64_t(5))});
  ASSERT_TRUE(neg.ok()) << render(neg.diags());
  EXPECT_EQ(std::get<int64_t>((*neg)[0]), -5);
  auto f = eval("operator.floordiv", {int64_t(7), 2.0}, ValueKind::SymFloat,
                {RuntimeValue(int64_t(-7))});
  ASSERT_TRUE(f.ok()) << render(f.diags());
  EXPECT_EQ(std::get<double>((*f)[0]), -4.0);
  auto fm =
      eval("operator.mod", {int64_t(7), -2.5}, ValueKind::SymFloat, {RuntimeValue(int64_t(7))});
  ASSERT_TRUE(fm.ok()) << render(fm.diags());
  EXPECT_EQ(std::get<double>((*fm)[0]), -0.5);
  for (auto [target, want] : {std::pair{"operator.le", true},
                              {"operator.lt", false},
                              {"operator.ge", true},
                              {"operator.gt", false},
                              {"operator.eq", true},
                              {"operator.ne", false}}) {
    auto c =
        eval(target, {int64_t(64), int64_t(64)}, ValueKind::SymBool, {RuntimeValue(int64_t(64))});
    ASSERT_TRUE(c.ok()) << target << ": " << render(c.diags());
    EXPECT_EQ(std::get<bool>((*c)[0]), want) << target;
  }

  auto zero =
      eval("operator.mod", {int64_t(3), int64_t(0)}, ValueKind::SymInt, {RuntimeValue(int64_t(3))});
  EXPECT_EQ(firstError(zero), "node %r (operator.mod.default): integer division or modulo by zero");
  auto big = eval("operator.mul", {int64_t(0), int64_t(4)}, ValueKind::SymInt,
                  {RuntimeValue(std::numeric_limits<int64_t>::max())});
  EXPECT_NE(firstError(big).find("does not fit in int64"), std::string::npos) << firstError(big);
}

// The rest of serialize.py's _SYM_OPS (pytorch torch/_export/serde/serialize.py):
// Python's true division, ** (int for a non-negative int exponent), +, & and |
// (logical on bools, bitwise on ints), math.trunc / sym_int toward zero,
// sym_float, sym_sqrt, sym_not and sym_ite, with Python's errors.
TEST(Interpreter, RemainingPythonSymOps) {
  auto eval = [](const std::string &target, std::vector<Argument> args,
                 ValueKind kind) -> Expected<std::vector<RuntimeValue>> {
    TestGraph t;
    Node *n = t.g.createNode(target, std::move(args), {}, {{"r", kind, TensorProto()}});
    return t.run({n->output()});
  };
  auto get = [&](const std::string &target, std::vector<Argument> args,
                 ValueKind kind) -> RuntimeValue {
    auto r = eval(target, std::move(args), kind);
    EXPECT_TRUE(r.ok()) << target << ": " << (r.ok() ? "" : render(r.diags()));
    return r.ok() ? (*r)[0] : RuntimeValue(false);
  };
  using K = ValueKind;
  EXPECT_EQ(std::get<double>(get("operator.truediv", {int64_t(7), int64_t(2)}, K::SymFloat)), 3.5);
  EXPECT_EQ(std::get<int64_t>(get("operator.pow", {int64_t(-3), int64_t(3)}, K::SymInt)), -27);
  EXPECT_EQ(std::get<double>(get("operator.pow", {int64_t(2), int64_t(-1)}, K::SymFloat)), 0.5);
  EXPECT_EQ(std::get<int64_t>(get("operator.pos", {true}, K::SymInt)), 1);
  EXPECT_EQ(std::get<bool>(get("operator.and_", {true, false}, K::SymBool)), false);
  EXPECT_EQ(std::get<bool>(get("operator.or_", {true, false}, K::SymBool)), true);
  EXPECT_EQ(std::get<int64_t>(get("operator.and_", {int64_t(6), int64_t(3)}, K::SymInt)), 2);
  EXPECT_EQ(std::get<int64_t>(get("math.trunc", {-2.7}, K::SymInt)), -2);
  EXPECT_EQ(std::get<int64_t>(get("torch.sym_int", {2.7}, K::SymInt)), 2);
  EXPECT_EQ(std::get<double>(get("torch.sym_float", {int64_t(3)}, K::SymFloat)), 3.0);
  EXPECT_EQ(std::get<double>(get("torch.sym_sqrt", {int64_t(16)}, K::SymFloat)), 4.0);
  EXPECT_EQ(std::get<bool>(get("torch.sym_not", {false}, K::SymBool)), true);
  EXPECT_EQ(std::get<int64_t>(get("torch.sym_ite", {false, int64_t(1), int64_t(2)}, K::SymInt)), 2);

  EXPECT_EQ(firstError(eval("operator.truediv", {int64_t(1), int64_t(0)}, K::SymFloat)),
            "node %r (operator.truediv.default): division by zero");
  EXPECT_NE(firstError(eval("operator.pow", {int64_t(10), int64_t(19)}, K::SymInt))
                .find("does not fit in int64"),
            std::string::npos);
  EXPECT_NE(firstError(eval("operator.pow", {-8.0, 0.5}, K::SymFloat)).find("complex"),
            std::string::npos);
  EXPECT_NE(firstError(eval("torch.sym_sqrt", {-1.0}, K::SymFloat)).find("math domain error"),
            std::string::npos);
  EXPECT_NE(firstError(eval("math.trunc", {std::numeric_limits<double>::quiet_NaN()}, K::SymInt))
                .find("cannot be converted"),
            std::string::npos);

  // CPython's float pow: NaN and infinite exponents do not raise, an overflow does.
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isnan(std::get<double>(
      get("operator.pow", {-1.0, std::numeric_limits<double>::quiet_NaN()}, K::SymFloat))));
  EXPECT_EQ(std::get<double>(get("operator.pow", {0.0, -inf}, K::SymFloat)), inf);
  EXPECT_EQ(std::get<double>(get("operator.pow", {-inf, 0.5}, K::SymFloat)), inf);
  EXPECT_EQ(std::get<double>(get("operator.pow", {int64_t(2), int64_t(-2000)}, K::SymFloat)), 0.0);
  EXPECT_NE(firstError(eval("operator.pow", {10.0, 400.0}, K::SymFloat)).find("out of range"),
            std::string::npos);
  EXPECT_NE(firstError(eval("operator.pow", {int64_t(0), int64_t(-1)}, K::SymFloat))
                .find("cannot be raised to a negative power"),
            std::string::npos);
  // torch.sym_ite asserts a bool condition and t, f of one type.
  EXPECT_NE(firstError(eval("torch.sym_ite", {int64_t(1), int64_t(1), int64_t(2)}, K::SymInt))
                .find("condition must be a bool"),
            std::string::npos);
  EXPECT_NE(
      firstError(eval("torch.sym_ite", {true, int64_t(1), 2.0}, K::SymInt)).find("of one kind"),
      std::string::npos);
}

// The narrow ExecuTorch's Llama does on its rotary tables, as exported:
// item() -> sym_constrain_range_for_size -> add -> slice [u0 : u0 + 2].
TEST(Interpreter, NarrowAtADynamicPosition) {
  TestGraph t;
  Value *table = t.constant("freqs", Tensor::fromDoubles(DType::F32, {6, 1}, {0, 1, 2, 3, 4, 5}));
  Value *posT = t.input("input_pos", Tensor::fromInts(DType::I64, {1}, {3}));
  Node *item = t.g.createNode("aten._local_scalar_dense.default", {posT}, {},
                              {{"u0", ValueKind::SymInt, TensorProto()}});
  t.g.symbols().declare("u0", SymbolRange{0, 4});
  t.g.createNode("aten.sym_constrain_range_for_size.default", {item->output()}, {}, {});
  Node *add = t.g.createNode("operator.add", {item->output(), int64_t(2)}, {},
                             {{"add", ValueKind::SymInt, TensorProto()}});
  Value *y = t.op("aten.slice_copy.Tensor", {table, int64_t(0), item->output(), add->output()}, {},
                  DType::F32, {2, 1});
  EXPECT_EQ(values(t.run1(y)), (std::vector<double>{3, 4}));
}

TEST(Interpreter, ResultShapeMismatchNamesNodeAndPrototype) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {1, 2}));
  Value *y = t.op("aten.neg.default", {x}, {}, DType::F32, {3});
  auto r = t.run({y});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(firstError(r), "node %" + y->name() + " (aten.neg.default): result %" + y->name() +
                               " [2] does not match its prototype f32[3]: dim 0 is 2 but the "
                               "prototype says 3");
}

TEST(Interpreter, ResultDTypeMismatch) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {1, 2}));
  Value *y = t.op("aten.neg.default", {x}, {}, DType::F16, {2});
  auto r = t.run({y});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(firstError(r).find("is f32[2] but its prototype is f16[2]"), std::string::npos)
      << firstError(r);
  // With checking off, the same graph runs.
  t.g.renumber();
  auto unchecked = Interpreter(InterpreterOptions{false}).run(t.g, t.inputs);
  EXPECT_TRUE(unchecked.ok());
}

TEST(Interpreter, SymbolicDimsBindOnFirstSight) {
  Graph g;
  g.symbols().declare("s0", SymbolRange{2, 64});
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {Dim::symbol("s0"), 2}));
  Node *ok =
      g.createNode("aten.neg.default", {x}, {},
                   {{"y", ValueKind::Tensor, TensorProto(DType::F32, {Dim::symbol("s0"), 2})}});
  Node *cat =
      g.createNode("aten.cat.default", {Argument::List{x, x}, int64_t(0)}, {},
                   {{"z", ValueKind::Tensor, TensorProto(DType::F32, {Dim::symbol("s0") * 2, 2})}});
  g.addOutput(ok->output());
  g.addOutput(cat->output());
  OpRegistry::builtin().bind(g);
  Tensor in = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto r = Interpreter().run(g, {in});
  ASSERT_TRUE(r.ok()) << render(r.diags());
  EXPECT_EQ(std::get<Tensor>((*r)[1]).sizes(), (std::vector<int64_t>{6, 2}));

  // A result that contradicts the binding s0 = 3 is reported.
  Graph h;
  h.symbols().declare("s0", SymbolRange{2, 64});
  Value *hx =
      h.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {Dim::symbol("s0"), 2}));
  Node *bad =
      h.createNode("aten.cat.default", {Argument::List{hx, hx}, int64_t(0)}, {},
                   {{"z", ValueKind::Tensor, TensorProto(DType::F32, {Dim::symbol("s0") + 1, 2})}});
  h.addOutput(bad->output());
  OpRegistry::builtin().bind(h);
  auto r2 = Interpreter().run(h, {in});
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(firstError(r2).find("node %z (aten.cat.default)"), std::string::npos) << firstError(r2);
  EXPECT_NE(firstError(r2).find("dim 0 is 6 but the prototype says s0+1 = 4"), std::string::npos)
      << firstError(r2);

  // An input outside the symbol's range is rejected at the input.
  auto r3 = Interpreter().run(h, {f32({1, 2}, {1, 2})});
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(firstError(r3).find("input %x"), std::string::npos) << firstError(r3);
  EXPECT_NE(firstError(r3).find("outside the range of symbol s0"), std::string::npos)
      << firstError(r3);
}

TEST(Interpreter, BadUserInputs) {
  TestGraph t;
  Value *x = t.input("x", f32({2}, {1, 2}));
  Value *y = t.op("aten.neg.default", {x}, {}, DType::F32, {2});
  t.g.addOutput(y);
  OpRegistry::builtin().bind(t.g);
  auto none = Interpreter().run(t.g, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(firstError(none).find("has 1 user inputs but 0 were given"), std::string::npos);
  auto wrong = Interpreter().run(t.g, {Tensor::fromInts(DType::I32, {2}, {1, 2})});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(firstError(wrong), "input %x expects dtype f32, got i32");
}

TEST(Interpreter, KernelErrorsNameTheNode) {
  TestGraph t;
  Value *x = t.input("x", f32({2, 3}, {1, 2, 3, 4, 5, 6}));
  Value *y = t.input("y", f32({4}, {1, 2, 3, 4}));
  Value *z = t.op("aten.add.Tensor", {x, y}, {}, DType::F32, {2, 3});
  auto r = t.run({z});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(firstError(r),
            "node %" + z->name() + " (aten.add.Tensor): shapes [2, 3] and [4] do not broadcast");
}

TEST(Interpreter, OutputsInOrderIncludingInputsAndMutations) {
  TestGraph t;
  Value *x = t.input("x", f32({1}, {2}));
  Value *y = t.op("aten.neg.default", {x}, {}, DType::F32, {1});
  t.g.addOutput(y);
  t.g.addOutput(x, OutputKind::BufferMutation, "cache");
  OpRegistry::builtin().bind(t.g);
  auto r = Interpreter().run(t.g, t.inputs);
  ASSERT_TRUE(r.ok()) << render(r.diags());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(values(std::get<Tensor>((*r)[0])), (std::vector<double>{-2}));
  EXPECT_EQ(values(std::get<Tensor>((*r)[1])), (std::vector<double>{2}));
}

TEST(Interpreter, RandomInputsAreDeterministic) {
  Graph g;
  g.symbols().declare("s0", SymbolRange{3, 16});
  Value *w = g.addInput(InputKind::Parameter, "w", TensorProto(DType::F32, {5, 4}), "emb.weight");
  g.inputs().back().setData(Tensor::empty(DType::F32, {5, 4}), FullInit{0});
  Value *tok = g.addInput(InputKind::UserInput, "tok", TensorProto(DType::I64, {1, 64}));
  Value *x =
      g.addInput(InputKind::UserInput, "x", TensorProto(DType::BF16, {Dim::symbol("s0"), 8}));
  Node *e = g.createNode("aten.embedding.default", {w, tok}, {},
                         {{"e", ValueKind::Tensor, TensorProto(DType::F32, {1, 64, 4})}});
  g.addOutput(e->output());
  g.addOutput(x);
  auto a = makeRandomInputs(g, 42);
  auto b = makeRandomInputs(g, 42);
  auto c = makeRandomInputs(g, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const Tensor &ta = std::get<Tensor>((*a)[0]);
  EXPECT_TRUE(ta.equal(std::get<Tensor>((*b)[0])));
  EXPECT_TRUE(std::get<Tensor>((*a)[1]).equal(std::get<Tensor>((*b)[1])));
  EXPECT_FALSE(std::get<Tensor>((*a)[1]).equal(std::get<Tensor>((*c)[1])));
  // Token ids stay below the embedding's vocab (5) and cover more than one id.
  int64_t maxId = 0, minId = 5;
  for (int64_t i = 0; i < ta.numel(); ++i) {
    maxId = std::max(maxId, ta.getInt(i));
    minId = std::min(minId, ta.getInt(i));
  }
  EXPECT_LT(maxId, 5);
  EXPECT_GE(minId, 0);
  EXPECT_GT(maxId, minId);
  // s0 takes its range minimum (3); floats lie in [-1, 1).
  const Tensor &tx = std::get<Tensor>((*a)[1]);
  EXPECT_EQ(tx.sizes(), (std::vector<int64_t>{3, 8}));
  for (int64_t i = 0; i < tx.numel(); ++i) {
    EXPECT_GE(tx.getDouble(i), -1.0);
    EXPECT_LT(tx.getDouble(i), 1.0);
  }
  // An explicit symbol value wins, and the inputs run.
  auto d = makeRandomInputs(g, 42, {{"s0", 5}});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(std::get<Tensor>((*d)[1]).sizes(), (std::vector<int64_t>{5, 8}));
  OpRegistry::builtin().bind(g);
  auto r = Interpreter().run(g, *d);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
}

TEST(Interpreter, StrOfRuntimeValues) {
  EXPECT_EQ(str(RuntimeValue(int64_t(7))), "7");
  EXPECT_EQ(str(RuntimeValue(true)), "true");
  EXPECT_EQ(str(RuntimeValue(0.5)), "0.5");
  EXPECT_EQ(str(RuntimeValue(Tensor::fromInts(DType::I8, {2}, {1, -2}))), "i8[2] {1, -2}");
}

TEST(Interpreter, EveryRegisteredOpHasAKernel) {
  // The registry's ops and the interpreter's kernels are declared in two
  // places; keep them in sync.
  const KernelRegistry &k = KernelRegistry::builtin();
  for (const OpSchema *s : OpRegistry::builtin().all()) {
    std::string kernel = s->kernel.empty() ? s->qualifiedName() : s->kernel;
    EXPECT_NE(k.find(kernel), nullptr) << "no reference kernel for " << s->qualifiedName();
  }
}

} // namespace
