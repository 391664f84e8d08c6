//===- Pt2Bench.cpp - Opening large .pt2 archives -------------------------===//
//
// The goal (issue "torch.export .pt2 interop"): opening an 8B-parameter-shaped
// int4 .pt2 (graph + signature, weights mapped, not read) takes < 1 s and its
// resident memory does not grow with the weights; reading a weight touches
// only its pages. The archives are synthesized once (graft synth's library
// function) into $GRAFT_BENCH_DIR (default /tmp) and reused across runs:
//
//   llama8b_4w.pt2   32 layers, dim 4096, 32 heads / 8 KV heads, FFN 14336,
//                    vocab 128256, int4 group 32 (~9.3 GB, ~1 min to write)
//   llama1l_4w.pt2   the same with 1 layer (to show RSS independent of size)
//
// Counters: nodes, weights (GB in the archive), params_G (elements of every
// constant, scales included), rss_growth_MB (largest resident set growth of
// one open, measured from /proc/self/statm while the program is alive),
// file_rss_growth_MB (its file-backed part: archive pages read), heap_MB
// (malloc'd bytes the open holds, from mallinfo2),
// mapped storages. The archive is the file bench/run_all.sh synthesizes with
// `graft synth` for the compile benchmark (same name, same shape), so one
// run writes it once.
// Results are recorded in docs/benchmarks.md.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/Pt2.h"
#include "graft/serialize/Synth.h"
#include "graft/support/LargeAlloc.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <malloc.h>
#include <map>
#include <set>
#include <unistd.h>

using namespace graft;

namespace {

LlamaSynthOptions llama8b(int layers) {
  LlamaSynthOptions o;
  o.layers = layers;
  o.dim = 4096;
  o.heads = 32;
  o.kvHeads = 8;
  o.hidden = 14336;
  o.vocab = 128256;
  o.groupSize = 32;
  o.maxSeqLen = 2048;
  o.quant = SynthQuant::W4;
  o.dynamicSeq = true;
  return o;
}

/// The archive for `layers`, synthesized on first use.
const std::string &archive(int layers) {
  static std::map<int, std::string> paths;
  auto it = paths.find(layers);
  if (it != paths.end())
    return it->second;
  const char *dir = std::getenv("GRAFT_BENCH_DIR");
  std::string path =
      std::string(dir ? dir : "/tmp") + "/graft_bench_llama" + std::to_string(layers) + "l_4w.pt2";
  if (!std::filesystem::exists(path) || !readPt2(path).ok()) {
    std::fprintf(stderr, "synthesizing %s ...\n", path.c_str());
    LlamaSynthOptions o = llama8b(layers);
    auto g = synthesizeLlama(o);
    if (!g) {
      std::fprintf(stderr, "%s", render(g.diags()).c_str());
      std::abort();
    }
    Status s = writePt2(**g, path, synthWriteOptions(o));
    if (!s) {
      std::fprintf(stderr, "%s", render(s.diags()).c_str());
      std::abort();
    }
  }
  return paths.emplace(layers, path).first->second;
}

/// Resident set size in bytes (`field` 1), or its file-backed part (`field` 2).
double rssBytes(int field = 1) {
  long pages = 0, resident = 0, shared = 0;
  if (std::FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld %ld", &pages, &resident, &shared) != 3)
      resident = shared = 0;
    std::fclose(f);
  }
  return static_cast<double>(field == 2 ? shared : resident) *
         static_cast<double>(::sysconf(_SC_PAGESIZE));
}

/// Bytes malloc has handed out and not had back (its heap and its own
/// mmapped blocks), plus graft's huge-page blocks (LargeAlloc.h). RSS growth
/// alone undercounts an open's memory when earlier benchmarks left freed
/// heap resident.
double heapBytes() {
  struct mallinfo2 mi = ::mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd + graft::largeBytesMapped());
}

/// Opens the archive: graph, signature, every weight mapped (not read).
void BM_OpenPt2Int4(benchmark::State &state) {
  const std::string &path = archive(static_cast<int>(state.range(0)));
  double growth = 0, fileGrowth = 0, heap = 0, weightBytes = 0, storages = 0, nodes = 0, params = 0;
  for (auto _ : state) {
    double before = rssBytes(), fileBefore = rssBytes(2), heapBefore = heapBytes();
    auto p = readPt2(path);
    if (!p) {
      state.SkipWithError(render(p.diags()).c_str());
      break;
    }
    growth = std::max(growth, rssBytes() - before);
    fileGrowth = std::max(fileGrowth, rssBytes(2) - fileBefore);
    heap = std::max(heap, heapBytes() - heapBefore);
    state.PauseTiming();
    std::set<const Storage *> seen;
    weightBytes = 0;
    params = 0;
    for (const GraphInput &in : p->graph->inputs()) {
      if (!in.hasData())
        continue;
      params += static_cast<double>(in.data().numel());
      if (seen.insert(in.data().storage().get()).second)
        weightBytes += static_cast<double>(in.data().storage()->size());
    }
    storages = static_cast<double>(seen.size());
    nodes = static_cast<double>(p->graph->numNodes());
    benchmark::DoNotOptimize(p);
    state.ResumeTiming();
  }
  state.counters["nodes"] = nodes;
  state.counters["weights_GB"] = weightBytes / 1e9;
  state.counters["params_G"] = params / 1e9; // elements of every constant (weights + qparams)
  state.counters["storages"] = storages;
  state.counters["rss_growth_MB"] = growth / 1e6;
  state.counters["file_rss_growth_MB"] = fileGrowth / 1e6; // mapped pages read
  state.counters["heap_MB"] = heap / 1e6;                  // graph, signature, names
}
BENCHMARK(BM_OpenPt2Int4)->Arg(1)->Arg(32)->Unit(benchmark::kMillisecond)->Iterations(5);

/// Reads every byte of one weight (layers.31.feed_forward.w2 qdata, 58.7 MB)
/// after opening: RSS grows by that weight, not by the archive.
void BM_TouchOneWeight(benchmark::State &state) {
  const std::string &path = archive(32);
  double growth = 0, bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto p = readPt2(path);
    if (!p) {
      state.SkipWithError(render(p.diags()).c_str());
      break;
    }
    const GraphInput *in =
        p->graph->findConstant("layers.31.feed_forward.w2.parametrizations.weight.original0");
    double before = rssBytes();
    state.ResumeTiming();
    const Tensor &t = in->data();
    const uint8_t *d = t.storage()->data();
    uint64_t sum = 0;
    for (std::size_t i = 0; i < t.storage()->size(); ++i)
      sum += d[i];
    benchmark::DoNotOptimize(sum);
    state.PauseTiming();
    growth = rssBytes() - before;
    bytes = static_cast<double>(t.storage()->size());
    state.ResumeTiming();
  }
  state.counters["weight_MB"] = bytes / 1e6;
  state.counters["rss_growth_MB"] = growth / 1e6;
}
BENCHMARK(BM_TouchOneWeight)->Unit(benchmark::kMillisecond)->Iterations(3);

} // namespace
