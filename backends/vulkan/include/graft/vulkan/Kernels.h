//===- Kernels.h - Device tensors and the Vulkan kernels -*- C++ -*-===//
//
// Host-side launchers of the compute shaders: the one header of every op
// family (each section names its folder, backends/vulkan/ops/<family>, whose
// <Family>.cpp defines them next to the shaders they dispatch). Each takes
// device tensors, validates shapes and dtypes (a mismatch is a user error,
// never a crash), picks the shader variant, fills the push constants and
// records the dispatch; results stay on the device until downloaded.
//
// Device representation: every tensor is contiguous, row-major, in one
// storage buffer. f32 is float, f16 is float16_t (needs
// storageBuffer16BitAccess); bool and every integer dtype (u8, i8, i16, i32,
// i64) are int32 on the device, as ExecuTorch's Vulkan backend downcasts
// 64-bit values (an i64 outside the int32 range fails the upload). bf16 and
// f64 have no device representation. Packed quantized weights are uploaded
// as raw bytes or prepacked into the kernels' layouts (see the prepack*
// functions).
//
// Numerics: kernels follow the reference interpreter's formulas and
// accumulation order (docs/numerics.md, docs/vulkan-backend.md lists the
// tolerance of each kernel).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Tensor.h"
#include "graft/vulkan/Context.h"
#include "graft/vulkan/OpSupport.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graft::vk {

/// A contiguous tensor in a device buffer.
struct DeviceTensor {
  DType dtype = DType::F32; ///< the logical dtype
  std::vector<int64_t> sizes;
  std::shared_ptr<Buffer> buffer;
  int64_t numel() const;
  bool defined() const { return buffer != nullptr; }
};

/// The shader-variant suffix of a dtype: "float", "half" or "int".
std::string shaderDType(DType dtype);
/// unsupportedDTypeReason (OpSupport.h) for the context's device.
inline std::string unsupportedDTypeReason(const Context &ctx, DType dtype) {
  return unsupportedDTypeReason(ctx.info(), dtype);
}

/// An uninitialised device tensor.
Expected<DeviceTensor> allocateTensor(Context &ctx, DType dtype, std::vector<int64_t> sizes);
/// Uploads a host tensor (any strides), converting to the device element.
Expected<DeviceTensor> uploadTensor(Context &ctx, const Tensor &tensor);
/// Reads a device tensor back into a host tensor of its logical dtype
/// (integer values are narrowed/widened back from int32).
Expected<Tensor> downloadTensor(Context &ctx, const DeviceTensor &tensor);

//===-- Elementwise (ops/elementwise) ----------------------------------===//

enum class BinaryKind { Add, Sub, Mul, Div, Maximum, Minimum, Pow };
enum class UnaryKind {
  Neg,
  Abs,
  Relu,
  Sigmoid,
  Silu,
  Gelu,
  GeluTanh,
  Rsqrt,
  Sqrt,
  Exp,
  Reciprocal
};
const char *name(BinaryKind kind);
const char *name(UnaryKind kind);

/// a OP b with broadcasting; both operands must have `a`'s dtype (the
/// executor converts first), which is the result dtype.
Expected<DeviceTensor> binary(Context &ctx, BinaryKind op, const DeviceTensor &a,
                              const DeviceTensor &b, double alpha = 1.0);
/// a OP scalar. `scalar` is used exactly as given (as f32); the caller
/// applies torch's scalar-rounding rules for reduced-precision dtypes.
Expected<DeviceTensor> binaryScalar(Context &ctx, BinaryKind op, const DeviceTensor &a,
                                    double scalar, double alpha = 1.0);
Expected<DeviceTensor> unary(Context &ctx, UnaryKind op, const DeviceTensor &a);
/// torch.clamp of an f32/f16 tensor with bounds already converted to its
/// dtype: -inf / +inf stand for a missing bound, and lo = hi = NaN gives the
/// all-NaN result torch's clamp_out fills in when either of two bounds is NaN.
Expected<DeviceTensor> clampScalar(Context &ctx, const DeviceTensor &a, float lo, float hi);
/// torch.where(cond, a, b) with broadcasting: cond is bool or u8 (int32 on
/// the device); a and b have one dtype, the result's (the executor converts
/// first). At most 6 dims.
Expected<DeviceTensor> where(Context &ctx, const DeviceTensor &cond, const DeviceTensor &a,
                             const DeviceTensor &b);

