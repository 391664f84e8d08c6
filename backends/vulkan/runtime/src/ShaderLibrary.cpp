//===- ShaderLibrary.cpp - Variant expansion, GLSL generation, glslang ----===//
//
// The only file that includes glslang and the only place shader YAML is
// parsed. See ShaderLibrary.h for the template language.
//
//===----------------------------------------------------------------------===//
#include "graft/vulkan/ShaderLibrary.h"

#include "graft/support/FileIO.h"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

namespace graft {
extern const EmbeddedFile kVulkanShaderFiles[];
extern const std::size_t kVulkanShaderFilesCount;
} // namespace graft

namespace graft::vk {

uint64_t contentHash(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string ShaderVariantSpec::param(std::string_view key) const {
  for (const auto &kv : params)
    if (kv.first == key)
      return kv.second;
  return {};
}

namespace {

/// glslang's process-wide state, initialised once.
void initGlslang() {
  static std::once_flag once;
  std::call_once(once, [] { glslang::InitializeProcess(); });
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// A YAML scalar as text; booleans become 1/0 so `#if PARAM` works.
std::string scalarText(const YAML::Node &n) {
  std::string s = n.as<std::string>();
  if (s == "true" || s == "True")
    return "1";
  if (s == "false" || s == "False")
    return "0";
  return s;
}

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// GLSL storage type of a dtype parameter value, or empty when the value is
/// not a dtype name.
std::string glslType(const std::string &dtype) {
  if (dtype == "float")
    return "float";
  if (dtype == "half")
    return "float16_t";
  if (dtype == "int")
    return "int";
  if (dtype == "uint")
    return "uint";
  return {};
}

Diagnostic shaderError(const std::string &file, const std::string &message) {
  return Diagnostic::internal("shader library: " + file + ": " + message);
}

} // namespace

Expected<std::unique_ptr<ShaderLibrary>> ShaderLibrary::builtin() {
  std::vector<ShaderSource> sources;
  for (std::size_t i = 0; i < kVulkanShaderFilesCount; ++i)
    sources.push_back({kVulkanShaderFiles[i].name,
                       std::string(kVulkanShaderFiles[i].data, kVulkanShaderFiles[i].size)});
  return fromSources(std::move(sources));
}

Expected<std::unique_ptr<ShaderLibrary>>
ShaderLibrary::fromSources(std::vector<ShaderSource> sources) {
  std::unique_ptr<ShaderLibrary> lib(new ShaderLibrary());
  GRAFT_CHECK_OK(lib->load(std::move(sources)));
  return lib;
}

Status ShaderLibrary::load(std::vector<ShaderSource> sources) {
  for (ShaderSource &s : sources)
    files_[s.name] = s.text;
  for (const auto &kv : files_)
    if (endsWith(kv.first, ".yaml"))
      GRAFT_CHECK_OK(expandYaml({kv.first, kv.second}));
  return okStatus();
}

Status ShaderLibrary::expandYaml(const ShaderSource &yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml.text);
  } catch (const YAML::Exception &e) {
    return shaderError(yaml.name, std::string("invalid YAML: ") + e.what());
  }
  if (!root.IsMap() || root.size() != 1)
    return shaderError(yaml.name, "expected one top-level key, the template name");
  std::string tmpl = root.begin()->first.as<std::string>();
  if (tmpl + ".yaml" != yaml.name)
    return shaderError(yaml.name, "top-level key '" + tmpl + "' must equal the file's basename");
  if (!files_.count(tmpl + ".glsl"))
    return shaderError(yaml.name, "no template " + tmpl + ".glsl");
  const YAML::Node body = root.begin()->second;
  try {
    std::vector<std::pair<std::string, std::string>> defaults;
    if (YAML::Node d = body["parameter_names_with_default_values"])
      for (auto it = d.begin(); it != d.end(); ++it)
        defaults.emplace_back(it->first.as<std::string>(), scalarText(it->second));
    auto forallOf = [&](const YAML::Node &n) {
      std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> out;
      if (!n)
        return out;
      for (auto it = n.begin(); it != n.end(); ++it) {
        std::vector<std::pair<std::string, std::string>> values; // (value, suffix)
        const YAML::Node list = it->second; // a copy: it->second is a temporary
        for (const YAML::Node &v : list) {
          std::string value = scalarText(v["VALUE"]);
          std::string suffix = v["SUFFIX"] ? v["SUFFIX"].as<std::string>() : value;
          values.emplace_back(value, suffix);
        }
        out.emplace_back(it->first.as<std::string>(), values);
      }
      return out;
    };
    auto fileForall = forallOf(body["generate_variant_forall"]);
    const YAML::Node variants = body["shader_variants"];
    if (!variants || !variants.IsSequence() || variants.size() == 0)
      return shaderError(yaml.name, "shader_variants must be a non-empty list");
    for (const YAML::Node &v : variants) {
      if (!v["NAME"])
        return shaderError(yaml.name, "a shader variant has no NAME");
      std::string base = v["NAME"].as<std::string>();
      auto forall =
          v["generate_variant_forall"] ? forallOf(v["generate_variant_forall"]) : fileForall;
      std::vector<std::pair<std::string, std::string>> params = defaults;
      std::set<std::string> overridden;
      for (auto it = v.begin(); it != v.end(); ++it) {
        std::string key = it->first.as<std::string>();
        if (key == "NAME" || key == "generate_variant_forall")
          continue;
        bool known = std::any_of(defaults.begin(), defaults.end(),
                                 [&](const auto &p) { return p.first == key; }) ||
                     std::any_of(forall.begin(), forall.end(),
                                 [&](const auto &p) { return p.first == key; });
        if (!known)
          return shaderError(yaml.name, "variant " + base + " sets unknown parameter " + key);
        overridden.insert(key);
        auto p = std::find_if(params.begin(), params.end(),
                              [&](const auto &q) { return q.first == key; });
        if (p == params.end())
          params.emplace_back(key, scalarText(it->second));
        else
          p->second = scalarText(it->second);
      }
      // Cartesian product over the forall keys the variant does not fix.
      decltype(forall) axes;
      for (auto &a : forall)
        if (!overridden.count(a.first))
          axes.push_back(a);
      std::vector<std::size_t> pos(axes.size(), 0);
      while (true) {
        ShaderVariantSpec spec;
        spec.name = base;
        spec.templateName = tmpl;
        spec.params = params;
        for (std::size_t i = 0; i < axes.size(); ++i) {
          const auto &[value, suffix] = axes[i].second[pos[i]];
          spec.name += "_" + suffix;
          auto p = std::find_if(spec.params.begin(), spec.params.end(),
                                [&](const auto &q) { return q.first == axes[i].first; });
          if (p == spec.params.end())
            spec.params.emplace_back(axes[i].first, value);
          else
            p->second = value;
        }
        if (variants_.count(spec.name))
          return shaderError(yaml.name, "variant " + spec.name + " is defined twice");
        variants_[spec.name] = spec;
        std::size_t i = 0;
        for (; i < axes.size(); ++i) {
          if (++pos[i] < axes[i].second.size())
            break;
          pos[i] = 0;
        }
        if (i == axes.size())
          break;
      }
    }
  } catch (const YAML::Exception &e) {
    return shaderError(yaml.name, std::string("malformed variant file: ") + e.what());
  }
  return okStatus();
}

std::vector<std::string> ShaderLibrary::variantNames() const {
  std::vector<std::string> out;
  for (const auto &kv : variants_)
    out.push_back(kv.first);
  return out;
}

const ShaderVariantSpec *ShaderLibrary::findVariant(std::string_view name) const {
  auto it = variants_.find(name);
  return it == variants_.end() ? nullptr : &it->second;
}

Expected<std::vector<ShaderLibrary::Line>>
ShaderLibrary::generateLines(const ShaderVariantSpec &spec) const {
  std::vector<Line> out;
  auto pre = [&](std::string text) { out.push_back({std::move(text), "<preamble>", 0}); };
  pre("#version 450");
  bool half = false;
  for (const auto &[k, v] : spec.params)
    if (endsWith(k, "DTYPE") && v == "half")
      half = true;
  if (half)
    pre("#extension GL_EXT_shader_16bit_storage : require");
  pre("#define VARIANT_NAME " + spec.name);
  for (const auto &[k, v] : spec.params) {
    std::string type = endsWith(k, "DTYPE") ? glslType(v) : std::string();
    if (!type.empty()) {
      // Dtype parameters: the storage type, flags, and a conversion that
      // rounds half results to nearest-even explicitly (the float -> f16
      // conversion's rounding mode is implementation-defined in Vulkan).
      pre("#define " + k + " " + type);
      pre("#define " + k + "_IS_HALF " + std::string(v == "half" ? "1" : "0"));
      pre("#define " + k + "_IS_INT " + std::string(v == "int" || v == "uint" ? "1" : "0"));
      if (v == "half")
        pre("#define TO_" + k + "(x) float16_t(roundToHalf(x))");
      else
        pre("#define TO_" + k + "(x) " + type + "(x)");
      continue;
    }
    pre("#define " + k + " " + v);
    if (isIdentifier(v))
      pre("#define " + k + "_" + v + " 1");
  }
  // Expand the template, inlining #include "x.glslh" (one level is enough:
  // headers do not include headers).
  std::string tmplFile = spec.templateName + ".glsl";
  auto it = files_.find(tmplFile);
  if (it == files_.end())
    return shaderError(tmplFile, "template not found for variant " + spec.name);
  static const std::regex includeRe(R"(^\s*#\s*include\s+"([^"]+)\"\s*$)");
  static const std::regex substRe(R"(\$\{([A-Za-z_][A-Za-z0-9_]*)\})");
  auto appendFile = [&](const std::string &file, const std::string &text, bool allowInclude,
                        auto &self) -> Status {
    std::istringstream in(text);
    std::string line;
    uint32_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      // The regexes only where they can match: graft run generates every
      // stored variant's source to check the program's SPIR-V is current
      // (usePrecompiledShaders), and std::regex on every line was most of it.
      std::smatch m;
      if (line.find("include") != std::string::npos && std::regex_match(line, m, includeRe)) {
        if (!allowInclude)
          return shaderError(file, "line " + std::to_string(n) + ": nested #include");
        auto h = files_.find(m[1].str());
        if (h == files_.end())
          return shaderError(file,
                             "line " + std::to_string(n) + ": no header '" + m[1].str() + "'");
        GRAFT_CHECK_OK(self(h->first, h->second, false, self));
        continue;
      }
      if (line.find("${") == std::string::npos) {
        out.push_back({line, file, n});
        continue;
      }
      // ${PARAM} substitution.
      std::string expanded;
      auto begin = line.cbegin();
      for (std::sregex_iterator r(line.begin(), line.end(), substRe), e; r != e; ++r) {
        expanded.append(begin, line.cbegin() + r->position());
        std::string key = (*r)[1].str();
        auto p = std::find_if(spec.params.begin(), spec.params.end(),
                              [&](const auto &q) { return q.first == key; });
        if (p == spec.params.end())
          return shaderError(file, "line " + std::to_string(n) + ": unknown parameter ${" + key +
                                       "} in variant " + spec.name);
        expanded += p->second;
        begin = line.cbegin() + r->position() + r->length();
      }
      expanded.append(begin, line.cend());
      out.push_back({expanded, file, n});
    }
    return okStatus();
  };
  GRAFT_CHECK_OK(appendFile(tmplFile, it->second, true, appendFile));
  return out;
}

Expected<std::string> ShaderLibrary::generate(std::string_view variant) const {
  const ShaderVariantSpec *spec = findVariant(variant);
  if (!spec)
    return Diagnostic::internal("no shader variant '" + std::string(variant) + "'");
  GRAFT_TRY(std::vector<Line> lines, generateLines(*spec));
  std::string glsl;
  for (const Line &l : lines)
    glsl += l.text + "\n";
  return glsl;
}

namespace {
/// The cache key of generated source `glsl`: it under the compiler that turns
/// it into SPIR-V.
uint64_t sourceKey(const std::string &glsl) {
  static const uint64_t compilerSeed = contentHash(ShaderLibrary::compilerIdentity());
  return contentHash(glsl, compilerSeed);
}
} // namespace

Expected<uint64_t> ShaderLibrary::sourceHash(std::string_view variant) const {
  GRAFT_TRY(std::string glsl, generate(variant));
  return sourceKey(glsl);
}

namespace {

void configure(glslang::TShader &shader, const char *const *src) {
  shader.setStrings(src, 1);
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_1);
  shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_3);
}

const EShMessages kMessages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);

