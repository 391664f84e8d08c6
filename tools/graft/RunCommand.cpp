//===- RunCommand.cpp - graft run: execute with the reference interpreter -===//
#include "Cli.h"

#include "graft/interp/Interpreter.h"
#include "graft/ir/Verifier.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/ProgramFile.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <iostream>

namespace graft::cli {
namespace {

Diagnostic inputError(const std::string &spec, const std::string &why) {
  return Diagnostic::error("--inputs " + spec + ": " + why);
}

/// Sizes of an input prototype given known symbol values; a single unknown
/// symbolic dim is solved from `numel` when provided.
Expected<std::vector<int64_t>> resolveSizes(const Graph &graph, const TensorProto &proto,
                                            std::map<std::string, int64_t> &symbols,
                                            std::optional<int64_t> numel, const std::string &spec) {
  std::vector<int64_t> sizes;
  int unknown = -1;
  int64_t known = 1;
  for (std::size_t i = 0; i < proto.shape.size(); ++i) {
    auto v = graph.symbols().evaluate(proto.shape[i], symbols);
    if (v) {
      sizes.push_back(*v);
      known *= *v;
      continue;
    }
    if (unknown >= 0 || !numel || !proto.shape[i].isSymbol())
      return inputError(spec, "cannot determine dim " + proto.shape[i].str() + " of " +
                                  proto.str() + "; pass --sym NAME=INT");
    unknown = static_cast<int>(i);
    sizes.push_back(0);
  }
  if (unknown >= 0) {
    if (known == 0 || *numel % known != 0)
      return inputError(spec, std::to_string(*numel) + " values do not fit " + proto.str());
    sizes[static_cast<std::size_t>(unknown)] = *numel / known;
    symbols[proto.shape[static_cast<std::size_t>(unknown)].terms()[0].first] = *numel / known;
  }
  return sizes;
}

Expected<std::vector<double>> parseValueList(const std::string &text, const std::string &spec) {
  GRAFT_TRY(std::vector<std::string> items,
            inputListItems(text, spec, "values must be written [v, v, ...] or @FILE"));
  std::vector<double> out;
  for (const std::string &v : items) {
    char *end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (!end || *end != '\0')
      return inputError(spec, "'" + v + "' is not a number");
    out.push_back(d);
  }
  return out;
}

Expected<std::vector<RuntimeValue>> buildInputs(const Graph &graph, const Args &args, uint64_t seed,
                                                std::map<std::string, int64_t> &symbols) {
  std::map<std::string, std::string> given;
  for (const std::string &spec : args.all("inputs")) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      return inputError(spec, "expected NAME=[values] or NAME=@FILE");
    std::string name = spec.substr(0, eq);
    if (!name.empty() && name[0] == '%')
      name = name.substr(1);
    given[name] = spec;
  }
  // Explicit inputs first: they may bind symbols the random ones need.
  std::vector<std::optional<RuntimeValue>> values;
  std::vector<const GraphInput *> userInputs;
  for (const GraphInput &in : graph.inputs())
    if (in.kind == InputKind::UserInput)
      userInputs.push_back(&in);
  values.resize(userInputs.size());
  for (std::size_t i = 0; i < userInputs.size(); ++i) {
    const Value *v = userInputs[i]->value;
    auto it = given.find(v->name());
    if (it == given.end())
      continue;
    const std::string spec = it->second; // a copy: the map entry is erased next
    std::string rhs = spec.substr(spec.find('=') + 1);
    given.erase(it);
    if (!v->isTensor()) {
      char *end = nullptr;
      long long iv = std::strtoll(rhs.c_str(), &end, 10);
      if (!end || *end)
        return inputError(spec, "symbolic input %" + v->name() + " needs an integer");
      values[i] = RuntimeValue(int64_t(iv));
      continue;
    }
    const TensorProto &proto = v->proto();
    if (rhs.size() > 1 && rhs[0] == '@') {
      GRAFT_TRY(std::string bytes, readFile(rhs.substr(1)));
      std::size_t es = elementSize(proto.dtype);
      if (bytes.size() % es != 0)
        return inputError(spec, "file size " + std::to_string(bytes.size()) +
                                    " is not a multiple of the element size " + std::to_string(es));
      GRAFT_TRY(auto sizes, resolveSizes(graph, proto, symbols, int64_t(bytes.size() / es), spec));
      Tensor t = Tensor::empty(proto.dtype, sizes);
      if (t.nbytes() != bytes.size())
        return inputError(spec, "file has " + std::to_string(bytes.size()) + " bytes, " +
                                    proto.str() + " needs " + std::to_string(t.nbytes()));
      std::memcpy(t.mutableRawData(), bytes.data(), bytes.size());
      values[i] = RuntimeValue(t);
    } else {
      GRAFT_TRY(auto list, parseValueList(rhs, spec));
      GRAFT_TRY(auto sizes, resolveSizes(graph, proto, symbols, int64_t(list.size()), spec));
      Tensor t = Tensor::empty(proto.dtype, sizes);
      if (t.numel() != static_cast<int64_t>(list.size()))
        return inputError(spec, std::to_string(list.size()) + " values given, " + proto.str() +
                                    " has " + std::to_string(t.numel()));
      for (std::size_t k = 0; k < list.size(); ++k)
        t.setDouble(static_cast<int64_t>(k), list[k]);
      values[i] = RuntimeValue(t);
    }
  }
  if (!given.empty())
    return inputError(given.begin()->second,
                      "graph has no user input named %" + given.begin()->first);
  GRAFT_TRY(auto random, makeRandomInputs(graph, seed, symbols));
  std::vector<RuntimeValue> out;
  for (std::size_t i = 0; i < values.size(); ++i)
    out.push_back(values[i] ? *values[i] : random.at(i));
  return out;
}

struct Summary {
  double min = 0, max = 0, mean = 0;
  int64_t nonFinite = 0;
};

Summary summarize(const Tensor &t) {
  Summary s;
  int64_t n = t.numel(), finite = 0;
  double sum = 0;
  bool first = true;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.getDouble(i);
    if (!std::isfinite(v)) {
      ++s.nonFinite;
      continue;
    }
    if (first || v < s.min)
      s.min = v;
    if (first || v > s.max)
      s.max = v;
    first = false;
    sum += v;
    ++finite;
  }
  s.mean = finite ? sum / double(finite) : 0;
  return s;
}

