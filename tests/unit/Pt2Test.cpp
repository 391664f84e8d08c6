// Tests of .pt2 interop: the ZIP container, reading the three on-disk
// layouts (fixtures in tests/golden/pt2, made by generate_fixtures.py from
// real torch.save / PyTorchStreamWriter output), the restricted pickle
// reader, writing, synth -> read -> write -> read round trips for every
// --quant mode, and every kind of bad input the issue lists.
#include "graft/serialize/Pt2.h"
#include "graft/ir/Verifier.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/Synth.h"
#include "graft/serialize/TextIR.h"
#include "graft/serialize/Zip.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

using namespace graft;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(GRAFT_TEST_DATA_DIR) / "golden" / "pt2";

fs::path tempDir() {
  static fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("graft_pt2_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::string tmp(const std::string &name) {
  return (tempDir() / name).string();
}

std::string diagText(const std::vector<Diagnostic> &d) {
  return graft::render(d);
}

template <class T> std::string errorOf(const Expected<T> &e) {
  EXPECT_FALSE(e.ok()) << "expected an error";
  return e.ok() ? std::string() : diagText(e.diags());
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Pt2Program readOk(const std::string &path, const Pt2ReadOptions &o = {}) {
  auto p = readPt2(path, o);
  if (!p) {
    ADD_FAILURE() << diagText(p.diags());
    return Pt2Program{};
  }
  return std::move(*p);
}

/// Canonical text with every constant's data printed inline or into `bin`.
std::string text(const Graph &g, const std::string &bin = {}) {
  PrintOptions o;
  o.dataFile = bin;
  o.dataFileRef = "data.bin";
  auto t = printGraph(g, o);
  if (!t) {
    ADD_FAILURE() << diagText(t.diags());
    return {};
  }
  return *t;
}

/// The text without constant initializers (the graph structure).
std::string structure(const Graph &g) {
  std::string t = text(g, tmp("structure.bin"));
  std::regex init(R"(^(  (param|buffer|const) .*?) = .*$)", std::regex::multiline);
  return std::regex_replace(t, init, "$1");
}

/// Rewrites an archive record by record: `edit` returns the new bytes, or
/// nullopt to drop the record.
void rewriteArchive(const std::string &src, const std::string &dst,
                    const std::function<std::optional<std::string>(const std::string &,
                                                                   const std::string &)> &edit) {
  auto in = ZipReader::open(src);
  ASSERT_TRUE(in.ok()) << diagText(in.diags());
  auto out = ZipWriter::create(dst);
  ASSERT_TRUE(out.ok()) << diagText(out.diags());
  for (const ZipEntry &e : (*in)->entries()) {
    auto bytes = (*in)->read(e);
    ASSERT_TRUE(bytes.ok());
    auto edited = edit(e.name, *bytes);
    if (edited) {
      ASSERT_TRUE((*out)->add(e.name, *edited).ok());
    }
  }
  ASSERT_TRUE((*out)->finish().ok());
}

/// Edits the model JSON of an archive.
void editModelJson(const std::string &src, const std::string &dst,
                   const std::function<void(nlohmann::ordered_json &)> &edit) {
  rewriteArchive(
      src, dst, [&](const std::string &n, const std::string &b) -> std::optional<std::string> {
        if (n.find("models/") == std::string::npos && n != "serialized_exported_program.json")
          return b;
        auto j = nlohmann::ordered_json::parse(b);
        edit(j);
        return j.dump();
      });
}

std::string synthFile(const std::string &name, LlamaSynthOptions o) {
  auto g = synthesizeLlama(o);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : diagText(g.diags()));
  std::string path = tmp(name);
  Status s = writePt2(**g, path, synthWriteOptions(o));
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : diagText(s.diags()));
  return path;
}

std::string tinySynth() {
  static std::string path = [] {
    LlamaSynthOptions o;
    o.layers = 1;
    o.dim = 32;
    o.heads = 2;
    o.vocab = 16;
    o.hidden = 64;
    o.groupSize = 16;
    o.maxSeqLen = 16;
    o.seqLen = 4;
    o.dynamicSeq = true;
    return synthFile("tiny.pt2", o);
  }();
  return path;
}

int runCli(const std::string &args, std::string *err = nullptr, std::string *out = nullptr) {
  std::string errPath = tmp("cli.err"), outPath = tmp("cli.out");
  std::string cmd = std::string(GRAFT_CLI_PATH) + " " + args + " >" +
                    (out ? outPath : std::string("/dev/null")) + " 2>" + errPath;
  int status = std::system(cmd.c_str());
  if (err)
    *err = slurp(errPath);
  if (out)
    *out = slurp(outPath);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool bytesEqual(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes())
    return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.rawData(), cb.rawData(), ca.nbytes()) == 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// ZIP container
//===----------------------------------------------------------------------===//

TEST(Pt2Zip, WriterMatchesPyTorchStreamWriterByteForByte) {
  // tinynet_torch2_9.pt2 was written by torch's own PyTorchStreamWriter:
  // rewriting its records in order with ZipWriter must give the same bytes
  // (alignment padding, data descriptors, ZIP64 end records, central dir).
  std::string src = (kGolden / "tinynet_torch2_9.pt2").string();
  std::string dst = tmp("tinynet_torch2_9.pt2");
  rewriteArchive(src, dst, [](const std::string &, const std::string &b) { return b; });
  EXPECT_EQ(slurp(src), slurp(dst));
}

TEST(Pt2Zip, PayloadsAreAlignedStoredAndDescribedByTheCentralDirectory) {
  auto z = ZipReader::open(tinySynth());
  ASSERT_TRUE(z.ok());
  for (const ZipEntry &e : (*z)->entries()) {
    EXPECT_EQ(e.dataOffset % 64, 0u) << e.name;
    EXPECT_EQ(e.method, 0) << e.name;
    EXPECT_EQ(e.flags, 0x0808) << e.name;
    EXPECT_TRUE((*z)->verifyCrc(e).ok()) << e.name;
  }
}

TEST(Pt2Zip, ReadsZip64ExtraFields) {
  // A central directory whose sizes and offset are saturated and carried in
  // a ZIP64 extra field (as writers must do past 4 GiB).
  auto w = ZipWriter::inMemory();
  ASSERT_TRUE(w->add("a/x", "hello").ok());
  ASSERT_TRUE(w->finish().ok());
  std::string z = w->buffer();
  // Patch the central entry: sizes/offset -> 0xFFFFFFFF plus a ZIP64 extra.
  std::size_t cd = z.find("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  std::string entry = z.substr(cd, 46 + 3);
  std::string rest = z.substr(cd + 46 + 3);
  for (int off : {20, 24, 42})
    entry.replace(static_cast<std::size_t>(off), 4, "\xFF\xFF\xFF\xFF");
  std::string extra = std::string("\x01\x00\x18\x00", 4);
  auto put64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i)
      extra.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  put64(5);
  put64(5);
  put64(0);
  entry[30] = static_cast<char>(extra.size());
  std::string patched = z.substr(0, cd) + entry + extra + rest;
  // Fix the central-directory size in the ZIP64 end record and the EOCD.
  std::size_t e64 = patched.find("PK\x06\x06");
  uint64_t cdSize = e64 - cd;
  for (int i = 0; i < 8; ++i)
    patched[e64 + 40 + static_cast<std::size_t>(i)] = static_cast<char>((cdSize >> (8 * i)) & 0xFF);
  std::size_t loc = patched.find("PK\x06\x07");
  uint64_t e64Off = e64;
  for (int i = 0; i < 8; ++i)
    patched[loc + 8 + static_cast<std::size_t>(i)] = static_cast<char>((e64Off >> (8 * i)) & 0xFF);
  std::size_t eocd = patched.find("PK\x05\x06");
  for (int i = 0; i < 4; ++i)
    patched[eocd + 12 + static_cast<std::size_t>(i)] =
        static_cast<char>((cdSize >> (8 * i)) & 0xFF);
  std::string path = tmp("zip64.zip");
  ASSERT_TRUE(writeFileAtomic(path, patched).ok());
  auto r = ZipReader::open(path);
  ASSERT_TRUE(r.ok()) << diagText(r.diags());
  ASSERT_EQ((*r)->entries().size(), 1u);
  auto bytes = (*r)->read((*r)->entries()[0]);
  ASSERT_TRUE(bytes.ok()) << diagText(bytes.diags());
  EXPECT_EQ(*bytes, "hello");
}

TEST(Pt2Zip, FailedWriteLeavesNothingBehind) {
  fs::path dir = tempDir() / "atomic";
  fs::create_directories(dir);
  {
    auto w = ZipWriter::create((dir / "out.pt2").string());
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->add("out/a", "x").ok());
    // destroyed without finish()
  }
  EXPECT_TRUE(fs::is_empty(dir));
  EXPECT_FALSE(ZipWriter::create((tempDir() / "no_such_dir" / "x.pt2").string()).ok());
}

//===----------------------------------------------------------------------===//
// Reading the fixtures
//===----------------------------------------------------------------------===//

struct FixtureCase {
  const char *file;
  Pt2Layout layout;
  int minor;
};

class Pt2Fixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(Pt2Fixture, ReadsToTheGoldenGraph) {
  const FixtureCase &c = GetParam();
  std::string path = (kGolden / (std::string(c.file) + ".pt2")).string();
  Pt2Program p = readOk(path);
  ASSERT_TRUE(p.graph);
  EXPECT_EQ(p.provenance.layout, c.layout);
  EXPECT_EQ(p.provenance.schemaMajor, 8);
  EXPECT_EQ(p.provenance.schemaMinor, c.minor);
  EXPECT_EQ(text(*p.graph), slurp((kGolden / (std::string(c.file) + ".gir")).string()));
  EXPECT_TRUE(verify(*p.graph).empty());
}

TEST(Pt2Read, TiedAndStridedWeightsShareOneStorage) {
  for (const FixtureCase &c : {FixtureCase{"tinynet_torch2_6_legacy", Pt2Layout::Legacy, 2},
                               FixtureCase{"tinynet_torch2_8", Pt2Layout::PickledWeights, 8},
                               FixtureCase{"tinynet_torch2_9", Pt2Layout::RawWeights, 14}}) {
    SCOPED_TRACE(c.file);
    Pt2Program p = readOk((kGolden / (std::string(c.file) + ".pt2")).string());
    const Graph &g = *p.graph;
    const Tensor &emb = g.findConstant("emb.weight")->data();
    const Tensor &fc = g.findConstant("fc.weight")->data();
    EXPECT_EQ(emb.storage().get(), fc.storage().get()); // tied: one storage
    const Tensor &table = g.findConstant("table")->data();
    const Tensor &row = g.findConstant("row")->data();
    EXPECT_EQ(table.storage().get(), row.storage().get());
    EXPECT_EQ(row.offset(), 4);
    EXPECT_EQ(row.getDouble(0), 4.0);
    const Tensor &proj = g.findConstant("proj.weight")->data();
    EXPECT_EQ(proj.strides(), (std::vector<int64_t>{1, 4})); // a transposed view
    EXPECT_EQ(proj.storage()->size(), 64u);
    // proj = base.t(): logical (0, 1) is base's element (1, 0), storage index 4.
    float base4;
    std::memcpy(&base4, proj.storage()->data() + 16, 4);
    EXPECT_EQ(proj.getDouble(1), base4);
    // PT2 archives are aligned: weights are mapped, never copied.
    if (c.layout != Pt2Layout::Legacy) {
      EXPECT_TRUE(emb.storage()->isMapped());
      EXPECT_EQ(p.provenance.weightFileOffsets.at("emb.weight") % 64, 0u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, Pt2Fixture,
    ::testing::Values(FixtureCase{"tinynet_torch2_6_legacy", Pt2Layout::Legacy, 2},
                      FixtureCase{"tinynet_torch2_7_legacy", Pt2Layout::Legacy, 7},
                      FixtureCase{"tinynet_torch2_8", Pt2Layout::PickledWeights, 8},
                      FixtureCase{"tinynet_torch2_9", Pt2Layout::RawWeights, 14},
                      FixtureCase{"intx_subclass_torch2_10", Pt2Layout::RawWeights, 15}),
    [](const auto &info) { return std::string(info.param.file); });

// ExecuTorch's Llama with a dynamic position, as torch.export writes
// Rope.get_freqs (examples/models/llama/rope.py): input_pos[-1].item() ->
// sym_constrain_range_for_size -> narrow(0, u0, 8), i.e. slice_copy(freqs,
// 0, u0, add) with `add` = u0 + 8 in sym_int_values and range_constraints
// keyed by u0. The fixture is `graft synth llama --dynamic-pos` (see
// generate_fixtures.py); its JSON follows serialize.py (srepr expressions).
TEST(Pt2Read, DynamicPositionNarrow) {
  const std::string path = (kGolden / "llama_dynamic_pos_torch2_10.pt2").string();
  Pt2Program p = readOk(path);
  ASSERT_TRUE(p.graph);
  const Graph &g = *p.graph;
  EXPECT_TRUE(verify(g).empty()) << diagText(verify(g));
  // u0 is renamed after its defining value; add's Dim is u0 + 8.
  const SymbolRange *u0 = g.symbols().find("_local_scalar_dense");
  ASSERT_NE(u0, nullptr);
  EXPECT_EQ(*u0, (SymbolRange{0, 56}));
  const Value *add = g.findValue("add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(dimOfSymInt(*add), Dim::symbol("_local_scalar_dense") + Dim(8));
  EXPECT_EQ(g.findValue("slice_copy")->proto().str(), "f32[8, 8]");

  // The archive spells what upstream's serializer does.
  nlohmann::json j;
  editModelJson(path, tmp("dynpos_probe.pt2"), [&](auto &m) { j = m; });
  const auto &sym = j["graph_module"]["graph"]["sym_int_values"];
  EXPECT_EQ(sym["add"]["as_expr"]["expr_str"], "Add(Symbol('u0', integer=True), Integer(8))");
  EXPECT_EQ(sym["_local_scalar_dense"]["as_expr"]["expr_str"], "Symbol('u0', integer=True)");
  EXPECT_FALSE(sym["add"]["as_expr"].contains("hint")); // unbacked: no hint
  EXPECT_TRUE(j["range_constraints"].contains("u0"));
  bool addNode = false;
  for (const auto &n : j["graph_module"]["graph"]["nodes"])
    addNode = addNode || n["target"] == "_operator.add";
  EXPECT_TRUE(addNode);

  // Older torch wrote sympy's str() instead of srepr(): the same graph.
  std::string str = tmp("dynpos_str.pt2");
  editModelJson(path, str, [](auto &m) {
    auto &v = m["graph_module"]["graph"]["sym_int_values"];
    v["add"]["as_expr"]["expr_str"] = "u0 + 8";
    v["_local_scalar_dense"]["as_expr"]["expr_str"] = "u0";
  });
  Pt2Program q = readOk(str);
  ASSERT_TRUE(q.graph);
  EXPECT_EQ(text(*q.graph, tmp("dp_q.bin")), text(g, tmp("dp_g.bin")));

  // Written back, it reads the same (the add's expression included).
  std::string again = tmp("dynpos_again.pt2");
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(g, again, wo).ok());
  Pt2Program r = readOk(again);
  ASSERT_TRUE(r.graph);
  EXPECT_EQ(text(*r.graph, tmp("dp_r.bin")), text(g, tmp("dp_g.bin")));
}

TEST(Pt2Read, MappingFollowsTheExportSchema) {
  Pt2Program p = readOk((kGolden / "tinynet_torch2_9.pt2").string());
  const Graph &g = *p.graph;
  // Signature: kinds, FQNs, persistence, order.
  ASSERT_EQ(g.inputs().size(), 10u);
  EXPECT_EQ(g.inputs()[0].kind, InputKind::Parameter);
  EXPECT_EQ(g.inputs()[0].fqn, "emb.weight");
  EXPECT_EQ(g.inputs()[7].kind, InputKind::Buffer);
  EXPECT_FALSE(g.inputs()[7].persistent);
  EXPECT_EQ(g.inputs()[8].kind, InputKind::ConstantTensor);
  EXPECT_EQ(g.inputs()[8].fqn, "lifted_tensor_0");
  EXPECT_EQ(g.inputs()[9].kind, InputKind::UserInput);
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0].kind, OutputKind::BufferMutation);
  EXPECT_EQ(g.outputs()[0].target, "cache");
  // Symbols and range constraints.
  ASSERT_NE(g.symbols().find("s0"), nullptr);
  EXPECT_EQ(*g.symbols().find("s0"), (SymbolRange{2, 16}));
  // Node targets, opaque ops, metadata verbatim and in order.
  const Node *scaleShift = nullptr, *embedding = nullptr;
  for (const Node &n : g.nodes()) {
    if (n.target() == "mylib.scale_shift.default")
      scaleShift = &n;
    if (n.target() == "aten.embedding.default")
      embedding = &n;
  }
  ASSERT_TRUE(scaleShift && embedding);
  EXPECT_EQ(scaleShift->schema(), nullptr);
  ASSERT_NE(embedding->schema(), nullptr);
  ASSERT_EQ(embedding->metadata().size(), 4u);
  EXPECT_EQ(embedding->metadata()[0].first, "stack_trace");
  EXPECT_EQ(embedding->metadata()[3].second, "embedding_1;function.embedding");
}

TEST(Pt2Read, FillsOmittedDefaultsWhenAsked) {
  Pt2ReadOptions o;
  o.fillDefaults = true;
  Pt2Program p = readOk((kGolden / "tinynet_torch2_9.pt2").string(), o);
  for (const Node &n : p.graph->nodes()) {
    if (n.target() == "aten.embedding.default") {
      ASSERT_EQ(n.args().size(), 5u); // padding_idx, scale_grad_by_freq, sparse
      EXPECT_EQ(n.args()[2], Argument(int64_t(-1)));
      EXPECT_EQ(n.args()[4], Argument(false));
    }
    if (n.target() == "aten.mul.Tensor") {
      EXPECT_EQ(n.args().size(), 2u);
    }
    if (n.target() == "aten.add.Tensor" && n.name() == "add") {
      ASSERT_NE(n.kwarg("alpha"), nullptr); // keyword-only: a keyword argument
    }
    EXPECT_TRUE(verify(*p.graph).empty());
  }
}

TEST(Pt2Read, TorchaoSubclassWeightsDecodeToPlainInnerTensors) {
  // Read as written (no unwrapping): one data-free subclass placeholder.
  Pt2ReadOptions keep;
  keep.unwrapSubclassWeights = false;
  Pt2Program p = readOk((kGolden / "intx_subclass_torch2_10.pt2").string(), keep);
  ASSERT_EQ(p.provenance.subclassWeights.size(), 1u);
  const Pt2SubclassWeight &w = p.provenance.subclassWeights[0];
  EXPECT_EQ(w.fqn, "linear.weight");
  EXPECT_EQ(w.className, "torchao.quantization.IntxUnpackedToInt8Tensor");
  EXPECT_TRUE(w.innerFqns.empty());
  ASSERT_EQ(w.tensors.size(), 3u);
  EXPECT_EQ(w.tensors[0].first, "qdata");
  EXPECT_EQ(w.tensors[0].second.dtype(), DType::I8);
  EXPECT_EQ(w.tensors[0].second.sizes(), (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(w.tensors[0].second.storage()->isMapped()); // straight from the archive
  EXPECT_EQ(w.tensors[1].first, "scale");
  EXPECT_EQ(w.tensors[2].first, "zero_point");
  for (int64_t i = 0; i < 32; ++i) {
    int64_t q = w.tensors[0].second.getInt(i);
    EXPECT_TRUE(q >= -8 && q <= 7);
  }
  bool sawTarget = false;
  for (const auto &[k, v] : w.attributes)
    if (k == "target_dtype") {
      EXPECT_EQ(v, "torch.int4");
      sawTarget = true;
    }
  EXPECT_TRUE(sawTarget);
  const GraphInput *in = p.graph->findConstant("linear.weight");
  ASSERT_TRUE(in && in->value->proto().quant);
  EXPECT_FALSE(in->hasData());
  // Written back, the subclass travels as the same pickle bytes.
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("subclass_rt.pt2"), wo).ok());
  Pt2Program q = readOk(tmp("subclass_rt.pt2"), keep);
  ASSERT_EQ(q.provenance.subclassWeights.size(), 1u);
  const Storage &a = *w.pickleBytes, &b = *q.provenance.subclassWeights[0].pickleBytes;
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0);
  EXPECT_EQ(text(*q.graph), text(*p.graph));
}

