//===- ProgramFileTest.cpp - The .vkprog program file ---------------------===//
//
// Round trips (structure, constants, plan, provenance, reference graph),
// deduplication of byte-identical constants, 64-byte alignment of mapped
// constants, atomic writing, and every corruption the reader must turn into
// an error naming the section instead of a crash.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/ProgramFile.h"

#include "graft/rewrite/ConstantTransforms.h"

#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

namespace graft {
namespace {

namespace fs = std::filesystem;

// Two byte-identical 128-element weights (a tied embedding / lm_head pair),
// a distinct one, a small inline constant, and a constant nothing reads.
const char *kGraph = R"(graph @tied {
  input %x : f32[2, 128]
  param %emb : f32[128] fqn="tok_embeddings.weight" = random(seed=7, min=-1.0, max=1.0)
  param %head : f32[128] fqn="output.weight" = random(seed=7, min=-1.0, max=1.0)
  param %other : f32[128] fqn="norm.weight" = random(seed=8, min=-1.0, max=1.0)
  const %c : f32[4] fqn="_tensor_constant0" = [1.0, 2.5, -3.0, 4.0]
  param %unused : f32[8] fqn="unused.weight" = full(2.0)
  %a : f32[2, 128] = aten.mul.Tensor(%x, %emb)
  %b : f32[2, 128] = aten.add.Tensor(%a, %head)
  %d : f32[2, 128] = aten.mul.Tensor(%b, %other)
  %e : f32[4] = aten.mul.Tensor(%c, %c)
  output %d
  output %e
}
)";

std::unique_ptr<Graph> parse(const char *text = kGraph) {
  auto g = parseGraph(text, "test.gir");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags()));
  return g.ok() ? std::move(*g) : nullptr;
}

Program makeProgram(bool withReference = false) {
  Program p;
  p.graph = parse();
  if (withReference)
    p.reference = parse();
  p.target = "lavapipe";
  p.sourcePath = "model.pt2";
  p.sourceBytes = 1234;
  p.summaryJson = R"({"nodes_in": 3})";
  int i = 0;
  for (const Node &n : p.graph->nodes()) {
    ProgramNodePlan np;
    np.node = n.output(0)->name();
    np.target = n.target();
    np.placement = i == 2 ? "cpu" : "device";
    np.kernel = i == 2 ? "interpreter" : "binary";
    np.reason = i == 2 ? "testing" : "";
    np.partition = i == 2 ? -1 : 0;
    p.plan.push_back(np);
    ++i;
  }
  p.partitions.push_back(ProgramSubgraph{0, {0, 1}});
  p.cpuSubgraphs.push_back(ProgramSubgraph{0, {2}});
  ProgramProvenance prov;
  prov.fqn = "output.weight";
  prov.transform = "identity";
  prov.sources = {"tok_embeddings.weight"};
  prov.args = "";
  prov.rule = "tie";
  prov.requests = 2;
  prov.origins = {"tok_embeddings.weight"};
  p.provenance.push_back(prov);
  return p;
}

class ProgramFileTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("graft-progtest-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }

  /// A valid program file's bytes.
  std::string validBytes(bool withReference = false) {
    std::string p = path("valid.vkprog");
    auto st = writeProgram(makeProgram(withReference), p);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : render(st.diags()));
    auto bytes = readFile(p);
    EXPECT_TRUE(bytes.ok());
    return bytes.ok() ? *bytes : std::string();
  }

  /// Writes `bytes` and reads them back; returns the error message (empty on success).
  std::string readError(const std::string &bytes, const ProgramReadOptions &o = {}) {
    std::string p = path("bad.vkprog");
    EXPECT_TRUE(writeFileAtomic(p, bytes).ok());
    auto r = readProgram(p, o);
    return r.ok() ? std::string() : r.diags().front().message;
  }

  fs::path dir_;
};

uint64_t u64(const std::string &b, std::size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}
void setU64(std::string &b, std::size_t at, uint64_t v) {
  std::memcpy(b.data() + at, &v, 8);
}
void setU32(std::string &b, std::size_t at, uint32_t v) {
  std::memcpy(b.data() + at, &v, 4);
}

