//===- Diagnostic.h - Located, severity-tagged messages ---*- C++ -*-===//
//
// Every user-facing error in graft is a Diagnostic: a severity, a message, an
// optional source range (file:line:col + length) and notes. Library paths
// return them through Expected<T>; tools render them clang-style with the
// source line and a caret via SourceManager.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graft {

enum class Severity { Note, Warning, Error };

/// Who is at fault: bad input from the user, or a bug in graft itself.
/// Tools map User errors to exit code 1 and Internal errors to exit code 2.
enum class DiagKind { User, Internal };

/// A 1-based line/column position in a named source (file path or buffer name).
struct SourceLoc {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  bool valid() const { return line != 0; }
};

/// A source position plus the number of characters it covers on that line.
struct SourceRange {
  SourceLoc begin;
  uint32_t length = 1;
};

struct DiagNote {
  std::string message;
  std::optional<SourceRange> range;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  DiagKind kind = DiagKind::User;
  std::string message;
  std::optional<SourceRange> range;
  std::vector<DiagNote> notes;

  static Diagnostic error(std::string message);
  static Diagnostic error(SourceRange range, std::string message);
  static Diagnostic warning(std::string message);
  static Diagnostic warning(SourceRange range, std::string message);
  /// A graft bug (an invariant broke), never the user's fault.
  static Diagnostic internal(std::string message);

  Diagnostic &note(std::string message);
  Diagnostic &note(SourceRange range, std::string message);
};

/// Keeps the text of every source that diagnostics may point into so they can
/// be rendered with the offending line and a caret.
class SourceManager {
public:
  /// Registers (or replaces) the contents of a named source.
  void add(std::string name, std::string contents);
  /// The text of line `line` (1-based) of `name`, without its newline.
  std::optional<std::string_view> line(const std::string &name, uint32_t line) const;
  const std::string *contents(const std::string &name) const;

private:
  std::map<std::string, std::shared_ptr<const std::string>> sources_;
};

/// Renders clang-style:
///   file:3:7: error: unknown op 'aten.lnear.default'
///     %y : f32[4] = aten.lnear.default(%x)
///                   ^~~~~~~~~~~~~~~~~~
///   file:1:1: note: ...
std::string render(const Diagnostic &diag, const SourceManager *sources = nullptr);
std::string render(const std::vector<Diagnostic> &diags, const SourceManager *sources = nullptr);

const char *toString(Severity severity);

} // namespace graft
