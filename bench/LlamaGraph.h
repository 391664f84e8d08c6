//===- LlamaGraph.h - LlamaGir's graph, built through the Graph API ---*- C++ -*-===//
//
// The same Llama-shaped int4 graph as bench/LlamaGir.h (node for node, name
// for name: a test checks that both print identically), built directly with
// Graph::createNode instead of through the text-IR parser, which runs at
// ~35k nodes/s and would make 1M-node benchmark graphs take half a minute
// each. Data-free (no initializers).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "LlamaGir.h"

#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"

#include <memory>
#include <string>

namespace graft::bench {

inline std::unique_ptr<Graph> llamaGraph(const LlamaShape &s) {
  auto g = std::make_unique<Graph>("llama_4w");
  g->symbols().declare("s0", SymbolRange{1, 2048});
  const Dim s0 = Dim::symbol("s0");
  const int hd = s.dim / s.heads;
  auto t = [](DType dt, Shape shape) { return TensorProto(dt, std::move(shape)); };
  auto qparam = [&](const std::string &v, const std::string &fqn, int n, int k) {
    g->addInput(InputKind::Parameter, v, t(DType::I8, {n, k}), fqn + ".weight");
    g->addInput(InputKind::Parameter, v + "_s", t(DType::F32, {n, k / s.group}), fqn + ".scales");
  };
  qparam("tok", "tok_embeddings", s.vocab, s.dim);
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    std::string f = "layers." + std::to_string(l) + ".";
    g->addInput(InputKind::Parameter, p + "an", t(DType::F32, {s.dim}),
                f + "attention_norm.weight");
    g->addInput(InputKind::Parameter, p + "fn", t(DType::F32, {s.dim}), f + "ffn_norm.weight");
    for (const char *w : {"wq", "wk", "wv", "wo"})
      qparam(p + w, f + "attention." + w, s.dim, s.dim);
    qparam(p + "w1", f + "feed_forward.w1", s.hidden, s.dim);
    qparam(p + "w3", f + "feed_forward.w3", s.hidden, s.dim);
    qparam(p + "w2", f + "feed_forward.w2", s.dim, s.hidden);
  }
  Value *tokens = g->addInput(InputKind::UserInput, "tokens", t(DType::I64, {1, s0}));
  auto node = [&](const std::string &name, TensorProto proto, const char *target,
                  std::vector<Argument> args,
                  std::vector<std::pair<std::string, Argument>> kwargs = {}) {
    return g
        ->createNode(target, std::move(args), std::move(kwargs),
                     {{name, ValueKind::Tensor, std::move(proto)}})
        ->output();
  };
  auto val = [&](const std::string &name) { return g->findValue(name); };
  const Shape seq = {1, s0, s.dim};
  auto dq = [&](const std::string &w, int n, int k) {
    return node(w + "_dq", t(DType::F32, {n, k}), "torchao.dequantize_affine.default",
                {val(w), Argument::ints({1, s.group}), val(w + "_s"), Argument(),
                 Argument(DType::I8), Argument(int64_t(-8)), Argument(int64_t(7))},
                {{"output_dtype", Argument(DType::F32)}});
  };
  auto linear = [&](const std::string &out, Value *x, const std::string &w, int n, int k) {
    Value *d = dq(w, n, k);
    return node(out, t(DType::F32, {1, s0, n}), "aten.linear.default", {x, d});
  };
  auto rmsNorm = [&](const std::string &out, Value *x, Value *w) {
    Value *sq = node(out + "_sq", t(DType::F32, seq), "aten.mul.Tensor", {x, x});
    Value *ms = node(out + "_ms", t(DType::F32, {1, s0, 1}), "aten.mean.dim",
                     {sq, Argument::ints({-1}), Argument(true)});
    Value *eps =
        node(out + "_eps", t(DType::F32, {1, s0, 1}), "aten.add.Scalar", {ms, Argument(1e-05)});
    Value *rs = node(out + "_rs", t(DType::F32, {1, s0, 1}), "aten.rsqrt.default", {eps});
    Value *n = node(out + "_n", t(DType::F32, seq), "aten.mul.Tensor", {x, rs});
    return node(out, t(DType::F32, seq), "aten.mul.Tensor", {n, w});
  };
  Value *tokDq = dq("tok", s.vocab, s.dim);
  Value *h = node("h0", t(DType::F32, seq), "aten.embedding.default", {tokDq, tokens});
  Value *seqLen = g->createNode("aten.sym_size.int", {tokens, Argument(int64_t(1))}, {},
                                {{"seq", ValueKind::SymInt, TensorProto()}})
                      ->output();
  const Shape heads = {1, s0, s.heads, hd};
  const Shape headsT = {1, s.heads, s0, hd};
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    Value *x = rmsNorm(p + "x", h, val(p + "an"));
    Value *proj[3];
    int i = 0;
    for (const char *w : {"wq", "wk", "wv"}) {
      std::string o = p + w + "_o";
      Value *lo = linear(o, x, p + w, s.dim, s.dim);
      Value *v =
          node(o + "_v", t(DType::F32, heads), "aten.view.default",
               {lo, Argument(Argument::List{Argument(int64_t(1)), Argument(seqLen),
                                            Argument(int64_t(s.heads)), Argument(int64_t(hd))})});
      proj[i++] = node(o + "_t", t(DType::F32, headsT), "aten.transpose.int",
                       {v, Argument(int64_t(1)), Argument(int64_t(2))});
    }
    Value *attn =
        node(p + "attn", t(DType::F32, headsT), "aten.scaled_dot_product_attention.default",
             {proj[0], proj[1], proj[2]}, {{"is_causal", Argument(true)}});
    Value *attnT = node(p + "attn_t", t(DType::F32, heads), "aten.transpose.int",
                        {attn, Argument(int64_t(1)), Argument(int64_t(2))});
    Value *attnV = node(p + "attn_v", t(DType::F32, seq), "aten.view.default",
                        {attnT, Argument(Argument::List{Argument(int64_t(1)), Argument(seqLen),
                                                        Argument(int64_t(s.dim))})});
    Value *wo = linear(p + "wo_o", attnV, p + "wo", s.dim, s.dim);
    Value *hh = node(p + "h", t(DType::F32, seq), "aten.add.Tensor", {h, wo});
    Value *y = rmsNorm(p + "y", hh, val(p + "fn"));
    Value *w1 = linear(p + "w1_o", y, p + "w1", s.hidden, s.dim);
    Value *w3 = linear(p + "w3_o", y, p + "w3", s.hidden, s.dim);
    Value *act = node(p + "act", t(DType::F32, {1, s0, s.hidden}), "aten.silu.default", {w1});
    Value *gate = node(p + "gate", t(DType::F32, {1, s0, s.hidden}), "aten.mul.Tensor", {act, w3});
    Value *w2 = linear(p + "w2_o", gate, p + "w2", s.dim, s.hidden);
    h = node(p + "out", t(DType::F32, seq), "aten.add.Tensor", {hh, w2});
  }
  g->addOutput(h);
  OpRegistry::builtin().bind(*g);
  return g;
}

} // namespace graft::bench