//===-- Reductions and normalisations (ops/reduce) ---------------------===//

enum class ReduceKind { Sum, Mean, Amax, Amin };
/// Reduces the innermost `numDims` dims (keepdim keeps them as size 1).
Expected<DeviceTensor> reduceInner(Context &ctx, ReduceKind op, const DeviceTensor &a,
                                   int64_t numDims, bool keepdim);
/// Softmax over the last dim; `safe` gives zeros for rows of only -inf
/// (ATen's _safe_softmax).
Expected<DeviceTensor> softmaxLast(Context &ctx, const DeviceTensor &a, DType outDType,
                                   bool safe = false);
/// et_vk.rms_norm over the last dim.
Expected<DeviceTensor> rmsNorm(Context &ctx, const DeviceTensor &x, const DeviceTensor &weight,
                               double eps);
/// et_vk.swiglu: silu(gate) * up in f32, rounded once; gate and up of one
/// dtype (f32/f16), broadcasting (ops/swiglu).
Expected<DeviceTensor> swiglu(Context &ctx, const DeviceTensor &gate, const DeviceTensor &up);

//===-- Matrix products (ops/linear) -----------------------------------===//

/// torch.matmul for operands of rank >= 2 (batch dims broadcast), same dtype.
Expected<DeviceTensor> matmul(Context &ctx, const DeviceTensor &a, const DeviceTensor &b);
/// F.linear: x [..., K] @ w[N, K]^T (+ bias [N]).
Expected<DeviceTensor> linear(Context &ctx, const DeviceTensor &x, const DeviceTensor &w,
                              const DeviceTensor *bias);

/// A 4-bit weight prepacked for linear_q4gsw(_fast).glsl, row-major:
/// words[n * rowWords + k8] holds k = 8*k8..8*k8+7 of row n, nibble i =
/// (w + 8) of k = 8*k8 + i; rows are padded with zeros (nibble 8) to whole
/// uvec4s (rowWords % 4 == 0), so the fast kernels read 32 values at a time.
struct PackedQ4Weight {
  std::shared_ptr<Buffer> words;
  int64_t N = 0;
  int64_t K = 0;        ///< packed columns (2 * bytes per row)
  int64_t rowWords = 0; ///< 32-bit words per row, a multiple of 4
};
/// Prepacks a serialized packed-int4 weight [N, K/2] (u8 or i8 bytes).
/// `lowNibbleFirst`: the linear convention (low nibble = even k); false for
/// linear_qcs4w's (high nibble = even k).
Expected<PackedQ4Weight> prepackQ4(Context &ctx, const Tensor &packed, bool lowNibbleFirst);

/// et_vk.linear_q4gsw: x [..., K] against the prepacked weight, scales
/// [G, scaleStride] (stride >= N), optional bias [>= N].
Expected<DeviceTensor> linearQ4gsw(Context &ctx, const DeviceTensor &x, const PackedQ4Weight &w,
                                   const DeviceTensor &scales, int64_t groupSize,
                                   const DeviceTensor *bias);
/// et_vk.linear_qcs4w: per-channel scales [>= N], one group over K.
Expected<DeviceTensor> linearQcs4w(Context &ctx, const DeviceTensor &x, const PackedQ4Weight &w,
                                   const DeviceTensor &scales);
/// et_vk.linear_dq8ca_q4gsw: quantizes x per token with (inputScales,
/// inputZeroPoints) (int8, [-128, 127]), then the integer group dot products,
/// corrected by weightSums [groups, >= N] (ET-VK's zero-point correction).
Expected<DeviceTensor> linearDq8caQ4gsw(Context &ctx, const DeviceTensor &x,
                                        const DeviceTensor &inputScales,
                                        const DeviceTensor &inputZeroPoints,
                                        const PackedQ4Weight &w, const DeviceTensor &weightSums,
                                        const DeviceTensor &scales, int64_t groupSize,
                                        const DeviceTensor *bias);