nlohmann::json toJson(const RuntimeValue &v, bool allValues) {
  nlohmann::json j;
  if (const Tensor *t = std::get_if<Tensor>(&v)) {
    j["dtype"] = std::string(name(t->dtype()));
    j["shape"] = t->sizes();
    Summary s = summarize(*t);
    j["min"] = s.min;
    j["max"] = s.max;
    j["mean"] = s.mean;
    j["non_finite"] = s.nonFinite;
    int64_t n = allValues ? t->numel() : std::min<int64_t>(t->numel(), 16);
    nlohmann::json vals = nlohmann::json::array();
    for (int64_t i = 0; i < n; ++i) {
      double d = t->getDouble(i);
      if (isFloatingPoint(t->dtype()))
        vals.push_back(std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(std::to_string(d)));
      else
        vals.push_back(t->getInt(i));
    }
    j["values"] = vals;
    j["truncated"] = n < t->numel();
  } else if (const int64_t *i = std::get_if<int64_t>(&v)) {
    j["int"] = *i;
  } else if (const double *d = std::get_if<double>(&v)) {
    j["float"] = *d;
  } else if (const bool *b = std::get_if<bool>(&v)) {
    j["bool"] = *b;
  }
  return j;
}

} // namespace

Expected<std::vector<std::string>> inputListItems(const std::string &text, const std::string &spec,
                                                  const std::string &expected) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    return Diagnostic::error("--inputs " + spec + ": " + expected);
  const std::string body = text.substr(1, text.size() - 2);
  std::vector<std::string> out;
  if (body.find_first_not_of(" \t") == std::string::npos)
    return out; // []
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = body.find(',', start);
    std::string item = body.substr(start, comma == std::string::npos ? comma : comma - start);
    std::size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos)
      return Diagnostic::error("--inputs " + spec + ": empty value in the list");
    out.push_back(item.substr(b, e - b + 1));
    if (comma == std::string::npos)
      return out;
    start = comma + 1;
  }
}

Expected<std::vector<RuntimeValue>> buildRunInputs(const Graph &graph, const Args &args,
                                                   uint64_t seed,
                                                   std::map<std::string, int64_t> &symbols) {
  return buildInputs(graph, args, seed, symbols);
}