// pytorch/ao 36027d82's IntxUnpackedToInt8Tensor holds `activation_quantization`; an
// instance built with the str enum member (IntxUnpackedToInt8TensorActivationQuantization,
// registered with add_safe_globals next to the tensor) pickles it as
// __builtin__.getattr(enum class, "INT8_ASYM_PER_TOKEN") (real torch.save output,
// generate_fixtures.py). It reads as the member's value, the string quant_api passes, and
// the weight unwraps to the same graph as the fixture without it.
TEST(Pt2Read, TorchaoActivationQuantizationEnumReadsAsItsValue) {
  Pt2ReadOptions keep;
  keep.unwrapSubclassWeights = false;
  Pt2Program p = readOk((kGolden / "intx_subclass_act_enum_torch2_10.pt2").string(), keep);
  ASSERT_EQ(p.provenance.subclassWeights.size(), 1u);
  bool saw = false;
  for (const auto &[k, v] : p.provenance.subclassWeights[0].attributes)
    if (k == "activation_quantization") {
      EXPECT_EQ(v, "'int8_asym_per_token'");
      saw = true;
    }
  EXPECT_TRUE(saw);
  auto graphText = [](const std::string &fixture) {
    std::string t = text(*readOk((kGolden / (fixture + ".pt2")).string()).graph);
    // The file references (offset, name) differ; the graphs must not.
    return std::regex_replace(t, std::regex(R"(file\([^)]*\))"), "file(...)");
  };
  EXPECT_EQ(graphText("intx_subclass_act_enum_torch2_10"), graphText("intx_subclass_torch2_10"));
}

TEST(Pt2Read, SubclassInnerTensorsBecomePlainMappedConstants) {
  // By default the subclass is unwrapped the way torch's run_decompositions
  // does it: one parameter per inner tensor, named
  // <module>.parametrizations.<name>.original<i> in __tensor_flatten__ order,
  // and the access_subclass_inner_tensor nodes read those parameters.
  const std::string path = (kGolden / "intx_subclass_torch2_10.pt2").string();
  Pt2Program p = readOk(path);
  ASSERT_TRUE(p.graph);
  const Graph &g = *p.graph;
  EXPECT_EQ(g.findConstant("linear.weight"), nullptr);
  ASSERT_EQ(p.provenance.subclassWeights.size(), 1u);
  const Pt2SubclassWeight &w = p.provenance.subclassWeights[0];
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"qdata", "linear.parametrizations.weight.original0"},
      {"scale", "linear.parametrizations.weight.original1"},
      {"zero_point", "linear.parametrizations.weight.original2"}};
  EXPECT_EQ(w.innerFqns, expected);
  const std::string file = slurp(path);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].second);
    const GraphInput *in = g.findConstant(expected[i].second);
    ASSERT_NE(in, nullptr);
    EXPECT_EQ(in->kind, InputKind::Parameter);
    EXPECT_FALSE(in->value->proto().quant);
    ASSERT_TRUE(in->hasData());
    const Tensor &t = in->data();
    // The pickle's own storage, mapped from the archive: nothing was copied.
    EXPECT_EQ(t.storage().get(), w.tensors[i].second.storage().get());
    EXPECT_TRUE(t.storage()->isMapped());
    uint64_t off = p.provenance.weightFileOffsets.at(expected[i].second);
    ASSERT_LE(off + t.nbytes(), file.size());
    EXPECT_EQ(std::memcmp(file.data() + off, t.rawData(), t.nbytes()), 0);
  }
  const GraphInput *qdata = g.findConstant(expected[0].second);
  EXPECT_EQ(qdata->value->name(), "p_linear_parametrizations_weight_original0");
  EXPECT_EQ(qdata->value->proto().dtype, DType::I8);
  EXPECT_EQ(g.findConstant(expected[1].second)->value->proto().dtype, DType::F32);
  // No access node is left; the dequantize reads the parameters directly.
  const Node *dq = nullptr;
  for (const Node &n : g.nodes()) {
    EXPECT_NE(n.target(), "export.access_subclass_inner_tensor.default");
    if (n.target() == "torchao.dequantize_affine.default")
      dq = &n;
  }
  ASSERT_NE(dq, nullptr);
  ASSERT_GE(dq->args().size(), 4u);
  EXPECT_EQ(dq->args()[0], Argument(qdata->value));
  EXPECT_EQ(dq->args()[2], Argument(g.findConstant(expected[1].second)->value));
  EXPECT_EQ(dq->args()[3], Argument(g.findConstant(expected[2].second)->value));
  EXPECT_TRUE(verify(g).empty());

  // Written back: the inner tensors are plain weights, and read back the
  // same graph and bytes (no subclass left to unwrap).
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  Status s = writePt2(g, tmp("subclass_unwrapped.pt2"), wo);
  ASSERT_TRUE(s.ok()) << diagText(s.diags());
  Pt2Program q = readOk(tmp("subclass_unwrapped.pt2"));
  EXPECT_TRUE(q.provenance.subclassWeights.empty());
  EXPECT_EQ(text(*q.graph), text(g));
  for (const auto &[attr, fqn] : expected)
    EXPECT_TRUE(bytesEqual(g.findConstant(fqn)->data(), q.graph->findConstant(fqn)->data())) << fqn;
}

TEST(Pt2Read, SubclassAccessErrorsNameTheWeight) {
  // An attribute the subclass does not have.
  std::string bad = tmp("subclass_bad_attr.pt2");
  editModelJson((kGolden / "intx_subclass_torch2_10.pt2").string(), bad, [](auto &j) {
    j["graph_module"]["graph"]["nodes"][1]["inputs"][1]["arg"]["as_string"] = "scales";
  });
  std::string e = errorOf(readPt2(bad));
  EXPECT_NE(e.find("'scales' of weight 'linear.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("qdata, scale, zero_point"), std::string::npos) << e;
  // A graph that uses the subclass itself keeps it (nothing to unwrap into).
  std::string direct = tmp("subclass_direct_use.pt2");
  editModelJson((kGolden / "intx_subclass_torch2_10.pt2").string(), direct, [](auto &j) {
    auto &nodes = j["graph_module"]["graph"]["nodes"];
    nodes[4]["inputs"][1]["arg"]["as_tensor"]["name"] = "p_linear_weight";
  });
  Pt2Program p = readOk(direct);
  ASSERT_TRUE(p.graph);
  EXPECT_NE(p.graph->findConstant("linear.weight"), nullptr);
  EXPECT_EQ(p.graph->findConstant("linear.parametrizations.weight.original0"), nullptr);
  ASSERT_EQ(p.provenance.subclassWeights.size(), 1u);
  EXPECT_TRUE(p.provenance.subclassWeights[0].innerFqns.empty());
}

TEST(Pt2Cli, SubclassWeightsFuseIntoOneVulkanPartition) {
  // The post-#18957 form compiles like the parametrizations.weight.originalN
  // form: the 4w linear rule fires once, one partition, no CPU node, and the
  // weight bytes are loaded.
  const std::string path = (kGolden / "intx_subclass_torch2_10.pt2").string();
  const std::string prog = tmp("subclass.vkprog");
  std::string out, err;
  ASSERT_EQ(runCli("compile " + path + " -o " + prog + " --json --quiet", &err, &out), 0) << err;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["partitions"], 1) << out;
  EXPECT_EQ(j["cpu_nodes"], 0) << out;
  EXPECT_EQ(j["rules_fired"].value("torchao_linear_q4gsw", 0), 1) << out;
  EXPECT_GT(j["constant_bytes_in"].get<int64_t>(), 0) << out;
  EXPECT_EQ(runCli("run " + prog + " --check --atol 1e-4", &err), 0) << err;
}

TEST(Pt2Read, FixturesRoundTripThroughTheWriter) {
  // Every layout is written back as a torch >= 2.9 archive and reads back
  // to the same graph (opaque op argument names, Python sym ops, sym bools,
  // buffer mutations, strided and offset views survive).
  for (const char *f : {"tinynet_torch2_6_legacy", "tinynet_torch2_7_legacy", "tinynet_torch2_8",
                        "tinynet_torch2_9"}) {
    SCOPED_TRACE(f);
    Pt2Program p = readOk((kGolden / (std::string(f) + ".pt2")).string());
    Pt2WriteOptions wo;
    wo.provenance = &p.provenance;
    std::string out = tmp(std::string(f) + "_rt.pt2");
    Status s = writePt2(*p.graph, out, wo);
    ASSERT_TRUE(s.ok()) << diagText(s.diags());
    Pt2Program q = readOk(out);
    EXPECT_EQ(q.provenance.layout, Pt2Layout::RawWeights);
    EXPECT_EQ(text(*q.graph), text(*p.graph));
    for (const GraphInput &in : p.graph->inputs())
      if (in.isConstant()) {
        EXPECT_TRUE(bytesEqual(in.data(), q.graph->findConstant(in.fqn)->data())) << in.fqn;
      }
    // Tied weights are written once.
    EXPECT_EQ(q.graph->findConstant("emb.weight")->data().storage().get(),
              q.graph->findConstant("fc.weight")->data().storage().get());
  }
  // The opaque op and the Python sym op keep their argument names.
  Pt2Program p = readOk((kGolden / "tinynet_torch2_9.pt2").string());
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("names.pt2"), wo).ok());
  auto z = ZipReader::open(tmp("names.pt2"));
  ASSERT_TRUE(z.ok());
  auto json = nlohmann::json::parse(*(*z)->read(*(*z)->find("names/models/model.json")));
  for (const auto &n : json["graph_module"]["graph"]["nodes"]) {
    if (n["target"] == "torch.ops.mylib.scale_shift.default") {
      EXPECT_EQ(n["inputs"][0]["name"], "x");
      EXPECT_EQ(n["inputs"][1]["name"], "factor");
    }
    if (n["target"] == "_operator.mul") {
      EXPECT_EQ(n["inputs"][0]["name"], "a");
      EXPECT_EQ(n["inputs"][0]["arg"]["as_sym_int"]["as_name"], "sym_size_int");
    }
  }
}

TEST(Pt2Read, SymbolicExpressionsInBothSympySpellings) {
  // Old exporters wrote str(expr), new ones srepr(expr); non-linear sizes
  // stay opaque and are written back verbatim.
  std::string out = tmp("sym_spellings.pt2");
  editModelJson((kGolden / "tinynet_torch2_9.pt2").string(), out, [](auto &j) {
    auto &tv = j["graph_module"]["graph"]["tensor_values"];
    tv["tokens"]["sizes"][1] = {{"as_expr", {{"expr_str", "s0"}}}};
    tv["embedding"]["sizes"][1] = {{"as_expr", {{"expr_str", "s0"}}}};
    tv["mul"]["sizes"][1] = {
        {"as_expr",
         {{"expr_str",
           "FloorDiv(Mul(Integer(2), Symbol('s0', integer=True, positive=True)), Integer(2))"}}}};
    tv["add_1"]["strides"][0] = {{"as_expr", {{"expr_str", "4*s0"}}}};
    tv["linear"]["sizes"][1] = {
        {"as_expr", {{"expr_str", "Max(1, Symbol('s0', integer=True, positive=True))"}}}};
  });
  Pt2Program p = readOk(out);
  const Graph &g = *p.graph;
  EXPECT_EQ(g.findValue("tokens")->proto().shape[1], Dim::symbol("s0"));
  EXPECT_EQ(g.findValue("mul")->proto().shape[1], Dim::symbol("s0")); // 2*s0 // 2 folds
  EXPECT_TRUE(g.findValue("linear")->proto().shape[1].isOpaque());
  EXPECT_EQ(g.findValue("linear")->proto().shape[1].str(), "Max(1, s0)");
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(g, tmp("sym_rt.pt2"), wo).ok());
  auto z = ZipReader::open(tmp("sym_rt.pt2"));
  auto json = nlohmann::json::parse(*(*z)->read(*(*z)->find("sym_rt/models/model.json")));
  EXPECT_EQ(
      json["graph_module"]["graph"]["tensor_values"]["linear"]["sizes"][1]["as_expr"]["expr_str"],
      "Max(1, Symbol('s0', integer=True, positive=True))");
  EXPECT_EQ(
      json["graph_module"]["graph"]["tensor_values"]["tokens"]["sizes"][1]["as_expr"]["expr_str"],
      "Symbol('s0', integer=True, positive=True)");
  Pt2Program q = readOk(tmp("sym_rt.pt2"));
  EXPECT_EQ(text(*q.graph), text(g));
}

TEST(Pt2Read, EveryArgumentUnionMemberMaps) {
  std::string out = tmp("args.pt2");
  editModelJson((kGolden / "tinynet_torch2_9.pt2").string(), out, [](auto &j) {
    // A node after every value it uses, of an op graft does not know.
    auto &graph = j["graph_module"]["graph"];
    graph["tensor_values"]["probe"] = graph["tensor_values"]["add_2"];
    graph["nodes"].push_back({{"target", "torch.ops.mylib.probe.default"},
                              {"inputs", nlohmann::ordered_json::array()},
                              {"outputs", {{{"as_tensor", {{"name", "probe"}}}}}},
                              {"metadata", nlohmann::ordered_json::object()}});
    {
      auto &n = graph["nodes"].back();
      {
        auto arg = [&](const char *name, nlohmann::ordered_json a) {
          n["inputs"].push_back({{"name", name}, {"arg", a}, {"kind", 2}});
        };
        arg("none", {{"as_none", true}});
        arg("tensors", {{"as_tensors", {{{"name", "linear"}}, {{"name", "add"}}}}});
        arg("ints", {{"as_ints", {1, 2}}});
        arg("floats", {{"as_floats", {0.5, "Infinity"}}});
        arg("string", {{"as_string", "s"}});
        arg("strings", {{"as_strings", {"a", "b"}}});
        arg("symint", {{"as_sym_int", {{"as_name", "sym_size_int"}}}});
        arg("symints", {{"as_sym_ints", {{{"as_name", "sym_size_int"}}, {{"as_int", 3}}}}});
        arg("dtype", {{"as_scalar_type", 13}});
        arg("memfmt", {{"as_memory_format", 2}});
        arg("layout", {{"as_layout", 7}});
        arg("device", {{"as_device", {{"type", "cuda"}, {"index", 1}}}});
        arg("flag", {{"as_bool", true}});
        arg("flags", {{"as_bools", {true, false}}});
        arg("symbool", {{"as_sym_bool", {{"as_name", "ge"}}}});
        arg("symbools", {{"as_sym_bools", {{{"as_name", "ge"}}, {{"as_bool", false}}}}});
        arg("opt", {{"as_optional_tensor", {{"as_tensor", {{"name", "add"}}}}}});
        arg("opts",
            {{"as_optional_tensors", {{{"as_none", true}}, {{"as_tensor", {{"name", "add"}}}}}}});
        arg("intlists", {{"as_int_lists", {{1, 2}, {3}}}});
        arg("nested", {{"as_nested_tensors", {{{{"name", "add"}}}}}});
        arg("op", {{"as_operator", "torch.ops.aten.add.Tensor"}});
      }
    }
  });
  auto p = readPt2(out);
  // as_operator must be positional: the reader says so.
  ASSERT_FALSE(p.ok());
  EXPECT_NE(diagText(p.diags()).find("operator arguments must be positional"), std::string::npos);
  editModelJson(out, tmp("args2.pt2"), [](auto &j) {
    auto &n = j["graph_module"]["graph"]["nodes"].back();
    n["inputs"].erase(n["inputs"].size() - 1);
  });
  Pt2Program q = readOk(tmp("args2.pt2"));
  const Node *n = nullptr;
  for (const Node &x : q.graph->nodes())
    if (x.target() == "mylib.probe.default")
      n = &x;
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->kwarg("none")->isNone());
  EXPECT_EQ(n->kwarg("tensors")->list().size(), 2u);
  EXPECT_TRUE(std::isinf(n->kwarg("floats")->list()[1].floating()));
  EXPECT_EQ(n->kwarg("dtype")->dtype(), DType::BF16); // export numbering: 13 is bfloat16
  EXPECT_EQ(n->kwarg("memfmt")->memoryFormat(), MemoryFormat::ChannelsLast);
  EXPECT_EQ(n->kwarg("device")->device(), (Device{"cuda", 1}));
  EXPECT_EQ(n->kwarg("symbools")->list()[0].value()->kind(), ValueKind::SymBool);
  EXPECT_TRUE(n->kwarg("opts")->list()[0].isNone());
  EXPECT_EQ(n->kwarg("intlists")->list()[1].list().size(), 1u);
  // And every one is written back with the same union member.
  Pt2WriteOptions wo;
  wo.provenance = &q.provenance;
  ASSERT_TRUE(writePt2(*q.graph, tmp("args_rt.pt2"), wo).ok());
  Pt2Program r = readOk(tmp("args_rt.pt2"));
  EXPECT_EQ(text(*r.graph), text(*q.graph));
  auto z = ZipReader::open(tmp("args_rt.pt2"));
  auto json = nlohmann::json::parse(*(*z)->read(*(*z)->find("args_rt/models/model.json")));
  for (const auto &node : json["graph_module"]["graph"]["nodes"])
    if (node["target"] == "torch.ops.mylib.probe.default")
      for (const auto &a : node["inputs"]) {
        std::string key = a["arg"].begin().key();
        if (a["name"] == "symints") {
          EXPECT_EQ(key, "as_sym_ints");
        }
        if (a["name"] == "opts") {
          EXPECT_EQ(key, "as_optional_tensors");
        }
        if (a["name"] == "intlists") {
          EXPECT_EQ(key, "as_int_lists");
        }
        if (a["name"] == "nested") {
          EXPECT_EQ(key, "as_nested_tensors");
        }
        if (a["name"] == "dtype") {
          EXPECT_EQ(a["arg"]["as_scalar_type"], 13);
        }
        if (a["name"] == "floats") {
          EXPECT_EQ(a["arg"]["as_floats"][1], "Infinity");
        }
      }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

