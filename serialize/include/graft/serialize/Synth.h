//===- Synth.h - Realistic exported programs of any size ---*- C++ -*-===//
//
// synthesizeLlama builds the graph torch.export produces for a Llama-style
// transformer (ExecuTorch's llama_transformer: RMSNorm, rotary embeddings,
// grouped-query SDPA, SwiGLU feed-forward, last-token logits) quantized the
// way torchao / PT2E leave it, with random weights (seeded random()
// initializers, generated while writing, so even an 8B-parameter shape never
// sits in memory). Names follow torch.export: placeholders p_/b_/c_ + FQN
// with '.' -> '_', nodes named after their op with _1, _2 ... suffixes
// (dequantize_affine_3, getitem_1), arguments normalized the way the
// dispatcher records them (positional, trailing defaults dropped).
//
//   --quant none     float weights
//           4w       torchao IntxWeightOnly int4 per-group (unwrapped
//                    IntxUnpackedToInt8Tensor: qdata i8, scale, zero_point)
//           8da4w    + per-token int8 dynamic activation quantization
//                    (choose_qparams_affine, quantize_affine, dequantize_affine)
//           8da8w    the same activations with int8 per-output-channel
//                    weights (torchao Int8DynamicActivationIntxWeightConfig(
//                    weight_dtype=int8, weight_granularity=PerAxis(0)):
//                    block [1, K], scale and zero point [N, 1], -128..127):
//                    export_llama -qmode 8da8w -G 0 (without -G 0 upstream
//                    quantizes per group of 128); the embedding stays float
//                    (the config's filter_fn takes nn.Linear only)
//           pt2e-8w  PT2E weight-only int8 per-channel (quantized_decomposed
//                    dequantize_per_channel on _frozen_param constants)
//           qat-4w   QAT-prepared (torchao QATConfig(step="prepare")): float
//                    weights fake-quantized int4 per group, qparams computed
//                    in the graph by choose_qparams_affine; the fake
//                    quantization is the aten math torchao's Python
//                    _fake_quantize_affine exports as (--qat-spelling graft:
//                    graft's one-node torchao.fake_quantize_affine)
//           qat-8da4w  the same plus per-token int8 fake-quantized activations
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/serialize/Pt2.h"
#include "graft/support/Expected.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace graft {

enum class SynthQuant { None, W4, W8A8W4, W8A8W8, Pt2eW8, QatW4, QatW8A8W4 };

/// The KV cache of ExecuTorch's Llama (pytorch/executorch
/// examples/models/llama), both export forms. Each layer gets the buffers
/// `layers.<l>.attention.mask` (bool tril(ones(M, M)), non-persistent) and
/// `layers.<l>.attention.kv_cache.{k,v}_cache` (zeros, persistent), updated
/// at `input_pos` and listed as BUFFER_MUTATION outputs of the signature.
enum class SynthKvCache {
  None,
  /// export_llama --use_sdpa_with_kv_cache: CustomKVCache (caches [1, M,
  /// Hkv, hd], source_transformation/custom_kv_cache.py) updated in place by
  /// llama.update_cache, attention by llama.custom_sdpa (SDPACustom,
  /// source_transformation/sdpa.py).
  Custom,
  /// Without it: KVCache (caches [1, Hkv, M, hd], attention.py) updated in
  /// place by index_copy_ at arange(S) + start_pos (enable_dynamic_shape),
  /// attention by aten.scaled_dot_product_attention with the bool mask
  /// mask.narrow(0, start_pos, S).
  Plain,
};
/// "none", "custom", "plain"
std::string_view name(SynthKvCache kv);
std::optional<SynthKvCache> parseSynthKvCache(std::string_view text);
/// "none", "4w", "8da4w", "8da8w", "pt2e-8w", "qat-4w", "qat-8da4w"
std::string_view name(SynthQuant quant);
std::optional<SynthQuant> parseSynthQuant(std::string_view text);

