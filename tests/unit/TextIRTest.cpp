//===- TextIRTest.cpp - Tests for the .gir parser and printer -------------===//
//
// Golden round trips (tests/golden/textir/*.gir are canonical: printing the
// parsed graph reproduces each byte), parse-error goldens
// (tests/golden/parse_errors/*.gir, each naming its expected first
// diagnostic on its first line), robustness against truncated and mutated
// input, shortest float printing, and the printer's data-file spilling.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/TextIR.h"
#include "graft/ops/OpRegistry.h"
#include "graft/support/FileIO.h"
#include "graft/support/FloatBits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <random>

namespace graft {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> filesIn(const fs::path &dir) {
  std::vector<fs::path> out;
  for (const auto &e : fs::directory_iterator(dir))
    if (e.path().extension() == ".gir")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path goldenDir(const char *sub) {
  return fs::path(GRAFT_TEST_DATA_DIR) / "golden" / sub;
}

std::string readText(const fs::path &p) {
  auto text = readFile(p.string());
  EXPECT_TRUE(text.ok()) << p;
  return text.ok() ? *text : std::string();
}

std::unique_ptr<Graph> parseOk(std::string_view text, const std::string &baseDir = "") {
  ParseOptions options;
  options.baseDir = baseDir;
  SourceManager sm;
  auto g = parseGraph(text, "test.gir", options, &sm);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : render(g.diags(), &sm));
  return g.ok() ? std::move(*g) : nullptr;
}

std::string printOk(const Graph &g, const PrintOptions &options = {}) {
  auto text = printGraph(g, options);
  EXPECT_TRUE(text.ok()) << (text.ok() ? "" : render(text.diags()));
  return text.ok() ? *text : std::string();
}

fs::path freshTempDir(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("graft_textir_" + name + "_" +
                  std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                  std::to_string(std::random_device{}()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

//===----------------------------------------------------------------------===//
// Goldens
//===----------------------------------------------------------------------===//

TEST(TextIRGolden, PrintOfParseIsIdentity) {
  auto files = filesIn(goldenDir("textir"));
  ASSERT_GE(files.size(), 10u);
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.filename().string());
    std::string text = readText(file);
    SourceManager sm;
    auto g = parseGraphFile(file.string(), &sm);
    ASSERT_TRUE(g.ok()) << render(g.diags(), &sm);
    std::string printed = printOk(**g);
    EXPECT_EQ(printed, text);
  }
}

/// Splits "// expect: L:C: error: message" into its parts.
struct Expectation {
  uint32_t line = 0, column = 0;
  std::string message;
};
std::optional<Expectation> readExpectation(const std::string &text) {
  const std::string prefix = "// expect: ";
  if (text.rfind(prefix, 0) != 0)
    return std::nullopt;
  std::string first = text.substr(prefix.size(), text.find('\n') - prefix.size());
  Expectation e;
  char sep1 = 0, sep2 = 0;
  int consumed = 0;
  if (std::sscanf(first.c_str(), "%u%c%u%c%n", &e.line, &sep1, &e.column, &sep2, &consumed) < 4 ||
      sep1 != ':' || sep2 != ':')
    return std::nullopt;
  std::string rest = first.substr(static_cast<std::size_t>(consumed));
  const std::string err = " error: ";
  if (rest.rfind(err, 0) != 0)
    return std::nullopt;
  e.message = rest.substr(err.size());
  return e;
}

TEST(TextIRGolden, ParseErrorsAreLocated) {
  auto files = filesIn(goldenDir("parse_errors"));
  ASSERT_GE(files.size(), 12u);
  for (const fs::path &file : files) {
    SCOPED_TRACE(file.filename().string());
    std::string text = readText(file);
    auto expect = readExpectation(text);
    ASSERT_TRUE(expect) << "first line must be '// expect: L:C: error: message'";
    SourceManager sm;
    auto g = parseGraphFile(file.string(), &sm);
    ASSERT_FALSE(g.ok()) << "parsed without error";
    const Diagnostic &d = g.diags().front();
    std::string rendered = render(d, &sm);
    ASSERT_TRUE(d.range) << rendered;
    EXPECT_EQ(d.severity, Severity::Error);
    EXPECT_EQ(d.range->begin.file, file.string());
    EXPECT_EQ(d.range->begin.line, expect->line) << rendered;
    EXPECT_EQ(d.range->begin.column, expect->column) << rendered;
    EXPECT_NE(d.message.find(expect->message), std::string::npos) << rendered;
    // Rendered clang-style with the source line and a caret.
    EXPECT_NE(rendered.find(":" + std::to_string(expect->line) + ":" +
                            std::to_string(expect->column) + ": error: "),
              std::string::npos);
    EXPECT_NE(rendered.find('^'), std::string::npos) << rendered;
  }
}

//===----------------------------------------------------------------------===//
// Robustness: never crash, always a located diagnostic
//===----------------------------------------------------------------------===//

void expectParsesOrLocatedError(std::string_view text, const std::string &baseDir) {
  ParseOptions options;
  options.baseDir = baseDir;
  auto g = parseGraph(text, "fuzz.gir", options);
  if (g.ok())
    return;
  ASSERT_FALSE(g.diags().empty());
  const Diagnostic &d = g.diags().front();
  ASSERT_TRUE(d.range);
  EXPECT_TRUE(d.range->begin.valid()) << d.message;
  EXPECT_FALSE(d.message.empty());
}

TEST(TextIRRobustness, EveryTruncationGivesADiagnostic) {
  std::string base = goldenDir("textir").string();
  for (const fs::path &file : filesIn(goldenDir("textir"))) {
    SCOPED_TRACE(file.filename().string());
    std::string text = readText(file);
    for (std::size_t n = 0; n < text.size(); ++n) {
      std::string_view prefix(text.data(), n);
      ParseOptions options;
      options.baseDir = base;
      auto g = parseGraph(prefix, "cut.gir", options);
      // Only dropping the final newline leaves a complete graph.
      if (n + 1 == text.size()) {
        EXPECT_TRUE(g.ok());
        continue;
      }
      ASSERT_FALSE(g.ok()) << "prefix of " << n << " bytes parsed";
      const Diagnostic &d = g.diags().front();
      ASSERT_TRUE(d.range);
      EXPECT_TRUE(d.range->begin.valid());
    }
  }
}

TEST(TextIRRobustness, MutatedInputNeverCrashes) {
  std::string base = goldenDir("textir").string();
  std::mt19937 rng(1234);
  const std::string alphabet = "()[]{}%@\"\\,:=/-+*.0123456789eaxi \n\t\x01\xff";
  for (const fs::path &file : filesIn(goldenDir("textir"))) {
    std::string text = readText(file);
    for (int trial = 0; trial < 300 && !text.empty(); ++trial) {
      std::string mutated = text;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = rng() % mutated.size();
        switch (rng() % 3) {
        case 0:
          mutated[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          mutated.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          mutated.erase(at, 1 + rng() % 8);
        }
        if (mutated.empty())
          mutated = "x";
      }
      SCOPED_TRACE(mutated);
      expectParsesOrLocatedError(mutated, base);
    }
  }
}

TEST(TextIRRobustness, PathologicalInputs) {
  expectParsesOrLocatedError("", "");
  expectParsesOrLocatedError(std::string(100000, '['), "");
  expectParsesOrLocatedError("graph @g {\n  input %x : f32[" + std::string(100000, '(') + "]\n}\n",
                             "");
  expectParsesOrLocatedError("graph @g {\n  input %x : f32[" + std::string(100000, '-') + "1]\n}\n",
                             "");
  expectParsesOrLocatedError(std::string("graph @g {\0}", 12), "");
  // Dimension arithmetic that would overflow int64 is an error, not UB.
  auto g = parseGraph(
      "graph @g {\n  sym s0 : [1, 2]\n  input %x : f32[4611686018427387904*4*s0]\n}\n", "ovf.gir");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diags().front().message.find("overflows"), std::string::npos);
  g = parseGraph("graph @g {\n  param %w : f32[4611686018427387904, 4] fqn=\"w\" = full(0.0)\n}\n",
                 "big.gir");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diags().front().message.find("too large"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Float printing
//===----------------------------------------------------------------------===//

TEST(TextIRFloat, ShortestRoundTripSpelling) {
  EXPECT_EQ(formatFloat(1.0), "1.0");
  EXPECT_EQ(formatFloat(0.1), "0.1");
  EXPECT_EQ(formatFloat(1e-05), "1e-05");
  EXPECT_EQ(formatFloat(0.0001), "0.0001");
  EXPECT_EQ(formatFloat(100.0), "100.0");
  EXPECT_EQ(formatFloat(1e16), "1e+16");
  EXPECT_EQ(formatFloat(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(formatFloat(1.5e300), "1.5e+300");
  EXPECT_EQ(formatFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(formatFloat(-2.5), "-2.5");
  EXPECT_EQ(formatFloat(0.0), "0.0");
  EXPECT_EQ(formatFloat(-0.0), "-0.0");
  EXPECT_EQ(formatFloat(5e-324), "5e-324");
  EXPECT_EQ(formatFloat(INFINITY), "inf");
  EXPECT_EQ(formatFloat(-INFINITY), "-inf");
  EXPECT_EQ(formatFloat(NAN), "nan");
  // In a narrower dtype the shortest text is the one that rounds back to
  // the same element value.
  EXPECT_EQ(formatFloat(static_cast<double>(0.1f), DType::F32), "0.1");
  EXPECT_EQ(formatFloat(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(formatFloat(halfBitsToFloat(floatToHalfBits(0.1f)), DType::F16), "0.1");
  EXPECT_EQ(formatFloat(bfloat16BitsToFloat(floatToBFloat16Bits(3.14f)), DType::BF16), "3.14");
  EXPECT_EQ(formatFloat(65504.0, DType::F16), "65500.0"); // as numpy prints it
  EXPECT_EQ(formatFloat(448.0, DType::F8E4M3FN), "450.0");
  EXPECT_EQ(formatFloat(65504.0, DType::F32), "65504.0");
}

double parseBack(const std::string &s) {
  if (s == "inf" || s == "-inf" || s == "nan")
    return s == "nan" ? NAN : (s[0] == '-' ? -INFINITY : INFINITY);
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  EXPECT_EQ(r.ptr, s.data() + s.size()) << s;
  return v;
}

bool looksLikeFloat(const std::string &s) {
  return s.find_first_of(".e") != std::string::npos || s == "inf" || s == "-inf" || s == "nan";
}

int significantDigits(const std::string &s) {
  std::string m = s.substr(0, s.find('e'));
  std::string digits;
  for (char c : m)
    if (std::isdigit(static_cast<unsigned char>(c)))
      digits += c;
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  while (digits.size() > 1 && digits.back() == '0')
    digits.pop_back();
  return std::max<int>(1, static_cast<int>(digits.size()));
}

TEST(TextIRFloat, DoublesRoundTripExactly) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isfinite(v))
      continue;
    std::string s = formatFloat(v);
    ASSERT_TRUE(looksLikeFloat(s)) << s;
    double back = parseBack(s);
    ASSERT_EQ(std::memcmp(&back, &v, sizeof v), 0) << s;
    // No shorter digit string reads back as v.
    int digits = significantDigits(s);
    if (digits > 1) {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, digits - 2);
      double shorter = parseBack(std::string(buf, r.ptr));
      ASSERT_NE(std::memcmp(&shorter, &v, sizeof v), 0) << s << " vs " << std::string(buf, r.ptr);
    }
  }
}

/// Every value of a 16- or 8-bit float dtype prints to text that reads back
/// (double -> float -> dtype) as the same element, and no shorter text does.
void checkAllValues(DType dt, int bitsWide) {
  for (uint32_t pattern = 0; pattern < (1u << bitsWide); ++pattern) {
    float v = dt == DType::F16    ? halfBitsToFloat(static_cast<uint16_t>(pattern))
              : dt == DType::BF16 ? bfloat16BitsToFloat(static_cast<uint16_t>(pattern))
                                  : float8BitsToFloat(static_cast<uint8_t>(pattern), dt);
    if (std::isnan(v))
      continue;
    std::string s = formatFloat(v, dt);
    ASSERT_TRUE(looksLikeFloat(s)) << s;
    float back = roundToDType(static_cast<float>(parseBack(s)), dt);
    ASSERT_EQ(std::memcmp(&back, &v, sizeof v), 0) << name(dt) << " " << pattern << " " << s;
    int digits = significantDigits(s);
    if (digits > 1 && std::isfinite(v)) {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v),
                             std::chars_format::scientific, digits - 2);
      float shorter = roundToDType(static_cast<float>(parseBack(std::string(buf, r.ptr))), dt);
      ASSERT_NE(std::memcmp(&shorter, &v, sizeof v), 0) << name(dt) << " " << s;
    }
  }
}

TEST(TextIRFloat, NarrowDTypesRoundTripExhaustively) {
  checkAllValues(DType::F16, 16);
  checkAllValues(DType::BF16, 16);
  checkAllValues(DType::F8E4M3FN, 8);
  checkAllValues(DType::F8E5M2, 8);
}

TEST(TextIRFloat, FloatArgumentsRoundTripBitwise) {
  std::mt19937_64 rng(7);
  Graph g("floats");
  Value *x = g.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {4}));
  std::vector<double> values = {0.1 + 0.2, 1.0 / 3.0, 6.02214076e23, -1e-310, 2.5};
  for (int i = 0; i < 50; ++i)
    values.push_back(
        std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 200) - 150));
  Argument::List list;
  for (double v : values)
    list.emplace_back(v);
  g.createNode("test.floats.default", {x, Argument(list)}, {},
               {{"y", ValueKind::Tensor, x->proto()}});
  std::string text = printOk(g);
  auto parsed = parseOk(text);
  ASSERT_TRUE(parsed);
  const Argument &back = parsed->nodes().front().args()[1];
  ASSERT_EQ(back.list().size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    double b = back.list()[i].floating();
    EXPECT_EQ(std::memcmp(&b, &values[i], sizeof b), 0) << formatFloat(values[i]);
  }
  EXPECT_EQ(printOk(*parsed), text);
}