Command makeRunCommand() {
  Command c;
  c.name = "run";
  c.usage =
      "graft run FILE [--seed N] [--inputs NAME=VALUES]... [--sym NAME=INT]... [--json] "
      "[--all-values]\n       graft run PROGRAM.vkprog [--inputs ...] [--seed N] [--device N] "
      "[--check [--reference MODEL] [--atol X]] [--allow-cpu-fallback] [--json]\n"
      "       graft run PROGRAM.vkprog --bench N [--warmup W] [--prefill M] [--sym NAME=INT]... "
      "[--json]\n"
      "       graft run PROGRAM.vkprog --generate N --inputs tokens=[ID, ...] [--warmup W] "
      "[--check [--reference MODEL] [--atol X]] [--json]";
  c.summary = "Execute a graph with the reference interpreter (a .vkprog on the Vulkan device).";
  c.details =
      "User inputs not given with --inputs are random, generated from their prototypes with\n"
      "--seed (floats uniform in [-1, 1), index inputs within the consumer's range).\n"
      "VALUES is a flat row-major list '[1, 2, 3]' or '@FILE' holding raw little-endian\n"
      "elements of the input's dtype. Symbolic dims take --sym values, or are solved from\n"
      "the number of values given, or default to the symbol's range minimum.\n"
      "A program file from `graft compile` runs on the Vulkan device instead; --check also\n"
      "runs the reference interpreter on the original (pre-fusion) graph: --reference MODEL,\n"
      "else the one embedded by `graft compile --embed-reference`, else the model path\n"
      "recorded in the program. The program runs as compiled: nodes planned for the CPU run\n"
      "there, and a node planned for the device that cannot run on this device is an error\n"
      "naming it, unless --allow-cpu-fallback runs it on the CPU (reported as cpu-fallback).\n"
      "Its pipelines come from the SPIR-V `graft compile` stored in it: no GLSL is compiled.\n"
      "--bench N runs a program N times after W warm-up runs (default 1) and reports its\n"
      "throughput (tokens per second) and every dispatch's device time from timestamp\n"
      "queries, by op family; a program with a symbolic token count (graft synth llama\n"
      "--dynamic-seq) is measured as prefill (M = --prefill, else its --sym value, else 32)\n"
      "and decode (M = 1).\n"
      "--generate N runs a KV-cache program (graft synth llama --kv-cache custom|plain):\n"
      "a prefill of the prompt given as --inputs tokens=[...] at position 0, then N greedy\n"
      "decode steps, each feeding the token chosen last at the next input_pos; it prints the\n"
      "N + 1 chosen tokens and tokens/s for prefill and decode. With --check the reference\n"
      "interpreter runs the original graph alongside with its own cache and the run fails\n"
      "at the first step whose token differs or whose logits differ by more than --atol.\n"
      "--warmup W first runs the prefill and one decode step W times, untimed.\n"
      "See docs/cli.md.";
  c.flags = {{"seed", true, "seed for random inputs (default 0)", "N"},
             {"inputs", true, "value for one user input (repeatable)", "NAME=VALUES"},
             {"sym", true, "value of a symbolic dim (repeatable)", "NAME=INT"},
             {"json", false, "print one JSON object instead of text"},
             {"all-values", false, "print every element, not the first 16"},
             {"no-verify", false, "skip verifying the graph before running"},
             // Program files (.vkprog from `graft compile`) run on the Vulkan device.
             {"device", true, "PROGRAM: Vulkan device index (see `graft devices`)", "N"},
             {"check", false,
              "PROGRAM: compare with the reference interpreter on the original "
              "graph"},
             {"reference", true, "PROGRAM: the original model for --check", "MODEL"},
             {"atol", true, "PROGRAM: with --check, fail when the max abs error exceeds X", "X"},
             {"allow-cpu-fallback", false,
              "PROGRAM: run a device node this device cannot run on the CPU instead of failing"},
             {"bench", true, "PROGRAM: time N runs per phase (device time by op family)", "N"},
             {"warmup", true,
              "PROGRAM: with --bench, untimed runs first (default 1); with --generate, "
              "untimed prefill + decode passes first (default 0)",
              "W"},
             {"prefill", true, "PROGRAM: with --bench, the prefill token count (default 32)", "M"},
             {"generate", true,
              "PROGRAM: prefill the prompt (--inputs tokens=[...]), then N greedy decode steps",
              "N"}};
  c.run = [](const Args &args) {
    if (args.positional.size() != 1) {
      std::cerr << "graft run: error: expected exactly one FILE\n";
      return int(kUserError);
    }
    if (isProgramFile(args.positional[0]))
      return runProgramFile(args);
    for (const char *flag : {"device", "check", "reference", "atol", "allow-cpu-fallback", "bench",
                             "warmup", "prefill", "generate"})
      if (args.has(flag)) {
        std::cerr << "graft run: error: --" << flag << " applies to program files (.vkprog); "
                  << (std::string(flag) == "generate"
                          ? "compile the model first (graft compile MODEL -o PROGRAM.vkprog)\n"
                          : "use `graft run-vk` for a graph\n");
        return int(kUserError);
      }
    auto flags = runFlags(args);
    if (!flags)
      return reportFailure(flags.diags());
    const uint64_t seed = flags->seed;
    std::map<std::string, int64_t> symbols = flags->symbols;
    SourceManager sources;
    auto loaded = loadGraph(args.positional[0], &sources);
    if (!loaded)
      return reportFailure(loaded.diags(), &sources);
    auto *graph = &loaded->graph;
    if (!args.has("no-verify")) {
      auto diags = verify(**graph);
      if (!diags.empty())
        return reportFailure(diags, &sources);
    }
    auto inputs = buildInputs(**graph, args, seed, symbols);
    if (!inputs)
      return reportFailure(inputs.diags());
    Interpreter interp;
    auto outputs = interp.run(**graph, *inputs);
    if (!outputs)
      return reportFailure(outputs.diags(), &sources);

    const Graph &g = **graph;
    bool all = args.has("all-values");
    if (args.has("json")) {
      nlohmann::json j;
      j["graph"] = g.name();
      j["seed"] = seed;
      j["nodes"] = g.numNodes();
      nlohmann::json ins = nlohmann::json::array();
      std::size_t k = 0;
      for (const GraphInput &in : g.inputs()) {
        if (in.kind != InputKind::UserInput)
          continue;
        nlohmann::json ij = toJson((*inputs)[k++], all);
        ij["name"] = in.value->name();
        ins.push_back(ij);
      }
      j["inputs"] = ins;
      nlohmann::json outs = nlohmann::json::array();
      for (std::size_t i = 0; i < outputs->size(); ++i) {
        nlohmann::json oj = toJson((*outputs)[i], all);
        const GraphOutput &o = g.outputs()[i];
        oj["name"] = o.value->name();
        oj["kind"] = std::string(name(o.kind));
        if (!o.target.empty())
          oj["target"] = o.target;
        outs.push_back(oj);
      }
      j["outputs"] = outs;
      std::cout << j.dump(2) << "\n";
      return int(kOk);
    }
    std::size_t constants = 0, users = 0;
    for (const GraphInput &in : g.inputs())
      (in.isConstant() ? constants : users) += 1;
    std::cout << "graph @" << g.name() << ": " << g.numNodes() << " nodes, " << constants
              << " constants, " << users << " user input" << (users == 1 ? "" : "s") << " (seed "
              << seed << ")\n";
    std::size_t k = 0;
    for (const GraphInput &in : g.inputs()) {
      if (in.kind != InputKind::UserInput)
        continue;
      std::cout << "input  %" << in.value->name() << " = "
                << str((*inputs)[k++], all ? INT64_MAX : 8) << "\n";
    }
    for (std::size_t i = 0; i < outputs->size(); ++i) {
      const GraphOutput &o = g.outputs()[i];
      const RuntimeValue &v = (*outputs)[i];
      std::cout << (o.kind == OutputKind::UserOutput ? "output" : std::string(name(o.kind))) << " %"
                << o.value->name();
      if (!o.target.empty())
        std::cout << " -> \"" << o.target << "\"";
      std::cout << " = " << str(v, all ? INT64_MAX : 16) << "\n";
      if (const Tensor *t = std::get_if<Tensor>(&v); t && t->numel() > 0) {
        Summary s = summarize(*t);
        std::cout << "       min " << s.min << "  max " << s.max << "  mean " << s.mean;
        if (s.nonFinite)
          std::cout << "  non-finite " << s.nonFinite;
        std::cout << "\n";
      }
    }
    return int(kOk);
  };
  return c;
}

} // namespace graft::cli
