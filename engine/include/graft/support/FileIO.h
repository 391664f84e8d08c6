//===- FileIO.h - Reading files and writing them atomically ---*- C++ -*-===//
#pragma once

#include "graft/support/Expected.h"

#include <string>
#include <string_view>

namespace graft {

/// Whole-file read; the error names the path and the OS reason.
Expected<std::string> readFile(const std::string &path);

/// Writes `contents` to `path` atomically: a temp file in the same directory,
/// fsync'd, then renamed over `path`. On failure nothing is left behind.
Status writeFileAtomic(const std::string &path, std::string_view contents);

} // namespace graft