//===----------------------------------------------------------------------===//
// Parser semantics
//===----------------------------------------------------------------------===//

TEST(TextIRParse, TinyGraphStructureAndLocations) {
  const char *text = R"(graph @tiny {
  sym s0 : [1, 2048]
  param %w : i8[64, 128] fqn="tok_embeddings.weight" = random(seed=1, min=-8, max=7)
  input %tokens : i64[1, s0]
  %out : f32[1, s0, 128] = aten.embedding.default(%w, %tokens) {stack_trace="t"}
  output %out
}
)";
  auto g = parseOk(text);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->name(), "tiny");
  ASSERT_EQ(g->inputs().size(), 2u);
  const GraphInput &w = g->inputs()[0];
  EXPECT_EQ(w.kind, InputKind::Parameter);
  EXPECT_EQ(w.fqn, "tok_embeddings.weight");
  ASSERT_TRUE(w.init);
  EXPECT_EQ(std::get<RandomInit>(*w.init), (RandomInit{1, -8, 7}));
  EXPECT_EQ(w.data().dtype(), DType::I8);
  ASSERT_NE(g->symbols().find("s0"), nullptr);
  EXPECT_EQ(*g->symbols().find("s0"), (SymbolRange{1, 2048}));
  ASSERT_EQ(g->numNodes(), 1u);
  const Node &n = g->nodes().front();
  EXPECT_EQ(n.target(), "aten.embedding.default");
  EXPECT_NE(n.schema(), nullptr) << "bound against the builtin registry";
  ASSERT_TRUE(n.location());
  EXPECT_EQ(n.location()->begin.line, 5u);
  EXPECT_EQ(n.location()->begin.column, 28u);
  EXPECT_EQ(n.location()->length, std::string("aten.embedding.default").size());
  ASSERT_TRUE(n.output()->location());
  EXPECT_EQ(n.output()->location()->begin.column, 3u);
  ASSERT_TRUE(w.value->location());
  EXPECT_EQ(w.value->location()->begin.line, 3u);
  EXPECT_EQ(w.value->location()->begin.column, 9u);
  EXPECT_EQ(n.output()->proto().shape, (Shape{1, Dim::symbol("s0"), 128}));
  ASSERT_NE(n.meta("stack_trace"), nullptr);
  EXPECT_EQ(*n.meta("stack_trace"), "t");
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0].value, n.output());
}

