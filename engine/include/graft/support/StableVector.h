//===- StableVector.h - Append-only sequence with stable elements -*- C++ -*-===//
//
// An append-only sequence whose elements never move: they live in fixed
// chunks of ChunkSize, so references handed out (and string_views into the
// elements, as the FQN registry's flat indexes keep) stay valid as it grows.
// It replaces std::deque where elements are large: libstdc++'s deque gives
// every element above 512 bytes a block of its own, an allocation per
// element (the registry's provenance entries are ~0.5 KiB).
//
//   StableVector<Entry> entries;
//   Entry &e = entries.emplace_back();
//   for (const Entry &x : entries) ...
//
//===----------------------------------------------------------------------===//
#pragma once

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
  T &operator[](size_type i) { return chunks_[i / ChunkSize][i % ChunkSize]; }
  const T &operator[](size_type i) const { return chunks_[i / ChunkSize][i % ChunkSize]; }
  T &front() { return (*this)[0]; }
  const T &front() const { return (*this)[0]; }
  T &back() { return (*this)[size_ - 1]; }
  const T &back() const { return (*this)[size_ - 1]; }
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

  template <class... Args> T &emplace_back(Args &&...args) {
    if (size_ == chunks_.size() * ChunkSize)
      chunks_.push_back(
          static_cast<T *>(::operator new(ChunkSize * sizeof(T), std::align_val_t(alignof(T)))));
    T *slot = chunks_[size_ / ChunkSize] + size_ % ChunkSize;
    ::new (static_cast<void *>(slot)) T(std::forward<Args>(args)...);
    ++size_;
    return *slot;
  }
  void push_back(const T &x) { emplace_back(x); }
  void push_back(T &&x) { emplace_back(std::move(x)); }

  void clear() {
    for (size_type i = 0; i < size_; ++i)
      (*this)[i].~T();
    for (T *c : chunks_)
      ::operator delete(c, std::align_val_t(alignof(T)));
    chunks_.clear();
    size_ = 0;
  }

private:
  std::vector<T *> chunks_;
  size_type size_ = 0;
};

} // namespace graft
