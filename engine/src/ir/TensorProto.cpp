//===- TensorProto.cpp - Prototypes, quant layouts and their buffers ------===//
#include "graft/ir/TensorProto.h"

#include <sstream>

namespace graft {

std::string Device::str() const {
  return index < 0 ? type : type + ":" + std::to_string(index);
}

std::optional<int64_t> BufferDesc::bytes() const {
  auto sizes = concreteSizes(shape);
  if (!sizes)
    return std::nullopt;
  int64_t n = 1;
  for (int64_t s : *sizes)
    n *= s;
  return n * static_cast<int64_t>(elementSize(dtype));
}

bool TensorProto::isContiguous() const {
  return strides.empty() || strides == contiguousStrides(shape);
}

Shape TensorProto::effectiveStrides() const {
  return strides.empty() ? contiguousStrides(shape) : strides.shape();
}

bool TensorProto::sameShapeAndDType(const TensorProto &other) const {
  return dtype == other.dtype && shape == other.shape;
}

namespace {

/// Storage dtype for a logical quantized integer type: torchao keeps
/// sub-byte values one per byte in int8/uint8 tensors.
DType storageOf(DType quantDType) {
  if (isIntegral(quantDType) && bitWidth(quantDType) < 8)
    return isSignedIntegral(quantDType) ? DType::I8 : DType::U8;
  return quantDType;
}

Dim blockCount(const Dim &size, int64_t block) {
  if (block == -1)
    return 1;
  return size.floorDiv(block);
}

Shape lastDimDivided(const Shape &shape, int64_t k) {
  Shape s = shape;
  if (!s.empty())
    s.back() = s.back().floorDiv(k);
  return s;
}

struct BufferBuilder {
  const TensorProto &proto;
  std::vector<BufferDesc> operator()(const AffineQuant &q) const {
    std::vector<BufferDesc> out;
    Shape qshape = q.packedInt4 ? lastDimDivided(proto.shape, 2) : proto.shape;
    out.push_back({"qdata", qshape, q.packedInt4 ? DType::U8 : storageOf(q.quantDType)});
    Shape sshape;
    for (std::size_t i = 0; i < proto.shape.size(); ++i)
      sshape.push_back(blockCount(proto.shape[i], q.blockSize[i]));
    out.push_back({"scale", sshape, q.scaleDType});
    if (q.zeroPointDType)
      out.push_back({"zero_point", sshape, *q.zeroPointDType});
    return out;
  }
  std::vector<BufferDesc> operator()(const Fp8PerTensor &q) const {
    return {{"qdata", proto.shape, q.elementDType}, {"scale", {}, DType::F32}};
  }
  std::vector<BufferDesc> operator()(const MxFp8 &q) const {
    return {{"qdata", proto.shape, q.elementDType},
            {"scale", lastDimDivided(proto.shape, q.blockSize), DType::F8E8M0FNU}};
  }
  std::vector<BufferDesc> operator()(const NvFp4 &q) const {
    std::vector<BufferDesc> out = {
        {"qdata", lastDimDivided(proto.shape, 2), DType::F4E2M1FNx2},
        {"scale", lastDimDivided(proto.shape, q.blockSize), DType::F8E4M3FN},
        {"amax", {}, DType::F32}};
    if (q.perRowAmax) {
      Shape rows(proto.shape.begin(), proto.shape.end() - (proto.shape.empty() ? 0 : 1));
      out.push_back({"row_amax", rows, DType::F32});
    }
    return out;
  }
  std::vector<BufferDesc> operator()(const Fp8Blockwise &q) const {
    Shape sshape = proto.shape;
    std::size_t r = sshape.size(), nb = q.blockSize.size();
    for (std::size_t i = 0; i < nb && i < r; ++i) {
      Dim &d = sshape[r - nb + i];
      int64_t b = q.blockSize[i];
      d = (d + Dim(b - 1)).floorDiv(b); // ceil: partial tiles get a scale too
    }
    return {{"qdata", proto.shape, q.elementDType}, {"scale", sshape, DType::F32}};
  }
};

std::string listStr(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

struct LayoutPrinter {
  std::string operator()(const AffineQuant &q) const {
    std::ostringstream os;
    os << "affine(block=" << listStr(q.blockSize) << ", qdtype=" << name(q.quantDType)
       << ", range=[" << q.quantMin << ", " << q.quantMax << "], scale=" << name(q.scaleDType)
       << ", zero_point=" << (q.zeroPointDType ? name(*q.zeroPointDType) : "none");
    if (q.packedInt4)
      os << ", packed=" << (q.nibbleOrder == NibbleOrder::LowFirst ? "low_first" : "high_first");
    os << ")";
    return os.str();
  }
  std::string operator()(const Fp8PerTensor &q) const {
    return "fp8(elem=" + std::string(name(q.elementDType)) + ")";
  }
  std::string operator()(const MxFp8 &q) const {
    return "mxfp8(elem=" + std::string(name(q.elementDType)) +
           ", block=" + std::to_string(q.blockSize) + ")";
  }
  std::string operator()(const NvFp4 &q) const {
    return "nvfp4(block=" + std::to_string(q.blockSize) +
           ", row_amax=" + (q.perRowAmax ? "true" : "false") + ")";
  }
  std::string operator()(const Fp8Blockwise &q) const {
    return "fp8_blockwise(elem=" + std::string(name(q.elementDType)) +
           ", block=" + listStr(q.blockSize) + ")";
  }
};

} // namespace

Status validateQuantLayout(const TensorProto &proto) {
  if (!proto.quant)
    return okStatus();
  const auto &shape = proto.shape;
  auto fail = [&](const std::string &msg) {
    return Diagnostic::error("invalid quantization layout for " + proto.str() + ": " + msg);
  };
  auto divides = [&](const Dim &d, int64_t k) {
    return !d.isConstant() || (k > 0 && d.constant() % k == 0);
  };
  if (const auto *a = std::get_if<AffineQuant>(&*proto.quant)) {
    if (a->blockSize.size() != shape.size())
      return fail("block_size has " + std::to_string(a->blockSize.size()) + " entries for a rank-" +
                  std::to_string(shape.size()) + " tensor");
    for (std::size_t i = 0; i < shape.size(); ++i) {
      int64_t b = a->blockSize[i];
      if (b == 0 || b < -1)
        return fail("block_size[" + std::to_string(i) + "] = " + std::to_string(b));
      if (b != -1 && !divides(shape[i], b))
        return fail("block_size[" + std::to_string(i) + "] = " + std::to_string(b) +
                    " does not divide dim " + shape[i].str());
    }
    auto bounds = integerBounds(a->quantDType);
    if (!bounds)
      return fail("quant dtype " + std::string(name(a->quantDType)) + " is not an integer type");
    if (a->quantMin > a->quantMax || a->quantMin < bounds->first || a->quantMax > bounds->second)
      return fail("range [" + std::to_string(a->quantMin) + ", " + std::to_string(a->quantMax) +
                  "] does not fit " + std::string(name(a->quantDType)));
    if (a->packedInt4) {
      if (a->quantMax - a->quantMin > 15)
        return fail("packed int4 needs a range of at most 16 values");
      if (shape.empty() || !divides(shape.back(), 2))
        return fail("packed int4 needs an even last dim");
    }
    if (!isFloatingPoint(a->scaleDType))
      return fail("scale dtype must be floating point");
    return okStatus();
  }
  if (const auto *m = std::get_if<MxFp8>(&*proto.quant)) {
    if (shape.empty() || !divides(shape.back(), m->blockSize))
      return fail("last dim must be a multiple of " + std::to_string(m->blockSize));
    if (!isFloat8(m->elementDType) || m->elementDType == DType::F8E8M0FNU)
      return fail("element dtype must be an fp8 format");
    return okStatus();
  }
  if (const auto *n = std::get_if<NvFp4>(&*proto.quant)) {
    if (shape.empty() || !divides(shape.back(), n->blockSize))
      return fail("last dim must be a multiple of " + std::to_string(n->blockSize));
    return okStatus();
  }
  if (const auto *f = std::get_if<Fp8Blockwise>(&*proto.quant)) {
    if (f->blockSize.empty() || f->blockSize.size() > shape.size())
      return fail("block has more dims than the tensor");
    return okStatus();
  }
  if (const auto *p = std::get_if<Fp8PerTensor>(&*proto.quant)) {
    if (!isFloat8(p->elementDType))
      return fail("element dtype must be an fp8 format");
  }
  return okStatus();
}

Expected<std::vector<BufferDesc>> TensorProto::buffers() const {
  if (!quant)
    return std::vector<BufferDesc>{{"data", shape, dtype}};
  GRAFT_CHECK_OK(validateQuantLayout(*this));
  return std::visit(BufferBuilder{*this}, *quant);
}

std::optional<int64_t> TensorProto::totalBytes() const {
  auto bufs = buffers();
  if (!bufs)
    return std::nullopt;
  int64_t total = 0;
  for (const BufferDesc &b : *bufs) {
    auto n = b.bytes();
    if (!n)
      return std::nullopt;
    total += *n;
  }
  return total;
}

std::string TensorProto::str() const {
  std::string s = std::string(name(dtype)) + graft::str(shape);
  std::vector<std::string> attrs;
  if (!strides.empty())
    attrs.push_back("strides=" + graft::str(strides));
  if (storageOffset != Dim(0))
    attrs.push_back("offset=" + storageOffset.str());
  if (!(device == Device{}))
    attrs.push_back("device=" + device.str());
  if (quant)
    attrs.push_back("quant=" + std::visit(LayoutPrinter{}, *quant));
  if (!attrs.empty()) {
    s += "{";
    for (std::size_t i = 0; i < attrs.size(); ++i)
      s += (i ? ", " : "") + attrs[i];
    s += "}";
  }
  return s;
}

namespace {
/// Dim equality with the constant case inline: Dim::operator== is out of
/// line and compares the symbolic terms and opaque text every time.
bool dimEqual(const Dim &a, const Dim &b) {
  if (a.isConstant() && b.isConstant())
    return a.constant() == b.constant();
  return a == b;
}

bool shapeEqual(const Shape &a, const Shape &b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!dimEqual(a[i], b[i]))
      return false;
  return true;
}
} // namespace

uint64_t protoHash(const TensorProto &p) {
  uint64_t h = (static_cast<uint64_t>(p.dtype) + 1) * 0x9E3779B97F4A7C15ull;
  h ^= p.shape.size() + (p.strides.size() << 8) + (uint64_t(p.quant.has_value()) << 16);
  for (const Dim &d : p.shape)
    h = (h ^ (d.isConstant() ? static_cast<uint64_t>(d.constant()) : 0xD1B54A32D192ED03ull)) *
        0x100000001B3ull;
  return h;
}

bool protoEqual(const TensorProto &a, const TensorProto &b) {
  return a.dtype == b.dtype && shapeEqual(a.shape, b.shape) && shapeEqual(a.strides, b.strides) &&
         dimEqual(a.storageOffset, b.storageOffset) && a.device.index == b.device.index &&
         a.device.type == b.device.type && a.quant == b.quant;
}

} // namespace graft