TEST(Pt2Write, FollowsTheSchemaAndTheArchiveLayout) {
  auto z = ZipReader::open(tinySynth());
  ASSERT_TRUE(z.ok());
  std::vector<std::string> names;
  for (const ZipEntry &e : (*z)->entries())
    names.push_back(e.name);
  ASSERT_GE(names.size(), 10u);
  EXPECT_EQ(names.back(), "tiny/.data/serialization_id");
  EXPECT_EQ(*(*z)->read(*(*z)->find("tiny/archive_format")), "pt2");
  EXPECT_EQ(*(*z)->read(*(*z)->find("tiny/archive_version")), "0");
  EXPECT_EQ(*(*z)->read(*(*z)->find("tiny/.data/version")), "6\n");
  EXPECT_EQ(*(*z)->read(*(*z)->find("tiny/byteorder")), "little");
  EXPECT_EQ((*z)->read(*(*z)->find("tiny/.data/serialization_id"))->size(), 40u);
  ASSERT_NE((*z)->find("tiny/data/sample_inputs/model.pt"), nullptr);
  std::string modelText = *(*z)->read(*(*z)->find("tiny/models/model.json"));
  // Python's json.dumps formatting.
  EXPECT_EQ(modelText.rfind("{\"graph_module\": {\"graph\": {\"inputs\": [", 0), 0u);
  auto j = nlohmann::json::parse(modelText);
  EXPECT_EQ(j["schema_version"]["major"], 8);
  EXPECT_EQ(j["schema_version"]["minor"], kPt2SchemaMinor);
  for (const char *k :
       {"opset_version", "range_constraints", "verifiers", "torch_version", "guards_code"})
    EXPECT_TRUE(j.contains(k)) << k;
  const auto &g = j["graph_module"]["graph"];
  for (const char *k :
       {"inputs", "outputs", "nodes", "tensor_values", "sym_int_values", "sym_bool_values",
        "is_single_tensor_return", "custom_obj_values", "sym_float_values"})
    EXPECT_TRUE(g.contains(k)) << k;
  for (const auto &n : g["nodes"]) {
    std::string target = n["target"];
    // Python sym ops (the narrow end u0 + s0) are spelled like torch.fx's builtins.
    EXPECT_TRUE(target.rfind("torch.ops.", 0) == 0 || target.rfind("_operator.", 0) == 0) << target;
    for (const auto &a : n["inputs"]) {
      EXPECT_TRUE(a["kind"] == 1 || a["kind"] == 2);
      EXPECT_EQ(a["arg"].size(), 1u); // single-key unions
    }
  }
  EXPECT_EQ(g["tensor_values"]["tokens"]["dtype"], 5); // LONG: export numbering
  EXPECT_EQ(g["tensor_values"]["tokens"]["device"], nlohmann::json({{"type", "cpu"}}));
  EXPECT_EQ(j["range_constraints"]["s0"], nlohmann::json({{"min_val", 1}, {"max_val", 16}}));
  EXPECT_EQ(j["range_constraints"]["u0"], nlohmann::json({{"min_val", 0}, {"max_val", 15}}));
  EXPECT_EQ(g["sym_int_values"]["_local_scalar_dense"]["as_expr"]["expr_str"],
            "Symbol('u0', integer=True)");
  EXPECT_EQ(g["sym_int_values"]["sym_size_int"]["as_expr"]["hint"]["as_int"], 4);
  auto cfg = nlohmann::json::parse(
      *(*z)->read(*(*z)->find("tiny/data/weights/model_weights_config.json")));
  const auto &meta = cfg["config"]["layers.0.attention.wq.parametrizations.weight.original0"];
  EXPECT_EQ(meta["is_param"], true);
  EXPECT_EQ(meta["use_pickle"], false);
  EXPECT_EQ(meta["tensor_meta"]["dtype"], 2); // CHAR = int8
  auto ccfg = nlohmann::json::parse(
      *(*z)->read(*(*z)->find("tiny/data/constants/model_constants_config.json")));
  EXPECT_TRUE(ccfg["config"].contains("freqs_cos")); // non-persistent buffers are constants
}

