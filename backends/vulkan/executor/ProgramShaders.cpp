//===- ProgramShaders.cpp - Compile a program's shaders, load them back ---===//
//
// See ProgramShaders.h. The kernel -> template table below is the one place
// that knows which shaders a kernel's dispatches may name beyond its own.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/ProgramShaders.h"

#include "graft/vulkan/Context.h"
#include "graft/vulkan/Kernels.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <thread>

namespace graft::vk {
namespace {

/// Templates a kernel uses that its name does not give away: composite
/// kernels (sdpa is scale, matmul, mask add, softmax, matmul; sdpa_kv runs
/// the softmax between its two passes, or sdpa_fused on GPUs, and
/// sdpa_with_kv_cache writes the caches with index_copy first) and kernels
/// that run on another kernel's shader. "copy" is added for every kernel:
/// dtype promotion, gathers of strided views and cat all run on it.
const std::map<std::string, std::vector<std::string>, std::less<>> &extraTemplates() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> table = {
      // 4-D: sdpa_kv's passes, or sdpa_fused (GPUs, fast policy)
      {"sdpa", {"binary", "matmul", "softmax", "where", "sdpa_kv", "sdpa_fused"}},
      {"sdpa_kv", {"softmax", "index_copy", "sdpa_fused"}}, // scores, softmax, output
      {"linear_qcs4w",
       {"linear_q4gsw", "linear_q4gsw_fast", "linear_q4gsw_lanes", "linear_q4gsw_splitk",
        "linear_q4gsw_gemm"}},
      {"view", {}},
  };
  return table;
}

/// The shader element types ("float", "half", "int") a graph's device
/// tensors can have: those of its values, and always float (kernels compute
/// in f32: attention upcasts, masks are f32).
std::set<std::string> elementTypes(const Graph &graph) {
  std::set<std::string> out = {"float"};
  auto add = [&](const Value *v) {
    if (v && v->isTensor() && deviceElem(v->proto().dtype))
      out.insert(shaderDType(v->proto().dtype));
  };
  for (const GraphInput &in : graph.inputs())
    add(in.value);
  for (const Node &n : graph.nodes())
    for (unsigned i = 0; i < n.numOutputs(); ++i)
      add(n.output(i));
  return out;
}

/// Whether every dtype parameter of a variant (DTYPE, SCALES_DTYPE, ...)
/// names an element type the graph has.
bool fitsElementTypes(const ShaderVariantSpec &spec, const std::set<std::string> &types) {
  for (const auto &[key, value] : spec.params)
    if (key.ends_with("DTYPE") && !types.count(value))
      return false;
  return true;
}

bool dispatchesNothing(std::string_view kernel) {
  return kernel == "interpreter" || kernel == "host" || kernel.starts_with("host_");
}

} // namespace

std::vector<std::string> shaderTemplatesFor(std::string_view kernel, const ShaderLibrary &library) {
  if (kernel.empty() || dispatchesNothing(kernel))
    return {};
  std::set<std::string> out = {"copy"};
  // A kernel's own variants are named after it: binary_add -> binary_add_float,
  // linear_dq8ca_q4gsw -> linear_dq8ca_q4gsw_half_float (template linear_q4gsw).
  std::string prefix = std::string(kernel) + "_";
  for (const std::string &v : library.variantNames())
    if (v == kernel || v.starts_with(prefix))
      out.insert(library.findVariant(v)->templateName);
  if (auto it = extraTemplates().find(kernel); it != extraTemplates().end())
    out.insert(it->second.begin(), it->second.end());
  return {out.begin(), out.end()};
}

Expected<ShaderCodegenStats> compileProgramShaders(Program &program, ShaderLibrary &library) {
  ShaderCodegenStats stats;
  std::set<std::string> templates;
  for (const ProgramNodePlan &np : program.plan)
    if (np.placement == "device")
      for (std::string &t : shaderTemplatesFor(np.kernel, library))
        templates.insert(std::move(t));
  stats.templates = templates.size();
  const std::set<std::string> types =
      program.graph ? elementTypes(*program.graph) : std::set<std::string>{"float", "half", "int"};
  ShaderLibrary::Stats before = library.stats();
  program.shaders.clear();
  std::vector<std::string> names;
  for (const std::string &name : library.variantNames()) { // sorted
    const ShaderVariantSpec &spec = *library.findVariant(name);
    if (templates.count(spec.templateName) && fitsElementTypes(spec, types))
      names.push_back(name);
  }
  // glslang takes 3-10 ms per variant and a program needs a hundred or more:
  // compile them on every core. Each worker takes the next name; results
  // land by index, so the program's order (sorted by name) and the first
  // error reported (in that order) do not depend on the scheduling.
  std::vector<std::optional<Expected<const CompiledShader *>>> results(names.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < names.size();)
      results[i].emplace(library.get(names[i]));
  };
  std::size_t threads =
      std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), names.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  for (std::optional<Expected<const CompiledShader *>> &r : results) {
    GRAFT_TRY(const CompiledShader *s, std::move(*r));
    ProgramShader ps;
    ps.variant = s->spec.name;
    ps.templateName = s->spec.templateName;
    ps.sourceHash = s->hash;
    ps.bindings = s->numBindings;
    ps.localSize = s->localSize;
    ps.spirv = s->spirv;
    stats.spirvBytes += ps.spirv.size() * sizeof(uint32_t);
    program.shaders.push_back(std::move(ps));
  }
  ShaderLibrary::Stats after = library.stats();
  stats.variants = program.shaders.size();
  stats.compiled = after.compiled - before.compiled;
  stats.cacheHits = stats.variants - stats.compiled;
  program.shaderCompiler = program.shaders.empty() ? "" : ShaderLibrary::compilerIdentity();
  return stats;
}

Status usePrecompiledShaders(Context &ctx, const Program &program, const std::string &origin) {
  // No SPIR-V: a version-1 file, or a Program built through the API without
  // compileProgramShaders. Its shaders are compiled at run time, as before.
  if (program.shaders.empty())
    return okStatus();
  std::vector<CompiledShader> shaders;
  shaders.reserve(program.shaders.size());
  for (const ProgramShader &ps : program.shaders) {
    // SPIR-V from another graft's shader source would run against this
    // graft's kernels, whose bindings and push constants may have changed
    // since (a dq8ca GEMV that once read int8 activations now quantizes
    // floats itself): refuse it rather than compute garbage.
    Expected<uint64_t> current = ctx.shaders().sourceHash(ps.variant);
    if (!current)
      return Diagnostic::error("program '" + origin + "' carries shader variant '" + ps.variant +
                               "', which this graft does not have: compile the model again "
                               "with this graft");
    if (*current != ps.sourceHash)
      return Diagnostic::error("program '" + origin +
                               "' was compiled with another version of "
                               "shader '" +
                               ps.variant + "' (template '" + ps.templateName +
                               "') than this graft's, or with another shader compiler (" +
                               program.shaderCompiler +
                               "): compile the model again with this graft");
    CompiledShader s;
    s.spec.name = ps.variant;
    s.spec.templateName = ps.templateName;
    s.spirv = ps.spirv;
    s.numBindings = ps.bindings;
    s.localSize = ps.localSize;
    s.hash = ps.sourceHash;
    shaders.push_back(std::move(s));
  }
  ctx.shaders().usePrecompiled(std::move(shaders), "program '" + origin + "'");
  return okStatus();
}

} // namespace graft::vk
