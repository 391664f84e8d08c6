//===- Cli.cpp - Argument parsing and diagnostics output ------------------===//
#include "Cli.h"

#include <iostream>
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

int reportFailure(const std::vector<Diagnostic> &diags, const SourceManager *sources) {
  bool internal = false;
  for (const Diagnostic &d : diags)
    internal |= d.kind == DiagKind::Internal;
  std::cerr << render(diags, sources);
  return internal ? kInternalError : kUserError;
}

} // namespace graft::cli