TEST(Pt2Write, WritingIsAtomic) {
  // A graph whose constant data disagrees with its type fails after the
  // archive was started: nothing may be left behind.
  fs::path dir = tempDir() / "atomic2";
  fs::create_directories(dir);
  Graph g;
  Value *w = g.addInput(InputKind::Parameter, "p_w", TensorProto(DType::F32, {4}), "w");
  g.inputs().back().setData(Tensor::empty(DType::F32, {5}), ExternalData{});
  g.addOutput(w);
  std::string path = (dir / "bad.pt2").string();
  Status s = writePt2(g, path);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(diagText(s.diags()).find("weight 'w'"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST(Pt2Write, StreamedRandomWeightsMatchGenerateRandom) {
  // The writer streams random() integer constants without materializing
  // them; the bytes must be exactly generateRandom's.
  Graph g;
  struct Case {
    DType dt;
    double lo, hi;
  } cases[] = {{DType::I8, -8, 7},        {DType::I8, -127, 127}, {DType::U8, 0, 255},
               {DType::I16, -1000, 1000}, {DType::I32, -5, 5},    {DType::I64, 0, 1e9}};
  int i = 0;
  for (const Case &c : cases) {
    g.addInput(InputKind::Parameter, "p" + std::to_string(i), TensorProto(c.dt, {3, 7}),
               "w" + std::to_string(i));
    g.inputs().back().init = RandomInit{static_cast<uint64_t>(100 + i), c.lo, c.hi};
    ++i;
  }
  g.addOutput(g.inputs()[0].value);
  Status s = writePt2(g, tmp("streamed.pt2"));
  ASSERT_TRUE(s.ok()) << diagText(s.diags());
  Pt2Program p = readOk(tmp("streamed.pt2"));
  for (const GraphInput &in : g.inputs()) {
    Tensor expect = generateRandom(in.value->proto(), std::get<RandomInit>(*in.init));
    EXPECT_TRUE(bytesEqual(expect, p.graph->findConstant(in.fqn)->data())) << in.fqn;
  }
}

//===----------------------------------------------------------------------===//
// Synthesizer round trips
//===----------------------------------------------------------------------===//

struct SynthCase {
  SynthQuant quant;
  bool dynamic;
  bool tied;
  DType dtype;
  SynthKvCache kv = SynthKvCache::None;
  int embeddingBits = 0; ///< -E BITS,16 (8: per row, -E 8,0)
};

// Without it, gtest prints a case as its raw bytes, padding included
// (uninitialised memory to valgrind).
void PrintTo(const SynthCase &c, std::ostream *os) {
  *os << name(c.quant) << (c.dynamic ? " dynamic" : "") << (c.tied ? " tied" : "") << " "
      << name(c.dtype) << (c.kv != SynthKvCache::None ? " kv-" + std::string(name(c.kv)) : "")
      << (c.embeddingBits ? " E" + std::to_string(c.embeddingBits) : "");
}

class Pt2RoundTrip : public ::testing::TestWithParam<SynthCase> {};

TEST_P(Pt2RoundTrip, SynthReadWriteReadIsIdentical) {
  const SynthCase &c = GetParam();
  LlamaSynthOptions o;
  o.layers = 2;
  o.dim = 32;
  o.heads = 4;
  o.kvHeads = 2;
  o.vocab = 24;
  o.hidden = 64;
  o.groupSize = 16;
  o.maxSeqLen = 16;
  o.seqLen = 5;
  o.quant = c.quant;
  o.dynamicSeq = c.dynamic;
  o.tiedEmbeddings = c.tied;
  o.checkpointDType = c.dtype;
  o.dtype = c.dtype;
  o.kvCache = c.kv;
  o.embeddingQuant = {c.embeddingBits, c.embeddingBits == 8 ? 0 : 16};
  auto synth = synthesizeLlama(o);
  ASSERT_TRUE(synth.ok()) << diagText(synth.diags());
  EXPECT_TRUE(verify(**synth).empty()) << diagText(verify(**synth));
  std::string stem = std::string(name(c.quant)) + (c.dynamic ? "_dyn" : "") +
                     (c.tied ? "_tied" : "") + "_kv" + std::string(name(c.kv)) + "_E" +
                     std::to_string(c.embeddingBits) + std::string(name(c.dtype));
  std::string a = tmp(stem + "_a.pt2"), b = tmp(stem + "_b.pt2");
  ASSERT_TRUE(writePt2(**synth, a, synthWriteOptions(o)).ok());

  Pt2Program r1 = readOk(a);
  ASSERT_TRUE(r1.graph);
  EXPECT_TRUE(verify(*r1.graph).empty()) << diagText(verify(*r1.graph));
  // synth -> read: the same graph, and each FQN holds the generated bytes.
  EXPECT_EQ(structure(*r1.graph), structure(**synth));
  for (const GraphInput &in : (*synth)->inputs())
    if (in.isConstant()) {
      EXPECT_TRUE(bytesEqual(in.data(), r1.graph->findConstant(in.fqn)->data())) << in.fqn;
    }

  Pt2WriteOptions wo;
  wo.provenance = &r1.provenance;
  Status s = writePt2(*r1.graph, b, wo);
  ASSERT_TRUE(s.ok()) << diagText(s.diags());
  Pt2Program r2 = readOk(b);
  ASSERT_TRUE(r2.graph);
  // read -> write -> read: identical text (weights spilled to data files) ...
  std::string binA = tmp(stem + "_a.bin"), binB = tmp(stem + "_b.bin");
  EXPECT_EQ(text(*r2.graph, binB), text(*r1.graph, binA));
  EXPECT_EQ(slurp(binA), slurp(binB));
  // ... identical bytes per FQN ...
  for (const GraphInput &in : r1.graph->inputs())
    if (in.isConstant()) {
      EXPECT_TRUE(bytesEqual(in.data(), r2.graph->findConstant(in.fqn)->data())) << in.fqn;
    }
  // ... and every record of the rewritten archive equals the original's.
  auto za = ZipReader::open(a), zb = ZipReader::open(b);
  ASSERT_EQ((*za)->entries().size(), (*zb)->entries().size());
  for (std::size_t i = 0; i < (*za)->entries().size(); ++i) {
    const ZipEntry &ea = (*za)->entries()[i], &eb = (*zb)->entries()[i];
    std::string na = ea.name.substr(ea.name.find('/')), nb = eb.name.substr(eb.name.find('/'));
    EXPECT_EQ(na, nb);
    if (na != "/.data/serialization_id") {
      EXPECT_EQ(ea.crc32, eb.crc32) << na;
    }
  }
  if (c.tied) {
    const char *emb = c.quant == SynthQuant::None || c.quant == SynthQuant::QatW4
                          ? "tok_embeddings.weight"
                          : "tok_embeddings.parametrizations.weight.original0";
    const char *out = c.quant == SynthQuant::None || c.quant == SynthQuant::QatW4
                          ? "output.weight"
                          : "output.parametrizations.weight.original0";
    EXPECT_EQ(r2.graph->findConstant(emb)->data().storage().get(),
              r2.graph->findConstant(out)->data().storage().get());
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllQuantModes, Pt2RoundTrip,
    ::testing::Values(SynthCase{SynthQuant::None, false, false, DType::F32},
                      SynthCase{SynthQuant::W4, false, false, DType::F32},
                      SynthCase{SynthQuant::W8A8W4, false, false, DType::F32},
                      SynthCase{SynthQuant::Pt2eW8, false, false, DType::F32},
                      SynthCase{SynthQuant::QatW4, false, false, DType::F32},
                      SynthCase{SynthQuant::None, true, true, DType::BF16},
                      SynthCase{SynthQuant::W4, true, true, DType::BF16},
                      SynthCase{SynthQuant::W8A8W4, true, true, DType::F32},
                      SynthCase{SynthQuant::Pt2eW8, true, false, DType::BF16},
                      SynthCase{SynthQuant::QatW4, true, true, DType::F32},
                      // KV caches: BUFFER_MUTATION outputs (an
                      // in-place op's result, a buffer placeholder),
                      // llama.* ops, the inline bool mask.
                      SynthCase{SynthQuant::W4, true, true, DType::F32, SynthKvCache::Custom},
                      SynthCase{SynthQuant::W8A8W4, true, true, DType::BF16, SynthKvCache::Custom},
                      SynthCase{SynthQuant::W4, false, true, DType::F32, SynthKvCache::Plain},
                      SynthCase{SynthQuant::W8A8W4, true, false, DType::F32, SynthKvCache::Plain},
                      // 8da8w, and ExecuTorch's -E: QuantizedGroupEmbedding's i8 / packed
                      // u8 buffers.
                      SynthCase{SynthQuant::W8A8W8, false, false, DType::F32},
                      SynthCase{SynthQuant::W8A8W8, true, false, DType::F16, SynthKvCache::None, 8},
                      SynthCase{SynthQuant::W8A8W4, true, false, DType::F32, SynthKvCache::Custom,
                                4},
                      SynthCase{SynthQuant::W4, false, false, DType::F16, SynthKvCache::None, 2}),
    [](const auto &info) {
      const SynthCase &c = info.param;
      std::string n(name(c.quant));
      std::replace(n.begin(), n.end(), '-', '_');
      return n + (c.dynamic ? "_dynamic" : "") + (c.tied ? "_tied" : "") +
             (c.dtype == DType::BF16 ? "_bf16" : "") + (c.dtype == DType::F16 ? "_f16" : "") +
             (c.kv != SynthKvCache::None ? "_kv_" + std::string(name(c.kv)) : std::string()) +
             (c.embeddingBits ? "_E" + std::to_string(c.embeddingBits) : std::string());
    });

TEST(Pt2Synth, NamesAndShapesFollowTorchExport) {
  LlamaSynthOptions o;
  o.layers = 1;
  o.quant = SynthQuant::W8A8W4;
  o.dynamicSeq = true;
  auto g = synthesizeLlama(o);
  ASSERT_TRUE(g.ok());
  std::string t = text(**g, tmp("names.bin"));
  for (const char *s :
       {"param %p_layers_0_attention_wq_parametrizations_weight_original0 : i8[64, 64]",
        "buffer %b_freqs_cos : f32[128, 8] fqn=\"freqs_cos\" persistent=false",
        "input %tokens : i64[1, s0]", "%sym_size_int : symint = aten.sym_size.int(%tokens, 1)",
        // Rope.get_freqs: narrow(0, input_pos[-1].item(), seqlen).
        "%select : i64[] = aten.select.int(%input_pos, 0, -1)",
        "%_local_scalar_dense : symint = aten._local_scalar_dense.default(%select)",
        "aten.sym_constrain_range_for_size.default(%_local_scalar_dense)",
        "%add : symint = operator.add(%_local_scalar_dense, %sym_size_int)",
        "%le_1 : symbool = operator.le(%add, 128)",
        "%slice_1 : f32[s0, 8] = aten.slice.Tensor(%b_freqs_cos, 0, %_local_scalar_dense, %add)",
        "%getitem : f32[1, s0], %getitem_1 : i8[1, s0] = "
        "torchao.choose_qparams_affine.default(%mul_2, "
        "\"ASYMMETRIC\", [1, 1, 64], i8, -128, 127, none, none, i8)",
        "%dequantize_affine_2 : f32[64, 64] = torchao.dequantize_affine.default("
        "%p_layers_0_attention_wq_parametrizations_weight_original0, [1, 32], "
        "%p_layers_0_attention_wq_parametrizations_weight_original1, "
        "%p_layers_0_attention_wq_parametrizations_weight_original2, i8, -8, 7)"})
    EXPECT_NE(t.find(s), std::string::npos) << s;
  LlamaSynthOptions bad = o;
  bad.dim = 65;
  EXPECT_FALSE(synthesizeLlama(bad).ok());
}

namespace {

/// Where `needle` first occurs in the printed graph `text` (a failure when it
/// does not), so tests can check the order torch.export lifts placeholders in.
std::size_t positionOf(const std::string &text, const std::string &needle) {
  std::size_t i = text.find(needle);
  EXPECT_NE(i, std::string::npos) << needle;
  return i;
}

} // namespace

TEST(Pt2Synth, LlamaFamilyFlagsFollowUpstreamModules) {
  // The ModelArgs flags of ExecuTorch's Qwen 2.5 / Qwen 3 configs
  // (examples/models/qwen2_5/config/0_5b_config.json, qwen3/config/0_6b_config.json)
  // as AttentionMHA (examples/models/llama/attention.py) builds them.
  LlamaSynthOptions o;
  o.layers = 1;
  o.heads = 4;
  o.kvHeads = 2;
  o.headDim = 32; // heads * head_dim = 128 != dim 64, as in Qwen3-0.6B
  o.quant = SynthQuant::W4;
  o.useHfRope = true;
  o.attentionQkvBias = true;
  o.useQkNorm = true;
  o.normEps = 1e-6;
  for (bool before : {true, false}) {
    o.qkNormBeforeRope = before;
    auto g = synthesizeLlama(o);
    ASSERT_TRUE(g.ok()) << render(g.diags());
    EXPECT_TRUE(verify(**g).empty());
    std::string t = text(**g);
    auto at = [&](const std::string &s) { return positionOf(t, s); };
    // _init_norms runs before _init_projections; register_parametrization
    // leaves the module's own bias ahead of parametrizations.weight.*.
    std::size_t qn = at("param %p_layers_0_attention_q_norm_fn_weight : f32[32]");
    std::size_t kn = at("param %p_layers_0_attention_k_norm_fn_weight : f32[32]");
    std::size_t bias = at("param %p_layers_0_attention_wq_bias : f32[128]");
    std::size_t w = at("param %p_layers_0_attention_wq_parametrizations_weight_original0 : "
                       "i8[128, 64]");
    EXPECT_LT(qn, kn);
    EXPECT_LT(kn, bias);
    EXPECT_LT(bias, w);
    at("param %p_layers_0_attention_wk_bias : f32[64]");
    at("param %p_layers_0_attention_wo_parametrizations_weight_original0 : i8[64, 128]");
    EXPECT_EQ(t.find("wo_bias"), std::string::npos);
    // norm.py's _norm squares with x * x.
    at("%mul : f32[1, 8, 64] = aten.mul.Tensor(%embedding, %embedding)");
    EXPECT_EQ(t.find("aten.pow"), std::string::npos);
    // F.linear(x, weight.dequantize(), bias); every RMSNorm adds norm_eps.
    at("aten.linear.default(%mul_2, %dequantize_affine_1, %p_layers_0_attention_wq_bias)");
    EXPECT_EQ(t.find("1e-05"), std::string::npos);
    // q_norm_fn on [1, S, H, hd] before the rotary embedding, on the
    // transposed [1, H, S, hd] q after it.
    at(before ? ": f32[1, 8, 4, 32] = aten.mul.Tensor(%view, %view)"
              : ": f32[1, 4, 8, 32] = aten.mul.Tensor(%transpose, %transpose)");
    at("aten.add.Tensor(%mean_1, 1e-06)");
    at("aten.view.default(%clone, [1, 8, 128])");
  }
  // Each flag checked alone: without a bias or q/k norm nothing of them is written.
  LlamaSynthOptions plain;
  plain.layers = 1;
  auto g = synthesizeLlama(plain);
  ASSERT_TRUE(g.ok());
  std::string t = text(**g);
  EXPECT_EQ(t.find("_bias"), std::string::npos);
  EXPECT_EQ(t.find("norm_fn"), std::string::npos);
  EXPECT_NE(t.find("aten.add.Tensor(%mean, 1e-05)"), std::string::npos);

  // A float or QAT-prepared nn.Linear registers weight, then bias; PT2E folds
  // the weight into a root buffer and keeps the bias a parameter.
  for (SynthQuant q : {SynthQuant::None, SynthQuant::QatW8A8W4, SynthQuant::Pt2eW8}) {
    LlamaSynthOptions f = o;
    f.quant = q;
    auto fg = synthesizeLlama(f);
    ASSERT_TRUE(fg.ok()) << render(fg.diags());
    std::string ft = text(**fg);
    std::size_t b = ft.find("param %p_layers_0_attention_wq_bias : f32[128]");
    EXPECT_NE(b, std::string::npos) << name(q);
    if (q == SynthQuant::Pt2eW8) {
      EXPECT_NE(ft.find("aten.linear.default(%mul_2, %dequantize_per_channel, "
                        "%p_layers_0_attention_wq_bias)"),
                std::string::npos);
    } else {
      EXPECT_LT(ft.find("param %p_layers_0_attention_wq_weight : f32[128, 64]"), b) << name(q);
    }
  }

  LlamaSynthOptions bad = o;
  bad.useQkNorm = false; // qk_norm_before_rope alone places nothing
  bad.qkNormBeforeRope = true;
  EXPECT_FALSE(synthesizeLlama(bad).ok());
  bad = o;
  bad.headDim = 30; // wo's K = 120 is not a multiple of the group size 32
  EXPECT_FALSE(synthesizeLlama(bad).ok());
  bad = o;
  bad.normEps = -1.0;
  EXPECT_FALSE(synthesizeLlama(bad).ok());
}

TEST(Pt2Synth, EmbeddingQuantAnd8da8wFollowExportLlama) {
  // get_quant_embedding_transform's "BITS,GROUP" (executorch cff6f4dd
  // examples/models/llama/source_transformation/quantize.py).
  auto e = parseSynthEmbeddingQuant("8,0");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bits, 8);
  EXPECT_EQ(e->group, 0);
  e = parseSynthEmbeddingQuant("4,none");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->bits, 4);
  EXPECT_EQ(e->group, 0);
  e = parseSynthEmbeddingQuant("2,32");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->group, 32);
  for (const char *badText : {"3,32", "8", "8,32,1", "8,-1", "x,0", "", "8,"})
    EXPECT_FALSE(parseSynthEmbeddingQuant(badText).ok()) << badText;
  auto torchao = parseSynthEmbeddingQuant("torchao:4,32");
  ASSERT_FALSE(torchao.ok());
  EXPECT_NE(render(torchao.diags()).find("torchao._embedding_Nbit"), std::string::npos);
  EXPECT_EQ(parseSynthQuant("8da8w"), SynthQuant::W8A8W8);

  LlamaSynthOptions o;
  o.layers = 1;
  o.quant = SynthQuant::W8A8W8;
  o.embeddingQuant = {8, 0};
  auto g = synthesizeLlama(o);
  ASSERT_TRUE(g.ok()) << render(g.diags());
  EXPECT_TRUE(verify(**g).empty());
  std::string t = text(**g);
  auto at = [&](const std::string &s) { return positionOf(t, s); };
  // QuantizedGroupEmbedding's persistent buffers after the root's rotary tables; per-row
  // scales squeezed to [V]; forward's embedding_byte.dtype(weight, scales, None, -128, 127,
  // indices, dtype=self.dtype).
  std::size_t sin = at("buffer %b_freqs_sin");
  std::size_t w = at("buffer %b_tok_embeddings_weight : i8[128, 64] fqn=\"tok_embeddings.weight\"");
  std::size_t sc = at("buffer %b_tok_embeddings_scales : f32[128] fqn=\"tok_embeddings.scales\"");
  EXPECT_LT(sin, w);
  EXPECT_LT(w, sc);
  at("%embedding_byte : f32[1, 8, 64] = quantized_decomposed.embedding_byte.dtype("
     "%b_tok_embeddings_weight, %b_tok_embeddings_scales, none, -128, 127, %tokens, dtype=f32)");
  EXPECT_EQ(t.find("aten.embedding"), std::string::npos);
  // 8da8w: IntxUnpackedToInt8Tensor with PerAxis(0): block [1, K], [N, 1] qparams, int8's
  // range.
  at("param %p_layers_0_attention_wq_parametrizations_weight_original1 : f32[64, 1]");
  at("param %p_layers_0_attention_wq_parametrizations_weight_original2 : i8[64, 1]");
  at("param %p_layers_0_feed_forward_w2_parametrizations_weight_original0 : i8[64, 256]");
  at("torchao.dequantize_affine.default(%p_layers_0_attention_wq_parametrizations_weight_"
     "original0, [1, 64], %p_layers_0_attention_wq_parametrizations_weight_original1, "
     "%p_layers_0_attention_wq_parametrizations_weight_original2, i8, -128, 127)");
  at("torchao.dequantize_affine.default(%p_layers_0_feed_forward_w2_parametrizations_weight_"
     "original0, [1, 256],");

  // 4 and 2 bits pack into u8 [V, D/2], [V, D/4] with [V, D/G] scales.
  o.quant = SynthQuant::W4;
  for (auto [bits, spelling] :
       {std::pair{4, "%embedding_4bit : f32[1, 8, 64] = quantized_decomposed.embedding_4bit.dtype("
                     "%b_tok_embeddings_weight, %b_tok_embeddings_scales, none, -8, 7, %tokens, "
                     "dtype=f32)"},
        std::pair{2, "%embedding_2bit : f32[1, 8, 64] = quantized_decomposed.embedding_2bit.dtype("
                     "%b_tok_embeddings_weight, %b_tok_embeddings_scales, none, -2, 1, %tokens, "
                     "dtype=f32)"}}) {
    o.embeddingQuant = {bits, 32};
    auto pg = synthesizeLlama(o);
    ASSERT_TRUE(pg.ok()) << render(pg.diags());
    std::string pt = text(**pg);
    EXPECT_NE(pt.find(spelling), std::string::npos) << bits;
    EXPECT_NE(
        pt.find("buffer %b_tok_embeddings_weight : u8[128, " + std::to_string(64 * bits / 8) + "]"),
        std::string::npos)
        << bits;
    EXPECT_NE(pt.find("buffer %b_tok_embeddings_scales : f32[128, 2]"), std::string::npos);
  }

  // Refused with the reason: nothing stays tied once -E or 8da8w quantizes one side; the
  // group must divide dim; QuantizedGroupEmbedding keeps its build dtype.
  auto refused = [&](LlamaSynthOptions b, const std::string &why) {
    Status s = validate(b);
    ASSERT_FALSE(s.ok()) << why;
    EXPECT_NE(render(s.diags()).find(why), std::string::npos) << render(s.diags());
    EXPECT_FALSE(synthesizeLlama(b).ok());
  };
  LlamaSynthOptions b = o;
  b.embeddingQuant = {8, 0};
  b.tiedEmbeddings = true;
  refused(b, "nothing stays tied");
  b = o;
  b.quant = SynthQuant::W8A8W8;
  b.embeddingQuant = {};
  b.tiedEmbeddings = true;
  refused(b, "nothing stays tied");
  b = o;
  b.embeddingQuant = {4, 24};
  refused(b, "does not divide dim 64");
  b = o;
  b.embeddingQuant = {8, 0};
  b.checkpointDType = DType::BF16;
  refused(b, "checkpoint dtype");
}

TEST(Pt2Synth, DataFreeGraphsForBenchmarks) {
  // The benchmarks' graphs (bench/BenchLlama.h): no initializers, no
  // metadata, and weight zero points None so rules need no data to fuse.
  LlamaSynthOptions o;
  o.layers = 2;
  o.dynamicSeq = true;
  o.weightZeroPoints = false;
  o.dataFree = true;
  o.metadata = false;
  auto g = synthesizeLlama(o);
  ASSERT_TRUE(g.ok()) << render(g.diags());
  EXPECT_TRUE(verify(**g).empty());
  for (const GraphInput &in : (*g)->inputs()) {
    EXPECT_FALSE(in.hasData()) << in.value->name();
    EXPECT_EQ(in.fqn.str().find("original2"), std::string::npos) << in.fqn.str();
  }
  std::size_t dequantizes = 0;
  for (const Node &n : (*g)->nodes()) {
    EXPECT_TRUE(n.metadata().empty()) << n.name();
    if (n.target() == "torchao.dequantize_affine.default") {
      ++dequantizes;
      EXPECT_TRUE(n.args()[3].isNone()) << n.name();
    }
  }
  EXPECT_EQ(dequantizes, 1u + 7u * 2u + 1u); // embedding, 7 per layer, output
}

//===----------------------------------------------------------------------===//
// Bad input: each names what is wrong; the CLI exits 1 and writes nothing.
//===----------------------------------------------------------------------===//

TEST(Pt2BadInput, TruncatedArchive) {
  std::string full = slurp(tinySynth());
  for (std::size_t keep : {std::size_t(0), std::size_t(10), full.size() / 3, full.size() / 2,
                           full.size() - 30, full.size() - 1}) {
    std::string path = tmp("truncated.pt2");
    ASSERT_TRUE(writeFileAtomic(path, full.substr(0, keep)).ok());
    std::string e = errorOf(readPt2(path));
    EXPECT_NE(e.find("truncated"), std::string::npos) << keep << ": " << e;
  }
  // Every cut point fails cleanly.
  for (std::size_t keep = 0; keep < full.size(); keep += 997) {
    std::string path = tmp("truncated2.pt2");
    ASSERT_TRUE(writeFileAtomic(path, full.substr(0, keep)).ok());
    EXPECT_FALSE(readPt2(path).ok());
  }
  // A central directory pointing past the end of a shortened file.
  auto z = ZipReader::open(tinySynth());
  const ZipEntry *m = (*z)->find("tiny/models/model.json");
  std::string holed = full.substr(0, m->dataOffset + 10) + full.substr(full.size() - 2000);
  ASSERT_TRUE(writeFileAtomic(tmp("holed.pt2"), holed).ok());
  EXPECT_NE(errorOf(readPt2(tmp("holed.pt2"))).find("truncated"), std::string::npos);
}

TEST(Pt2BadInput, BadCrc) {
  std::string bytes = slurp(tinySynth());
  auto z = ZipReader::open(tinySynth());
  const ZipEntry *m = (*z)->find("tiny/models/model.json");
  std::string corrupt = bytes;
  corrupt[m->dataOffset + 100] ^= 0x20;
  ASSERT_TRUE(writeFileAtomic(tmp("badcrc.pt2"), corrupt).ok());
  std::string e = errorOf(readPt2(tmp("badcrc.pt2")));
  EXPECT_NE(e.find("record 'tiny/models/model.json' is corrupt: CRC-32"), std::string::npos) << e;
  // A weight's CRC is checked on request (it means reading every weight byte).
  const ZipEntry *w = (*z)->find("tiny/data/weights/weight_0");
  corrupt = bytes;
  corrupt[w->dataOffset] ^= 0x01;
  ASSERT_TRUE(writeFileAtomic(tmp("badcrc_w.pt2"), corrupt).ok());
  EXPECT_TRUE(readPt2(tmp("badcrc_w.pt2")).ok());
  Pt2ReadOptions o;
  o.verifyWeightChecksums = true;
  e = errorOf(readPt2(tmp("badcrc_w.pt2"), o));
  EXPECT_NE(e.find("tiny/data/weights/weight_0"), std::string::npos) << e;
  EXPECT_NE(e.find("weight '"), std::string::npos) << e;
}

// A model.json of over 1 MiB is parsed in place while a second thread checks
// its CRC; a small one is checked first. Either way a corrupt record is
// reported as corrupt, also when the corruption makes it invalid JSON.
TEST(Pt2BadInput, BadCrcOfALargeModelJson) {
  LlamaSynthOptions o;
  o.layers = 16;
  o.dim = 32;
  o.heads = 2;
  o.vocab = 16;
  o.hidden = 64;
  o.groupSize = 16;
  o.maxSeqLen = 16;
  o.seqLen = 4;
  std::string path = synthFile("large_json.pt2", o);
  auto z = ZipReader::open(path);
  ASSERT_TRUE(z.ok());
  const ZipEntry *m = (*z)->find("large_json/models/model.json");
  ASSERT_NE(m, nullptr);
  ASSERT_GT(m->size, uint64_t(1) << 20);
  ASSERT_TRUE(readPt2(path).ok());
  std::string bytes = slurp(path);
  for (std::string tiny : {std::string(), tinySynth()}) {
    std::string src = tiny.empty() ? bytes : slurp(tiny);
    auto zz = ZipReader::open(tiny.empty() ? path : tiny);
    const ZipEntry *mm =
        (*zz)->find(tiny.empty() ? "large_json/models/model.json" : "tiny/models/model.json");
    for (uint64_t at : {uint64_t(0), mm->size / 2}) {
      std::string corrupt = src;
      corrupt[mm->dataOffset + at] = at == 0 ? 'x' : corrupt[mm->dataOffset + at] ^ 0x20;
      ASSERT_TRUE(writeFileAtomic(tmp("badcrc_large.pt2"), corrupt).ok());
      std::string e = errorOf(readPt2(tmp("badcrc_large.pt2")));
      EXPECT_NE(e.find("record '" + mm->name + "' is corrupt: CRC-32"), std::string::npos) << e;
    }
  }
}

TEST(Pt2BadInput, MissingRecord) {
  struct Case {
    const char *drop;
    const char *expect;
  } cases[] = {
      {"tiny/models/model.json", "missing record 'tiny/models/<model>.json'"},
      {"tiny/archive_format", "missing record 'tiny/archive_format'"},
      {"tiny/data/weights/model_weights_config.json",
       "missing record 'tiny/data/weights/model_weights_config.json'"},
      {"tiny/data/weights/weight_3", "missing record 'tiny/data/weights/weight_3' (weight '"},
  };
  for (const Case &c : cases) {
    std::string out = tmp("missing.pt2");
    rewriteArchive(tinySynth(), out,
                   [&](const std::string &n, const std::string &b) -> std::optional<std::string> {
                     if (n == c.drop)
                       return std::nullopt;
                     return b;
                   });
    std::string e = errorOf(readPt2(out));
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
  // A legacy archive without its state dict: the FQN has no data.
  std::string out = tmp("missing_legacy.pt2");
  rewriteArchive((kGolden / "tinynet_torch2_7_legacy.pt2").string(), out,
                 [](const std::string &n, const std::string &b) -> std::optional<std::string> {
                   if (n == "serialized_state_dict.pt")
                     return std::nullopt;
                   return b;
                 });
  std::string e = errorOf(readPt2(out));
  EXPECT_NE(e.find("no data for param 'emb.weight'"), std::string::npos) << e;
}

TEST(Pt2BadInput, UnknownSchemaMajor) {
  editModelJson(tinySynth(), tmp("major.pt2"), [](auto &j) { j["schema_version"]["major"] = 9; });
  std::string e = errorOf(readPt2(tmp("major.pt2")));
  EXPECT_NE(e.find("unsupported schema version 9."), std::string::npos) << e;
  EXPECT_NE(e.find("models/model.json"), std::string::npos) << e;
}

TEST(Pt2BadInput, JsonThatViolatesTheSchema) {
  struct Case {
    std::function<void(nlohmann::ordered_json &)> edit;
    const char *expect;
  } cases[] = {
      {[](auto &j) { j["graph_module"]["graph"]["nodes"][1]["inputs"][0]["arg"]["as_int"] = 3; },
       "graph_module.graph.nodes[1].inputs[0].arg: a union must have exactly one key"},
      {[](auto &j) { j["graph_module"]["graph"]["nodes"][0].erase("target"); },
       "graph_module.graph.nodes[0]: missing required field 'target'"},
      {[](auto &j) { j["graph_module"]["graph"]["tensor_values"]["tokens"]["sizes"] = 3; },
       "graph_module.graph.tensor_values[\"tokens\"].sizes: expected an array, got an integer"},
      {[](auto &j) {
         j["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"] = {{"as_banana", 1}};
       },
       "unknown Argument member 'as_banana'"},
      {[](auto &j) { j["graph_module"]["graph"]["tensor_values"]["tokens"]["dtype"] = 99; },
       "unknown ScalarType 99"},
      {[](auto &j) {
         j["graph_module"]["signature"]["input_specs"][0] = {{"custom_obj", {}}};
       },
       "input spec kind 'custom_obj'"},
  };
  for (const Case &c : cases) {
    editModelJson(tinySynth(), tmp("schema.pt2"), c.edit);
    std::string e = errorOf(readPt2(tmp("schema.pt2")));
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
  rewriteArchive(tinySynth(), tmp("notjson.pt2"),
                 [](const std::string &n, const std::string &b) -> std::optional<std::string> {
                   return n.find("models/") != std::string::npos
                              ? std::string("{\"graph_module\": ")
                              : b;
                 });
  std::string e = errorOf(readPt2(tmp("notjson.pt2")));
  EXPECT_NE(e.find("tiny/models/model.json: not valid JSON"), std::string::npos) << e;
}

TEST(Pt2BadInput, WeightBytesNotMatchingTheTensorMeta) {
  // A payload shorter than its tensor meta needs.
  rewriteArchive(tinySynth(), tmp("short.pt2"),
                 [](const std::string &n, const std::string &b) -> std::optional<std::string> {
                   return n == "tiny/data/weights/weight_0" ? b.substr(0, b.size() / 2) : b;
                 });
  std::string e = errorOf(readPt2(tmp("short.pt2")));
  EXPECT_NE(e.find("weight 'tok_embeddings.parametrizations.weight.original0'"), std::string::npos)
      << e;
  EXPECT_NE(e.find("needs more than the record's"), std::string::npos) << e;
  // A PayloadConfig that disagrees with the graph's placeholder.
  rewriteArchive(tinySynth(), tmp("metamismatch.pt2"),
                 [](const std::string &n, const std::string &b) -> std::optional<std::string> {
                   if (n != "tiny/data/weights/model_weights_config.json")
                     return b;
                   auto j = nlohmann::ordered_json::parse(b);
                   j["config"]["norm.weight"]["tensor_meta"]["dtype"] = 6; // HALF
                   return j.dump();
                 });
  e = errorOf(readPt2(tmp("metamismatch.pt2")));
  EXPECT_NE(e.find("weight 'norm.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("placeholder 'p_norm_weight' is f32[32]"), std::string::npos) << e;
  // A storage record of a pickled state dict with the wrong size.
  rewriteArchive((kGolden / "tinynet_torch2_8.pt2").string(), tmp("pickled_short.pt2"),
                 [](const std::string &n, const std::string &b) -> std::optional<std::string> {
                   if (n != "tinynet_torch2_8/data/weights/model.pt")
                     return b;
                   // Rebuild the nested torch.save zip with one storage cut short.
                   std::string in = tmp("nested_in.zip");
                   EXPECT_TRUE(writeFileAtomic(in, b).ok());
                   auto z = ZipReader::open(in);
                   auto w = ZipWriter::inMemory();
                   for (const ZipEntry &e : (*z)->entries()) {
                     std::string d = *(*z)->read(e);
                     if (e.name == "archive/data/1")
                       d = d.substr(4);
                     EXPECT_TRUE(w->add(e.name, d).ok());
                   }
                   EXPECT_TRUE(w->finish().ok());
                   return w->buffer();
                 });
  e = errorOf(readPt2(tmp("pickled_short.pt2")));
  EXPECT_NE(e.find("record 'archive/data/1' has 60 bytes but its storage holds 16 f32 elements"),
            std::string::npos)
      << e;
}

TEST(Pt2BadInput, DanglingTensorNames) {
  editModelJson(tinySynth(), tmp("dangling.pt2"), [](auto &j) {
    j["graph_module"]["graph"]["nodes"][3]["inputs"][0]["arg"] = {
        {"as_tensor", {{"name", "nope"}}}};
  });
  std::string e = errorOf(readPt2(tmp("dangling.pt2")));
  EXPECT_NE(e.find("refers to undefined value 'nope'"), std::string::npos) << e;
  EXPECT_NE(e.find("node '"), std::string::npos) << e;
  editModelJson(tinySynth(), tmp("dangling2.pt2"), [](auto &j) {
    j["graph_module"]["graph"]["outputs"][0] = {{"as_tensor", {{"name", "ghost"}}}};
  });
  e = errorOf(readPt2(tmp("dangling2.pt2")));
  EXPECT_NE(e.find("graph output 0 refers to undefined value 'ghost'"), std::string::npos) << e;
  editModelJson(tinySynth(), tmp("dangling3.pt2"),
                [](auto &j) { j["graph_module"]["graph"]["tensor_values"].erase("embedding"); });
  e = errorOf(readPt2(tmp("dangling3.pt2")));
  EXPECT_NE(e.find("value 'embedding' has no entry in graph.tensor_values"), std::string::npos)
      << e;
}

TEST(Pt2BadInput, PicklesOutsideTheAllowedSubset) {
  // Real torch.save output: a state dict entry that would call os.system.
  std::string e = errorOf(readPt2((kGolden / "bad_pickle_global.pt2").string()));
  EXPECT_NE(e.find("weight 'scale'"), std::string::npos) << e;
  EXPECT_NE(e.find("'posix.system'"), std::string::npos) << e;
  EXPECT_NE(e.find("nothing in it was executed"), std::string::npos) << e;
  // A tensor subclass graft does not know.
  e = errorOf(readPt2((kGolden / "bad_unknown_subclass.pt2").string()));
  EXPECT_NE(e.find("weight 'linear.weight'"), std::string::npos) << e;
  EXPECT_NE(e.find("'thirdparty.fancy.FancyTensor'"), std::string::npos) << e;

  // Hand-written pickles in a 2.8 archive.
  auto writeWithPickle = [&](const std::string &pkl, const std::string &name) {
    rewriteArchive((kGolden / "tinynet_torch2_8.pt2").string(), tmp(name),
                   [&](const std::string &n, const std::string &b) -> std::optional<std::string> {
                     if (n != "tinynet_torch2_8/data/weights/model.pt")
                       return b;
                     auto w = ZipWriter::inMemory();
                     EXPECT_TRUE(w->add("archive/data.pkl", pkl).ok());
                     EXPECT_TRUE(w->add("archive/version", "3\n").ok());
                     EXPECT_TRUE(w->finish().ok());
                     return w->buffer();
                   });
    return tmp(name);
  };
  auto withPickle = [&](const std::string &pkl, const std::string &name) {
    return errorOf(readPt2(writeWithPickle(pkl, name)));
  };
  auto u32 = [](uint32_t n) {
    std::string b(4, '\0');
    for (int i = 0; i < 4; ++i)
      b[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return b;
  };
  auto str = [&](const std::string &x) { return "X" + u32(static_cast<uint32_t>(x.size())) + x; };
  const std::string head = std::string("\x80\x02}(", 4);
  // {'scale': builtins.eval('1+1')}
  e = withPickle(head + str("scale") + "cbuiltins\neval\n" + str("1+1") + "\x85" + "Ru.",
                 "eval.pt2");
  EXPECT_NE(e.find("weight 'scale'"), std::string::npos) << e;
  EXPECT_NE(e.find("'builtins.eval'"), std::string::npos) << e;
  // getattr is interpreted for torchao's known enum members only.
  const std::string enumCls = "ctorchao.quantization.quantize_.workflows.intx."
                              "intx_unpacked_to_int8_tensor\n"
                              "IntxUnpackedToInt8TensorActivationQuantization\n";
  e = withPickle(head + str("scale") + "c__builtin__\ngetattr\ncposix\nsystem\n" + str("x") +
                     "\x86" + "Ru.",
                 "getattr_posix.pt2");
  EXPECT_NE(e.find("'getattr(unsupported object posix.system, ...)'"), std::string::npos) << e;
  e = withPickle(head + str("scale") + "c__builtin__\ngetattr\n" + enumCls + str("__class__") +
                     "\x86" + "Ru.",
                 "getattr_enum_attr.pt2");
  EXPECT_NE(e.find("'getattr(global torchao."), std::string::npos) << e;
  e = withPickle(head + str("scale") + enumCls + str("other") + "\x85" + "Ru.", "enum_value.pt2");
  EXPECT_NE(e.find("IntxUnpackedToInt8TensorActivationQuantization(a value that is not a member)"),
            std::string::npos)
      << e;
  // {'scale': NEWOBJ(evil.Thing)}
  e = withPickle(head + str("scale") + "cevil\nThing\n)\x81u.", "newobj.pt2");
  EXPECT_NE(e.find("'evil.Thing'"), std::string::npos) << e;
  // An opcode outside the data subset (PERSID in text form).
  e = withPickle(std::string("\x80\x02P0\n.", 6), "persid.pt2");
  EXPECT_NE(e.find("unsupported pickle opcode 0x50"), std::string::npos) << e;
  // A truncated pickle.
  e = withPickle(head + "X" + u32(5) + "sc", "trunc.pt2");
  EXPECT_NE(e.find("pickle is truncated"), std::string::npos) << e;
  // Fake tensors as serialize_torch_artifact pickles them (torch/_export/serde/
  // serialize.py _reduce_fake_tensor, protocol 2: _reconstruct_fake_tensor(
  // TensorMeta JSON bytes through _codecs.encode(str, "latin1"), is_parameter)):
  // read as constants without data, as torch >= 2.9's empty fake records.
  auto fake = [&](const std::string &fqn, const std::vector<int64_t> &sizes, bool param) {
    std::string dims;
    for (int64_t d : sizes)
      dims += (dims.empty() ? "" : ", ") + std::string("{\"as_int\": ") + std::to_string(d) + "}";
    std::string meta = "{\"dtype\": 7, \"sizes\": [" + dims +
                       "], \"requires_grad\": " + (param ? "true" : "false") +
                       ", \"device\": {\"type\": \"cpu\"}, \"strides\": [], "
                       "\"storage_offset\": {\"as_int\": 0}, \"layout\": 7}";
    return str(fqn) + "ctorch._export.serde.serialize\n_reconstruct_fake_tensor\n" +
           "c_codecs\nencode\n" + str(meta) + str("latin1") + "\x86R" + (param ? "\x88" : "\x89") +
           "\x86R";
  };
  const std::string fakes = fake("emb.weight", {8, 4}, true) + fake("proj.weight", {4, 4}, true) +
                            fake("fc.weight", {8, 4}, true) + fake("fc.bias", {8}, true) +
                            fake("table", {3, 4}, false) + fake("row", {4}, false);
  Pt2Program faked =
      readOk(writeWithPickle(head + fakes + fake("scale", {4}, false) + "u.", "fake.pt2"));
  for (const GraphInput &in : faked.graph->inputs()) {
    if (in.isConstant()) {
      EXPECT_EQ(in.hasData(), in.fqn == "cache" || in.fqn == "lifted_tensor_0") << in.fqn.str();
    }
  }
  // Written in the >= 2.9 layout, they are empty records, read back the same.
  Pt2WriteOptions fo;
  fo.provenance = &faked.provenance;
  ASSERT_TRUE(writePt2(*faked.graph, tmp("fake_rt.pt2"), fo).ok());
  Pt2Program fakedBack = readOk(tmp("fake_rt.pt2"));
  for (const GraphInput &in : fakedBack.graph->inputs()) {
    if (in.isConstant()) {
      EXPECT_EQ(in.hasData(), in.fqn == "cache" || in.fqn == "lifted_tensor_0") << in.fqn.str();
    }
  }
  e = withPickle(head + fakes + fake("scale", {5}, false) + "u.", "fake_shape.pt2");
  EXPECT_NE(e.find("weight 'scale' (tinynet_torch2_8/data/weights/model.pt): the fake tensor is "
                   "f32[5] but the graph's placeholder 'b_scale' is f32[4]"),
            std::string::npos)
      << e;
  // _codecs.encode only makes latin-1 bytes.
  e = withPickle(head + str("scale") + "c_codecs\nencode\n" + str("x") + str("utf-8") + "\x86Ru.",
                 "codecs.pt2");
  EXPECT_NE(e.find("'_codecs.encode(other than (str, 'latin1'))'"), std::string::npos) << e;
  // Containers that hold themselves (memoized, then added to themselves):
  // Python builds them, torch.save never writes them, graft refuses them.
  // d = {}; d['scale'] = d
  e = withPickle(std::string("\x80\x02}q\x00", 5) + str("scale") + std::string("h\x00s.", 4),
                 "cycle_dict.pt2");
  EXPECT_NE(e.find("opcode 's' makes a dict contain itself"), std::string::npos) << e;
  // {'scale': l} with l = [[l]] (the cycle two levels down)
  e = withPickle(head + str("scale") +
                     std::string("]q\x01]q\x02h\x01"
                                 "aa",
                                 10) +
                     "u.",
                 "cycle_list.pt2");
  EXPECT_NE(e.find("opcode 'a' makes a list contain itself"), std::string::npos) << e;
}

TEST(Pt2BadInput, CliExitsOneAndWritesNothing) {
  fs::path dir = tempDir() / "cli";
  fs::create_directories(dir);
  editModelJson(tinySynth(), tmp("cli_major.pt2"),
                [](auto &j) { j["schema_version"]["major"] = 9; });
  std::string err;
  for (const std::string &bad :
       {(kGolden / "bad_pickle_global.pt2").string(), tmp("cli_major.pt2")}) {
    EXPECT_EQ(runCli("print " + bad + " -o " + (dir / "out.gir").string(), &err), 1) << err;
    EXPECT_EQ(runCli("print " + bad + " -o " + (dir / "out.pt2").string(), &err), 1) << err;
    EXPECT_EQ(runCli("verify " + bad, &err), 1) << err;
    EXPECT_EQ(runCli("run " + bad, &err), 1) << err;
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

//===----------------------------------------------------------------------===//
// CLI
//===----------------------------------------------------------------------===//

TEST(Pt2Cli, SynthPrintVerifyRun) {
  std::string out = tmp("cli_synth.pt2");
  std::string err;
  ASSERT_EQ(runCli("synth llama --layers 1 --dim 32 --heads 4 --vocab 64 --quant 8da4w "
                   "--dynamic-seq --tied-embeddings --checkpoint-dtype bf16 --quiet -o " +
                       out,
                   &err),
            0)
      << err;
  EXPECT_EQ(runCli("verify " + out, &err), 0) << err;
  EXPECT_EQ(runCli("run " + out + " --sym s0=3", &err), 0) << err;
  // print: the graph, weights referenced in place inside the archive.
  std::string gir = tmp("cli_synth.gir");
  ASSERT_EQ(runCli("print " + out + " -o " + gir, &err), 0) << err;
  std::string t = slurp(gir);
  EXPECT_NE(t.find("torchao.choose_qparams_affine.default"), std::string::npos);
  EXPECT_NE(t.find("file(\"cli_synth.pt2\", offset="), std::string::npos);
  // The printed text parses back (its file() references map the archive).
  auto g = parseGraphFile(gir);
  ASSERT_TRUE(g.ok()) << diagText(g.diags());
  auto p = readPt2(out);
  ASSERT_TRUE(p.ok());
  for (const GraphInput &in : p->graph->inputs())
    if (in.isConstant()) {
      EXPECT_TRUE(bytesEqual(in.data(), (*g)->findConstant(in.fqn)->data())) << in.fqn;
    }
  // print -o x.pt2 converts (here: a .gir back to an archive).
  std::string back = tmp("cli_back.pt2");
  ASSERT_EQ(runCli("print " + gir + " -o " + back, &err), 0) << err;
  EXPECT_EQ(runCli("verify " + back, &err), 0) << err;
  EXPECT_EQ(runCli("synth llama --quant bogus -o " + tmp("x.pt2"), &err), 1);
  EXPECT_NE(err.find("--quant: 'bogus'"), std::string::npos) << err;
  EXPECT_EQ(runCli("synth llama --dim 30 --heads 4 -o " + tmp("x.pt2"), &err), 1);
  EXPECT_EQ(runCli("synth llama --quant 8da4w --act-qparams f16 -o " + tmp("x.pt2"), &err), 1);
  EXPECT_NE(err.find("--act-qparams: 'f16' is not one of int8"), std::string::npos) << err;
  EXPECT_EQ(runCli("synth llama --kv-cache paged -o " + tmp("x.pt2"), &err), 1);
  EXPECT_NE(err.find("--kv-cache: 'paged' is not one of custom"), std::string::npos) << err;
  EXPECT_EQ(runCli("synth llama --kv-cache none -o " + tmp("x.pt2"), &err), 1);
  EXPECT_FALSE(fs::exists(tmp("x.pt2")));
}

TEST(Pt2Load, DispatchesOnContent) {
  EXPECT_TRUE(isPt2File(tinySynth()));
  std::string gir = tmp("plain.gir");
  ASSERT_TRUE(writeFileAtomic(gir, "graph @g {\n  input %x : f32[2]\n  output %x\n}\n").ok());
  EXPECT_FALSE(isPt2File(gir));
  auto a = loadGraph(gir);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->pt2.has_value());
  auto b = loadGraph(tinySynth());
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->pt2.has_value());
  EXPECT_EQ(b->pt2->layout, Pt2Layout::RawWeights);
}

//===----------------------------------------------------------------------===//
// Audit against upstream's serde (pytorch/pytorch torch/_export/serde/
// schema.py, serialize.py; torch/export/pt2_archive/_package.py): hand-written
// model.json edits of the 2.9 fixture, one per upstream spelling.
//===----------------------------------------------------------------------===//

namespace {

const std::string kTiny9 = (kGolden / "tinynet_torch2_9.pt2").string();

/// The 2.9 fixture with `edit` applied to its model.json; the read's error.
std::string errorAfterEdit(const std::string &name,
                           const std::function<void(nlohmann::ordered_json &)> &edit) {
  editModelJson(kTiny9, tmp(name), edit);
  return errorOf(readPt2(tmp(name)));
}

/// The 2.9 fixture with `edit` applied to its constants PayloadConfig and
/// the record `tensor_1` (the buffer 'cache') replaced by `cacheBytes`.
void editConstants(const std::string &dst,
                   const std::function<void(nlohmann::ordered_json &)> &edit,
                   const std::optional<std::string> &cacheBytes = std::nullopt) {
  rewriteArchive(kTiny9, dst,
                 [&](const std::string &n, const std::string &b) -> std::optional<std::string> {
                   if (n == "tinynet_torch2_9/data/constants/tensor_1" && cacheBytes)
                     return *cacheBytes;
                   if (n != "tinynet_torch2_9/data/constants/model_constants_config.json")
                     return b;
                   auto j = nlohmann::ordered_json::parse(b);
                   edit(j);
                   return j.dump();
                 });
}

} // namespace

// deserialize_tensor_meta rebuilds every TensorMeta with torch.empty_strided,
// which refuses negative sizes and strides; numel and nbytes are int64.
TEST(Pt2Serde, TensorMetaSizesMustBeValid) {
  auto tv = [](auto &j) -> auto & {
    return j["graph_module"]["graph"]["tensor_values"];
  };
  std::string e = errorAfterEdit("neg_size.pt2", [&](auto &j) {
    tv(j)["add_2"]["sizes"][0] = {{"as_int", -1}};
  });
  EXPECT_NE(e.find("tensor_values[\"add_2\"].sizes[0]: negative size -1"), std::string::npos) << e;
  e = errorAfterEdit("neg_stride.pt2", [&](auto &j) {
    tv(j)["tokens"]["strides"][1] = {{"as_int", -1}};
  });
  EXPECT_NE(e.find("tensor_values[\"tokens\"].strides[1]: negative stride -1"), std::string::npos)
      << e;
  e = errorAfterEdit("neg_offset.pt2", [&](auto &j) {
    tv(j)["b_cache"]["storage_offset"] = {{"as_int", -3}};
  });
  EXPECT_NE(e.find("negative storage offset -3"), std::string::npos) << e;
  e = errorAfterEdit("huge_size.pt2", [&](auto &j) {
    tv(j)["add_2"]["sizes"] = {{{"as_int", int64_t(1) << 62}}, {{"as_int", 4}}};
  });
  EXPECT_NE(e.find("tensor_values[\"add_2\"].sizes: describes a tensor of more than 2^63 bytes"),
            std::string::npos)
      << e;
  // A zero size makes any other size fine.
  editModelJson(kTiny9, tmp("zero_size.pt2"), [&](auto &j) {
    tv(j)["add_2"]["sizes"] = {{{"as_int", 0}}, {{"as_int", INT64_MAX}}};
  });
  EXPECT_TRUE(readPt2(tmp("zero_size.pt2")).ok());
}

// Graph.sym_int_values / sym_float_values / sym_bool_values hold the SymInt,
// SymFloat and SymBool unions (schema.py): as_expr (SymExpr: expr_str and an
// optional SymExprHint) or a constant of the kind; serialize_sym_bool writes
// {"as_bool": b} for a concrete bool, serialize_sym_int {"as_expr": ...,
// "hint": {"as_int": n}}.
TEST(Pt2Serde, SymbolicValuesFollowTheirUnions) {
  auto g = [](auto &j) -> auto & {
    return j["graph_module"]["graph"];
  };
  editModelJson(kTiny9, tmp("sym_ok.pt2"), [&](auto &j) {
    g(j)["sym_bool_values"]["ge"] = {{"as_bool", true}};
    g(j)["sym_float_values"]["zf"] = {
        {"as_expr", {{"expr_str", "Symbol('zuf0')"}, {"hint", {{"as_float", 0.5}}}}}};
  });
  Pt2Program p = readOk(tmp("sym_ok.pt2"));
  ASSERT_NE(p.graph->findValue("ge"), nullptr);
  EXPECT_EQ(p.graph->findValue("ge")->kind(), ValueKind::SymBool);
  // Written back as read.
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("sym_rt.pt2"), wo).ok());
  auto z = ZipReader::open(tmp("sym_rt.pt2"));
  auto json = nlohmann::json::parse(*(*z)->read(*(*z)->find("sym_rt/models/model.json")));
  EXPECT_EQ(json["graph_module"]["graph"]["sym_bool_values"]["ge"],
            nlohmann::json({{"as_bool", true}}));
  EXPECT_EQ(text(*readOk(tmp("sym_rt.pt2")).graph), text(*p.graph));
  struct Case {
    std::function<void(nlohmann::ordered_json &)> edit;
    const char *expect;
  } cases[] = {
      {[&](auto &j) {
         g(j)["sym_bool_values"]["ge"] = {{"as_int", 1}};
       },
       "sym_bool_values[\"ge\"]: unknown symbool member 'as_int' (expected as_expr or as_bool)"},
      {[&](auto &j) { g(j)["sym_bool_values"]["ge"]["as_expr"]["expr_str"] = 0; },
       "sym_bool_values[\"ge\"].as_expr.expr_str: expected a string"},
      {[&](auto &j) {
         g(j)["sym_int_values"]["mul_1"]["as_expr"]["hint"] = {{"as_float", 1.5}};
       },
       "sym_int_values[\"mul_1\"].as_expr.hint: a symint hint must be as_int, not 'as_float'"},
      {[&](auto &j) { g(j)["sym_int_values"]["mul_1"]["as_expr"]["hint"] = 10; },
       "sym_int_values[\"mul_1\"].as_expr.hint: "},
      {[&](auto &j) {
         g(j)["tensor_values"]["tokens"]["sizes"][1]["as_expr"]["hint"] = {{"as_bool", true}};
       },
       "tensor_values[\"tokens\"].sizes[1].as_expr.hint: a symint hint must be as_int"},
      {[&](auto &j) {
         g(j)["sym_float_values"]["zf"] = {{"as_float", "x"}};
       },
       "sym_float_values[\"zf\"].as_float: expected a number"},
  };
  for (const Case &c : cases) {
    std::string e = errorAfterEdit("sym_bad.pt2", c.edit);
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
}

// Every Python sym op in serialize.py's _SYM_OPS (pytorch
// torch/_export/serde/serialize.py) reads as a declared op of the right kind,
// not an opaque node: truediv and sym_float give SymFloats, math.trunc a SymInt,
// sym_not and and_/or_ of SymBools SymBools; written back with the same targets.
TEST(Pt2Read, EveryPythonSymOpIsDeclared) {
  auto named = [](const char *n, nlohmann::ordered_json arg) {
    return nlohmann::ordered_json{{"name", n}, {"arg", std::move(arg)}, {"kind", 1}};
  };
  auto symNode = [](const char *target, std::vector<nlohmann::ordered_json> in, const char *kind,
                    const char *out) {
    return nlohmann::ordered_json{{"target", target},
                                  {"inputs", in},
                                  {"outputs", {{{kind, {{"as_name", out}}}}}},
                                  {"metadata", nlohmann::ordered_json::object()}};
  };
  editModelJson(kTiny9, tmp("symops.pt2"), [&](auto &j) {
    auto &g = j["graph_module"]["graph"];
    auto &nodes = g["nodes"];
    std::size_t at = 0;
    while (nodes[at]["target"] != "_operator.ge")
      ++at;
    const nlohmann::ordered_json added[] = {
        symNode("_operator.truediv",
                {named("a", {{"as_sym_int", {{"as_name", "mul_1"}}}}), named("b", {{"as_int", 4}})},
                "as_sym_float", "truediv"),
        symNode("math.trunc", {named("a", {{"as_sym_float", {{"as_name", "truediv"}}}})},
                "as_sym_int", "trunc"),
        symNode("torch.sym_not", {named("a", {{"as_sym_bool", {{"as_name", "ge"}}}})},
                "as_sym_bool", "sym_not"),
        symNode("_operator.or_",
                {named("a", {{"as_sym_bool", {{"as_name", "ge"}}}}),
                 named("b", {{"as_sym_bool", {{"as_name", "sym_not"}}}})},
                "as_sym_bool", "or_"),
    };
    for (const auto &n : added)
      nodes.insert(nodes.begin() + static_cast<std::ptrdiff_t>(++at), n);
    g["sym_float_values"]["truediv"] = {{"as_expr", {{"expr_str", "s0/2"}}}};
    g["sym_int_values"]["trunc"] = {{"as_expr", {{"expr_str", "TruncToInt(s0/2)"}}}};
    g["sym_bool_values"]["sym_not"] = {{"as_expr", {{"expr_str", "2*s0 < 4"}}}};
    g["sym_bool_values"]["or_"] = {{"as_bool", true}};
  });
  Pt2Program p = readOk(tmp("symops.pt2"));
  const Graph &g = *p.graph;
  for (auto [name, target, kind] : {std::tuple{"truediv", "operator.truediv", ValueKind::SymFloat},
                                    {"trunc", "math.trunc", ValueKind::SymInt},
                                    {"sym_not", "torch.sym_not", ValueKind::SymBool},
                                    {"or_", "operator.or_", ValueKind::SymBool}}) {
    const Value *v = g.findValue(name);
    ASSERT_NE(v, nullptr) << name;
    EXPECT_EQ(v->kind(), kind) << name;
    ASSERT_NE(v->producer(), nullptr) << name;
    EXPECT_EQ(v->producer()->target(), target);
    EXPECT_NE(OpRegistry::builtin().lookup(std::string(target) + ".default"), nullptr) << target;
  }
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(g, tmp("symops_rt.pt2"), wo).ok());
  auto z = ZipReader::open(tmp("symops_rt.pt2"));
  auto json = nlohmann::json::parse(*(*z)->read(*(*z)->find("symops_rt/models/model.json")));
  std::set<std::string> targets;
  for (const auto &n : json["graph_module"]["graph"]["nodes"])
    targets.insert(n["target"].get<std::string>());
  for (const char *t : {"_operator.truediv", "math.trunc", "torch.sym_not", "_operator.or_"})
    EXPECT_EQ(targets.count(t), 1u) << t;
  EXPECT_EQ(text(*readOk(tmp("symops_rt.pt2")).graph), text(g));
}

// RangeConstraint bounds are null for an infinite bound (_sympy_int_to_int);
// torch releases whose _sympy_int_to_int returned math.inf wrote it as
// _dataclass_to_dict spells an infinite float, "Infinity" / "-Infinity".
TEST(Pt2Serde, RangeConstraintBounds) {
  editModelJson(kTiny9, tmp("range_inf.pt2"), [](auto &j) {
    j["range_constraints"]["s0"] = {{"min_val", "-Infinity"}, {"max_val", "Infinity"}};
  });
  Pt2Program p = readOk(tmp("range_inf.pt2"));
  ASSERT_NE(p.graph->symbols().find("s0"), nullptr);
  EXPECT_EQ(p.graph->symbols().find("s0")->min, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(p.graph->symbols().find("s0")->max.has_value());
  std::string e = errorAfterEdit("range_empty.pt2", [](auto &j) {
    j["range_constraints"]["s0"] = {{"min_val", 8}, {"max_val", 4}};
  });
  EXPECT_NE(e.find("symbol 's0' has an empty range [8, 4]"), std::string::npos) << e;
  e = errorAfterEdit("range_str.pt2",
                     [](auto &j) { j["range_constraints"]["s0"]["max_val"] = "-Infinity"; });
  EXPECT_NE(e.find("range_constraints[\"s0\"].max_val: expected an integer"), std::string::npos)
      << e;
}

// serialize_outputs writes one Argument per returned value: as_tensor, as_none
// for an undefined tensor, as_tensors for a Tensor[] return, as_sym_int for an
// int; unused results get "<node>_unused_<i>" names. generate_getitems reads
// these; graft reads them as one node whose results are the values in order.
TEST(Pt2Serde, MultiOutputNodes) {
  std::string out = tmp("multi.pt2");
  editModelJson(kTiny9, out, [](auto &j) {
    auto &graph = j["graph_module"]["graph"];
    for (const char *n : {"multi_unused_0", "getitem", "getitem_1"})
      graph["tensor_values"][n] = graph["tensor_values"]["add_2"];
    graph["sym_int_values"]["getitem_2"] = {
        {"as_expr", {{"expr_str", "Symbol('u7', integer=True)"}}}};
    graph["nodes"].push_back(nlohmann::ordered_json::parse(R"({
      "target": "torch.ops.mylib.multi.default",
      "inputs": [{"name": "x", "arg": {"as_tensor": {"name": "add_2"}}, "kind": 1}],
      "outputs": [{"as_tensor": {"name": "multi_unused_0"}},
                  {"as_none": true},
                  {"as_tensors": [{"name": "getitem"}, {"name": "getitem_1"}]},
                  {"as_sym_int": {"as_name": "getitem_2"}}],
      "metadata": {}})"));
  });
  Pt2Program p = readOk(out);
  const Node *n = nullptr;
  for (const Node &x : p.graph->nodes())
    if (x.target() == "mylib.multi.default")
      n = &x;
  ASSERT_NE(n, nullptr);
  ASSERT_EQ(n->numOutputs(), 4u);
  EXPECT_EQ(n->output(0)->name(), "multi_unused_0");
  EXPECT_EQ(n->output(2)->name(), "getitem_1");
  EXPECT_EQ(n->output(3)->kind(), ValueKind::SymInt);
  // Written back with the same output members, and read again identically.
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("multi_rt.pt2"), wo).ok());
  Pt2Program r = readOk(tmp("multi_rt.pt2"));
  EXPECT_EQ(text(*r.graph), text(*p.graph));
  auto z = ZipReader::open(tmp("multi_rt.pt2"));
  auto json = nlohmann::json::parse(*(*z)->read(*(*z)->find("multi_rt/models/model.json")));
  for (const auto &node : json["graph_module"]["graph"]["nodes"])
    if (node["target"] == "torch.ops.mylib.multi.default") {
      ASSERT_EQ(node["outputs"].size(), 4u);
      EXPECT_TRUE(node["outputs"][1].contains("as_none"));
      EXPECT_EQ(node["outputs"][2]["as_tensors"].size(), 2u);
      EXPECT_EQ(node["outputs"][3]["as_sym_int"]["as_name"], "getitem_2");
    }
}

// Output members generate_getitems knows but graft's IR has no value for
// (as_ints, ...), and an empty as_tensors (deserialize_multiple_outputs needs
// a first element), are refused naming the node.
TEST(Pt2Serde, UnsupportedNodeOutputsNameTheNode) {
  auto setOutputs = [](nlohmann::ordered_json outs) {
    return [outs](auto &j) {
      auto &node = j["graph_module"]["graph"]["nodes"][11];
      node["outputs"] = outs;
      node["name"] = "add_2";
    };
  };
  std::string e = errorAfterEdit("out_ints.pt2", setOutputs({{{"as_ints", {1, 2}}}}));
  EXPECT_NE(e.find("nodes[11].outputs[0]: node 'add_2' (aten.add.Tensor): node output of kind "
                   "'as_ints' is not supported"),
            std::string::npos)
      << e;
  e = errorAfterEdit("out_empty.pt2",
                     setOutputs({{{"as_tensors", nlohmann::ordered_json::array()}}}));
  EXPECT_NE(e.find("node 'add_2' (aten.add.Tensor): an empty as_tensors output"), std::string::npos)
      << e;
  e = errorAfterEdit("out_const.pt2", setOutputs({{{"as_sym_int", {{"as_int", 3}}}}}));
  EXPECT_NE(e.find("node 'add_2' (aten.add.Tensor): a node output must be named"),
            std::string::npos)
      << e;
}

// InputSpec kinds without an IR form: custom_obj (torchbind) and token
// (with_effects). Each is refused naming the input. OutputSpec kinds of
// training graphs likewise. (constant_input is read: see
// Pt2Serde.ConstantInputs.)
TEST(Pt2Serde, UnsupportedSignatureEntriesNameTheirInput) {
  auto &&specs = [](auto &j) -> auto & {
    return j["graph_module"]["signature"];
  };
  std::string e = errorAfterEdit("token_input.pt2", [&](auto &j) {
    j["graph_module"]["graph"]["inputs"][9] = {{"as_tensor", {{"name", "token"}}}};
    specs(j)["input_specs"][9] = {{"token", {{"arg", {{"name", "token"}}}}}};
  });
  EXPECT_NE(e.find("graph input 9 'token': input spec kind 'token' is not supported (the effect "
                   "token"),
            std::string::npos)
      << e;
  e = errorAfterEdit("loss_output.pt2", [&](auto &j) {
    specs(j)["output_specs"][1] = {{"loss_output", {{"arg", {{"name", "linear_1"}}}}}};
  });
  EXPECT_NE(e.find("graph output 1 'linear_1': output spec kind 'loss_output' is not supported"),
            std::string::npos)
      << e;
}

namespace {

/// Adds a forward() argument torch.export specialized to `value` as
/// torch/_export/serde/serialize.py writes it: serialize_input_spec's
/// constant_input{name, value} at input spec `at`, handle_placeholder's graph
/// input serialize_input(value) at the same place, and, in the top-level
/// module call signature, serialize_argument_spec's constant at user input
/// `userAt` plus its forward_arg_names entry.
void addConstantInput(nlohmann::ordered_json &j, std::size_t at, std::size_t userAt,
                      const std::string &name, const nlohmann::ordered_json &value) {
  auto &gm = j["graph_module"];
  auto &inputs = gm["graph"]["inputs"];
  inputs.insert(inputs.begin() + at, value);
  auto &specs = gm["signature"]["input_specs"];
  nlohmann::ordered_json spec = {{"constant_input", {{"name", name}, {"value", value}}}};
  specs.insert(specs.begin() + at, spec);
  auto &sig = gm["module_call_graph"][0]["signature"];
  sig["inputs"].insert(sig["inputs"].begin() + userAt, value);
  sig["forward_arg_names"].insert(sig["forward_arg_names"].begin() + userAt, name);
}

/// The parts of a model.json that carry the signature.
nlohmann::ordered_json signatureParts(const std::string &archive) {
  nlohmann::ordered_json j;
  editModelJson(archive, tmp("signature_probe.pt2"), [&](auto &m) { j = m; });
  const auto &gm = j["graph_module"];
  return {{"inputs", gm["graph"]["inputs"]},
          {"input_specs", gm["signature"]["input_specs"]},
          {"module_call_graph", gm["module_call_graph"]}};
}

/// ExecuTorch's Llama with a dynamic position
/// (llama_dynamic_pos_torch2_10.pt2) exported the way HF-style decoders are
/// called, forward(tokens, input_pos, use_cache=False, logits_to_keep=1) with
/// both keywords given: torch.export specializes them (constant_input), the
/// call signature's in_spec holds them as the kwargs dict's leaves
/// (treespec_dumps), and the nodes are unchanged (export traced with the
/// Python values).
std::string llamaWithConstantInputs() {
  static std::string path = [] {
    std::string p = tmp("llama_constant_inputs.pt2");
    editModelJson((kGolden / "llama_dynamic_pos_torch2_10.pt2").string(), p, [](auto &j) {
      std::size_t n = j["graph_module"]["graph"]["inputs"].size();
      addConstantInput(j, n, 2, "use_cache", {{"as_bool", false}});
      addConstantInput(j, n + 1, 3, "logits_to_keep", {{"as_int", 1}});
      auto &sig = j["graph_module"]["module_call_graph"][0]["signature"];
      std::string spec = sig["in_spec"];
      const std::string leaf = R"({"type": null, "context": null, "children_spec": []})";
      const std::string noKwargs =
          R"({"type": "builtins.dict", "context": "[]", "children_spec": []})";
      std::size_t k = spec.find(noKwargs);
      ASSERT_NE(k, std::string::npos) << spec;
      spec.replace(k, noKwargs.size(),
                   R"({"type": "builtins.dict", "context": "[\"use_cache\", \"logits_to_keep\"]", )"
                   R"("children_spec": [)" +
                       leaf + ", " + leaf + "]}");
      sig["in_spec"] = spec;
    });
    return p;
  }();
  return path;
}

} // namespace

// A specialized forward() argument (InputSpec.constant_input) has no input in
// the graph: the graph computes with its value, the run-time inputs are the
// tensors, graft print names it, writing the program back puts it back in
// its place, and the program compiles and runs like the model without it.
TEST(Pt2Read, SpecializedForwardArgumentsStayOutOfTheGraph) {
  const std::string path = llamaWithConstantInputs();
  Pt2Program p = readOk(path);
  std::vector<std::string> userInputs;
  for (const GraphInput &in : p.graph->inputs())
    if (in.kind == InputKind::UserInput)
      userInputs.push_back(in.value->name());
  EXPECT_EQ(userInputs, (std::vector<std::string>{"tokens", "input_pos"}));
  ASSERT_EQ(p.provenance.specializedInputs.size(), 2u);
  const Pt2SpecializedInput &useCache = p.provenance.specializedInputs[0];
  const Pt2SpecializedInput &keep = p.provenance.specializedInputs[1];
  EXPECT_EQ(str(useCache), "use_cache = False");
  EXPECT_EQ(useCache.value, Argument(false));
  EXPECT_EQ(useCache.userInputsBefore, 2u);
  EXPECT_EQ(str(keep), "logits_to_keep = 1");
  EXPECT_EQ(keep.value, Argument(int64_t(1)));
  EXPECT_EQ(keep.userInputsBefore, 2u);
  Pt2Program plain = readOk((kGolden / "llama_dynamic_pos_torch2_10.pt2").string());
  EXPECT_EQ(text(*p.graph, tmp("ci_a.bin")), text(*plain.graph, tmp("ci_b.bin")));
  EXPECT_EQ(slurp(tmp("ci_a.bin")), slurp(tmp("ci_b.bin")));

  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("llama_constant_inputs_rt.pt2"), wo).ok());
  EXPECT_EQ(signatureParts(tmp("llama_constant_inputs_rt.pt2")), signatureParts(path));

  std::string out, err;
  ASSERT_EQ(runCli("print " + path + " --no-metadata", &err, &out), 0) << err;
  EXPECT_EQ(out.rfind("// specialized input use_cache = False (constant_input: the graph computes "
                      "with this value; not a run-time input)\n"
                      "// specialized input logits_to_keep = 1 (constant_input",
                      0),
            0u)
      << out.substr(0, 400);

  const std::string prog = tmp("llama_constant_inputs.vkprog");
  ASSERT_EQ(runCli("compile " + path + " -o " + prog + " --json --quiet", &err, &out), 0) << err;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_EQ(j["partitions"], 1) << out;
  EXPECT_EQ(j["cpu_nodes"], 0) << out;
  EXPECT_EQ(runCli("run " + prog + " --check --atol 1e-4", &err), 0) << err;
}

// Every ConstantValue member (schema.py: as_none, as_int, as_float,
// as_string, as_bool; deserialize_constant_input) before and after the user
// input is read and written back in place; what serialize.py cannot have
// written is refused naming the input.
TEST(Pt2Serde, ConstantInputs) {
  // tinynet_torch2_9: graph inputs 0-8 are constants, 9 is 'tokens'.
  auto withConstants = [](auto &j) {
    addConstantInput(j, 9, 0, "n_heads", {{"as_int", 3}});
    addConstantInput(j, 11, 2, "mode", {{"as_string", "prefill"}});
    addConstantInput(j, 12, 3, "scale", {{"as_float", 0.5}});
    addConstantInput(j, 13, 4, "past", {{"as_none", true}});
    addConstantInput(j, 14, 5, "causal", {{"as_bool", true}});
  };
  const std::string path = tmp("const_inputs.pt2");
  editModelJson(kTiny9, path, withConstants);
  Pt2Program p = readOk(path);
  std::vector<std::string> seen;
  for (const Pt2SpecializedInput &in : p.provenance.specializedInputs)
    seen.push_back(str(in) + " @" + std::to_string(in.userInputsBefore));
  EXPECT_EQ(seen,
            (std::vector<std::string>{"n_heads = 3 @0", "mode = \"prefill\" @1", "scale = 0.5 @1",
                                      "past = None @1", "causal = True @1"}));
  EXPECT_EQ(text(*p.graph), text(*readOk(kTiny9).graph));
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("const_inputs_rt.pt2"), wo).ok());
  EXPECT_EQ(signatureParts(tmp("const_inputs_rt.pt2")), signatureParts(path));

  auto bad = [&](const std::string &name, const std::function<void(nlohmann::ordered_json &)> &f) {
    return errorAfterEdit(name, [&](auto &j) {
      addConstantInput(j, 9, 0, "n_heads", {{"as_int", 3}});
      f(j);
    });
  };
  auto &&spec = [](auto &j) -> auto & {
    return j["graph_module"]["signature"]["input_specs"][9]["constant_input"];
  };
  auto &&graphInput = [](auto &j) -> auto & {
    return j["graph_module"]["graph"]["inputs"][9];
  };
  std::string e = bad("const_tensor.pt2", [&](auto &j) {
    spec(j)["value"] = {{"as_tensor", {{"name", "tokens"}}}};
  });
  EXPECT_NE(e.find("input_specs[9].constant_input.value: graph input 9 'n_heads': a constant "
                   "input's value of kind 'as_tensor' is not a ConstantValue (as_none, as_int, "
                   "as_float, as_string or as_bool"),
            std::string::npos)
      << e;
  e = bad("const_unknown.pt2", [&](auto &j) { spec(j)["value"] = {{"as_complex", {1, 2}}}; });
  EXPECT_NE(e.find("graph input 9 'n_heads': a constant input's value of kind 'as_complex' is not "
                   "a ConstantValue"),
            std::string::npos)
      << e;
  e = bad("const_graph_tensor.pt2", [&](auto &j) {
    graphInput(j) = {{"as_tensor", {{"name", "n_heads"}}}};
  });
  EXPECT_NE(e.find("graph.inputs[9]: graph input 9 'n_heads': a constant input's value of kind "
                   "'as_tensor'"),
            std::string::npos)
      << e;
  e = bad("const_mismatch.pt2", [&](auto &j) { graphInput(j) = {{"as_int", 4}}; });
  EXPECT_NE(e.find("graph input 9 'n_heads': the graph input is 4 but its constant_input spec "
                   "says 3"),
            std::string::npos)
      << e;
  e = bad("const_clash_value.pt2", [&](auto &j) { spec(j)["name"] = "linear_1"; });
  EXPECT_NE(e.find("graph input 9 'linear_1': the constant input's name is also the name of "
                   "another graph value"),
            std::string::npos)
      << e;
  e = bad("const_clash_const.pt2", [&](auto &j) {
    addConstantInput(j, 10, 1, "n_heads", {{"as_bool", false}});
  });
  EXPECT_NE(e.find("graph input 10 'n_heads': the constant input's name is also the name of "
                   "another constant input"),
            std::string::npos)
      << e;
  e = bad("const_unnamed.pt2", [&](auto &j) { spec(j)["name"] = ""; });
  EXPECT_NE(e.find("graph input 9: constant input without a name"), std::string::npos) << e;
  // torch's deserialize_graph does not register the placeholder, so a node
  // cannot read it; the error names the node and the value it was.
  e = bad("const_used.pt2", [&](auto &j) {
    j["graph_module"]["graph"]["nodes"][11]["inputs"][1]["arg"] = {
        {"as_tensor", {{"name", "n_heads"}}}};
  });
  EXPECT_NE(e.find("refers to 'n_heads', a forward() argument torch.export specialized to 3 "
                   "(constant_input)"),
            std::string::npos)
      << e;
}

