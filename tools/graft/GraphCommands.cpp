//===- GraphCommands.cpp - graft print / verify / ops ---------------------===//
#include "Cli.h"

#include "graft/ir/Verifier.h"
#include "graft/ops/OpRegistry.h"
#include "graft/serialize/Load.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"

#include <filesystem>
#include <iostream>

namespace graft::cli {

Command makePrintCommand() {
  Command c;
  c.name = "print";
  c.usage = "graft print FILE [-o OUT] [--no-metadata] [--data-file BIN]";
  c.summary = "Parse a graph and print it in canonical text form.";
  c.details = "FILE is text IR or a torch.export .pt2 archive. Large constants without a\n"
              "textual initializer are written to --data-file; weights of a .pt2 are\n"
              "printed as file() references into the archive unless --data-file is given.\n"
              "With -o the output is written atomically (temp file, then rename); an OUT\n"
              "ending in .pt2 writes a torch.export archive instead of text.";
  c.flags = {{"o", true, "write to OUT instead of stdout", "OUT"},
             {"no-metadata", false, "omit node metadata (stack_trace, nn_module_stack)"},
             {"data-file", true, "sidecar file for large constant data", "BIN"}};
  c.run = [](const Args &args) {
    if (args.positional.size() != 1) {
      std::cerr << "graft print: error: expected exactly one FILE\n";
      return int(kUserError);
    }
    SourceManager sources;
    const std::string &path = args.positional[0];
    auto loaded = loadGraph(path, &sources);
    if (!loaded)
      return reportFailure(loaded.diags(), &sources);
    auto *graph = &loaded->graph;
    if (loaded->pt2 && !args.has("data-file")) {
      // Weights mapped from the archive print as file() references into it,
      // named relative to where the text goes.
      std::string ref = path;
      if (auto out = args.get("o")) {
        std::error_code ec;
        auto dir = std::filesystem::absolute(*out, ec).parent_path();
        auto rel = std::filesystem::relative(std::filesystem::absolute(path, ec), dir, ec);
        if (!ec && !rel.empty())
          ref = rel.string();
      }
      referenceArchiveWeights(**graph, *loaded->pt2, ref);
    }
    if (auto out = args.get("o");
        out && out->size() > 4 && out->compare(out->size() - 4, 4, ".pt2") == 0) {
      // A .pt2 output: write a torch.export archive instead of text.
      Pt2WriteOptions w;
      if (loaded->pt2)
        w.provenance = &*loaded->pt2;
      Status s = writePt2(**graph, *out, w);
      return s ? int(kOk) : reportFailure(s.diags());
    }
    PrintOptions opts;
    opts.printMetadata = !args.has("no-metadata");
    if (auto df = args.get("data-file"))
      opts.dataFile = *df;
    if (auto out = args.get("o"))
      opts.outputDir = outputDirOf(*out);
    auto text = printGraph(**graph, opts);
    if (!text)
      return reportFailure(text.diags());
    // The IR has no input for a forward() argument torch.export specialized
    // and no output for a constant forward() returns (docs/pt2.md,
    // "Signature"): list them as comments the text IR parser skips.
    if (loaded->pt2) {
      std::string head;
      for (const Pt2SpecializedInput &in : loaded->pt2->specializedInputs)
        head += "// specialized input " + str(in) +
                " (constant_input: the graph computes with this value; not a run-time input)\n";
      const auto &outs = loaded->pt2->constantOutputs;
      for (std::size_t k = 0; k < outs.size(); ++k)
        head += "// constant user output " + std::to_string(outs[k].userOutputsBefore + k) + " = " +
                str(outs[k]) + " (forward() returns this constant; not a graph output)\n";
      text->insert(0, head);
    }
    if (auto out = args.get("o")) {
      Status s = writeFileAtomic(*out, *text);
      if (!s)
        return reportFailure(s.diags());
    } else {
      std::cout << *text;
    }
    return int(kOk);
  };
  return c;
}

Command makeVerifyCommand() {
  Command c;
  c.name = "verify";
  c.usage = "graft verify FILE... [--no-inference]";
  c.summary = "Check graph invariants; print one diagnostic per violation.";
  c.details = "Checks use-def consistency, topological order, dangling references, arity and\n"
              "argument types per op schema, and that inferred result prototypes agree with\n"
              "the declared ones. FILE is text IR or a torch.export .pt2 archive. Exit\n"
              "status 1 if any graph is invalid.";
  c.flags = {{"no-inference", false, "skip re-running shape/dtype inference"}};
  c.run = [](const Args &args) {
    if (args.positional.empty()) {
      std::cerr << "graft verify: error: expected at least one FILE\n";
      return int(kUserError);
    }
    int status = kOk;
    for (const std::string &path : args.positional) {
      SourceManager sources;
      auto loaded = loadGraph(path, &sources);
      if (!loaded) {
        status = std::max(status, reportFailure(loaded.diags(), &sources));
        continue;
      }
      auto *graph = &loaded->graph;
      VerifyOptions opts;
      opts.checkInference = !args.has("no-inference");
      auto diags = verify(**graph, opts);
      if (!diags.empty()) {
        status = std::max(status, reportFailure(diags, &sources));
        std::cerr << path << ": " << diags.size() << " error" << (diags.size() == 1 ? "" : "s")
                  << "\n";
      } else {
        std::cout << path << ": ok (" << (*graph)->numNodes() << " nodes, "
                  << (*graph)->inputs().size() << " inputs, " << (*graph)->outputs().size()
                  << " outputs)\n";
      }
    }
    return status;
  };
  return c;
}

Command makeOpsCommand() {
  Command c;
  c.name = "ops";
  c.usage = "graft ops [--filter TEXT]";
  c.summary = "List the registered ops with their schemas.";
  c.flags = {{"filter", true, "only ops whose qualified name contains TEXT", "TEXT"}};
  c.run = [](const Args &args) {
    std::string filter = args.get("filter").value_or("");
    for (const OpSchema *op : OpRegistry::builtin().all()) {
      if (!filter.empty() && op->qualifiedName().find(filter) == std::string::npos)
        continue;
      std::cout << op->str() << "\n";
      if (!op->doc.empty())
        std::cout << "    " << op->doc << "\n";
    }
    return int(kOk);
  };
  return c;
}

} // namespace graft::cli
