//===- Tensor.cpp - Strided tensors over shared storage -------------------===//
#include "graft/ir/Tensor.h"

#include "graft/support/FloatBits.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace graft {

Tensor::Tensor(DType dtype, std::vector<int64_t> sizes, std::shared_ptr<Storage> storage,
               int64_t offset, std::vector<int64_t> strides)
    : dtype_(dtype), sizes_(std::move(sizes)), strides_(std::move(strides)), offset_(offset),
      storage_(std::move(storage)) {
  if (strides_.empty())
    strides_ = contiguousStrides(sizes_);
}

namespace {
/// Bytes of a contiguous tensor of these sizes.
std::size_t contiguousBytes(DType dtype, const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return static_cast<std::size_t>(n) * elementSize(dtype);
}
} // namespace

Tensor Tensor::empty(DType dtype, std::vector<int64_t> sizes) {
  std::size_t bytes = contiguousBytes(dtype, sizes);
  return Tensor(dtype, std::move(sizes), Storage::zeros(bytes));
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> sizes) {
  std::size_t bytes = contiguousBytes(dtype, sizes);
  return Tensor(dtype, std::move(sizes), Storage::uninitialized(bytes));
}

Tensor Tensor::fromDoubles(DType dtype, std::vector<int64_t> sizes,
                           const std::vector<double> &values) {
  Tensor t = empty(dtype, std::move(sizes));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  for (std::size_t i = 0; i < values.size(); ++i)
    t.setDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::fromInts(DType dtype, std::vector<int64_t> sizes,
                        const std::vector<int64_t> &values) {
  Tensor t = empty(dtype, std::move(sizes));
  assert(static_cast<int64_t>(values.size()) == t.numel());
  for (std::size_t i = 0; i < values.size(); ++i)
    t.setInt(static_cast<int64_t>(i), values[i]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double value) {
  return fromDoubles(dtype, {}, {value});
}

int64_t Tensor::size(int64_t dim) const {
  if (dim < 0)
    dim += rank();
  return sizes_.at(static_cast<std::size_t>(dim));
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes_)
    n *= s;
  return n;
}

bool Tensor::isContiguous() const {
  int64_t expected = 1;
  for (std::size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] != 1 && strides_[i] != expected)
      return false;
    expected *= sizes_[i];
  }
  return true;
}

TensorProto Tensor::proto() const {
  TensorProto p;
  p.dtype = dtype_;
  for (int64_t s : sizes_)
    p.shape.push_back(s);
  if (!isContiguous())
    for (int64_t s : strides_)
      p.strides.push_back(s);
  return p;
}

const uint8_t *Tensor::rawData() const {
  return storage_->data() + offset_ * static_cast<int64_t>(elementSize(dtype_));
}

uint8_t *Tensor::mutableRawData() {
  assert(!storage_->isMapped() && "tensor storage is read-only (memory-mapped)");
  uint8_t *base = storage_->mutableData();
  if (!base) // an empty storage: there is nothing to write
    return nullptr;
  return base + offset_ * static_cast<int64_t>(elementSize(dtype_));
}

int64_t Tensor::storageIndex(int64_t linear) const {
  int64_t idx = 0;
  for (std::size_t i = sizes_.size(); i-- > 0;) {
    int64_t s = sizes_[i];
    idx += (linear % s) * strides_[i];
    linear /= s;
  }
  return idx;
}

