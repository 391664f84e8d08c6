//===- PatFormat.cpp - Canonical printing of .pat files -------------------===//
//
// `graft fmt` and formatPat. The layout is a pure function of the syntax
// tree plus three things taken from the source: comments, whether a blank
// line separated two items, and nothing else, which is what makes formatting
// idempotent. Rules:
//   * two-space indentation; one statement per line; sections in source
//     order; rule attributes in the order benefit, tags, backend;
//   * canonical spacing inside statements (`a = b`, `x, y`, `a | b`,
//     `$w : i8[$V, $D]`, `key = value`), dtype names in type patterns
//     spelled short (`int8` -> `i8`);
//   * in match and rewrite blocks the `=` of consecutive statements (no
//     blank line between them) is aligned;
//   * a statement longer than 100 columns breaks between statement-level
//     alternatives (`|` under `=`) and then between call arguments
//     (continuation aligned after the opening parenthesis);
//   * `example { ... }`, `tolerance(...)` and empty blocks stay on one line
//     when they fit and contain no comment;
//   * a comment at the end of an item's last line stays there (two spaces
//     before `//`); every other comment is printed on its own line before
//     the next item, at that item's indentation (a comment in the middle of
//     a multi-line statement therefore moves before the next statement);
//   * runs of blank lines shrink to one; none after `{` or before `}`;
//     exactly one blank line between top-level rules.
//
//===----------------------------------------------------------------------===//
#include "PatSyntax.h"

#include "graft/ir/DType.h"

#include <algorithm>

namespace graft::dsl {
namespace {

constexpr std::size_t kLineLimit = 100;

std::string join(const std::vector<std::string> &parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i)
      out += sep;
    out += parts[i];
  }
  return out;
}

/// `$name`, `%name` or `_` at the start of a pattern node's text.
std::string leadingName(const std::string &text) {
  std::size_t i = 1;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
    ++i;
  return text.substr(0, i);
}

std::string opText(const std::string &text) {
  std::string out;
  for (char c : text)
    if (c != ' ' && c != '\t')
      out += c;
  return out;
}

std::string printKids(const Syn &n, std::string_view sep) {
  std::vector<std::string> parts;
  for (const Syn &k : n.kids)
    parts.push_back(printInline(k));
  return join(parts, sep);
}

/// Operands and Op nodes alternate: `a + b - c`.
std::string printChain(const Syn &n) {
  std::string out;
  for (const Syn &k : n.kids) {
    if (k.kind == SK::Op)
      out += " " + opText(k.text) + " ";
    else
      out += printInline(k);
  }
  return out;
}

std::string typeAnnotation(const Syn &n) {
  const Syn *t = n.find(SK::TypePat);
  return t ? " : " + printInline(*t) : "";
}

std::string targetsText(const Syn &call) {
  std::vector<std::string> names;
  for (const Syn &k : call.kids)
    if (k.kind == SK::OpName)
      names.push_back(k.text);
  return names.size() == 1 ? names[0] : "(" + join(names, " | ") + ")";
}

/// The argument texts of a NodeCall or ECall.
std::vector<std::string> callArgs(const Syn &call) {
  std::vector<std::string> args;
  for (const Syn &k : call.kids)
    if (k.kind != SK::OpName && k.kind != SK::FnName)
      args.push_back(printInline(k));
  return args;
}

std::string callHead(const Syn &call) {
  if (call.kind == SK::NodeCall)
    return targetsText(call);
  return call.kids.front().text; // FnName or OpName
}

std::string optionalText(const Syn &opt) {
  if (opt.kids.empty())
    return "?";
  return "? else " + printInline(opt.kids.front());
}

} // namespace