/// An int8 weight [N, K] prepacked for linear_q8csw.glsl: words[k4 * N + n]
/// holds k = 4*k4..4*k4+3 of row n.
struct PackedQ8Weight {
  std::shared_ptr<Buffer> words;
  int64_t N = 0;
  int64_t K = 0;
};
Expected<PackedQ8Weight> prepackQ8(Context &ctx, const Tensor &weight);
/// aten._weight_int8pack_mm(x [M, K], w, scales [N]).
Expected<DeviceTensor> weightInt8PackMm(Context &ctx, const DeviceTensor &x,
                                        const PackedQ8Weight &w, const DeviceTensor &scales);
/// et_vk.linear_dq8ca_q8csw: quantizes x per token with (inputScales,
/// inputZeroPoints) (int8, [-128, 127]), then the exact integer dot products
/// with w, corrected by weightSums [>= N]; scales [>= N], bias [>= N].
Expected<DeviceTensor> linearDq8caQ8csw(Context &ctx, const DeviceTensor &x,
                                        const DeviceTensor &inputScales,
                                        const DeviceTensor &inputZeroPoints,
                                        const PackedQ8Weight &w, const DeviceTensor &weightSums,
                                        const DeviceTensor &scales, const DeviceTensor *bias);
/// et_vk.linear_q8ta_q8csw.
Expected<DeviceTensor> linearQ8taQ8csw(Context &ctx, const DeviceTensor &x, double inputScale,
                                       int64_t inputZeroPoint, const PackedQ8Weight &w,
                                       const DeviceTensor &scales, const DeviceTensor *bias);
/// et_vk.q8ta_linear / q8ta_linear_gemv: int8 x [..., K] -> int8 [..., N]
/// (linear_q8ta_q8csw's sum, relu if asked, quantize_per_tensor).
Expected<DeviceTensor> q8taLinear(Context &ctx, const DeviceTensor &x, double inputScale,
                                  int64_t inputZeroPoint, const PackedQ8Weight &w,
                                  const DeviceTensor &scales, double outputScale,
                                  int64_t outputZeroPoint, const DeviceTensor *bias, bool relu);

//===-- Embeddings and RoPE (ops/embedding, ops/rotary) ----------------===//

/// aten.embedding(weight [V, D], indices).
Expected<DeviceTensor> embedding(Context &ctx, const DeviceTensor &weight,
                                 const DeviceTensor &indices);
/// A packed u8/i8 table [V, rowBytes] uploaded as raw bytes (the layout
/// embedding_q4gsw reads; not a DeviceTensor, whose integers are int32).
struct RawBytes {
  std::shared_ptr<Buffer> buffer;
  int64_t rows = 0;
  int64_t rowBytes = 0;
};
Expected<RawBytes> uploadRawBytes(Context &ctx, const Tensor &tensor);
/// et_vk.embedding_q4gsw: out [indices..., D] in the scales' dtype.
Expected<DeviceTensor> embeddingQ4gsw(Context &ctx, const RawBytes &weight,
                                      const DeviceTensor &scales, int64_t groupSize,
                                      const DeviceTensor &indices, bool isLinearWeight);
/// quantized_decomposed.embedding_byte: an int8 (isSigned) or uint8 table
/// [V, D] as raw bytes, scales [V] or [V, NG] and optional zero points of the
/// same count in the scales' dtype -> out [indices..., D] in outDType.
Expected<DeviceTensor> embeddingByte(Context &ctx, const RawBytes &weight, bool isSigned,
                                     const DeviceTensor &scales, const DeviceTensor *zeroPoints,
                                     const DeviceTensor &indices, DType outDType);
/// et_vk.apply_rotary_emb on one tensor (call once for xq and once for xk).
Expected<DeviceTensor> rotary(Context &ctx, const DeviceTensor &x, const DeviceTensor &freqsCos,
                              const DeviceTensor &freqsSin);
/// et_vk.apply_rotary_emb_hf on one tensor x [B, S, H, D] with the whole
/// [max_seq, R] tables read from row `startPos` (Python slicing, as the
/// reference); call once for xq and once for xk.
Expected<DeviceTensor> rotaryHf(Context &ctx, const DeviceTensor &x, const DeviceTensor &freqsCos,
                                const DeviceTensor &freqsSin, int64_t startPos);