struct Sec {
  std::string tag, bytes;
};

/// Splits a file into its sections (in table order).
std::vector<Sec> sections(const std::string &b) {
  uint32_t count;
  std::memcpy(&count, b.data() + 12, 4);
  std::vector<Sec> out;
  for (uint32_t i = 0; i < count; ++i) {
    std::size_t at = 64 + i * 32;
    Sec s;
    s.tag.assign(b.data() + at, strnlen(b.data() + at, 8));
    s.bytes = b.substr(u64(b, at + 8), u64(b, at + 16));
    out.push_back(s);
  }
  return out;
}

/// Reassembles a consistent file (offsets, sizes, hashes, file size) from
/// sections, so a test can damage exactly one thing.
std::string assemble(const std::vector<Sec> &secs, uint32_t version = kProgramVersion) {
  std::string table, body;
  uint64_t at = 64 + secs.size() * 32;
  std::vector<uint64_t> offsets;
  for (const Sec &s : secs) {
    if (s.tag == "DATA") {
      uint64_t aligned = (at + 63) / 64 * 64;
      body.append(aligned - at, '\0');
      at = aligned;
    }
    offsets.push_back(at);
    body += s.bytes;
    at += s.bytes.size();
  }
  for (std::size_t i = 0; i < secs.size(); ++i) {
    char tag[8] = {};
    std::memcpy(tag, secs[i].tag.data(), std::min<std::size_t>(8, secs[i].tag.size()));
    table.append(tag, 8);
    std::string n(24, '\0');
    setU64(n, 0, offsets[i]);
    setU64(n, 8, secs[i].bytes.size());
    setU64(n, 16,
           secs[i].tag == "DATA"
               ? 0
               : contentHash(reinterpret_cast<const uint8_t *>(secs[i].bytes.data()),
                             secs[i].bytes.size()));
    table += n;
  }
  std::string header(64, '\0');
  std::memcpy(header.data(), kProgramMagic, 8);
  setU32(header, 8, version);
  setU32(header, 12, static_cast<uint32_t>(secs.size()));
  setU64(header, 16, 64 + table.size() + body.size());
  setU64(header, 24, 64);
  setU64(header, 32, contentHash(reinterpret_cast<const uint8_t *>(table.data()), table.size()));
  return header + table + body;
}

/// The file with one section's JSON edited.
std::string editJson(const std::string &valid, const std::string &tag,
                     const std::function<void(nlohmann::json &)> &edit) {
  auto secs = sections(valid);
  for (Sec &s : secs)
    if (s.tag == tag) {
      nlohmann::json j = nlohmann::json::parse(s.bytes);
      edit(j);
      s.bytes = j.dump();
    }
  return assemble(secs);
}

