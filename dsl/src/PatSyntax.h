//===- PatSyntax.h - Concrete syntax tree of a .pat file ---*- C++ -*-===//
//
// The parser (PatParser.cpp, PEGTL) produces this tree; the formatter prints
// it back canonically and the semantic pass (PatSema.cpp) lowers it to
// rewrite::Rule. It keeps every construct the user wrote (parentheses,
// keyword vs positional arguments, literal spellings) with its byte range and
// line/column, so diagnostics point at the exact token and formatting loses
// nothing. Comments are not in the tree: they are collected in a side list
// and re-attached by position when formatting.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace graft::dsl {

/// Node kinds. Comments give the syntax and the children.
enum class SK : uint8_t {
  File,   ///< (Import | Phase | Rule)*
  Import, ///< `import "path"`: LStr
  Phase,  ///< `phase NAME`: PhaseName (the file's rules run in that phase)
  PhaseName,
  Rule, ///< `rule NAME attrs { sections }`: RuleName, (Benefit|Tags|Backend)*, sections*
  RuleName,
  Benefit, ///< `benefit N`: LInt (possibly ENeg)
  Tags,    ///< `tags(a, b)`: TagName+
  TagName,
  Backend, ///< `backend NAME`: BackendName
  BackendName,

  Match,     ///< `match { stmts }`: MatchStmt*
  MatchStmt, ///< [Shared | RootMark] Results NodeAlt
  Shared,
  RootMark,   ///< `root`: one of the roots of a multi-root match
  Results,    ///< ResultName+ (text `%x` or `_`)
  ResultName, ///< `%x` or `_`
  NodeAlt,    ///< NodeCall ('|' NodeCall)* [Optional]
  NodeCall,   ///< OpName+ ( args ): OpName+, (KwArg | PatAlt | Rest)*
  OpName,     ///< `ns.name[.overload]`
  Optional,   ///< `?` [else ValueRef]: (PResult | PCapture)?
  KwArg,      ///< `key = pattern` / `key = expr`: ArgKey, PatAlt | Expr
  ArgKey,
  Rest, ///< `...`: the remaining arguments match anything

  // Argument patterns.
  PatAlt,   ///< p ('|' p)*  (folded away when there is one alternative)
  PWild,    ///< `_` [TypePat]
  PCapture, ///< `$x` [TypePat]
  PResult,  ///< `%x` [TypePat]
  PParam,   ///< `param` (PCapture | PWild)
  PList,    ///< `[ p, p ]`: PatAlt*
  PGroup,   ///< `( p )`: PatAlt
  TypePat,  ///< `: dtype[dims]`: (TDType | TDVar | TDAny), [TShape]; or TScalar
  TScalar,  ///< `scalar float` / `scalar int`: a number, not a tensor: TScalarKind
  TScalarKind,
  TDType, ///< dtype name
  TDVar,  ///< `$dt`
  TDAny,  ///< `_`
  TShape, ///< `[d, d]` or `[...]`: (DInt | DVar | DAny | TEllipsis)*
  TEllipsis,
  DInt,
  DVar,
  DAny,

  // Literals (patterns and expressions).
  LInt,   ///< digits, `-` allowed in patterns
  LFloat, ///< 1.5, 1e-3, inf, nan
  LStr,   ///< "..." (text includes the quotes)
  LIdent, ///< none, true, false, dtype names, enum names (low_first)

  // Expressions (where, rewrite, call arguments). Binary chains keep
  // operator nodes between operands: EAdd = operand (Op operand)*.
  EOr,
  EAnd,
  ENot,
  ECmp, ///< lhs CmpOp rhs | lhs IsNone | lhs InOp EList
  EAdd,
  EMul,
  ENeg,
  ECall, ///< (FnName | OpName) ( (KwArg | Expr)* )
  FnName,
  ECapture,
  EResult,
  EParen,
  EList,
  Op,     ///< operator text: + - * / % == != < <= > >=
  IsNone, ///< `is [not] none`: [NotMark]
  InOp,   ///< `[not] in`: [NotMark]
  NotMark,

  Where,       ///< `where { exprs }`
  Rewrite,     ///< `rewrite { stmts }`: RewriteStmt*
  RewriteStmt, ///< (CaptureDef | Results) = Expr
  CaptureDef,  ///< `$x`
  Example,     ///< `example { entries }`: ExEntry*
  ExEntry,     ///< ExName = (LInt | ENeg | LIdent | ExList | ExRange)
  ExName,
  ExList,    ///< [ items ]
  ExRange,   ///< lo .. hi [step s]
  ExUniform, ///< uniform(lo, hi): LFloat | LInt, twice
  Tolerance, ///< `tolerance(atol = x, rtol = y) [when guard]`: KwArg*, [TolGuard]
  TolGuard,  ///< `when expr`: the expression
};

/// One node of the concrete syntax tree.
struct Syn {
  SK kind = SK::File;
  std::string text;              ///< the node's source text (for leaves; composites too)
  uint32_t begin = 0, end = 0;   ///< byte offsets [begin, end)
  uint32_t line = 0, column = 0; ///< 1-based position of `begin`
  uint32_t endLine = 0;          ///< line of the last byte
  std::vector<Syn> kids;

  const Syn *find(SK k) const {
    for (const Syn &c : kids)
      if (c.kind == k)
        return &c;
    return nullptr;
  }
};

/// A `//` comment (including `///`), without its line break.
struct Comment {
  std::string text; ///< starts with "//"
  uint32_t begin = 0, end = 0;
  uint32_t line = 0, column = 0;
  bool ownLine = false; ///< nothing but whitespace before it on its line
};

struct ParsedFile {
  std::string name;
  std::string text;
  Syn root;
  std::vector<Comment> comments; ///< in source order
};

/// Parses the syntax only (no op lookups, no name resolution).
Expected<ParsedFile> parseSyntax(std::string_view text, const std::string &name);

/// The source range of a node for diagnostics (clipped to its first line).
SourceRange rangeOf(const ParsedFile &file, const Syn &node);

/// Canonical text of a syntax subtree on one line (expressions, patterns,
/// types): what the formatter prints, also used in diagnostics and to
/// compare alternatives structurally.
std::string printInline(const Syn &node);

/// Formats a parsed file (see formatPat).
std::string formatFile(const ParsedFile &file);

} // namespace graft::dsl
