// End-to-end tests of the graft CLI: exit codes (0 ok, 1 user error, 2
// internal), --help on every subcommand, located diagnostics, atomic -o.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RunResult graft(const std::string &args) {
  // CTest runs each test as its own process, possibly in parallel: keep the
  // capture files per process and per call.
  static int counter = 0;
  std::string stem =
      ::testing::TempDir() + "cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string out = stem + ".out", err = stem + ".err";
  std::string cmd = std::string(GRAFT_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  RunResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

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
  auto v = graft("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("graft "), std::string::npos);
  auto h = graft("--help");
  EXPECT_EQ(h.code, 0);
  for (const char *cmd : {"print", "verify", "run", "ops"}) {
    EXPECT_NE(h.out.find(cmd), std::string::npos) << cmd;
    auto sub = graft(std::string(cmd) + " --help");
    EXPECT_EQ(sub.code, 0) << cmd;
    EXPECT_NE(sub.out.find("usage: graft " + std::string(cmd)), std::string::npos) << sub.out;
  }
}

TEST(Cli, UnknownCommandAndOptionAreUserErrors) {
  EXPECT_EQ(graft("frobnicate").code, 1);
  auto r = graft("print --bogus x.gir");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("unknown option '--bogus'"), std::string::npos) << r.err;
  EXPECT_EQ(graft("").code, 1);
}

TEST(Cli, PrintIsCanonicalAndAtomic) {
  std::string in = writeTemp("cli_good.gir", kGoodGraph);
  auto r = graft("print " + in);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kGoodGraph);
  std::string out = ::testing::TempDir() + std::to_string(::getpid()) + "_cli_printed.gir";
  std::remove(out.c_str());
  ASSERT_EQ(graft("print " + in + " -o " + out).code, 0);
  EXPECT_EQ(slurp(out), kGoodGraph);
  // A failing print leaves the previous output untouched.
  std::string bad = writeTemp("cli_bad.gir", "graph @g {\n  input %x : f99[2]\n}\n");
  auto f = graft("print " + bad + " -o " + out);
  EXPECT_EQ(f.code, 1);
  EXPECT_EQ(slurp(out), kGoodGraph);
  std::remove(out.c_str());
}

TEST(Cli, ParseErrorsAreLocatedWithCaret) {
  std::string bad = writeTemp("cli_bad2.gir", "graph @g {\n  input %x : f99[2]\n}\n");
  auto r = graft("verify " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad + ":2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("^"), std::string::npos) << r.err;
  EXPECT_EQ(graft("verify /no/such/file.gir").code, 1);
}

TEST(Cli, VerifyReportsNamedViolations) {
  std::string bad = writeTemp("cli_mismatch.gir", R"(graph @g {
  input %x : f32[2, 3]
  %y : f32[3, 2] = aten.relu.default(%x)
  output %y
}
)");
  auto r = graft("verify " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("node %y (aten.relu.default)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[proto-mismatch]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(bad + ":3:"), std::string::npos) << r.err;
  EXPECT_EQ(graft("verify " + writeTemp("cli_ok.gir", kGoodGraph)).code, 0);
}

TEST(Cli, RunWithGivenAndRandomInputs) {
  std::string in = writeTemp("cli_run.gir", kGoodGraph);
  auto r = graft("run " + in + " --inputs 'x=[-1, 2, -3, 4, -5.5, 6]' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"values\""), std::string::npos);
  EXPECT_NE(r.out.find("5.5"), std::string::npos) << r.out; // never leaks a negative through
  auto a = graft("run " + in + " --seed 7");
  auto b = graft("run " + in + " --seed 7");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out); // deterministic
  auto bad = graft("run " + in + " --inputs 'x=[1, 2]'");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("x=[1, 2]"), std::string::npos) << bad.err;
  EXPECT_EQ(graft("run " + in + " --inputs 'nope=[1]'").code, 1);
  // A trailing comma is an empty value (it used to be dropped silently).
  auto trailing = graft("run " + in + " --inputs 'x=[1, 2, 3, 4, 5, 6,]'");
  EXPECT_EQ(trailing.code, 1);
  EXPECT_NE(trailing.err.find("--inputs x=[1, 2, 3, 4, 5, 6,]: empty value in the list"),
            std::string::npos)
      << trailing.err;
  EXPECT_EQ(graft("run " + in + " --seed abc").code, 1);
}

TEST(Cli, RunningAnOpaqueOpIsAUserError) {
  std::string in = writeTemp("cli_opaque.gir", R"(graph @g {
  input %x : f32[2]
  %y : f32[2] = mylib.mystery.default(%x)
  output %y
}
)");
  EXPECT_EQ(graft("verify " + in).code, 0); // opaque ops verify structurally
  auto r = graft("run " + in);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("mylib.mystery.default"), std::string::npos) << r.err;
}

TEST(Cli, ExamplesVerifyAndRun) {
  for (const char *ex : {"tiny_embedding.gir", "llama_block_8da4w.gir"}) {
    auto v = graft("verify " + kExamples + ex);
    EXPECT_EQ(v.code, 0) << ex << "\n" << v.err;
    auto r = graft("run " + kExamples + ex + " --json");
    EXPECT_EQ(r.code, 0) << ex << "\n" << r.err;
  }
}

TEST(Cli, OpsListsRegistry) {
  auto r = graft("ops --filter dequantize_affine");
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("torchao::dequantize_affine"), std::string::npos) << r.out;
}
