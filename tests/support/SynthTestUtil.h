//===- SynthTestUtil.h - Synthesized models the compile tests share -*- C++ -*-===//
//
// The tiny Llama that compile / program tests build with `graft synth`'s
// generator (serialize/Synth.h), writing it as a .pt2, and the prefill +
// one-token-per-call schedule the KV-cache tests decode with, once instead
// of per test file.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/interp/Interpreter.h"
#include "graft/serialize/Pt2.h"
#include "graft/serialize/Synth.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

/// One call of a KV-cache Llama's decode: tokens [begin, end) of the prompt
/// at position `begin`, as the model's inputs (tokens [1, n] and input_pos
/// [1], both i64).
struct DecodeStep {
  std::size_t begin, end;
  std::vector<RuntimeValue> inputs;
  /// For SCOPED_TRACE: "positions [begin, end)".
  std::string trace() const {
    return "positions [" + std::to_string(begin) + ", " + std::to_string(end) + ")";
  }
};

/// The calls that decode `ids`: a prefill of the first `prefill` tokens at
/// position 0, then one token per call.
inline std::vector<DecodeStep> decodeSteps(const std::vector<int64_t> &ids, std::size_t prefill) {
  std::vector<DecodeStep> steps;
  for (std::size_t end = prefill; end <= ids.size(); ++end) {
    std::size_t begin = end == prefill ? 0 : end - 1;
    std::vector<int64_t> tokens(ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                ids.begin() + static_cast<std::ptrdiff_t>(end));
    steps.push_back(
        {begin,
         end,
         {Tensor::fromInts(DType::I64, {1, static_cast<int64_t>(tokens.size())}, tokens),
          Tensor::fromInts(DType::I64, {1}, {static_cast<int64_t>(begin)})}});
  }
  return steps;
}

} // namespace graft::testing