/// Runs only the preprocessor: the bindings a variant really declares are
/// those left after its #if branches are resolved.
bool preprocessGlsl(const std::string &glsl, std::string &out, std::string &log) {
  initGlslang();
  glslang::TShader shader(EShLangCompute);
  const char *src = glsl.c_str();
  configure(shader, &src);
  glslang::TShader::ForbidIncluder includer;
  if (!shader.preprocess(GetDefaultResources(), 100, ENoProfile, false, false, kMessages, &out,
                         includer)) {
    log = shader.getInfoLog();
    return false;
  }
  return true;
}

/// Compiles GLSL to SPIR-V 1.3 (Vulkan 1.1). On failure returns glslang's
/// log with "0:LINE" positions.
bool compileGlsl(const std::string &glsl, std::vector<uint32_t> &spirv, std::string &log) {
  initGlslang();
  glslang::TShader shader(EShLangCompute);
  const char *src = glsl.c_str();
  configure(shader, &src);
  EShMessages msgs = kMessages;
  if (!shader.parse(GetDefaultResources(), 100, false, msgs)) {
    log = shader.getInfoLog();
    return false;
  }
  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(msgs)) {
    log = program.getInfoLog();
    return false;
  }
  glslang::SpvOptions options;
  options.disableOptimizer = false;
  options.validate = false;
  spv::SpvBuildLogger logger;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &logger, &options);
  std::string messages = logger.getAllMessages();
  if (spirv.empty()) {
    log = messages.empty() ? "SPIR-V generation produced no code" : messages;
    return false;
  }
  return true;
}

} // namespace

