//===- TensorProto.h - Data-free description of a tensor value ---*- C++ -*-===//
//
// A TensorProto says everything about a tensor except its data: shape
// (concrete or symbolic), dtype, strides/storage offset, device, and an
// optional quantization layout. For a quantized tensor it can list the named
// buffers the tensor materializes into (e.g. "qdata", "scale", "zero_point")
// with shapes, dtypes and byte sizes, so shape inference, memory planning and
// serialization can reason about quantized weights without touching bytes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/DType.h"
#include "graft/ir/Shape.h"
#include "graft/support/BoxedOptional.h"
#include "graft/support/Expected.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace graft {

struct Device {
  std::string type = "cpu";
  int index = -1; ///< -1: no index
  bool operator==(const Device &) const = default;
  std::string str() const; ///< "cpu", "cuda:0"
};

/// Which half of a byte holds the element with the even index along the
/// packed axis. torchao/ET-VK linear packing is LowFirst;
/// quantized_decomposed.embedding_4bit is HighFirst.
enum class NibbleOrder { LowFirst, HighFirst };

/// Integer affine quantization (torchao quantize_affine / quantized_decomposed):
///   value = (q - zero_point) * scale, one (scale, zero_point) per block.
struct AffineQuant {
  std::vector<int64_t> blockSize; ///< per dim; -1 means the whole dim
  DType quantDType = DType::I8;   ///< logical element type (i8, i4, u4, ...)
  int64_t quantMin = -128;
  int64_t quantMax = 127;
  DType scaleDType = DType::F32;
  std::optional<DType> zeroPointDType; ///< nullopt: no zero point (symmetric)
  /// Two 4-bit values per byte along the last dim, stored as u8 with a +8
  /// offset for signed values (so the packed byte holds q + 8 in [0, 15]).
  bool packedInt4 = false;
  NibbleOrder nibbleOrder = NibbleOrder::LowFirst;
  bool operator==(const AffineQuant &) const = default;
};

/// FP8 with one f32 scale for the whole tensor.
struct Fp8PerTensor {
  DType elementDType = DType::F8E4M3FN;
  bool operator==(const Fp8PerTensor &) const = default;
};

/// OCP MXFP8: 32-element blocks along the last dim, E8M0 (power-of-two) scales.
struct MxFp8 {
  DType elementDType = DType::F8E4M3FN;
  int64_t blockSize = 32;
  bool operator==(const MxFp8 &) const = default;
};

/// NVFP4: E2M1 values packed two per byte, 16-element blocks with E4M3
/// scales, a global f32 amax (per tensor) and optionally one amax per row.
struct NvFp4 {
  int64_t blockSize = 16;
  bool perRowAmax = false;
  bool operator==(const NvFp4 &) const = default;
};

/// FP8 with f32 scales per 2-D tile (DeepSeek-style 128x128 blocks).
struct Fp8Blockwise {
  DType elementDType = DType::F8E4M3FN;
  std::vector<int64_t> blockSize = {128, 128};
  bool operator==(const Fp8Blockwise &) const = default;
};

using QuantLayout = std::variant<AffineQuant, Fp8PerTensor, MxFp8, NvFp4, Fp8Blockwise>;

/// One named buffer a (quantized) tensor materializes into.
struct BufferDesc {
  std::string name; ///< "qdata", "scale", "zero_point", "amax", "row_amax"
  Shape shape;
  DType dtype;
  /// Byte size when the shape is concrete.
  std::optional<int64_t> bytes() const;
  bool operator==(const BufferDesc &) const = default;
};

struct TensorProto {
  // dtype first: with a Value's hot fields (Graph.h) it shares the Value's
  // first cache line, which is all a matcher's dtype test reads.
  DType dtype = DType::F32;
  Shape shape;
  /// Empty means contiguous row-major. One pointer when empty, as is `quant` when unset:
  /// a graph holds a prototype per value, and nearly every one has neither.
  CompactShape strides;
  Dim storageOffset = 0;
  Device device;
  BoxedOptional<QuantLayout> quant;

  TensorProto() = default;
  TensorProto(DType dt, Shape s) : dtype(dt), shape(std::move(s)) {}

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  Dim numel() const { return graft::numel(shape); }
  bool isContiguous() const;
  /// Strides, with the contiguous default made explicit.
  Shape effectiveStrides() const;
  /// Logical shape/dtype equality (ignores strides, device, quant).
  bool sameShapeAndDType(const TensorProto &other) const;
  bool operator==(const TensorProto &) const = default;

  /// The buffers this tensor materializes into. A plain tensor is one buffer
  /// "data"; an affine-quantized one is "qdata" (+ "scale", "zero_point"); the
  /// block-scaled float formats add their scale/amax buffers.
  Expected<std::vector<BufferDesc>> buffers() const;
  /// Total bytes of all buffers when shapes are concrete.
  std::optional<int64_t> totalBytes() const;

  /// "f32[1, s0, 128]" plus any non-default attributes.
  std::string str() const;
};

/// A cheap fingerprint of a prototype (dtype, rank, constant sizes, strides
/// and quantization present): intern tables and memo lookups compare it
/// before comparing prototypes in full, so only a likely match pays for a
/// full compare. Equal prototypes have equal fingerprints.
uint64_t protoHash(const TensorProto &p);
/// TensorProto::operator==, field for field (keep in step with TensorProto),
/// with constant dims compared inline (Dim::operator== is out of line and
/// compares symbolic terms): the defaulted operator was ~3 % of fusing's
/// instructions.
bool protoEqual(const TensorProto &a, const TensorProto &b);

/// Validates a quant layout against the tensor's shape (block sizes divide
/// dims, packed dims are even, ranges fit the quant dtype ...).
Status validateQuantLayout(const TensorProto &proto);

} // namespace graft
