//===- ProgramFile.h - The compiled Vulkan program file (.vkprog) ---*- C++ -*-===//
//
// `graft compile` writes, and `graft run` reads, one self-describing binary
// file per compiled model (docs/program-format.md):
//
//   header   magic "GRAFTVKP", format version, file size, section table
//   META     JSON: target profile, source model, compile summary
//   GRAPH    canonical text IR of the fused graph, constants without data
//   REFGRAPH (optional) text IR of the original graph, for `graft run --check`
//   CONSTS   JSON: the constant pool (offset, size, content hash per blob) and
//            which graph input each blob backs
//   PLAN     JSON: per node placement (device kernel / host step / CPU
//            fallback + reason) and partition; partitions; CPU subgraphs
//   PROV     JSON: FQN registry provenance (source FQNs + transform of every
//            constant the rules made)
//   SHADERS  JSON: every shader variant the program may dispatch (name,
//            template, source hash, bindings, workgroup size) and its module
//   SPIRV    the SPIR-V modules those variants name, each stored once
//   DATA     the constant blobs, each 64-byte aligned; byte-identical
//            constants (a tied embedding / lm_head weight) stored once
//
//   Program p;  p.graph = std::move(fused);  p.plan = ...;
//   Status s = writeProgram(p, "model.vkprog");      // atomic
//   auto back = readProgram("model.vkprog");         // constants memory-mapped
//
// The reader validates the header, every section's bounds and checksum, the
// JSON, every blob's range and alignment, and every binding against the
// graph's prototypes; a damaged file is a user error naming the section,
// never a crash.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/support/Expected.h"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace graft {

inline constexpr char kProgramMagic[8] = {'G', 'R', 'A', 'F', 'T', 'V', 'K', 'P'};
/// Version 2 added SHADERS and SPIRV (the shaders compiled at compile time).
inline constexpr uint32_t kProgramVersion = 2;
/// The oldest version readProgram reads. A version-1 file has no SPIR-V: its
/// Program::shaders is empty and the runtime compiles shaders itself.
inline constexpr uint32_t kProgramMinVersion = 1;
/// Alignment of every constant blob (and of the DATA section) in the file.
inline constexpr uint64_t kProgramAlignment = 64;

/// Where one node of the fused graph runs, as decided at compile time.
struct ProgramNodePlan {
  std::string node;      ///< first result's name ("" for a node without results)
  std::string target;    ///< op, "et_vk.linear_q4gsw.default"
  std::string placement; ///< "device", "host" or "cpu"
  std::string kernel;    ///< the executor's kernel / shader template, "interpreter" on the CPU
  std::string reason;    ///< why the node stays on the CPU (empty otherwise)
  int partition = -1;    ///< partition id, -1 on the CPU
};

/// A group of nodes, by index into the fused graph's node list.
struct ProgramSubgraph {
  int id = 0;
  std::vector<std::size_t> nodes;
};

/// One constant a rewrite rule made (FqnRegistry entry).
struct ProgramProvenance {
  std::string fqn;
  std::string transform;
  std::vector<std::string> sources;
  std::string args;
  std::string rule;
  uint64_t requests = 1;
  std::vector<std::string> origins; ///< original state-dict FQNs, through chains
};

/// One compute-shader variant the program may dispatch, compiled at compile
/// time so that running the program needs no GLSL compiler.
struct ProgramShader {
  std::string variant;      ///< "binary_add_float"
  std::string templateName; ///< "binary"
  /// The compile cache's key: hash of the generated GLSL (template text with
  /// every parameter #defined) and of the compiler's identity.
  uint64_t sourceHash = 0;
  uint32_t bindings = 0;                      ///< storage buffers 0..bindings-1
  std::array<uint32_t, 3> localSize{1, 1, 1}; ///< the workgroup size
  std::vector<uint32_t> spirv;                ///< the module's words
};

struct Program {
  /// The format version the file was read from (kProgramVersion when built
  /// in memory); writeProgram always writes kProgramVersion.
  uint32_t version = kProgramVersion;
  std::unique_ptr<Graph> graph; ///< the fused graph; its constants carry data
  /// The original (pre-fusion) graph, embedded on request so `graft run
  /// --check` can compare against it without the source model.
  std::unique_ptr<Graph> reference;
  std::string target;     ///< the target profile compiled for ("lavapipe")
  std::string sourcePath; ///< the model compiled from, as given
  uint64_t sourceBytes = 0;
  /// Free-form JSON object (the compile summary); "{}" when empty.
  std::string summaryJson = "{}";
  std::vector<ProgramNodePlan> plan; ///< one per node of `graph`, in graph order
  std::vector<ProgramSubgraph> partitions;
  std::vector<ProgramSubgraph> cpuSubgraphs; ///< connected groups of CPU nodes
  std::vector<ProgramProvenance> provenance;
  /// The shader compiler and target environment the SPIR-V was made with
  /// ("glslang 12.0.0, SPIR-V 1.3, Vulkan 1.1"); empty without shaders.
  std::string shaderCompiler;
  /// Every shader variant the device nodes may dispatch, sorted by name.
  std::vector<ProgramShader> shaders;
};

/// What writing (or reading) found about the constant pool.
struct ProgramStats {
  uint64_t fileBytes = 0;
  uint64_t constants = 0;      ///< constant inputs with data, both graphs
  uint64_t blobs = 0;          ///< distinct blobs stored
  uint64_t blobBytes = 0;      ///< bytes of distinct blobs (without padding)
  uint64_t graphBlobBytes = 0; ///< distinct blobs the fused graph uses
  uint64_t dedupedBytes = 0;   ///< bytes saved by storing identical constants once
  uint64_t recipes = 0;        ///< constants stored as a recipe computed at load (no bytes)
  uint64_t shaderVariants = 0; ///< shader variants (SHADERS)
  uint64_t spirvModules = 0;   ///< distinct SPIR-V modules stored
  uint64_t spirvBytes = 0;     ///< bytes of the SPIRV section
};

struct ProgramWriteOptions {
  /// Called with the fraction of constant bytes written so far (0..1).
  std::function<void(double)> progress;
  /// When set, META's "summary" is this function's JSON, called once the
  /// constants are written (so it can report what the pool stores; the
  /// stats' fileBytes is still 0 then). Otherwise Program::summaryJson.
  std::function<std::string(const ProgramStats &)> summaryJson;
};

/// Writes `program` atomically (temp file in the same directory, fsync,
/// rename): on failure nothing is left at `path`. The graphs are only read,
/// by two threads (one prints the structure while the other streams the
/// constants); `options`' callbacks are called on the calling thread.
Expected<ProgramStats> writeProgram(const Program &program, const std::string &path,
                                    const ProgramWriteOptions &options = {});

struct ProgramReadOptions {
  /// Also recompute every blob's content hash (reads every constant byte;
  /// without it constants are mapped lazily and only metadata is checked).
  bool verifyData = false;
};

/// Reads and validates a program file; constants are memory-mapped.
Expected<Program> readProgram(const std::string &path, const ProgramReadOptions &options = {},
                              ProgramStats *stats = nullptr);

/// Whether `path` starts with the program magic.
bool isProgramFile(const std::string &path);

/// 64-bit FNV-1a: the hash of the metadata sections, the section table and
/// a version-1 file's blobs (version 2's blobs carry XXH64, graft/support/Xxh64.h).
uint64_t contentHash(const uint8_t *data, std::size_t size);

} // namespace graft