TEST(TextIRParse, UnknownOpsStayOpaque) {
  auto g = parseOk("graph @g {\n  input %x : f32[2]\n  %y : f32[2] = my_ns.mystery.default(%x)\n  "
                   "output %y\n}\n");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->nodes().front().schema(), nullptr);
}

TEST(TextIRParse, RedefinitionPointsAtFirstDefinition) {
  SourceManager sm;
  auto g = parseGraph(
      "graph @g {\n  input %x : f32[4]\n  %y : f32[4], %y : f32[4] = t.op.default(%x)\n}\n",
      "redef.gir", {}, &sm);
  ASSERT_FALSE(g.ok());
  const Diagnostic &d = g.diags().front();
  EXPECT_EQ(d.message, "redefinition of value %y");
  EXPECT_EQ(d.range->begin.column, 16u);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message, "previous definition here");
  ASSERT_TRUE(d.notes[0].range);
  EXPECT_EQ(d.notes[0].range->begin.line, 3u);
  EXPECT_EQ(d.notes[0].range->begin.column, 3u);
  std::string r = render(d, &sm);
  EXPECT_NE(r.find("redef.gir:3:3: note: previous definition here"), std::string::npos) << r;
  EXPECT_NE(r.find("               ^~"), std::string::npos) << r;
}

