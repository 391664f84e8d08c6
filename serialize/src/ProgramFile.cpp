//===- ProgramFile.cpp - Writing and reading .vkprog program files --------===//
//
// Layout (docs/program-format.md), all integers little-endian:
//
//   0   header (64 bytes): magic, version, section count, file size,
//       section-table offset, section-table hash
//   64  section table: per section tag[8], offset, size, hash
//   ..  META, GRAPH, [REFGRAPH], CONSTS, PLAN, PROV (text / JSON),
//       SHADERS (JSON), SPIRV (the modules, 4-byte aligned)
//   ..  DATA (64-byte aligned), blobs 64-byte aligned within it
//
// Metadata sections carry an FNV-1a hash, checked on every read. The DATA
// section is not hashed as a whole (that would read every weight at load,
// defeating the memory mapping); each blob carries its content hash (XXH64
// from version 2 on, FNV-1a 64 in version 1: see blobHash), which is what
// deduplication keys on and what ProgramReadOptions::verifyData checks.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/ProgramFile.h"

#include "graft/ir/Verifier.h"
#include "graft/rewrite/ConstantTransforms.h"
#include "graft/rewrite/FqnRegistry.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/Xxh64.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <type_traits>
#include <unistd.h>

namespace graft {

static_assert(std::endian::native == std::endian::little,
              "the program file is little-endian; big-endian hosts need byte swapping");

namespace {

using json = nlohmann::json;

constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kTableEntryBytes = 32;
/// Sections the reader requires, in the order they are written.
const char *const kRequiredSections[] = {"META", "GRAPH", "CONSTS", "PLAN", "PROV", "DATA"};
/// Sections version 2 added: the shaders compiled at compile time.
const char *const kShaderSections[] = {"SHADERS", "SPIRV"};
/// The first word of every SPIR-V module.
constexpr uint32_t kSpirvMagic = 0x07230203;
/// A SPIR-V module's header is five words (magic, version, generator, bound, schema).
constexpr uint64_t kSpirvHeaderBytes = 20;
/// Bounds a stored variant's metadata must respect (the runtime's pipeline
/// layout and any Vulkan device's workgroup limits are far inside them).
constexpr uint32_t kMaxShaderBindings = 32;
constexpr uint32_t kMaxLocalSize = 1024;

/// The first version whose blob hashes are XXH64.
constexpr uint32_t kXxh64BlobsVersion = 2;

/// A blob's content hash in a file of `version`. Every constant byte of a
/// model goes through it when the program is written, so it must run at
/// memory speed: XXH64 does (four independent lanes); version 1's byte-serial
/// FNV-1a cost a quarter of `graft compile`'s write phase.
uint64_t blobHash(uint32_t version, const uint8_t *data, std::size_t size) {
  return version >= kXxh64BlobsVersion ? xxh64(data, size) : contentHash(data, size);
}

/// How much the writer lets the page cache collect before it starts writing
/// it back (see TempFile::write).
constexpr uint64_t kWritebackChunk = uint64_t(8) << 20;

uint64_t alignUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

template <class T> void put(std::string &out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
template <class T> T get(const std::string &in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

struct Section {
  std::string tag;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t hash = 0;
};

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// The graph's structure: constants print as data-free inputs. Reads the
/// graph and nothing else (no constant's data), so it can run while another
/// thread loads the constants.
Expected<std::string> structureText(const Graph &g) {
  PrintOptions opts;
  opts.printMetadata = true;
  opts.printInitializers = false;
  return printGraph(g, opts);
}

struct Blob {
  uint64_t size = 0;
  uint64_t hash = 0;
  uint64_t offset = 0; ///< within DATA
};

struct Binding {
  std::string graph; ///< "main" / "reference"
  std::size_t input = 0;
  std::size_t blob = 0;
  json recipe; ///< null, or the recipe computing the constant at load (no blob)
};

//===----------------------------------------------------------------------===//
// Recipes: derived constants stored as the transform that computes them
//===----------------------------------------------------------------------===//

json recipeArgJson(const Argument &a) {
  if (a.isBool())
    return {{"bool", a.boolean()}};
  if (a.isInt())
    return {{"int", a.integer()}};
  if (a.isFloat())
    return {{"float", a.floating()}};
  if (a.isString())
    return {{"string", a.string()}};
  if (a.isDType())
    return {{"dtype", std::string(name(a.dtype()))}};
  if (auto ints = a.intList(); a.isList() && ints)
    return {{"ints", *ints}};
  return nullptr; // not expressible: the constant is stored as bytes
}

Expected<Argument> recipeArg(const json &j) {
  if (!j.is_object() || j.size() != 1)
    return Diagnostic::error("malformed recipe argument " + j.dump());
  // A named iterator: items()'s proxy values do not outlive their statement.
  auto first = j.begin();
  const std::string kind = first.key();
  const json &v = first.value();
  if (kind == "bool" && v.is_boolean())
    return Argument(v.get<bool>());
  if (kind == "int" && v.is_number_integer())
    return Argument(v.get<int64_t>());
  if (kind == "float" && v.is_number())
    return Argument(v.get<double>());
  if (kind == "string" && v.is_string())
    return Argument(v.get<std::string>());
  if (kind == "dtype" && v.is_string())
    if (auto dt = parseDType(v.get<std::string>()))
      return Argument(*dt);
  if (kind == "ints" && v.is_array())
    return Argument::ints(v.get<std::vector<int64_t>>());
  return Diagnostic::error("malformed recipe argument " + j.dump());
}

/// Decides which constants of the fused graph are stored as recipes: those
/// computed by a chain of transforms whose leaves are other constants the
/// file stores as bytes (group sums of a packed weight; a transposed copy of
/// scales another op reads as they are). Returns one recipe (or null) per
/// graph input. Data-free: only the deferred computations' structure is read.
std::vector<json> planRecipes(const Graph &g,
                              const std::function<bool(const GraphInput &)> &stored) {
  const std::size_t n = g.inputs().size();
  std::vector<json> recipes(n);
  // Which input holds a given piece of data: a deferred computation (by
  // identity) or an owned/mapped tensor (same storage, offset, shape, dtype).
  std::map<const DeferredData *, std::size_t> byDeferred;
  std::map<std::tuple<const Storage *, int64_t, std::string>, std::size_t> byTensor;
  auto tensorKey = [](const Tensor &t) {
    return std::make_tuple(t.storage().get(), t.offset(), t.proto().str());
  };
  for (std::size_t i = 0; i < n; ++i) {
    const GraphInput &in = g.inputs()[i];
    if (!stored(in))
      continue;
    if (const Tensor *t = in.resident())
      byTensor.emplace(tensorKey(*t), i);
    else if (const auto *d = std::get_if<DeferredInit>(&*in.init))
      byDeferred.emplace(d->source.get(), i);
  }
  // leaves[i]: the inputs a recipe for i reads.
  std::vector<std::vector<std::size_t>> leaves(n);
  std::function<json(const DeferredData &, std::size_t)> build = [&](const DeferredData &d,
                                                                     std::size_t self) -> json {
    std::optional<std::size_t> leaf;
    if (auto it = byDeferred.find(&d); it != byDeferred.end())
      leaf = it->second;
    else if (const Tensor *t = d.held())
      if (auto jt = byTensor.find(tensorKey(*t)); jt != byTensor.end())
        leaf = jt->second;
    if (leaf && *leaf != self) {
      leaves[self].push_back(*leaf);
      return {{"input", *leaf}};
    }
    const DeferredData::Recipe *r = d.recipe();
    if (!r)
      return nullptr;
    json args = json::array();
    for (const auto &[k, v] : r->args) {
      json a = recipeArgJson(v);
      if (a.is_null())
        return nullptr;
      args.push_back({{"name", k}, {"value", std::move(a)}});
    }
    json inputs = json::array();
    for (const auto &in : r->inputs) {
      json j = build(*in, self);
      if (j.is_null())
        return nullptr;
      inputs.push_back(std::move(j));
    }
    return {{"transform", r->transform}, {"args", std::move(args)}, {"inputs", std::move(inputs)}};
  };
  for (std::size_t i = 0; i < n; ++i) {
    const GraphInput &in = g.inputs()[i];
    const auto *d = in.init ? std::get_if<DeferredInit>(&*in.init) : nullptr;
    if (!stored(in) || in.resident() || !d || !d->source->recipe())
      continue;
    json r = build(*d->source, i);
    if (!r.is_null() && r.contains("transform"))
      recipes[i] = std::move(r);
    else
      leaves[i].clear();
  }
  // A recipe reads bytes, not other recipes: drop recipes whose leaves are
  // recipes themselves until none is (first in graph order is kept).
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i)
      if (!recipes[i].is_null())
        for (std::size_t l : leaves[i])
          if (!recipes[l].is_null() && !recipes[i].is_null()) {
            recipes[l > i ? l : i] = nullptr;
            changed = true;
          }
  }
  return recipes;
}

bool isRead(const Graph &g, const GraphInput &in) {
  if (in.value->hasUses())
    return true;
  for (const GraphOutput &o : g.outputs())
    if (o.value == in.value)
      return true;
  return false;
}

/// `s` as nlohmann's dump() writes a JSON string (UTF-8 as it is).
void appendJsonString(std::string &out, std::string_view s) {
  bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
  } else {
    out += json(std::string(s)).dump(); // escapes, and refuses invalid UTF-8
  }
}

/// JSON text byte for byte as nlohmann's dump(1) writes the same document
/// (one space of indent per level; an object's keys sorted, as nlohmann::json
/// keeps them: callers write them in that order), written directly. The
/// metadata sections' documents (a std::map per plan entry, provenance
/// record, blob and binding, ~20,000 for a 128-layer model) cost more to
/// build, dump and free than their text.
class JsonText {
public:
  void beginObject() { open('{'); }
  void endObject() { close('}'); }
  void beginArray() { open('['); }
  void endArray() { close(']'); }
  JsonText &key(std::string_view k) {
    next();
    appendJsonString(out_, k);
    out_ += ": ";
    afterKey_ = true;
    return *this;
  }
  void value(std::string_view v) {
    next();
    appendJsonString(out_, v);
  }
  void value(const std::string &v) { value(std::string_view(v)); }
  void value(const char *v) { value(std::string_view(v)); }
  void value(bool v) {
    next();
    out_ += v ? "true" : "false";
  }
  template <class I>
  requires std::is_integral_v<I>
  void value(I v) {
    next();
    out_ += std::to_string(v);
  }
  /// A document as dump(1) writes it at this depth (its strings hold no raw
  /// newline, so each of its lines is indented by the current depth).
  void value(const json &v) {
    next();
    for (char c : v.dump(1)) {
      out_ += c;
      if (c == '\n')
        out_.append(depth_.size(), ' ');
    }
  }
  template <class T> void array(const std::vector<T> &items) {
    beginArray();
    for (const T &x : items)
      value(x);
    endArray();
  }
  std::string take() { return std::move(out_); }

private:
  /// Before a key or a value: a value after its key stays on the key's line;
  /// anything else in a container goes on a line of its own.
  void next() {
    if (afterKey_) {
      afterKey_ = false;
      return;
    }
    if (depth_.empty())
      return;
    out_ += depth_.back() ? ",\n" : "\n";
    depth_.back() = true;
    out_.append(depth_.size(), ' ');
  }
  void open(char c) {
    next();
    out_ += c;
    depth_.push_back(false);
  }
  void close(char c) {
    bool any = depth_.back();
    depth_.pop_back();
    if (any) {
      out_ += '\n';
      out_.append(depth_.size(), ' ');
    }
    out_ += c;
  }

