//===- Cli.h - Shared plumbing for graft subcommands ---*- C++ -*-===//
//
// Exit codes: 0 success, 1 user error (diagnostics printed), 2 internal
// error (a graft bug). Every subcommand answers --help.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/Compiler.h"
#include "graft/rewrite/Rewriter.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace graft::cli {

enum ExitCode { kOk = 0, kUserError = 1, kInternalError = 2 };

/// A parsed command line: flags (--name value / --name=value / --bool) and
/// positional arguments, validated against the subcommand's declared flags.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;
  bool has(const std::string &flag) const { return values.count(flag) != 0; }
  std::optional<std::string> get(const std::string &flag) const;
  const std::vector<std::string> &all(const std::string &flag) const;
};

struct FlagSpec {
  std::string name; ///< without dashes
  bool takesValue = false;
  std::string help;
  std::string metavar = "VALUE";
};

struct Command {
  std::string name;
  std::string usage;   ///< "graft print FILE [-o OUT]"
  std::string summary; ///< one line
  std::string details; ///< paragraph for --help
  std::vector<FlagSpec> flags;
  std::function<int(const Args &)> run;
};

/// Parses argv for `cmd`; prints an error and returns nullopt on bad flags.
std::optional<Args> parseArgs(const Command &cmd, const std::vector<std::string> &argv);
std::string helpText(const Command &cmd);

// Readers of the option values several commands take (run, run-vk, compile,
// a program's run). Each command reads a flag through the same function, so
// the flag accepts the same spellings and its errors read alike everywhere.

/// A whole decimal number spelling all of `s` (strtoll), else nullopt.
std::optional<int64_t> parseInt(const std::string &s);
/// --device N: the Vulkan device index, or -1 (pick automatically) when absent.
Expected<int> deviceFlag(const Args &args);
/// --atol X: a non-negative tolerance, or nullopt when absent.
Expected<std::optional<double>> atolFlag(const Args &args);
/// --seed N: a non-negative integer, 0 when absent.
Expected<uint64_t> seedFlag(const Args &args);
/// Every --sym NAME=INT (repeatable; a later one for the same name wins).
Expected<std::map<std::string, int64_t>> symFlags(const Args &args);

/// The options of the commands that run a graph or a program, read at once.
/// A command that declares fewer of these flags just gets the defaults.
struct RunFlags {
  uint64_t seed = 0;
  std::map<std::string, int64_t> symbols;
  int deviceIndex = -1;
  std::optional<double> atol;
};
Expected<RunFlags> runFlags(const Args &args);

/// Prints diagnostics (rendered with source lines when available) to stderr
/// and returns the exit code they call for (1 user, 2 internal).
int reportFailure(const std::vector<Diagnostic> &diags, const SourceManager *sources = nullptr);

/// Flag values split at commas (`--rules a.pat,b.pat`), empty parts dropped.
std::vector<std::string> splitList(const std::vector<std::string> &values);
/// The rules a command runs: the .pat files and directories in `values`
/// (imports included, each rule once), or the shipped library when there are
/// none; one graft::RuleSet, every phase compiled, as `graft compile` loads
/// them; rules tagged `lossy` run only with `allowLossy`. Prints warnings; on
/// failure prints the diagnostics (prefixed with `graft CMD: ` where they
/// have no location), sets `status`, returns nullopt.
std::optional<RuleSet> loadRuleSet(const std::vector<std::string> &values, const char *cmd,
                                   SourceManager &sources, int &status, bool allowLossy = false);
/// The directory a file written to `path` lands in ("." for a bare name):
/// PrintOptions::outputDir of a command's -o.
std::string outputDirOf(const std::string &path);
/// The --allow-lossy flag of the commands that run rules.
FlagSpec allowLossyFlag();

Command makePrintCommand();
Command makeVerifyCommand();
Command makeRunCommand();
Command makeOpsCommand();
Command makeSynthCommand();
Command makeCheckCommand();       ///< PatCommands.cpp
Command makeFmtCommand();         ///< PatCommands.cpp
Command makeFuseCommand();        ///< RewriteCommands.cpp
Command makeExplainCommand();     ///< RewriteCommands.cpp
Command makeVerifyRulesCommand(); ///< RewriteCommands.cpp
Command makeDevicesCommand();     ///< VulkanCommands.cpp
Command makeRunVkCommand();       ///< VulkanCommands.cpp
Command makePartitionCommand();   ///< VulkanCommands.cpp
Command makeCoverageCommand();    ///< CoverageCommand.cpp

Command makeCompileCommand(); ///< CompileCommand.cpp

} // namespace graft::cli

// `graft run PROGRAM.vkprog` (CompileCommand.cpp) and the input builder it
// shares with `graft run` (RunCommand.cpp).
#include "graft/interp/Interpreter.h"
namespace graft::cli {
/// Runs a .vkprog on the Vulkan device (`graft run` dispatches here by magic).
int runProgramFile(const Args &args);
/// The trimmed items of an --inputs list "[a, b, ...]" ("[]": none); `spec`
/// is the whole --inputs argument, `expected` the error when `text` is not a
/// bracketed list. An empty item (",,", a trailing ",") is an error.
Expected<std::vector<std::string>> inputListItems(const std::string &text, const std::string &spec,
                                                  const std::string &expected);
/// User inputs from --inputs NAME=VALUES, the rest random from --seed.
Expected<std::vector<RuntimeValue>> buildRunInputs(const Graph &graph, const Args &args,
                                                   uint64_t seed,
                                                   std::map<std::string, int64_t> &symbols);
} // namespace graft::cli