/// ExecuTorch's `-E BITS,GROUP` / `embedding_quantize: BITS,GROUP`
/// (pytorch/executorch examples/models/llama/source_transformation/quantize.py
/// get_quant_embedding_transform, EmbeddingQuantHandler, QuantizedGroupEmbedding;
/// examples/models/qwen3/config/qwen3_xnnpack_q8da4w.yaml writes `8,0`).
struct SynthEmbeddingQuant {
  int bits = 0;  ///< 0: not quantized this way; else 2, 4 or 8
  int group = 0; ///< 0 (upstream's "0" / "none"): one group per row, [V] scales
};
/// Parses "BITS,GROUP" as get_quant_embedding_transform does (GROUP "none",
/// "None" or "0" is per row). The "torchao:BITS,GROUP" form is refused with a
/// diagnostic saying why (its packed torchao._embedding_Nbit ops are opaque).
Expected<SynthEmbeddingQuant> parseSynthEmbeddingQuant(std::string_view text);

/// How a QAT-prepared model's fake quantization is written.
enum class SynthQatSpelling {
  /// What torch.export records (pytorch/ao 36027d82, torchao >= 0.12):
  /// IntxFakeQuantizer's qparams from torchao.choose_qparams_affine, then
  /// _fake_quantize_affine's aten math (quant_primitives.py
  /// _quantize_affine_no_dtype_cast / _dequantize_affine_no_dtype_check):
  /// view, reciprocal, mul, round, add, clamp, view, _to_copy, sub, mul, view.
  Upstream,
  /// graft's own op: one torchao.fake_quantize_affine node per fake quantizer.
  Graft,
};

/// The spellings of torchao's per-token int8 activation quantization (8da4w).
enum class SynthActQParams {
  /// IntxUnpackedToInt8Tensor, torchao >= 0.12
  /// (`_apply_int8_act_asym_per_token_quant_dequant`): choose_qparams_affine(x,
  /// "ASYMMETRIC", [1, ..., K], int8, -128, 127, zero_point_dtype=int8), f32
  /// scales, quant ranges given to quantize/dequantize_affine.
  Int8,
  /// The earlier per-token path: choose_qparams_affine(x, "ASYMMETRIC",
  /// [1, ..., K], int8, None, None, None, float64, int64), f64 scales, i64
  /// zero points, quantize/dequantize_affine with quant_min/quant_max None.
  F64,
};