  std::string out_;
  std::vector<bool> depth_; ///< per open container: whether it has an item yet
  bool afterKey_ = false;
};

void subgraphsText(JsonText &t, const std::vector<ProgramSubgraph> &gs) {
  t.beginArray();
  for (const ProgramSubgraph &s : gs) {
    t.beginObject();
    t.key("id").value(s.id);
    t.key("nodes").array(s.nodes);
    t.endObject();
  }
  t.endArray();
}

std::string planText(const Program &p) {
  JsonText t;
  t.beginObject();
  t.key("cpu_subgraphs");
  subgraphsText(t, p.cpuSubgraphs);
  t.key("dispatch").value("per-node");
  t.key("nodes").beginArray();
  for (const ProgramNodePlan &n : p.plan) {
    t.beginObject();
    t.key("kernel").value(n.kernel);
    t.key("node").value(n.node);
    t.key("partition").value(n.partition);
    t.key("placement").value(n.placement);
    if (!n.reason.empty())
      t.key("reason").value(n.reason);
    t.key("target").value(n.target);
    t.endObject();
  }
  t.endArray();
  t.key("partitions");
  subgraphsText(t, p.partitions);
  t.endObject();
  return t.take();
}

/// SHADERS and SPIRV: each distinct module once (variants whose SPIR-V is
/// byte-identical share it), 4-byte aligned as SPIR-V words are.
std::pair<std::string, std::string> shaderSections(const Program &p, ProgramStats &stats) {
  std::string spirv;
  std::multimap<uint64_t, std::size_t> byHash;
  struct Module {
    uint64_t offset, size, hash;
  };
  std::vector<Module> modules;
  std::vector<std::size_t> moduleOf;
  for (const ProgramShader &sh : p.shaders) {
    const char *bytes = reinterpret_cast<const char *>(sh.spirv.data());
    uint64_t size = sh.spirv.size() * sizeof(uint32_t);
    uint64_t h = contentHash(reinterpret_cast<const uint8_t *>(bytes), size);
    std::size_t module = modules.size();
    auto [lo, hi] = byHash.equal_range(h);
    for (auto it = lo; it != hi && module == modules.size(); ++it)
      if (modules[it->second].size == size &&
          std::memcmp(spirv.data() + modules[it->second].offset, bytes, size) == 0)
        module = it->second;
    if (module == modules.size()) {
      modules.push_back(Module{spirv.size(), size, h});
      byHash.emplace(h, module);
      spirv.append(bytes, size);
    }
    moduleOf.push_back(module);
  }
  stats.shaderVariants = p.shaders.size();
  stats.spirvModules = modules.size();
  stats.spirvBytes = spirv.size();
  JsonText t;
  t.beginObject();
  t.key("compiler").value(p.shaderCompiler);
  t.key("modules").beginArray();
  for (const Module &m : modules) {
    t.beginObject();
    t.key("hash").value(hex64(m.hash));
    t.key("offset").value(m.offset);
    t.key("size").value(m.size);
    t.endObject();
  }
  t.endArray();
  t.key("variants").beginArray();
  for (std::size_t i = 0; i < p.shaders.size(); ++i) {
    const ProgramShader &sh = p.shaders[i];
    t.beginObject();
    t.key("bindings").value(sh.bindings);
    t.key("local_size").beginArray();
    for (uint32_t v : sh.localSize)
      t.value(v);
    t.endArray();
    t.key("module").value(moduleOf[i]);
    t.key("name").value(sh.variant);
    t.key("source_hash").value(hex64(sh.sourceHash));
    t.key("template").value(sh.templateName);
    t.endObject();
  }
  t.endArray();
  t.endObject();
  return {t.take(), std::move(spirv)};
}

std::string provenanceText(const Program &p) {
  JsonText t;
  t.beginArray();
  for (const ProgramProvenance &e : p.provenance) {
    t.beginObject();
    t.key("args").value(e.args);
    t.key("fqn").value(e.fqn);
    t.key("origins").array(e.origins);
    t.key("requests").value(e.requests);
    t.key("rule").value(e.rule);
    t.key("sources").array(e.sources);
    t.key("transform").value(e.transform);
    t.endObject();
  }
  t.endArray();
  return t.take();
}

/// CONSTS: its blobs (hash, offset, size) and which constant each binding
/// reads (a blob, or a recipe computing it at load).
std::string constsText(const Program &program, const std::vector<Blob> &blobs,
                       const std::vector<Binding> &bindings) {
  JsonText t;
  t.beginObject();
  t.key("alignment").value(kProgramAlignment);
  t.key("bindings").beginArray();
  for (const Binding &b : bindings) {
    const Graph &g = b.graph == "main" ? *program.graph : *program.reference;
    const GraphInput &in = g.inputs()[b.input];
    t.beginObject();
    if (b.recipe.is_null())
      t.key("blob").value(b.blob);
    t.key("dtype").value(name(in.value->proto().dtype));
    t.key("fqn").value(in.fqn);
    t.key("graph").value(b.graph);
    t.key("input").value(b.input);
    if (!b.recipe.is_null())
      t.key("recipe").value(b.recipe);
    t.endObject();
  }
  t.endArray();
  t.key("blobs").beginArray();
  for (const Blob &b : blobs) {
    t.beginObject();
    t.key("hash").value(hex64(b.hash));
    t.key("offset").value(b.offset);
    t.key("size").value(b.size);
    t.endObject();
  }
  t.endArray();
  t.endObject();
  return t.take();
}

/// A metadata section: its tag, its bytes and their FNV-1a hash.
struct SectionBytes {
  std::string tag;
  std::string bytes;
  uint64_t hash = 0;

