//===- CliTestUtil.h - Running the graft CLI from a test --------*- C++ -*-===//
//
// runCli runs `graft ARGS` (the binary CMake built, GRAFT_CLI_PATH) with
// stderr folded into stdout and returns what it printed; `status` receives
// the exit code (-1 when it could not be started or did not exit).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <cstdio>
#include <string>

#include <sys/wait.h>

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

} // namespace graft::testing