// A constant forward() returns (handle_output / serialize_output_spec write
// it as serialize_input's constant; deserialize_graph_output reads as_int and
// as_none) has no graph output: it is kept in place for writing and listed by
// graft print. Other constants, and a spec that disagrees, are refused.
TEST(Pt2Serde, ConstantOutputs) {
  // tinynet_torch2_9's outputs: 0 the buffer mutation of 'cache', 1 linear_1.
  auto addOutput = [](nlohmann::ordered_json &j, std::size_t at, std::size_t userAt,
                      const nlohmann::ordered_json &value) {
    auto &gm = j["graph_module"];
    auto &outs = gm["graph"]["outputs"];
    outs.insert(outs.begin() + at, value);
    auto &specs = gm["signature"]["output_specs"];
    nlohmann::ordered_json spec = {{"user_output", {{"arg", value}}}};
    specs.insert(specs.begin() + at, spec);
    auto &sig = gm["module_call_graph"][0]["signature"]["outputs"];
    sig.insert(sig.begin() + userAt, value);
  };
  const std::string path = tmp("const_outputs.pt2");
  editModelJson(kTiny9, path, [&](auto &j) {
    addOutput(j, 1, 0, {{"as_none", true}});
    addOutput(j, 3, 2, {{"as_int", 3}});
  });
  Pt2Program p = readOk(path);
  std::vector<std::string> seen;
  for (const Pt2ConstantOutput &o : p.provenance.constantOutputs)
    seen.push_back(str(o) + " @" + std::to_string(o.userOutputsBefore));
  EXPECT_EQ(seen, (std::vector<std::string>{"None @0", "3 @1"}));
  EXPECT_EQ(text(*p.graph), text(*readOk(kTiny9).graph));
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("const_outputs_rt.pt2"), wo).ok());
  auto outputsOf = [](const std::string &archive) {
    nlohmann::ordered_json j;
    editModelJson(archive, tmp("outputs_probe.pt2"), [&](auto &m) { j = m; });
    const auto &gm = j["graph_module"];
    return nlohmann::ordered_json{{"outputs", gm["graph"]["outputs"]},
                                  {"output_specs", gm["signature"]["output_specs"]},
                                  {"module_call_graph", gm["module_call_graph"]}};
  };
  EXPECT_EQ(outputsOf(tmp("const_outputs_rt.pt2")), outputsOf(path));
  std::string out, err;
  ASSERT_EQ(runCli("print " + path + " --no-metadata", &err, &out), 0) << err;
  EXPECT_EQ(out.rfind("// constant user output 0 = None (forward() returns this constant; not a "
                      "graph output)\n// constant user output 2 = 3 (",
                      0),
            0u)
      << out.substr(0, 300);

  std::string e = errorAfterEdit("const_out_float.pt2", [&](auto &j) {
    addOutput(j, 2, 1, {{"as_float", 0.5}});
  });
  EXPECT_NE(e.find("graph.outputs[2]: graph output 2: output of kind 'as_float' is not supported"),
            std::string::npos)
      << e;
  e = errorAfterEdit("const_out_mismatch.pt2", [&](auto &j) {
    addOutput(j, 2, 1, {{"as_int", 3}});
    j["graph_module"]["signature"]["output_specs"][2]["user_output"]["arg"] = {{"as_int", 4}};
  });
  EXPECT_NE(e.find("graph output 2: the graph output is 3 but its user_output spec says 4"),
            std::string::npos)
      << e;
  e = errorAfterEdit("const_out_mutation.pt2", [&](auto &j) {
    addOutput(j, 2, 1, {{"as_int", 3}});
    j["graph_module"]["signature"]["output_specs"][2] = {
        {"buffer_mutation", {{"arg", {{"name", "x"}}}, {"buffer_name", "cache"}}}};
  });
  EXPECT_NE(e.find("graph output 2: a constant output must be a user_output, not buffer_mutation"),
            std::string::npos)
      << e;
}