  static SectionBytes of(std::string tag, std::string bytes) {
    uint64_t h = contentHash(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    return SectionBytes{std::move(tag), std::move(bytes), h};
  }
};

/// How many sections structureSections makes for a program without a
/// reference graph (GRAPH, PLAN, PROV, SHADERS, SPIRV; REFGRAPH is one more).
constexpr uint32_t kStructureSections = 5;

/// The sections describing the program's structure, in file order, hashed:
/// GRAPH, [REFGRAPH], PLAN, PROV, SHADERS, SPIRV. Reads the program's
/// structure only, never a constant's data.
Expected<std::vector<SectionBytes>> structureSections(const Program &p, ProgramStats &shaderStats) {
  std::vector<SectionBytes> out;
  // GRAPH first: it fails on graphs that cannot be printed.
  GRAFT_TRY(std::string graphText, structureText(*p.graph));
  out.push_back(SectionBytes::of("GRAPH", std::move(graphText)));
  if (p.reference) {
    GRAFT_TRY(std::string refText, structureText(*p.reference));
    out.push_back(SectionBytes::of("REFGRAPH", std::move(refText)));
  }
  out.push_back(SectionBytes::of("PLAN", planText(p)));
  out.push_back(SectionBytes::of("PROV", provenanceText(p)));
  auto [shaderIndex, spirv] = shaderSections(p, shaderStats);
  out.push_back(SectionBytes::of("SHADERS", std::move(shaderIndex)));
  out.push_back(SectionBytes::of("SPIRV", std::move(spirv)));
  return out;
}

/// A constant on its way from the thread that loads and hashes it to the
/// thread that writes it (writeProgram's DATA loop).
struct QueuedBlob {
  Tensor tensor; ///< contiguous, offset 0
  uint64_t hash = 0;
  bool main = true; ///< of the main graph (not the reference)
};

/// The constants loaded but not yet written, first in first out. Bounded by
/// bytes so that computed constants (repacks own their buffers) do not pile
/// up in memory when writing is the slower side; one constant is always let
/// in, however large.
class BlobQueue {
public:
  /// Waits for room; false when the writer failed (nothing more is wanted).
  bool push(QueuedBlob b) {
    const uint64_t n = b.tensor.nbytes();
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [&] { return failed_ || items_.empty() || bytes_ + n <= kLimit; });
    if (failed_)
      return false;
    bytes_ += n;
    items_.push_back(std::move(b));
    ready_.notify_one();
    return true;
  }
  /// The next constant, or nothing once the queue is closed and empty.
  std::optional<QueuedBlob> pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
    if (items_.empty())
      return std::nullopt;
    QueuedBlob b = std::move(items_.front());
    items_.pop_front();
    return b;
  }
  /// A popped constant of `n` bytes is written and dropped: its room is free.
  void done(uint64_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    bytes_ -= n;
    room_.notify_one();
  }
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    ready_.notify_one();
  }
  void fail() {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    room_.notify_one();
  }

private:
  static constexpr uint64_t kLimit = uint64_t(64) << 20;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<QueuedBlob> items_;
  uint64_t bytes_ = 0; ///< of the constants pushed and not yet done
  bool closed_ = false, failed_ = false;
};

