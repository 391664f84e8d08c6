//===- PatSemaTest.cpp - What .pat rules lower to; imports; graft check/fmt ===//
//
// The DSL front end's contract with the engine is rewrite::Rule (Rule.h):
// these tests pin down what each construct lowers to (names without sigils,
// canonical targets, defaults filled, alternatives merged or expanded,
// optional passthrough, type patterns, expressions), how imports load, and
// the `graft check` / `graft fmt` commands.
//
//===----------------------------------------------------------------------===//
#include "CliTestUtil.h"

#include "graft/dsl/Pat.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/serialize/TextIR.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace graft::dsl {
namespace {

namespace fs = std::filesystem;
using graft::testing::CliRun;
using graft::testing::runGraft;
using graft::testing::slurp;
using rewrite::ArgPattern;
using rewrite::DimPattern;
using rewrite::Expr;
using rewrite::RewriteStmt;
using rewrite::Rule;
using rewrite::RulePhase;

fs::path patDir(const std::string &sub) {
  return fs::path(GRAFT_TEST_DATA_DIR) / "golden" / "pat" / sub;
}

RuleSet load(const std::string &text) {
  SourceManager sm;
  auto set = parsePat(text, "test.pat", &sm);
  EXPECT_TRUE(set.ok()) << (set.ok() ? "" : render(set.diags(), &sm));
  if (!set.ok())
    return {};
  return std::move(*set);
}

const std::pair<std::string, ArgPattern> *kwarg(const rewrite::PatternNode &n,
                                                const std::string &name) {
  for (const auto &kv : n.kwargs)
    if (kv.first == name)
      return &kv;
  return nullptr;
}

TEST(PatLowering, TheIssueIllustration) {
  auto set = parsePatFile((patDir("ok") / "torchao_embedding.pat").string());
  ASSERT_TRUE(set.ok()) << render(set.diags());
  ASSERT_EQ(set->rules.size(), 1u);
  const Rule &r = set->rules[0];
  EXPECT_EQ(r.name, "torchao_embedding_q4gsw");
  EXPECT_EQ(r.doc, "Fuse torchao's weight-only int4 embedding into one Vulkan op.");
  EXPECT_EQ(r.benefit, 10);
  EXPECT_EQ(r.tags, (std::vector<std::string>{"embedding", "int4"}));
  EXPECT_EQ(r.backend, "vulkan");
  EXPECT_EQ(r.variant, 0u);
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.root, 1u);

  const auto &dq = r.nodes[0];
  EXPECT_EQ(dq.results, std::vector<std::string>{"dq"});
  EXPECT_EQ(dq.targets, std::vector<std::string>{"torchao.dequantize_affine"});
  ASSERT_EQ(dq.args.size(), 7u);
  const ArgPattern &w = dq.args[0];
  EXPECT_EQ(w.kind, ArgPattern::Kind::Var);
  EXPECT_EQ(w.name, "w");
  EXPECT_TRUE(w.mustBeParam);
  ASSERT_TRUE(w.type);
  EXPECT_EQ(w.type->dtype, DType::I8);
  EXPECT_FALSE(w.type->anyRank);
  ASSERT_EQ(w.type->dims.size(), 2u);
  EXPECT_EQ(w.type->dims[0].kind, DimPattern::Kind::Var);
  EXPECT_EQ(w.type->dims[0].var, "V");
  // [1, $G]: a list with a literal and a capture.
  EXPECT_EQ(dq.args[1].kind, ArgPattern::Kind::List);
  ASSERT_EQ(dq.args[1].elements.size(), 2u);
  EXPECT_EQ(dq.args[1].elements[0].kind, ArgPattern::Kind::Literal);
  EXPECT_EQ(dq.args[1].elements[0].literal, Argument(int64_t(1)));
  EXPECT_EQ(dq.args[1].elements[1].name, "G");
  // `param $s : $odt[$V, $NG]`: a dtype capture.
  ASSERT_TRUE(dq.args[2].type);
  EXPECT_EQ(dq.args[2].type->dtypeVar, "odt");
  EXPECT_EQ(dq.args[4].literal, Argument(DType::I8));
  EXPECT_EQ(dq.args[5].literal, Argument(int64_t(-8)));
  ASSERT_NE(kwarg(dq, "output_dtype"), nullptr);
  EXPECT_EQ(kwarg(dq, "output_dtype")->second.name, "odt");
  // Every argument is mentioned: no default filled in.
  EXPECT_EQ(dq.kwargs.size(), 1u);
  EXPECT_EQ(dq.args[0].loc.begin.line, 6u);

