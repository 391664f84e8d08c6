//===- Cli.cpp - Argument parsing and diagnostics output ------------------===//
#include "Cli.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

namespace graft::cli {

std::optional<std::string> Args::get(const std::string &flag) const {
  auto it = values.find(flag);
  if (it == values.end() || it->second.empty())
    return std::nullopt;
  return it->second.back();
}

const std::vector<std::string> &Args::all(const std::string &flag) const {
  static const std::vector<std::string> kEmpty;
  auto it = values.find(flag);
  return it == values.end() ? kEmpty : it->second;
}

std::optional<Args> parseArgs(const Command &cmd, const std::vector<std::string> &argv) {
  Args args;
  auto findFlag = [&](const std::string &name) -> const FlagSpec * {
    for (const FlagSpec &f : cmd.flags)
      if (f.name == name)
        return &f;
    return nullptr;
  };
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string &a = argv[i];
    if (a == "--") {
      for (++i; i < argv.size(); ++i)
        args.positional.push_back(argv[i]);
      break;
    }
    if (a.size() > 1 && a[0] == '-' &&
        !(a.size() > 1 && std::isdigit(static_cast<unsigned char>(a[1])))) {
      std::string name = a.substr(a[1] == '-' ? 2 : 1);
      std::optional<std::string> inlineValue;
      if (auto eq = name.find('='); eq != std::string::npos) {
        inlineValue = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      const FlagSpec *spec = findFlag(name);
      if (!spec) {
        std::cerr << "graft " << cmd.name << ": error: unknown option '" << a << "'\n"
                  << "usage: " << cmd.usage << "\n";
        return std::nullopt;
      }
      if (spec->takesValue) {
        if (!inlineValue) {
          if (i + 1 >= argv.size()) {
            std::cerr << "graft " << cmd.name << ": error: option '--" << name
                      << "' needs a value\n";
            return std::nullopt;
          }
          inlineValue = argv[++i];
        }
        args.values[name].push_back(*inlineValue);
      } else {
        if (inlineValue) {
          std::cerr << "graft " << cmd.name << ": error: option '--" << name
                    << "' takes no value\n";
          return std::nullopt;
        }
        args.values[name].push_back("");
      }
      continue;
    }
    args.positional.push_back(a);
  }
  return args;
}

std::string helpText(const Command &cmd) {
  std::ostringstream os;
  os << "usage: " << cmd.usage << "\n\n" << cmd.summary << "\n";
  if (!cmd.details.empty())
    os << "\n" << cmd.details << "\n";
  os << "\noptions:\n";
  for (const FlagSpec &f : cmd.flags) {
    std::string left = "  --" + f.name + (f.takesValue ? " " + f.metavar : "");
    os << left;
    if (left.size() < 26)
      os << std::string(26 - left.size(), ' ');
    else
      os << "\n" << std::string(26, ' ');
    os << f.help << "\n";
  }
  os << "  --help                  show this help\n";
  return os.str();
}

std::optional<int64_t> parseInt(const std::string &s) {
  if (s.empty())
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (!end || *end || errno == ERANGE)
    return std::nullopt;
  return v;
}

Expected<int> deviceFlag(const Args &args) {
  auto d = args.get("device");
  if (!d)
    return -1;
  auto v = parseInt(*d);
  if (!v || *v < 0 || *v > std::numeric_limits<int>::max())
    return Diagnostic::error("--device expects a non-negative integer, got '" + *d + "'");
  return static_cast<int>(*v);
}

Expected<std::optional<double>> atolFlag(const Args &args) {
  auto s = args.get("atol");
  if (!s)
    return std::optional<double>();
  char *end = nullptr;
  double v = std::strtod(s->c_str(), &end);
  // !(v >= 0) also rejects NaN.
  if (s->empty() || !end || *end || !(v >= 0))
    return Diagnostic::error("--atol expects a non-negative number, got '" + *s + "'");
  return std::optional<double>(v);
}

Expected<uint64_t> seedFlag(const Args &args) {
  auto s = args.get("seed");
  if (!s)
    return uint64_t(0);
  // strtoull would wrap "-1" around to 2^64 - 1: only digits are a seed.
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s->c_str(), &end, 10);
  if (s->empty() || !std::isdigit(static_cast<unsigned char>((*s)[0])) || !end || *end ||
      errno == ERANGE)
    return Diagnostic::error("--seed expects a non-negative integer, got '" + *s + "'");
  return uint64_t(v);
}

Expected<std::map<std::string, int64_t>> symFlags(const Args &args) {
  std::map<std::string, int64_t> symbols;
  for (const std::string &spec : args.all("sym")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return Diagnostic::error("--sym " + spec + ": expected NAME=INT");
    auto v = parseInt(spec.substr(eq + 1));
    if (!v)
      return Diagnostic::error("--sym " + spec + ": '" + spec.substr(eq + 1) +
                               "' is not an integer");
    symbols[spec.substr(0, eq)] = *v;
  }
  return symbols;
}

Expected<RunFlags> runFlags(const Args &args) {
  RunFlags f;
  GRAFT_TRY(f.seed, seedFlag(args));
  GRAFT_TRY(f.symbols, symFlags(args));
  GRAFT_TRY(f.deviceIndex, deviceFlag(args));
  GRAFT_TRY(f.atol, atolFlag(args));
  return f;
}

int reportFailure(const std::vector<Diagnostic> &diags, const SourceManager *sources) {
  bool internal = false;
  for (const Diagnostic &d : diags)
    internal |= d.kind == DiagKind::Internal;
  std::cerr << render(diags, sources);
  return internal ? kInternalError : kUserError;
}

std::string outputDirOf(const std::string &path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

} // namespace graft::cli
