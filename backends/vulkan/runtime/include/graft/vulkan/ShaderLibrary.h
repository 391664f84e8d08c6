//===- ShaderLibrary.h - GLSL templates, YAML variants, glslang -*- C++ -*-===//
//
// Compute shaders are GLSL templates (backends/vulkan/ops/<family>/*.glsl) with a
// YAML file per template that lists its variants, in the style of
// ExecuTorch's gen_vulkan_spv.py:
//
//   binary:
//     parameter_names_with_default_values: {OP: add, DTYPE: float}
//     generate_variant_forall:
//       DTYPE: [{VALUE: float}, {VALUE: half}]
//     shader_variants:
//       - NAME: binary_add
//         OP: add
//
// expands to the variants binary_add_float and binary_add_half. A variant's
// GLSL is the template with every parameter #defined (dtype parameters become
// GLSL storage types) and `${PARAM}` substituted; it is compiled to SPIR-V in
// process by glslang the first time it is asked for and cached by the content
// hash of the generated source and of the compiler's identity (in memory, and
// on disk when setDiskCache() or GRAFT_VK_SHADER_CACHE names a directory).
// The library is independent of any Vulkan device: it only produces SPIR-V.
//
// A program file carries the SPIR-V of every variant it may dispatch
// (`graft compile` makes it with this library). usePrecompiled() hands those
// modules to the library: from then on get() serves them and nothing else,
// and glslang is never run (Stats::glslangRuns stays 0).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/EmbeddedFile.h"
#include "graft/support/Expected.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graft::vk {

/// A source file of the library: a template (.glsl), a header (.glslh) or a
/// variant list (.yaml).
struct ShaderSource {
  std::string name; ///< file name, e.g. "binary.glsl"
  std::string text;
};

/// One variant: a template plus parameter values.
struct ShaderVariantSpec {
  std::string name;         ///< "binary_add_float"
  std::string templateName; ///< "binary"
  /// Parameter values in declaration order (defaults, then overrides).
  std::vector<std::pair<std::string, std::string>> params;
  std::string param(std::string_view key) const; ///< empty when absent
};

/// A compiled variant.
struct CompiledShader {
  ShaderVariantSpec spec;
  std::string glsl;            ///< the generated source glslang compiled
  std::vector<uint32_t> spirv; ///< SPIR-V words
  uint32_t numBindings = 0;    ///< storage-buffer bindings 0..numBindings-1
  std::array<uint32_t, 3> localSize{1, 1, 1};
  uint64_t hash = 0; ///< content hash of `glsl` (the cache key)
};

class ShaderLibrary {
public:
  /// The library built from the shaders compiled into graft.
  static Expected<std::unique_ptr<ShaderLibrary>> builtin();
  /// A library from explicit sources (tests use this for broken shaders).
  static Expected<std::unique_ptr<ShaderLibrary>> fromSources(std::vector<ShaderSource> sources);

  /// Every variant name, sorted.
  std::vector<std::string> variantNames() const;
  const ShaderVariantSpec *findVariant(std::string_view name) const;

  /// The generated GLSL of a variant (no compilation).
  Expected<std::string> generate(std::string_view variant) const;
  /// The variant's cache key, as get() computes it: its generated source
  /// under compilerIdentity() (no compilation). A program's stored SPIR-V is
  /// current when its recorded hash equals this.
  Expected<uint64_t> sourceHash(std::string_view variant) const;
  /// Generates and compiles a variant, or returns the cached module. A
  /// glslang error is an internal error naming the template, the variant and
  /// the template line. After usePrecompiled(), returns a precompiled module
  /// or an error naming the variant and where the modules came from.
  /// Thread-safe; glslang runs outside the lock, so threads asking for
  /// different variants compile them in parallel.
  Expected<const CompiledShader *> get(std::string_view variant);

  /// Serves exactly `shaders` from now on (their spec, glsl and hash need
  /// only name and template; the SPIR-V, bindings and workgroup size are
  /// used as given): get() of any other variant fails instead of compiling.
  /// `origin` names them in that error ("program 'm.vkprog'").
  void usePrecompiled(std::vector<CompiledShader> shaders, std::string origin);
  /// Whether usePrecompiled() was called.
  bool precompiledOnly() const;

  /// Caches compiled modules in `dir` (created when missing; an empty
  /// string: no disk cache). nullopt: GRAFT_VK_SHADER_CACHE when set (the
  /// default).
  void setDiskCache(std::optional<std::string> dir);

  /// The compiler and target environment modules are made for, part of the
  /// cache key: "glslang 12.0.0, SPIR-V 1.3, Vulkan 1.1".
  static std::string compilerIdentity();

  struct Stats {
    uint64_t compiled = 0; ///< glslang compilations (GLSL -> SPIR-V)
    uint64_t memoryHits = 0;
    uint64_t diskHits = 0;
    /// Every glslang call (compilations and the preprocessing that finds a
    /// variant's bindings): 0 when only precompiled modules were used.
    uint64_t glslangRuns = 0;
    uint64_t precompiledHits = 0; ///< get() served by a precompiled module
  };
  Stats stats() const;

private:
  ShaderLibrary() = default;
  Status load(std::vector<ShaderSource> sources);
  Status expandYaml(const ShaderSource &yaml);

  struct Line {
    std::string text;
    std::string file; ///< origin file, for error messages
    uint32_t line = 0;
  };
  Expected<std::vector<Line>> generateLines(const ShaderVariantSpec &spec) const;

  std::map<std::string, std::string, std::less<>> files_; ///< name -> text
  std::map<std::string, ShaderVariantSpec, std::less<>> variants_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<CompiledShader>, std::less<>> compiled_; ///< by variant
  std::map<uint64_t, std::vector<uint32_t>> byHash_;
  Stats stats_;
  bool precompiledOnly_ = false;
  std::string precompiledOrigin_;
  std::optional<std::string> diskCache_; ///< set by setDiskCache()
};

/// 64-bit FNV-1a, the content hash used for shader and constant caches.
uint64_t contentHash(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);

} // namespace graft::vk