TEST(TextIRParse, DuplicateFqnAndSymbolHaveNotes) {
  auto g = parseGraph(
      "graph @g {\n  param %a : f32[1] fqn=\"w\"\n  param %b : f32[1] fqn=\"w\"\n}\n", "dup.gir");
  ASSERT_FALSE(g.ok());
  ASSERT_EQ(g.diags().front().notes.size(), 1u);
  EXPECT_EQ(g.diags().front().notes[0].range->begin.line, 2u);
  g = parseGraph("graph @g {\n  sym s0 : [1, 2]\n  sym s0 : [1, 3]\n}\n", "sym.gir");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.diags().front().message.find("redeclaration of symbol 's0'"), std::string::npos);
  ASSERT_EQ(g.diags().front().notes.size(), 1u);
}

TEST(TextIRParse, ContiguousStridesAreNormalizedAway) {
  auto g = parseOk("graph @g {\n  sym s0 : [1, 8]\n  input %x : f32[s0, 4]{strides=[4, 1]}\n  "
                   "input %y : f32[2, 3]{strides=[1, 2]}\n}\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->inputs()[0].value->proto().strides.empty());
  EXPECT_EQ(g->inputs()[1].value->proto().strides, (Shape{1, 2}));
  EXPECT_EQ(printOk(*g), "graph @g {\n  sym s0 : [1, 8]\n  input %x : f32[s0, 4]\n  input %y : "
                         "f32[2, 3]{strides=[1, 2]}\n}\n");
  // Explicit contiguous strides built through the API print the same way.
  Graph h("h");
  TensorProto p(DType::F32, {2, 3});
  p.strides = {3, 1};
  h.addInput(InputKind::UserInput, "x", p);
  EXPECT_EQ(printOk(h), "graph @h {\n  input %x : f32[2, 3]\n}\n");
}

TEST(TextIRParse, NonCanonicalSpellingsNormalize) {
  EXPECT_FALSE(parseGraph("graph @g {\n  input %x : f32[1]\n  %y : f32[1] = "
                          "aten.to.device(%x, gpu:0)\n}\n",
                          "dev.gir")
                   .ok())
      << "unknown device names are rejected";
  auto g = parseOk(R"(graph @g {  // trailing comment
  // full-line comment
  sym s1 : [0, inf]
  sym s0 : [1, 8]
  input %x : float32[s1 + s0, (2) * s0, s0*2 - 1]{device=cpu}
  %y : f32[s0+s1, 2*s0, 2*s0-1] = aten.to.dtype(%x, float, 1.50, 1E3)
  output %y
})");
  ASSERT_TRUE(g);
  EXPECT_EQ(printOk(*g), R"(graph @g {
  sym s0 : [1, 8]
  sym s1 : [0, inf]
  input %x : f32[s0+s1, 2*s0, 2*s0-1]
  %y : f32[s0+s1, 2*s0, 2*s0-1] = aten.to.dtype(%x, f32, 1.5, 1000.0)
  output %y
}
)");
}

