//===- StringArena.h - Bump storage for strings that live together -*- C++ -*-===//
//
// Chunked bump storage for many small strings (and arrays of views of them)
// that are created together and die together: the FQN registry's entries
// (each new constant's FQN, its request's source FQNs and argument text, its
// lookup key) and the rewrite driver's per-transaction scratch. A
// std::string per field cost the rewrite driver a heap allocation and a free
// for every field of every recorded constant; here a copy is a bump of a
// pointer and a memcpy, and nothing is freed until the arena is.
//
// Strings never move: a chunk, once allocated, stays where it is until the
// arena is destroyed (or reset()), so views handed out stay valid as it
// grows. Moving an arena moves its chunks (views stay valid); copying is not
// offered (a copy would have to re-point every view into it).
//
//   StringArena arena;
//   std::string_view fqn = arena.copy(someString);
//   std::span<std::string_view> srcs = arena.array<std::string_view>(2);
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/LargeAlloc.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace graft {

class StringArena {
public:
  StringArena() = default;
  StringArena(const StringArena &) = delete;
  StringArena &operator=(const StringArena &) = delete;
  StringArena(StringArena &&o) noexcept { swap(o); }
  ~StringArena() { release(); }
  StringArena &operator=(StringArena &&o) noexcept {
    StringArena tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  void swap(StringArena &o) noexcept {
    chunks_.swap(o.chunks_);
    std::swap(cur_, o.cur_);
    std::swap(end_, o.end_);
    std::swap(used_, o.used_);
  }

  /// `n` bytes aligned for `align` (a power of two), valid until the arena
  /// is reset or destroyed.
  void *allocate(std::size_t n, std::size_t align = 1) {
    // align is a power of two: the padding to the next multiple is a mask
    // (a division per string was 2 % of fusing's instructions).
    std::size_t pad = (0 - reinterpret_cast<std::uintptr_t>(cur_)) & (align - 1);
    if (!cur_ || static_cast<std::size_t>(end_ - cur_) < n + pad) {
      grow(n + align);
      pad = (0 - reinterpret_cast<std::uintptr_t>(cur_)) & (align - 1);
    }
    char *p = cur_ + pad;
    cur_ = p + n;
    used_ += n + pad;
    return p;
  }

  /// A copy of `s` in the arena.
  std::string_view copy(std::string_view s) {
    if (s.empty())
      return {};
    char *p = static_cast<char *>(allocate(s.size()));
    std::memcpy(p, s.data(), s.size());
    return {p, s.size()};
  }

  /// `n` value-initialized elements of a trivially destructible type.
  template <class T> std::span<T> array(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<T>, "the arena runs no destructors");
    if (n == 0)
      return {};
    T *p = static_cast<T *>(allocate(n * sizeof(T), alignof(T)));
    for (std::size_t i = 0; i < n; ++i)
      new (p + i) T();
    return {p, n};
  }

  /// Forgets every string but keeps the first chunk for reuse: a
  /// per-transaction arena costs no allocation in steady state.
  void reset() {
    if (chunks_.size() > 1) {
      // Keep the largest chunk (the last: sizes double).
      Chunk keep = chunks_.back();
      chunks_.pop_back();
      release();
      chunks_.push_back(keep);
    }
    if (!chunks_.empty()) {
      cur_ = chunks_.back().data;
      end_ = cur_ + chunks_.back().size;
    }
    used_ = 0;
  }

  /// Bytes handed out (including alignment padding).
  std::size_t bytesUsed() const { return used_; }
  /// Bytes held in chunks.
  std::size_t bytesReserved() const {
    std::size_t n = 0;
    for (const Chunk &c : chunks_)
      n += c.size;
    return n;
  }

private:
  struct Chunk {
    char *data = nullptr;
    std::size_t size = 0;
  };
  void grow(std::size_t atLeast) {
    std::size_t size = chunks_.empty() ? kFirstChunk : std::min(chunks_.back().size * 2, kMaxChunk);
    size = std::max(size, atLeast);
    chunks_.push_back({static_cast<char *>(allocateMapped(size)), size});
    cur_ = chunks_.back().data;
    end_ = cur_ + size;
  }
  /// Frees every chunk.
  void release() noexcept {
    for (const Chunk &c : chunks_)
      deallocateMapped(c.data, c.size);
    chunks_.clear();
    cur_ = end_ = nullptr;
  }

  static constexpr std::size_t kFirstChunk = 4096;
  /// Chunks double up to 1 MiB. From 256 KiB on they are mapped on their
  /// own (allocateMapped): a registry growing by a chunk from malloc's heap
  /// made glibc consolidate every block freed since (3 % of fusing 10^6
  /// nodes).
  static constexpr std::size_t kMaxChunk = std::size_t(1) << 20;
  std::vector<Chunk> chunks_;
  char *cur_ = nullptr;
  char *end_ = nullptr;
  std::size_t used_ = 0;
};

} // namespace graft
