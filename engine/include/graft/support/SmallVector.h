//===- SmallVector.h - A vector with inline storage for N elements -*- C++ -*-===//
//
// Shapes have a handful of dims; every Value, provenance entry and staged
// prototype holds one, and the rewrite driver copies a prototype into each
// value it creates. With std::vector each copy was a heap allocation; a
// SmallVector keeps up to N elements in place and only spills to the heap
// beyond that. The interface is std::vector's (the parts graft uses), so a
// Shape reads like one.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace graft {

template <class T, std::size_t N> class SmallVector {
public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T &;
  using const_reference = const T &;
  using pointer = T *;
  using const_pointer = const T *;
  using iterator = T *;
  using const_iterator = const T *;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() noexcept = default;
  explicit SmallVector(size_type n) { resize(n); }
  SmallVector(size_type n, const T &value) { assign(n, value); }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  SmallVector(const SmallVector &other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector &&other) noexcept { takeFrom(other); }
  ~SmallVector() {
    std::destroy(begin(), end());
    freeHeap();
  }

  SmallVector &operator=(const SmallVector &other) {
    if (this != &other)
      assign(other.begin(), other.end());
    return *this;
  }
  SmallVector &operator=(SmallVector &&other) noexcept {
    if (this != &other) {
      clear();
      freeHeap();
      takeFrom(other);
    }
    return *this;
  }
  SmallVector &operator=(std::initializer_list<T> init) {
    assign(init.begin(), init.end());
    return *this;
  }

  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    clear();
    if constexpr (std::is_base_of_v<std::forward_iterator_tag,
                                    typename std::iterator_traits<It>::iterator_category>)
      reserve(static_cast<size_type>(std::distance(first, last)));
    for (; first != last; ++first)
      emplace_back(*first);
  }
  void assign(size_type n, const T &value) {
    clear();
    reserve(n);
    for (size_type i = 0; i < n; ++i)
      emplace_back(value);
  }
  void assign(std::initializer_list<T> init) { assign(init.begin(), init.end()); }

  iterator begin() noexcept { return data_; }
  const_iterator begin() const noexcept { return data_; }
  const_iterator cbegin() const noexcept { return data_; }
  iterator end() noexcept { return data_ + size_; }
  const_iterator end() const noexcept { return data_ + size_; }
  const_iterator cend() const noexcept { return data_ + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  size_type size() const noexcept { return size_; }
  size_type max_size() const noexcept { return UINT32_MAX; }
  bool empty() const noexcept { return size_ == 0; }
  size_type capacity() const noexcept { return capacity_; }
  T *data() noexcept { return data_; }
  const T *data() const noexcept { return data_; }

  T &operator[](size_type i) { return data_[i]; }
  const T &operator[](size_type i) const { return data_[i]; }
  T &at(size_type i) {
    if (i >= size_)
      throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  const T &at(size_type i) const { return const_cast<SmallVector *>(this)->at(i); }
  T &front() { return data_[0]; }
  const T &front() const { return data_[0]; }
  T &back() { return data_[size_ - 1]; }
  const T &back() const { return data_[size_ - 1]; }

  void reserve(size_type n) {
    if (n > capacity_)
      grow(n);
  }
  void clear() noexcept {
    std::destroy(begin(), end());
    size_ = 0;
  }
  void push_back(const T &value) { emplace_back(value); }
  void push_back(T &&value) { emplace_back(std::move(value)); }
  template <class... Args> T &emplace_back(Args &&...args) {
    if (size_ == capacity_) {
      // `args` may refer into this vector: build the element first.
      T tmp(std::forward<Args>(args)...);
      grow(capacity_ * 2);
      ::new (static_cast<void *>(data_ + size_)) T(std::move(tmp));
    } else {
      ::new (static_cast<void *>(data_ + size_)) T(std::forward<Args>(args)...);
    }
    return data_[size_++];
  }
  void pop_back() {
    --size_;
    std::destroy_at(data_ + size_);
  }
  void resize(size_type n) {
    if (n < size_) {
      std::destroy(begin() + n, end());
      size_ = static_cast<uint32_t>(n);
      return;
    }
    reserve(n);
    while (size_ < n)
      ::new (static_cast<void *>(data_ + size_++)) T();
  }
  void resize(size_type n, const T &value) {
    if (n < size_) {
      std::destroy(begin() + n, end());
      size_ = static_cast<uint32_t>(n);
      return;
    }
    T copy = value;
    reserve(n);
    while (size_ < n)
      ::new (static_cast<void *>(data_ + size_++)) T(copy);
  }

  iterator insert(const_iterator pos, const T &value) { return emplace(pos, value); }
  iterator insert(const_iterator pos, T &&value) { return emplace(pos, std::move(value)); }
  template <class... Args> iterator emplace(const_iterator pos, Args &&...args) {
    size_type at = static_cast<size_type>(pos - begin());
    T tmp(std::forward<Args>(args)...);
    emplace_back(std::move(tmp));
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  template <class It, class = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    size_type at = static_cast<size_type>(pos - begin());
    size_type old = size_;
    SmallVector tmp(first, last); // the range may alias this vector
    reserve(size_ + tmp.size());
    for (T &v : tmp)
      emplace_back(std::move(v));
    std::rotate(begin() + at, begin() + old, end());
    return begin() + at;
  }
  iterator insert(const_iterator pos, size_type n, const T &value) {
    SmallVector tmp(n, value);
    return insert(pos, tmp.begin(), tmp.end());
  }
  iterator insert(const_iterator pos, std::initializer_list<T> init) {
    return insert(pos, init.begin(), init.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    iterator f = begin() + (first - begin()), l = begin() + (last - begin());
    iterator newEnd = std::move(l, end(), f);
    std::destroy(newEnd, end());
    size_ = static_cast<uint32_t>(newEnd - begin());
    return f;
  }
  void swap(SmallVector &other) noexcept {
    SmallVector tmp(std::move(other));
    other = std::move(*this);
    *this = std::move(tmp);
  }

  friend bool operator==(const SmallVector &a, const SmallVector &b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector &a, const SmallVector &b) { return !(a == b); }
  friend bool operator<(const SmallVector &a, const SmallVector &b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

private:
  bool onHeap() const noexcept { return data_ != inlineData(); }
  T *inlineData() noexcept { return reinterpret_cast<T *>(inline_); }
  const T *inlineData() const noexcept { return reinterpret_cast<const T *>(inline_); }
  void freeHeap() noexcept {
    if (onHeap())
      ::operator delete(static_cast<void *>(data_));
    data_ = inlineData();
    capacity_ = N;
  }
  void grow(size_type want) {
    if (want > max_size())
      throw std::length_error("SmallVector");
    size_type cap = std::max<size_type>(want, N * 2);
    T *fresh = static_cast<T *>(::operator new(cap * sizeof(T)));
    std::uninitialized_move(begin(), end(), fresh);
    std::destroy(begin(), end());
    if (onHeap())
      ::operator delete(static_cast<void *>(data_));
    data_ = fresh;
    capacity_ = static_cast<uint32_t>(cap);
  }
  /// Precondition: this is empty and inline.
  void takeFrom(SmallVector &other) noexcept {
    if (other.onHeap()) {
      data_ = other.data_;
      size_ = other.size_;
      capacity_ = other.capacity_;
      other.data_ = other.inlineData();
      other.size_ = 0;
      other.capacity_ = N;
      return;
    }
    std::uninitialized_move(other.begin(), other.end(), data_);
    size_ = other.size_;
    other.clear();
  }

  T *data_ = inlineData();
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];
};

} // namespace graft
