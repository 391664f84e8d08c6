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

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace graft::bench {

inline std::unique_ptr<Graph> llamaGraph(const LlamaShape &s) {
  auto g = std::make_unique<Graph>("llama_4w");
  g->symbols().declare("s0", SymbolRange{1, kMaxSeq});
  const Dim s0 = Dim::symbol("s0");
  const int hd = s.dim / s.heads;
  const int kvDim = s.kvHeads * hd;
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
    qparam(p + "wq", f + "attention.wq", s.dim, s.dim);
    qparam(p + "wk", f + "attention.wk", kvDim, s.dim);
    qparam(p + "wv", f + "attention.wv", kvDim, s.dim);
    qparam(p + "wo", f + "attention.wo", s.dim, s.dim);
    qparam(p + "w1", f + "feed_forward.w1", s.hidden, s.dim);
    qparam(p + "w3", f + "feed_forward.w3", s.hidden, s.dim);
    qparam(p + "w2", f + "feed_forward.w2", s.dim, s.hidden);
  }
  Value *freqs[2];
  freqs[0] = g->addInput(InputKind::Buffer, "freqs_cos", t(DType::F32, {kMaxSeq, hd}), "freqs_cos");
  freqs[1] = g->addInput(InputKind::Buffer, "freqs_sin", t(DType::F32, {kMaxSeq, hd}), "freqs_sin");
  Value *tokens = g->addInput(InputKind::UserInput, "tokens", t(DType::I64, {1, s0}));
  Value *mask = g->addInput(InputKind::UserInput, "attn_mask", t(DType::F32, {1, 1, s0, s0}));
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
  auto i64 = [](int64_t v) { return Argument(v); };
  auto sizes = [](std::initializer_list<Argument> l) { return Argument(Argument::List(l)); };
  // Rotary tables for the positions in use: [s0, hd] -> [1, s0, hd].
  Value *rot[2];
  const char *rotName[2] = {"cos", "sin"};
  for (int i = 0; i < 2; ++i) {
    std::string n = rotName[i];
    Value *sl = node(n + "_s", t(DType::F32, {s0, hd}), "aten.slice.Tensor",
                     {freqs[i], i64(0), i64(0), seqLen});
    rot[i] = node(n, t(DType::F32, {1, s0, hd}), "aten.unsqueeze.default", {sl, i64(0)});
  }
  const Shape heads = {1, s0, s.heads, hd};
  const Shape headsT = {1, s.heads, s0, hd};
  const Shape halfT = {1, s.heads, s0, hd / 2};
  const Shape kvHeads = {1, s0, s.kvHeads, hd};
  const Shape kvHeadsT = {1, s.kvHeads, s0, hd};
  const Shape kvHalfT = {1, s.kvHeads, s0, hd / 2};
  const int rep = s.heads / s.kvHeads;
  const Shape scores = {1, s.heads, s0, s0};
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    Value *x = rmsNorm(p + "x", h, val(p + "an"));
    Value *proj[3];
    int i = 0;
    for (const char *w : {"wq", "wk", "wv"}) {
      std::string o = p + w + "_o";
      bool q = w[1] == 'q';
      int nh = q ? s.heads : s.kvHeads;
      Value *lo = linear(o, x, p + w, nh * hd, s.dim);
      Value *v = node(o + "_v", t(DType::F32, q ? heads : kvHeads), "aten.view.default",
                      {lo, sizes({i64(1), Argument(seqLen), i64(nh), i64(hd)})});
      proj[i++] = node(o + "_t", t(DType::F32, q ? headsT : kvHeadsT), "aten.transpose.int",
                       {v, i64(1), i64(2)});
    }
    // Rotary embeddings (rotate_half form) on q and k.
    Value *cos =
        node(p + "cos", t(DType::F32, {1, 1, s0, hd}), "aten.unsqueeze.default", {rot[0], i64(1)});
    Value *sin =
        node(p + "sin", t(DType::F32, {1, 1, s0, hd}), "aten.unsqueeze.default", {rot[1], i64(1)});
    Value *roped[2];
    for (int j = 0; j < 2; ++j) {
      std::string r = p + (j == 0 ? "wq" : "wk") + "_r";
      Value *xv = proj[j];
      const Shape &full = j == 0 ? headsT : kvHeadsT;
      const Shape &halfShape = j == 0 ? halfT : kvHalfT;
      Value *c = node(r + "_c", t(DType::F32, full), "aten.mul.Tensor", {xv, cos});
      Value *x1 = node(r + "_x1", t(DType::F32, halfShape), "aten.slice.Tensor",
                       {xv, i64(3), i64(0), i64(hd / 2)});
      Value *x2 = node(r + "_x2", t(DType::F32, halfShape), "aten.slice.Tensor",
                       {xv, i64(3), i64(hd / 2), i64(INT64_MAX)});
      Value *ng = node(r + "_n", t(DType::F32, halfShape), "aten.neg.default", {x2});
      Value *hf = node(r + "_h", t(DType::F32, full), "aten.cat.default",
                       {Argument(Argument::List{Argument(ng), Argument(x1)}), i64(-1)});
      Value *sn = node(r + "_s", t(DType::F32, full), "aten.mul.Tensor", {hf, sin});
      roped[j] = node(r, t(DType::F32, full), "aten.add.Tensor", {c, sn});
    }
    // repeat_kv: each key/value head serves `rep` query heads.
    Value *repeated[2];
    Value *kvIn[2] = {roped[1], proj[2]};
    for (int j = 0; j < 2; ++j) {
      std::string kv = kvIn[j]->name();
      Value *u = node(kv + "_u", t(DType::F32, {1, s.kvHeads, 1, s0, hd}), "aten.unsqueeze.default",
                      {kvIn[j], i64(2)});
      Value *e = node(kv + "_e", t(DType::F32, {1, s.kvHeads, rep, s0, hd}), "aten.expand.default",
                      {u, sizes({i64(1), i64(s.kvHeads), i64(rep), Argument(seqLen), i64(hd)})});
      repeated[j] = node(kv + "_rep", t(DType::F32, headsT), "aten.reshape.default",
                         {e, sizes({i64(1), i64(s.heads), Argument(seqLen), i64(hd)})});
    }
    // Attention: softmax(q @ k^T * hd^-0.5 + mask) @ v.
    Value *kt = node(p + "kt", t(DType::F32, {1, s.heads, hd, s0}), "aten.transpose.int",
                     {repeated[0], i64(2), i64(3)});
    Value *qk = node(p + "qk", t(DType::F32, scores), "aten.matmul.default", {roped[0], kt});
    Value *sc =
        node(p + "sc", t(DType::F32, scores), "aten.mul.Scalar", {qk, Argument(attnScale(hd))});
    Value *m = node(p + "mask", t(DType::F32, {1, 1, s0, s0}), "aten.slice.Tensor",
                    {mask, i64(3), i64(0), seqLen});
    Value *sm = node(p + "sm", t(DType::F32, scores), "aten.add.Tensor", {sc, m});
    Value *pr = node(p + "pr", t(DType::F32, scores), "aten.softmax.int",
                     {sm, i64(-1), Argument(DType::F32)});
    Value *attn = node(p + "attn", t(DType::F32, headsT), "aten.matmul.default", {pr, repeated[1]});
    Value *attnT =
        node(p + "attn_t", t(DType::F32, heads), "aten.transpose.int", {attn, i64(1), i64(2)});
    Value *attnV = node(p + "attn_v", t(DType::F32, seq), "aten.view.default",
                        {attnT, sizes({i64(1), Argument(seqLen), i64(s.dim)})});
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
