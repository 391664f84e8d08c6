//===- Storage.h - Constant bytes, owned or memory-mapped ---*- C++ -*-===//
//
// A Storage is an immutable span of bytes that is either owned (a vector) or
// memory-mapped from a file (weights inside a .pt2 archive are never copied).
// Several tensors (FQNs) may view one Storage with different offsets and
// strides: a tied embedding / lm_head is one Storage.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Expected.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graft {

class Storage {
public:
  /// Takes ownership of `bytes`.
  static std::shared_ptr<Storage> owned(std::vector<uint8_t> bytes);
  /// Zero-filled owned storage of `size` bytes.
  static std::shared_ptr<Storage> zeros(std::size_t size);
  /// Owned storage of `size` bytes with unspecified contents, for a producer
  /// that writes every byte (a repack): no zero-fill pass over the output.
  static std::shared_ptr<Storage> uninitialized(std::size_t size);
  /// Maps `length` bytes at `offset` of `path` read-only. Errors name the file.
  static Expected<std::shared_ptr<Storage>> mapFile(const std::string &path, uint64_t offset,
                                                    uint64_t length);
  /// `length` bytes at `offset` of `whole` (which must hold them), sharing its
  /// bytes and keeping it alive: the weights of an archive are views of one
  /// mapping of it, instead of an open + mmap + close per weight and a VMA
  /// each. A view of a mapped storage is mapped (read-only, releasePages).
  static std::shared_ptr<Storage> view(std::shared_ptr<const Storage> whole, uint64_t offset,
                                       uint64_t length);

  ~Storage();
  Storage(const Storage &) = delete;
  Storage &operator=(const Storage &) = delete;

  const uint8_t *data() const { return data_; }
  /// Writable pointer; only owned storages are writable.
  uint8_t *mutableData();
  std::size_t size() const { return size_; }
  bool isMapped() const { return mapBase_ != nullptr || (whole_ && whole_->isMapped()); }
  /// For mapped storages: the file it came from.
  const std::string &path() const { return path_; }
  /// For mapped storages: tells the kernel this process is done with the
  /// pages for now (madvise MADV_DONTNEED), so they leave its resident set;
  /// a later read faults them back in from the page cache or the file. Called
  /// after one pass over a weight (a predicate scan, a repack, a write) so
  /// that streaming over GBs of mapped weights keeps RSS at one tensor's
  /// worth. A no-op for owned storages (their bytes are the only copy).
  void releasePages() const;

private:
  Storage() = default;
  std::vector<uint8_t> owned_;
  std::unique_ptr<uint8_t[]> uninitialized_; ///< owned, from uninitialized()
  const uint8_t *data_ = nullptr;
  std::size_t size_ = 0;
  void *mapBase_ = nullptr;
  std::size_t mapLength_ = 0;
  std::string path_;
  std::shared_ptr<const Storage> whole_; ///< what a view() views
};

} // namespace graft