/// A temp file next to the destination, removed unless committed.
class TempFile {
public:
  ~TempFile() {
    if (file_)
      std::fclose(file_);
    if (!path_.empty() && !committed_)
      std::remove(path_.c_str());
  }
  Status open(const std::string &dest) {
    std::filesystem::path d(dest);
    std::string dir = d.has_parent_path() ? d.parent_path().string() : std::string(".");
    std::string tmpl =
        (std::filesystem::path(dir) / ("." + d.filename().string() + ".XXXXXX")).string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = ::mkstemp(buf.data());
    if (fd < 0)
      return Diagnostic::error("cannot write '" + dest + "': " + std::strerror(errno));
    path_ = buf.data();
    // mkstemp creates the file 0600; give it the usual 0666 & ~umask.
    mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    file_ = ::fdopen(fd, "wb");
    if (!file_) {
      ::close(fd);
      return Diagnostic::error("cannot write '" + dest + "': " + std::strerror(errno));
    }
    dest_ = dest;
    return okStatus();
  }
  Status write(const void *data, std::size_t n) {
    if (n && std::fwrite(data, 1, n, file_) != n)
      return Diagnostic::error("cannot write '" + dest_ + "': " + std::strerror(errno));
    written_ += n;
    if (written_ - writtenBack_ >= kWritebackChunk)
      startWriteback();
    return okStatus();
  }
  Status pad(uint64_t to) {
    static const char zeros[kProgramAlignment] = {};
    while (written_ < to)
      GRAFT_CHECK_OK(write(zeros, std::min<uint64_t>(to - written_, sizeof(zeros))));
    return okStatus();
  }
  /// Starts writing back what is written so far without waiting for it, so
  /// the disk works while the next constants are computed and commit()'s
  /// fsync waits only for the tail. A hint: failures show up at fsync.
  void startWriteback() {
    if (std::fflush(file_) == 0)
      ::sync_file_range(::fileno(file_), static_cast<off_t>(writtenBack_),
                        static_cast<off_t>(written_ - writtenBack_), SYNC_FILE_RANGE_WRITE);
    writtenBack_ = written_;
  }
  Status commit() {
    if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0)
      return Diagnostic::error("cannot write '" + dest_ + "': " + std::strerror(errno));
    std::fclose(file_);
    file_ = nullptr;
    if (std::rename(path_.c_str(), dest_.c_str()) != 0)
      return Diagnostic::error("cannot write '" + dest_ + "': " + std::strerror(errno));
    committed_ = true;
    return okStatus();
  }
  uint64_t written() const { return written_; }
  /// Overwrites bytes already written (the header and table, filled in last).
  Status writeAt(uint64_t offset, const void *data, std::size_t n) {
    if (std::fflush(file_) != 0 ||
        ::pwrite(::fileno(file_), data, n, static_cast<off_t>(offset)) != static_cast<ssize_t>(n))
      return Diagnostic::error("cannot write '" + dest_ + "': " + std::strerror(errno));
    return okStatus();
  }
  /// Whether the `n` bytes at `offset` (already written) equal `data`: how a
  /// blob whose hash matches an earlier one is confirmed identical without
  /// keeping the earlier one in memory.
  Expected<bool> equalsWritten(uint64_t offset, const uint8_t *data, std::size_t n) {
    if (std::fflush(file_) != 0)
      return Diagnostic::error("cannot write '" + dest_ + "': " + std::strerror(errno));
    std::vector<uint8_t> buf(std::min<std::size_t>(n, std::size_t(1) << 20));
    for (std::size_t done = 0; done < n;) {
      std::size_t m = std::min(buf.size(), n - done);
      if (::pread(::fileno(file_), buf.data(), m, static_cast<off_t>(offset + done)) !=
          static_cast<ssize_t>(m))
        return Diagnostic::error("cannot read back '" + path_ + "': " + std::strerror(errno));
      if (std::memcmp(buf.data(), data + done, m) != 0)
        return false;
      done += m;
    }
    return true;
  }

private:
  std::FILE *file_ = nullptr;
  std::string path_, dest_;
  uint64_t written_ = 0;
  uint64_t writtenBack_ = 0; ///< bytes handed to startWriteback
  bool committed_ = false;
};

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

class Reader {
public:
  Reader(std::string path, const ProgramReadOptions &options)
      : path_(std::move(path)), options_(options) {}

  Expected<Program> read(ProgramStats *stats) {
    std::ifstream in(path_, std::ios::binary);
    if (!in)
      return fail("", std::string("cannot open: ") + std::strerror(errno));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path_, ec))
      return fail("", "cannot read: not a regular file");
    fileSize_ = std::filesystem::file_size(path_, ec);
    if (ec)
      return fail("", "cannot read: " + ec.message());
    std::string header(kHeaderBytes, '\0');
    if (fileSize_ < kHeaderBytes || !in.read(header.data(), kHeaderBytes))
      return fail("header", "file is truncated (" + std::to_string(fileSize_) +
                                " bytes, the header alone is 64)");
    if (std::memcmp(header.data(), kProgramMagic, 8) != 0)
      return fail("header", "not a graft program file (bad magic)");
    uint32_t version = get<uint32_t>(header, 8);
    version_ = version;
    if (version < kProgramMinVersion || version > kProgramVersion)
      return fail("header", "unsupported format version " + std::to_string(version) +
                                " (this graft reads versions " +
                                std::to_string(kProgramMinVersion) + " to " +
                                std::to_string(kProgramVersion) + ")");
    uint32_t count = get<uint32_t>(header, 12);
    uint64_t recordedSize = get<uint64_t>(header, 16);
    uint64_t tableOffset = get<uint64_t>(header, 24);
    uint64_t tableHash = get<uint64_t>(header, 32);
    if (recordedSize != fileSize_)
      return fail("header", "file is " + std::to_string(fileSize_) + " bytes but the header says " +
                                std::to_string(recordedSize) + " (truncated or appended to)");
    if (count == 0 || count > 64)
      return fail("header", "implausible section count " + std::to_string(count));
    uint64_t tableBytes = uint64_t(count) * kTableEntryBytes;
    if (tableOffset < kHeaderBytes || tableOffset > fileSize_ ||
        tableBytes > fileSize_ - tableOffset)
      return fail("header", "section table out of range");
    std::string table(tableBytes, '\0');
    in.seekg(static_cast<std::streamoff>(tableOffset));
    if (!in.read(table.data(), static_cast<std::streamsize>(tableBytes)))
      return fail("header", "cannot read the section table");
    if (contentHash(reinterpret_cast<const uint8_t *>(table.data()), table.size()) != tableHash)
      return fail("header", "section table checksum mismatch");
    for (uint32_t i = 0; i < count; ++i) {
      Section s;
      std::size_t at = i * kTableEntryBytes;
      s.tag.assign(table.data() + at, strnlen(table.data() + at, 8));
      s.offset = get<uint64_t>(table, at + 8);
      s.size = get<uint64_t>(table, at + 16);
      s.hash = get<uint64_t>(table, at + 24);
      if (s.offset > fileSize_ || s.size > fileSize_ - s.offset)
        return fail(s.tag, "offset " + std::to_string(s.offset) + " + size " +
                               std::to_string(s.size) + " lies outside the file (" +
                               std::to_string(fileSize_) + " bytes)");
      if (sections_.count(s.tag))
        return fail(s.tag, "section appears twice");
      sections_[s.tag] = s;
    }
    for (const char *tag : kRequiredSections)
      if (!sections_.count(tag))
        return fail(tag, "section is missing");
    // Version 1 predates compiled shaders: its files have no SPIR-V, and
    // the runtime compiles their shaders itself.
    if (version >= 2)
      for (const char *tag : kShaderSections)
        if (!sections_.count(tag))
          return fail(tag, "section is missing (a version " + std::to_string(version) +
                               " file stores its compiled shaders)");

    GRAFT_TRY(json meta, jsonSection(in, "META"));
    GRAFT_TRY(std::string graphText, textSection(in, "GRAPH"));
    GRAFT_TRY(json consts, jsonSection(in, "CONSTS"));
    GRAFT_TRY(json plan, jsonSection(in, "PLAN"));
    GRAFT_TRY(json prov, jsonSection(in, "PROV"));
    const Section &data = sections_.at("DATA");
    if (data.offset % kProgramAlignment)
      return fail("DATA", "section is not " + std::to_string(kProgramAlignment) +
                              "-byte aligned (offset " + std::to_string(data.offset) + ")");

    Program p;
    p.version = version;
    try {
      GRAFT_CHECK_OK(readMeta(meta, p));
    } catch (const json::exception &e) {
      return fail("META", std::string("malformed: ") + e.what());
    }
    GRAFT_TRY(p.graph, parseSection(graphText, "GRAPH"));
    if (sections_.count("REFGRAPH")) {
      GRAFT_TRY(std::string refText, textSection(in, "REFGRAPH"));
      GRAFT_TRY(p.reference, parseSection(refText, "REFGRAPH"));
    }
    try {
      GRAFT_CHECK_OK(readConsts(consts, p, data, stats));
    } catch (const json::exception &e) {
      return fail("CONSTS", std::string("malformed: ") + e.what());
    }
    try {
      GRAFT_CHECK_OK(readPlan(plan, p));
    } catch (const json::exception &e) {
      return fail("PLAN", std::string("malformed: ") + e.what());
    }
    try {
      GRAFT_CHECK_OK(readProvenance(prov, p));
    } catch (const json::exception &e) {
      return fail("PROV", std::string("malformed: ") + e.what());
    }
    ProgramStats shaderStats;
    if (version >= 2) {
      GRAFT_TRY(json shaders, jsonSection(in, "SHADERS"));
      GRAFT_TRY(std::string spirv, textSection(in, "SPIRV"));
      try {
        GRAFT_CHECK_OK(readShaders(shaders, spirv, p, shaderStats));
      } catch (const json::exception &e) {
        return fail("SHADERS", std::string("malformed: ") + e.what());
      }
    }
    GRAFT_CHECK_OK(verifySection(*p.graph, "GRAPH"));
    if (p.reference)
      GRAFT_CHECK_OK(verifySection(*p.reference, "REFGRAPH"));
    if (stats) {
      stats->fileBytes = fileSize_;
      stats->shaderVariants = shaderStats.shaderVariants;
      stats->spirvModules = shaderStats.spirvModules;
      stats->spirvBytes = shaderStats.spirvBytes;
    }
    return p;
  }