  // aten.embedding(%dq, $idx): the omitted arguments must keep their defaults.
  const auto &emb = r.nodes[1];
  EXPECT_EQ(emb.targets, std::vector<std::string>{"aten.embedding"});
  EXPECT_EQ(emb.args[0].kind, ArgPattern::Kind::PatResult);
  EXPECT_EQ(emb.args[0].name, "dq");
  ASSERT_NE(kwarg(emb, "padding_idx"), nullptr);
  EXPECT_EQ(kwarg(emb, "padding_idx")->second.literal, Argument(int64_t(-1)));
  EXPECT_EQ(kwarg(emb, "sparse")->second.literal, Argument(false));

  ASSERT_EQ(r.where.size(), 5u);
  EXPECT_EQ(r.where[0]->kind, Expr::Kind::Binary);
  EXPECT_EQ(r.where[0]->name, "==");
  EXPECT_EQ(r.where[0]->operands[0]->name, "%");
  // `$NG == $D / $G`: integer division.
  EXPECT_EQ(r.where[2]->operands[1]->name, "//");
  // `$zp is none or all_zero($zp)`
  EXPECT_EQ(r.where[3]->name, "||");
  EXPECT_EQ(r.where[3]->operands[0]->kind, Expr::Kind::Call);
  EXPECT_EQ(r.where[3]->operands[0]->name, "is_none");
  EXPECT_EQ(r.where[3]->operands[1]->name, "all_zero");
  EXPECT_EQ(r.where[4]->operands[1]->literal, Argument(int64_t(-8)));

  ASSERT_EQ(r.rewrite.size(), 2u);
  EXPECT_EQ(r.rewrite[0].kind, RewriteStmt::Kind::ConstTransform);
  EXPECT_EQ(r.rewrite[0].target, "pack_int4");
  EXPECT_EQ(r.rewrite[0].results, std::vector<std::string>{"packed"});
  ASSERT_EQ(r.rewrite[0].kwargs.size(), 1u);
  EXPECT_EQ(r.rewrite[0].kwargs[0].first, "nibbles");
  EXPECT_EQ(r.rewrite[0].kwargs[0].second->literal, Argument("low_first"));
  EXPECT_EQ(r.rewrite[1].kind, RewriteStmt::Kind::NewNode);
  EXPECT_EQ(r.rewrite[1].target, "et_vk.embedding_q4gsw.default");
  EXPECT_EQ(r.rewrite[1].results, std::vector<std::string>{"out"});
  EXPECT_EQ(r.rewrite[1].args[0]->kind, Expr::Kind::Var);
  EXPECT_EQ(r.rewrite[1].args[0]->name, "packed");
  EXPECT_EQ(r.rewrite[1].kwargs[0].second->literal, Argument(true));

  EXPECT_EQ(r.example.ints.at("V"), std::vector<int64_t>{64});
  EXPECT_EQ(r.example.dtypes.at("odt"), (std::vector<DType>{DType::F32, DType::BF16}));
  EXPECT_EQ(r.atol, 0.0);
  EXPECT_EQ(set->files.size(), 1u);
  EXPECT_EQ(set->ruleFile, std::vector<std::size_t>{0});
}