namespace {

template <class T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T> void store(uint8_t *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

/// double -> integer with torch's (x86) behaviour: truncate toward zero,
/// then wrap to the target width. NaN becomes 0 (documented deviation from
/// UB in C++).
int64_t truncToInt64(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min(); // x86 cvttsd2si "integer indefinite"
  if (v < -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

} // namespace

double Tensor::getDouble(int64_t linear) const {
  const uint8_t *p = storage_->data() +
                     (offset_ + storageIndex(linear)) * static_cast<int64_t>(elementSize(dtype_));
  switch (dtype_) {
  case DType::Bool:
    return load<uint8_t>(p) ? 1.0 : 0.0;
  case DType::U8:
  case DType::U1:
  case DType::U2:
  case DType::U3:
  case DType::U4:
  case DType::U5:
  case DType::U6:
  case DType::U7:
  case DType::QU8:
  case DType::QU4x2:
  case DType::QU2x4:
  case DType::F4E2M1FNx2:
    return load<uint8_t>(p);
  case DType::I8:
  case DType::I1:
  case DType::I2:
  case DType::I3:
  case DType::I4:
  case DType::I5:
  case DType::I6:
  case DType::I7:
  case DType::QI8:
    return load<int8_t>(p);
  case DType::I16:
    return load<int16_t>(p);
  case DType::I32:
  case DType::QI32:
    return load<int32_t>(p);
  case DType::I64:
    return static_cast<double>(load<int64_t>(p));
  case DType::U16:
    return load<uint16_t>(p);
  case DType::U32:
    return load<uint32_t>(p);
  case DType::U64:
    return static_cast<double>(load<uint64_t>(p));
  case DType::F16:
    return halfBitsToFloat(load<uint16_t>(p));
  case DType::BF16:
    return bfloat16BitsToFloat(load<uint16_t>(p));
  case DType::F32:
    return load<float>(p);
  case DType::F64:
    return load<double>(p);
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0FNU:
    return float8BitsToFloat(load<uint8_t>(p), dtype_);
  case DType::C32:
  case DType::C64:
  case DType::C128:
    break; // real part only is not meaningful; complex is storage-only here
  }
  return std::numeric_limits<double>::quiet_NaN();
}

int64_t Tensor::getInt(int64_t linear) const {
  const uint8_t *p = storage_->data() +
                     (offset_ + storageIndex(linear)) * static_cast<int64_t>(elementSize(dtype_));
  switch (dtype_) {
  case DType::I64:
    return load<int64_t>(p);
  case DType::U64:
    return static_cast<int64_t>(load<uint64_t>(p));
  default:
    break;
  }
  double d = getDouble(linear);
  return truncToInt64(d);
}

void Tensor::setDouble(int64_t linear, double v) {
  uint8_t *p = storage_->mutableData();
  assert(p && "tensor storage is read-only");
  p += (offset_ + storageIndex(linear)) * static_cast<int64_t>(elementSize(dtype_));
  switch (dtype_) {
  case DType::Bool:
    store<uint8_t>(p, v != 0.0 ? 1 : 0);
    return;
  case DType::F16:
    store<uint16_t>(p, floatToHalfBits(static_cast<float>(v)));
    return;
  case DType::BF16:
    store<uint16_t>(p, floatToBFloat16Bits(static_cast<float>(v)));
    return;
  case DType::F32:
    store<float>(p, static_cast<float>(v));
    return;
  case DType::F64:
    store<double>(p, v);
    return;
  case DType::F8E4M3FN:
  case DType::F8E4M3FNUZ:
  case DType::F8E5M2:
  case DType::F8E5M2FNUZ:
  case DType::F8E8M0FNU:
    store<uint8_t>(p, floatToFloat8Bits(static_cast<float>(v), dtype_));
    return;
  default:
    break;
  }
  setInt(linear, truncToInt64(v));
}

void Tensor::setInt(int64_t linear, int64_t v) {
  if (isFloatingPoint(dtype_) || dtype_ == DType::Bool) {
    setDouble(linear, static_cast<double>(v));
    return;
  }
  uint8_t *p = storage_->mutableData();
  assert(p && "tensor storage is read-only");
  p += (offset_ + storageIndex(linear)) * static_cast<int64_t>(elementSize(dtype_));
  switch (elementSize(dtype_)) {
  case 1:
    store<uint8_t>(p, static_cast<uint8_t>(v));
    return;
  case 2:
    store<uint16_t>(p, static_cast<uint16_t>(v));
    return;
  case 4:
    store<uint32_t>(p, static_cast<uint32_t>(v));
    return;
  default:
    store<uint64_t>(p, static_cast<uint64_t>(v));
    return;
  }
}

Tensor Tensor::contiguous() const {
  if (isContiguous())
    return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(dtype_, sizes_);
  std::size_t es = elementSize(dtype_);
  int64_t n = numel();
  const uint8_t *src = storage_->data();
  uint8_t *dst = out.storage_->mutableData();
  if (isContiguous()) {
    std::memcpy(dst, rawData(), static_cast<std::size_t>(n) * es);
    return out;
  }
  if (n == 0)
    return out;
  if (sizes_.empty()) { // a 0-dim view of one element
    std::memcpy(dst, rawData(), es);
    return out;
  }
  // Walk the source with a row counter instead of storageIndex(i) per
  // element (a division per dim per element): materializing a transposed
  // weight is on the path of every program write. Innermost dim in a tight
  // loop per element size, so the compiler specializes the copy.
  const std::size_t rank = sizes_.size();
  const int64_t inner = sizes_[rank - 1];
  const int64_t innerStride = strides_[rank - 1] * static_cast<int64_t>(es);
  std::vector<int64_t> idx(rank, 0);
  const uint8_t *row = src + offset_ * static_cast<int64_t>(es);
  auto copyRow = [&](auto tag, const uint8_t *s, uint8_t *d) {
    using T = decltype(tag);
    for (int64_t k = 0; k < inner; ++k, s += innerStride, d += sizeof(T))
      std::memcpy(d, s, sizeof(T));
  };
  for (int64_t done = 0; done < n; done += inner) {
    uint8_t *d = dst + done * static_cast<int64_t>(es);
    switch (es) {
    case 1:
      copyRow(uint8_t{}, row, d);
      break;
    case 2:
      copyRow(uint16_t{}, row, d);
      break;
    case 4:
      copyRow(uint32_t{}, row, d);
      break;
    case 8:
      copyRow(uint64_t{}, row, d);
      break;
    default:
      for (int64_t k = 0; k < inner; ++k)
        std::memcpy(d + k * static_cast<int64_t>(es), row + k * innerStride, es);
    }
    // Next row: increment the outer dims like an odometer.
    for (std::size_t i = rank - 1; i-- > 0;) {
      row += strides_[i] * static_cast<int64_t>(es);
      if (++idx[i] < sizes_[i])
        break;
      row -= sizes_[i] * strides_[i] * static_cast<int64_t>(es);
      idx[i] = 0;
    }
  }
  return out;
}

Tensor Tensor::view(std::vector<int64_t> sizes) const {
  Tensor c = contiguous();
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  assert(n == numel());
  (void)n;
  return Tensor(dtype_, std::move(sizes), c.storage_, c.offset_);
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_)
    return *this;
  Tensor out = empty(dtype, sizes_);
  int64_t n = numel();
  bool intPath = !isFloatingPoint(dtype_) && dtype_ != DType::Bool && !isFloatingPoint(dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (intPath)
      out.setInt(i, getInt(i));
    else if (isFloatingPoint(dtype_) && dtype != DType::F64 && isFloatingPoint(dtype))
      // torch converts narrow floats through float: double rounding matches.
      out.setDouble(i, static_cast<float>(getDouble(i)));
    else
      out.setDouble(i, getDouble(i));
  }
  return out;
}

bool Tensor::equal(const Tensor &other) const {
  if (dtype_ != other.dtype_ || sizes_ != other.sizes_)
    return false;
  Tensor a = contiguous(), b = other.contiguous();
  return std::memcmp(a.rawData(), b.rawData(), a.nbytes()) == 0;
}

std::string Tensor::str(int64_t maxElements) const {
  std::ostringstream os;
  os << name(dtype_) << '[';
  for (std::size_t i = 0; i < sizes_.size(); ++i)
    os << (i ? ", " : "") << sizes_[i];
  os << "] {";
  int64_t n = numel();
  for (int64_t i = 0; i < n && i < maxElements; ++i) {
    if (i)
      os << ", ";
    if (isFloatingPoint(dtype_))
      os << getDouble(i);
    else
      os << getInt(i);
  }
  if (n > maxElements)
    os << ", ... (" << n << " elements)";
  os << '}';
  return os.str();
}

const Tensor *QuantizedTensor::find(const std::string &name) const {
  for (const auto &[n, t] : buffers)
    if (n == name)
      return &t;
  return nullptr;
}

namespace {
Status checkBuffer(const BufferDesc &desc, const Tensor &t) {
  auto sizes = concreteSizes(desc.shape);
  if (!sizes)
    return Diagnostic::error("buffer '" + desc.name + "' has a symbolic shape " + str(desc.shape) +
                             "; cannot hold data");
  if (t.dtype() != desc.dtype || t.sizes() != *sizes)
    return Diagnostic::error("buffer '" + desc.name + "' is " + t.proto().str() + ", expected " +
                             std::string(name(desc.dtype)) + str(desc.shape));
  return okStatus();
}
} // namespace

Expected<std::vector<std::pair<BufferDesc, Tensor>>> flatten(const QuantizedTensor &tensor) {
  GRAFT_TRY(auto descs, tensor.proto.buffers());
  std::vector<std::pair<BufferDesc, Tensor>> out;
  for (const BufferDesc &d : descs) {
    const Tensor *t = tensor.find(d.name);
    if (!t)
      return Diagnostic::error("quantized tensor " + tensor.proto.str() + " lacks buffer '" +
                               d.name + "'");
    GRAFT_CHECK_OK(checkBuffer(d, *t));
    out.emplace_back(d, *t);
  }
  if (out.size() != tensor.buffers.size())
    return Diagnostic::error("quantized tensor " + tensor.proto.str() +
                             " holds buffers its layout does not describe");
  return out;
}

Expected<QuantizedTensor> unflatten(const TensorProto &proto,
                                    std::vector<std::pair<std::string, Tensor>> buffers) {
  GRAFT_TRY(auto descs, proto.buffers());
  QuantizedTensor qt;
  qt.proto = proto;
  for (const BufferDesc &d : descs) {
    auto it = std::find_if(buffers.begin(), buffers.end(),
                           [&](const auto &b) { return b.first == d.name; });
    if (it == buffers.end())
      return Diagnostic::error("missing buffer '" + d.name + "' for " + proto.str());
    GRAFT_CHECK_OK(checkBuffer(d, it->second));
    qt.buffers.emplace_back(d.name, it->second);
  }
  for (const auto &b : buffers) {
    bool known = std::any_of(descs.begin(), descs.end(),
                             [&](const BufferDesc &d) { return d.name == b.first; });
    if (!known)
      return Diagnostic::error("unexpected buffer '" + b.first + "' for " + proto.str());
  }
  return qt;
}

} // namespace graft
