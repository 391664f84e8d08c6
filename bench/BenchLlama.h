//===- BenchLlama.h - The benchmarks' Llama graphs, from graft synth ---*- C++ -*-===//
//
// The benchmarks time graft on the Llama graphs `graft synth` writes
// (serialize/include/graft/serialize/Synth.h): the graph torch.export makes
// of ExecuTorch's llama_transformer, quantized torchao int4 weight-only
// (every linear weight `dequantize_affine(int8 qdata, [1, 32], scales, none,
// i8, -8, 7)` feeding `aten.linear`, and the embedding), at a small width
// (dim 64, 4 heads sharing 2 key/value heads, feed-forward 128, vocab 128) and
// any depth, with a symbolic sequence length up to 2048. Zero points are
// None (torchao's symmetric spelling), so the rules need no weight data to
// see they are zero.
//
// Data-free graphs (no initializers, no per-node metadata) time matching and
// rewriting alone up to 10^6 nodes; with data, the constant transforms repack
// real (random) weights and the interpreter can run the graph.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/serialize/Synth.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace graft::bench {

/// The benchmarks' Llama shape at `layers` layers: the synthesizer's default
/// width (dim 64, 4 heads, vocab 128, int4 groups of 32) with key/value heads
/// and feed-forward size set as the benchmarks have always had them.
inline LlamaSynthOptions benchLlama(int layers, bool withData = false) {
  LlamaSynthOptions o;
  o.layers = layers;
  o.kvHeads = 2;
  o.hidden = 128;
  o.maxSeqLen = 2048;
  o.dynamicSeq = true;
  o.weightZeroPoints = false;
  o.dataFree = !withData;
  o.metadata = false;
  return o;
}

/// The synthesized graph; a failure is a bug in the options, so it aborts.
inline std::unique_ptr<Graph> synthOrDie(const LlamaSynthOptions &options) {
  auto g = synthesizeLlama(options);
  if (!g) {
    std::fprintf(stderr, "%s", render(g.diags()).c_str());
    std::abort();
  }
  return std::move(*g);
}

} // namespace graft::bench