// A PayloadConfig's TensorMeta (torch/export/pt2_archive/_package.py,
// serialize_tensor_meta) is checked like a graph value's: a payload is
// mapped as strided bytes, so another layout is refused.
TEST(Pt2Serde, PayloadTensorMetaIsChecked) {
  editConstants(tmp("payload_layout.pt2"),
                [](auto &j) { j["config"]["cache"]["tensor_meta"]["layout"] = 1; });
  std::string e = errorOf(readPt2(tmp("payload_layout.pt2")));
  EXPECT_NE(e.find("config[\"cache\"].tensor_meta.layout: layout 1 is not supported"),
            std::string::npos)
      << e;
  editConstants(tmp("payload_device.pt2"), [](auto &j) {
    j["config"]["cache"]["tensor_meta"]["device"] = {{"type", "cpu"}, {"index", int64_t(1) << 40}};
  });
  e = errorOf(readPt2(tmp("payload_device.pt2")));
  EXPECT_NE(e.find("device index 1099511627776 is out of range"), std::string::npos) << e;
  editConstants(tmp("payload_grad.pt2"),
                [](auto &j) { j["config"]["cache"]["tensor_meta"]["requires_grad"] = 1; });
  e = errorOf(readPt2(tmp("payload_grad.pt2")));
  EXPECT_NE(e.find("tensor_meta.requires_grad: expected a boolean"), std::string::npos) << e;
}

