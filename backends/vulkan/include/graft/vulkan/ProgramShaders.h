//===- ProgramShaders.h - SPIR-V compiled into a program file -*- C++ -*-===//
//
// `graft compile` stores the SPIR-V of every shader variant a program may
// dispatch in the program file (its SHADERS and SPIRV sections), and
// `graft run` creates its pipelines from those modules without running a
// GLSL compiler:
//
//   // compile time (the compile pipeline's codegen pass)
//   auto stats = vk::compileProgramShaders(program, library);  // glslang, cached
//   // run time
//   auto ctx = vk::Context::create();
//   vk::usePrecompiledShaders(**ctx, program, "m.vkprog");      // no glslang from here
//
// Which variants a program may dispatch: a variant is chosen when a node
// runs, from its operands' dtypes, which the runtime shapes and the device's
// features do not change, but the kernels also dispatch helper shaders (a
// dtype promotion is a copy, attention is matmul + softmax + elementwise).
// The program therefore stores, for every device node, the variants of
// every shader template its kernel may use (shaderTemplatesFor) whose dtype
// parameters name element types the graph's tensors have (no "half"
// variants for an f32 model): a small superset (all of graft's templates
// compile in well under a second) that stays right when a kernel picks
// another variant of the same template.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/serialize/ProgramFile.h"
#include "graft/support/Expected.h"
#include "graft/vulkan/ShaderLibrary.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace graft::vk {

class Context;

/// The shader templates a node planned with `kernel` (NodePlan::kernel, a
/// program file's PLAN "kernel") may dispatch, sorted; empty for kernels
/// that dispatch nothing ("view" of a contiguous tensor still may: it gets
/// "copy", which every device kernel may use for dtype promotion).
std::vector<std::string> shaderTemplatesFor(std::string_view kernel, const ShaderLibrary &library);

struct ShaderCodegenStats {
  uint64_t templates = 0;  ///< shader templates the program uses
  uint64_t variants = 0;   ///< variants stored
  uint64_t compiled = 0;   ///< of which glslang compiled now
  uint64_t cacheHits = 0;  ///< of which came from the in-memory or on-disk cache
  uint64_t spirvBytes = 0; ///< SPIR-V bytes of all variants
};

/// Compiles every variant the program's device nodes may dispatch (its PLAN)
/// with `library` and stores them, sorted by name, in program.shaders (and
/// program.shaderCompiler). A glslang error is an internal error naming the
/// template, the variant and the line.
Expected<ShaderCodegenStats> compileProgramShaders(Program &program, ShaderLibrary &library);

/// Makes `ctx` create its pipelines from the program's SPIR-V only: no GLSL
/// is compiled afterwards, and a variant the program lacks is an error
/// naming it and `origin` (the program's path). A stored module whose source
/// hash is not what this graft's shader library generates for its variant
/// (a program compiled by another graft version, whose kernels may bind
/// other operands) is a user error asking for the model to be compiled
/// again; checking it generates each variant's source, without compiling it.
/// A program without
/// SPIR-V (a version-1 file, or one built through the API without
/// compileProgramShaders) leaves `ctx` compiling shaders as it always did.
Status usePrecompiledShaders(Context &ctx, const Program &program, const std::string &origin);

} // namespace graft::vk
