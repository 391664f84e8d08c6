//===- SynthTestUtil.h - Synthesized models the compile tests share -*- C++ -*-===//
//
// The tiny Llama that compile / program tests build with `graft synth`'s
// generator (serialize/Synth.h), and writing it as a .pt2, once instead of
// per test file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/serialize/Pt2.h"
#include "graft/serialize/Synth.h"

#include <gtest/gtest.h>

#include <string>

namespace graft::testing {

/// 2 layers, dim 64, 4 heads sharing 2 key/value heads, vocab 128, 16
/// positions, sequence length 4, tied embeddings, symbolic sequence length.
inline LlamaSynthOptions tinyLlama(SynthQuant quant) {
  LlamaSynthOptions o;
  o.layers = 2;
  o.dim = 64;
  o.heads = 4;
  o.kvHeads = 2;
  o.vocab = 128;
  o.maxSeqLen = 16;
  o.seqLen = 4;
  o.quant = quant;
  o.tiedEmbeddings = true;
  o.dynamicSeq = true;
  return o;
}

/// Synthesizes `o` and writes it to `path` as torch.export would; a failure
/// fails the test. Returns `path`.
inline std::string writeSynthesizedPt2(const LlamaSynthOptions &o, const std::string &path) {
  auto g = synthesizeLlama(o);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  if (!g.ok())
    return path;
  Status s = writePt2(**g, path, synthWriteOptions(o));
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : render(s.diags()));
  return path;
}

} // namespace graft::testing