TEST(PatLowering, OverloadsAndDefaults) {
  RuleSet set = load(R"(
rule r {
  match {
    %a = aten.add($x, $y)
    %b = aten.add.Tensor(%a, $z, alpha = 2)
    %c = aten.embedding(param $w, %b, ...)
  }
  rewrite { %c = aten.embedding($w, %b) }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  const Rule &r = set.rules[0];
  // aten.add($x, $y): both overloads accept; alpha defaults to 1 in both.
  EXPECT_EQ(r.nodes[0].targets, std::vector<std::string>{"aten.add"});
  ASSERT_NE(kwarg(r.nodes[0], "alpha"), nullptr);
  EXPECT_EQ(kwarg(r.nodes[0], "alpha")->second.literal, Argument(int64_t(1)));
  EXPECT_EQ(r.nodes[1].targets, std::vector<std::string>{"aten.add.Tensor"});
  EXPECT_EQ(kwarg(r.nodes[1], "alpha")->second.literal, Argument(int64_t(2)));
  // `...`: the remaining arguments are left free.
  EXPECT_EQ(r.nodes[2].kwargs.size(), 0u);
  // Benefit defaults to the number of match statements.
  EXPECT_EQ(r.benefit, 3);
}

TEST(PatLowering, OverloadInsensitiveNarrowsToAcceptingOverloads) {
  // A tensor result as `other` only fits add.Tensor, not add.Scalar.
  RuleSet set = load(R"(
rule r {
  match {
    %a = aten.relu($x)
    %b = aten.add($y, %a)
  }
  rewrite { %b = aten.add.Tensor($y, $x) }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  EXPECT_EQ(set.rules[0].nodes[1].targets, std::vector<std::string>{"aten.add.Tensor"});
}

TEST(PatLowering, AlternativesMergeOrExpand) {
  RuleSet set = load(R"(
rule r {
  match {
    %v = (aten.view_copy | aten._unsafe_view)($x, $s)
    %t = aten.t(%v) | aten.permute_copy(%v, [1, 0])
    %y = aten.mm($a, %t)
  }
  rewrite { %y = aten.mm($a, %t) }
})");
  // Target alternatives share one node; different arguments expand the rule.
  ASSERT_EQ(set.rules.size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    const Rule &r = set.rules[i];
    EXPECT_EQ(r.name, "r");
    EXPECT_EQ(r.variant, i + 1);
    EXPECT_EQ(r.nodes[0].targets,
              (std::vector<std::string>{"aten.view_copy", "aten._unsafe_view"}));
  }
  EXPECT_EQ(set.rules[0].nodes[1].targets, std::vector<std::string>{"aten.t"});
  EXPECT_EQ(set.rules[1].nodes[1].targets, std::vector<std::string>{"aten.permute_copy"});
  // Statement-level alternatives with equal arguments merge instead.
  RuleSet merged = load(R"(
rule r {
  match {
    %v = aten.view_copy($x, $s) | aten._unsafe_view($x, $s)
    %y = aten.relu(%v)
  }
  rewrite { %y = aten.relu(%v) }
})");
  ASSERT_EQ(merged.rules.size(), 1u);
  EXPECT_EQ(merged.rules[0].nodes[0].targets.size(), 2u);
}

TEST(PatLowering, ArgumentAlternativesAndConditionalCaptures) {
  RuleSet set = load(R"(
rule r {
  match {
    %y = aten.embedding(param $w, $i, -1 | 0)
    %z = aten.add.Tensor(%y, $b | $b)
  }
  where { rank($b) == 1 }
  rewrite { %z = aten.embedding($w, $i) }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  const ArgPattern &alt = set.rules[0].nodes[0].args[2];
  EXPECT_EQ(alt.kind, ArgPattern::Kind::Alternatives);
  ASSERT_EQ(alt.elements.size(), 2u);
  EXPECT_EQ(alt.elements[1].literal, Argument(int64_t(0)));
}

TEST(PatLowering, OptionalNodesAndShared) {
  RuleSet set = load(R"(
rule r {
  match {
    shared %v = aten.view_copy($x, _)?
    %b = aten.add.Tensor($bias, %v)? else %v
    %y = aten.relu(%b)
  }
  rewrite { %y = aten.relu($x) }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  const Rule &r = set.rules[0];
  EXPECT_TRUE(r.nodes[0].optional);
  EXPECT_TRUE(r.nodes[0].shared);
  EXPECT_EQ(r.nodes[0].passthroughArg, 0u);
  EXPECT_TRUE(r.nodes[1].optional);
  EXPECT_FALSE(r.nodes[1].shared);
  EXPECT_EQ(r.nodes[1].passthroughArg, 1u);
  EXPECT_FALSE(r.nodes[2].optional);
}

TEST(PatLowering, MultiOutputAndIgnoredResults) {
  RuleSet set = load(R"(
rule r {
  match {
    %s, _ = torchao.choose_qparams_affine($x, "SYMMETRIC", [1, 32], i8, ...)
    %q    = torchao.quantize_affine($x, [1, 32], %s, none, i8)
  }
  rewrite { %q = torchao.quantize_affine($x, [1, 32], %s, none, i8) }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  EXPECT_EQ(set.rules[0].nodes[0].results, (std::vector<std::string>{"s", ""}));
  EXPECT_EQ(set.rules[0].nodes[0].args[1].literal, Argument("SYMMETRIC"));
}

TEST(PatLowering, TypePatterns) {
  RuleSet set = load(R"(
rule r {
  match {
    %y = aten.linear($x : $dt[..., $K], param $w : _[$N, $K], $b : f32)
    %z = aten.relu(%y : bf16[...])
  }
  rewrite { %z = aten.relu(%y) }
  example { N = 4, K = 8, dt = bf16 }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  const auto &n = set.rules[0].nodes[0];
  const auto &x = *n.args[0].type;
  EXPECT_EQ(x.dtypeVar, "dt");
  EXPECT_TRUE(x.anyRank);
  EXPECT_TRUE(x.leadingEllipsis);
  ASSERT_EQ(x.dims.size(), 1u);
  EXPECT_EQ(x.dims[0].var, "K");
  const auto &w = *n.args[1].type;
  EXPECT_FALSE(w.dtype);
  EXPECT_TRUE(w.dtypeVar.empty());
  EXPECT_FALSE(w.anyRank);
  const auto &b = *n.args[2].type;
  EXPECT_EQ(b.dtype, DType::F32);
  EXPECT_TRUE(b.anyRank);
  EXPECT_TRUE(b.dims.empty());
  const auto &yt = *set.rules[0].nodes[1].args[0].type;
  EXPECT_TRUE(yt.anyRank);
  EXPECT_FALSE(yt.leadingEllipsis);
}

// `$eps : scalar float`: a Python number in a Tensor slot (torch.export's
// `x + 1e-05` is aten.add.Tensor(x, 1e-05)) binds a float capture; a tensor
// there does not match, and explain says why.
TEST(PatLowering, ScalarAnnotationCapturesANumberInATensorSlot) {
  const std::string rule = R"(
rule add_eps {
  match { %y = aten.add.Tensor($x, $eps : scalar float) }
  rewrite { %y = aten.add.Scalar($x, $eps) }
  example { eps = [0, 1] }
})";
  RuleSet set = load(rule);
  ASSERT_EQ(set.rules.size(), 1u);
  const ArgPattern &eps = set.rules[0].nodes[0].args[1];
  EXPECT_EQ(eps.kind, ArgPattern::Kind::Var);
  EXPECT_EQ(eps.scalar, ArgPattern::Scalar::Float);
  EXPECT_FALSE(eps.type);

  auto graph = parseGraph(R"(graph @g {
  input %a : f32[4]
  input %b : f32[4]
  %n : f32[4] = aten.add.Tensor(%a, 1e-05)
  %t : f32[4] = aten.add.Tensor(%a, %b)
  output %n
  output %t
}
)",
                          "g.gir");
  ASSERT_TRUE(graph.ok()) << render(graph.diags());
  auto compiled = rewrite::CompiledRules::compile(std::move(set.rules));
  ASSERT_TRUE(compiled.ok()) << render(compiled.diags());
  auto entries = rewrite::explain(**graph, *compiled);
  ASSERT_EQ(entries.size(), 2u);
  for (const rewrite::ExplainEntry &e : entries) {
    if (e.root == "n") {
      EXPECT_TRUE(e.matched) << rewrite::format(e);
    } else {
      EXPECT_FALSE(e.matched);
      EXPECT_NE(e.message.find("expected a number, got a tensor (%b is a graph input)"),
                std::string::npos)
          << rewrite::format(e);
      EXPECT_EQ(e.loc.begin.line, 3u) << rewrite::format(e);
    }
  }
  rewrite::FqnRegistry fqns;
  auto result = rewrite::applyRules(**graph, *compiled, fqns, {});
  ASSERT_TRUE(result.ok()) << render(result.diags());
  EXPECT_EQ(result->rewrites, 1u);
  bool epsIsFloat = false;
  for (const Node &n : (*graph)->nodes())
    if (n.target() == "aten.add.Scalar")
      epsIsFloat = n.args()[1].isFloat() && n.args()[1].floating() == 1e-05;
  EXPECT_TRUE(epsIsFloat);

  // Round trip through the formatter keeps the annotation.
  auto fmt = formatPat(rule, "test.pat");
  ASSERT_TRUE(fmt.ok());
  EXPECT_NE(fmt->find("$eps : scalar float"), std::string::npos) << *fmt;
}

TEST(PatLowering, ScalarAnnotationMisuseIsALocatedError) {
  auto errorsOf = [](const std::string &text) {
    SourceManager sm;
    auto set = parsePat(text, "test.pat", &sm);
    EXPECT_FALSE(set.ok());
    return set.ok() ? std::string() : render(set.diags(), &sm);
  };
  // An int[] slot cannot hold a number.
  std::string e = errorsOf(R"(rule r {
  match { %y = aten.mean.dim($x, $d : scalar float, true) }
  rewrite { %y = aten.relu($x) }
})");
  EXPECT_NE(e.find("test.pat:2:39"), std::string::npos) << e;
  EXPECT_NE(e.find("'scalar float' needs a Tensor or Scalar argument, but 'dim' of "
                   "aten.mean.dim is int[1]?"),
            std::string::npos)
      << e;
  // A result is a tensor.
  e = errorsOf(R"(rule r {
  match {
    %a = aten.relu($x)
    %y = aten.add.Tensor($x, %a : scalar int)
  }
  rewrite { %y = aten.relu($x) }
})");
  EXPECT_NE(e.find("'scalar int' is for a capture or _ (a result is a tensor)"), std::string::npos)
      << e;
  // Only float and int are scalar kinds.
  e = errorsOf(R"(rule r {
  match { %y = aten.add.Tensor($x, $e : scalar bool) }
  rewrite { %y = aten.relu($x) }
})");
  EXPECT_NE(e.find("expected 'float' or 'int' after 'scalar'"), std::string::npos) << e;
}

TEST(PatLowering, ExpressionsAndRewriteForms) {
  RuleSet set = load(R"(
rule r {
  match { %y = aten.embedding(param $w : i8[$V, $D], $i) }
  where {
    $V in [32, 64] and not ($D < 0)
    $D not in [3]
    $i is not none
  }
  rewrite {
    $n = dim($w, 1) * 2 - -1
    $p = pack_int4($w, nibbles = high_first)
    %y = et_vk.embedding_q4gsw($p, $w, $n, $i)
  }
  example { V = 32..64 step 32, D = 128 }
})");
  ASSERT_EQ(set.rules.size(), 1u);
  const Rule &r = set.rules[0];
  // `in` becomes == chained with ||, `not in` != chained with &&.
  EXPECT_EQ(r.where[0]->name, "&&");
  EXPECT_EQ(r.where[0]->operands[0]->name, "||");
  EXPECT_EQ(r.where[0]->operands[1]->kind, Expr::Kind::Unary);
  EXPECT_EQ(r.where[0]->operands[1]->name, "!");
  EXPECT_EQ(r.where[1]->name, "!=");
  EXPECT_EQ(r.where[2]->name, "!");
  EXPECT_EQ(r.where[2]->operands[0]->name, "is_none");
  EXPECT_EQ(r.rewrite[0].kind, RewriteStmt::Kind::Let);
  EXPECT_EQ(r.rewrite[0].value->name, "-");
  EXPECT_EQ(r.rewrite[0].value->operands[1]->literal, Argument(int64_t(-1)));
  EXPECT_EQ(r.rewrite[1].kind, RewriteStmt::Kind::ConstTransform);
  EXPECT_EQ(r.example.ints.at("V"), (std::vector<int64_t>{32, 64}));
}

TEST(PatLowering, WarningsAreReturnedAndCanBeErrors) {
  const char *text = R"(
rule r {
  match { %y = aten.relu($x : f32[$N]) }
  rewrite { %y = aten.relu($x) }
})";
  auto set = parsePat(text, "w.pat");
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->warnings.size(), 1u);
  EXPECT_EQ(set->warnings[0].severity, Severity::Warning);
  EXPECT_NE(set->warnings[0].message.find("$N is never used"), std::string::npos);
  PatOptions strict;
  strict.warningsAsErrors = true;
  auto failed = parsePat(text, "w.pat", nullptr, strict);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.diags()[0].severity, Severity::Error);
}

TEST(PatLowering, ManyErrorsInOneRunWithoutCascades) {
  std::vector<Diagnostic> diags = checkPat(R"(
rule r {
  match {
    %a = aten.lnear($x, param $w, _)
    %b = aten.relu(%a)
  }
  where { rank($w) == 2; $nope > 1 }
  rewrite { %b = aten.relu($x) }
})",
                                           "many.pat");
  // The unknown op still binds $x and $w and feeds %b: only two errors.
  int errors = 0;
  for (const Diagnostic &d : diags)
    errors += d.severity == Severity::Error;
  EXPECT_EQ(errors, 2) << render(diags);
}

//===----------------------------------------------------------------------===//
// The engine accepts what the front end produces
//===----------------------------------------------------------------------===//

TEST(PatEngine, EveryGoldenRuleCompiles) {
  for (const auto &e : fs::directory_iterator(patDir("ok"))) {
    SCOPED_TRACE(e.path().filename().string());
    auto set = parsePatFile(e.path().string());
    ASSERT_TRUE(set.ok()) << render(set.diags());
    std::size_t n = set->rules.size();
    auto compiled = rewrite::CompiledRules::compile(std::move(set->rules));
    ASSERT_TRUE(compiled.ok()) << render(compiled.diags());
    EXPECT_EQ(compiled->size(), n);
  }
}

TEST(PatEngine, TheIllustrationFusesATinyGraph) {
  auto set = parsePatFile((patDir("ok") / "torchao_embedding.pat").string());
  ASSERT_TRUE(set.ok()) << render(set.diags());
  auto graph = parseGraph(R"(graph @tiny {
  param %w : i8[64, 128] fqn="tok_embeddings.weight" = random(seed=1, min=-8, max=7)
  param %s : f32[64, 4] fqn="tok_embeddings.scales" = random(seed=2, min=0.01, max=0.1)
  input %tokens : i64[1, 8]
  %dq : f32[64, 128] = torchao.dequantize_affine.default(%w, [1, 32], %s, none, i8, -8, 7,
                                                         output_dtype=f32)
  %out : f32[1, 8, 128] = aten.embedding.default(%dq, %tokens)
  output %out
}
)",
                          "tiny.gir");
  ASSERT_TRUE(graph.ok()) << render(graph.diags());
  auto compiled = rewrite::CompiledRules::compile(std::move(set->rules));
  ASSERT_TRUE(compiled.ok()) << render(compiled.diags());
  rewrite::FqnRegistry fqns;
  rewrite::RewriteOptions options;
  options.verifyEach = true;
  auto result = rewrite::applyRules(**graph, *compiled, fqns, options);
  ASSERT_TRUE(result.ok()) << render(result.diags());
  EXPECT_EQ(result->rewrites, 1u);
  bool fused = false;
  for (const Node &n : (*graph)->nodes())
    fused |= n.target() == "et_vk.embedding_q4gsw.default";
  EXPECT_TRUE(fused);
  EXPECT_EQ((*graph)->numNodes(), 1u);
}

