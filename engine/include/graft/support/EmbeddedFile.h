//===- EmbeddedFile.h - Data files compiled into the binary ---*- C++ -*-===//
#pragma once
#include <cstddef>

namespace graft {

/// A data file (e.g. an op-declaration YAML) compiled into the library by
/// CMake's graft_embed_files(), so tools work without an install tree.
struct EmbeddedFile {
  const char *name;
  const char *data;
  std::size_t size;
};

} // namespace graft
