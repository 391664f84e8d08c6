//===- CliTestUtil.h - Running the graft CLI from a test --------*- C++ -*-===//
//
// runCli runs `graft ARGS` (the binary CMake built, GRAFT_CLI_PATH) with
// stderr folded into stdout and returns what it printed; `status` receives
// the exit code (-1 when it could not be started or did not exit). runGraft
// runs it with the two streams captured apart, for the tests that check
// which stream a message went to.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace graft::testing {

inline std::string runCli(const std::string &args, int &status) {
  std::string cmd = std::string(GRAFT_CLI_PATH) + " " + args + " 2>&1";
  std::array<char, 4096> buf{};
  std::string out;
  FILE *p = popen(cmd.c_str(), "r");
  if (!p) {
    status = -1;
    return out;
  }
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p))
    out.append(buf.data(), n);
  int rc = pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

/// A file's contents ("" when it cannot be read).
inline std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// What a `graft` run printed on each stream, and its exit code (-1 when it
/// did not exit).
struct CliRun {
  int code = -1;
  std::string out, err;
};

inline CliRun runGraft(const std::string &args) {
  // CTest runs each test as its own process, possibly in parallel: the
  // capture files are per process and per call.
  static int counter = 0;
  std::string stem = ::testing::TempDir() + "graftcli_" + std::to_string(::getpid()) + "_" +
                     std::to_string(counter++);
  std::string out = stem + ".out", err = stem + ".err";
  std::string cmd = std::string(GRAFT_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

} // namespace graft::testing