std::string printInline(const Syn &n) {
  switch (n.kind) {
  case SK::PWild:
  case SK::PCapture:
  case SK::PResult:
    return leadingName(n.text) + typeAnnotation(n);
  case SK::PParam:
    return "param " + printInline(n.kids.front());
  case SK::TypePat: {
    std::string out;
    const Syn &d = n.kids.front();
    if (d.kind == SK::TScalar)
      return "scalar " + d.kids.front().text;
    if (d.kind == SK::TDType) {
      auto dt = parseDType(d.text);
      out = dt ? std::string(name(*dt)) : d.text;
    } else {
      out = d.text;
    }
    if (const Syn *shape = n.find(SK::TShape))
      out += printInline(*shape);
    return out;
  }
  case SK::TShape:
    return "[" + printKids(n, ", ") + "]";
  case SK::TEllipsis:
  case SK::Rest:
    return "...";
  case SK::PList:
  case SK::EList:
  case SK::ExList:
    return "[" + printKids(n, ", ") + "]";
  case SK::PGroup:
  case SK::EParen:
    return "(" + printInline(n.kids.front()) + ")";
  case SK::PatAlt:
    return printKids(n, " | ");
  case SK::KwArg:
    return n.kids[0].text + " = " + printInline(n.kids[1]);
  case SK::NodeCall:
    return callHead(n) + "(" + join(callArgs(n), ", ") + ")";
  case SK::NodeAlt: {
    std::vector<std::string> alts;
    std::string opt;
    for (const Syn &k : n.kids) {
      if (k.kind == SK::Optional)
        opt = optionalText(k);
      else
        alts.push_back(printInline(k));
    }
    return join(alts, " | ") + opt;
  }
  case SK::Optional:
    return optionalText(n);
  case SK::Results:
    return printKids(n, ", ");
  case SK::MatchStmt: {
    std::string out;
    for (const Syn &k : n.kids) {
      if (k.kind == SK::Shared)
        out += "shared ";
      else if (k.kind == SK::RootMark)
        out += "root ";
      else if (k.kind == SK::Results)
        out += printInline(k) + " = ";
      else
        out += printInline(k);
    }
    return out;
  }
  case SK::RewriteStmt:
    return printInline(n.kids[0]) + " = " + printInline(n.kids[1]);
  case SK::EOr:
    return printKids(n, " or ");
  case SK::EAnd:
    return printKids(n, " and ");
  case SK::ENot:
    return "not " + printInline(n.kids.front());
  case SK::ECmp: {
    std::string out = printInline(n.kids[0]);
    const Syn &tail = n.kids[1];
    bool negated = tail.find(SK::NotMark) != nullptr;
    if (tail.kind == SK::Op)
      return out + " " + opText(tail.text) + " " + printInline(n.kids[2]);
    if (tail.kind == SK::IsNone)
      return out + (negated ? " is not none" : " is none");
    return out + (negated ? " not in " : " in ") + printInline(n.kids[2]);
  }
  case SK::EAdd:
  case SK::EMul:
    return printChain(n);
  case SK::ENeg:
    return "-" + printInline(n.kids.front());
  case SK::ECall:
    return callHead(n) + "(" + join(callArgs(n), ", ") + ")";
  case SK::ExEntry:
    return n.kids[0].text + " = " + printInline(n.kids[1]);
  case SK::ExRange: {
    std::string out = n.kids[0].text + ".." + n.kids[1].text;
    if (n.kids.size() > 2)
      out += " step " + n.kids[2].text;
    return out;
  }
  case SK::ExUniform:
    return "uniform(" + printKids(n, ", ") + ")";
  case SK::Example: {
    if (n.kids.empty())
      return "example {}";
    return "example { " + printKids(n, ", ") + " }";
  }
  case SK::Tolerance: {
    std::vector<std::string> entries;
    std::string guard;
    for (const Syn &k : n.kids) {
      if (k.kind == SK::TolGuard)
        guard = " " + printInline(k);
      else
        entries.push_back(printInline(k));
    }
    return "tolerance(" + join(entries, ", ") + ")" + guard;
  }
  case SK::TolGuard:
    return "when " + printInline(n.kids.front());
  case SK::Op:
    return opText(n.text);
  default:
    return n.text;
  }
}

namespace {

class Formatter {
public:
  explicit Formatter(const ParsedFile &file) : file_(file) {}