TEST_F(ProgramFileTest, RoundTrip) {
  Program p = makeProgram(/*withReference=*/true);
  std::string file = path("m.vkprog");
  auto st = writeProgram(p, file);
  ASSERT_TRUE(st.ok()) << render(st.diags());
  ProgramStats readStats;
  auto back = readProgram(file, {.verifyData = true}, &readStats);
  ASSERT_TRUE(back.ok()) << render(back.diags());

  // Structure and constants: the reprinted graphs match, constants with the
  // same bytes.
  // The structure (constants without their initializers: the original's
  // are random(...), the read-back ones mapped data).
  auto print = [](Graph &g) {
    for (GraphInput &in : g.inputs())
      in.init.reset();
    auto t = printGraph(g);
    EXPECT_TRUE(t.ok());
    return t.ok() ? *t : std::string();
  };
  // A constant nothing reads is kept in the signature but stores no data.
  EXPECT_FALSE(back->graph->findConstant("unused.weight")->hasData());
  for (const GraphInput &in : back->graph->inputs())
    if (in.isConstant() && in.fqn != "unused.weight") {
      const GraphInput *orig = p.graph->findConstant(in.fqn);
      ASSERT_NE(orig, nullptr) << in.fqn;
      EXPECT_TRUE(in.data().equal(orig->data())) << in.fqn;
      // Mapped from the file, 64-byte aligned.
      EXPECT_TRUE(in.data().storage()->isMapped()) << in.fqn;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(in.data().rawData()) % kProgramAlignment, 0u);
    }
  // Writing what was read gives the same bytes (deterministic).
  std::string again = path("again.vkprog");
  ASSERT_TRUE(writeProgram(*back, again).ok());
  EXPECT_EQ(*readFile(file), *readFile(again));

  EXPECT_EQ(print(*back->graph), print(*p.graph));
  ASSERT_NE(back->reference, nullptr);
  EXPECT_EQ(print(*back->reference), print(*p.reference));

  EXPECT_EQ(back->target, "lavapipe");
  EXPECT_EQ(back->sourcePath, "model.pt2");
  EXPECT_EQ(back->sourceBytes, 1234u);
  EXPECT_EQ(nlohmann::json::parse(back->summaryJson)["nodes_in"], 3);
  ASSERT_EQ(back->plan.size(), 4u);
  EXPECT_EQ(back->plan[2].placement, "cpu");
  EXPECT_EQ(back->plan[2].reason, "testing");
  EXPECT_EQ(back->plan[0].kernel, "binary");
  EXPECT_EQ(back->plan[1].partition, 0);
  ASSERT_EQ(back->partitions.size(), 1u);
  EXPECT_EQ(back->partitions[0].nodes, (std::vector<std::size_t>{0, 1}));
  ASSERT_EQ(back->cpuSubgraphs.size(), 1u);
  ASSERT_EQ(back->provenance.size(), 1u);
  EXPECT_EQ(back->provenance[0].fqn, "output.weight");
  EXPECT_EQ(back->provenance[0].requests, 2u);
  EXPECT_EQ(back->provenance[0].origins, std::vector<std::string>{"tok_embeddings.weight"});
}

TEST_F(ProgramFileTest, TiedConstantsStoredOnce) {
  Program p = makeProgram(/*withReference=*/true);
  auto st = writeProgram(p, path("m.vkprog"));
  ASSERT_TRUE(st.ok()) << render(st.diags());
  // emb and head are byte-identical: 3 distinct blobs for 4 constants in the
  // fused graph, and the reference graph's 4 constants add nothing.
  EXPECT_EQ(st->constants, 8u);
  EXPECT_EQ(st->blobs, 3u);
  EXPECT_EQ(st->blobBytes, 128u * 4 * 2 + 16);
  EXPECT_EQ(st->graphBlobBytes, st->blobBytes);
  EXPECT_EQ(st->dedupedBytes, 128u * 4 + (128u * 4 * 3 + 16));
  auto back = readProgram(path("m.vkprog"));
  ASSERT_TRUE(back.ok());
  const GraphInput *emb = back->graph->findConstant("tok_embeddings.weight");
  const GraphInput *head = back->graph->findConstant("output.weight");
  // One mapping serves both.
  EXPECT_EQ(emb->data().storage(), head->data().storage());
}

TEST_F(ProgramFileTest, WriteIsAtomic) {
  Program p = makeProgram();
  // A missing directory: an error, nothing left behind.
  std::string bad = path("missing/dir/m.vkprog");
  auto st = writeProgram(p, bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.diags().front().message.find("cannot write"), std::string::npos);
  EXPECT_FALSE(fs::exists(bad));
  // Overwriting keeps no temp files.
  ASSERT_TRUE(writeProgram(p, path("m.vkprog")).ok());
  ASSERT_TRUE(writeProgram(p, path("m.vkprog")).ok());
  int files = 0;
  for (const auto &e : fs::directory_iterator(dir_))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_TRUE(isProgramFile(path("m.vkprog")));
}

