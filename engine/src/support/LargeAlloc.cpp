//===- LargeAlloc.cpp - Large, huge-page backed allocations ---------------===//
//
// See LargeAlloc.h. The mapping is over-allocated by one huge page and
// trimmed to a 2 MiB-aligned range, so the kernel can back it with whole
// huge pages from the first fault (an unaligned mapping would leave its
// ends on small pages). MADV_HUGEPAGE matters where transparent huge pages
// are in "madvise" mode (Debian's default); in "always" mode it is a no-op,
// in "never" mode the mapping simply stays on small pages.
//
//===----------------------------------------------------------------------===//
#include "graft/support/LargeAlloc.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#define GRAFT_HAVE_MMAP 1
#else
#define GRAFT_HAVE_MMAP 0
#endif

namespace graft {

namespace {
/// Mappings are made in whole pages of this size (or a multiple of it).
constexpr std::size_t kSmallPageBytes = 4096;
std::atomic<std::size_t> gMapped{0};
std::atomic<std::size_t> gMappedEver{0};
std::size_t roundUp(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}
} // namespace

std::size_t largeCapacity(std::size_t bytes) {
  return GRAFT_HAVE_MMAP && bytes >= kHugePageBytes ? roundUp(bytes, kHugePageBytes) : bytes;
}

namespace {
#if GRAFT_HAVE_MMAP
/// `size` (a multiple of kHugePageBytes) bytes of fresh, zero pages,
/// 2 MiB-aligned and advised as huge pages.
void *mapHuge(std::size_t size) {
  std::size_t span = size + kHugePageBytes;
  void *raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    throw std::bad_alloc();
  auto base = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t aligned = roundUp(base, kHugePageBytes);
  // Trim the unaligned head and the tail beyond the aligned range.
  if (aligned > base)
    munmap(raw, aligned - base);
  std::size_t tail = base + span - (aligned + size);
  if (tail)
    munmap(reinterpret_cast<void *>(aligned + size), tail);
  void *p = reinterpret_cast<void *>(aligned);
  madvise(p, size, MADV_HUGEPAGE); // advice only: failure leaves small pages
  gMapped.fetch_add(size, std::memory_order_relaxed);
  gMappedEver.fetch_add(size, std::memory_order_relaxed);
  return p;
}
#endif
} // namespace

void *allocateLarge(std::size_t bytes) {
#if GRAFT_HAVE_MMAP
  if (bytes >= kHugePageBytes)
    return mapHuge(roundUp(bytes, kHugePageBytes));
#endif
  return ::operator new(bytes);
}

void *allocateLargeZeroed(std::size_t bytes) {
#if GRAFT_HAVE_MMAP
  if (bytes >= kHugePageBytes)
    return mapHuge(roundUp(bytes, kHugePageBytes)); // fresh pages read as zero
#endif
  void *p = ::operator new(bytes);
  std::memset(p, 0, bytes);
  return p;
}

void *allocateMapped(std::size_t bytes) {
#if GRAFT_HAVE_MMAP
  if (bytes >= kMappedBytes) {
    std::size_t size = roundUp(bytes, kSmallPageBytes);
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      throw std::bad_alloc();
    gMapped.fetch_add(size, std::memory_order_relaxed);
    gMappedEver.fetch_add(size, std::memory_order_relaxed);
    return p;
  }
#endif
  return ::operator new(bytes);
}

namespace {
/// Frees a block of `bytes`: mapped (in whole `page`s) when it is at least
/// `threshold` bytes, else from operator new.
void release(void *p, std::size_t bytes, std::size_t threshold, std::size_t page) noexcept {
  if (!p)
    return;
#if GRAFT_HAVE_MMAP
  if (bytes >= threshold) {
    std::size_t size = roundUp(bytes, page);
    munmap(p, size);
    gMapped.fetch_sub(size, std::memory_order_relaxed);
    return;
  }
#else
  (void)threshold;
  (void)page;
#endif
  ::operator delete(p);
}
} // namespace

void deallocateMapped(void *p, std::size_t bytes) noexcept {
  release(p, bytes, kMappedBytes, kSmallPageBytes);
}

std::size_t largeBytesMapped() {
  return gMapped.load(std::memory_order_relaxed);
}

std::size_t largeBytesMappedEver() {
  return gMappedEver.load(std::memory_order_relaxed);
}

void deallocateLarge(void *p, std::size_t bytes) noexcept {
  release(p, bytes, kHugePageBytes, kHugePageBytes);
}

} // namespace graft