//===----------------------------------------------------------------------===//
// Imports
//===----------------------------------------------------------------------===//

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::path(::testing::TempDir()) /
           ("pat_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  static int &counter() {
    static int c = 0;
    return c;
  }
  std::string write(const std::string &name, const std::string &text) const {
    fs::path p = path / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
};

std::string relu(const std::string &name) {
  return "rule " + name +
         " {\n  match { %y = aten.relu($x) }\n  rewrite { %y = aten.relu($x) }\n}\n";
}

TEST(PatImports, DiamondLoadsEachFileOnceInOrder) {
  TempDir dir;
  dir.write("common.pat", relu("common"));
  dir.write("sub/a.pat", "import \"../common.pat\"\n" + relu("a"));
  dir.write("b.pat", "import \"common.pat\"\n" + relu("b"));
  std::string main = dir.write("main.pat", "import \"sub/a.pat\"\nimport \"b.pat\"\n" + relu("m"));
  SourceManager sm;
  auto set = parsePatFile(main, &sm);
  ASSERT_TRUE(set.ok()) << render(set.diags(), &sm);
  std::vector<std::string> names;
  for (const Rule &r : set->rules)
    names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"common", "a", "b", "m"}));
  ASSERT_EQ(set->files.size(), 4u);
  EXPECT_EQ(fs::path(set->files[set->ruleFile[1]]).filename(), "a.pat");
  EXPECT_EQ(fs::path(set->files[set->ruleFile[3]]).filename(), "main.pat");
  // Every file loaded is in the source manager for rendering.
  EXPECT_NE(sm.contents(set->files[0]), nullptr);
}

