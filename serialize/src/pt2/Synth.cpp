//===- Synth.cpp - Llama-shaped exported programs -------------------------===//
//
// Builds the graph node by node the way torch.export records an ExecuTorch
// llama_transformer forward: every call is normalized like the dispatcher
// hands it to the tracer (all non-keyword-only arguments positional, trailing
// defaults dropped, keyword-only ones as keywords when not default), and every
// result prototype comes from graft's own shape inference, so the graph
// verifies by construction.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/Synth.h"

#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace graft {

std::string_view name(SynthQuant quant) {
  switch (quant) {
  case SynthQuant::None:
    return "none";
  case SynthQuant::W4:
    return "4w";
  case SynthQuant::W8A8W4:
    return "8da4w";
  case SynthQuant::W8A8W8:
    return "8da8w";
  case SynthQuant::Pt2eW8:
    return "pt2e-8w";
  case SynthQuant::QatW4:
    return "qat-4w";
  case SynthQuant::QatW8A8W4:
    return "qat-8da4w";
  }
  return "?";
}

std::optional<SynthQuant> parseSynthQuant(std::string_view text) {
  for (SynthQuant q : {SynthQuant::None, SynthQuant::W4, SynthQuant::W8A8W4, SynthQuant::W8A8W8,
                       SynthQuant::Pt2eW8, SynthQuant::QatW4, SynthQuant::QatW8A8W4})
    if (name(q) == text)
      return q;
  return std::nullopt;
}