TEST(TextIRParse, InlineDataValues) {
  auto g = parseOk(R"(graph @g {
  const %h : f16[3] fqn="h" = [0.1, 1, -2.0]
  const %u : u64[2] fqn="u" = [18446744073709551615, 0]
  const %b : bool[2] fqn="b" = [true, 0]
  const %i : i4[2] fqn="i" = [-8, 7]
}
)");
  ASSERT_TRUE(g);
  const Tensor &h = g->inputs()[0].data();
  EXPECT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.getDouble(0), static_cast<double>(halfBitsToFloat(floatToHalfBits(0.1f))));
  EXPECT_EQ(h.getDouble(1), 1.0);
  EXPECT_EQ(static_cast<uint64_t>(g->inputs()[1].data().getInt(0)), UINT64_MAX);
  EXPECT_EQ(g->inputs()[2].data().getInt(1), 0);
  EXPECT_EQ(g->inputs()[3].data().getInt(0), -8);
  EXPECT_TRUE(std::holds_alternative<InlineInit>(*g->inputs()[0].init));
  EXPECT_FALSE(parseGraph("graph @g {\n  const %i : i4[1] fqn=\"i\" = [8]\n}\n", "x").ok());
  EXPECT_FALSE(parseGraph("graph @g {\n  const %i : i32[1] fqn=\"i\" = [1.5]\n}\n", "x").ok());
  EXPECT_FALSE(parseGraph("graph @g {\n  const %i : u8[1] fqn=\"i\" = [-1]\n}\n", "x").ok());
  EXPECT_FALSE(parseGraph("graph @g {\n  const %c : c64[1] fqn=\"c\" = [1.0]\n}\n", "x").ok());
}

TEST(TextIRParse, FileConstantsAreMappedAndTied) {
  std::string dir = goldenDir("textir").string();
  auto g = parseGraphFile((goldenDir("textir") / "file_constants.gir").string());
  ASSERT_TRUE(g.ok()) << render(g.diags());
  const GraphInput *w = (*g)->findConstant("tok_embeddings.weight");
  const GraphInput *tied = (*g)->findConstant("output.weight");
  const GraphInput *bias = (*g)->findConstant("bias_table");
  const GraphInput *h = (*g)->findConstant("norm.weight");
  ASSERT_TRUE(w && tied && bias && h);
  EXPECT_TRUE(w->data().storage()->isMapped());
  EXPECT_EQ(w->data().storage(), tied->data().storage()) << "same bytes share one mapping";
  EXPECT_EQ(w->data().getDouble(0), 1.0);
  EXPECT_EQ(w->data().getDouble(7), -7.5);
  EXPECT_EQ(bias->data().getInt(0), -8);
  EXPECT_EQ(bias->data().getInt(15), 7);
  EXPECT_EQ(h->data().getDouble(3), 3.0);
  EXPECT_EQ(std::get<FileInit>(*w->init), (FileInit{"file_constants.bin", 0, 32, {}}));
  EXPECT_FALSE((*g)->findConstant("unloaded")->hasData());
}

