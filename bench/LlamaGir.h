//===- LlamaGir.h - Text IR for Llama-shaped int4 graphs, any size ---*- C++ -*-===//
//
// Generates a torchao int4 weight-only Llama (torch.export form: every linear
// weight is `dequantize_affine(int8 qdata, [1, G], scales, none, i8, -8, 7)`
// feeding `aten.linear`, plus a quantized embedding) with a symbolic sequence
// length, for benchmarks that need realistic graphs of 10^3..10^6 nodes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <string>

namespace graft::bench {

struct LlamaShape {
  int layers = 2;
  int dim = 64;
  int heads = 4;
  int hidden = 128;
  int vocab = 128;
  int group = 32;
  bool withData = false; ///< random() initializers instead of data-free params
};

inline std::string llamaGir(const LlamaShape &s) {
  std::ostringstream os;
  const int hd = s.dim / s.heads;
  auto init = [&](int seed, const char *lo, const char *hi) {
    if (!s.withData)
      return std::string();
    return std::string(" = random(seed=") + std::to_string(seed) + ", min=" + lo + ", max=" + hi +
           ")";
  };
  int seed = 1;
  auto qparam = [&](const std::string &v, const std::string &fqn, int n, int k) {
    os << "  param %" << v << " : i8[" << n << ", " << k << "] fqn=\"" << fqn << ".weight\""
       << init(seed++, "-8.0", "7.0") << "\n";
    os << "  param %" << v << "_s : f32[" << n << ", " << k / s.group << "] fqn=\"" << fqn
       << ".scales\"" << init(seed++, "0.001", "0.01") << "\n";
  };
  os << "graph @llama_4w {\n";
  os << "  sym s0 : [1, 2048]\n";
  qparam("tok", "tok_embeddings", s.vocab, s.dim);
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    std::string f = "layers." + std::to_string(l) + ".";
    os << "  param %" << p << "an : f32[" << s.dim << "] fqn=\"" << f << "attention_norm.weight\""
       << init(seed++, "0.9", "1.1") << "\n";
    os << "  param %" << p << "fn : f32[" << s.dim << "] fqn=\"" << f << "ffn_norm.weight\""
       << init(seed++, "0.9", "1.1") << "\n";
    for (const char *w : {"wq", "wk", "wv", "wo"})
      qparam(p + w, f + "attention." + w, s.dim, s.dim);
    qparam(p + "w1", f + "feed_forward.w1", s.hidden, s.dim);
    qparam(p + "w3", f + "feed_forward.w3", s.hidden, s.dim);
    qparam(p + "w2", f + "feed_forward.w2", s.dim, s.hidden);
  }
  os << "  input %tokens : i64[1, s0]\n";
  const std::string seq = "[1, s0, " + std::to_string(s.dim) + "]";
  auto dq = [&](const std::string &w, int n, int k) {
    os << "  %" << w << "_dq : f32[" << n << ", " << k << "] = torchao.dequantize_affine.default(%"
       << w << ", [1, " << s.group << "], %" << w << "_s, none, i8, -8, 7, output_dtype=f32)\n";
  };
  auto linear = [&](const std::string &out, const std::string &x, const std::string &w, int n,
                    int k) {
    dq(w, n, k);
    os << "  %" << out << " : f32[1, s0, " << n << "] = aten.linear.default(%" << x << ", %" << w
       << "_dq)\n";
  };
  auto rmsNorm = [&](const std::string &out, const std::string &x, const std::string &w) {
    os << "  %" << out << "_sq : f32" << seq << " = aten.mul.Tensor(%" << x << ", %" << x << ")\n";
    os << "  %" << out << "_ms : f32[1, s0, 1] = aten.mean.dim(%" << out << "_sq, [-1], true)\n";
    os << "  %" << out << "_eps : f32[1, s0, 1] = aten.add.Scalar(%" << out << "_ms, 1e-05)\n";
    os << "  %" << out << "_rs : f32[1, s0, 1] = aten.rsqrt.default(%" << out << "_eps)\n";
    os << "  %" << out << "_n : f32" << seq << " = aten.mul.Tensor(%" << x << ", %" << out
       << "_rs)\n";
    os << "  %" << out << " : f32" << seq << " = aten.mul.Tensor(%" << out << "_n, %" << w << ")\n";
  };
  dq("tok", s.vocab, s.dim);
  os << "  %h0 : f32" << seq << " = aten.embedding.default(%tok_dq, %tokens)\n";
  os << "  %seq : symint = aten.sym_size.int(%tokens, 1)\n";
  std::string h = "h0";
  const std::string heads = "[1, s0, " + std::to_string(s.heads) + ", " + std::to_string(hd) + "]";
  const std::string headsT = "[1, " + std::to_string(s.heads) + ", s0, " + std::to_string(hd) + "]";
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    rmsNorm(p + "x", h, p + "an");
    for (const char *w : {"wq", "wk", "wv"}) {
      std::string o = p + w + "_o";
      linear(o, p + "x", p + w, s.dim, s.dim);
      os << "  %" << o << "_v : f32" << heads << " = aten.view.default(%" << o << ", [1, %seq, "
         << s.heads << ", " << hd << "])\n";
      os << "  %" << o << "_t : f32" << headsT << " = aten.transpose.int(%" << o << "_v, 1, 2)\n";
    }
    os << "  %" << p << "attn : f32" << headsT << " = aten.scaled_dot_product_attention.default(%"
       << p << "wq_o_t, %" << p << "wk_o_t, %" << p << "wv_o_t, is_causal=true)\n";
    os << "  %" << p << "attn_t : f32" << heads << " = aten.transpose.int(%" << p
       << "attn, 1, 2)\n";
    os << "  %" << p << "attn_v : f32" << seq << " = aten.view.default(%" << p
       << "attn_t, [1, %seq, " << s.dim << "])\n";
    linear(p + "wo_o", p + "attn_v", p + "wo", s.dim, s.dim);
    os << "  %" << p << "h : f32" << seq << " = aten.add.Tensor(%" << h << ", %" << p << "wo_o)\n";
    rmsNorm(p + "y", p + "h", p + "fn");
    linear(p + "w1_o", p + "y", p + "w1", s.hidden, s.dim);
    linear(p + "w3_o", p + "y", p + "w3", s.hidden, s.dim);
    os << "  %" << p << "act : f32[1, s0, " << s.hidden << "] = aten.silu.default(%" << p
       << "w1_o)\n";
    os << "  %" << p << "gate : f32[1, s0, " << s.hidden << "] = aten.mul.Tensor(%" << p << "act, %"
       << p << "w3_o)\n";
    linear(p + "w2_o", p + "gate", p + "w2", s.dim, s.hidden);
    os << "  %" << p << "out : f32" << seq << " = aten.add.Tensor(%" << p << "h, %" << p
       << "w2_o)\n";
    h = p + "out";
  }
  os << "  output %" << h << "\n}\n";
  return os.str();
}

} // namespace graft::bench
