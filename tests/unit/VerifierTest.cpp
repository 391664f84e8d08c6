// The verifier rejects each kind of broken graph with one diagnostic naming
// the node (or input/output) and the reason, tagged [check-name].
#include "graft/ir/Verifier.h"
#include "graft/ops/OpRegistry.h"

#include <gtest/gtest.h>

using namespace graft;

namespace {

TensorProto f32(Shape s) {
  return TensorProto(DType::F32, std::move(s));
}

Graph::ResultSpec result(std::string name, TensorProto proto) {
  return {std::move(name), ValueKind::Tensor, std::move(proto)};
}

/// A valid graph: y = relu(x) + x, with a parameter w = x * w.
std::unique_ptr<Graph> validGraph() {
  auto g = std::make_unique<Graph>("ok");
  Value *x = g->addInput(InputKind::UserInput, "x", f32({2, 4}));
  Value *w = g->addInput(InputKind::Parameter, "w", f32({2, 4}), "layer.weight");
  g->inputFor(w)->init = RandomInit{1, -1, 1};
  Node *r = g->createNode("aten.relu.default", {x}, {}, {result("r", f32({2, 4}))});
  Node *m = g->createNode("aten.mul.Tensor", {r->output(), w}, {}, {result("m", f32({2, 4}))});
  g->addOutput(m->output());
  OpRegistry::builtin().bind(*g);
  return g;
}

/// Runs the verifier and returns the single diagnostic's message, failing the
/// test if there is not exactly one carrying `check`.
std::string expectOne(const Graph &g, const std::string &check) {
  auto diags = verify(g);
  std::string all = render(diags);
  EXPECT_EQ(diags.size(), 1u) << all;
  if (diags.empty())
    return "";
  EXPECT_NE(diags[0].message.find("[" + check + "]"), std::string::npos) << all;
  return diags[0].message;
}

} // namespace

TEST(Verifier, AcceptsValidGraph) {
  auto g = validGraph();
  auto diags = verify(*g);
  EXPECT_TRUE(diags.empty()) << render(diags);
}