Expected<SynthEmbeddingQuant> parseSynthEmbeddingQuant(std::string_view text) {
  auto bad = [&](const std::string &why) {
    return Diagnostic::error("--embedding-quant: '" + std::string(text) + "' " + why);
  };
  // get_quant_embedding_transform (executorch cff6f4dd source_transformation/quantize.py):
  // "torchao:..." goes to torchao.prototype.quantization.embedding's EmbeddingQuantizer,
  // whose exported torchao._embedding_Nbit ops read weights packed for torchao's CPU
  // kernels; graft keeps those nodes opaque (docs/pt2.md), so a synthesized one could
  // never lower.
  if (text.rfind("torchao:", 0) == 0)
    return bad("is the torchao: form (EmbeddingQuantizer, packed torchao._embedding_Nbit ops "
               "graft leaves opaque); write BITS,GROUP, ExecuTorch's QuantizedGroupEmbedding");
  std::size_t comma = text.find(',');
  if (comma == std::string_view::npos || text.find(',', comma + 1) != std::string_view::npos)
    return bad("is not BITS,GROUP (upstream's \"<bitwidth>,<groupsize>\")");
  auto number = [](std::string_view t) -> std::optional<int> {
    if (t.empty() || t.size() > 9 ||
        !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::nullopt;
    return std::stoi(std::string(t));
  };
  std::string_view bits = text.substr(0, comma), group = text.substr(comma + 1);
  SynthEmbeddingQuant q;
  auto b = number(bits);
  // EmbeddingQuantHandler asserts bitwidth in [2, 4, 8].
  if (!b || (*b != 2 && *b != 4 && *b != 8))
    return bad("has bits '" + std::string(bits) +
               "': ExecuTorch quantizes embeddings to 2, 4 "
               "or 8 bits");
  q.bits = *b;
  if (group == "none" || group == "None") {
    q.group = 0;
  } else {
    auto g = number(group);
    if (!g)
      return bad("has group '" + std::string(group) +
                 "': a non-negative integer, or none / 0 for one group per row");
    q.group = *g;
  }
  return q;
}

std::string_view name(SynthKvCache kv) {
  switch (kv) {
  case SynthKvCache::None:
    return "none";
  case SynthKvCache::Custom:
    return "custom";
  case SynthKvCache::Plain:
    return "plain";
  }
  return "?";
}

std::optional<SynthKvCache> parseSynthKvCache(std::string_view text) {
  for (SynthKvCache k : {SynthKvCache::None, SynthKvCache::Custom, SynthKvCache::Plain})
    if (name(k) == text)
      return k;
  return std::nullopt;
}

namespace {

int kvHeadsOf(const LlamaSynthOptions &o) {
  return o.kvHeads > 0 ? o.kvHeads : o.heads;
}

/// ModelArgs.__post_init__: head_dim defaults to dim // n_heads.
int headDimOf(const LlamaSynthOptions &o) {
  return o.headDim > 0 ? o.headDim : o.dim / o.heads;
}

/// hf_precompute_freqs_cis: `dim = int(dim * partial_rotary_factor)` (Python's
/// int() truncates).
int rotaryDimOf(const LlamaSynthOptions &o) {
  return static_cast<int>(headDimOf(o) * o.partialRotaryFactor);
}

int hiddenOf(const LlamaSynthOptions &o) {
  if (o.hidden > 0)
    return o.hidden;
  // llama_transformer.FeedForward: 2/3 of 4*dim, rounded up to a multiple of 256.
  int h = 2 * (4 * o.dim) / 3;
  return (h + 255) / 256 * 256;
}

} // namespace

Status validate(const LlamaSynthOptions &o) {
  auto bad = [](const std::string &m) { return Status(Diagnostic::error("synth: " + m)); };
  if (o.layers < 0 || o.dim <= 0 || o.heads <= 0 || o.vocab <= 0 || o.maxSeqLen <= 0 ||
      o.seqLen <= 0)
    return bad("layers must be >= 0 and dim, heads, vocab, max-seq-len, seq-len positive");
  if (o.headDim < 0)
    return bad("head dim must be positive (0: dim / heads)");
  if (o.headDim == 0 && o.dim % o.heads != 0)
    return bad("dim " + std::to_string(o.dim) + " is not divisible by heads " +
               std::to_string(o.heads) + " (or give the head dim)");
  int hd = headDimOf(o);
  if (hd % 2 != 0)
    return bad("the head dim " + std::to_string(hd) + " must be even (rotary embeddings)");
  int kv = kvHeadsOf(o);
  if (kv <= 0 || o.heads % kv != 0)
    return bad("heads " + std::to_string(o.heads) + " is not a multiple of kv-heads " +
               std::to_string(kv));
  if (o.seqLen > o.maxSeqLen)
    return bad("seq-len " + std::to_string(o.seqLen) + " exceeds max-seq-len " +
               std::to_string(o.maxSeqLen));
  if (o.kvCache != SynthKvCache::None && o.ropePrefixSlice)
    return bad("--kv-cache reads the rotary tables at input_pos; --rope-prefix-slice cuts them "
               "from 0");
  if (!(o.partialRotaryFactor > 0.0 && o.partialRotaryFactor <= 1.0))
    return bad("partial rotary factor must be in (0, 1]");
  if (o.partialRotaryFactor != 1.0 && !o.useHfRope)
    return bad("a partial rotary factor needs HuggingFace RoPE (--use-hf-rope), as in "
               "ExecuTorch's Rope");
  if (o.qkNormBeforeRope && !o.useQkNorm)
    return bad("qk-norm-before-rope places the q/k norm, which needs use-qk-norm");
  if (!(o.normEps >= 0.0 && o.normEps < 1.0))
    return bad("norm eps must be in [0, 1)");
  if (o.useHfRope) {
    int r = rotaryDimOf(o);
    if (r <= 0 || r % 2 != 0)
      return bad("the rotary dim int(" + std::to_string(hd) +
                 " * partial rotary factor) = " + std::to_string(r) + " must be positive and even");
  }
  if (o.checkpointDType != DType::F32 && o.checkpointDType != DType::BF16 &&
      o.checkpointDType != DType::F16)
    return bad("checkpoint dtype must be f32, bf16 or f16");
  if (o.dtype != DType::F32 && o.dtype != DType::BF16 && o.dtype != DType::F16)
    return bad("dtype must be f32, bf16 or f16");
  bool grouped = o.quant == SynthQuant::W4 || o.quant == SynthQuant::W8A8W4 ||
                 o.quant == SynthQuant::QatW4 || o.quant == SynthQuant::QatW8A8W4;
  if (grouped) {
    if (o.groupSize <= 0)
      return bad("group size must be positive");
    for (int k : {o.dim, hiddenOf(o), o.heads * hd})
      if (k % o.groupSize != 0)
        return bad("group size " + std::to_string(o.groupSize) + " does not divide " +
                   std::to_string(k));
  }
  if (const SynthEmbeddingQuant &e = o.embeddingQuant; e.bits != 0) {
    if (e.bits != 2 && e.bits != 4 && e.bits != 8)
      return bad("embedding quantization takes 2, 4 or 8 bits");
    if (e.group < 0 || (e.group > 0 && o.dim % e.group != 0))
      return bad("embedding group size " + std::to_string(e.group) + " does not divide dim " +
                 std::to_string(o.dim) + " (torchao PerGroup)");
    // EmbeddingQuantHandler packs 8 / bits values per byte ("automatic padding not
    // implemented yet").
    if (o.dim % (8 / e.bits) != 0)
      return bad("dim " + std::to_string(o.dim) + " does not pack " + std::to_string(8 / e.bits) +
                 " values per byte (" + std::to_string(e.bits) + "-bit embedding)");
    // -E swaps tok_embeddings for QuantizedGroupEmbedding (buffers weight + scales) and
    // -qmode quantizes output.weight on its own: nothing is shared any more (upstream's
    // shared form is the torchao: one, TiedEmbeddingQuantizer).
    if (o.tiedEmbeddings)
      return bad("--tied-embeddings with embedding quantization: ExecuTorch's -E BITS,GROUP "
                 "replaces tok_embeddings by QuantizedGroupEmbedding buffers and quantizes the "
                 "LM head separately, so nothing stays tied");
    // QuantizedGroupEmbedding records dtype=child.weight.dtype when it is built (the
    // checkpoint dtype): a different compute dtype would leave that dtype in the graph.
    if (o.checkpointDType != o.dtype)
      return bad("embedding quantization needs the checkpoint dtype to be the compute dtype "
                 "(QuantizedGroupEmbedding keeps the dtype it was built in)");
  }
  // Int8DynamicActivationIntxWeightConfig quantizes linears only: a tied LM head would
  // become int8 while the embedding stays float.
  if (o.quant == SynthQuant::W8A8W8 && o.tiedEmbeddings)
    return bad("--tied-embeddings with 8da8w: torchao quantizes output.weight (a linear) and "
               "leaves tok_embeddings float, so nothing stays tied");
  if (o.quant == SynthQuant::W8A8W8 && o.checkpointDType != o.dtype)
    return bad("8da8w is written with the checkpoint dtype equal to the compute dtype");
  return okStatus();
}

int64_t llamaParameterCount(const LlamaSynthOptions &o) {
  int64_t d = o.dim, h = hiddenOf(o), hd = headDimOf(o), kvDim = kvHeadsOf(o) * hd,
          qDim = o.heads * hd;
  int64_t perLayer = 2 * d * qDim + 2 * d * kvDim + 3 * d * h + 2 * d;
  if (o.attentionQkvBias)
    perLayer += qDim + 2 * kvDim;
  if (o.useQkNorm)
    perLayer += 2 * hd;
  int64_t emb = int64_t(o.vocab) * d;
  return int64_t(o.layers) * perLayer + emb + (o.tiedEmbeddings ? 0 : emb) + d;
}

Pt2WriteOptions synthWriteOptions(const LlamaSynthOptions &o) {
  Pt2WriteOptions w;
  if (o.dynamicSeq)
    w.symbolHints["s0"] = o.seqLen;
  return w;
}

namespace {

/// Builds nodes with torch.export's naming and argument conventions.
class Builder {
public:
  Builder(Graph &g, const LlamaSynthOptions &o) : g_(g), o_(o), reg_(OpRegistry::builtin()) {}

  /// Python builtins FX avoids as node names (it starts them at _1).
  std::string fresh(const std::string &base) {
    static const std::set<std::string> kBuiltins = {"pow",   "slice", "max", "min",   "sum", "abs",
                                                    "round", "any",   "all", "input", "type"};
    int &n = counts_[base];
    if (n == 0 && kBuiltins.count(base))
      n = 1;
    std::string name = n == 0 ? base : base + "_" + std::to_string(n);
    ++n;
    while (g_.findValue(name))
      name = base + "_" + std::to_string(n++);
    return name;
  }

  Value *constant(InputKind kind, const std::string &fqn, DType dt, std::vector<int64_t> sizes,
                  ConstantInit init, bool persistent = true) {
    std::string prefix = kind == InputKind::Parameter ? "p_"
                         : kind == InputKind::Buffer  ? "b_"
                                                      : "c_";
    std::string n = fqn;
    std::replace(n.begin(), n.end(), '.', '_');
    Value *v =
        g_.addInput(kind, prefix + n, TensorProto(dt, Shape(sizes.begin(), sizes.end())), fqn);
    GraphInput &in = g_.inputs().back();
    in.persistent = persistent;
    if (!o_.dataFree)
      in.init = std::move(init);
    return v;
  }

  RandomInit random(double lo, double hi) {
    return RandomInit{o_.seed * 1000003ull + seedIndex_++, lo, hi};
  }

  /// Sets the module scope whose metadata the next nodes carry.
  void scope(std::vector<std::pair<std::string, std::string>> modules, std::string line) {
    modules_ = std::move(modules);
    line_ = std::move(line);
  }

  /// Calls `target` with its schema arguments by name (absent = default).
  Expected<std::vector<Value *>> call(const std::string &target,
                                      const std::vector<std::pair<std::string, Argument>> &named,
                                      const std::string &base = {}) {
    // Python sym ops keep their IR spelling (operator.add) as the target.
    const OpSchema *s = reg_.lookup(canonicalTarget(target));
    if (!s)
      return Diagnostic::internal("synth: unknown op " + target);
    std::vector<std::optional<Argument>> full(s->args.size());
    for (const auto &[k, v] : named) {
      int i = s->argIndex(k);
      if (i < 0)
        return Diagnostic::internal("synth: " + target + " has no argument " + k);
      full[static_cast<std::size_t>(i)] = v;
    }
    auto isDefault = [&](std::size_t i) {
      if (!full[i])
        return true;
      return s->args[i].defaultValue && *s->args[i].defaultValue == *full[i];
    };
    std::size_t lastPositional = 0;
    for (std::size_t i = 0; i < s->args.size(); ++i)
      if (!s->args[i].keywordOnly && !isDefault(i))
        lastPositional = i + 1;
    std::vector<Argument> args;
    std::vector<std::pair<std::string, Argument>> kwargs;
    for (std::size_t i = 0; i < s->args.size(); ++i) {
      if (!s->args[i].keywordOnly) {
        if (i < lastPositional) {
          if (!full[i] && !s->args[i].defaultValue)
            return Diagnostic::internal("synth: " + target + " misses " + s->args[i].name);
          args.push_back(full[i] ? *full[i] : *s->args[i].defaultValue);
        }
      } else if (!isDefault(i)) {
        kwargs.emplace_back(s->args[i].name, *full[i]);
      }
    }
    std::string b = base.empty() ? s->name : base;
    std::vector<Graph::ResultSpec> results;
    for (std::size_t i = 0; i < s->returns.size(); ++i) {
      Graph::ResultSpec r;
      const SchemaType &t = s->returns[i].type;
      r.kind = t.base == SchemaType::Base::Tensor ? ValueKind::Tensor
               : s->inferRule == "sym_compare"    ? ValueKind::SymBool
                                                  : ValueKind::SymInt;
      r.name = fresh(s->returns.size() > 1 ? "getitem" : b);
      results.push_back(std::move(r));
    }
    Node *n = g_.createNode(target, std::move(args), std::move(kwargs), std::move(results));
    n->setSchema(s);
    if (!results.empty() || !n->outputs().empty()) {
      auto inferred = inferResults(*n, g_.symbols());
      if (!inferred) {
        std::vector<Diagnostic> d = inferred.diags();
        d.insert(d.begin(), Diagnostic::internal("synth: cannot infer " + target));
        return Failure(std::move(d));
      }
      for (std::size_t i = 0; i < n->outputs().size() && i < inferred->size(); ++i)
        g_.setProto(n->outputs()[i], (*inferred)[i].proto);
    }
    addMetadata(*n, target);
    return std::vector<Value *>(n->outputs().begin(), n->outputs().end());
  }

  Expected<Value *> call1(const std::string &target,
                          const std::vector<std::pair<std::string, Argument>> &named,
                          const std::string &base = {}) {
    GRAFT_TRY(std::vector<Value *> r, call(target, named, base));
    if (r.size() != 1)
      return Diagnostic::internal("synth: " + target + " should have one result");
    return r[0];
  }

private:
  void addMetadata(Node &n, const std::string &target) {
    if (!o_.metadata)
      return;
    auto &m = n.metadata();
    if (!line_.empty())
      m.emplace_back("stack_trace",
                     "  File \"/executorch/examples/models/llama/llama_transformer.py\", "
                     "in forward\n    " +
                         line_ + "\n");
    if (!modules_.empty()) {
      std::string s;
      for (const auto &[path, cls] : modules_) {
        std::string key = "L__self__";
        for (char c : path)
          key += c == '.' ? '_' : c;
        if (!path.empty())
          key = "L__self___" + key.substr(9);
        s += (s.empty() ? "" : ";") + key + "," + path + "," + cls;
      }
      m.emplace_back("nn_module_stack", s);
    }
    if (target == "aten.linear.default") {
      m.emplace_back("source_fn_stack", "linear,torch.nn.modules.linear.Linear");
      m.emplace_back("torch_fn", "linear;builtin_function_or_method.linear");
    } else if (target == "aten.embedding.default") {
      m.emplace_back("source_fn_stack", "embedding,torch.nn.modules.sparse.Embedding");
      m.emplace_back("torch_fn", "embedding;function.embedding");
    }
  }

  Graph &g_;
  const LlamaSynthOptions &o_;
  const OpRegistry &reg_;
  std::map<std::string, int> counts_;
  std::vector<std::pair<std::string, std::string>> modules_;
  std::string line_;
  uint64_t seedIndex_ = 0;
};

constexpr const char *kTransformer =
    "executorch.examples.models.llama.llama_transformer.Transformer";
constexpr const char *kBlock =
    "executorch.examples.models.llama.llama_transformer.TransformerBlock";
constexpr const char *kAttention = "executorch.examples.models.llama.attention.AttentionMHA";
constexpr const char *kFeedForward = "executorch.examples.models.llama.feed_forward.FeedForward";
constexpr const char *kRmsNorm = "executorch.examples.models.llama.norm.RMSNorm";
constexpr const char *kLinear = "torch.nn.modules.linear.Linear";

/// The constants a (possibly quantized) weight became.
struct QWeight {
  Value *w = nullptr; ///< float weight / qdata / _frozen_param
  Value *scale = nullptr;
  Value *zp = nullptr;
  Value *bias = nullptr; ///< nn.Linear's float bias (never quantized)
};

class LlamaSynth {
public:
  LlamaSynth(Graph &g, const LlamaSynthOptions &o) : g_(g), o_(o), b_(g, o) {
    dt_ = o.dtype;
    ckpt_ = o.checkpointDType;
    hd_ = headDimOf(o);
    qDim_ = o.heads * hd_;
    kv_ = kvHeadsOf(o);
    kvHeads_ = kv_;
    kvc_ = o.kvCache;
    hidden_ = hiddenOf(o);
  }

  Status build() {
    using Mods = std::vector<std::pair<std::string, std::string>>;
    const bool grouped = o_.quant == SynthQuant::W4 || o_.quant == SynthQuant::W8A8W4;
    // Placeholders in torch.export's order: parameters, buffers, constants, user inputs.
    // -E's QuantizedGroupEmbedding holds buffers, lifted after the parameters (below).
    const bool groupEmbedding = o_.embeddingQuant.bits != 0;
    const QWeight *emb =
        groupEmbedding ? nullptr : weight("tok_embeddings", o_.vocab, o_.dim, /*isEmbedding=*/true);
    struct Layer {
      Value *attnNorm, *ffnNorm, *qNorm = nullptr, *kNorm = nullptr;
      const QWeight *wq, *wk, *wv, *wo, *w1, *w2, *w3;
    };
    std::vector<Layer> layers;
    const bool qkvBias = o_.attentionQkvBias;
    for (int l = 0; l < o_.layers; ++l) {
      std::string p = "layers." + std::to_string(l) + ".";
      Layer L;
      // AttentionMHA.__init__ runs _init_norms before _init_projections, so
      // q_norm_fn / k_norm_fn are registered (and lifted) before wq.
      if (o_.useQkNorm) {
        L.qNorm = b_.constant(InputKind::Parameter, p + "attention.q_norm_fn.weight", dt_, {hd_},
                              b_.random(0.9, 1.1));
        L.kNorm = b_.constant(InputKind::Parameter, p + "attention.k_norm_fn.weight", dt_, {hd_},
                              b_.random(0.9, 1.1));
      }
      L.wq = weight(p + "attention.wq", qDim_, o_.dim, false, qkvBias);
      L.wk = weight(p + "attention.wk", kv_ * hd_, o_.dim, false, qkvBias);
      L.wv = weight(p + "attention.wv", kv_ * hd_, o_.dim, false, qkvBias);
      L.wo = weight(p + "attention.wo", o_.dim, qDim_);
      L.w1 = weight(p + "feed_forward.w1", hidden_, o_.dim);
      L.w2 = weight(p + "feed_forward.w2", o_.dim, hidden_);
      L.w3 = weight(p + "feed_forward.w3", hidden_, o_.dim);
      L.attnNorm = b_.constant(InputKind::Parameter, p + "attention_norm.weight", dt_, {o_.dim},
                               b_.random(0.9, 1.1));
      L.ffnNorm = b_.constant(InputKind::Parameter, p + "ffn_norm.weight", dt_, {o_.dim},
                              b_.random(0.9, 1.1));
      layers.push_back(L);
    }
    Value *norm =
        b_.constant(InputKind::Parameter, "norm.weight", dt_, {o_.dim}, b_.random(0.9, 1.1));
    const QWeight *out;
    if (o_.tiedEmbeddings && o_.quant != SynthQuant::Pt2eW8) {
      // A tied LM head: the same bytes under a second FQN (the writer stores
      // identical random() initializers once, so the archive has one storage).
      out = tie("output", *emb);
    } else {
      out = weight("output", o_.vocab, o_.dim);
    }
    // Non-persistent rotary tables.
    // Llama's tables are [max_seq, head_dim / 2]; hf_precompute_freqs_cis
    // writes cat((freqs, freqs), -1), [max_seq, rotary_dim].
    const int64_t tableDim = o_.useHfRope ? rotaryDimOf(o_) : hd_ / 2;
    Value *cosT = b_.constant(InputKind::Buffer, "freqs_cos", dt_, {o_.maxSeqLen, tableDim},
                              b_.random(-1.0, 1.0), /*persistent=*/false);
    Value *sinT = b_.constant(InputKind::Buffer, "freqs_sin", dt_, {o_.maxSeqLen, tableDim},
                              b_.random(-1.0, 1.0), /*persistent=*/false);
    // named_buffers() lists the root's own buffers, then its children's in module order:
    // tok_embeddings (the first child) before the layers' KV caches.
    if (groupEmbedding)
      emb = quantizedGroupEmbedding();
    // The KV cache's buffers, in named_buffers() order: each AttentionMHA's
    // own `mask` (registered in __init__, persistent=False), then its
    // kv_cache submodule's k_cache and v_cache (torch.zeros, persistent).
    std::vector<KvBuffers> kvBufs;
    if (kvc_ != SynthKvCache::None)
      for (int l = 0; l < o_.layers; ++l) {
        std::string p = "layers." + std::to_string(l) + ".attention.";
        KvBuffers B;
        B.mask = b_.constant(InputKind::Buffer, p + "mask", DType::Bool,
                             {o_.maxSeqLen, o_.maxSeqLen}, FullInit{0}, /*persistent=*/false);
        if (!o_.dataFree) {
          // torch.tril(torch.ones(M, M, dtype=torch.bool)): a constant the
          // exported program carries as data, not as ops.
          const int64_t M = o_.maxSeqLen;
          Tensor t = Tensor::empty(DType::Bool, {M, M});
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j <= i; ++j)
              t.setInt(i * M + j, 1);
          g_.inputs().back().setData(std::move(t), InlineInit{});
        }
        std::vector<int64_t> cache = kvc_ == SynthKvCache::Custom
                                         ? std::vector<int64_t>{1, o_.maxSeqLen, kvHeads_, hd_}
                                         : std::vector<int64_t>{1, kvHeads_, o_.maxSeqLen, hd_};
        B.k = b_.constant(InputKind::Buffer, p + "kv_cache.k_cache", dt_, cache, FullInit{0});
        B.v = b_.constant(InputKind::Buffer, p + "kv_cache.v_cache", dt_, cache, FullInit{0});
        kvBufs.push_back(B);
      }
    // PT2E's qparams and folded weights are persistent buffers registered on
    // the root module after the model's own: convert_pt2e registers each
    // weight's _scale_<i> / _zero_point_<i> (create_getattr_from_value ->
    // register_buffer), then constant folding registers the quantized
    // weights _frozen_param<i> (replace_node_with_constant ->
    // register_buffer). torch.export lifts them as b_ placeholders in that
    // registration order.
    for (bool frozen : {false, true})
      for (PendingConst &c : pending_)
        if ((c.fqn.rfind("_frozen_param", 0) == 0) == frozen)
          *c.slot = b_.constant(InputKind::Buffer, c.fqn, c.dtype, c.sizes, c.init);

    Value *tokens;
    Argument seq;
    if (o_.dynamicSeq) {
      g_.symbols().declare("s0", SymbolRange{1, o_.maxSeqLen});
      tokens = g_.addInput(InputKind::UserInput, "tokens",
                           TensorProto(DType::I64, {1, Dim::symbol("s0")}));
    } else {
      tokens = g_.addInput(InputKind::UserInput, "tokens", TensorProto(DType::I64, {1, o_.seqLen}));
    }
    bool dynamicPos = o_.dynamicSeq || o_.dynamicPos || kvc_ != SynthKvCache::None;
    Value *inputPos = nullptr;
    if (dynamicPos)
      inputPos = g_.addInput(InputKind::UserInput, "input_pos", TensorProto(DType::I64, {1}));

    b_.scope({{"", kTransformer}}, "h = self.tok_embeddings(tokens)");
    if (o_.dynamicSeq) {
      GRAFT_TRY(Value * s,
                b_.call1("aten.sym_size.int", {{"self", tokens}, {"dim", 1}}, "sym_size_int"));
      seq = Argument(s);
    } else {
      seq = Argument(int64_t(o_.seqLen));
    }
    seq_ = seq;
    inputPos_ = inputPos;
    b_.scope({{"", kTransformer},
              {"tok_embeddings",
               groupEmbedding ? "executorch.examples.models.llama.source_transformation.quantize."
                                "QuantizedGroupEmbedding"
                              : "torch.nn.modules.sparse.Embedding"}},
             "h = self.tok_embeddings(tokens)");
    GRAFT_TRY(Value * h, embedding(*emb, tokens));
    Value *cos = nullptr, *sin = nullptr;
    if (dynamicPos && !o_.ropePrefixSlice) {
      GRAFT_TRY(std::tie(cos, sin), ropeTablesAtPosition(inputPos, seq, cosT, sinT));
    } else {
      if (dynamicPos) {
        // graft's earlier spelling: the position is read and constrained, and
        // the tables are cut from 0 (right for a prefill from position 0).
        b_.scope({{"", kTransformer}}, "input_pos_item = input_pos[-1].item()");
        GRAFT_TRY(Value * pos, b_.call1("aten._local_scalar_dense.default", {{"self", inputPos}}));
        g_.symbols().declare(pos->name(), SymbolRange{0, o_.maxSeqLen - 1});
        GRAFT_TRY(
            auto none,
            b_.call("aten.sym_constrain_range_for_size.default",
                    {{"size", pos}, {"min", int64_t(0)}, {"max", int64_t(o_.maxSeqLen - 1)}}));
        (void)none;
      }
      b_.scope({{"", kTransformer}}, "freqs_cos = self.freqs_cos[:seqlen]");
      GRAFT_TRY(cos, b_.call1("aten.slice_copy.Tensor",
                              {{"self", cosT}, {"dim", 0}, {"start", 0}, {"end", seq}}));
      GRAFT_TRY(sin, b_.call1("aten.slice_copy.Tensor",
                              {{"self", sinT}, {"dim", 0}, {"start", 0}, {"end", seq}}));
    }
    (void)grouped;

    for (int l = 0; l < o_.layers; ++l) {
      const Layer &L = layers[static_cast<std::size_t>(l)];
      std::string p = "layers." + std::to_string(l);
      Mods block = {{"", kTransformer}, {p, kBlock}};
      auto with = [&](const std::string &sub, const char *cls) {
        Mods m = block;
        m.emplace_back(p + "." + sub, cls);
        return m;
      };
      b_.scope(with("attention_norm", kRmsNorm), "return self._norm(x) * self.weight");
      GRAFT_TRY(Value * x, rmsNorm(h, L.attnNorm));
      Mods attn = with("attention", kAttention);
      auto proj = [&](const char *n) {
        Mods m = attn;
        m.emplace_back(p + ".attention." + n, kLinear);
        return m;
      };
      b_.scope(proj("wq"), "q, k, v = self.wq(x), self.wk(x), self.wv(x)");
      GRAFT_TRY(Value * q, linear(x, *L.wq));
      b_.scope(proj("wk"), "q, k, v = self.wq(x), self.wk(x), self.wv(x)");
      GRAFT_TRY(Value * k, linear(x, *L.wk));
      b_.scope(proj("wv"), "q, k, v = self.wq(x), self.wk(x), self.wv(x)");
      GRAFT_TRY(Value * v, linear(x, *L.wv));
      b_.scope(attn, "q = q.view(bsz, seqlen, self.n_local_heads, self.head_dim)");
      GRAFT_TRY(
          q, b_.call1("aten.view.default", {{"self", q}, {"size", dims({1, seq, o_.heads, hd_})}}));
      GRAFT_TRY(k,
                b_.call1("aten.view.default", {{"self", k}, {"size", dims({1, seq, kv_, hd_})}}));
      GRAFT_TRY(v,
                b_.call1("aten.view.default", {{"self", v}, {"size", dims({1, seq, kv_, hd_})}}));
      // AttentionMHA._prepare_qkv: q = self.q_norm_fn(q); k = self.k_norm_fn(k)
      // either before the rotary embedding on [1, S, H, hd] or after the
      // transposes on [1, H, S, hd].
      auto qkNorm = [&]() -> Status {
        auto normMods = [&](const char *n) {
          Mods m = attn;
          m.emplace_back(p + ".attention." + n, kRmsNorm);
          return m;
        };
        b_.scope(normMods("q_norm_fn"), "return self._norm(x) * self.weight");
        GRAFT_TRY(q, rmsNorm(q, L.qNorm));
        b_.scope(normMods("k_norm_fn"), "return self._norm(x) * self.weight");
        GRAFT_TRY(k, rmsNorm(k, L.kNorm));
        return okStatus();
      };
      if (o_.useQkNorm && o_.qkNormBeforeRope)
        GRAFT_CHECK_OK(qkNorm());
      b_.scope(attn, "q, k = self.rope.forward(q, k, freqs_cos, freqs_sin)");
      GRAFT_TRY(auto qk, o_.useHfRope ? hfRope(q, k, cos, sin) : rope(q, k, seq, cos, sin));
      q = qk.first;
      k = qk.second;
      b_.scope(attn, "q = q.transpose(1, 2)  # (bs, n_local_heads, seqlen, head_dim)");
      GRAFT_TRY(q, b_.call1("aten.transpose.int", {{"self", q}, {"dim0", 1}, {"dim1", 2}}));
      GRAFT_TRY(k, b_.call1("aten.transpose.int", {{"self", k}, {"dim0", 1}, {"dim1", 2}}));
      GRAFT_TRY(v, b_.call1("aten.transpose.int", {{"self", v}, {"dim0", 1}, {"dim1", 2}}));
      if (o_.useQkNorm && !o_.qkNormBeforeRope)
        GRAFT_CHECK_OK(qkNorm());
      Value *a = nullptr;
      if (kvc_ == SynthKvCache::None) {
        b_.scope(attn, "output = F.scaled_dot_product_attention(q, k, v, is_causal=True)");
        std::vector<std::pair<std::string, Argument>> sdpa = {
            {"query", q}, {"key", k}, {"value", v}, {"is_causal", true}};
        if (kv_heads_differ())
          sdpa.emplace_back("enable_gqa", true);
        GRAFT_TRY(a, b_.call1("aten.scaled_dot_product_attention.default", sdpa));
        b_.scope(attn, "output = output.transpose(1, 2).reshape(bsz, seqlen, -1)");
        GRAFT_TRY(a, b_.call1("aten.transpose.int", {{"self", a}, {"dim0", 1}, {"dim1", 2}}));
        GRAFT_TRY(a, b_.call1("aten.clone.default",
                              {{"self", a}, {"memory_format", MemoryFormat::Contiguous}}));
        GRAFT_TRY(a, b_.call1("aten.view.default", {{"self", a}, {"size", dims({1, seq, qDim_})}}));
      } else if (kvc_ == SynthKvCache::Plain) {
        GRAFT_TRY(a, plainKvAttention(attn, p, kvBufs[static_cast<std::size_t>(l)], q, k, v));
      } else {
        GRAFT_TRY(a, customKvAttention(attn, p, kvBufs[static_cast<std::size_t>(l)], q, k, v));
      }
      b_.scope(proj("wo"), "output = self.wo(output)");
      GRAFT_TRY(a, linear(a, *L.wo));
      b_.scope(block, "h = x + self.attention(self.attention_norm(x), freqs_cos, freqs_sin)");
      GRAFT_TRY(h, b_.call1("aten.add.Tensor", {{"self", h}, {"other", a}}));
      b_.scope(with("ffn_norm", kRmsNorm), "return self._norm(x) * self.weight");
      GRAFT_TRY(Value * y, rmsNorm(h, L.ffnNorm));
      Mods ff = with("feed_forward", kFeedForward);
      auto ffp = [&](const char *n) {
        Mods m = ff;
        m.emplace_back(p + ".feed_forward." + n, kLinear);
        return m;
      };
      b_.scope(ffp("w1"), "return self.w2(F.silu(self.w1(x)) * self.w3(x))");
      GRAFT_TRY(Value * g1, linear(y, *L.w1));
      b_.scope(ff, "return self.w2(F.silu(self.w1(x)) * self.w3(x))");
      GRAFT_TRY(g1, b_.call1("aten.silu.default", {{"self", g1}}));
      b_.scope(ffp("w3"), "return self.w2(F.silu(self.w1(x)) * self.w3(x))");
      GRAFT_TRY(Value * g3, linear(y, *L.w3));
      b_.scope(ff, "return self.w2(F.silu(self.w1(x)) * self.w3(x))");
      GRAFT_TRY(Value * gate, b_.call1("aten.mul.Tensor", {{"self", g1}, {"other", g3}}));
      b_.scope(ffp("w2"), "return self.w2(F.silu(self.w1(x)) * self.w3(x))");
      GRAFT_TRY(Value * f, linear(gate, *L.w2));
      b_.scope(block, "out = h + self.feed_forward(self.ffn_norm(h))");
      GRAFT_TRY(h, b_.call1("aten.add.Tensor", {{"self", h}, {"other", f}}));
    }
    b_.scope({{"", kTransformer}, {"norm", kRmsNorm}}, "return self._norm(x) * self.weight");
    GRAFT_TRY(h, rmsNorm(h, norm));
    b_.scope({{"", kTransformer}}, "h = h[:, -1, :]");
    GRAFT_TRY(h, b_.call1("aten.select.int", {{"self", h}, {"dim", 1}, {"index", -1}}));
    b_.scope({{"", kTransformer}, {"output", kLinear}}, "logits = self.output(h)");
    GRAFT_TRY(Value * logits, linear(h, *out));
    // torch.export's output order: mutations (in the order the buffers were
    // mutated), then user outputs.
    for (const auto &[v, fqn] : mutations_)
      g_.addOutput(v, OutputKind::BufferMutation, fqn);
    g_.addOutput(logits);
    return okStatus();
  }

private:
  static Argument dims(std::vector<Argument> d) { return Argument(Argument::List(std::move(d))); }

  struct KvBuffers {
    Value *mask = nullptr, *k = nullptr, *v = nullptr;
  };

  bool kv_heads_differ() const { return kvHeads_ != o_.heads; }

  /// `input_pos[index].item()` as torch.export records it: select.int,
  /// _local_scalar_dense (a fresh unbacked symbol per call, ranged [0, M - 1]),
  /// then, when the code checks it (`torch._check_is_size(start_pos)`,
  /// `torch._check(start_pos < max_context_len)`), sym_constrain_range_for_size
  /// and an asserted `<= M - 1`. `narrowed`: the position starts a
  /// narrow/update of the sequence length, whose own check (start + S <= M)
  /// narrows the range to [0, M - S] when S is static (as for the rotary
  /// tables, ropeTablesAtPosition).
  Expected<Value *> positionItem(const std::vector<std::pair<std::string, std::string>> &mods,
                                 int64_t index, const std::string &line, bool checked,
                                 bool narrowed = false) {
    const int64_t hi = narrowed && seq_.isInt() ? o_.maxSeqLen - seq_.integer() : o_.maxSeqLen - 1;
    b_.scope(mods, line);
    GRAFT_TRY(Value * sel,
              b_.call1("aten.select.int", {{"self", inputPos_}, {"dim", 0}, {"index", index}}));
    GRAFT_TRY(Value * pos, b_.call1("aten._local_scalar_dense.default", {{"self", sel}}));
    g_.symbols().declare(pos->name(), SymbolRange{0, hi});
    if (checked) {
      GRAFT_TRY(auto none, b_.call("aten.sym_constrain_range_for_size.default", {{"size", pos}}));
      (void)none;
      GRAFT_CHECK_OK(assertLe(pos, hi, pos->name()));
    }
    return pos;
  }

  /// torch._check(lhs <= bound) as export writes it: operator.le + _assert_scalar.
  Status assertLe(Value *lhs, int64_t bound, const std::string &expr) {
    GRAFT_TRY(Value * le, b_.call1("operator.le", {{"a", lhs}, {"b", bound}}, "le"));
    GRAFT_TRY(auto r, b_.call("aten._assert_scalar.default",
                              {{"self", le},
                               {"assert_msg", "Runtime assertion failed for expression " + expr +
                                                  " <= " + std::to_string(bound) + " on node '" +
                                                  le->name() + "'"}}));
    (void)r;
    return okStatus();
  }

  /// AttentionMHA.forward with use_kv_cache and enable_dynamic_shape, without
  /// the custom ops (pytorch/executorch examples/models/llama/attention.py):
  ///   start_pos = input_pos[-1].item(); torch._check_is_size(start_pos)
  ///   torch._check(start_pos < self.max_context_len)
  ///   attn_mask = self.mask.narrow(0, start_pos, seq_length)
  ///   k, v = self.kv_cache.update(input_pos, k, v)     KVCache.update:
  ///     start_pos = input_pos[0].item() (checked alike)
  ///     indices = torch.arange(seq_length) + start_pos
  ///     self.k_cache.index_copy_(2, indices, k_val)  (and v_cache)
  ///   output = self.SDPA(input_pos, q, k, v, bsz, seqlen, attn_mask)
  ///     F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
  ///     y.transpose(1, 2).reshape(bsz, seqlen, self.dim)
  /// Upstream's SDPA repeats the kv heads with k.repeat_interleave(n_rep,
  /// dim=1) first (a TODO notes enable_gqa would do); graft writes the
  /// enable_gqa=True spelling it uses without a cache, the same values.
  /// index_copy_ returns its mutated self, so the caches' readers and the
  /// BUFFER_MUTATION outputs name its result.
  Expected<Value *> plainKvAttention(const std::vector<std::pair<std::string, std::string>> &attn,
                                     const std::string &layer, const KvBuffers &B, Value *q,
                                     Value *k, Value *v) {
    const int64_t M = o_.maxSeqLen;
    GRAFT_TRY(Value * maskPos,
              positionItem(attn, -1, "start_pos = input_pos[-1].item()", true, true));
    b_.scope(attn, "attn_mask = self.mask.narrow(0, start_pos, seq_length)");
    GRAFT_TRY(Value * end, b_.call1("operator.add", {{"a", maskPos}, {"b", seq_}}, "add"));
    if (!seq_.isInt())
      GRAFT_CHECK_OK(assertLe(end, M, maskPos->name() + " + s0"));
    GRAFT_TRY(Value * mask,
              b_.call1("aten.slice.Tensor",
                       {{"self", B.mask}, {"dim", 0}, {"start", maskPos}, {"end", end}}));
    auto cacheMods = attn;
    cacheMods.emplace_back(layer + ".attention.kv_cache",
                           "executorch.examples.models.llama.attention.KVCache");
    GRAFT_TRY(Value * startPos,
              positionItem(cacheMods, 0, "start_pos = input_pos[0].item()", true));
    b_.scope(cacheMods, "indices = torch.arange(seq_length) + start_pos");
    GRAFT_TRY(Value * ar, b_.call1("aten.arange.default",
                                   {{"end", seq_}, {"device", Device{}}, {"pin_memory", false}}));
    GRAFT_TRY(Value * indices, b_.call1("aten.add.Tensor", {{"self", ar}, {"other", startPos}}));
    b_.scope(cacheMods, "self.k_cache.index_copy_(dim_to_slice, indices, k_val)");
    GRAFT_TRY(Value * kc, b_.call1("aten.index_copy_.default",
                                   {{"self", B.k}, {"dim", 2}, {"index", indices}, {"source", k}}));
    b_.scope(cacheMods, "self.v_cache.index_copy_(dim_to_slice, indices, v_val)");
    GRAFT_TRY(Value * vc, b_.call1("aten.index_copy_.default",
                                   {{"self", B.v}, {"dim", 2}, {"index", indices}, {"source", v}}));
    mutations_.emplace_back(kc, layer + ".attention.kv_cache.k_cache");
    mutations_.emplace_back(vc, layer + ".attention.kv_cache.v_cache");
    auto sdpaMods = attn;
    sdpaMods.emplace_back(layer + ".attention.SDPA",
                          "executorch.examples.models.llama.attention.SDPA");
    b_.scope(sdpaMods,
             "y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)");
    std::vector<std::pair<std::string, Argument>> sdpa = {
        {"query", q}, {"key", kc}, {"value", vc}, {"attn_mask", mask}};
    if (kv_heads_differ())
      sdpa.emplace_back("enable_gqa", true);
    GRAFT_TRY(Value * a, b_.call1("aten.scaled_dot_product_attention.default", sdpa));
    b_.scope(sdpaMods, "return y.transpose(1, 2).reshape(bsz, seqlen, self.dim)");
    GRAFT_TRY(a, b_.call1("aten.transpose.int", {{"self", a}, {"dim0", 1}, {"dim1", 2}}));
    GRAFT_TRY(a, b_.call1("aten.clone.default",
                          {{"self", a}, {"memory_format", MemoryFormat::Contiguous}}));
    return b_.call1("aten.view.default", {{"self", a}, {"size", dims({1, seq_, qDim_})}});
  }

  /// The same attention after export_llama --use_sdpa_with_kv_cache
  /// (pytorch/executorch examples/models/llama/source_transformation/):
  ///   CustomKVCache.update (custom_kv_cache.py):
  ///     k_val = k_val.transpose(1, 2); v_val = v_val.transpose(1, 2)
  ///     start_pos = input_pos[0].item()
  ///     torch.ops.llama.update_cache(k_val, self.k_cache, start_pos)  (and v)
  ///       (its meta function checks start_pos: _check_is_size, < cache.size(1),
  ///       start_pos + seq_len <= cache.size(1); custom_ops.py)
  ///     return self.k_cache.transpose(1, 2), self.v_cache.transpose(1, 2)
  ///   SDPACustom.forward (sdpa.py):
  ///     q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
  ///     q, k, v = q.to(dtype=torch.float), ...        (no-ops for f32)
  ///     output = torch.ops.llama.custom_sdpa(q, k, v, input_pos[0].item(),
  ///                                          None, 0, True)
  ///     return output.view(bsz, seqlen, self.dim).to(dtype=input_dtype)
  /// update_cache mutates its cache argument and returns a dummy, so the
  /// caches are read (and listed as BUFFER_MUTATION outputs) as the buffer
  /// placeholders themselves: the in-place lineage ExecuTorch's
  /// insert_write_back_for_buffers_pass recognizes.
  Expected<Value *> customKvAttention(const std::vector<std::pair<std::string, std::string>> &attn,
                                      const std::string &layer, const KvBuffers &B, Value *q,
                                      Value *k, Value *v) {
    const int64_t M = o_.maxSeqLen;
    auto cacheMods = attn;
    cacheMods.emplace_back(
        layer + ".attention.kv_cache",
        "executorch.examples.models.llama.source_transformation.custom_kv_cache.CustomKVCache");
    b_.scope(cacheMods, "k_val = k_val.transpose(1, 2)");
    GRAFT_TRY(Value * kt, b_.call1("aten.transpose.int", {{"self", k}, {"dim0", 1}, {"dim1", 2}}));
    b_.scope(cacheMods, "v_val = v_val.transpose(1, 2)");
    GRAFT_TRY(Value * vt, b_.call1("aten.transpose.int", {{"self", v}, {"dim0", 1}, {"dim1", 2}}));
    GRAFT_TRY(Value * startPos,
              positionItem(cacheMods, 0, "start_pos = input_pos[0].item()", true, true));
    b_.scope(cacheMods, "_ = torch.ops.llama.update_cache(k_val, self.k_cache, start_pos)");
    GRAFT_TRY(Value * end, b_.call1("operator.add", {{"a", startPos}, {"b", seq_}}, "add"));
    GRAFT_CHECK_OK(assertLe(end, M, startPos->name() + " + seq_len"));
    GRAFT_TRY(Value * u1, b_.call1("llama.update_cache.default",
                                   {{"value", kt}, {"cache", B.k}, {"start_pos", startPos}}));
    b_.scope(cacheMods, "_ = torch.ops.llama.update_cache(v_val, self.v_cache, start_pos)");
    GRAFT_TRY(Value * u2, b_.call1("llama.update_cache.default",
                                   {{"value", vt}, {"cache", B.v}, {"start_pos", startPos}}));
    (void)u1;
    (void)u2;
    mutations_.emplace_back(B.k, layer + ".attention.kv_cache.k_cache");
    mutations_.emplace_back(B.v, layer + ".attention.kv_cache.v_cache");
    b_.scope(cacheMods, "return (self.k_cache.transpose(1, 2), self.v_cache.transpose(1, 2))");
    GRAFT_TRY(Value * kc,
              b_.call1("aten.transpose.int", {{"self", B.k}, {"dim0", 1}, {"dim1", 2}}));
    GRAFT_TRY(Value * vc,
              b_.call1("aten.transpose.int", {{"self", B.v}, {"dim0", 1}, {"dim1", 2}}));
    auto sdpaMods = attn;
    sdpaMods.emplace_back(layer + ".attention.SDPA",
                          "executorch.examples.models.llama.source_transformation.sdpa.SDPACustom");
    b_.scope(sdpaMods, "q = q.transpose(1, 2)  # (bs, seqlen, n_local_heads, head_dim)");
    GRAFT_TRY(q, b_.call1("aten.transpose.int", {{"self", q}, {"dim0", 1}, {"dim1", 2}}));
    GRAFT_TRY(kc, b_.call1("aten.transpose.int", {{"self", kc}, {"dim0", 1}, {"dim1", 2}}));
    GRAFT_TRY(vc, b_.call1("aten.transpose.int", {{"self", vc}, {"dim0", 1}, {"dim1", 2}}));
    if (dt_ != DType::F32) {
      b_.scope(sdpaMods, "q = q.to(dtype=torch.float)");
      GRAFT_TRY(q, b_.call1("aten._to_copy.default", {{"self", q}, {"dtype", DType::F32}}));
      GRAFT_TRY(kc, b_.call1("aten._to_copy.default", {{"self", kc}, {"dtype", DType::F32}}));
      GRAFT_TRY(vc, b_.call1("aten._to_copy.default", {{"self", vc}, {"dtype", DType::F32}}));
    }
    GRAFT_TRY(Value * sdpaPos, positionItem(sdpaMods, 0, "input_pos[0].item()", false));
    b_.scope(sdpaMods, "output = torch.ops.llama.custom_sdpa(q, k, v, input_pos[0].item(), None, "
                       "0, True)");
    GRAFT_TRY(Value * a, b_.call1("llama.custom_sdpa.default", {{"query", q},
                                                                {"key", kc},
                                                                {"value", vc},
                                                                {"start_pos", sdpaPos},
                                                                {"attn_mask", Argument()},
                                                                {"drpout_p", 0.0},
                                                                {"is_causal", true}}));
    b_.scope(sdpaMods, "return output.view(bsz, seqlen, self.dim).to(dtype=input_dtype)");
    GRAFT_TRY(a, b_.call1("aten.view.default", {{"self", a}, {"size", dims({1, seq_, qDim_})}}));
    if (dt_ != DType::F32) {
      GRAFT_TRY(a, b_.call1("aten._to_copy.default", {{"self", a}, {"dtype", dt_}}));
    }
    return a;
  }

  struct PendingConst {
    Value **slot;
    std::string fqn;
    DType dtype;
    std::vector<int64_t> sizes;
    ConstantInit init;
  };

  /// The constants of an [n, k] weight under the quantization mode (and its
  /// [n] float bias with `bias`). PT2E weights are buffers registered after
  /// the model's own: their slots are filled once all parameters and the
  /// rotary buffers exist.
  const QWeight *weight(const std::string &module, int64_t n, int64_t k, bool isEmbedding = false,
                        bool bias = false) {
    weights_.push_back(std::make_unique<QWeight>());
    QWeight &w = *weights_.back();
    const int64_t g = o_.groupSize;
    auto addBias = [&] {
      if (bias)
        w.bias =
            b_.constant(InputKind::Parameter, module + ".bias", dt_, {n}, b_.random(-0.5, 0.5));
    };
    // The float weight of an unquantized module (nn.Linear registers weight, then bias).
    auto floatWeight = [&] {
      w.w = b_.constant(InputKind::Parameter, module + ".weight", dt_, {n, k},
                        b_.random(-0.05, 0.05));
    };
    // quantize_ + unwrap_tensor_subclass: the IntxUnpackedToInt8Tensor's inner tensors
    // (qdata in [qmin, qmax], scale and zero point [n, scaleCols]) become parametrization
    // parameters original0/1/2. register_parametrization moves the weight into the
    // `parametrizations` child, so the module's own bias comes first in named_parameters().
    auto unwrappedIntx = [&](double qmin, double qmax, int64_t scaleCols, double scaleLo,
                             double scaleHi) {
      addBias();
      std::string base = module + ".parametrizations.weight.";
      w.w = b_.constant(InputKind::Parameter, base + "original0", DType::I8, {n, k},
                        b_.random(qmin, qmax));
      w.scale = b_.constant(InputKind::Parameter, base + "original1", dt_, {n, scaleCols},
                            b_.random(scaleLo, scaleHi));
      if (o_.weightZeroPoints)
        w.zp = b_.constant(InputKind::Parameter, base + "original2", DType::I8, {n, scaleCols},
                           FullInit{0});
    };
    switch (o_.quant) {
    case SynthQuant::None:
    case SynthQuant::QatW4:
    case SynthQuant::QatW8A8W4:
      floatWeight();
      addBias();
      break;
    case SynthQuant::Pt2eW8:
      // The bias stays a parameter; the weight becomes a root buffer below.
      addBias();
      if (isEmbedding) {
        floatWeight();
        break;
      }
      {
        // convert_pt2e quantizes the weight per channel with f32 scales and
        // i64 zero points (PerChannelMinMaxObserver) and folds the quantized
        // weight into a buffer; the float weight is dropped.
        std::string i = std::to_string(pt2eIndex_++);
        pending_.push_back({&w.w, "_frozen_param" + i, DType::I8, {n, k}, b_.random(-127, 127)});
        pending_.push_back({&w.scale, "_scale_" + i, DType::F32, {n}, b_.random(0.0005, 0.002)});
        pending_.push_back({&w.zp, "_zero_point_" + i, DType::I64, {n}, FullInit{0}});
      }
      break;
    case SynthQuant::W8A8W8:
      // Int8DynamicActivationIntxWeightConfig's default filter takes linears only.
      if (isEmbedding) {
        floatWeight();
        break;
      }
      // export_llama -qmode 8da8w -G 0 (executorch cff6f4dd source_transformation/
      // quantize.py: weight_granularity=PerAxis(0) when group_size == 0, PerGroup(G)
      // otherwise): block [1, k], scale and zero point [n, 1]; int8's full range
      // (-128..127, _DTYPE_TO_QVALUE_BOUNDS). The scales keep |w| <= 127 * 0.0008 ~ 0.1, the
      // int4 modes' magnitude (8 * 0.01), so the activations stay Llama-sized through the
      // layers.
      unwrappedIntx(-128, 127, 1, 0.0001, 0.0008);
      break;
    case SynthQuant::W4:
    case SynthQuant::W8A8W4:
      // int4 per group: block [1, g], scale and zero point [n, k / g].
      unwrappedIntx(-8, 7, k / g, 0.001, 0.01);
      break;
    }
    return &w;
  }

  /// ExecuTorch's -E BITS,GROUP (executorch cff6f4dd
  /// examples/models/llama/source_transformation/quantize.py): EmbeddingQuantHandler
  /// quantizes the table with torchao IntxWeightOnlyConfig(int<BITS>, PerGroup(GROUP) or
  /// PerAxis(0)), scales in the table's dtype, packs 2 / 4 bits (+offset, 4-bit: even
  /// column in the high nibble; 2-bit: first value in the lowest bits; every byte is a
  /// valid packing), squeezes per-row scales to [V], and QuantizedGroupEmbedding registers
  /// them as the persistent buffers `weight` and `scales`.
  const QWeight *quantizedGroupEmbedding() {
    weights_.push_back(std::make_unique<QWeight>());
    QWeight &w = *weights_.back();
    const SynthEmbeddingQuant &e = o_.embeddingQuant;
    const int64_t perByte = 8 / e.bits;
    if (e.bits == 8)
      w.w = b_.constant(InputKind::Buffer, "tok_embeddings.weight", DType::I8, {o_.vocab, o_.dim},
                        b_.random(-128, 127));
    else
      w.w = b_.constant(InputKind::Buffer, "tok_embeddings.weight", DType::U8,
                        {o_.vocab, o_.dim / perByte}, b_.random(0, 255));
    std::vector<int64_t> scales = {o_.vocab};
    if (e.group != 0 && e.group != o_.dim)
      scales.push_back(o_.dim / e.group);
    w.scale = b_.constant(InputKind::Buffer, "tok_embeddings.scales", dt_, scales,
                          b_.random(0.001, 0.01));
    return &w;
  }

  /// The tied LM head: same initializers as the embedding under output.* FQNs.
  const QWeight *tie(const std::string &module, const QWeight &src) {
    auto copy = [&](Value *from, const std::string &fqn) -> Value * {
      if (!from)
        return nullptr;
      const GraphInput *in = g_.inputFor(from);
      // A data-free source has no initializer; constant() drops the
      // placeholder, so the copy is data-free too.
      return b_.constant(InputKind::Parameter, fqn, in->value->proto().dtype,
                         *concreteSizes(in->value->proto().shape),
                         in->init ? *in->init : ConstantInit(FullInit{0}));
    };
    weights_.push_back(std::make_unique<QWeight>());
    QWeight &w = *weights_.back();
    if (src.scale) {
      std::string base = module + ".parametrizations.weight.";
      w.w = copy(src.w, base + "original0");
      w.scale = copy(src.scale, base + "original1");
      w.zp = copy(src.zp, base + "original2");
    } else {
      w.w = copy(src.w, module + ".weight");
    }
    return &w;
  }

  /// A weight's zero point argument: None when it has none.
  static Argument zeroPoint(const QWeight &w) { return w.zp ? Argument(w.zp) : Argument(); }

  Expected<Value *> dequantWeight(const QWeight &w) {
    // 8da8w: per output channel, one block of the whole row, int8's range; otherwise int4
    // per group.
    const bool perAxis = o_.quant == SynthQuant::W8A8W8;
    const int64_t g = perAxis ? *w.w->proto().shape.back().value() : o_.groupSize;
    std::vector<std::pair<std::string, Argument>> a = {{"input", w.w},
                                                       {"block_size", Argument::ints({1, g})},
                                                       {"scale", w.scale},
                                                       {"zero_point", zeroPoint(w)},
                                                       {"input_dtype", DType::I8},
                                                       {"quant_min", perAxis ? -128 : -8},
                                                       {"quant_max", perAxis ? 127 : 7},
                                                       {"output_dtype", ckpt_}};
    GRAFT_TRY(Value * dq, b_.call1("torchao.dequantize_affine.default", a));
    if (ckpt_ == dt_)
      return dq;
    // The frozen subclass dtype (upstream PR #18957): the weight comes out in
    // the checkpoint dtype and is cast to the compute dtype before use.
    return b_.call1("aten._to_copy.default", {{"self", dq}, {"dtype", dt_}});
  }

  Expected<Value *> embedding(const QWeight &w, Value *tokens) {
    if (const int bits = o_.embeddingQuant.bits; bits != 0) {
      // QuantizedGroupEmbedding.forward: the .dtype overload, zero points None, the
      // quant range of the bit width, dtype= the module's dtype.
      const int64_t qmax = (int64_t(1) << (bits - 1)) - 1;
      const std::string op =
          bits == 8 ? "quantized_decomposed.embedding_byte.dtype"
                    : "quantized_decomposed.embedding_" + std::to_string(bits) + "bit.dtype";
      return b_.call1(op, {{"weight", w.w},
                           {"weight_scales", w.scale},
                           {"weight_zero_points", Argument()},
                           {"weight_quant_min", -qmax - 1},
                           {"weight_quant_max", qmax},
                           {"indices", tokens},
                           {"dtype", dt_}});
    }
    Value *table = w.w;
    if (o_.quant == SynthQuant::W4 || o_.quant == SynthQuant::W8A8W4) {
      GRAFT_TRY(table, dequantWeight(w));
    }
    return b_.call1("aten.embedding.default", {{"weight", table}, {"indices", tokens}});
  }

  /// F.linear(x, w, bias): the bias, when the module has one, is the third
  /// argument in every mode (torchao's and PT2E's linears pass it through).
  Expected<Value *> linearCall(Value *x, Value *w, const QWeight &q) {
    std::vector<std::pair<std::string, Argument>> a = {{"input", x}, {"weight", w}};
    if (q.bias)
      a.emplace_back("bias", q.bias);
    return b_.call1("aten.linear.default", a);
  }

  Expected<Value *> linear(Value *x, const QWeight &wIn) {
    switch (o_.quant) {
    case SynthQuant::None:
      return linearCall(x, wIn.w, wIn);
    case SynthQuant::W4: {
      GRAFT_TRY(Value * w, dequantWeight(wIn));
      return linearCall(x, w, wIn);
    }
    case SynthQuant::W8A8W4:
    case SynthQuant::W8A8W8: {
      // IntxUnpackedToInt8Tensor.from_hp(x, per-token, int8, ASYMMETRIC).dequantize()
      std::vector<int64_t> block(static_cast<std::size_t>(x->proto().rank()), 1);
      block.back() = *x->proto().shape.back().value();
      Argument bs = Argument::ints(block);
      // The quant range is given (current torchao) or left None, which the
      // dispatcher records by leaving it out (the F64 spelling).
      const bool f64 = o_.actQParams == SynthActQParams::F64;
      auto range = [&](std::vector<std::pair<std::string, Argument>> a) {
        if (!f64) {
          a.emplace_back("quant_min", -128);
          a.emplace_back("quant_max", 127);
        }
        return a;
      };
      std::vector<std::pair<std::string, Argument>> choose = range({{"input", x},
                                                                    {"mapping_type", "ASYMMETRIC"},
                                                                    {"block_size", bs},
                                                                    {"target_dtype", DType::I8}});
      if (f64) {
        // choose_qparams_affine(x, ..., int8, None, None, None, float64, int64):
        // the Nones before scale_dtype are positional, so they are written.
        choose.emplace_back("quant_min", Argument());
        choose.emplace_back("quant_max", Argument());
        choose.emplace_back("eps", Argument());
        choose.emplace_back("scale_dtype", DType::F64);
        choose.emplace_back("zero_point_dtype", DType::I64);
      } else {
        choose.emplace_back("zero_point_dtype", DType::I8);
      }
      GRAFT_TRY(auto qp, b_.call("torchao.choose_qparams_affine.default", choose));
      GRAFT_TRY(Value * q,
                b_.call1("torchao.quantize_affine.default", range({{"input", x},
                                                                   {"block_size", bs},
                                                                   {"scale", qp[0]},
                                                                   {"zero_point", qp[1]},
                                                                   {"output_dtype", DType::I8}})));
      std::vector<std::pair<std::string, Argument>> dqArgs = range({{"input", q},
                                                                    {"block_size", bs},
                                                                    {"scale", qp[0]},
                                                                    {"zero_point", qp[1]},
                                                                    {"input_dtype", DType::I8}});
      dqArgs.emplace_back("output_dtype", dt_);
      GRAFT_TRY(Value * dx, b_.call1("torchao.dequantize_affine.default", dqArgs));
      GRAFT_TRY(Value * w, dequantWeight(wIn));
      return linearCall(dx, w, wIn);
    }
    case SynthQuant::QatW4:
    case SynthQuant::QatW8A8W4:
      return qatLinear(x, wIn);
    case SynthQuant::Pt2eW8: {
      const QWeight *w = &wIn;
      std::vector<std::pair<std::string, Argument>> a = {
          {"input", w->w},     {"scales", w->scale}, {"zero_points", w->zp}, {"axis", 0},
          {"quant_min", -127}, {"quant_max", 127},   {"dtype", DType::I8}};
      if (dt_ != DType::F32)
        a.emplace_back("out_dtype", dt_);
      GRAFT_TRY(Value * dq, b_.call1("quantized_decomposed.dequantize_per_channel.default", a));
      return linearCall(x, dq, wIn);
    }
    }
    return Diagnostic::internal("unreachable");
  }

  //===-- QAT (qat-4w, qat-8da4w) -----------------------------------------===//
  // torchao QATConfig(step="prepare") swaps nn.Linear for FakeQuantizedLinear
  // (torchao/quantization/qat/linear.py: x = activation_fake_quantizer(x);
  // w = weight_fake_quantizer(self.weight); F.linear(x, w, bias)). Facts from
  // pytorch/ao 36027d82 (torchao >= 0.12), QATConfig defaults: scale dtype =
  // the input's dtype, int32 zero points, eps = finfo(f32).eps.

  /// The sizes of `v` as view() arguments (the symbolic sequence length as
  /// its SymInt value, as torch.export records it).
  std::vector<Argument> sizesOf(const Value *v) const {
    std::vector<Argument> out;
    for (const Dim &d : v->proto().shape)
      out.push_back(d.isConstant() ? Argument(d.constant()) : seq_);
    return out;
  }

  /// torchao's _fake_quantize_affine as torch.export records it: plain Python
  /// (quantization/quant_primitives.py), so the graph holds its aten math.
  /// _quantize_affine_no_dtype_cast: views to shape_for_reduction `red` /
  /// shape_after_reduction `after`, clamp(round(x * (1.0 / scale)) + zp,
  /// qmin, qmax) (1.0 / scale is Tensor.__rdiv__: reciprocal() * 1.0; _Round
  /// is torch.round), view back; _dequantize_affine_no_dtype_check: views,
  /// q.to(dtype, copy=True) - zp.to(dtype), * scale, view back (the final
  /// .to(dtype) is a no-op here: the scale has the input's dtype).
  Expected<Value *> decomposedFakeQuant(Value *x, Value *s, Value *zp,
                                        const std::vector<Argument> &red,
                                        const std::vector<Argument> &after, int64_t qmin,
                                        int64_t qmax) {
    const std::vector<Argument> orig = sizesOf(x);
    const DType dt = x->proto().dtype;
    auto view = [&](Value *v, const std::vector<Argument> &sz) {
      return b_.call1("aten.view.default", {{"self", v}, {"size", dims(sz)}});
    };
    GRAFT_TRY(Value * xr, view(x, red));
    GRAFT_TRY(Value * sr, view(s, after));
    GRAFT_TRY(Value * zr, view(zp, after));
    GRAFT_TRY(Value * inv, b_.call1("aten.reciprocal.default", {{"self", sr}}));
    GRAFT_TRY(Value * inv1, b_.call1("aten.mul.Tensor", {{"self", inv}, {"other", 1.0}}));
    GRAFT_TRY(Value * xs, b_.call1("aten.mul.Tensor", {{"self", xr}, {"other", inv1}}));
    GRAFT_TRY(Value * rd, b_.call1("aten.round.default", {{"self", xs}}));
    GRAFT_TRY(Value * ad, b_.call1("aten.add.Tensor", {{"self", rd}, {"other", zr}}));
    GRAFT_TRY(Value * cl,
              b_.call1("aten.clamp.default", {{"self", ad}, {"min", qmin}, {"max", qmax}}));
    GRAFT_TRY(Value * q, view(cl, orig));
    GRAFT_TRY(Value * qr, view(q, red));
    GRAFT_TRY(Value * sd, view(s, after));
    GRAFT_TRY(Value * zd, view(zp, after));
    GRAFT_TRY(Value * qf, b_.call1("aten._to_copy.default", {{"self", qr}, {"dtype", dt}}));
    GRAFT_TRY(Value * zf, b_.call1("aten._to_copy.default", {{"self", zd}, {"dtype", dt}}));
    GRAFT_TRY(Value * df, b_.call1("aten.sub.Tensor", {{"self", qf}, {"other", zf}}));
    GRAFT_TRY(Value * ml, b_.call1("aten.mul.Tensor", {{"self", df}, {"other", sd}}));
    return view(ml, orig);
  }

  /// IntxFakeQuantizer._per_channel_or_group_forward (qat/fake_quantizer.py)
  /// on an [N, K] weight: get_group_qparams_symmetric (quantization/utils.py)
  /// = choose_qparams_affine(w, SYMMETRIC, [1, G], int8, -8, 7, eps,
  /// scale_dtype = zero_point_dtype = the scale precision), reshape(N, -1)
  /// of both, zero_point.to(int32), then _fake_quantize_per_channel_group.
  Expected<Value *> qatWeight(Value *w) {
    const int64_t g = o_.groupSize;
    const int64_t n = *w->proto().shape[0].value(), k = *w->proto().shape[1].value();
    std::vector<std::pair<std::string, Argument>> choose = {{"input", w},
                                                            {"mapping_type", "SYMMETRIC"},
                                                            {"block_size", Argument::ints({1, g})},
                                                            {"target_dtype", DType::I8},
                                                            {"quant_min", -8},
                                                            {"quant_max", 7},
                                                            {"eps", kQatEps},
                                                            {"scale_dtype", dt_}};
    if (o_.qatSpelling == SynthQatSpelling::Graft) {
      choose.emplace_back("zero_point_dtype", DType::I8);
      GRAFT_TRY(auto qp, b_.call("torchao.choose_qparams_affine.default", choose));
      return b_.call1("torchao.fake_quantize_affine.default",
                      {{"input", w},
                       {"block_size", Argument::ints({1, g})},
                       {"scale", qp[0]},
                       {"zero_point", qp[1]},
                       {"quant_dtype", DType::I8},
                       {"quant_min", -8},
                       {"quant_max", 7}});
    }
    choose.emplace_back("zero_point_dtype", dt_);
    GRAFT_TRY(auto qp, b_.call("torchao.choose_qparams_affine.default", choose));
    std::vector<Argument> rows = {Argument(n), Argument(int64_t(-1))};
    GRAFT_TRY(Value * s, b_.call1("aten.view.default", {{"self", qp[0]}, {"size", dims(rows)}}));
    GRAFT_TRY(Value * z0, b_.call1("aten.view.default", {{"self", qp[1]}, {"size", dims(rows)}}));
    GRAFT_TRY(Value * zp, b_.call1("aten._to_copy.default", {{"self", z0}, {"dtype", DType::I32}}));
    return decomposedFakeQuant(w, s, zp, {Argument(n), Argument(k / g), Argument(g)},
                               {Argument(n), Argument(k / g), Argument(int64_t(1))}, -8, 7);
  }

  /// IntxFakeQuantizer._per_token_forward: choose_qparams_affine(x,
  /// ASYMMETRIC, [1, ..., 1, K], int8, -128, 127, eps, scale dtype, int32)
  /// (keepdim false: one scale per token, shaped like x without its last
  /// dim), then _fake_quantize_per_token (qat/utils.py), which ends
  /// fq.reshape_as(input).to(input.dtype) (the .to is a no-op).
  Expected<Value *> qatActivation(Value *x) {
    const std::vector<Argument> orig = sizesOf(x);
    std::vector<int64_t> block(orig.size(), 1);
    block.back() = *x->proto().shape.back().value();
    const bool graft = o_.qatSpelling == SynthQatSpelling::Graft;
    GRAFT_TRY(auto qp, b_.call("torchao.choose_qparams_affine.default",
                               {{"input", x},
                                {"mapping_type", "ASYMMETRIC"},
                                {"block_size", Argument::ints(block)},
                                {"target_dtype", DType::I8},
                                {"quant_min", -128},
                                {"quant_max", 127},
                                {"eps", kQatEps},
                                {"scale_dtype", dt_},
                                {"zero_point_dtype", graft ? DType::I8 : DType::I32}}));
    if (graft)
      return b_.call1("torchao.fake_quantize_affine.default",
                      {{"input", x},
                       {"block_size", Argument::ints(block)},
                       {"scale", qp[0]},
                       {"zero_point", qp[1]},
                       {"quant_dtype", DType::I8},
                       {"quant_min", -128},
                       {"quant_max", 127}});
    std::vector<Argument> after = orig;
    after.back() = Argument(int64_t(1));
    GRAFT_TRY(Value * fq, decomposedFakeQuant(x, qp[0], qp[1], orig, after, -128, 127));
    return b_.call1("aten.view.default", {{"self", fq}, {"size", dims(orig)}});
  }

  Expected<Value *> qatLinear(Value *x, const QWeight &wIn) {
    if (o_.quant == SynthQuant::QatW8A8W4) {
      GRAFT_TRY(x, qatActivation(x));
    }
    GRAFT_TRY(Value * w, qatWeight(wIn.w));
    return linearCall(x, w, wIn);
  }

  /// RMSNorm as ExecuTorch's examples/models/llama/norm.py writes it (and
  /// llama_transformer.py did before norm.py, since 2024-03): forward is
  /// `self._norm(x.float()).type_as(x) * self.weight.type_as(x)`, _norm is
  /// `x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps)`. The square
  /// is mul(x, x), not Meta's reference pow(2); .float() and type_as are
  /// casts only in a low-precision model.
  Expected<Value *> rmsNorm(Value *x, Value *weight) {
    Value *xf = x;
    if (dt_ != DType::F32) {
      GRAFT_TRY(xf, b_.call1("aten._to_copy.default", {{"self", x}, {"dtype", DType::F32}}));
    }
    GRAFT_TRY(Value * sq, b_.call1("aten.mul.Tensor", {{"self", xf}, {"other", xf}}));
    GRAFT_TRY(Value * ms,
              b_.call1("aten.mean.dim",
                       {{"self", sq}, {"dim", Argument::ints({-1})}, {"keepdim", true}}));
    GRAFT_TRY(Value * eps, b_.call1("aten.add.Tensor", {{"self", ms}, {"other", o_.normEps}}));
    GRAFT_TRY(Value * rs, b_.call1("aten.rsqrt.default", {{"self", eps}}));
    GRAFT_TRY(Value * n, b_.call1("aten.mul.Tensor", {{"self", xf}, {"other", rs}}));
    if (dt_ != DType::F32) {
      GRAFT_TRY(n, b_.call1("aten._to_copy.default", {{"self", n}, {"dtype", dt_}}));
    }
    return b_.call1("aten.mul.Tensor", {{"self", n}, {"other", weight}});
  }

  /// The rotary tables at the dynamic position, spelled as torch.export
  /// writes ExecuTorch's Rope.get_freqs with use_kv_cache and
  /// enable_dynamic_shape (examples/models/llama/rope.py):
  ///   input_pos_item = input_pos[-1].item()      select, _local_scalar_dense
  ///   torch._check_is_size(input_pos_item)        sym_constrain_range_for_size
  ///   torch._check(input_pos_item < max_seq_len)  u0's range, an _assert_scalar
  ///   freqs_cos.narrow(0, input_pos_item, seqlen) slice(t, 0, u0, u0 + seqlen)
  /// torch.export records the ATen view ops (select.int, slice.Tensor: narrow
  /// is slice_symint(start, start + length), ATen TensorShape.cpp); their
  /// *_copy forms are ExecuTorch's edge dialect, which graft reads as well
  /// (tests/golden/pt2/llama_dynamic_pos_torch2_10.pt2).
  /// narrow also checks u0 <= max_seq_len - seqlen: with a static seqlen that
  /// narrows u0's range (so `add` is u0 + 8 and the range [0, M - 8]); with a
  /// symbolic one it stays a relation between two symbols, which export keeps
  /// as a runtime assertion on the end (u0 + s0 <= M).
  Expected<std::pair<Value *, Value *>> ropeTablesAtPosition(Value *inputPos, const Argument &seq,
                                                             Value *cosT, Value *sinT) {
    int64_t M = o_.maxSeqLen;
    std::vector<std::pair<std::string, std::string>> top = {{"", kTransformer}};
    b_.scope(top, "input_pos_item = input_pos[-1].item()");
    GRAFT_TRY(Value * last, b_.call1("aten.select.int",
                                     {{"self", inputPos}, {"dim", 0}, {"index", int64_t(-1)}}));
    GRAFT_TRY(Value * pos, b_.call1("aten._local_scalar_dense.default", {{"self", last}}));
    int64_t hi = seq.isInt() ? M - seq.integer() : M - 1;
    g_.symbols().declare(pos->name(), SymbolRange{0, hi});
    b_.scope(top, "torch._check_is_size(input_pos_item)");
    GRAFT_TRY(auto none, b_.call("aten.sym_constrain_range_for_size.default", {{"size", pos}}));
    (void)none;
    // The file names the first unbacked symbol u0 (Pt2Writer).
    auto check = [&](Value *lhs, int64_t bound, const std::string &expr) -> Status {
      GRAFT_TRY(Value * le, b_.call1("operator.le", {{"a", lhs}, {"b", bound}}, "le"));
      GRAFT_TRY(auto r, b_.call("aten._assert_scalar.default",
                                {{"self", le},
                                 {"assert_msg", "Runtime assertion failed for expression " + expr +
                                                    " <= " + std::to_string(bound) + " on node '" +
                                                    le->name() + "'"}}));
      (void)r;
      return okStatus();
    };
    b_.scope(top, "torch._check(input_pos_item < self.params.max_seq_len)");
    GRAFT_CHECK_OK(check(pos, hi, "u0"));
    b_.scope(top, "freqs_cos = self.freqs_cos.narrow(0, input_pos_item, seq_len)");
    GRAFT_TRY(Value * end, b_.call1("operator.add", {{"a", pos}, {"b", seq}}, "add"));
    if (!seq.isInt())
      GRAFT_CHECK_OK(check(end, M, "u0 + s0"));
    GRAFT_TRY(Value * cos, b_.call1("aten.slice.Tensor",
                                    {{"self", cosT}, {"dim", 0}, {"start", pos}, {"end", end}}));
    b_.scope(top, "freqs_sin = self.freqs_sin.narrow(0, input_pos_item, seq_len)");
    GRAFT_TRY(Value * sin, b_.call1("aten.slice.Tensor",
                                    {{"self", sinT}, {"dim", 0}, {"start", pos}, {"end", end}}));
    return std::pair{cos, sin};
  }

  /// apply_rotary_emb(xq, xk, freqs_cos, freqs_sin) on [1, S, heads, hd]:
  /// pairs (even, odd) rotated by (cos, sin), in the order torch.export
  /// records ExecuTorch's extension/llm/modeling/text_decoder/rope.py
  /// (formerly examples/models/llama/rope.py):
  ///   xq_r, xq_i = xq.float().reshape(xq.shape[:-1] + (-1, 2)).unbind(-1)
  ///   xk_r, xk_i = (the same for xk)
  ///   freqs_cos = reshape_for_broadcast(freqs_cos, xq_r)   one view each,
  ///   freqs_sin = reshape_for_broadcast(freqs_sin, xq_r)   read by q and k
  ///   xq_out_r = xq_r * freqs_cos - xq_i * freqs_sin
  ///   xq_out_i = xq_r * freqs_sin + xq_i * freqs_cos       (then xk)
  ///   xq_out = torch.stack([xq_out_r, xq_out_i], dim=-1).flatten(3)  (then xk)
  ///   return xq_out.type_as(xq), xk_out.type_as(xk)
  /// `.float()` and `type_as` are no-ops for f32; in an f16/bf16 model they
  /// are recorded as _to_copy to f32 before the reshape and back to the model
  /// dtype after both flattens, and the products read the tables in the model
  /// dtype (m.to(dtype) casts the buffers too), promoted to f32. unbind is
  /// recorded as the selects of ATen's unbind kernel, stack as unsqueeze +
  /// cat, the reshape and flatten as views.
  Expected<std::pair<Value *, Value *>> rope(Value *xq, Value *xk, const Argument &seq, Value *cos,
                                             Value *sin) {
    auto cast = [&](Value *x, DType to) -> Expected<Value *> {
      if (dt_ == DType::F32)
        return x;
      return b_.call1("aten._to_copy.default", {{"self", x}, {"dtype", to}});
    };
    auto split = [&](Value *x0, int heads) -> Expected<std::pair<Value *, Value *>> {
      GRAFT_TRY(Value * x, cast(x0, DType::F32));
      GRAFT_TRY(Value * pairs,
                b_.call1("aten.view.default",
                         {{"self", x}, {"size", dims({1, seq, heads, hd_ / 2, 2})}}));
      GRAFT_TRY(Value * re,
                b_.call1("aten.select.int", {{"self", pairs}, {"dim", -1}, {"index", 0}}));
      GRAFT_TRY(Value * im,
                b_.call1("aten.select.int", {{"self", pairs}, {"dim", -1}, {"index", 1}}));
      return std::pair{re, im};
    };
    GRAFT_TRY(auto q, split(xq, o_.heads));
    GRAFT_TRY(auto k, split(xk, kv_));
    GRAFT_TRY(Value * c,
              b_.call1("aten.view.default", {{"self", cos}, {"size", dims({1, seq, 1, hd_ / 2})}}));
    GRAFT_TRY(Value * s,
              b_.call1("aten.view.default", {{"self", sin}, {"size", dims({1, seq, 1, hd_ / 2})}}));
    auto rotate = [&](std::pair<Value *, Value *> x) -> Expected<std::pair<Value *, Value *>> {
      auto [re, im] = x;
      GRAFT_TRY(Value * rc, b_.call1("aten.mul.Tensor", {{"self", re}, {"other", c}}));
      GRAFT_TRY(Value * is, b_.call1("aten.mul.Tensor", {{"self", im}, {"other", s}}));
      GRAFT_TRY(Value * outR, b_.call1("aten.sub.Tensor", {{"self", rc}, {"other", is}}));
      GRAFT_TRY(Value * rs, b_.call1("aten.mul.Tensor", {{"self", re}, {"other", s}}));
      GRAFT_TRY(Value * ic, b_.call1("aten.mul.Tensor", {{"self", im}, {"other", c}}));
      GRAFT_TRY(Value * outI, b_.call1("aten.add.Tensor", {{"self", rs}, {"other", ic}}));
      return std::pair{outR, outI};
    };
    GRAFT_TRY(auto qo, rotate(q));
    GRAFT_TRY(auto ko, rotate(k));
    auto stack = [&](std::pair<Value *, Value *> x, int heads) -> Expected<Value *> {
      GRAFT_TRY(Value * ur, b_.call1("aten.unsqueeze.default", {{"self", x.first}, {"dim", -1}}));
      GRAFT_TRY(Value * ui, b_.call1("aten.unsqueeze.default", {{"self", x.second}, {"dim", -1}}));
      GRAFT_TRY(Value * st, b_.call1("aten.cat.default",
                                     {{"tensors", Argument(Argument::List{ur, ui})}, {"dim", -1}}));
      return b_.call1("aten.view.default", {{"self", st}, {"size", dims({1, seq, heads, hd_})}});
    };
    GRAFT_TRY(Value * qOut, stack(qo, o_.heads));
    GRAFT_TRY(Value * kOut, stack(ko, kv_));
    GRAFT_TRY(Value * qTyped, cast(qOut, dt_));
    GRAFT_TRY(Value * kTyped, cast(kOut, dt_));
    return std::pair{qTyped, kTyped};
  }

  /// hf_apply_rotary_emb(q, k, cos, sin) on [1, S, heads, hd] with [S, R]
  /// tables, in the order torch.export records ExecuTorch's
  /// examples/models/llama/rope.py:
  ///   cos = cos.unsqueeze(1); sin = sin.unsqueeze(1)       read by q and k
  ///   q_rot, q_pass = q[..., :R], q[..., R:]                (then k)
  ///   q_embed = cat([(q_rot * cos) + (rotate_half(q_rot) * sin), q_pass], dim=-1)
  ///   rotate_half(x) = cat((-x[..., R/2:], x[..., :R/2]), dim=-1)    (then k)
  /// Indexing records slice.Tensor on dim 3 and an open end as INT64_MAX;
  /// `[..., :R]` over the whole head is no slice but alias(q) (THPVariable_getitem
  /// skips a full slice, then returns at::alias of the unchanged tensor), while
  /// `[..., R:]` is still an (empty) slice.
  Expected<std::pair<Value *, Value *>> hfRope(Value *xq, Value *xk, Value *cos, Value *sin) {
    constexpr int64_t kOpenEnd = std::numeric_limits<int64_t>::max();
    const int64_t r = rotaryDimOf(o_);
    auto slice = [&](Value *x, int64_t start, int64_t end) {
      return b_.call1("aten.slice.Tensor",
                      {{"self", x}, {"dim", 3}, {"start", start}, {"end", end}});
    };
    GRAFT_TRY(Value * c, b_.call1("aten.unsqueeze.default", {{"self", cos}, {"dim", 1}}));
    GRAFT_TRY(Value * s, b_.call1("aten.unsqueeze.default", {{"self", sin}, {"dim", 1}}));
    auto split = [&](Value *x) -> Expected<std::pair<Value *, Value *>> {
      Value *rot = nullptr;
      if (r != hd_) {
        GRAFT_TRY(rot, slice(x, 0, r));
      } else {
        GRAFT_TRY(rot, b_.call1("aten.alias.default", {{"self", x}}));
      }
      GRAFT_TRY(Value * pass, slice(x, r, kOpenEnd));
      return std::pair{rot, pass};
    };
    GRAFT_TRY(auto q, split(xq));
    GRAFT_TRY(auto k, split(xk));
    auto embed = [&](std::pair<Value *, Value *> x) -> Expected<Value *> {
      auto [rot, pass] = x;
      GRAFT_TRY(Value * xc, b_.call1("aten.mul.Tensor", {{"self", rot}, {"other", c}}));
      GRAFT_TRY(Value * x1, slice(rot, 0, r / 2));
      GRAFT_TRY(Value * x2, slice(rot, r / 2, kOpenEnd));
      GRAFT_TRY(Value * neg, b_.call1("aten.neg.default", {{"self", x2}}));
      GRAFT_TRY(Value * half,
                b_.call1("aten.cat.default",
                         {{"tensors", Argument(Argument::List{neg, x1})}, {"dim", -1}}));
      GRAFT_TRY(Value * hs, b_.call1("aten.mul.Tensor", {{"self", half}, {"other", s}}));
      GRAFT_TRY(Value * sum, b_.call1("aten.add.Tensor", {{"self", xc}, {"other", hs}}));
      return b_.call1("aten.cat.default",
                      {{"tensors", Argument(Argument::List{sum, pass})}, {"dim", -1}});
    };
    GRAFT_TRY(Value * qOut, embed(q));
    GRAFT_TRY(Value * kOut, embed(k));
    return std::pair{qOut, kOut};
  }

  Graph &g_;
  const LlamaSynthOptions &o_;
  Builder b_;
  DType dt_;   ///< compute dtype
  DType ckpt_; ///< dtype the weights were quantized in
  int hd_ = 0, qDim_ = 0, kv_ = 0, hidden_ = 0;
  Argument seq_; ///< the sequence length: an int, or the SymInt of a dynamic one
  Value *inputPos_ = nullptr;
  SynthKvCache kvc_ = SynthKvCache::None;
  int kvHeads_ = 0;
  /// BUFFER_MUTATION outputs: (the buffer's final value, its FQN).
  std::vector<std::pair<Value *, std::string>> mutations_;
  /// torch.finfo(torch.float32).eps, the eps QAT passes to choose_qparams_affine.
  static constexpr double kQatEps = 1.1920928955078125e-07;
  int pt2eIndex_ = 0;
  std::vector<PendingConst> pending_;
  std::vector<std::unique_ptr<QWeight>> weights_;
};

} // namespace

Expected<std::unique_ptr<Graph>> synthesizeLlama(const LlamaSynthOptions &options) {
  GRAFT_CHECK_OK(validate(options));
  auto g = std::make_unique<Graph>("model");
  LlamaSynth s(*g, options);
  GRAFT_CHECK_OK(s.build());
  return g;
}

} // namespace graft