TEST(TextIRParse, RelativeFilePathsUseBaseDir) {
  fs::path dir = freshTempDir("basedir");
  std::vector<uint8_t> bytes(16);
  float vals[4] = {1.f, 2.f, 3.f, 4.f};
  std::memcpy(bytes.data(), vals, 16);
  ASSERT_TRUE(writeFileAtomic((dir / "w.bin").string(),
                              std::string_view(reinterpret_cast<char *>(bytes.data()), 16))
                  .ok());
  std::string text =
      "graph @g {\n  param %w : f32[4] fqn=\"w\" = file(\"w.bin\", offset=0, bytes=16)\n}\n";
  EXPECT_FALSE(parseGraph(text, "nobase.gir").ok()) << "cwd has no w.bin";
  auto g = parseOk(text, dir.string());
  ASSERT_TRUE(g);
  EXPECT_EQ(g->inputs()[0].data().getDouble(3), 4.0);
  // parseGraphFile resolves against the file's own directory.
  ASSERT_TRUE(writeFileAtomic((dir / "g.gir").string(), text).ok());
  SourceManager sm;
  auto f = parseGraphFile((dir / "g.gir").string(), &sm);
  ASSERT_TRUE(f.ok()) << render(f.diags(), &sm);
  EXPECT_NE(sm.contents((dir / "g.gir").string()), nullptr);
  fs::remove_all(dir);
}

// A graph printed into another directory names its file() data relative to
// that directory, so the new text still finds the bytes; printed for its own
// directory (or stdout) the path stays as written.
TEST(TextIRPrint, FilePathsAreRebasedToTheOutputDirectory) {
  fs::path dir = freshTempDir("rebase");
  fs::create_directories(dir / "data" / "in");
  fs::create_directories(dir / "out" / "deeper");
  float vals[4] = {1.f, 2.f, 3.f, 4.f};
  ASSERT_TRUE(writeFileAtomic((dir / "data" / "w.bin").string(),
                              std::string_view(reinterpret_cast<char *>(vals), 16))
                  .ok());
  std::string text =
      "graph @g {\n  param %w : f32[4] fqn=\"w\" = file(\"../w.bin\", offset=0, bytes=16)\n}\n";
  ASSERT_TRUE(writeFileAtomic((dir / "data" / "in" / "g.gir").string(), text).ok());
  auto g = parseGraphFile((dir / "data" / "in" / "g.gir").string());
  ASSERT_TRUE(g.ok()) << render(g.diags());

  auto same = printGraph(**g);
  ASSERT_TRUE(same.ok());
  EXPECT_NE(same->find("file(\"../w.bin\""), std::string::npos) << *same;

  PrintOptions po;
  po.outputDir = (dir / "out" / "deeper").string();
  auto moved = printGraph(**g, po);
  ASSERT_TRUE(moved.ok());
  EXPECT_NE(moved->find("file(\"../../data/w.bin\""), std::string::npos) << *moved;
  ASSERT_TRUE(writeFileAtomic((dir / "out" / "deeper" / "g.gir").string(), *moved).ok());
  auto reread = parseGraphFile((dir / "out" / "deeper" / "g.gir").string());
  ASSERT_TRUE(reread.ok()) << render(reread.diags());
  EXPECT_EQ((*reread)->inputs()[0].data().getDouble(3), 4.0);
  fs::remove_all(dir);
}