TEST(PatImports, CycleThroughTwoFiles) {
  TempDir dir;
  std::string a = dir.write("a.pat", "import \"b.pat\"\n" + relu("a"));
  dir.write("b.pat", "\nimport \"a.pat\"\n" + relu("b"));
  auto diags = checkPatFile(a);
  ASSERT_EQ(diags.size(), 1u) << render(diags);
  EXPECT_NE(diags[0].message.find("import cycle: "), std::string::npos);
  EXPECT_NE(diags[0].message.find("a.pat -> "), std::string::npos);
  EXPECT_EQ(fs::path(diags[0].range->begin.file).filename(), "b.pat");
  EXPECT_EQ(diags[0].range->begin.line, 2u);
}

TEST(PatImports, DuplicateRuleAcrossFilesAndMissingFiles) {
  TempDir dir;
  dir.write("a.pat", relu("same"));
  std::string m = dir.write("m.pat", "import \"a.pat\"\nimport \"gone.pat\"\n" + relu("same"));
  auto diags = checkPatFile(m);
  bool dup = false, missing = false;
  for (const Diagnostic &d : diags) {
    dup |= d.message.find("redefinition of rule 'same'") != std::string::npos && !d.notes.empty() &&
           fs::path(d.notes[0].range->begin.file).filename() == "a.pat";
    missing |= d.message.find("cannot import") != std::string::npos && d.range->begin.line == 2u;
  }
  EXPECT_TRUE(dup) << render(diags);
  EXPECT_TRUE(missing) << render(diags);
  auto unreadable = parsePatFile((dir.path / "nope.pat").string());
  ASSERT_FALSE(unreadable.ok());
}