  std::string run() {
    const Syn &root = file_.root;
    const Syn *prev = nullptr;
    for (const Syn &item : root.kids) {
      bool forceBlank = prev && (prev->kind == SK::Rule || item.kind == SK::Rule);
      if (item.kind == SK::Import)
        leaf(item, 0, "import " + item.kids.front().text, forceBlank);
      else if (item.kind == SK::Phase)
        leaf(item, 0, "phase " + item.kids.front().text, forceBlank);
      else
        rule(item, forceBlank);
      prev = &item;
    }
    flushComments(static_cast<uint32_t>(file_.text.size()), 0);
    return out_;
  }

private:
  //===-- Output and comments -------------------------------------------===//

  void line(int indent, const std::string &text) {
    out_.append(static_cast<std::size_t>(indent), ' ');
    out_ += text;
    out_ += '\n';
    emitted_ = true;
  }
  void blankLine() {
    if (emitted_ && !atBlockStart_ && !lastWasBlank())
      out_ += '\n';
  }
  bool lastWasBlank() const {
    return out_.size() >= 2 && out_[out_.size() - 1] == '\n' && out_[out_.size() - 2] == '\n';
  }

  /// Blank line before something that starts on source line `srcLine` if
  /// the source had one.
  void gapBefore(uint32_t srcLine) {
    if (lastLine_ && srcLine > lastLine_ + 1)
      blankLine();
  }

  /// Prints the comments that begin before `offset` on their own lines.
  void flushComments(uint32_t offset, int indent) {
    while (next_ < file_.comments.size() && file_.comments[next_].begin < offset) {
      const Comment &c = file_.comments[next_++];
      gapBefore(c.line);
      line(indent, c.text);
      atBlockStart_ = false;
      lastLine_ = std::max(lastLine_, c.line);
    }
  }

  /// The comment right after [.., end) on line `endLine`, if any (consumed).
  std::string trailing(uint32_t end, uint32_t endLine) {
    if (next_ >= file_.comments.size())
      return "";
    const Comment &c = file_.comments[next_];
    if (c.line != endLine || c.begin < end)
      return "";
    for (uint32_t i = end; i < c.begin; ++i) {
      char ch = file_.text[i];
      if (ch != ' ' && ch != '\t' && ch != ';')
        return "";
    }
    ++next_;
    return "  " + c.text;
  }

  /// Emits one item: leading comments, its lines, a trailing comment.
  void item(uint32_t begin, uint32_t beginLine, uint32_t end, uint32_t endLine, int indent,
            std::vector<std::string> lines, bool forceBlank = false, bool noGap = false) {
    if (forceBlank)
      blankLine();
    flushComments(begin, indent);
    if (!noGap)
      gapBefore(beginLine);
    std::string tail = trailing(end, endLine);
    for (std::size_t i = 0; i < lines.size(); ++i)
      line(i == 0 ? indent : 0, i + 1 == lines.size() ? lines[i] + tail : lines[i]);
    atBlockStart_ = false;
    lastLine_ = std::max(lastLine_, endLine);
  }

  void leaf(const Syn &n, int indent, const std::string &text, bool forceBlank = false) {
    item(n.begin, n.line, n.end, n.endLine, indent, {text}, forceBlank);
  }

  /// Line number of a byte offset.
  uint32_t lineOf(uint32_t offset) const {
    return static_cast<uint32_t>(
               std::count(file_.text.begin(), file_.text.begin() + offset, '\n')) +
           1;
  }

  /// Offset of the next token at or after `offset` (skipping blanks and comments).
  uint32_t skipTrivia(uint32_t offset) const {
    const std::string &t = file_.text;
    while (offset < t.size()) {
      char c = t[offset];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
        ++offset;
      } else if (c == '/' && offset + 1 < t.size() && t[offset + 1] == '/') {
        while (offset < t.size() && t[offset] != '\n')
          ++offset;
      } else {
        break;
      }
    }
    return offset;
  }

  bool hasCommentIn(uint32_t begin, uint32_t end) const {
    for (std::size_t i = next_; i < file_.comments.size(); ++i) {
      if (file_.comments[i].begin >= end)
        break;
      if (file_.comments[i].begin >= begin)
        return true;
    }
    return false;
  }