private:
  Diagnostic fail(const std::string &section, const std::string &why) const {
    return Diagnostic::error(path_ + ": " + (section.empty() ? "" : "section " + section + ": ") +
                             why);
  }

  Expected<std::string> textSection(std::ifstream &in, const std::string &tag) {
    const Section &s = sections_.at(tag);
    std::string bytes(s.size, '\0');
    in.clear();
    in.seekg(static_cast<std::streamoff>(s.offset));
    if (!in.read(bytes.data(), static_cast<std::streamsize>(s.size)))
      return fail(tag, "cannot read");
    if (contentHash(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()) != s.hash)
      return fail(tag, "checksum mismatch (the file is damaged)");
    return bytes;
  }

  Expected<json> jsonSection(std::ifstream &in, const std::string &tag) {
    GRAFT_TRY(std::string text, textSection(in, tag));
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return fail(tag, "is not valid JSON");
    return j;
  }

  Expected<std::unique_ptr<Graph>> parseSection(const std::string &text, const std::string &tag) {
    auto g = parseGraph(text, path_ + ":" + tag);
    if (!g)
      return fail(tag, "invalid graph text: " + g.diags().front().message);
    return std::move(*g);
  }

  Status verifySection(const Graph &g, const std::string &tag) {
    auto diags = verify(g);
    if (!diags.empty())
      return fail(tag, "graph does not verify: " + diags.front().message);
    return okStatus();
  }

  Status readMeta(const json &meta, Program &p) {
    if (meta.value("format", "") != "graft-vkprog")
      return fail("META", "format is not 'graft-vkprog'");
    p.target = meta.at("target").get<std::string>();
    p.sourcePath = meta.at("source").at("path").get<std::string>();
    p.sourceBytes = meta.at("source").at("bytes").get<uint64_t>();
    p.summaryJson = meta.at("summary").dump();
    return okStatus();
  }

  Status readConsts(const json &c, Program &p, const Section &data, ProgramStats *stats) {
    struct BlobRef {
      uint64_t offset, size, hash;
      std::shared_ptr<Storage> storage;
    };
    std::vector<BlobRef> blobs;
    ProgramStats st;
    for (const json &b : c.at("blobs")) {
      BlobRef r{b.at("offset").get<uint64_t>(), b.at("size").get<uint64_t>(), 0, nullptr};
      std::string h = b.at("hash").get<std::string>();
      r.hash = std::strtoull(h.c_str(), nullptr, 16);
      std::string label = "blob " + std::to_string(blobs.size());
      if (r.offset % kProgramAlignment)
        return fail("CONSTS", label + " at offset " + std::to_string(r.offset) + " is not " +
                                  std::to_string(kProgramAlignment) + "-byte aligned");
      if (r.offset > data.size || r.size > data.size - r.offset)
        return fail("CONSTS", label + " (offset " + std::to_string(r.offset) + ", " +
                                  std::to_string(r.size) +
                                  " bytes) lies outside the DATA section (" +
                                  std::to_string(data.size) + " bytes)");
      if (r.size == 0) {
        r.storage = Storage::zeros(0);
      } else {
        auto m = Storage::mapFile(path_, data.offset + r.offset, r.size);
        if (!m)
          return fail("DATA", label + ": " + m.diags().front().message);
        r.storage = *m;
        if (options_.verifyData && blobHash(version_, r.storage->data(), r.size) != r.hash)
          return fail("DATA", label + ": content hash mismatch (the file is damaged)");
      }
      st.blobBytes += r.size;
      blobs.push_back(std::move(r));
    }
    st.blobs = blobs.size();
    std::vector<bool> mainUses(blobs.size(), false);
    std::vector<const json *> recipeBindings;
    for (const json &b : c.at("bindings")) {
      if (b.contains("recipe")) {
        recipeBindings.push_back(&b); // after every blob is bound: recipes read them
        continue;
      }
      std::string which = b.at("graph").get<std::string>();
      Graph *g = which == "main"        ? p.graph.get()
                 : which == "reference" ? p.reference.get()
                                        : nullptr;
      if (!g)
        return fail("CONSTS", "binding names graph '" + which + "', which the file does not hold");
      std::size_t input = b.at("input").get<std::size_t>();
      std::size_t blob = b.at("blob").get<std::size_t>();
      std::string fqn = b.at("fqn").get<std::string>();
      if (input >= g->inputs().size() || !g->inputs()[input].isConstant())
        return fail("CONSTS", "binding of '" + fqn + "': input " + std::to_string(input) +
                                  " of the " + which + " graph is not a constant");
      GraphInput &in = g->inputs()[input];
      if (in.fqn != fqn)
        return fail("CONSTS", "binding of '" + fqn + "': input " + std::to_string(input) + " is '" +
                                  in.fqn + "'");
      if (blob >= blobs.size())
        return fail("CONSTS", "binding of '" + fqn + "': blob " + std::to_string(blob) +
                                  " does not exist (" + std::to_string(blobs.size()) + " blobs)");
      const TensorProto &proto = in.value->proto();
      auto sizes = concreteSizes(proto.shape);
      if (!sizes)
        return fail("CONSTS", "binding of '" + fqn + "': the constant's shape is symbolic");
      Tensor t(proto.dtype, *sizes, blobs[blob].storage);
      if (t.nbytes() != blobs[blob].size)
        return fail("CONSTS", "binding of '" + fqn + "': " + proto.str() + " needs " +
                                  std::to_string(t.nbytes()) + " bytes, blob " +
                                  std::to_string(blob) + " has " +
                                  std::to_string(blobs[blob].size));
      in.setData(std::move(t), ExternalData{});
      ++st.constants;
      if (which == "main" && !mainUses[blob]) {
        mainUses[blob] = true;
        st.graphBlobBytes += blobs[blob].size;
      }
    }
    for (const json *b : recipeBindings)
      GRAFT_CHECK_OK(bindRecipe(*b, p, st));
    if (stats)
      *stats = st;
    return okStatus();
  }

  /// A binding computed at load: the constant becomes a deferred transform of
  /// the constants its recipe names (computed on first use, e.g. by the
  /// Vulkan runtime's upload), checked against the graph's prototype now.
  Status bindRecipe(const json &b, Program &p, ProgramStats &st) {
    std::string fqn = b.at("fqn").get<std::string>();
    if (b.at("graph").get<std::string>() != "main")
      return fail("CONSTS", "binding of '" + fqn + "': recipes bind constants of the main graph");
    Graph &g = *p.graph;
    std::size_t input = b.at("input").get<std::size_t>();
    if (input >= g.inputs().size() || !g.inputs()[input].isConstant() ||
        g.inputs()[input].fqn != fqn)
      return fail("CONSTS", "binding of '" + fqn + "': input " + std::to_string(input) +
                                " is not that constant");
    std::function<Expected<std::pair<std::shared_ptr<const DeferredData>, TensorProto>>(
        const json &)>
        build = [&](const json &r)
        -> Expected<std::pair<std::shared_ptr<const DeferredData>, TensorProto>> {
      if (r.contains("input")) {
        std::size_t leaf = r.at("input").get<std::size_t>();
        if (leaf >= g.inputs().size() || leaf == input || !g.inputs()[leaf].resident())
          return Diagnostic::error("input " + std::to_string(leaf) +
                                   " is not a constant stored in the file");
        return std::make_pair(g.inputs()[leaf].dataSource(), g.inputs()[leaf].value->proto());
      }
      std::string name = r.at("transform").get<std::string>();
      const rewrite::ConstantTransform *tf =
          rewrite::ConstantTransformRegistry::builtin().find(name);
      if (!tf)
        return Diagnostic::error("unknown constant transform '" + name + "'");
      std::vector<std::pair<std::string, Argument>> kwargs;
      for (const json &a : r.at("args")) {
        GRAFT_TRY(Argument v, recipeArg(a.at("value")));
        kwargs.emplace_back(a.at("name").get<std::string>(), std::move(v));
      }
      GRAFT_TRY(rewrite::TransformArgs args, rewrite::bindTransformArgs(*tf, {}, kwargs));
      std::vector<std::shared_ptr<const DeferredData>> inputs;
      std::vector<TensorProto> protos;
      std::vector<std::string> sources;
      for (const json &in : r.at("inputs")) {
        GRAFT_TRY(auto built, build(in));
        sources.push_back(built.first->describe());
        inputs.push_back(std::move(built.first));
        protos.push_back(std::move(built.second));
      }
      std::vector<const TensorProto *> protoPtrs;
      for (const TensorProto &pr : protos)
        protoPtrs.push_back(&pr);
      GRAFT_TRY(rewrite::TransformPlan plan, rewrite::planTransform(*tf, protoPtrs, args));
      // Described as the FQN registry describes a request.
      std::string what =
          rewrite::TransformRequest{std::move(sources), name, args.canonicalText()}.str();
      if (plan.identity)
        return std::make_pair(inputs.at(0), plan.proto);
      TensorProto planned = plan.proto;
      return std::make_pair(rewrite::deferTransform(*tf, std::move(args), std::move(plan.proto),
                                                    std::move(inputs), fqn, what),
                            std::move(planned));
    };
    auto built = [&] {
      try {
        return build(b.at("recipe"));
      } catch (const json::exception &e) {
        return Expected<std::pair<std::shared_ptr<const DeferredData>, TensorProto>>(
            Diagnostic::error(std::string("malformed recipe: ") + e.what()));
      }
    }();
    if (!built.ok())
      return fail("CONSTS", "binding of '" + fqn + "': " + built.diags().front().message);
    GraphInput &in = g.inputs()[input];
    if (!built->second.sameShapeAndDType(in.value->proto()))
      return fail("CONSTS", "binding of '" + fqn + "': its recipe computes " + built->second.str() +
                                " but the graph declares " + in.value->proto().str());
    in.init = DeferredInit{std::move(built->first)};
    ++st.constants;
    ++st.recipes;
    return okStatus();
  }

  Status readPlan(const json &j, Program &p) {
    const json &nodes = j.at("nodes");
    std::vector<const Node *> order;
    for (const Node &n : p.graph->nodes())
      order.push_back(&n);
    if (nodes.size() != order.size())
      return fail("PLAN", "has " + std::to_string(nodes.size()) + " nodes, the graph " +
                              std::to_string(order.size()));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const json &n = nodes[i];
      ProgramNodePlan np;
      np.node = n.at("node").get<std::string>();
      np.target = n.at("target").get<std::string>();
      np.placement = n.at("placement").get<std::string>();
      np.kernel = n.at("kernel").get<std::string>();
      np.reason = n.value("reason", "");
      np.partition = n.at("partition").get<int>();
      const Node &g = *order[i];
      std::string gname = g.numOutputs() ? g.output(0)->name() : std::string();
      if (np.target != g.target() || np.node != gname)
        return fail("PLAN", "node " + std::to_string(i) + " is %" + np.node + " (" + np.target +
                                ") but the graph has %" + gname + " (" + g.target() + ")");
      if (np.placement != "device" && np.placement != "host" && np.placement != "cpu")
        return fail("PLAN", "node %" + np.node + ": unknown placement '" + np.placement + "'");
      p.plan.push_back(std::move(np));
    }
    auto groups = [&](const json &a, std::vector<ProgramSubgraph> &out,
                      const char *what) -> Status {
      for (const json &g : a) {
        ProgramSubgraph s;
        s.id = g.at("id").get<int>();
        s.nodes = g.at("nodes").get<std::vector<std::size_t>>();
        for (std::size_t n : s.nodes)
          if (n >= order.size())
            return fail("PLAN", std::string(what) + " " + std::to_string(s.id) + " names node " +
                                    std::to_string(n) + " of " + std::to_string(order.size()));
        out.push_back(std::move(s));
      }
      return okStatus();
    };
    GRAFT_CHECK_OK(groups(j.at("partitions"), p.partitions, "partition"));
    GRAFT_CHECK_OK(groups(j.at("cpu_subgraphs"), p.cpuSubgraphs, "CPU subgraph"));
    return okStatus();
  }

  /// SHADERS against SPIRV: every module lies inside SPIRV on a word
  /// boundary, starts with the SPIR-V magic and matches its hash; every
  /// variant names one module, once, with plausible metadata. The runtime
  /// hands these words to the driver, so nothing unchecked gets that far.
  Status readShaders(const json &j, const std::string &spirv, Program &p, ProgramStats &st) {
    p.shaderCompiler = j.at("compiler").get<std::string>();
    std::vector<std::vector<uint32_t>> modules;
    for (const json &m : j.at("modules")) {
      uint64_t offset = m.at("offset").get<uint64_t>(), size = m.at("size").get<uint64_t>();
      std::string label = "module " + std::to_string(modules.size());
      if (offset > spirv.size() || size > spirv.size() - offset)
        return fail("SPIRV", label + " (offset " + std::to_string(offset) + ", " +
                                 std::to_string(size) + " bytes) lies outside the section (" +
                                 std::to_string(spirv.size()) + " bytes): truncated?");
      if (offset % 4 || size % 4)
        return fail("SPIRV", label + " (offset " + std::to_string(offset) + ", " +
                                 std::to_string(size) + " bytes) is not made of 4-byte words");
      if (size < kSpirvHeaderBytes)
        return fail("SPIRV", label + " has " + std::to_string(size) +
                                 " bytes, less than a SPIR-V header (truncated)");
      const uint8_t *bytes = reinterpret_cast<const uint8_t *>(spirv.data()) + offset;
      if (get<uint32_t>(spirv, offset) != kSpirvMagic)
        return fail("SPIRV", label + " is not SPIR-V (bad magic number)");
      std::string h = m.at("hash").get<std::string>();
      if (hex64(contentHash(bytes, size)) != h)
        return fail("SPIRV", label + ": content hash mismatch (the file is damaged)");
      std::vector<uint32_t> words(size / 4);
      std::memcpy(words.data(), bytes, size);
      modules.push_back(std::move(words));
    }
    std::set<std::string> names;
    for (const json &v : j.at("variants")) {
      ProgramShader sh;
      sh.variant = v.at("name").get<std::string>();
      sh.templateName = v.at("template").get<std::string>();
      std::string label = "variant '" + sh.variant + "'";
      if (sh.variant.empty() || !names.insert(sh.variant).second)
        return fail("SHADERS", label + " is empty or appears twice");
      sh.sourceHash = std::strtoull(v.at("source_hash").get<std::string>().c_str(), nullptr, 16);
      std::size_t module = v.at("module").get<std::size_t>();
      if (module >= modules.size())
        return fail("SHADERS", label + ": module " + std::to_string(module) + " does not exist (" +
                                   std::to_string(modules.size()) + " modules)");
      sh.bindings = v.at("bindings").get<uint32_t>();
      if (sh.bindings == 0 || sh.bindings > kMaxShaderBindings)
        return fail("SHADERS", label + ": " + std::to_string(sh.bindings) +
                                   " bindings (expected 1 to " +
                                   std::to_string(kMaxShaderBindings) + ")");
      const json &ls = v.at("local_size");
      if (!ls.is_array() || ls.size() != 3)
        return fail("SHADERS", label + ": local_size must be [x, y, z]");
      for (std::size_t i = 0; i < 3; ++i) {
        sh.localSize[i] = ls[i].get<uint32_t>();
        if (sh.localSize[i] == 0 || sh.localSize[i] > kMaxLocalSize)
          return fail("SHADERS", label + ": local_size " + ls.dump() + " out of range");
      }
      sh.spirv = modules[module];
      p.shaders.push_back(std::move(sh));
    }
    st.shaderVariants = p.shaders.size();
    st.spirvModules = modules.size();
    st.spirvBytes = spirv.size();
    return okStatus();
  }

  Status readProvenance(const json &j, Program &p) {
    for (const json &e : j) {
      ProgramProvenance pe;
      pe.fqn = e.at("fqn").get<std::string>();
      pe.transform = e.at("transform").get<std::string>();
      pe.sources = e.at("sources").get<std::vector<std::string>>();
      pe.args = e.at("args").get<std::string>();
      pe.rule = e.at("rule").get<std::string>();
      pe.requests = e.at("requests").get<uint64_t>();
      pe.origins = e.at("origins").get<std::vector<std::string>>();
      p.provenance.push_back(std::move(pe));
    }
    return okStatus();
  }

  std::string path_;
  const ProgramReadOptions &options_;
  uint64_t fileSize_ = 0;
  std::map<std::string, Section> sections_;
  uint32_t version_ = 0; ///< the file's format version (blob hashes depend on it)
};

} // namespace