TEST(TextIRParse, QuantLayoutsParseToStructs) {
  auto g = parseGraphFile((goldenDir("textir") / "quant_layouts.gir").string());
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto proto = [&](const char *name) -> const TensorProto & {
    return (*g)->findValue(name)->proto();
  };
  const auto &a = std::get<AffineQuant>(*proto("a").quant);
  EXPECT_EQ(a.blockSize, (std::vector<int64_t>{1, 32}));
  EXPECT_EQ(a.quantDType, DType::I4);
  EXPECT_TRUE(a.packedInt4);
  EXPECT_EQ(a.nibbleOrder, NibbleOrder::LowFirst);
  EXPECT_FALSE(a.zeroPointDType);
  EXPECT_EQ(std::get<AffineQuant>(*proto("c").quant).nibbleOrder, NibbleOrder::HighFirst);
  EXPECT_EQ(std::get<AffineQuant>(*proto("b").quant).zeroPointDType, DType::I8);
  EXPECT_EQ(std::get<MxFp8>(*proto("f").quant).elementDType, DType::F8E5M2);
  EXPECT_TRUE(std::get<NvFp4>(*proto("h").quant).perRowAmax);
  EXPECT_EQ(std::get<Fp8Blockwise>(*proto("i").quant).blockSize, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(proto("d").device, (Device{"cuda", 0}));
  // Defaults: range from the quant dtype, f32 scales, no zero point.
  auto d =
      parseOk("graph @g {\n  input %x : f32[4, 8]{quant=affine(block=[1, 8], qdtype=u4)}\n}\n");
  ASSERT_TRUE(d);
  const auto &q = std::get<AffineQuant>(*d->inputs()[0].value->proto().quant);
  EXPECT_EQ(q.quantMin, 0);
  EXPECT_EQ(q.quantMax, 15);
  EXPECT_EQ(printOk(*d), "graph @g {\n  input %x : f32[4, 8]{quant=affine(block=[1, 8], qdtype=u4, "
                         "range=[0, 15], scale=f32, zero_point=none)}\n}\n");
}

TEST(TextIRParse, ArgumentKinds) {
  auto g = parseGraphFile((goldenDir("textir") / "argument_kinds.gir").string());
  ASSERT_TRUE(g.ok()) << render(g.diags());
  auto node = [&](const char *result) { return (*g)->findValue(result)->producer(); };
  const Node *c = node("c");
  EXPECT_TRUE(c->args()[0].isValue());
  EXPECT_TRUE(c->args()[1].isNone());
  EXPECT_EQ(c->args()[2], Argument(true));
  EXPECT_EQ(c->args()[7], Argument(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(node("e")->args()[2].string(), "quote\" backslash\\ newline\n tab\t cr\r");
  EXPECT_EQ(node("e")->args()[3].string(), "\x01\x7f");
  const Node *f = node("f");
  EXPECT_EQ(f->args()[0], Argument(DType::F32));
  EXPECT_EQ(f->args()[6], Argument(Layout::Strided));
  EXPECT_EQ(f->args()[9], Argument(MemoryFormat::Contiguous));
  const Node *dev = node("g");
  EXPECT_EQ(dev->args()[2].device(), (Device{"cuda", 0}));
  EXPECT_EQ(dev->args()[1].device(), (Device{"cuda", -1}));
  const Node *j = node("j");
  ASSERT_NE(j->kwarg("sizes"), nullptr);
  EXPECT_TRUE(j->kwarg("sizes")->list()[1].isValue());
  EXPECT_EQ(j->kwarg("sizes")->list()[1].value()->kind(), ValueKind::SymInt);
  EXPECT_TRUE(j->kwarg("opt")->isNone());
  EXPECT_TRUE(std::isnan(node("d")->args()[13].floating()));
}

//===----------------------------------------------------------------------===//
// Dims
//===----------------------------------------------------------------------===//

TEST(TextIRDims, ArithmeticResultsAreFixpoints) {
  Dim s0 = Dim::symbol("s0"), s1 = Dim::symbol("s1"), s2 = Dim::symbol("s2");
  Shape dims = {
      s0 * s1,
      (s0 + 1).floorDiv(2),
      (s0 * s1) * 2,
      s2 - s0 * s1,
      s0 * s1 - s2,
      Dim(5) - s0 * s1,
      (s0 * s1) * s2,
      (s0 * s1) + Dim(-3),
      (s0 * s1) - Dim(-3),
      (s0 * s1) * -1,
      (s0 * 2) * s1,
      (s0 - s1 * 3 + 4) * (s1 + 1),
      (s0 * s1).floorDiv(4) * 3 + s2,
      s0.floorDiv(-2),
      s0 * 0,
      s0 - s0,
      Dim(-7),
      s1 * -2 + 4,
      Dim::opaque("Max(1, s0)") * 2,
  };
  Graph g("dims");
  for (const char *s : {"s0", "s1", "s2"})
    g.symbols().declare(s, {1, std::nullopt});
  int i = 0;
  for (const Dim &d : dims)
    g.addInput(InputKind::UserInput, "x" + std::to_string(i++), TensorProto(DType::F32, {d}));
  std::string text = printOk(g);
  auto parsed = parseOk(text);
  ASSERT_TRUE(parsed) << text;
  for (std::size_t k = 0; k < dims.size(); ++k)
    EXPECT_EQ(parsed->inputs()[k].value->proto().shape[0], dims[k])
        << dims[k].str() << " came back as " << parsed->inputs()[k].value->proto().shape[0].str();
  EXPECT_EQ(printOk(*parsed), text);
}

//===----------------------------------------------------------------------===//
// Printer
//===----------------------------------------------------------------------===//

TEST(TextIRPrint, LargeConstantsSpillToAlignedDataFile) {
  fs::path dir = freshTempDir("spill");
  Graph g("spill");
  std::vector<double> big(100), other(10);
  for (int i = 0; i < 100; ++i)
    big[static_cast<std::size_t>(i)] = i * 0.25 - 3;
  for (int i = 0; i < 10; ++i)
    other[static_cast<std::size_t>(i)] = i;
  Tensor t = Tensor::fromDoubles(DType::F32, {10, 10}, big);
  Value *a = g.addInput(InputKind::Parameter, "a", t.proto(), "tok_embeddings.weight");
  Value *b = g.addInput(InputKind::Parameter, "b", t.proto(), "output.weight");
  Value *c = g.addInput(InputKind::Buffer, "c", TensorProto(DType::I16, {10}), "small");
  Value *d = g.addInput(InputKind::ConstantTensor, "d", TensorProto(DType::C64, {1}), "complex");
  g.inputs()[0].setData(t, ExternalData{});
  g.inputs()[1].setData(t, ExternalData{}); // tied: same storage
  g.inputs()[2].setData(Tensor::fromDoubles(DType::I16, {10}, other), ExternalData{});
  g.inputs()[3].setData(Tensor::empty(DType::C64, {1}), ExternalData{});
  Value *s =
      g.createNode("aten.add.Tensor", {a, b}, {}, {{"s", ValueKind::Tensor, a->proto()}})->output();
  g.addOutput(s);
  (void)c;
  (void)d;

  PrintOptions options;
  options.dataFile = (dir / "weights.bin").string();
  std::string text = printOk(g, options);
  EXPECT_NE(text.find("param %a : f32[10, 10] fqn=\"tok_embeddings.weight\" = "
                      "file(\"weights.bin\", offset=0, bytes=400)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fqn=\"output.weight\" = file(\"weights.bin\", offset=0, bytes=400)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fqn=\"small\" = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"), std::string::npos);
  EXPECT_NE(text.find("fqn=\"complex\" = file(\"weights.bin\", offset=448, bytes=8)"),
            std::string::npos)
      << text;
  EXPECT_EQ(fs::file_size(dir / "weights.bin"), 456u);

  auto parsed = parseOk(text, dir.string());
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->inputs()[0].data().equal(t));
  EXPECT_EQ(parsed->inputs()[0].data().storage(), parsed->inputs()[1].data().storage());
  // The re-parsed graph prints as written (file() is kept verbatim).
  EXPECT_EQ(printOk(*parsed), text);

  // A custom reference spelling.
  options.dataFileRef = "data/w.bin";
  EXPECT_NE(printOk(g, options).find("file(\"data/w.bin\", offset=0"), std::string::npos);

  // With everything inlined allowed, only the complex constant needs the file.
  PrintOptions inlineAll;
  inlineAll.maxInlineElements = 1000;
  auto noFile = printGraph(g, inlineAll);
  ASSERT_FALSE(noFile.ok());
  EXPECT_NE(noFile.diags().front().message.find("'complex'"), std::string::npos);
  fs::remove_all(dir);
}

TEST(TextIRPrint, MissingDataFileNamesTheConstant) {
  Graph g("g");
  g.addInput(InputKind::Parameter, "w", TensorProto(DType::F32, {8, 16}), "layers.3.w");
  g.inputs()[0].setData(Tensor::empty(DType::F32, {8, 16}), ExternalData{});
  auto text = printGraph(g);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.diags().front().message.find("'layers.3.w'"), std::string::npos)
      << text.diags().front().message;
  EXPECT_NE(text.diags().front().message.find("dataFile"), std::string::npos);
}

TEST(TextIRPrint, InlineFloatsUseTheDTypesShortestSpelling) {
  Graph g("g");
  std::vector<double> v = {0.1, 1.0 / 3.0, 65504.0, -0.0};
  g.addInput(InputKind::ConstantTensor, "h", TensorProto(DType::F16, {4}), "h");
  g.inputs()[0].setData(Tensor::fromDoubles(DType::F16, {4}, v), ExternalData{});
  g.addInput(InputKind::ConstantTensor, "b", TensorProto(DType::BF16, {4}), "b");
  g.inputs()[1].setData(Tensor::fromDoubles(DType::BF16, {4}, v), InlineInit{});
  g.addInput(InputKind::ConstantTensor, "f", TensorProto(DType::F32, {4}), "f");
  g.inputs()[2].setData(Tensor::fromDoubles(DType::F32, {4}, v), InlineInit{});
  std::string text = printOk(g);
  EXPECT_NE(text.find("= [0.1, 0.3333, 65500.0, -0.0]"), std::string::npos) << text;
  EXPECT_NE(text.find("= [0.1, 0.334, 65500.0, -0.0]"), std::string::npos) << text;
  EXPECT_NE(text.find("= [0.1, 0.33333334, 65504.0, -0.0]"), std::string::npos) << text;
  auto parsed = parseOk(text);
  ASSERT_TRUE(parsed);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(parsed->inputs()[static_cast<std::size_t>(i)].data().equal(
        g.inputs()[static_cast<std::size_t>(i)].data()));
}

TEST(TextIRPrint, MetadataCanBeOmitted) {
  auto g = parseOk("graph @g {\n  input %x : f32[1]\n  %y : f32[1] = aten.relu.default(%x) "
                   "{stack_trace=\"s\"}\n  output %y\n}\n");
  ASSERT_TRUE(g);
  PrintOptions options;
  options.printMetadata = false;
  EXPECT_EQ(printOk(*g, options), "graph @g {\n  input %x : f32[1]\n  %y : f32[1] = "
                                  "aten.relu.default(%x)\n  output %y\n}\n");
}

TEST(TextIRPrint, UnprintableNamesAreErrors) {
  Graph g("g");
  g.addInput(InputKind::UserInput, "x.1", TensorProto(DType::F32, {1}));
  EXPECT_FALSE(printGraph(g).ok());
  Graph h("bad name");
  EXPECT_FALSE(printGraph(h).ok());
  Graph k("k");
  Value *x = k.addInput(InputKind::UserInput, "x", TensorProto(DType::F32, {1}));
  k.createNode("relu", {x}, {}, {});
  EXPECT_FALSE(printGraph(k).ok());
}

} // namespace
} // namespace graft
