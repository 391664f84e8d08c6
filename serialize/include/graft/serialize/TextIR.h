//===- TextIR.h - The .gir text form of graphs ---*- C++ -*-===//
//
// Parse and print graft's readable graph format (see docs/ir.md). Printing
// is canonical: print(parse(text)) == text for canonically written text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <memory>
#include <string>
#include <string_view>

namespace graft {

class OpRegistry;

struct ParseOptions {
  /// Registry used to bind schemas (null: OpRegistry::builtin()).
  const OpRegistry *registry = nullptr;
  /// Directory that relative file("...") constant references resolve against.
  std::string baseDir;
};

/// Parses one graph. Errors are located `name:line:col`. `sources`, when
/// given, receives the text so diagnostics can be rendered with a caret.
Expected<std::unique_ptr<Graph>> parseGraph(std::string_view text, const std::string &name,
                                            const ParseOptions &options = {},
                                            SourceManager *sources = nullptr);
Expected<std::unique_ptr<Graph>> parseGraphFile(const std::string &path,
                                                SourceManager *sources = nullptr);

struct PrintOptions {
  /// Constants with no textual initializer and more than this many elements
  /// are written to `dataFile` and referenced with file("...").
  int64_t maxInlineElements = 64;
  std::string dataFile;
  /// Print node metadata (stack_trace, nn_module_stack, ...).
  bool printMetadata = true;
  /// Print constants' initializers. Without them constants print as
  /// data-free inputs (a program file's structure), and printing reads
  /// nothing but the graph's structure: no constant is generated or loaded.
  bool printInitializers = true;
  /// How the printed text names `dataFile` in file("..."); it resolves
  /// against the directory of the .gir that will hold the text. Empty: the
  /// data file's name without its directory (the two live side by side).
  std::string dataFileRef;
  /// The directory the text will be written to. A relative file("...")
  /// constant read from another directory is renamed relative to it, so the
  /// printed graph still finds its data. Empty: paths are printed as read.
  std::string outputDir;
};

/// Prints canonically. Fails (naming the constant) when a constant must be
/// spilled but no `dataFile` is set, or when writing the data file fails.
Expected<std::string> printGraph(const Graph &graph, const PrintOptions &options = {});

/// The shortest decimal text that reads back as exactly `value`, always
/// spelled as a float: "1.0", "0.1", "1e-05", "inf", "-inf", "nan".
std::string formatFloat(double value);
/// The shortest decimal text that, read as a double and rounded to `dtype`
/// (a float dtype; others fall back to f64), gives `value` back.
std::string formatFloat(double value, DType dtype);

} // namespace graft