//===----------------------------------------------------------------------===//
// graft check / graft fmt
//===----------------------------------------------------------------------===//

TEST(PatCli, CheckReportsEveryDiagnostic) {
  std::string ok = (patDir("ok") / "torchao_embedding.pat").string();
  std::string bad = (patDir("errors") / "unknown_op.pat").string();
  std::string warn = (patDir("errors") / "unused_capture.pat").string();
  CliRun r = runGraft("check " + ok);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok"), std::string::npos);
  r = runGraft("check " + ok + " " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown_op.pat:4:16: error: unknown op 'aten.lnear'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("^~~~~~~~~~"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'aten.linear'?"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 error and 0 warnings generated."), std::string::npos) << r.err;
  r = runGraft("check " + warn);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: capture $b is never used"), std::string::npos) << r.err;
  r = runGraft("check --werror " + warn);
  EXPECT_EQ(r.code, 1) << r.err;
  r = runGraft("check " + (patDir("errors") / "no_such_file.pat").string());
  EXPECT_EQ(r.code, 1);
}

TEST(PatCli, FmtPrintsChecksAndRewritesInPlace) {
  TempDir dir;
  std::string messy =
      dir.write("m.pat", "rule r{match{%y=aten.relu($x)}rewrite{%y=aten.relu($x)}}\n");
  std::string canonical = "rule r {\n  match {\n    %y = aten.relu($x)\n  }\n  rewrite {\n"
                          "    %y = aten.relu($x)\n  }\n}\n";
  CliRun r = runGraft("fmt " + messy);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, canonical);
  r = runGraft("fmt --check " + messy);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("m.pat:1: not canonically formatted"), std::string::npos) << r.err;
  r = runGraft("fmt -i " + messy);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(messy), canonical);
  r = runGraft("fmt --check " + messy + " " + (patDir("ok") / "comments.pat").string());
  EXPECT_EQ(r.code, 0) << r.err;
  std::string broken = dir.write("b.pat", "rule r { match {\n");
  r = runGraft("fmt " + broken);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("b.pat:2:1: error: expected '}'"), std::string::npos) << r.err;
  r = runGraft("fmt " + messy + " " + broken);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("several FILEs need --check or -i"), std::string::npos);
}