  //===-- Rules and sections --------------------------------------------===//

  void rule(const Syn &r, bool forceBlank) {
    std::string header = "rule " + r.kids.front().text;
    uint32_t headerEnd = r.kids.front().end;
    for (SK attr : {SK::Benefit, SK::Tags, SK::Backend}) {
      for (const Syn &k : r.kids) {
        if (k.kind != attr)
          continue;
        if (attr == SK::Benefit)
          header += " benefit " + k.kids.front().text;
        else if (attr == SK::Tags)
          header += " tags(" + printKids(k, ", ") + ")";
        else
          header += " backend " + k.kids.front().text;
        headerEnd = std::max(headerEnd, k.end);
      }
    }
    uint32_t brace = skipTrivia(headerEnd) + 1;
    item(r.begin, r.line, brace, lineOf(brace - 1), 0, {header + " {"}, forceBlank);
    atBlockStart_ = true;
    for (const Syn &k : r.kids) {
      switch (k.kind) {
      case SK::Match:
      case SK::Where:
      case SK::Rewrite:
        block(k, 2);
        break;
      case SK::Example:
        example(k, 2);
        break;
      case SK::Tolerance:
        leaf(k, 2, printInline(k));
        break;
      default:
        break;
      }
    }
    closeBrace(r, 0);
  }

  void closeBrace(const Syn &n, int indent) {
    uint32_t brace = n.end - 1;
    flushComments(brace, indent + 2);
    atBlockStart_ = false;
    item(brace, n.endLine, n.end, n.endLine, indent, {"}"}, false, true);
  }

  static const char *sectionKeyword(SK k) {
    switch (k) {
    case SK::Match:
      return "match";
    case SK::Where:
      return "where";
    case SK::Rewrite:
      return "rewrite";
    default:
      return "example";
    }
  }

  void block(const Syn &sec, int indent) {
    std::string kw = sectionKeyword(sec.kind);
    uint32_t open = skipTrivia(sec.begin + static_cast<uint32_t>(kw.size())) + 1;
    if (sec.kids.empty() && !hasCommentIn(sec.begin, sec.end)) {
      leaf(sec, indent, kw + " {}");
      return;
    }
    item(sec.begin, sec.line, open, lineOf(open - 1), indent, {kw + " {"});
    atBlockStart_ = true;
    // Alignment runs: consecutive statements without a blank line between.
    std::vector<std::size_t> width(sec.kids.size(), 0);
    if (sec.kind != SK::Where) {
      std::size_t runStart = 0;
      for (std::size_t i = 0; i <= sec.kids.size(); ++i) {
        bool breakRun =
            i == sec.kids.size() || (i > 0 && blankBetween(sec.kids[i - 1].end, sec.kids[i].begin));
        if (!breakRun)
          continue;
        std::size_t w = 0;
        for (std::size_t j = runStart; j < i; ++j)
          w = std::max(w, lhsText(sec.kids[j]).size());
        for (std::size_t j = runStart; j < i; ++j)
          width[j] = w;
        runStart = i;
      }
    }
    for (std::size_t i = 0; i < sec.kids.size(); ++i) {
      const Syn &s = sec.kids[i];
      item(s.begin, s.line, s.end, s.endLine, indent + 2, statementLines(s, indent + 2, width[i]));
    }
    closeBrace(sec, indent);
  }

  /// Whether the source has an empty line between two offsets.
  bool blankBetween(uint32_t a, uint32_t b) const {
    int newlines = 0;
    for (uint32_t i = a; i < b && i < file_.text.size(); ++i) {
      char c = file_.text[i];
      if (c == '\n') {
        if (++newlines >= 2)
          return true;
      } else if (c == '/' && i + 1 < b && file_.text[i + 1] == '/') {
        // A comment line between statements is not blank.
        while (i < b && file_.text[i] != '\n')
          ++i;
        --i;
        newlines = 0;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        newlines = 0;
      }
    }
    return false;
  }

