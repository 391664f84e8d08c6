//===- LlamaGir.h - Text IR for Llama-shaped int4 graphs, any size ---*- C++ -*-===//
//
// Generates a torchao int4 weight-only Llama (torch.export form: every linear
// weight is `dequantize_affine(int8 qdata, [1, G], scales, none, i8, -8, 7)`
// feeding `aten.linear`, plus a quantized embedding) with a symbolic sequence
// length, for benchmarks that need realistic graphs of 10^3..10^6 nodes.
// Each layer is what torch.export makes of Hugging Face's eager LlamaAttention
// (67 nodes): RMSNorm decomposed into aten ops, rotary embeddings in their
// real-arithmetic rotate_half form (q * cos + cat(-x2, x1) * sin, the cos/sin
// tables sliced once to the sequence length and unsqueezed per layer),
// grouped-query attention's repeat_kv (unsqueeze, expand, reshape) and
// attention written out (matmul, scale, additive causal mask, softmax,
// matmul) instead of a fused SDPA.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

namespace graft::bench {

/// The sequence length's upper bound (the rotary tables' rows).
constexpr int kMaxSeq = 2048;

/// Attention's 1/sqrt(head_dim).
inline double attnScale(int hd) {
  return 1.0 / std::sqrt(static_cast<double>(hd));
}

struct LlamaShape {
  int layers = 2;
  int dim = 64;
  int heads = 4;
  int kvHeads = 2; ///< grouped-query attention: heads / kvHeads query heads share a key/value head
  int hidden = 128;
  int vocab = 128;
  int group = 32;
  bool withData = false; ///< random() initializers instead of data-free params
};

inline std::string llamaGir(const LlamaShape &s) {
  std::ostringstream os;
  const int hd = s.dim / s.heads;
  const int kvDim = s.kvHeads * hd;
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
  os << "  sym s0 : [1, " << kMaxSeq << "]\n";
  qparam("tok", "tok_embeddings", s.vocab, s.dim);
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    std::string f = "layers." + std::to_string(l) + ".";
    os << "  param %" << p << "an : f32[" << s.dim << "] fqn=\"" << f << "attention_norm.weight\""
       << init(seed++, "0.9", "1.1") << "\n";
    os << "  param %" << p << "fn : f32[" << s.dim << "] fqn=\"" << f << "ffn_norm.weight\""
       << init(seed++, "0.9", "1.1") << "\n";
    qparam(p + "wq", f + "attention.wq", s.dim, s.dim);
    qparam(p + "wk", f + "attention.wk", kvDim, s.dim);
    qparam(p + "wv", f + "attention.wv", kvDim, s.dim);
    qparam(p + "wo", f + "attention.wo", s.dim, s.dim);
    qparam(p + "w1", f + "feed_forward.w1", s.hidden, s.dim);
    qparam(p + "w3", f + "feed_forward.w3", s.hidden, s.dim);
    qparam(p + "w2", f + "feed_forward.w2", s.dim, s.hidden);
  }
  os << "  buffer %freqs_cos : f32[" << kMaxSeq << ", " << hd << "] fqn=\"freqs_cos\""
     << init(seed++, "-1.0", "1.0") << "\n";
  os << "  buffer %freqs_sin : f32[" << kMaxSeq << ", " << hd << "] fqn=\"freqs_sin\""
     << init(seed++, "-1.0", "1.0") << "\n";
  os << "  input %tokens : i64[1, s0]\n";
  os << "  input %attn_mask : f32[1, 1, s0, s0]\n";
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
  // Rotary tables for the positions in use: [s0, hd] -> [1, s0, hd].
  const std::string rot = "[1, s0, " + std::to_string(hd) + "]";
  const std::string half = std::to_string(hd / 2);
  for (const char *t : {"cos", "sin"}) {
    os << "  %" << t << "_s : f32[s0, " << hd << "] = aten.slice.Tensor(%freqs_" << t
       << ", 0, 0, %seq)\n";
    os << "  %" << t << " : f32" << rot << " = aten.unsqueeze.default(%" << t << "_s, 0)\n";
  }
  std::string h = "h0";
  const std::string heads = "[1, s0, " + std::to_string(s.heads) + ", " + std::to_string(hd) + "]";
  const std::string headsT = "[1, " + std::to_string(s.heads) + ", s0, " + std::to_string(hd) + "]";
  const std::string halfT = "[1, " + std::to_string(s.heads) + ", s0, " + half + "]";
  const std::string kvHeads =
      "[1, s0, " + std::to_string(s.kvHeads) + ", " + std::to_string(hd) + "]";
  const std::string kvHeadsT =
      "[1, " + std::to_string(s.kvHeads) + ", s0, " + std::to_string(hd) + "]";
  const std::string kvHalfT = "[1, " + std::to_string(s.kvHeads) + ", s0, " + half + "]";
  const int rep = s.heads / s.kvHeads;
  const std::string scores = "[1, " + std::to_string(s.heads) + ", s0, s0]";
  for (int l = 0; l < s.layers; ++l) {
    std::string p = "l" + std::to_string(l) + "_";
    rmsNorm(p + "x", h, p + "an");
    for (const char *w : {"wq", "wk", "wv"}) {
      std::string o = p + w + "_o";
      bool q = w[1] == 'q';
      int nh = q ? s.heads : s.kvHeads;
      linear(o, p + "x", p + w, nh * hd, s.dim);
      os << "  %" << o << "_v : f32" << (q ? heads : kvHeads) << " = aten.view.default(%" << o
         << ", [1, %seq, " << nh << ", " << hd << "])\n";
      os << "  %" << o << "_t : f32" << (q ? headsT : kvHeadsT) << " = aten.transpose.int(%" << o
         << "_v, 1, 2)\n";
    }
    // Rotary embeddings (rotate_half form) on q and k.
    os << "  %" << p << "cos : f32[1, 1, s0, " << hd << "] = aten.unsqueeze.default(%cos, 1)\n";
    os << "  %" << p << "sin : f32[1, 1, s0, " << hd << "] = aten.unsqueeze.default(%sin, 1)\n";
    for (const char *w : {"wq", "wk"}) {
      std::string x = p + w + "_o_t";
      std::string r = p + w + "_r";
      const std::string &full = w[1] == 'q' ? headsT : kvHeadsT;
      const std::string &halfShape = w[1] == 'q' ? halfT : kvHalfT;
      os << "  %" << r << "_c : f32" << full << " = aten.mul.Tensor(%" << x << ", %" << p
         << "cos)\n";
      os << "  %" << r << "_x1 : f32" << halfShape << " = aten.slice.Tensor(%" << x << ", 3, 0, "
         << half << ")\n";
      os << "  %" << r << "_x2 : f32" << halfShape << " = aten.slice.Tensor(%" << x << ", 3, "
         << half << ", 9223372036854775807)\n";
      os << "  %" << r << "_n : f32" << halfShape << " = aten.neg.default(%" << r << "_x2)\n";
      os << "  %" << r << "_h : f32" << full << " = aten.cat.default([%" << r << "_n, %" << r
         << "_x1], -1)\n";
      os << "  %" << r << "_s : f32" << full << " = aten.mul.Tensor(%" << r << "_h, %" << p
         << "sin)\n";
      os << "  %" << r << " : f32" << full << " = aten.add.Tensor(%" << r << "_c, %" << r
         << "_s)\n";
    }
    // repeat_kv: each key/value head serves `rep` query heads.
    for (const std::string &kv : {p + "wk_r", p + "wv_o_t"}) {
      os << "  %" << kv << "_u : f32[1, " << s.kvHeads << ", 1, s0, " << hd
         << "] = aten.unsqueeze.default(%" << kv << ", 2)\n";
      os << "  %" << kv << "_e : f32[1, " << s.kvHeads << ", " << rep << ", s0, " << hd
         << "] = aten.expand.default(%" << kv << "_u, [1, " << s.kvHeads << ", " << rep
         << ", %seq, " << hd << "])\n";
      os << "  %" << kv << "_rep : f32" << headsT << " = aten.reshape.default(%" << kv << "_e, [1, "
         << s.heads << ", %seq, " << hd << "])\n";
    }
    // Attention: softmax(q @ k^T * hd^-0.5 + mask) @ v.
    os << "  %" << p << "kt : f32[1, " << s.heads << ", " << hd << ", s0] = aten.transpose.int(%"
       << p << "wk_r_rep, 2, 3)\n";
    os << "  %" << p << "qk : f32" << scores << " = aten.matmul.default(%" << p << "wq_r, %" << p
       << "kt)\n";
    os << "  %" << p << "sc : f32" << scores << " = aten.mul.Scalar(%" << p << "qk, "
       << std::setprecision(17) << attnScale(hd) << ")\n";
    os << "  %" << p << "mask : f32[1, 1, s0, s0] = aten.slice.Tensor(%attn_mask, 3, 0, %seq)\n";
    os << "  %" << p << "sm : f32" << scores << " = aten.add.Tensor(%" << p << "sc, %" << p
       << "mask)\n";
    os << "  %" << p << "pr : f32" << scores << " = aten.softmax.int(%" << p << "sm, -1, f32)\n";
    os << "  %" << p << "attn : f32" << headsT << " = aten.matmul.default(%" << p << "pr, %" << p
       << "wv_o_t_rep)\n";
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
