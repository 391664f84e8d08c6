//===- InterpTestUtil.h - Small graphs run on the reference interpreter -*- C++ -*-===//
//
// The interpreter-level tests (Interpreter, Kernels, QuantNumerics, ...) build
// small graphs through the Graph API with declared result prototypes, bind
// them to the builtin op registry and run them; these are the helpers they
// share for that and for reading the results.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/interp/Interpreter.h"
#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace graft::testing {

/// Builds a small graph through the Graph API, binds it to the builtin op
/// registry and runs it on the reference interpreter.
class TestGraph {
public:
  Graph g;
  std::vector<RuntimeValue> inputs;

  Value *input(const std::string &name, const Tensor &t) {
    Value *v = g.addInput(InputKind::UserInput, name, t.proto());
    inputs.emplace_back(t);
    return v;
  }
  Value *constant(const std::string &name, const Tensor &t) {
    Value *v = g.addInput(InputKind::Parameter, name, t.proto(), name);
    g.inputs().back().setData(t, InlineInit{});
    return v;
  }
  Value *op(const std::string &target, std::vector<Argument> args,
            std::vector<std::pair<std::string, Argument>> kwargs, DType dtype,
            std::vector<int64_t> sizes) {
    return opN(target, std::move(args), std::move(kwargs), {{dtype, std::move(sizes)}})[0];
  }
  std::vector<Value *> opN(const std::string &target, std::vector<Argument> args,
                           std::vector<std::pair<std::string, Argument>> kwargs,
                           std::vector<std::pair<DType, std::vector<int64_t>>> results) {
    std::vector<Graph::ResultSpec> specs;
    for (auto &[d, s] : results) {
      Shape shape(s.begin(), s.end());
      specs.push_back({"", ValueKind::Tensor, TensorProto(d, shape)});
    }
    Node *n = g.createNode(target, std::move(args), std::move(kwargs), std::move(specs));
    return std::vector<Value *>(n->outputs().begin(), n->outputs().end());
  }
  Expected<std::vector<RuntimeValue>> run(std::vector<Value *> outs) {
    for (Value *o : outs)
      g.addOutput(o);
    OpRegistry::builtin().bind(g);
    return Interpreter().run(g, inputs);
  }
  /// Runs and returns the single tensor output (fails the test on error).
  Tensor run1(Value *out) {
    auto r = run({out});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : render(r.diags()));
    if (!r.ok())
      return Tensor();
    return std::get<Tensor>((*r)[0]);
  }
};

/// The elements of `t` as doubles, in row-major order.
inline std::vector<double> values(const Tensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.getDouble(i));
  return v;
}

/// An f32 tensor of `sizes` holding `v`.
inline Tensor f32(std::vector<int64_t> sizes, std::vector<double> v) {
  return Tensor::fromDoubles(DType::F32, std::move(sizes), v);
}

} // namespace graft::testing
