//===- main.cpp - The graft command-line tool -----------------------------===//
//
//   graft print FILE        re-print a graph canonically
//   graft verify FILE       check a graph's invariants
//   graft run FILE          execute a graph with the reference interpreter
//   graft ops               list the op registry
//   graft synth llama ...   write a Llama-shaped exported program (.pt2)
//   graft check FILE...     check .pat rule files
//   graft fmt FILE...       format .pat rule files
//   graft fuse IN --rules F apply fusion rules to a graph
//   graft explain G --rules F  why rules do (not) match
//   graft verify-rules F... test rules numerically
//   graft devices           list the Vulkan devices
//   graft run-vk FILE       execute a graph on a Vulkan device
//   graft partition FILE --target T   Vulkan partitions and CPU reasons
//   graft coverage G... --rules F     which rules fire, near misses, unfused ops
//   graft compile MODEL -o P.vkprog   the whole pipeline to a Vulkan program file
//
//===----------------------------------------------------------------------===//
#include "Cli.h"

#include <exception>
#include <iostream>

#ifndef GRAFT_VERSION
#define GRAFT_VERSION "unknown"
#endif

using namespace graft::cli;

static std::vector<Command> commands() {
  return {makePrintCommand(),       makeVerifyCommand(),   makeRunCommand(),
          makeOpsCommand(),         makeCheckCommand(),    makeFmtCommand(),
          makeSynthCommand(),       makeFuseCommand(),     makeExplainCommand(),
          makeVerifyRulesCommand(), makeDevicesCommand(),  makeRunVkCommand(),
          makePartitionCommand(),   makeCoverageCommand(), makeCompileCommand()};
}

static void printUsage(std::ostream &os) {
  os << "usage: graft <command> [options]\n\n"
        "graft rewrites quantized PyTorch graphs for Vulkan.\n\ncommands:\n";
  for (const Command &c : commands())
    os << "  " << c.name << std::string(c.name.size() < 10 ? 10 - c.name.size() : 1, ' ')
       << c.summary << "\n";
  os << "\nRun 'graft <command> --help' for a command's options; 'graft --version' for the "
        "version.\n";
}

int main(int argc, char **argv) {
  try {
    std::vector<std::string> rest(argv + 1, argv + argc);
    if (rest.empty()) {
      printUsage(std::cerr);
      return kUserError;
    }
    if (rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help") {
      printUsage(std::cout);
      return kOk;
    }
    if (rest[0] == "--version") {
      std::cout << "graft " << GRAFT_VERSION << "\n";
      return kOk;
    }
    for (const Command &c : commands()) {
      if (c.name != rest[0])
        continue;
      std::vector<std::string> sub(rest.begin() + 1, rest.end());
      for (const std::string &a : sub)
        if (a == "--help" || a == "-h") {
          std::cout << helpText(c);
          return kOk;
        }
      auto args = parseArgs(c, sub);
      if (!args)
        return kUserError;
      return c.run(*args);
    }
    std::cerr << "graft: error: unknown command '" << rest[0] << "'\n";
    printUsage(std::cerr);
    return kUserError;
  } catch (const std::exception &e) {
    std::cerr << "graft: internal error: " << e.what() << "\n";
    return kInternalError;
  } catch (...) {
    std::cerr << "graft: internal error: unknown exception\n";
    return kInternalError;
  }
}
