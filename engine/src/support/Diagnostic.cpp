//===- Diagnostic.cpp - Diagnostic construction and rendering -------------===//
#include "graft/support/Diagnostic.h"

#include <sstream>

namespace graft {

Diagnostic Diagnostic::error(std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  return d;
}
Diagnostic Diagnostic::error(SourceRange range, std::string message) {
  Diagnostic d = error(std::move(message));
  d.range = std::move(range);
  return d;
}
Diagnostic Diagnostic::warning(std::string message) {
  Diagnostic d = error(std::move(message));
  d.severity = Severity::Warning;
  return d;
}
Diagnostic Diagnostic::warning(SourceRange range, std::string message) {
  Diagnostic d = error(std::move(range), std::move(message));
  d.severity = Severity::Warning;
  return d;
}
Diagnostic Diagnostic::internal(std::string message) {
  Diagnostic d = error("internal error: " + std::move(message));
  d.kind = DiagKind::Internal;
  return d;
}
Diagnostic &Diagnostic::note(std::string message) {
  notes.push_back({std::move(message), std::nullopt});
  return *this;
}
Diagnostic &Diagnostic::note(SourceRange range, std::string message) {
  notes.push_back({std::move(message), std::move(range)});
  return *this;
}

void SourceManager::add(std::string name, std::string contents) {
  sources_[std::move(name)] = std::make_shared<const std::string>(std::move(contents));
}

const std::string *SourceManager::contents(const std::string &name) const {
  auto it = sources_.find(name);
  return it == sources_.end() ? nullptr : it->second.get();
}

std::optional<std::string_view> SourceManager::line(const std::string &name, uint32_t line) const {
  const std::string *text = contents(name);
  if (!text || line == 0)
    return std::nullopt;
  std::size_t pos = 0;
  for (uint32_t l = 1; l < line; ++l) {
    pos = text->find('\n', pos);
    if (pos == std::string::npos)
      return std::nullopt;
    ++pos;
  }
  std::size_t end = text->find('\n', pos);
  if (end == std::string::npos)
    end = text->size();
  std::string_view result(text->data() + pos, end - pos);
  if (!result.empty() && result.back() == '\r')
    result.remove_suffix(1);
  return result;
}

const char *toString(Severity severity) {
  switch (severity) {
  case Severity::Note:
    return "note";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  return "error";
}

namespace {

void renderOne(std::ostringstream &os, Severity severity, const std::string &message,
               const std::optional<SourceRange> &range, const SourceManager *sources) {
  if (range && range->begin.valid()) {
    os << range->begin.file << ':' << range->begin.line << ':' << range->begin.column << ": ";
  } else if (range && !range->begin.file.empty()) {
    os << range->begin.file << ": ";
  }
  os << toString(severity) << ": " << message << '\n';
  if (!range || !range->begin.valid() || !sources)
    return;
  auto line = sources->line(range->begin.file, range->begin.line);
  if (!line)
    return;
  os << "  " << *line << '\n' << "  ";
  // Reproduce tabs so the caret lines up under the source text.
  uint32_t col = range->begin.column;
  for (uint32_t i = 1; i < col && i - 1 < line->size(); ++i)
    os << ((*line)[i - 1] == '\t' ? '\t' : ' ');
  os << '^';
  uint32_t len = range->length;
  for (uint32_t i = 1; i < len && col - 1 + i < line->size(); ++i)
    os << '~';
  os << '\n';
}

} // namespace

std::string render(const Diagnostic &diag, const SourceManager *sources) {
  std::ostringstream os;
  renderOne(os, diag.severity, diag.message, diag.range, sources);
  for (const DiagNote &n : diag.notes)
    renderOne(os, Severity::Note, n.message, n.range, sources);
  return os.str();
}

std::string render(const std::vector<Diagnostic> &diags, const SourceManager *sources) {
  std::string out;
  for (const Diagnostic &d : diags)
    out += render(d, sources);
  return out;
}

} // namespace graft