TEST_F(ProgramFileTest, HeaderCorruption) {
  std::string valid = validBytes();
  ASSERT_GT(valid.size(), 200u);
  EXPECT_EQ(readError(valid), "");

  auto expectError = [&](const std::string &bytes, const std::string &section,
                         const std::string &what) {
    std::string msg = readError(bytes);
    EXPECT_NE(msg.find(section), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  // Truncation anywhere: in the header, in the table, in a section, in DATA.
  for (std::size_t n : {std::size_t(0), std::size_t(7), std::size_t(63), std::size_t(100),
                        valid.size() / 2, valid.size() - 1})
    expectError(valid.substr(0, n), "header", "truncated");
  expectError(valid + "x", "header", "appended");

  std::string b = valid;
  b[0] = 'X';
  expectError(b, "header", "bad magic");
  b = valid;
  setU32(b, 8, kProgramVersion + 1);
  expectError(b, "header", "unsupported format version " + std::to_string(kProgramVersion + 1));
  b = valid;
  setU32(b, 8, 0);
  expectError(b, "header", "unsupported format version 0");
  b = valid;
  setU32(b, 12, 1000);
  expectError(b, "header", "section count");
  b = valid;
  setU64(b, 24, valid.size() - 8);
  expectError(b, "header", "section table out of range");
  b = valid;
  b[64 + 9] ^= 1; // a table entry's offset
  expectError(b, "header", "section table checksum");
}

TEST_F(ProgramFileTest, SectionCorruption) {
  std::string valid = validBytes(/*withReference=*/true);
  auto secs = sections(valid);
  auto expectError = [&](const std::string &bytes, const std::string &what) {
    std::string msg = readError(bytes);
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
  };
  // A metadata byte flipped: the section's checksum names it.
  for (const char *tag : {"META", "GRAPH", "REFGRAPH", "CONSTS", "PLAN", "PROV"}) {
    std::string b = valid;
    for (std::size_t i = 0; i < secs.size(); ++i)
      if (secs[i].tag == tag)
        b[u64(valid, 64 + i * 32 + 8) + 1] ^= 0x20;
    expectError(b, std::string("section ") + tag + ": checksum mismatch");
  }
  // A section pointing outside the file (table hash kept consistent).
  {
    std::string b = valid;
    setU64(b, 64 + 1 * 32 + 8, valid.size() + 10);
    std::string table = b.substr(64, secs.size() * 32);
    setU64(b, 32, contentHash(reinterpret_cast<const uint8_t *>(table.data()), table.size()));
    expectError(b, "section GRAPH: offset");
  }
  // Missing and duplicated sections.
  for (const char *tag : {"META", "GRAPH", "CONSTS", "PLAN", "PROV", "DATA"}) {
    std::vector<Sec> fewer;
    for (const Sec &s : secs)
      if (s.tag != tag)
        fewer.push_back(s);
    expectError(assemble(fewer), std::string("section ") + tag + ": section is missing");
  }
  {
    std::vector<Sec> dup = secs;
    dup.insert(dup.begin(), secs[0]);
    expectError(assemble(dup), "section META: section appears twice");
  }
  // Unparseable content.
  for (const char *tag : {"META", "CONSTS", "PLAN", "PROV"}) {
    std::vector<Sec> s2 = secs;
    for (Sec &s : s2)
      if (s.tag == tag)
        s.bytes = "{not json";
    expectError(assemble(s2), std::string("section ") + tag + ": is not valid JSON");
  }
  {
    std::vector<Sec> s2 = secs;
    for (Sec &s : s2)
      if (s.tag == "GRAPH")
        s.bytes = "graph @g( {";
    expectError(assemble(s2), "section GRAPH: invalid graph text");
  }
  // Well-formed JSON with wrong content.
  expectError(editJson(valid, "META", [](auto &j) { j["format"] = "other"; }),
              "section META: format");
  expectError(editJson(valid, "META", [](auto &j) { j.erase("target"); }),
              "section META: malformed");
  expectError(editJson(valid, "CONSTS", [](auto &j) { j["blobs"][0]["offset"] = 1u << 30; }),
              "section CONSTS: blob 0 (offset 1073741824");
  expectError(editJson(valid, "CONSTS", [](auto &j) { j["blobs"][1]["offset"] = 65; }),
              "section CONSTS: blob 1 at offset 65 is not 64-byte aligned");
  expectError(editJson(valid, "CONSTS", [](auto &j) { j["bindings"][0]["blob"] = 99; }),
              "blob 99 does not exist");
  expectError(editJson(valid, "CONSTS", [](auto &j) { j["bindings"][0]["input"] = 0; }),
              "is not a constant");
  expectError(editJson(valid, "CONSTS", [](auto &j) { j["bindings"][0]["fqn"] = "nope"; }),
              "binding of 'nope'");
  expectError(editJson(valid, "CONSTS",
                       [](auto &j) {
                         // The 16-byte inline constant bound to a 512-byte blob.
                         for (auto &b : j["bindings"])
                           if (b["fqn"] == "_tensor_constant0")
                             b["blob"] = 0;
                       }),
              "needs 16 bytes, blob 0 has 512");
  expectError(editJson(valid, "CONSTS", [](auto &j) { j["bindings"][0]["graph"] = "other"; }),
              "names graph 'other'");
  expectError(editJson(valid, "PLAN", [](auto &j) { j["nodes"].erase(0); }),
              "section PLAN: has 3 nodes, the graph 4");
  expectError(editJson(valid, "PLAN", [](auto &j) { j["nodes"][0]["placement"] = "moon"; }),
              "unknown placement 'moon'");
  expectError(editJson(valid, "PLAN", [](auto &j) { j["nodes"][0]["target"] = "aten.x.y"; }),
              "section PLAN: node 0 is %a (aten.x.y)");
  expectError(editJson(valid, "PLAN", [](auto &j) { j["partitions"][0]["nodes"][0] = 7; }),
              "partition 0 names node 7 of 4");
  expectError(editJson(valid, "PROV", [](auto &j) { j[0].erase("rule"); }),
              "section PROV: malformed");
  // DATA that is not 64-byte aligned.
  {
    std::string b = valid;
    std::size_t dataEntry = 64 + (secs.size() - 1) * 32;
    ASSERT_EQ(b.substr(dataEntry, 4), "DATA");
    setU64(b, dataEntry + 8, u64(b, dataEntry + 8) - 1);
    std::string table = b.substr(64, secs.size() * 32);
    setU64(b, 32, contentHash(reinterpret_cast<const uint8_t *>(table.data()), table.size()));
    expectError(b, "section DATA: section is not 64-byte aligned");
  }
  // A damaged constant: found with verifyData, not without (lazy mapping).
  {
    std::string b = valid;
    // The last bytes of DATA (the section table says where it lies: graft
    // writes it before the metadata sections, so constants can stream).
    std::size_t dataEntry = 64 + (secs.size() - 1) * 32;
    ASSERT_EQ(b.substr(dataEntry, 4), "DATA");
    b[u64(b, dataEntry + 8) + u64(b, dataEntry + 16) - 20] ^= 0x55;
    EXPECT_EQ(readError(b), "");
    std::string msg = readError(b, {.verifyData = true});
    EXPECT_NE(msg.find("section DATA: blob"), std::string::npos) << msg;
    EXPECT_NE(msg.find("content hash mismatch"), std::string::npos) << msg;
  }
}

/// A deferred transform call, as the rewrite driver makes them.
std::shared_ptr<const DeferredData>
deferred(const std::string &transform, std::vector<std::shared_ptr<const DeferredData>> inputs,
         const std::vector<const TensorProto *> &protos,
         std::vector<std::pair<std::string, Argument>> kwargs, TensorProto *planned) {
  const auto *tf = rewrite::ConstantTransformRegistry::builtin().find(transform);
  EXPECT_NE(tf, nullptr);
  auto args = rewrite::bindTransformArgs(*tf, {}, kwargs);
  EXPECT_TRUE(args.ok());
  auto plan = rewrite::planTransform(*tf, protos, *args);
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : render(plan.diags()));
  *planned = plan->proto;
  return rewrite::deferTransform(*tf, *args, plan->proto, std::move(inputs), transform, transform);
}

// Derived constants whose inputs the file stores anyway (8da4w's weight sums,
// computed from the packed weight) are stored as recipes and computed at load.
TEST_F(ProgramFileTest, RecipesAreComputedAtLoad) {
  const char *text = R"(graph @r {
  input %x : i32[2, 8]
  param %w : i8[8, 64] fqn="w" = random(seed=3, min=-8, max=7)
  param %p : u8[8, 32] fqn="w.packed"
  param %sums : i32[2, 8] fqn="w.sums"
  %a : i32[2, 8] = aten.add.Tensor(%x, %sums)
  output %a
  output %p
}
)";
  Program prog;
  prog.graph = parse(text);
  ASSERT_NE(prog.graph, nullptr);
  Graph &g = *prog.graph;
  GraphInput &w = g.inputs()[1], &packed = g.inputs()[2], &sums = g.inputs()[3];
  TensorProto pp, up, sp;
  packed.init = DeferredInit{deferred("pack_int4", {w.dataSource()}, {&w.value->proto()},
                                      {{"nibbles", Argument("low_first")}}, &pp)};
  auto unpacked =
      deferred("unpack_int4", {packed.dataSource()}, {&pp},
               {{"nibbles", Argument("low_first")}, {"length", Argument(int64_t(64))}}, &up);
  sums.init = DeferredInit{
      deferred("group_sums", {unpacked}, {&up},
               {{"group_size", Argument(int64_t(32))}, {"pad_to", Argument(int64_t(8))}}, &sp)};
  for (const Node &n : g.nodes())
    prog.plan.push_back(
        ProgramNodePlan{n.output(0)->name(), n.target(), "cpu", "interpreter", "testing", -1});
  prog.target = "host";
  std::string file = path("r.vkprog");
  auto st = writeProgram(prog, file);
  ASSERT_TRUE(st.ok()) << render(st.diags());
  EXPECT_EQ(st->recipes, 1u);          // the sums
  EXPECT_EQ(st->graphBlobBytes, 256u); // only the packed weight: %w is read by no node

  ProgramStats readStats;
  auto back = readProgram(file, {}, &readStats);
  ASSERT_TRUE(back.ok()) << render(back.diags());
  EXPECT_EQ(readStats.recipes, 1u);
  const GraphInput &backSums = back->graph->inputs()[3];
  EXPECT_TRUE(backSums.isDeferred());
  const Tensor &got = backSums.data();
  ASSERT_TRUE(got.defined()) << (backSums.dataError() ? backSums.dataError()->message : "");
  auto want = rewrite::groupSums(w.data(), 32, 8);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(got.nbytes(), want->nbytes());
  EXPECT_EQ(std::memcmp(got.rawData(), want->rawData(), got.nbytes()), 0);

  // A damaged recipe is a located error at load.
  auto bytes = readFile(file);
  ASSERT_TRUE(bytes.ok());
  auto editRecipe = [&](const std::function<void(nlohmann::json &)> &edit) {
    return editJson(*bytes, "CONSTS", [&](nlohmann::json &j) {
      for (auto &b : j["bindings"])
        if (b.contains("recipe"))
          edit(b["recipe"]);
    });
  };
  EXPECT_NE(readError(editRecipe([](auto &r) {
              r["transform"] = "nope";
            })).find("section CONSTS: binding of 'w.sums': unknown constant transform 'nope'"),
            std::string::npos);
  std::string msg = readError(editRecipe([](auto &r) {
    for (auto &a : r["args"])
      if (a["name"] == "group_size")
        a["value"] = {{"int", 16}};
  }));
  EXPECT_NE(msg.find("its recipe computes i32[4, 8] but the graph declares i32[2, 8]"),
            std::string::npos)
      << msg;
  msg = readError(editRecipe([](auto &r) { r["inputs"][0]["inputs"][0]["input"] = 1; }));
  EXPECT_NE(msg.find("input 1 is not a constant stored in the file"), std::string::npos) << msg;
}