uint64_t contentHash(const uint8_t *data, std::size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 1099511628211ull;
  }
  return h;
}

bool isProgramFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, 8) && std::memcmp(magic, kProgramMagic, 8) == 0;
}

Expected<ProgramStats> writeProgram(const Program &program, const std::string &path,
                                    const ProgramWriteOptions &options) {
  if (!program.graph)
    return Diagnostic::error("cannot write '" + path + "': the program has no graph");
  if (program.plan.size() != program.graph->numNodes())
    return Diagnostic::internal("program plan has " + std::to_string(program.plan.size()) +
                                " entries for " + std::to_string(program.graph->numNodes()) +
                                " nodes");
  json meta = {{"format", "graft-vkprog"},
               {"version", kProgramVersion},
               {"target", program.target},
               {"source", {{"path", program.sourcePath}, {"bytes", program.sourceBytes}}},
               {"has_reference", program.reference != nullptr},
               {"summary", json::parse(program.summaryJson.empty() ? "{}" : program.summaryJson)}};
  // The structure sections (printing the graphs, PLAN, PROV, SHADERS and
  // their hashes: a fifth of writing a 128-layer model) are built on a second
  // thread while this one streams the constants: they read only the
  // program's structure, the DATA loop only its constants' data. The
  // structure's errors still come first, as when it was built first.
  ProgramStats shaderStats;
  std::future<Expected<std::vector<SectionBytes>>> structure =
      std::async(std::launch::async,
                 [&program, &shaderStats] { return structureSections(program, shaderStats); });

  // Layout: header, table, DATA, then the metadata sections. DATA comes
  // first so that constants stream: each is loaded (a mapped weight, or a
  // deferred repack computed now), hashed, written and dropped before the
  // next, and CONSTS (which lists their hashes and offsets) is written after
  // them. The header and table are filled in last.
  const uint32_t count = static_cast<uint32_t>(kStructureSections + (program.reference ? 1 : 0) +
                                               3); // + META, CONSTS, DATA
  const uint64_t dataOffset = alignUp(kHeaderBytes + count * kTableEntryBytes, kProgramAlignment);
  TempFile out;
  ProgramStats stats;
  std::vector<Blob> blobs;
  std::vector<Binding> bindings;
  auto writeData = [&]() -> Status {
    GRAFT_CHECK_OK(out.open(path));
    GRAFT_CHECK_OK(out.pad(dataOffset));
    // Progress counts prototype bytes (known before any data is touched).
    uint64_t total = 0, done = 0;
    auto isStored = [](const Graph &g, const GraphInput &in) {
      // A constant nothing reads (an original weight every use of which a
      // rule replaced) stays in the graph's signature but costs no bytes.
      return in.isConstant() && in.hasData() && isRead(g, in);
    };
    auto protoBytes = [](const GraphInput &in) -> uint64_t {
      Dim n = in.value->proto().numel();
      return n.isConstant()
                 ? static_cast<uint64_t>(n.constant()) * elementSize(in.value->proto().dtype)
                 : 0;
    };
    for (const Graph *g : {program.graph.get(), program.reference.get()})
      if (g)
        for (const GraphInput &in : g->inputs())
          if (isStored(*g, in))
            total += protoBytes(in);
    const std::vector<json> recipes = planRecipes(
        *program.graph, [&](const GraphInput &in) { return isStored(*program.graph, in); });
    // This thread loads each constant (a mapped weight, or a deferred repack
    // computed now) and hashes it; a second thread dedups, writes and drops
    // them in the same order, so copying the bytes into the page cache (a
    // third of the DATA loop) overlaps computing the next constants. The
    // blob each binding reads is known once the writer has placed it.
    BlobQueue queue;
    std::vector<std::size_t> awaiting; // bindings[awaiting[k]] reads the k-th queued blob
    std::vector<std::size_t> placed;   // the writer's blob index for the k-th queued blob
    Status written = okStatus();
    std::thread writer([&] {
      std::multimap<std::pair<uint64_t, uint64_t>, std::size_t> index;
      while (std::optional<QueuedBlob> b = queue.pop()) {
        if (written)
          written = [&]() -> Status {
            const uint8_t *p = b->tensor.rawData();
            const uint64_t size = b->tensor.nbytes();
            std::size_t found = blobs.size();
            auto [lo, hi] = index.equal_range({b->hash, size});
            for (auto it = lo; it != hi && found == blobs.size(); ++it) {
              GRAFT_TRY(bool same,
                        out.equalsWritten(dataOffset + blobs[it->second].offset, p, size));
              if (same)
                found = it->second;
            }
            if (found == blobs.size()) {
              uint64_t at = alignUp(out.written(), kProgramAlignment);
              GRAFT_CHECK_OK(out.pad(at));
              GRAFT_CHECK_OK(out.write(p, size));
              blobs.push_back(Blob{size, b->hash, at - dataOffset});
              index.emplace(std::make_pair(b->hash, size), found);
              stats.blobBytes += size;
              if (b->main)
                stats.graphBlobBytes += size;
            } else {
              stats.dedupedBytes += size;
            }
            placed.push_back(found);
            return okStatus();
          }();
        if (!written)
          queue.fail(); // the loading thread stops at its next push
        // Written: a mapped weight's pages leave the RSS; a computed one is freed.
        b->tensor.releasePages();
        queue.done(b->tensor.nbytes());
      }
    });
    auto addGraph = [&](const Graph &g, const std::string &which) -> Status {
      for (std::size_t i = 0; i < g.inputs().size(); ++i) {
        const GraphInput &in = g.inputs()[i];
        if (!isStored(g, in))
          continue;
        if (which == "main" && !recipes[i].is_null()) {
          // Computed at load from constants stored as bytes: no blob.
          ++stats.constants;
          ++stats.recipes;
          bindings.push_back(Binding{which, i, 0, recipes[i]});
          done += protoBytes(in);
          continue;
        }
        auto loaded = in.load();
        if (!loaded.ok())
          return Diagnostic::error("cannot write '" + path + "': constant '" + in.fqn +
                                   "': " + loaded.diags().front().message);
        Tensor t = std::move(*loaded);
        if (!t.defined())
          continue;
        if (!t.isContiguous() || t.offset() != 0)
          t = t.contiguous();
        uint64_t h = blobHash(kProgramVersion, t.rawData(), t.nbytes());
        ++stats.constants;
        awaiting.push_back(bindings.size());
        bindings.push_back(Binding{which, i, 0, nullptr});
        if (!queue.push(QueuedBlob{std::move(t), h, which == "main"}))
          return okStatus(); // the writer failed: its error is the one reported
        done += protoBytes(in);
        if (options.progress && total)
          options.progress(double(std::min(done, total)) / double(total));
      }
      return okStatus();
    };
    Status loaded = addGraph(*program.graph, "main");
    if (loaded && program.reference)
      loaded = addGraph(*program.reference, "reference");
    queue.close();
    writer.join();
    // The writer's error concerns an earlier constant than a loading error
    // (it only fails on constants already loaded): report it first, as the
    // sequential loop did.
    GRAFT_CHECK_OK(written);
    GRAFT_CHECK_OK(loaded);
    for (std::size_t k = 0; k < awaiting.size(); ++k)
      bindings[awaiting[k]].blob = placed[k];
    return okStatus();
  };
  Status data = writeData();
  GRAFT_TRY(std::vector<SectionBytes> structureBytes, structure.get());
  GRAFT_CHECK_OK(data);
  stats.shaderVariants = shaderStats.shaderVariants;
  stats.spirvModules = shaderStats.spirvModules;
  stats.spirvBytes = shaderStats.spirvBytes;
  stats.blobs = blobs.size();
  const uint64_t dataSize = out.written() - dataOffset;

  if (options.summaryJson) {
    json summary = json::parse(options.summaryJson(stats), nullptr, /*allow_exceptions=*/false);
    if (summary.is_discarded())
      return Diagnostic::internal("program summary is not valid JSON");
    meta["summary"] = std::move(summary);
  }
  // META first, CONSTS in its usual place among the structure sections
  // (before PLAN, after REFGRAPH).
  std::vector<SectionBytes> sections;
  sections.push_back(SectionBytes::of("META", meta.dump(1)));
  for (SectionBytes &sec : structureBytes) {
    if (sec.tag == "PLAN")
      sections.push_back(SectionBytes::of("CONSTS", constsText(program, blobs, bindings)));
    sections.push_back(std::move(sec));
  }

  // The table lists DATA last, as readers have always seen it; its position
  // in the file is free (readers go by the table's offsets).
  std::vector<Section> table;
  for (const SectionBytes &sec : sections) {
    table.push_back(Section{sec.tag, out.written(), sec.bytes.size(), sec.hash});
    GRAFT_CHECK_OK(out.write(sec.bytes.data(), sec.bytes.size()));
  }
  table.push_back(Section{"DATA", dataOffset, dataSize, 0});
  const uint64_t fileSize = out.written();

  std::string tableBytes;
  for (const Section &sec : table) {
    char tag[8] = {};
    std::memcpy(tag, sec.tag.data(), std::min<std::size_t>(sec.tag.size(), 8));
    tableBytes.append(tag, 8);
    put<uint64_t>(tableBytes, sec.offset);
    put<uint64_t>(tableBytes, sec.size);
    put<uint64_t>(tableBytes, sec.hash);
  }
  std::string header(kProgramMagic, 8);
  put<uint32_t>(header, kProgramVersion);
  put<uint32_t>(header, count);
  put<uint64_t>(header, fileSize);
  put<uint64_t>(header, kHeaderBytes);
  put<uint64_t>(
      header, contentHash(reinterpret_cast<const uint8_t *>(tableBytes.data()), tableBytes.size()));
  header.resize(kHeaderBytes, '\0');
  if (table.size() != count)
    return Diagnostic::internal("program section table has " + std::to_string(table.size()) +
                                " entries, planned " + std::to_string(count));
  GRAFT_CHECK_OK(out.writeAt(0, header.data(), header.size()));
  GRAFT_CHECK_OK(out.writeAt(kHeaderBytes, tableBytes.data(), tableBytes.size()));
  GRAFT_CHECK_OK(out.commit());
  stats.fileBytes = fileSize;
  return stats;
}

Expected<Program> readProgram(const std::string &path, const ProgramReadOptions &options,
                              ProgramStats *stats) {
  return Reader(path, options).read(stats);
}

} // namespace graft
