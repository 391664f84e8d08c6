//===- Tensor.h - A strided view of typed bytes ---*- C++ -*-===//
//
// Tensor is graft's data-carrying tensor: a dtype, concrete sizes and strides
// (in elements) and an element offset into a shared Storage. Constants in a
// graph and values in the reference interpreter are Tensors. Copies are
// shallow (they share the Storage).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/DType.h"
#include "graft/ir/Storage.h"
#include "graft/ir/TensorProto.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graft {

class Tensor {
public:
  Tensor() = default;
  /// A view of `storage`; strides empty means contiguous.
  Tensor(DType dtype, std::vector<int64_t> sizes, std::shared_ptr<Storage> storage,
         int64_t offset = 0, std::vector<int64_t> strides = {});

  /// Fresh zero-filled contiguous tensor.
  static Tensor empty(DType dtype, std::vector<int64_t> sizes);
  /// Contiguous tensor with unspecified contents: for producers that write
  /// every element (saves a zero-fill pass over GB-sized repacks).
  static Tensor uninitialized(DType dtype, std::vector<int64_t> sizes);
  /// Contiguous tensor from values converted to `dtype` with torch's
  /// conversion rules (round-to-nearest-even for narrowing floats).
  static Tensor fromDoubles(DType dtype, std::vector<int64_t> sizes,
                            const std::vector<double> &values);
  static Tensor fromInts(DType dtype, std::vector<int64_t> sizes,
                         const std::vector<int64_t> &values);
  static Tensor scalar(DType dtype, double value);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &sizes() const { return sizes_; }
  const std::vector<int64_t> &strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t rank() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t size(int64_t dim) const;
  int64_t numel() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * elementSize(dtype_); }
  bool isContiguous() const;
  const std::shared_ptr<Storage> &storage() const { return storage_; }
  /// Storage::releasePages on this tensor's storage (mapped data only).
  void releasePages() const {
    if (storage_)
      storage_->releasePages();
  }

  /// The prototype describing this tensor (concrete shape, dtype, strides).
  TensorProto proto() const;

  /// Pointer to the element at linear (row-major logical) index 0 of the view.
  const uint8_t *rawData() const;
  uint8_t *mutableRawData();
  template <class T> const T *data() const { return reinterpret_cast<const T *>(rawData()); }
  template <class T> T *mutableData() { return reinterpret_cast<T *>(mutableRawData()); }

  /// Storage element offset of a logical row-major linear index.
  int64_t storageIndex(int64_t linear) const;
  /// Element at a logical linear index, converted to double / int64.
  double getDouble(int64_t linear) const;
  int64_t getInt(int64_t linear) const;
  /// Writes an element (tensor must be writable), converting with torch's rules.
  void setDouble(int64_t linear, double value);
  void setInt(int64_t linear, int64_t value);

  /// Contiguous copy (or this tensor if already contiguous and offset 0).
  Tensor contiguous() const;
  /// Deep copy into fresh owned storage.
  Tensor clone() const;
  /// Reinterprets a contiguous tensor with new sizes (numel must match).
  Tensor view(std::vector<int64_t> sizes) const;
  /// Elementwise conversion with torch's `.to(dtype)` semantics.
  Tensor to(DType dtype) const;

  /// Bitwise equality of dtype, sizes and element bytes.
  bool equal(const Tensor &other) const;
  /// Short human-readable rendering (values truncated after `maxElements`).
  std::string str(int64_t maxElements = 16) const;

private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  std::shared_ptr<Storage> storage_;
};

/// A quantized tensor held as its named buffers (see TensorProto::buffers).
struct QuantizedTensor {
  TensorProto proto;
  std::vector<std::pair<std::string, Tensor>> buffers;
  const Tensor *find(const std::string &name) const;
};

/// Checks each buffer against the prototype's BufferDescs (names, shapes,
/// dtypes, byte sizes) and returns them in canonical order.
Expected<std::vector<std::pair<BufferDesc, Tensor>>> flatten(const QuantizedTensor &tensor);
/// Builds a QuantizedTensor from named buffers; every expected buffer must be
/// present with the right shape and dtype, and no unknown buffer may appear.
Expected<QuantizedTensor> unflatten(const TensorProto &proto,
                                    std::vector<std::pair<std::string, Tensor>> buffers);

} // namespace graft
