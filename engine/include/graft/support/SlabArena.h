//===- SlabArena.h - Fixed-size slots carved from large chunks ---*- C++ -*-===//
//
// A graph allocates its nodes and values here instead of one heap block
// each: slots of one size are carved in creation order from chunks, so
// walking a graph's node list reads memory sequentially (the hardware
// prefetcher follows it) instead of taking a cache and TLB miss per node,
// which is what the rewrite driver's scan over a 10^6-node graph cost.
// Freed slots go to a free list and are reused by the next allocation.
//
// SlabAllocator<T> adapts an arena to the standard allocator interface
// (std::list<Node, SlabAllocator<Node>>): single-element requests of the
// arena's slot size come from the arena, anything else from the heap.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/LargeAlloc.h"

#include <algorithm>
#include <cstddef>
#include <new>
#include <vector>

namespace graft {

class SlabArena {
public:
  SlabArena() = default;
  SlabArena(const SlabArena &) = delete;
  SlabArena &operator=(const SlabArena &) = delete;
  ~SlabArena() {
    for (const Chunk &c : chunks_)
      deallocateLarge(c.base, c.bytes);
  }

  /// A slot of `bytes` (every call with the same size; the first call fixes
  /// it). Returns null for another size: the caller uses the heap.
  void *allocate(std::size_t bytes) {
    std::size_t want = slotFor(bytes);
    if (slotSize_ == 0)
      slotSize_ = want;
    else if (want != slotSize_)
      return nullptr;
    if (free_) {
      FreeSlot *s = free_;
      free_ = s->next;
      return s;
    }
    if (next_ == end_)
      grow();
    void *p = next_;
    next_ += slotSize_;
    return p;
  }
  /// Returns a slot from allocate() to the free list.
  void deallocate(void *p) {
    auto *s = static_cast<FreeSlot *>(p);
    s->next = free_;
    free_ = s;
  }
  /// Whether allocate(bytes) hands out slots (rather than null).
  bool servesSize(std::size_t bytes) const { return slotSize_ == 0 || slotFor(bytes) == slotSize_; }

private:
  static constexpr std::size_t kAlign = alignof(std::max_align_t);
  struct FreeSlot {
    FreeSlot *next;
  };
  struct Chunk {
    char *base;
    std::size_t bytes;
  };
  static std::size_t slotFor(std::size_t n) {
    return std::max((n + kAlign - 1) / kAlign * kAlign, sizeof(FreeSlot));
  }
  void grow() {
    // Small graphs (tests, rule instances) stay small; big ones get chunks
    // that double up to 16 MiB, from the size where allocateLarge backs
    // them with huge pages (a 10^6-node graph's nodes and values are read
    // at random by fusing: TLB reach matters as much as the cache).
    std::size_t slots = chunks_.empty() ? 16 : 2 * lastSlots_;
    if (slots * slotSize_ > kMaxChunkBytes)
      slots = std::max<std::size_t>(1, kMaxChunkBytes / slotSize_);
    std::size_t bytes = largeCapacity(slots * slotSize_);
    slots = bytes / slotSize_;
    lastSlots_ = slots;
    char *base = static_cast<char *>(allocateLarge(bytes));
    chunks_.push_back({base, bytes});
    next_ = base;
    end_ = base + slots * slotSize_;
  }
  static constexpr std::size_t kMaxChunkBytes = std::size_t(16) << 20;

  std::size_t slotSize_ = 0;
  std::size_t lastSlots_ = 0;
  FreeSlot *free_ = nullptr;
  char *next_ = nullptr;
  char *end_ = nullptr;
  std::vector<Chunk> chunks_;
};

template <class T> class SlabAllocator {
public:
  using value_type = T;
  explicit SlabAllocator(SlabArena *arena) noexcept : arena_(arena) {}
  template <class U> SlabAllocator(const SlabAllocator<U> &o) noexcept : arena_(o.arena()) {}

  T *allocate(std::size_t n) {
    if (n == 1)
      if (void *p = arena_->allocate(sizeof(T)))
        return static_cast<T *>(p);
    return static_cast<T *>(::operator new(n * sizeof(T)));
  }
  void deallocate(T *p, std::size_t n) noexcept {
    if (n == 1 && arena_->servesSize(sizeof(T)))
      arena_->deallocate(p);
    else
      ::operator delete(p);
  }
  SlabArena *arena() const noexcept { return arena_; }
  template <class U> bool operator==(const SlabAllocator<U> &o) const noexcept {
    return arena_ == o.arena();
  }

private:
  SlabArena *arena_;
};

} // namespace graft
