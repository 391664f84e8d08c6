//===- Load.cpp - Read a graph from a .gir or a .pt2 file -----------------===//
#include "graft/serialize/Load.h"

#include "graft/serialize/TextIR.h"

#include <cstdio>

namespace graft {

bool isPt2File(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  unsigned char magic[4] = {0, 0, 0, 0};
  std::size_t n = std::fread(magic, 1, 4, f);
  std::fclose(f);
  // Local file header, or the end record of an empty archive.
  return n == 4 && magic[0] == 'P' && magic[1] == 'K' &&
         ((magic[2] == 3 && magic[3] == 4) || (magic[2] == 5 && magic[3] == 6));
}

Expected<LoadedGraph> loadGraph(const std::string &path, SourceManager *sources,
                                const Pt2ReadOptions &pt2Options) {
  LoadedGraph out;
  if (isPt2File(path)) {
    GRAFT_TRY(Pt2Program p, readPt2(path, pt2Options));
    out.graph = std::move(p.graph);
    out.pt2 = std::move(p.provenance);
    return out;
  }
  GRAFT_TRY(out.graph, parseGraphFile(path, sources));
  return out;
}

void referenceArchiveWeights(Graph &graph, const Pt2Provenance &provenance,
                             const std::string &archiveRef) {
  for (GraphInput &in : graph.inputs()) {
    if (!in.isConstant() || !in.hasData())
      continue;
    auto it = provenance.weightFileOffsets.find(in.fqn);
    if (it == provenance.weightFileOffsets.end())
      continue;
    const Tensor &t = in.data();
    if (!t.defined() || !t.isContiguous() || in.value->proto().quant)
      continue;
    in.setData(t, FileInit{archiveRef, it->second, static_cast<uint64_t>(t.nbytes()), {}});
  }
}

} // namespace graft
