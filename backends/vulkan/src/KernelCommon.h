//===- KernelCommon.h - What the kernel launchers share -------*- C++ -*-===//
//
// Private to backends/vulkan/src: the error spelling, size text, int32 check
// and stride arithmetic every launcher file (Kernels.cpp, KvCacheKernels.cpp,
// MaskKernels.cpp) needs, kept once instead of per file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Shape.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace graft::vk {

/// "[2, 3]".
inline std::string sizesStr(const std::vector<int64_t> &sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

/// A user error of kernel `kernel` ("vulkan rms_norm: ...").
inline Diagnostic kernelError(const char *kernel, const std::string &message) {
  return Diagnostic::error(std::string("vulkan ") + kernel + ": " + message);
}

/// Element counts and indices are int32 in the shaders.
inline Status checkInt32(const char *kernel, int64_t n) {
  if (n > std::numeric_limits<int32_t>::max())
    return kernelError(kernel, "tensor of " + std::to_string(n) +
                                   " elements exceeds the kernels' int32 indexing");
  return okStatus();
}

/// Strides of a contiguous tensor of `sizes` read as `outSizes`
/// (right-aligned; 0 on the dims it is broadcast along).
inline std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &sizes,
                                             const std::vector<int64_t> &outSizes) {
  std::vector<int64_t> st(outSizes.size(), 0);
  std::vector<int64_t> c = contiguousStrides(sizes);
  std::size_t off = outSizes.size() - sizes.size();
  for (std::size_t i = 0; i < sizes.size(); ++i)
    st[off + i] = sizes[i] == 1 && outSizes[off + i] != 1 ? 0 : c[i];
  return st;
}

/// The broadcast of `shapes` (numpy rules), or kernel `kernel`'s error
/// "shapes A, B and C do not broadcast".
inline Expected<std::vector<int64_t>>
broadcastSizes(const char *kernel, std::initializer_list<const std::vector<int64_t> *> shapes) {
  std::size_t r = 0;
  for (const std::vector<int64_t> *s : shapes)
    r = std::max(r, s->size());
  std::vector<int64_t> out(r, 1);
  for (const std::vector<int64_t> *t : shapes)
    for (std::size_t i = 0; i < t->size(); ++i) {
      int64_t s = (*t)[i];
      int64_t &o = out[r - t->size() + i];
      if (s != o && s != 1 && o != 1) {
        std::string list;
        std::size_t k = 0;
        for (const std::vector<int64_t> *u : shapes) {
          if (k > 0)
            list += k + 1 == shapes.size() ? " and " : ", ";
          list += sizesStr(*u);
          ++k;
        }
        return kernelError(kernel, "shapes " + list + " do not broadcast");
      }
      if (s != 1)
        o = s;
    }
  return out;
}

} // namespace graft::vk
