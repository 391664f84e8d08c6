// End-to-end tests of the graft CLI: exit codes (0 ok, 1 user error, 2
// internal), --help on every subcommand, located diagnostics, atomic -o.
#include "CliTestUtil.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using graft::testing::CliRun;
using graft::testing::runGraft;
using graft::testing::slurp;

namespace {

/// Files writeTemp made, removed when the test process exits (each test
/// runs as its own process under CTest).
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string &p : paths)
      std::remove(p.c_str());
  }
};

std::string writeTemp(const std::string &name, const std::string &text) {
  static TempFiles made;
  std::string path = ::testing::TempDir() + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  made.paths.push_back(path);
  return path;
}

const std::string kExamples = std::string(GRAFT_TEST_DATA_DIR) + "/../examples/";

const char *kGoodGraph = R"(graph @g {
  input %x : f32[2, 3]
  %y : f32[2, 3] = aten.relu.default(%x)
  output %y
}
)";

} // namespace

TEST(Cli, VersionAndHelp) {
  auto v = runGraft("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("graft "), std::string::npos);
  auto h = runGraft("--help");
  EXPECT_EQ(h.code, 0);
  for (const char *cmd : {"print", "verify", "run", "ops"}) {
    EXPECT_NE(h.out.find(cmd), std::string::npos) << cmd;
    auto sub = runGraft(std::string(cmd) + " --help");
    EXPECT_EQ(sub.code, 0) << cmd;
    EXPECT_NE(sub.out.find("usage: graft " + std::string(cmd)), std::string::npos) << sub.out;
  }
}

TEST(Cli, UnknownCommandAndOptionAreUserErrors) {
  EXPECT_EQ(runGraft("frobnicate").code, 1);
  auto r = runGraft("print --bogus x.gir");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << r.err;
  EXPECT_EQ(runGraft("").code, 1);
}

TEST(Cli, PrintIsCanonicalAndAtomic) {
  std::string in = writeTemp("cli_good.gir", kGoodGraph);
  auto r = runGraft("print " + in);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kGoodGraph);
  std::string out = ::testing::TempDir() + std::to_string(::getpid()) + "_cli_printed.gir";
  std::remove(out.c_str());
  ASSERT_EQ(runGraft("print " + in + " -o " + out).code, 0);
  EXPECT_EQ(slurp(out), kGoodGraph);
  // A failing print leaves the previous output untouched.
  std::string bad = writeTemp("cli_bad.gir", "graph @g {\n  input %x : f99[2]\n}\n");
  auto f = runGraft("print " + bad + " -o " + out);
  EXPECT_EQ(f.code, 1);
  EXPECT_EQ(slurp(out), kGoodGraph);
  std::remove(out.c_str());
}

TEST(Cli, ParseErrorsAreLocatedWithCaret) {
  std::string bad = writeTemp("cli_bad2.gir", "graph @g {\n  input %x : f99[2]\n}\n");
  auto r = runGraft("verify " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("^"), std::string::npos) << r.err;
  EXPECT_EQ(runGraft("verify /no/such/file.gir").code, 1);
}

TEST(Cli, VerifyReportsNamedViolations) {
  std::string bad = writeTemp("cli_mismatch.gir", R"(graph @g {
  input %x : f32[2, 3]
  %y : f32[3, 2] = aten.relu.default(%x)
  output %y
}
)");
  auto r = runGraft("verify " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("node %y (aten.relu.default)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[proto-mismatch]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(bad + ":3:"), std::string::npos) << r.err;
  EXPECT_EQ(runGraft("verify " + writeTemp("cli_ok.gir", kGoodGraph)).code, 0);
}

TEST(Cli, RunWithGivenAndRandomInputs) {
  std::string in = writeTemp("cli_run.gir", kGoodGraph);
  auto r = runGraft("run " + in + " --inputs 'x=[-1, 2, -3, 4, -5.5, 6]' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"values\""), std::string::npos);
  EXPECT_NE(r.out.find("5.5"), std::string::npos) << r.out; // never leaks a negative through
  auto a = runGraft("run " + in + " --seed 7");
  auto b = runGraft("run " + in + " --seed 7");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out); // deterministic
  auto bad = runGraft("run " + in + " --inputs 'x=[1, 2]'");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("x=[1, 2]"), std::string::npos) << bad.err;
  EXPECT_EQ(runGraft("run " + in + " --inputs 'nope=[1]'").code, 1);
  // A trailing comma is an empty value (it used to be dropped silently).
  auto trailing = runGraft("run " + in + " --inputs 'x=[1, 2, 3, 4, 5, 6,]'");
  EXPECT_EQ(trailing.code, 1);
  EXPECT_NE(trailing.err.find("--inputs x=[1, 2, 3, 4, 5, 6,]: empty value in the list"),
            std::string::npos)
      << trailing.err;
  EXPECT_EQ(runGraft("run " + in + " --seed abc").code, 1);
}

TEST(Cli, RunningAnOpaqueOpIsAUserError) {
  std::string in = writeTemp("cli_opaque.gir", R"(graph @g {
  input %x : f32[2]
  %y : f32[2] = mylib.mystery.default(%x)
  output %y
}
)");
  EXPECT_EQ(runGraft("verify " + in).code, 0); // opaque ops verify structurally
  auto r = runGraft("run " + in);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("mylib.mystery.default"), std::string::npos) << r.err;
}

TEST(Cli, ExamplesVerifyAndRun) {
  for (const char *ex : {"tiny_embedding.gir", "llama_block_8da4w.gir"}) {
    auto v = runGraft("verify " + kExamples + ex);
    EXPECT_EQ(v.code, 0) << ex << "\n" << v.err;
    auto r = runGraft("run " + kExamples + ex + " --json");
    EXPECT_EQ(r.code, 0) << ex << "\n" << r.err;
  }
}

TEST(Cli, OpsListsRegistry) {
  auto r = runGraft("ops --filter dequantize_affine");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("torchao::dequantize_affine"), std::string::npos) << r.out;
}