struct LlamaSynthOptions {
  int layers = 2;
  int dim = 64;
  int heads = 4;
  int kvHeads = 0; ///< 0: same as heads
  /// ModelArgs.head_dim (examples/models/llama/model_args.py): 0 is
  /// dim / heads. Qwen3's configs set it (0_6b: dim 1024, 16 heads, head_dim
  /// 128), so wq is [heads * head_dim, dim], wo [dim, heads * head_dim] and
  /// the attention output is reshaped to heads * head_dim.
  int headDim = 0;
  int vocab = 128;
  int hidden = 0; ///< feed-forward size; 0: Llama's rule (multiple of 256 above 8/3 dim)
  int groupSize = 32;
  int maxSeqLen = 128; ///< rotary table length and the upper bound of a dynamic sequence
  int seqLen = 8;      ///< the static sequence length (the example value when dynamic)
  SynthQuant quant = SynthQuant::W4;
  /// The embedding as ExecuTorch's -E leaves it: QuantizedGroupEmbedding's
  /// buffers `tok_embeddings.weight` (i8 [V, D]; u8 [V, D/2] or [V, D/4]
  /// packed for 4 and 2 bits) and `tok_embeddings.scales` ([V, D/G], or [V]
  /// per row) read by quantized_decomposed.embedding_{byte,4bit,2bit}.dtype.
  /// The linears keep `quant`.
  SynthEmbeddingQuant embeddingQuant;
  /// The dtype torchao quantized the weights in (ExecuTorch's Llama export
  /// quantizes in the checkpoint dtype, then casts the model to `dtype`). For
  /// 4w/8da4w a checkpoint dtype other than `dtype` leaves what upstream PR
  /// #18957 describes: dequantize_affine(..., output_dtype=bf16) followed by
  /// a cast to the compute dtype, because unwrap_tensor_subclass froze the
  /// subclass's dtype before model.to(dtype). Other modes are unaffected
  /// (model.to casts their plain weights).
  DType checkpointDType = DType::F32; ///< f32, bf16 or f16
  /// The compute dtype: activations, float parameters and buffers.
  DType dtype = DType::F32; ///< f32, bf16 or f16
  bool tiedEmbeddings = false;
  /// How 8da4w quantizes its activations per token (which torchao wrote the graph).
  SynthActQParams actQParams = SynthActQParams::Int8;
  /// How qat-4w / qat-8da4w write the fake quantization.
  SynthQatSpelling qatSpelling = SynthQatSpelling::Upstream;
  /// A symbolic sequence length s0 in [1, maxSeqLen], read at a dynamic
  /// position `input_pos` (implies dynamicPos).
  bool dynamicSeq = false;
  /// A dynamic position with the static seqLen: the rotary tables are cut as
  /// ExecuTorch's Rope.get_freqs does, narrow(0, input_pos[-1].item(),
  /// seqlen), i.e. slice_copy(t, 0, u0, u0 + seqLen).
  bool dynamicPos = false;
  /// graft's earlier spelling of a dynamic position: the tables are cut
  /// [:seqlen] from 0 and the position is only read and constrained.
  bool ropePrefixSlice = false;
  /// HuggingFace RoPE (ExecuTorch's ModelArgs.use_hf_rope,
  /// examples/models/llama/rope.py): hf_precompute_freqs_cis tables [maxSeqLen,
  /// R] and hf_apply_rotary_emb's rotate_half instead of interleaved pairs.
  bool useHfRope = false;
  /// ModelArgs.partial_rotary_factor (HF RoPE only): R = int(head_dim * factor)
  /// features are rotated, the rest of each head passes through.
  double partialRotaryFactor = 1.0;
  /// ModelArgs.attention_qkv_bias (Qwen 2.5's configs): wq, wk and wv are
  /// nn.Linear(..., bias=True) (attention.py _create_projection), so each
  /// has a float `<module>.bias` parameter in the compute dtype, passed as
  /// linear's third argument. torchao leaves it alone: IntxUnpackedToInt8Tensor's
  /// linear is F.linear(x, weight.dequantize(), bias).
  bool attentionQkvBias = false;
  /// ModelArgs.use_qk_norm (Qwen 3): AttentionMHA's q_norm_fn / k_norm_fn,
  /// RMSNorm(head_dim, eps=norm_eps) with a [head_dim] weight, on q and k.
  bool useQkNorm = false;
  /// ModelArgs.qk_norm_before_rope: normalize q and k as [1, S, H, hd] before
  /// the rotary embedding (Qwen 3); otherwise after it, on the transposed
  /// [1, H, S, hd] q and k (AttentionMHA._prepare_qkv).
  bool qkNormBeforeRope = false;
  /// ModelArgs.norm_eps: every RMSNorm's eps (1e-5 by default; Qwen 1e-6).
  double normEps = 1e-5;
  /// A KV cache (implies dynamicPos; maxSeqLen is the cache length).
  SynthKvCache kvCache = SynthKvCache::None;
  /// 4w / 8da4w: whether the weights carry zero points. false writes
  /// dequantize_affine(..., zero_point=None), torchao's symmetric spelling
  /// (ZeroPointDomain.NONE), which a rule can see is zero without reading
  /// data (`$zp is none`): what data-free graphs need to fuse.
  bool weightZeroPoints = true;
  /// Constants without initializers (data-free prototypes): graphs for timing
  /// matching and rewriting at 10^6 nodes, where generating and repacking
  /// weights would be the cost measured. Such a graph cannot be run or
  /// written as a .pt2.
  bool dataFree = false;
  /// The metadata torch.export records on every node (stack_trace,
  /// nn_module_stack, source_fn_stack, torch_fn); false leaves it out, as a
  /// hand-written text IR graph would.
  bool metadata = true;
  uint64_t seed = 1;
};

/// Checks option consistency (dims divisible by heads and group size, ...).
Status validate(const LlamaSynthOptions &options);

/// The exported program's graph. Weights are random() initializers.
Expected<std::unique_ptr<Graph>> synthesizeLlama(const LlamaSynthOptions &options);

/// Write options that go with a synthesized graph (symbol hints).
Pt2WriteOptions synthWriteOptions(const LlamaSynthOptions &options);

/// Number of parameters of the float model the options describe.
int64_t llamaParameterCount(const LlamaSynthOptions &options);

} // namespace graft
