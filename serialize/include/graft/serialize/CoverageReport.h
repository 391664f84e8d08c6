//===- CoverageReport.h - Coverage reports as json/md/junit/html ---*- C++ -*-===//
//
// Formats a rewrite::CoverageReport (graft/rewrite/Coverage.h) for its two
// audiences: CI systems (JUnit XML: one test case per rule, failing when the
// rule never fired; JSON) and rule authors (Markdown; HTML with a Graphviz
// picture of every fused match). `graft coverage` and `graft compile
// --report FILE` both go through writeCoverageReport. docs/coverage.md shows
// each format.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/rewrite/Coverage.h"
#include "graft/support/Expected.h"

#include <string>
#include <string_view>

namespace graft {

enum class CoverageFormat { Json, Markdown, JUnit, Html };

/// "json", "md", "junit", "html".
std::string_view name(CoverageFormat format);
/// Accepts the names above (and "markdown", "xml"); else a located-less error
/// listing the formats.
Expected<CoverageFormat> parseCoverageFormat(std::string_view text);
/// By extension: .json, .md, .xml (JUnit), .html / .htm.
Expected<CoverageFormat> coverageFormatFromPath(const std::string &path);

struct CoverageFormatOptions {
  /// HTML: render each match's DOT to inline SVG with Graphviz `dot` when it
  /// is found on PATH. False, or the environment variable GRAFT_NO_DOT set to
  /// a non-empty value, skips the lookup: the DOT source goes in a <pre>.
  bool renderDot = true;
};

std::string formatCoverage(const rewrite::CoverageReport &report, CoverageFormat format,
                           const CoverageFormatOptions &options = {});

/// Formats and writes `path` atomically (nothing half-written on failure).
Status writeCoverageReport(const rewrite::CoverageReport &report, CoverageFormat format,
                           const std::string &path, const CoverageFormatOptions &options = {});

} // namespace graft
