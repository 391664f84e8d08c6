//===- Xxh64.h - The XXH64 hash ----------------------------------*- C++ -*-===//
//
// XXH64 (Yann Collet's xxHash, 64-bit variant, specification
// github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md): four independent
// 64-bit multiply-rotate lanes over 32-byte stripes, so it runs at memory
// speed where a byte-serial hash (FNV-1a) costs several cycles a byte. The
// program file hashes every constant with it (docs/program-format.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft {

/// XXH64 of `size` bytes at `data` with `seed`; bit-exact with the reference
/// implementation (XXH64("", 0) == 0xEF46DB3751D8E999).
uint64_t xxh64(const void *data, std::size_t size, uint64_t seed = 0);

} // namespace graft