TEST(Verifier, DanglingReference) {
  auto g = validGraph();
  Graph other;
  Value *foreign = other.addInput(InputKind::UserInput, "foreign", f32({2, 4}));
  Node *n = g->createNode("aten.relu.default", {foreign}, {}, {result("z", f32({2, 4}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  auto msg = expectOne(*g, "dangling-reference");
  EXPECT_NE(msg.find("node %z (aten.relu.default)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("%foreign"), std::string::npos) << msg;
}

TEST(Verifier, UseBeforeDef) {
  auto g = validGraph();
  Node *first = &g->nodes().front();
  // Insert a user of %m before the node that defines %m... at the very top.
  Value *m = g->findValue("m");
  Node *early = g->createNode("aten.relu.default", {m}, {}, {result("early", f32({2, 4}))}, first);
  g->addOutput(early->output());
  OpRegistry::builtin().bind(*g);
  auto msg = expectOne(*g, "use-before-def");
  EXPECT_NE(msg.find("node %early"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand %m is defined after its use"), std::string::npos) << msg;
}

TEST(Verifier, DuplicateValueName) {
  auto g = validGraph();
  g->addInput(InputKind::UserInput, "x", f32({1}));
  expectOne(*g, "duplicate-name");
}

TEST(Verifier, UnknownKeywordArgument) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("aten.relu.default", {x}, {{"inplace", Argument(true)}},
                          {result("z", f32({2, 4}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  auto msg = expectOne(*g, "bad-arguments");
  EXPECT_NE(msg.find("node %z (aten.relu.default)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("inplace"), std::string::npos) << msg;
}

TEST(Verifier, WrongArity) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("aten.relu.default", {x, x}, {}, {result("z", f32({2, 4}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  expectOne(*g, "bad-arguments");
  auto g2 = validGraph();
  Node *n2 =
      g2->createNode("aten.linear.default", {g2->findValue("x")}, {}, {result("z", f32({2, 4}))});
  g2->addOutput(n2->output());
  OpRegistry::builtin().bind(*g2);
  auto msg = expectOne(*g2, "bad-arguments");
  EXPECT_NE(msg.find("weight"), std::string::npos) << msg; // the missing argument is named
}

TEST(Verifier, WrongArgumentType) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("aten.mul.Tensor", {x, Argument("not a tensor")}, {},
                          {result("z", f32({2, 4}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  expectOne(*g, "bad-arguments");
}

TEST(Verifier, ResultCount) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("aten.relu.default", {x}, {},
                          {result("z", f32({2, 4})), result("z2", f32({2, 4}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  auto msg = expectOne(*g, "result-count");
  EXPECT_NE(msg.find("has 2 results"), std::string::npos) << msg;
}

TEST(Verifier, ResultKind) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("aten.relu.default", {x}, {}, {{"z", ValueKind::SymInt, {}}});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  expectOne(*g, "result-kind");
}

TEST(Verifier, DeclaredProtoDisagreesWithInference) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("aten.relu.default", {x}, {}, {result("z", f32({4, 2}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  auto msg = expectOne(*g, "proto-mismatch");
  EXPECT_NE(msg.find("declared f32[4, 2] but inferred f32[2, 4]"), std::string::npos) << msg;
  // With inference disabled the graph passes.
  VerifyOptions noInfer;
  noInfer.checkInference = false;
  EXPECT_TRUE(verify(*g, noInfer).empty());
}

TEST(Verifier, ConstantWithoutFqn) {
  auto g = validGraph();
  g->addInput(InputKind::Parameter, "p", f32({1}));
  expectOne(*g, "missing-fqn");
}

TEST(Verifier, DuplicateFqn) {
  auto g = validGraph();
  g->addInput(InputKind::Buffer, "b", f32({1}), "layer.weight");
  auto msg = expectOne(*g, "duplicate-fqn");
  EXPECT_NE(msg.find("already used by %w"), std::string::npos) << msg;
}

TEST(Verifier, SymbolicConstant) {
  auto g = validGraph();
  g->symbols().declare("s0", {1, 8});
  g->addInput(InputKind::ConstantTensor, "c", f32({Dim::symbol("s0")}), "c0");
  expectOne(*g, "symbolic-constant");
}

TEST(Verifier, ConstantDataMismatch) {
  auto g = validGraph();
  Value *c = g->addInput(InputKind::ConstantTensor, "c", f32({3}), "c0");
  g->inputFor(c)->setData(Tensor::fromDoubles(DType::F32, {2}, {1, 2}), InlineInit{});
  expectOne(*g, "constant-data-mismatch");
}

TEST(Verifier, UndeclaredSymbol) {
  auto g = validGraph();
  g->addInput(InputKind::UserInput, "t", f32({Dim::symbol("s9"), 4}));
  auto msg = expectOne(*g, "undeclared-symbol");
  EXPECT_NE(msg.find("'s9'"), std::string::npos) << msg;
}

TEST(Verifier, InvalidQuantLayout) {
  auto g = validGraph();
  TensorProto p = f32({4, 30});
  AffineQuant q;
  q.blockSize = {1, 32}; // does not divide 30
  p.quant = q;
  g->addInput(InputKind::UserInput, "q", p);
  expectOne(*g, "invalid-quant-layout");
}

TEST(Verifier, MutationOfUnknownBuffer) {
  auto g = validGraph();
  g->addOutput(g->findValue("m"), OutputKind::BufferMutation, "layers.0.k_cache");
  auto msg = expectOne(*g, "bad-mutation-target");
  EXPECT_NE(msg.find("layers.0.k_cache"), std::string::npos) << msg;
}

TEST(Verifier, NoOutputs) {
  Graph g("empty");
  g.addInput(InputKind::UserInput, "x", f32({1}));
  expectOne(g, "no-outputs");
}

TEST(Verifier, UserInputWithData) {
  auto g = validGraph();
  g->inputFor(g->findValue("x"))->init = FullInit{1.0};
  expectOne(*g, "input-with-data");
}

TEST(Verifier, OpaqueOpsAreCheckedStructurallyOnly) {
  auto g = validGraph();
  Value *x = g->findValue("x");
  Node *n = g->createNode("mylib.custom_thing.default", {x, Argument(int64_t(3))}, {},
                          {result("z", f32({7}))});
  g->addOutput(n->output());
  OpRegistry::builtin().bind(*g);
  EXPECT_EQ(n->schema(), nullptr);
  auto diags = verify(*g);
  EXPECT_TRUE(diags.empty()) << render(diags);
}

TEST(Verifier, ReportsEveryViolation) {
  auto g = validGraph();
  g->addInput(InputKind::Parameter, "p", f32({1}));                    // missing-fqn
  g->addInput(InputKind::UserInput, "t", f32({Dim::symbol("s9")}));    // undeclared-symbol
  g->addOutput(g->findValue("m"), OutputKind::BufferMutation, "nope"); // bad-mutation-target
  auto diags = verify(*g);
  EXPECT_EQ(diags.size(), 3u) << render(diags);
}