// _get_raw_tensor_bytes writes no bytes for a tensor without elements (and
// for a fake tensor); _create_flat_tensor_from_bytes then makes zeros of the
// meta's size. An empty tensor is read as one (the constant has data); a
// fake tensor stays a constant without data.
TEST(Pt2Serde, EmptyPayloadRecords) {
  std::string out = tmp("empty_payload.pt2");
  editConstants(
      out,
      [](auto &j) {
        j["config"]["cache"]["tensor_meta"]["sizes"] = {{{"as_int", 0}}, {{"as_int", 4}}};
      },
      std::string());
  editModelJson(out, tmp("empty_payload2.pt2"), [](auto &j) {
    j["graph_module"]["graph"]["tensor_values"]["b_cache"]["sizes"][0] = {{"as_int", 0}};
  });
  Pt2Program p = readOk(tmp("empty_payload2.pt2"));
  const GraphInput *cache = p.graph->findConstant("cache");
  ASSERT_NE(cache, nullptr);
  ASSERT_TRUE(cache->hasData());
  EXPECT_EQ(cache->data().sizes(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(p.provenance.weightFileOffsets.count("cache"), 0u);
  // Written back as an empty record, and read as the same empty tensor.
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("empty_payload_rt.pt2"), wo).ok());
  Pt2Program rt = readOk(tmp("empty_payload_rt.pt2"));
  ASSERT_NE(rt.graph->findConstant("cache"), nullptr);
  ASSERT_TRUE(rt.graph->findConstant("cache")->hasData());
  EXPECT_EQ(rt.graph->findConstant("cache")->data().sizes(), (std::vector<int64_t>{0, 4}));
  // A fake tensor: f32[2, 4] with no bytes.
  editConstants(
      tmp("fake_payload.pt2"), [](auto &) {}, std::string());
  Pt2Program f = readOk(tmp("fake_payload.pt2"));
  ASSERT_NE(f.graph->findConstant("cache"), nullptr);
  EXPECT_FALSE(f.graph->findConstant("cache")->hasData());
}

