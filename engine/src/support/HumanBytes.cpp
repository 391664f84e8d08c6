//===- HumanBytes.cpp - Byte counts for people ----------------------------===//
#include "graft/support/HumanBytes.h"

#include <cstdio>

namespace graft {

std::string humanBytes(uint64_t bytes, int decimals) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f %s", u ? decimals : 0, v, units[u]);
  return buf;
}

} // namespace graft
