//===- HumanBytes.h - Byte counts for people ---------------------*- C++ -*-===//
//
// One spelling of sizes in every summary graft prints (device limits, compile
// summaries), so the same number never reads two ways.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace graft {

/// `bytes` in the largest binary unit (B, KiB, MiB, GiB, TiB) that keeps the
/// number at least 1, with `decimals` digits after the point ("1.5 KiB",
/// "512 B": whole bytes never carry decimals).
std::string humanBytes(uint64_t bytes, int decimals = 1);

} // namespace graft