namespace {

/// Deletes every `stride`-th field of `archive`'s model.json, or gives it a
/// value of another JSON type or an out-of-range integer, and reads the
/// result: the read either succeeds (a field graft ignores or keeps
/// verbatim) or fails with a message naming where; it never crashes (run
/// under build-asan too). Returns (failed reads, reads).
std::pair<int, int> mutateEveryField(const std::string &archive, std::size_t stride) {
  std::string src;
  {
    auto z = ZipReader::open(archive);
    EXPECT_TRUE(z.ok());
    if (!z.ok())
      return {0, 0};
    src = *(*z)->read(*(*z)->find("tinynet_torch2_9/models/model.json"));
  }
  const auto doc = nlohmann::ordered_json::parse(src);
  std::vector<nlohmann::ordered_json::json_pointer> paths;
  std::function<void(const nlohmann::ordered_json &, const nlohmann::ordered_json::json_pointer &)>
      walk = [&](const nlohmann::ordered_json &j, const nlohmann::ordered_json::json_pointer &p) {
        if (!p.empty())
          paths.push_back(p);
        if (j.is_object())
          for (auto it = j.begin(); it != j.end(); ++it)
            walk(it.value(), p / it.key());
        else if (j.is_array())
          for (std::size_t i = 0; i < j.size(); ++i)
            walk(j[i], p / i);
      };
  walk(doc, nlohmann::ordered_json::json_pointer());
  EXPECT_GT(paths.size(), 300u);
  int failures = 0, reads = 0;
  for (std::size_t i = 0; i < paths.size(); i += stride) {
    const auto &p = paths[i];
    const nlohmann::ordered_json &v = doc[p];
    std::vector<std::function<void(nlohmann::ordered_json &)>> edits = {
        [&](auto &j) {
          auto &parent = j[p.parent_pointer()];
          if (parent.is_object())
            parent.erase(p.back());
          else
            parent.erase(static_cast<std::size_t>(std::stoul(p.back())));
        },
        [&](auto &j) { j[p] = v.is_string() ? nlohmann::ordered_json(7) : "x"; },
    };
    if (v.is_number_integer()) {
      edits.push_back([&](auto &j) { j[p] = -1; });
      edits.push_back([&](auto &j) { j[p] = INT64_MAX; });
    }
    for (const auto &edit : edits) {
      editModelJson(archive, tmp("mutated.pt2"), edit);
      auto r = readPt2(tmp("mutated.pt2"));
      ++reads;
      if (r.ok())
        continue;
      ++failures;
      std::string e = diagText(r.diags());
      EXPECT_TRUE(e.find("tinynet_torch2_9") != std::string::npos ||
                  e.find("weight '") != std::string::npos)
          << p.to_string() << ": " << e;
    }
  }
  return {failures, reads};
}

} // namespace

// Every field of tinynet's model.json mutated (mutateEveryField). The fields
// with metadata strings and stack traces mutate alike; a stride over the
// paths keeps the test quick while reaching every section.
TEST(Pt2Serde, EveryFieldMutatedFailsCleanly) {
  auto [failures, reads] = mutateEveryField(kTiny9, 3);
  // Most mutations hit a field the schema requires.
  EXPECT_GT(failures, reads / 2) << failures << " of " << reads;
}

namespace {

/// `bytes` (a zip) with the central directory entry of `record` patched:
/// `patch` gets a pointer to its 46-byte fixed header.
std::string patchCentralEntry(std::string bytes, const std::string &record,
                              const std::function<void(char *)> &patch) {
  for (std::size_t pos = 0; (pos = bytes.find("PK\x01\x02", pos)) != std::string::npos; ++pos) {
    if (pos + 46 > bytes.size())
      break;
    auto u16 = [&](std::size_t at) {
      return static_cast<std::size_t>(static_cast<uint8_t>(bytes[at])) |
             static_cast<std::size_t>(static_cast<uint8_t>(bytes[at + 1])) << 8;
    };
    if (bytes.compare(pos + 46, u16(pos + 28), record) == 0 && u16(pos + 28) == record.size()) {
      patch(&bytes[pos]);
      return bytes;
    }
  }
  ADD_FAILURE() << "no central directory entry for " << record;
  return bytes;
}

} // namespace

// torch.export.save wrote its legacy zip with zipfile's default, stored; a
// tool that recompresses it deflates records, which torch still reads
// (zipfile inflates a record, torch.load reads the bytes). graft inflates
// them all: model.json and example inputs, and the nested torch.save archives
// (state dict, constants) into memory, whose weights are then copies, not
// mappings of the file. A deflated record claiming more than deflate's
// 1032:1 can give is refused before its buffer is allocated, a nested one too.
TEST(Pt2Serde, DeflatedLegacyRecords) {
  const std::string deflated = (kGolden / "tinynet_torch2_7_legacy_deflated.pt2").string();
  {
    auto z = ZipReader::open(deflated);
    ASSERT_TRUE(z.ok());
    for (const ZipEntry &e : (*z)->entries())
      EXPECT_EQ(e.method, 8) << e.name;
  }
  Pt2Program p = readOk(deflated);
  Pt2Program stored = readOk((kGolden / "tinynet_torch2_7_legacy.pt2").string());
  EXPECT_EQ(text(*p.graph), text(*stored.graph));
  // Nested pickles' aligned weights are mapped from the file (the 2.8
  // archive's; zipfile's legacy zip aligns none); the inflated ones are in
  // memory.
  auto mapped = [](const Graph &g) {
    std::size_t n = 0;
    for (const GraphInput &in : g.inputs())
      n += in.isConstant() && in.resident() && in.resident()->storage() &&
           in.resident()->storage()->isMapped();
    return n;
  };
  EXPECT_GT(mapped(*readOk((kGolden / "tinynet_torch2_8.pt2").string()).graph), 0u);
  EXPECT_EQ(mapped(*p.graph), 0u);
  EXPECT_TRUE(p.provenance.weightFileOffsets.empty());
  // The deflated example inputs were inflated: written back, they are the
  // 747-byte torch.save archive.
  Pt2WriteOptions wo;
  wo.provenance = &p.provenance;
  ASSERT_TRUE(writePt2(*p.graph, tmp("deflated_rt.pt2"), wo).ok());
  auto rt = ZipReader::open(tmp("deflated_rt.pt2"));
  ASSERT_TRUE(rt.ok());
  const ZipEntry *inputs = (*rt)->find("deflated_rt/data/sample_inputs/model.pt");
  ASSERT_NE(inputs, nullptr);
  EXPECT_EQ(inputs->size, 747u);

  std::string bytes = slurp(deflated);
  std::string huge = patchCentralEntry(bytes, "serialized_exported_program.json", [](char *h) {
    std::memcpy(h + 24, "\xf0\xff\xff\xff", 4); // uncompressed size 4294967280
  });
  ASSERT_TRUE(writeFileAtomic(tmp("deflate_huge.pt2"), huge).ok());
  std::string e = errorOf(readPt2(tmp("deflate_huge.pt2")));
  EXPECT_NE(e.find("record 'serialized_exported_program.json' is corrupt: 1861 deflated bytes "
                   "cannot inflate to 4294967280"),
            std::string::npos)
      << e;
  std::string nested = patchCentralEntry(bytes, "serialized_state_dict.pt", [](char *h) {
    std::memcpy(h + 24, "\x00\x00\x40\x00", 4); // uncompressed size 4 MiB from 1001 bytes
  });
  ASSERT_TRUE(writeFileAtomic(tmp("deflate_nested.pt2"), nested).ok());
  e = errorOf(readPt2(tmp("deflate_nested.pt2")));
  EXPECT_NE(e.find("record 'serialized_state_dict.pt' is corrupt: 1001 deflated bytes cannot "
                   "inflate to 4194304"),
            std::string::npos)
      << e;
  // A nested archive whose bytes do not inflate to its size (a wrong size in
  // the directory) is corrupt, named.
  std::string shortSize = patchCentralEntry(bytes, "serialized_constants.pt", [](char *h) {
    std::memcpy(h + 24, "\xe8\x03\x00\x00", 4); // 1000 instead of 999
  });
  ASSERT_TRUE(writeFileAtomic(tmp("deflate_nested_size.pt2"), shortSize).ok());
  e = errorOf(readPt2(tmp("deflate_nested_size.pt2")));
  EXPECT_NE(e.find("record 'serialized_constants.pt' is corrupt: its deflate stream does not "
                   "inflate to 1000 bytes"),
            std::string::npos)
      << e;
}

// Higher-order ops with subgraphs other than wrap_with_set_grad_enabled
// (serialize_hoo_inputs: unnamed positional operands; a GraphArgument for
// each submodule), e.g. the wrap_with_autocast torch.export's training IR
// makes of an autocast region (inlining it would drop autocast's casts):
// graft's IR has no subgraphs, so the node and the operand are named.
TEST(Pt2Serde, SubgraphOperandsNameTheNode) {
  std::string e = errorAfterEdit("hop_graph.pt2", [](auto &j) {
    auto &graph = j["graph_module"]["graph"];
    graph["tensor_values"]["wrap_with_autocast"] = graph["tensor_values"]["add_2"];
    graph["nodes"].push_back(nlohmann::ordered_json::parse(R"({
      "target": "torch.ops.higher_order.wrap_with_autocast",
      "inputs": [{"name": "", "arg": {"as_string": "cpu"}, "kind": 1},
                 {"name": "", "arg": {"as_scalar_type": 13}, "kind": 1},
                 {"name": "", "arg": {"as_bool": true}, "kind": 1},
                 {"name": "", "arg": {"as_none": true}, "kind": 1},
                 {"name": "", "arg": {"as_graph": {"name": "submod_1", "graph": {
                   "inputs": [], "outputs": [], "nodes": [], "tensor_values": {},
                   "sym_int_values": {}, "sym_bool_values": {}}}}, "kind": 1},
                 {"name": "", "arg": {"as_tensor": {"name": "add_2"}}, "kind": 1}],
      "outputs": [{"as_tensor": {"name": "wrap_with_autocast"}}],
      "metadata": {},
      "is_hop_single_tensor_return": true})"));
  });
  EXPECT_NE(e.find("node 'wrap_with_autocast' (higher_order.wrap_with_autocast) argument "
                   "'operand 4': argument kind 'as_graph' cannot be represented"),
            std::string::npos)
      << e;
}

namespace {

/// tinynet_torch2_9 with `h = h * self.scale; h = h + self.row` (nodes 2
/// and 3: mul, add) inside `torch.no_grad()`, as torch.export's training IR
/// writes it: replace_set_grad_with_hop_pass's _replace_with_hop_helper makes
/// the region a submodule called by wrap_with_set_grad_enabled(False, body,
/// *operands), split_module names the body's placeholders after the values
/// passed in (embedding, b_scale, b_row), and serialize.py writes the body
/// as an as_graph operand with its own values. `outNames` are the node's
/// outputs: a single result is read through a getitem node (["getitem"]);
/// several are getitems renamed after the body's outputs.
void wrapMulAddInNoGrad(nlohmann::ordered_json &j, const std::vector<std::string> &bodyOuts,
                        const std::vector<std::string> &outNames) {
  auto &graph = j["graph_module"]["graph"];
  auto &nodes = graph["nodes"];
  nlohmann::ordered_json body = {{"inputs",
                                  {{{"as_tensor", {{"name", "embedding"}}}},
                                   {{"as_tensor", {{"name", "b_scale"}}}},
                                   {{"as_tensor", {{"name", "b_row"}}}}}},
                                 {"outputs", nlohmann::ordered_json::array()},
                                 {"nodes", {nodes[2], nodes[3]}},
                                 {"tensor_values", nlohmann::ordered_json::object()},
                                 {"sym_int_values", nlohmann::ordered_json::object()},
                                 {"sym_bool_values", nlohmann::ordered_json::object()},
                                 {"is_single_tensor_return", false},
                                 {"custom_obj_values", nlohmann::ordered_json::object()},
                                 {"sym_float_values", nlohmann::ordered_json::object()}};
  for (const char *v : {"embedding", "b_scale", "b_row", "mul", "add"})
    body["tensor_values"][v] = graph["tensor_values"][v];
  for (const std::string &o : bodyOuts)
    body["outputs"].push_back({{"as_tensor", {{"name", o}}}});
  nlohmann::ordered_json outs = nlohmann::ordered_json::array();
  for (const std::string &o : outNames) {
    outs.push_back({{"as_tensor", {{"name", o}}}});
    if (!graph["tensor_values"].contains(o))
      graph["tensor_values"][o] = graph["tensor_values"]["add"];
  }
  auto operand = [](nlohmann::ordered_json a) {
    return nlohmann::ordered_json{{"name", ""}, {"arg", std::move(a)}, {"kind", 1}};
  };
  nlohmann::ordered_json hop = {{"target", "torch.ops.higher_order.wrap_with_set_grad_enabled"},
                                {"inputs",
                                 {operand({{"as_bool", false}}),
                                  operand({{"as_graph", {{"name", "submod_1"}, {"graph", body}}}}),
                                  operand({{"as_tensor", {{"name", "embedding"}}}}),
                                  operand({{"as_tensor", {{"name", "b_scale"}}}}),
                                  operand({{"as_tensor", {{"name", "b_row"}}}})}},
                                {"outputs", outs},
                                {"metadata", nlohmann::ordered_json::object()},
                                {"is_hop_single_tensor_return", false}};
  nodes.erase(nodes.begin() + 2, nodes.begin() + 4);
  nodes.insert(nodes.begin() + 2, hop);
  if (outNames.size() == 1 && outNames[0] != "add") {
    graph["tensor_values"].erase("mul");
    graph["tensor_values"].erase("add");
    nodes[3]["inputs"][0]["arg"]["as_tensor"]["name"] = outNames[0]; // add_1 reads it
  }
}

} // namespace

// A torch.no_grad() region in training IR (wrap_with_set_grad_enabled) is
// inlined: the graph is the one without the region, as run_decompositions
// (ExecuTorch's to_edge) gives. Malformed regions are refused naming the node.
TEST(Pt2Serde, GradRegionsAreInlined) {
  Pt2Program plain = readOk(kTiny9);
  const std::string one = tmp("no_grad_one.pt2");
  editModelJson(kTiny9, one, [](auto &j) { wrapMulAddInNoGrad(j, {"add"}, {"getitem"}); });
  Pt2Program inlined = readOk(one);
  EXPECT_EQ(text(*inlined.graph), text(*plain.graph));
  // Written back, the region is gone: the graph torch's run_decompositions gives.
  Pt2WriteOptions wo;
  wo.provenance = &inlined.provenance;
  ASSERT_TRUE(writePt2(*inlined.graph, tmp("no_grad_rt.pt2"), wo).ok());
  EXPECT_EQ(text(*readOk(tmp("no_grad_rt.pt2")).graph), text(*plain.graph));
  const std::string two = tmp("no_grad_two.pt2");
  editModelJson(kTiny9, two, [](auto &j) {
    wrapMulAddInNoGrad(j, {"mul", "add"}, {"mul", "add"});
  });
  EXPECT_EQ(text(*readOk(two).graph), text(*plain.graph));

  auto &&hop = [](auto &j) -> auto & {
    return j["graph_module"]["graph"]["nodes"][2];
  };
  std::string e = errorAfterEdit("no_grad_enabled.pt2", [&](auto &j) {
    wrapMulAddInNoGrad(j, {"add"}, {"getitem"});
    hop(j)["inputs"][0]["arg"] = {{"as_int", 0}};
  });
  EXPECT_NE(e.find("node 'getitem' (higher_order.wrap_with_set_grad_enabled): operand 0 "
                   "(enabled) must be a bool"),
            std::string::npos)
      << e;
  e = errorAfterEdit("no_grad_arity.pt2", [&](auto &j) {
    wrapMulAddInNoGrad(j, {"add"}, {"getitem"});
    hop(j)["inputs"].erase(hop(j)["inputs"].begin() + 4);
  });
  EXPECT_NE(e.find("node 'getitem' (higher_order.wrap_with_set_grad_enabled): the body has 3 "
                   "inputs for 2 operands"),
            std::string::npos)
      << e;
  e = errorAfterEdit("no_grad_outputs.pt2", [&](auto &j) {
    wrapMulAddInNoGrad(j, {"add"}, {"getitem"});
    hop(j)["outputs"].push_back({{"as_tensor", {{"name", "getitem_1"}}}});
    j["graph_module"]["graph"]["tensor_values"]["getitem_1"] =
        j["graph_module"]["graph"]["tensor_values"]["getitem"];
  });
  EXPECT_NE(e.find("the body returns 1 values for 2 node outputs"), std::string::npos) << e;
  e = errorAfterEdit("no_grad_clash.pt2", [&](auto &j) {
    wrapMulAddInNoGrad(j, {"add"}, {"getitem"});
    auto &body = hop(j)["inputs"][1]["arg"]["as_graph"]["graph"];
    body["inputs"][0]["as_tensor"]["name"] = "tokens";
  });
  EXPECT_NE(e.find("'tokens' names both 'embedding' and another value of the graph"),
            std::string::npos)
      << e;
  e = errorAfterEdit("no_grad_symbol.pt2", [&](auto &j) {
    wrapMulAddInNoGrad(j, {"add"}, {"getitem"});
    auto &body = hop(j)["inputs"][1]["arg"]["as_graph"]["graph"];
    body["nodes"][0]["outputs"] = {{{"as_sym_int", {{"as_name", "mul"}}}}};
  });
  EXPECT_NE(e.find("the region's body defines a symbolic value"), std::string::npos) << e;
}

// The same mutations over tinynet with a specialized argument, a constant
// output and a torch.no_grad() region (the forms the reader used to refuse):
// their fields, the region's body included, fail cleanly too.
TEST(Pt2Serde, EveryFieldOfTheNewFormsMutatedFailsCleanly) {
  const std::string forms = tmp("all_forms.pt2");
  editModelJson(kTiny9, forms, [](auto &j) {
    wrapMulAddInNoGrad(j, {"add"}, {"getitem"});
    addConstantInput(j, 9, 0, "n_heads", {{"as_int", 3}});
    j["graph_module"]["graph"]["outputs"].push_back({{"as_int", 1}});
    nlohmann::ordered_json spec = {{"user_output", {{"arg", {{"as_int", 1}}}}}};
    j["graph_module"]["signature"]["output_specs"].push_back(spec);
  });
  readOk(forms);
  auto [failures, reads] = mutateEveryField(forms, 2);
  EXPECT_GT(failures, 0) << reads;
}