TEST(PatPhases, EachFileDeclaresItsPhaseAndImportsKeepTheirs) {
  TempDir dir;
  dir.write("legal.pat", "// canonical spellings\nphase legalize\n\n" + relu("l1") + relu("l2"));
  std::string main = dir.write("main.pat", "import \"legal.pat\"\n" + relu("f"));
  auto set = parsePatFile(main);
  ASSERT_TRUE(set.ok()) << render(set.diags());
  ASSERT_EQ(set->rules.size(), 3u);
  EXPECT_EQ(set->rules[0].phase, RulePhase::Legalize);
  EXPECT_EQ(set->rules[1].phase, RulePhase::Legalize);
  EXPECT_EQ(set->rules[2].phase, RulePhase::Fuse); // undeclared: fuse
  // `phase fuse;` is the default spelled out.
  auto fuse = parsePat("phase fuse;\n" + relu("g"), "f.pat");
  ASSERT_TRUE(fuse.ok()) << render(fuse.diags());
  EXPECT_EQ(fuse->rules[0].phase, RulePhase::Fuse);
}

TEST(PatPhases, ErrorsNameThePhaseDeclaration) {
  auto unknown = parsePat("phase lower\n" + relu("a"), "p.pat");
  ASSERT_FALSE(unknown.ok());
  std::string e = render(unknown.diags());
  EXPECT_NE(e.find("p.pat:1:7: error: unknown phase 'lower' (the phases, in the order they run: "
                   "legalize, fuse)"),
            std::string::npos)
      << e;

  auto late = parsePat(relu("a") + "phase legalize\n", "p.pat");
  ASSERT_FALSE(late.ok());
  e = render(late.diags());
  EXPECT_NE(e.find("p.pat:5:1: error: 'phase' must come before the file's rules"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("note: first rule here"), std::string::npos) << e;

  auto twice = parsePat("phase legalize\nphase fuse\n" + relu("a"), "p.pat");
  ASSERT_FALSE(twice.ok());
  e = render(twice.diags());
  EXPECT_NE(e.find("p.pat:2:1: error: a file declares one phase"), std::string::npos) << e;

  auto missing = parsePat("phase\n" + relu("a"), "p.pat");
  ASSERT_FALSE(missing.ok());
  e = render(missing.diags());
  EXPECT_NE(e.find("expected a phase name after 'phase' (legalize or fuse)"), std::string::npos)
      << e;
}

} // namespace
} // namespace graft::dsl