  static std::string lhsText(const Syn &stmt) {
    std::string out;
    for (const Syn &k : stmt.kids) {
      if (k.kind == SK::Shared)
        out += "shared ";
      else if (k.kind == SK::RootMark)
        out += "root ";
      else if (k.kind == SK::Results || k.kind == SK::CaptureDef)
        return out + printInline(k);
    }
    return out;
  }

  /// A call `head(a, b, c)` starting at column `col`, broken between
  /// arguments when longer than the limit.
  static std::vector<std::string> wrapCall(const std::string &head,
                                           const std::vector<std::string> &args, std::size_t col,
                                           const std::string &suffix) {
    std::vector<std::string> lines;
    std::string cur = head + "(";
    std::size_t contCol = col + head.size() + 1;
    std::size_t curCol = col; // column where `cur` starts
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string piece = args[i] + (i + 1 == args.size() ? ")" + suffix : ",");
      bool first = cur.back() == '(';
      if (first || curCol + cur.size() + 1 + piece.size() <= kLineLimit) {
        cur += (first ? "" : " ") + piece;
      } else {
        lines.push_back(cur);
        cur = std::string(contCol, ' ') + piece;
        curCol = 0;
      }
    }
    if (args.empty())
      cur += ")" + suffix;
    lines.push_back(cur);
    return lines;
  }

  std::vector<std::string> statementLines(const Syn &s, int indent, std::size_t lhsWidth) {
    if (s.kind != SK::MatchStmt && s.kind != SK::RewriteStmt)
      return {printInline(s)}; // where predicates
    std::string lhs = lhsText(s);
    lhs.resize(std::max(lhsWidth, lhs.size()), ' ');
    std::string prefix = lhs + " = ";
    const Syn &rhs = s.kids.back();
    std::string flat = prefix + printInline(rhs);
    if (indent + flat.size() <= kLineLimit)
      return {flat};
    std::size_t col = indent + prefix.size();
    if (s.kind == SK::RewriteStmt) {
      if (rhs.kind != SK::ECall)
        return {flat};
      auto lines = wrapCall(callHead(rhs), callArgs(rhs), col, "");
      lines[0] = prefix + lines[0];
      return lines;
    }
    // NodeAlt: alternatives on their own lines under '=', each call wrapped.
    std::vector<const Syn *> calls;
    std::string opt;
    for (const Syn &k : rhs.kids) {
      if (k.kind == SK::Optional)
        opt = optionalText(k);
      else
        calls.push_back(&k);
    }
    std::vector<std::string> lines;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      // Later alternatives start with '|' under the '='; every line but the
      // first carries its absolute indentation.
      std::string lead = i == 0 ? prefix : std::string(indent + lhs.size() + 1, ' ') + "| ";
      std::size_t startCol = i == 0 ? col : lead.size();
      std::string suffix = i + 1 == calls.size() ? opt : "";
      auto callLines = wrapCall(callHead(*calls[i]), callArgs(*calls[i]), startCol, suffix);
      callLines[0] = lead + callLines[0];
      lines.insert(lines.end(), callLines.begin(), callLines.end());
    }
    return lines;
  }

  void example(const Syn &ex, int indent) {
    std::string flat = printInline(ex);
    bool comments = hasCommentIn(ex.begin, ex.end - 1);
    if (!comments && indent + flat.size() <= kLineLimit) {
      leaf(ex, indent, flat);
      return;
    }
    uint32_t open = skipTrivia(ex.begin + 7) + 1;
    item(ex.begin, ex.line, open, lineOf(open - 1), indent, {"example {"});
    atBlockStart_ = true;
    for (const Syn &e : ex.kids)
      leaf(e, indent + 2, printInline(e));
    closeBrace(ex, indent);
  }

  const ParsedFile &file_;
  std::string out_;
  std::size_t next_ = 0;  ///< first comment not yet printed
  uint32_t lastLine_ = 0; ///< last source line printed
  bool emitted_ = false;
  bool atBlockStart_ = true;
};

} // namespace

std::string formatFile(const ParsedFile &file) {
  return Formatter(file).run();
}

} // namespace graft::dsl