//===-- Affine quantization, torchao (ops/quantize) --------------------===//

enum class MappingType { Asymmetric, Symmetric, SymmetricNoClippingErr };
/// Group size of a torchao block over `sizes` when the blocks are
/// contiguous runs of memory (block dims 1 up to some dim, whole dims
/// after), else nullopt.
std::optional<int64_t> contiguousGroupSize(const std::vector<int64_t> &blockSize,
                                           const std::vector<int64_t> &sizes);
struct QParams {
  DeviceTensor scale;
  DeviceTensor zeroPoint;
};
Expected<QParams> chooseQParamsAffine(Context &ctx, const DeviceTensor &x, int64_t groupSize,
                                      MappingType mapping, int64_t qmin, int64_t qmax, double eps,
                                      DType scaleDType, DType zeroPointDType,
                                      std::vector<int64_t> scaleSizes);
Expected<DeviceTensor> quantizeAffine(Context &ctx, const DeviceTensor &x, int64_t groupSize,
                                      const DeviceTensor &scale, const DeviceTensor *zeroPoint,
                                      int64_t qmin, int64_t qmax, DType outDType);
Expected<DeviceTensor> dequantizeAffine(Context &ctx, const DeviceTensor &q, int64_t groupSize,
                                        const DeviceTensor &scale, const DeviceTensor *zeroPoint,
                                        DType outDType);

//===-- quantized_decomposed (ops/quantize) ----------------------------===//

/// quantized_decomposed.quantize_per_tensor with Python-number qparams:
/// clamp(round(x * f32(1.0 / scale)) + zeroPoint, qmin, qmax).to(outDType),
/// the division in double as Python's; f32/f16 x (f16 read as f32), NaN
/// gives 0. The .tensor overload is quantizeAffine with one group.
Expected<DeviceTensor> quantizePerTensor(Context &ctx, const DeviceTensor &x, double scale,
                                         int64_t zeroPoint, int64_t qmin, int64_t qmax,
                                         DType outDType);
/// quantized_decomposed.dequantize_per_tensor with Python-number qparams:
/// (q - zeroPoint) * f32(scale) in f32, converted to outDType (f32/f16) once.
Expected<DeviceTensor> dequantizePerTensor(Context &ctx, const DeviceTensor &q, double scale,
                                           int64_t zeroPoint, DType outDType);

/// quantized_decomposed.dequantize_per_channel: ((q - zeroPoints[c]) *
/// scales[c]).to(outDType), c the index along `axis` (negative counts from
/// the end); zeroPoints may be null. Integer q and zero points (int32 on the
/// device), f32/f16 scales and result.
Expected<DeviceTensor> dequantizePerChannel(Context &ctx, const DeviceTensor &q,
                                            const DeviceTensor &scales,
                                            const DeviceTensor *zeroPoints, int64_t axis,
                                            DType outDType);

//===-- Attention and KV caches (ops/attention) ------------------------===//

/// dst.narrow(dim, start, n) = src, written in place into dst's buffer
/// (llama.update_cache: dim 1 of [B, M, H, D]). src has dst's dtype and its
/// sizes except at dim (n there); start + n beyond dst is a user error.
Status copyIntoSlice(Context &ctx, const DeviceTensor &dst, const DeviceTensor &src, int64_t dim,
                     int64_t start);
/// aten.index_copy_ in place: dst.select(dim, index[i]) = src.select(dim, i)
/// for the n entries of the integer index (a repeated index keeps the last
/// slice, as the reference's loop does); an index outside dst is a user
/// error at the next flush. `wrapNegative`: a negative index counts from
/// the end (index_put_'s advanced indexing; index_copy_ rejects it).
Status indexCopyInto(Context &ctx, const DeviceTensor &dst, const DeviceTensor &src, int64_t dim,
                     const DeviceTensor &index, bool wrapNegative = false);