TEST_F(ProgramFileTest, NotAProgram) {
  EXPECT_FALSE(isProgramFile(path("none")));
  auto r = readProgram(path("none"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diags().front().message.find("cannot open"), std::string::npos);
  auto dir = readProgram(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.diags().front().message.find("cannot"), std::string::npos)
      << dir.diags().front().message;
  std::string gir = std::string(GRAFT_TEST_DATA_DIR) + "/golden/vulkan/llama_block_4w_et_vk.gir";
  EXPECT_FALSE(isProgramFile(gir));
}

} // namespace
} // namespace graft

namespace graft {
namespace {

/// Words that pass for a SPIR-V module: the magic, a version, then `seed`.
std::vector<uint32_t> fakeSpirv(uint32_t seed, std::size_t words = 12) {
  std::vector<uint32_t> w(words, seed);
  w[0] = 0x07230203;
  w[1] = 0x00010300;
  return w;
}

/// makeProgram() with three shader variants, two of them byte-identical.
Program makeShaderProgram() {
  Program p = makeProgram();
  p.shaderCompiler = "glslang 12.0.0, SPIR-V 1.3, Vulkan 1.1";
  p.shaders.push_back({"binary_add_float", "binary", 0x1111, 3, {64, 1, 1}, fakeSpirv(1)});
  p.shaders.push_back({"binary_mul_float", "binary", 0x2222, 3, {64, 1, 1}, fakeSpirv(2, 20)});
  p.shaders.push_back({"copy_float_float", "copy", 0x3333, 2, {32, 2, 1}, fakeSpirv(1)});
  return p;
}

TEST_F(ProgramFileTest, ShadersRoundTripWithIdenticalModulesStoredOnce) {
  Program p = makeShaderProgram();
  auto written = writeProgram(p, path("s.vkprog"));
  ASSERT_TRUE(written.ok()) << render(written.diags());
  EXPECT_EQ(written->shaderVariants, 3u);
  EXPECT_EQ(written->spirvModules, 2u); // binary_add_float and copy_float_float share one
  EXPECT_EQ(written->spirvBytes, (12u + 20u) * 4u);
  ProgramStats st;
  auto back = readProgram(path("s.vkprog"), {}, &st);
  ASSERT_TRUE(back.ok()) << render(back.diags());
  EXPECT_EQ(back->version, kProgramVersion);
  EXPECT_EQ(back->shaderCompiler, p.shaderCompiler);
  ASSERT_EQ(back->shaders.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->shaders[i].variant, p.shaders[i].variant);
    EXPECT_EQ(back->shaders[i].templateName, p.shaders[i].templateName);
    EXPECT_EQ(back->shaders[i].sourceHash, p.shaders[i].sourceHash);
    EXPECT_EQ(back->shaders[i].bindings, p.shaders[i].bindings);
    EXPECT_EQ(back->shaders[i].localSize, p.shaders[i].localSize);
    EXPECT_EQ(back->shaders[i].spirv, p.shaders[i].spirv);
  }
  EXPECT_EQ(st.shaderVariants, 3u);
  EXPECT_EQ(st.spirvModules, 2u);
  // Deterministic: writing what was read gives the same bytes.
  ASSERT_TRUE(writeProgram(*back, path("s2.vkprog")).ok());
  EXPECT_EQ(*readFile(path("s.vkprog")), *readFile(path("s2.vkprog")));
}

// Damaged SHADERS / SPIRV sections are user errors naming the file and the
// section, never a crash and never words handed to a driver.
TEST_F(ProgramFileTest, ShaderSectionCorruption) {
  ASSERT_TRUE(writeProgram(makeShaderProgram(), path("s.vkprog")).ok());
  std::string valid = *readFile(path("s.vkprog"));
  auto secs = sections(valid);
  auto expectError = [&](const std::string &bytes, const std::string &what) {
    std::string msg = readError(bytes);
    EXPECT_NE(msg.find(path("bad.vkprog") + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
  };
  auto withSpirv = [&](const std::function<void(std::string &)> &edit) {
    std::vector<Sec> s2 = secs;
    for (Sec &s : s2)
      if (s.tag == "SPIRV")
        edit(s.bytes);
    return assemble(s2);
  };
  // A byte flipped in place: the section checksum catches it.
  for (const char *tag : {"SHADERS", "SPIRV"}) {
    std::string b = valid;
    for (std::size_t i = 0; i < secs.size(); ++i)
      if (secs[i].tag == tag)
        b[u64(valid, 64 + i * 32 + 8) + 9] ^= 0x20;
    expectError(b, std::string("section ") + tag + ": checksum mismatch");
  }
  // Consistent files (checksums recomputed) whose content is wrong.
  expectError(withSpirv([](std::string &b) { b.resize(b.size() - 8); }),
              "section SPIRV: module 1 (offset 48, 80 bytes) lies outside the section (120 "
              "bytes): truncated?");
  expectError(withSpirv([](std::string &b) { b.clear(); }),
              "section SPIRV: module 0 (offset 0, 48 bytes) lies outside the section (0 bytes)");
  expectError(withSpirv([](std::string &b) { b[0] = 0; }),
              "section SPIRV: module 0 is not SPIR-V (bad magic number)");
  expectError(withSpirv([](std::string &b) { b[30] ^= 1; }),
              "section SPIRV: module 0: content hash mismatch");
  expectError(editJson(valid, "SHADERS", [](auto &j) { j["modules"][1]["size"] = 78; }),
              "section SPIRV: module 1 (offset 48, 78 bytes) is not made of 4-byte words");
  expectError(editJson(valid, "SHADERS", [](auto &j) { j["modules"][1]["size"] = 16; }),
              "section SPIRV: module 1 has 16 bytes, less than a SPIR-V header");
  expectError(editJson(valid, "SHADERS", [](auto &j) { j["variants"][1]["module"] = 9; }),
              "section SHADERS: variant 'binary_mul_float': module 9 does not exist (2 modules)");
  expectError(editJson(valid, "SHADERS", [](auto &j) { j["variants"][1]["bindings"] = 0; }),
              "section SHADERS: variant 'binary_mul_float': 0 bindings");
  expectError(editJson(valid, "SHADERS",
                       [](auto &j) {
                         j["variants"][2]["local_size"] = {0, 1, 1};
                       }),
              "section SHADERS: variant 'copy_float_float': local_size [0,1,1] out of range");
  expectError(editJson(valid, "SHADERS",
                       [](auto &j) {
                         j["variants"][2]["local_size"] = {1, 1};
                       }),
              "local_size must be [x, y, z]");
  expectError(
      editJson(valid, "SHADERS", [](auto &j) { j["variants"][2]["name"] = "binary_add_float"; }),
      "section SHADERS: variant 'binary_add_float' is empty or appears twice");
  expectError(editJson(valid, "SHADERS", [](auto &j) { j.erase("variants"); }),
              "section SHADERS: malformed");
  expectError(editJson(valid, "SHADERS", [](auto &j) { j["modules"][0].erase("hash"); }),
              "section SHADERS: malformed");
  for (const char *tag : {"SHADERS", "SPIRV"}) {
    std::vector<Sec> fewer;
    for (const Sec &s : secs)
      if (s.tag != tag)
        fewer.push_back(s);
    expectError(assemble(fewer), std::string("section ") + tag + ": section is missing");
  }
}

// Version 1 predates compiled shaders: such files still read, with no shaders
// (the runtime compiles them), while an unknown version is refused.
TEST_F(ProgramFileTest, VersionOneFilesStillRead) {
  std::vector<Sec> v1;
  for (const Sec &s : sections(validBytes()))
    if (s.tag != "SHADERS" && s.tag != "SPIRV")
      v1.push_back(s);
  ASSERT_TRUE(writeFileAtomic(path("v1.vkprog"), assemble(v1, 1)).ok());
  auto back = readProgram(path("v1.vkprog"));
  ASSERT_TRUE(back.ok()) << render(back.diags());
  EXPECT_EQ(back->version, 1u);
  EXPECT_TRUE(back->shaders.empty());
  EXPECT_EQ(back->graph->numNodes(), 4u);
  // Written back, it is a current-version file (with an empty shader set).
  ASSERT_TRUE(writeProgram(*back, path("v2.vkprog")).ok());
  auto again = readProgram(path("v2.vkprog"));
  ASSERT_TRUE(again.ok()) << render(again.diags());
  EXPECT_EQ(again->version, kProgramVersion);
  std::string msg = readError(assemble(v1, kProgramVersion));
  EXPECT_NE(msg.find("section SHADERS: section is missing (a version 2 file stores its compiled "
                     "shaders)"),
            std::string::npos)
      << msg;
}

} // namespace
} // namespace graft
