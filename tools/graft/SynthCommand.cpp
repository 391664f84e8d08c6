//===- SynthCommand.cpp - graft synth: write realistic exported programs --===//
//
//   graft synth llama --layers 2 --dim 64 --heads 4 --vocab 128 --quant 4w -o m.pt2
//
// Writes a Llama-shaped torch.export program with random weights (see
// graft/serialize/Synth.h) as a .pt2 archive, or as text IR when the output
// ends in .gir.
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include "graft/serialize/Pt2.h"
#include "graft/serialize/Synth.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include <cstdlib>
#include <iostream>

namespace graft::cli {

namespace {

Expected<int> intFlag(const Args &args, const std::string &flag, int fallback) {
  auto v = args.get(flag);
  if (!v)
    return fallback;
  try {
    std::size_t used = 0;
    long long x = std::stoll(*v, &used);
    if (used != v->size() || x < 0 || x > (1ll << 31) - 1)
      throw std::invalid_argument("range");
    return static_cast<int>(x);
  } catch (const std::exception &) {
    return Diagnostic::error("--" + flag + ": '" + *v + "' is not a non-negative integer");
  }
}

int runSynth(const Args &args) {
  if (args.positional.size() != 1 || args.positional[0] != "llama") {
    std::cerr << "graft synth: error: expected the model family 'llama'\n";
    return kUserError;
  }
  auto out = args.get("o");
  if (!out) {
    std::cerr << "graft synth: error: -o OUT is required\n";
    return kUserError;
  }
  LlamaSynthOptions o;
  struct IntOpt {
    const char *flag;
    int *dst;
  };
  IntOpt ints[] = {{"layers", &o.layers},        {"dim", &o.dim},
                   {"heads", &o.heads},          {"kv-heads", &o.kvHeads},
                   {"vocab", &o.vocab},          {"hidden", &o.hidden},
                   {"group-size", &o.groupSize}, {"max-seq-len", &o.maxSeqLen},
                   {"seq-len", &o.seqLen},       {"head-dim", &o.headDim}};
  for (const IntOpt &i : ints) {
    auto v = intFlag(args, i.flag, *i.dst);
    if (!v)
      return reportFailure(v.diags());
    *i.dst = *v;
  }
  if (args.get("seed")) {
    auto seed = seedFlag(args);
    if (!seed)
      return reportFailure(seed.diags());
    o.seed = *seed;
  }
  if (auto q = args.get("quant")) {
    auto parsed = parseSynthQuant(*q);
    if (!parsed)
      return reportFailure({Diagnostic::error(
          "--quant: '" + *q +
          "' is not one of none, 4w, 8da4w, 8da8w, pt2e-8w, qat-4w, qat-8da4w")});
    o.quant = *parsed;
  }
  if (auto e = args.get("embedding-quant")) {
    auto parsed = parseSynthEmbeddingQuant(*e);
    if (!parsed)
      return reportFailure(parsed.diags());
    o.embeddingQuant = *parsed;
  }
  if (auto d = args.get("checkpoint-dtype")) {
    auto dt = parseDType(*d);
    if (!dt)
      return reportFailure({Diagnostic::error("--checkpoint-dtype: unknown dtype '" + *d + "'")});
    o.checkpointDType = *dt;
  }
  if (auto d = args.get("dtype")) {
    auto dt = parseDType(*d);
    if (!dt)
      return reportFailure({Diagnostic::error("--dtype: unknown dtype '" + *d + "'")});
    o.dtype = *dt;
  }
  if (auto a = args.get("act-qparams")) {
    if (*a == "int8")
      o.actQParams = SynthActQParams::Int8;
    else if (*a == "f64")
      o.actQParams = SynthActQParams::F64;
    else
      return reportFailure({Diagnostic::error("--act-qparams: '" + *a +
                                              "' is not one of int8 (torchao >= 0.12) or f64 "
                                              "(the earlier per-token path)")});
  }
  if (auto q = args.get("qat-spelling")) {
    if (*q == "upstream")
      o.qatSpelling = SynthQatSpelling::Upstream;
    else if (*q == "graft")
      o.qatSpelling = SynthQatSpelling::Graft;
    else
      return reportFailure({Diagnostic::error("--qat-spelling: '" + *q +
                                              "' is not one of upstream (the aten math "
                                              "torch.export records) or graft")});
  }
  if (auto kv = args.get("kv-cache")) {
    auto parsed = parseSynthKvCache(*kv);
    if (!parsed || *parsed == SynthKvCache::None)
      return reportFailure({Diagnostic::error(
          "--kv-cache: '" + *kv +
          "' is not one of custom (llama.update_cache + llama.custom_sdpa, export_llama "
          "--use_sdpa_with_kv_cache) or plain (index_copy_ on the caches, aten SDPA with a "
          "mask)")});
    o.kvCache = *parsed;
  }
  o.tiedEmbeddings = args.has("tied-embeddings");
  o.dynamicSeq = args.has("dynamic-seq");
  o.dynamicPos = args.has("dynamic-pos");
  o.ropePrefixSlice = args.has("rope-prefix-slice");
  o.useHfRope = args.has("use-hf-rope");
  o.attentionQkvBias = args.has("attention-qkv-bias");
  o.useQkNorm = args.has("use-qk-norm");
  o.qkNormBeforeRope = args.has("qk-norm-before-rope");
  // The ranges are checked with the other options (validate).
  for (auto [flag, dst] : {std::pair{"partial-rotary-factor", &o.partialRotaryFactor},
                           std::pair{"norm-eps", &o.normEps}}) {
    auto f = args.get(flag);
    if (!f)
      continue;
    char *end = nullptr;
    *dst = std::strtod(f->c_str(), &end);
    if (f->empty() || !end || *end)
      return reportFailure(
          {Diagnostic::error(std::string("--") + flag + " expects a number, got '" + *f + "'")});
  }

  auto graph = synthesizeLlama(o);
  if (!graph)
    return reportFailure(graph.diags());
  const std::string &path = *out;
  bool gir = path.size() >= 4 && path.compare(path.size() - 4, 4, ".gir") == 0;
  Status s;
  if (gir) {
    auto text = printGraph(**graph);
    if (!text)
      return reportFailure(text.diags());
    s = writeFileAtomic(path, *text);
  } else {
    s = writePt2(**graph, path, synthWriteOptions(o));
  }
  if (!s)
    return reportFailure(s.diags());
  if (!args.has("quiet"))
    std::cerr << "graft synth: wrote " << path << " (" << (*graph)->numNodes() << " nodes, "
              << (*graph)->inputs().size() << " inputs, ~" << llamaParameterCount(o)
              << " parameters, quant " << name(o.quant) << ")\n";
  return kOk;
}

} // namespace

Command makeSynthCommand() {
  Command c;
  c.name = "synth";
  c.usage = "graft synth llama --layers N --dim D --heads H --vocab V "
            "--quant {4w,8da4w,8da8w,pt2e-8w,qat-4w,qat-8da4w,none} [--embedding-quant BITS,GROUP] "
            "[--act-qparams int8|f64] "
            "[--qat-spelling upstream|graft] [--checkpoint-dtype bf16] "
            "[--dtype bf16] "
            "[--tied-embeddings] [--dynamic-seq | --dynamic-pos] [--rope-prefix-slice] "
            "[--use-hf-rope [--partial-rotary-factor F]] [--head-dim N] "
            "[--attention-qkv-bias] [--use-qk-norm [--qk-norm-before-rope]] [--norm-eps E] "
            "[--kv-cache custom|plain] -o OUT.pt2";
  c.summary = "Write a Llama-shaped exported program with random weights.";
  c.details =
      "The program is what torch.export produces for ExecuTorch's llama_transformer,\n"
      "quantized the way torchao (4w, 8da4w, 8da8w, qat-4w, qat-8da4w) or PT2E (pt2e-8w)\n"
      "leaves it. 8da8w is Int8DynamicActivationIntxWeightConfig(weight_dtype=int8,\n"
      "weight_granularity=PerAxis(0)) unwrapped (pytorch/ao intx_unpacked_to_int8_tensor.py;\n"
      "export_llama -qmode 8da8w -G 0, executorch source_transformation/quantize.py), the\n"
      "embedding left float. --embedding-quant BITS,GROUP is export_llama's -E\n"
      "(get_quant_embedding_transform, QuantizedGroupEmbedding in\n"
      "source_transformation/quantize.py; Qwen 3's qwen3_xnnpack_q8da4w.yaml: 8,0):\n"
      "buffers tok_embeddings.weight/.scales read by\n"
      "quantized_decomposed.embedding_{byte,4bit,2bit}.dtype, GROUP 0 or none per row.\n"
      "The torchao:BITS,GROUP form is refused (opaque packed torchao ops).\n"
      "Nodes:\n"
      "placeholders p_/b_/c_ + FQN, nodes named after their ops, torchao and\n"
      "quantized_decomposed argument lists. --dynamic-seq makes the sequence\n"
      "length symbolic and reads the start position from input_pos; --dynamic-pos\n"
      "reads the position with a static sequence length. The rotary tables are\n"
      "cut as ExecuTorch's Rope.get_freqs does: input_pos[-1].item() ->\n"
      "_local_scalar_dense -> sym_constrain_range_for_size -> slice_copy(t, 0,\n"
      "pos, pos + seqlen) with an operator.add end (--rope-prefix-slice: graft's\n"
      "earlier [:seqlen] cut). --kv-cache adds ExecuTorch's KV cache (per layer\n"
      "k_cache/v_cache buffers updated at input_pos, BUFFER_MUTATION outputs):\n"
      "custom = llama.update_cache + llama.custom_sdpa, plain = index_copy_ +\n"
      "aten SDPA with the narrowed tril mask; it implies --dynamic-pos and\n"
      "--max-seq-len is the cache length. The ModelArgs flags of the Llama-family\n"
      "variants ExecuTorch exports through the same llama_transformer\n"
      "(examples/models/llama/model_args.py; the configs under\n"
      "examples/models/{qwen2_5,qwen3,phi_4_mini,smollm2}) are spelled as\n"
      "torch.export records them: --attention-qkv-bias (Qwen 2.5), --use-qk-norm\n"
      "and --qk-norm-before-rope (Qwen 3), --use-hf-rope (Qwen, Phi-4-mini) with\n"
      "--partial-rotary-factor (Phi-4-mini 0.75), --head-dim (Qwen 3), --norm-eps\n"
      "(Qwen 1e-6), --kv-heads, --tied-embeddings. Weights are generated while writing, so any\n"
      "size (up to an 8B-parameter shape) streams to disk. OUT ending in .gir\n"
      "writes text IR instead of a .pt2.";
  c.flags = {
      {"o", true, "output .pt2 (or .gir)", "OUT"},
      {"layers", true, "transformer blocks (default 2)", "N"},
      {"dim", true, "model dimension (default 64)", "D"},
      {"heads", true, "attention heads (default 4)", "H"},
      {"kv-heads", true, "key/value heads for grouped-query attention (default: heads)", "H"},
      {"vocab", true, "vocabulary size (default 128)", "V"},
      {"hidden", true, "feed-forward size (default: Llama's rule)", "F"},
      {"group-size", true, "int4 quantization group (default 32)", "G"},
      {"max-seq-len", true, "rotary table length / dynamic bound (default 128)", "N"},
      {"seq-len", true, "static sequence length (example value if dynamic; default 8)", "N"},
      {"quant", true, "none, 4w, 8da4w, 8da8w, pt2e-8w, qat-4w or qat-8da4w (default 4w)", "MODE"},
      {"embedding-quant", true,
       "ExecuTorch's -E BITS,GROUP (2, 4 or 8 bits; GROUP 0 or none: per row): "
       "QuantizedGroupEmbedding, quantized_decomposed.embedding_{byte,4bit,2bit}.dtype",
       "BITS,GROUP"},
      {"checkpoint-dtype", true, "dtype the weights were quantized in: f32 (default), bf16 or f16",
       "DTYPE"},
      {"dtype", true, "compute dtype of activations and float weights: f32 (default), bf16, f16",
       "DTYPE"},
      {"act-qparams", true,
       "8da4w activation qparams: int8 (default; torchao >= 0.12 IntxUnpackedToInt8Tensor: f32 "
       "scales, i8 zero points, quant ranges given) or f64 (the earlier per-token path: f64 "
       "scales, i64 zero points, quant ranges None)",
       "KIND"},
      {"qat-spelling", true,
       "qat-4w/qat-8da4w fake quantization: upstream (default; the aten math torch.export "
       "records for torchao's Python _fake_quantize_affine) or graft (one "
       "torchao.fake_quantize_affine node)",
       "KIND"},
      {"tied-embeddings", false, "the LM head shares the embedding's storage"},
      {"dynamic-seq", false, "symbolic sequence length, dynamic position"},
      {"dynamic-pos", false, "dynamic position, static sequence length"},
      {"rope-prefix-slice", false, "cut the rotary tables [:seqlen] (graft's earlier spelling)"},
      {"use-hf-rope", false,
       "HuggingFace RoPE (ModelArgs.use_hf_rope: rotate_half, [max-seq-len, R] tables)"},
      {"partial-rotary-factor", true,
       "with --use-hf-rope: rotate R = int(head_dim * F) features of each head (default 1)", "F"},
      {"head-dim", true,
       "ModelArgs.head_dim (default dim / heads; Qwen 3 sets it): wq [heads * N, dim], wo "
       "[dim, heads * N]",
       "N"},
      {"attention-qkv-bias", false,
       "ModelArgs.attention_qkv_bias (Qwen 2.5): wq/wk/wv carry a float bias, linear's third "
       "argument (attention.py _create_projection; torchao's linear passes it through)"},
      {"use-qk-norm", false,
       "ModelArgs.use_qk_norm (Qwen 3): AttentionMHA's q_norm_fn/k_norm_fn, RMSNorm(head_dim, "
       "norm_eps) with a [head_dim] weight, after the rotary embedding on [1, H, S, hd]"},
      {"qk-norm-before-rope", false,
       "ModelArgs.qk_norm_before_rope (Qwen 3): the q/k norm on [1, S, H, hd] before the rotary "
       "embedding"},
      {"norm-eps", true, "ModelArgs.norm_eps, every RMSNorm's eps (default 1e-5; Qwen 1e-6)", "E"},
      {"kv-cache", true,
       "ExecuTorch's KV cache: custom (--use_sdpa_with_kv_cache: llama.update_cache, "
       "llama.custom_sdpa) or plain (index_copy_, aten SDPA with a mask)",
       "FORM"},
      {"seed", true, "random seed (default 1)", "N"},
      {"quiet", false, "no summary line"}};
  c.run = runSynth;
  return c;
}

} // namespace graft::cli
