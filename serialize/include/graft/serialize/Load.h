//===- Load.h - Read a graph from a .gir or a .pt2 file ---*- C++ -*-===//
//
// The tools accept either graft's text IR or a torch.export archive; this is
// the one place that decides which reader a path goes to (by its first bytes:
// a ZIP archive is a .pt2, anything else text IR).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/serialize/Pt2.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <memory>
#include <optional>
#include <string>

namespace graft {

struct LoadedGraph {
  std::unique_ptr<Graph> graph;
  /// Set when the graph came from a .pt2 archive.
  std::optional<Pt2Provenance> pt2;
};

/// Whether `path` is a ZIP archive (a .pt2), judged by its first bytes.
bool isPt2File(const std::string &path);

/// Reads a .gir (diagnostics rendered against `sources`) or a .pt2.
Expected<LoadedGraph> loadGraph(const std::string &path, SourceManager *sources = nullptr,
                                const Pt2ReadOptions &pt2Options = {});

/// For a graph read from a .pt2: makes every weight that is memory-mapped
/// contiguously from a stored record a file("<archiveRef>", offset=...,
/// bytes=...) reference into the archive, so printing it needs no data file.
/// `archiveRef` is how the printed text names the archive.
void referenceArchiveWeights(Graph &graph, const Pt2Provenance &provenance,
                             const std::string &archiveRef);

} // namespace graft