std::string ShaderLibrary::compilerIdentity() {
  // configure() below fixes the target environment; the compiler's version
  // changes the code it emits. Both are part of every cache key.
  return "glslang " + std::to_string(GLSLANG_VERSION_MAJOR) + "." +
         std::to_string(GLSLANG_VERSION_MINOR) + "." + std::to_string(GLSLANG_VERSION_PATCH) +
         GLSLANG_VERSION_FLAVOR + ", SPIR-V 1.3, Vulkan 1.1";
}

void ShaderLibrary::usePrecompiled(std::vector<CompiledShader> shaders, std::string origin) {
  std::lock_guard<std::mutex> lock(mutex_);
  compiled_.clear();
  for (CompiledShader &s : shaders) {
    std::string name = s.spec.name;
    compiled_[name] = std::make_unique<CompiledShader>(std::move(s));
  }
  precompiledOnly_ = true;
  precompiledOrigin_ = std::move(origin);
}

bool ShaderLibrary::precompiledOnly() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return precompiledOnly_;
}

void ShaderLibrary::setDiskCache(std::optional<std::string> dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  diskCache_ = std::move(dir);
}

// get() holds the lock only to look up and to publish: generating the source
// and running glslang happen outside it, so several threads compile different
// variants at once (glslang serialises only its one-time built-in tables).
// Two threads asking for the same new variant may both compile it; the first
// to publish wins and the other's identical module is dropped.
Expected<const CompiledShader *> ShaderLibrary::get(std::string_view variant) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = compiled_.find(variant); it != compiled_.end()) {
      ++(precompiledOnly_ ? stats_.precompiledHits : stats_.memoryHits);
      return it->second.get();
    }
    if (precompiledOnly_)
      return Diagnostic::internal(
          precompiledOrigin_ + " carries no SPIR-V for shader variant '" + std::string(variant) +
          "' (compile the model again with this graft; it stores every variant its kernels use)");
    if (diskCache_)
      dir = *diskCache_;
    else if (const char *env = std::getenv("GRAFT_VK_SHADER_CACHE"))
      dir = env;
  }
  const ShaderVariantSpec *spec = findVariant(variant);
  if (!spec)
    return Diagnostic::internal("no shader variant '" + std::string(variant) + "'");
  GRAFT_TRY(std::vector<Line> lines, generateLines(*spec));
  auto shader = std::make_unique<CompiledShader>();
  shader->spec = *spec;
  for (const Line &l : lines)
    shader->glsl += l.text + "\n";
  // The cache key: the generated source (the template with every parameter
  // #defined) under the compiler that turns it into SPIR-V.
  shader->hash = sourceKey(shader->glsl);

  // A glslang log with "0:LINE" positions, mapped back to template lines.
  auto glslangError = [&](const std::string &log) {
    Diagnostic d = Diagnostic::internal("glslang failed to compile shader '" + spec->templateName +
                                        "' variant '" + spec->name + "'");
    static const std::regex posRe(R"((ERROR|WARNING): 0:(\d+): (.*))");
    std::istringstream in(log);
    std::string line;
    bool any = false;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, posRe))
        continue;
      std::size_t ln = std::stoul(m[2]);
      std::string where = "<generated>:" + std::to_string(ln);
      if (ln >= 1 && ln <= lines.size()) {
        const Line &origin = lines[ln - 1];
        where = origin.file + (origin.line ? ":" + std::to_string(origin.line) : "");
      }
      if (!any)
        d.message += ": " + where + ": " + m[3].str();
      else
        d.note(where + ": " + m[3].str());
      any = true;
    }
    if (!any)
      d.message += ": " + log;
    return d;
  };

  // Metadata the runtime needs: the number of storage-buffer bindings (in
  // the preprocessed source, so inactive #if branches do not count) and the
  // workgroup size (LOCAL_SIZE_X/Y/Z parameters, default 1).
  std::string preprocessed, ppLog;
  uint64_t glslangRuns = 1, compiled = 0, diskHits = 0, memoryHits = 0;
  if (!preprocessGlsl(shader->glsl, preprocessed, ppLog)) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.glslangRuns;
    return glslangError(ppLog);
  }
  static const std::regex bindingRe(R"(layout\s*\(\s*set\s*=\s*0\s*,\s*binding\s*=\s*(\d+))");
  for (std::sregex_iterator r(preprocessed.begin(), preprocessed.end(), bindingRe), e; r != e; ++r)
    shader->numBindings =
        std::max<uint32_t>(shader->numBindings, static_cast<uint32_t>(std::stoul((*r)[1])) + 1);
  const char *axes[3] = {"LOCAL_SIZE_X", "LOCAL_SIZE_Y", "LOCAL_SIZE_Z"};
  for (int i = 0; i < 3; ++i) {
    std::string v = spec->param(axes[i]);
    if (!v.empty())
      shader->localSize[static_cast<std::size_t>(i)] = static_cast<uint32_t>(std::stoul(v));
  }

  {
    // Another variant with the same generated source already compiled.
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto h = byHash_.find(shader->hash); h != byHash_.end()) {
      ++memoryHits;
      shader->spirv = h->second;
    }
  }
  if (shader->spirv.empty()) {
    // The optional on-disk cache, keyed by the same hash.
    std::string diskPath;
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec); // a cache: failing here only costs a compile
      char name[32];
      std::snprintf(name, sizeof(name), "/%016llx.spv",
                    static_cast<unsigned long long>(shader->hash));
      diskPath = dir + name;
      // A damaged cache entry (not whole words, no SPIR-V magic) is ignored
      // and overwritten.
      if (auto bytes = readFile(diskPath);
          bytes.ok() && bytes->size() >= 20 && bytes->size() % 4 == 0) {
        uint32_t magic = 0;
        std::memcpy(&magic, bytes->data(), 4);
        if (magic == 0x07230203u) {
          shader->spirv.resize(bytes->size() / 4);
          std::memcpy(shader->spirv.data(), bytes->data(), bytes->size());
          ++diskHits;
        }
      }
    }
    if (shader->spirv.empty()) {
      std::string log;
      ++glslangRuns;
      if (!compileGlsl(shader->glsl, shader->spirv, log)) {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.glslangRuns += glslangRuns;
        return glslangError(log);
      }
      ++compiled;
      if (!diskPath.empty()) {
        std::string_view bytes(reinterpret_cast<const char *>(shader->spirv.data()),
                               shader->spirv.size() * 4);
        (void)writeFileAtomic(diskPath, bytes); // a cache: failing to write is not an error
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.glslangRuns += glslangRuns;
  stats_.compiled += compiled;
  stats_.diskHits += diskHits;
  stats_.memoryHits += memoryHits;
  byHash_.try_emplace(shader->hash, shader->spirv);
  return compiled_.try_emplace(spec->name, std::move(shader)).first->second.get();
}

ShaderLibrary::Stats ShaderLibrary::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

} // namespace graft::vk
