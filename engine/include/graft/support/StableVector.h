//===- StableVector.h - Append-only sequence with stable elements -*- C++ -*-===//
//
// An append-only sequence whose elements never move: they live in chunks
// that are never reallocated, so references handed out (and string_views
// into the elements, as the FQN registry's flat indexes keep) stay valid as
// it grows. It replaces std::deque where elements are large: libstdc++'s
// deque gives every element above 512 bytes a block of its own, an
// allocation per element (the registry's provenance entries are ~0.5 KiB).
//
// Chunks grow geometrically: chunk k holds ChunkSize * 2^k elements, up to
// ChunkSize * 2^kMaxDoublings, and all later chunks that many. A small
// sequence allocates little; a large one makes few allocations. Fixed
// chunks of 32 provenance entries were one ~14 KiB malloc per 32 rewrites,
// and each such request makes glibc consolidate its fast bins, which hold
// every small block a rewrite freed: 3 % of fusing 10^6 nodes. Big
// chunks are mapped on their own (allocateMapped, LargeAlloc.h), not taken
// from malloc's heap, for the same reason.
//
//   StableVector<Entry> entries;
//   Entry &e = entries.emplace_back();
//   for (const Entry &x : entries) ...
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/LargeAlloc.h"

#include <bit>
#include <cstddef>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace graft {

template <class T, std::size_t ChunkSize = 32> class StableVector {
  static_assert(ChunkSize > 0);

public:
  template <bool Const> class Iterator {
    using Owner = std::conditional_t<Const, const StableVector, StableVector>;

  public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const T *, T *>;
    using reference = std::conditional_t<Const, const T &, T &>;

    Iterator() = default;
    Iterator(Owner *owner, std::size_t i) : owner_(owner), i_(i) {}
    operator Iterator<true>() const { return {owner_, i_}; }

    reference operator*() const { return (*owner_)[i_]; }
    pointer operator->() const { return &(*owner_)[i_]; }
    reference operator[](difference_type n) const { return (*owner_)[i_ + n]; }
    Iterator &operator++() {
      ++i_;
      return *this;
    }
    Iterator operator++(int) { return {owner_, i_++}; }
    Iterator &operator--() {
      --i_;
      return *this;
    }
    Iterator operator--(int) { return {owner_, i_--}; }
    Iterator &operator+=(difference_type n) {
      i_ += n;
      return *this;
    }
    Iterator &operator-=(difference_type n) {
      i_ -= n;
      return *this;
    }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const Iterator &a, const Iterator &b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const Iterator &a, const Iterator &b) { return a.i_ == b.i_; }
    friend auto operator<=>(const Iterator &a, const Iterator &b) { return a.i_ <=> b.i_; }

  private:
    Owner *owner_ = nullptr;
    std::size_t i_ = 0;
  };
  using value_type = T;
  using size_type = std::size_t;
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  StableVector() = default;
  StableVector(const StableVector &other) {
    for (const T &x : other)
      emplace_back(x);
  }
  StableVector(StableVector &&other) noexcept
      : chunks_(std::move(other.chunks_)), size_(std::exchange(other.size_, 0)) {}
  StableVector &operator=(const StableVector &other) {
    if (this != &other) {
      StableVector copy(other);
      swap(copy);
    }
    return *this;
  }
  StableVector &operator=(StableVector &&other) noexcept {
    StableVector moved(std::move(other));
    swap(moved);
    return *this;
  }
  ~StableVector() { clear(); }
  void swap(StableVector &other) noexcept {
    chunks_.swap(other.chunks_);
    std::swap(size_, other.size_);
  }

  size_type size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T &operator[](size_type i) {
    auto [c, o] = locate(i);
    return chunks_[c][o];
  }
  const T &operator[](size_type i) const {
    auto [c, o] = locate(i);
    return chunks_[c][o];
  }
  T &front() { return (*this)[0]; }
  const T &front() const { return (*this)[0]; }
  T &back() { return (*this)[size_ - 1]; }
  const T &back() const { return (*this)[size_ - 1]; }
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  template <class... Args> T &emplace_back(Args &&...args) {
    auto [c, o] = locate(size_);
    if (c == chunks_.size())
      chunks_.push_back(allocateChunk(c));
    T *slot = chunks_[c] + o;
    ::new (static_cast<void *>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(const T &x) { emplace_back(x); }
  void push_back(T &&x) { emplace_back(std::move(x)); }

  void clear() {
    for (size_type i = 0; i < size_; ++i)
      (*this)[i].~T();
    for (size_type c = 0; c < chunks_.size(); ++c)
      deallocateChunk(chunks_[c], c);
    chunks_.clear();
    size_ = 0;
  }

  /// Elements chunk `c` holds.
  static constexpr size_type chunkCapacity(size_type c) {
    return ChunkSize << (c < kMaxDoublings ? c : kMaxDoublings);
  }

private:
  static constexpr bool kPlainAlign = alignof(T) <= alignof(std::max_align_t);
  static T *allocateChunk(size_type c) {
    std::size_t bytes = chunkCapacity(c) * sizeof(T);
    if constexpr (kPlainAlign)
      return static_cast<T *>(allocateMapped(bytes));
    else
      return static_cast<T *>(::operator new(bytes, std::align_val_t(alignof(T))));
  }
  static void deallocateChunk(T *p, size_type c) noexcept {
    if constexpr (kPlainAlign)
      deallocateMapped(p, chunkCapacity(c) * sizeof(T));
    else
      ::operator delete(p, std::align_val_t(alignof(T)));
  }
  static constexpr size_type kMaxDoublings = 10;
  /// Elements in the geometric chunks 0..kMaxDoublings together.
  static constexpr size_type kGeometric = ChunkSize * ((size_type(2) << kMaxDoublings) - 1);
  /// (chunk, offset) of element i.
  static std::pair<size_type, size_type> locate(size_type i) {
    if (i < kGeometric) {
      // Chunk k starts at ChunkSize * (2^k - 1).
      size_type q = i / ChunkSize + 1;
      size_type k = static_cast<size_type>(std::bit_width(q)) - 1;
      return {k, i - ChunkSize * ((size_type(1) << k) - 1)};
    }
    size_type rest = i - kGeometric, big = ChunkSize << kMaxDoublings;
    return {kMaxDoublings + 1 + rest / big, rest % big};
  }

  std::vector<T *> chunks_;
  size_type size_ = 0;
};

} // namespace graft