/// How attention() reads its operands and masks its scores.
struct AttentionOptions {
  int64_t keys = 0;                   ///< keys attended: [0, keys) of k / v's positions
  bool causal = false;                ///< key j is seen by query i when j <= causalOffset + i
  int64_t causalOffset = 0;           ///< a cache's start_pos (0 for ATen's is_causal)
  const DeviceTensor *mask = nullptr; ///< f32 additive [S, keys] (bool masks: 0 / -inf first)
  std::optional<double> scale;        ///< default 1/sqrt(D)
  bool headsFirst = false;            ///< q and the result are [B, H, S, D] (else [B, S, H, D])
  bool kvHeadsFirst = false;          ///< k and v are [B, Hkv, M, D] (else [B, M, Hkv, D])
};
/// Attention in sdpaMath's order (sdpa_kv.glsl), reading q, k and v in
/// their layouts (no transposes, no repeated kv heads; H a multiple of
/// Hkv): the scaled dot products, the mask, the safe softmax, p @ v. f32 or
/// f16 (computed in f32). The result has q's sizes and dtype.
Expected<DeviceTensor> attention(Context &ctx, const DeviceTensor &q, const DeviceTensor &k,
                                 const DeviceTensor &v, const AttentionOptions &options);
/// llama.custom_sdpa without attn_mask: q [B, S, H, D] against the caches
/// [B, M, Hkv, D] (H a multiple of Hkv), keys [0, startPos + S), causal with
/// query i at position startPos + i; scale defaults to 1/sqrt(D). f32 or
/// f16 (computed in f32). Result [B, S, H, D] in q's dtype.
Expected<DeviceTensor> customSdpa(Context &ctx, const DeviceTensor &q, const DeviceTensor &kCache,
                                  const DeviceTensor &vCache, int64_t startPos, bool causal,
                                  std::optional<double> scale);

//===-- Masks (ops/mask) -----------------------------------------------===//

/// The op codes of mask_ops.glsl's compare mode.
enum class CompareKind { Lt, Le, Gt, Ge, Eq, Ne, And, Or, Not };
const char *name(CompareKind kind);
/// a OP b with broadcasting (at most 6 dims) into a bool tensor: a
/// comparison of operands of one dtype (the caller applies torch's
/// promotion first), or logical and / or / not (`b` unused for Not) of
/// nonzero tests.
Expected<DeviceTensor> compare(Context &ctx, CompareKind op, const DeviceTensor &a,
                               const DeviceTensor &b);
/// torch.tril over the two innermost dims: elements with j - i > diagonal
/// become 0.
Expected<DeviceTensor> tril(Context &ctx, const DeviceTensor &x, int64_t diagonal);

//===-- Layout (ops/copy) ----------------------------------------------===//

/// A strided read of `src` (any view: permute, slice, select, expand)
/// materialised contiguously: out[i...] = src[offset + sum(i_d * strides[d])].
/// Strides may be 0 (broadcast). At most 8 dims.
Expected<DeviceTensor> gather(Context &ctx, const DeviceTensor &src, std::vector<int64_t> sizes,
                              std::vector<int64_t> strides, int64_t offset);
/// A copy of `src` converted to `dtype` (torch's .to() semantics).
Expected<DeviceTensor> cast(Context &ctx, const DeviceTensor &src, DType dtype);
/// torch.cat along `dim` (all inputs already of the result dtype).
Expected<DeviceTensor> cat(Context &ctx, const std::vector<DeviceTensor> &inputs, int64_t dim);
/// The same buffer with other sizes (numel must match): view/reshape.
Expected<DeviceTensor> reshape(const DeviceTensor &src, std::vector<int64_t> sizes);
/// The bandwidth calibration copy (runtime/shaders/stream.glsl): `out` =
/// `in`, both f32 of one size, a multiple of 4. The fastest copy the device's
/// kernels can make: on CPU drivers with shaderInt64, 8 vec4s per invocation
/// as 32-byte words (wideVec4's choice), the input read as storage texels
/// where texelReads allows (as the GEMV reads its weights); one vec4 per
/// invocation elsewhere, or four per invocation strided by the grid
/// (`stream_copy_vec4x4`), whichever a GPU runs faster: streamCopyVariants
/// lists the candidates, the default first; `variant` picks one of them.
Status streamCopy(Context &ctx, const DeviceTensor &in, const DeviceTensor &out,
                  std::string_view variant = {});
/// The stream copy's candidate shader variants for `in` on this device,
/// streamCopy's default first.
std::vector<std::string> streamCopyVariants(Context &ctx, const DeviceTensor &in);

} // namespace graft::vk
