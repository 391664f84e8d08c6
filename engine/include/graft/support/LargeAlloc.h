//===- LargeAlloc.h - Large, huge-page backed allocations ------*- C++ -*-===//
//
// Memory for the few big, long-lived arrays of a large graph: the slabs its
// nodes and values live in and the slot arrays of its name tables. Fusing a
// 10^6-node graph reads them at random (a hash probe, a value's prototype,
// a node's schema), and on 4 KiB pages nearly every such access misses the
// TLB as well as the cache; on a virtual machine a TLB miss is a
// two-dimensional page walk. Blocks of at least kHugePageBytes are mapped
// 2 MiB-aligned and advised as transparent huge pages (Linux,
// MADV_HUGEPAGE), which also makes one page fault per 2 MiB instead of per
// 4 KiB. Smaller blocks, and systems without the advice, use operator new.
//
//   void *p = allocateLarge(bytes);
//   ...
//   deallocateLarge(p, bytes); // the same byte count
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>

namespace graft {

/// The size from which allocateLarge maps huge-page backed memory.
inline constexpr std::size_t kHugePageBytes = std::size_t(2) << 20;

/// `bytes` of memory aligned to at least alignof(std::max_align_t). Throws
/// std::bad_alloc when out of memory, as operator new.
void *allocateLarge(std::size_t bytes);
/// The same, every byte zero. A mapped block is zero without being written:
/// its pages are neither touched nor faulted in until used, so a table
/// sized generously costs nothing for the slots it never fills.
void *allocateLargeZeroed(std::size_t bytes);
/// Frees a block from allocateLarge(bytes) or allocateLargeZeroed(bytes)
/// (the same `bytes`).
void deallocateLarge(void *p, std::size_t bytes) noexcept;

/// From this size allocateMapped maps a block of its own.
inline constexpr std::size_t kMappedBytes = std::size_t(256) << 10;

/// `bytes` of memory for an append-only store filled in order (a string
/// arena's chunk, a stable vector's chunk), aligned to at least
/// alignof(std::max_align_t). From kMappedBytes on, the block is mapped on
/// its own in small pages instead of coming from malloc: glibc serves a
/// request that large from its heap once the dynamic mmap threshold has
/// risen, and first consolidates every small block freed since (at 10^6
/// nodes, tens of thousands of freed names and argument lists per chunk).
/// Sequentially filled memory gains little from huge pages, and on a
/// virtual machine their first touch costs more than small pages'. Throws
/// std::bad_alloc when out of memory.
void *allocateMapped(std::size_t bytes);
/// Frees a block from allocateMapped(bytes) (the same `bytes`).
void deallocateMapped(void *p, std::size_t bytes) noexcept;

/// The capacity worth asking allocateLarge for when `bytes` are needed: a
/// block that would be mapped in huge pages is rounded up to whole pages
/// (the rest of the last page is paid for anyway).
std::size_t largeCapacity(std::size_t bytes);

/// Bytes currently mapped by allocateLarge outside the malloc heap (for
/// memory reports: mallinfo does not see them).
std::size_t largeBytesMapped();
/// Bytes allocateLarge has mapped since the process started, unmapped
/// blocks included (fresh memory the kernel zeroed: benchmarks report it).
std::size_t largeBytesMappedEver();

} // namespace graft
