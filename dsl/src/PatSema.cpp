//===- PatSema.cpp - Checking .pat rules and lowering them to Rules -------===//
//
// One RuleSema per `rule`: it walks the syntax tree in source order, checks
// every construct against the op registry (ops, overloads, arity, keywords,
// argument kinds), the builtin functions (graft/rewrite/Builtins.h) and the
// constant transforms (graft/rewrite/ConstantTransforms.h), resolves names
// (captures `$x`, results `%x`), checks connectivity, bindings and the
// rewrite, and lowers the rule to rewrite::Rule (Rule.h documents the
// conventions the lowering guarantees). Errors do not stop the walk: a rule
// with errors is simply not emitted, so `graft check` shows every problem at
// once. The diagnostics are catalogued in docs/dsl-errors.md.
//
//===----------------------------------------------------------------------===//
#include "PatSema.h"
#include "support/LiteralText.h"

#include "graft/ops/OpRegistry.h"
#include "graft/rewrite/Builtins.h"
#include "graft/rewrite/ConstantTransforms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace graft::dsl {

using rewrite::ArgPattern;
using rewrite::DimPattern;
using rewrite::Expr;
using rewrite::ExprPtr;
using rewrite::ExprType;
using rewrite::PatternNode;
using rewrite::RewriteStmt;
using rewrite::Rule;
using rewrite::TypePattern;

std::string closestName(std::string_view name, const std::vector<std::string> &candidates) {
  std::string best;
  std::size_t bestDist = std::numeric_limits<std::size_t>::max();
  for (const std::string &c : candidates) {
    // Levenshtein distance, two rows.
    std::vector<std::size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (std::size_t j = 0; j <= c.size(); ++j)
      prev[j] = j;
    for (std::size_t i = 1; i <= name.size(); ++i) {
      cur[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j) {
        std::size_t sub = prev[j - 1] + (name[i - 1] == c[j - 1] ? 0 : 1);
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      }
      std::swap(prev, cur);
    }
    std::size_t d = prev[c.size()];
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  std::size_t limit = std::max<std::size_t>(2, name.size() / 3);
  return bestDist <= limit && bestDist > 0 ? best : "";
}

namespace {

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names[i];
  return out;
}

/// `$name` / `%name` / `_` at the start of a node's text, without the sigil.
std::string bareName(const std::string &text) {
  std::size_t i = 1;
  while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_'))
    ++i;
  return text.substr(1, i - 1);
}

// Literal decoding shared with the text IR parser.
using grammar::parseDouble;
using grammar::parseInt64;
using grammar::unescape;

/// The expression type a schema parameter of type `t` binds a capture to.
ExprType typeOfSchema(const SchemaType &t) {
  using B = SchemaType::Base;
  if (t.isList)
    return t.base == B::Int || t.base == B::SymInt ? ExprType::IntList : ExprType::List;
  switch (t.base) {
  case B::Tensor:
    return ExprType::Tensor;
  case B::Int:
  case B::SymInt:
    return ExprType::Int;
  case B::Float:
    return ExprType::Float;
  case B::Bool:
    return ExprType::Bool;
  case B::Str:
    return ExprType::String;
  case B::ScalarType:
    return ExprType::DType;
  case B::Scalar:
    return ExprType::Number;
  default:
    return ExprType::Any;
  }
}

bool isNumeric(ExprType t) {
  return t == ExprType::Int || t == ExprType::Float || t == ExprType::Number || t == ExprType::Any;
}

/// Whether a value of static type `e` may be passed where `p` is expected.
bool fits(ExprType e, ExprType p) {
  if (e == ExprType::Any || p == ExprType::Any)
    return true;
  switch (p) {
  case ExprType::Number:
  case ExprType::Float:
    return e == ExprType::Int || e == ExprType::Float || e == ExprType::Number;
  case ExprType::Int:
    return e == ExprType::Int || e == ExprType::Number;
  case ExprType::List:
    return e == ExprType::List || e == ExprType::IntList;
  case ExprType::IntList:
    return e == ExprType::IntList || e == ExprType::List;
  default:
    return e == p;
  }
}

/// Two bindings of one capture agree; the more specific type, or nullopt.
std::optional<ExprType> unify(ExprType a, ExprType b) {
  if (a == b || b == ExprType::Any)
    return a;
  if (a == ExprType::Any)
    return b;
  auto numeric = [](ExprType t) {
    return t == ExprType::Int || t == ExprType::Float || t == ExprType::Number;
  };
  if (numeric(a) && numeric(b))
    return a == ExprType::Number ? b : a;
  if ((a == ExprType::List && b == ExprType::IntList) ||
      (a == ExprType::IntList && b == ExprType::List))
    return ExprType::IntList;
  return std::nullopt;
}

std::string article(ExprType t) {
  switch (t) {
  case ExprType::Int:
    return "an int";
  case ExprType::IntList:
    return "an int list";
  case ExprType::Any:
    return "a value of any type";
  default:
    return "a " + std::string(name(t));
  }
}

bool tensorLike(const SchemaType &t) {
  return (t.base == SchemaType::Base::Tensor && !t.isList) || t.base == SchemaType::Base::Any;
}

bool acceptsNone(const SchemaType &t) {
  return t.optional || t.base == SchemaType::Base::Any;
}

/// Splits the arguments of a NodeCall / ECall / Tolerance by syntax.
struct CallArgs {
  std::vector<const Syn *> positional;
  std::vector<const Syn *> keywords; ///< KwArg nodes
  const Syn *rest = nullptr;
};

class RuleSema {
public:
  RuleSema(const ParsedFile &file, const SemaContext &ctx, std::vector<Diagnostic> &diags)
      : file_(file), ctx_(ctx), diags_(diags) {}

  /// Appends the lowered rule (one per variant) to `out` unless it has errors.
  void run(const Syn &ruleSyn, std::vector<Rule> &out);

private:
  //===-- Diagnostics ----------------------------------------------------===//

  SourceRange loc(const Syn &n) const { return rangeOf(file_, n); }
  Diagnostic &error(const Syn &at, std::string message) {
    failed_ = true;
    diags_.push_back(Diagnostic::error(loc(at), std::move(message)));
    return diags_.back();
  }
  Diagnostic &errorAt(const SourceRange &at, std::string message) {
    failed_ = true;
    diags_.push_back(Diagnostic::error(at, std::move(message)));
    return diags_.back();
  }
  Diagnostic &warning(const SourceRange &at, std::string message) {
    diags_.push_back(Diagnostic::warning(at, std::move(message)));
    return diags_.back();
  }

  //===-- State of one rule ----------------------------------------------===//

  struct CaptureInfo {
    ExprType type = ExprType::Any;
    SourceRange first;
    bool definite = false;
    std::optional<SourceRange> conditional; ///< a binding inside an optional/alternative
    int occurrences = 0;                    ///< bindings in the match
    int uses = 0;                           ///< uses in where / rewrite / example
    bool isDim = false;
  };
  struct ResultInfo {
    std::size_t stmt = 0;
    std::size_t index = 0;
    SourceRange loc;
    ExprType type = ExprType::Tensor;
    int patternUses = 0;
    int uses = 0;
    const Syn *replacedAt = nullptr;
  };
  struct RewriteDef {
    SourceRange loc;
    ExprType type = ExprType::Any;
    int uses = 0;
  };
  struct BindCtx {
    bool conditional = false;
    std::set<std::string> *collect = nullptr;
  };
  /// One match statement: its alternatives lowered to pattern nodes.
  struct MatchStmtInfo {
    const Syn *syn = nullptr;
    std::vector<PatternNode> variants;
    std::vector<std::string> results;
    std::set<std::size_t> producers; ///< statements whose results it uses
    bool isRoot = false;             ///< marked `root` (a multi-root match)
  };

  //===-- Match ----------------------------------------------------------===//

  void matchSection(const Syn &sec);
  void matchStmt(const Syn &stmt, std::size_t index);
  std::vector<const OpSchema *> resolvePatternTarget(const Syn &opName, bool &insensitive);
  CallArgs splitArgs(const Syn &call, bool allowRest);
  std::vector<Diagnostic> checkPatternCall(const CallArgs &args, const OpSchema &schema,
                                           const Syn &call);
  void checkPatArg(const Syn &p, const SchemaType &t, const std::string &param,
                   const OpSchema &schema, std::size_t position, std::vector<Diagnostic> &errs);
  std::optional<PatternNode> lowerNodeCall(const Syn &call, std::size_t stmtIndex, BindCtx bctx);
  ArgPattern lowerPat(const Syn &p, const SchemaType *t, std::size_t stmtIndex, BindCtx bctx);
  std::optional<TypePattern> lowerType(const Syn &typePat, BindCtx bctx);
  void bindCapture(const std::string &name, ExprType type, const SourceRange &at, BindCtx bctx,
                   bool isDim = false);
  std::optional<Argument> literalFor(const Syn &p, const SchemaType *t);
  static std::string argKey(const ArgPattern &a);
  static std::string nodeArgsKey(const PatternNode &n);
  void checkConnected();

  //===-- Expressions ----------------------------------------------------===//

  enum class ExprCtx { Where, Rewrite };
  struct Typed {
    ExprPtr e;
    ExprType type = ExprType::Any;
    bool symbol = false; ///< a bare name (low_first, strided): only valid as an enum value
    bool ok = true;
  };
  Typed lowerExpr(const Syn &n, ExprCtx c, bool allowSymbol = false);
  Typed bad();
  Typed binary(const Syn &at, const std::string &op, Typed a, Typed b, ExprType result);
  Typed callExpr(const Syn &n, ExprCtx c);
  Typed useCapture(const Syn &n, ExprCtx c);
  Typed useResult(const Syn &n, ExprCtx c);
  ExprPtr literalExpr(const Syn &at, Argument value);
  void requireBool(const Syn &at, const Typed &t, const char *what);

  //===-- Rewrite ---------------------------------------------------------===//

  void rewriteSection(const Syn &sec);
  void rewriteStmt(const Syn &stmt);
  void transformStmt(const Syn &stmt, const Syn &call, const rewrite::ConstantTransform &t,
                     const std::string &result);
  void newNodeStmt(const Syn &stmt, const Syn &call);
  void forwardStmt(const Syn &stmt, const Syn &value);
  std::optional<Argument> convertSymbol(const Syn &at, const std::string &text,
                                        const SchemaType &t);

  //===-- Other sections --------------------------------------------------===//

  void exampleSection(const Syn &sec);
  void exampleRange(const std::string &nm, const CaptureInfo &ci, const Syn &v);
  void toleranceClauses(const Syn &r);
  std::optional<std::pair<double, double>> toleranceBounds(const Syn &clause);
  void header(const Syn &r);
  std::string docFor(const Syn &r) const;
  void unusedWarnings();

  const ParsedFile &file_;
  const SemaContext &ctx_;
  std::vector<Diagnostic> &diags_;
  bool failed_ = false;

  Rule rule_;
  std::map<std::string, CaptureInfo> captures_;
  std::map<std::string, ResultInfo> results_;
  std::vector<MatchStmtInfo> stmts_;
  std::map<std::string, RewriteDef> rewriteDefs_;  ///< `$x = ...` in rewrite
  std::map<std::string, RewriteDef> newResults_;   ///< new `%x` in rewrite (not replacements)
  std::map<std::string, const Syn *> pendingDefs_; ///< rewrite `$x` defined later (for hints)
  const Syn *rewriteSyn_ = nullptr;
  const Syn *matchSyn_ = nullptr;
};

//===----------------------------------------------------------------------===//
// Rule, header, sections
//===----------------------------------------------------------------------===//

std::string RuleSema::docFor(const Syn &r) const {
  // The `///` lines directly above `rule`, nothing but whitespace between.
  std::vector<std::string> lines;
  uint32_t expectLine = r.line;
  for (std::size_t i = file_.comments.size(); i-- > 0;) {
    const Comment &c = file_.comments[i];
    if (c.begin >= r.begin)
      continue;
    if (c.line + 1 != expectLine || !c.ownLine || c.text.rfind("///", 0) != 0)
      break;
    std::string body = c.text.substr(3);
    if (!body.empty() && body[0] == ' ')
      body.erase(0, 1);
    lines.insert(lines.begin(), body);
    expectLine = c.line;
  }
  std::string doc;
  for (std::size_t i = 0; i < lines.size(); ++i)
    doc += (i ? "\n" : "") + lines[i];
  return doc;
}

void RuleSema::header(const Syn &r) {
  const Syn *benefit = nullptr, *backend = nullptr;
  std::map<std::string, SourceRange> tags;
  for (const Syn &k : r.kids) {
    if (k.kind == SK::Benefit) {
      if (benefit) {
        error(k, "duplicate 'benefit'").note(loc(*benefit), "previous 'benefit' here");
        continue;
      }
      benefit = &k;
      auto v = parseInt64(k.kids.front().text);
      if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max())
        error(k.kids.front(), "benefit " + k.kids.front().text + " is out of range");
      else
        rule_.benefit = static_cast<int>(*v);
    } else if (k.kind == SK::Backend) {
      if (backend) {
        error(k, "duplicate 'backend'").note(loc(*backend), "previous 'backend' here");
        continue;
      }
      backend = &k;
      rule_.backend = k.kids.front().text;
    } else if (k.kind == SK::Tags) {
      for (const Syn &t : k.kids) {
        if (auto it = tags.find(t.text); it != tags.end()) {
          error(t, "duplicate tag " + quoted(t.text)).note(it->second, "previous use here");
          continue;
        }
        tags.emplace(t.text, loc(t));
        rule_.tags.push_back(t.text);
      }
    }
  }
  if (!benefit)
    rule_.benefit = -1; // replaced by the node count once the match is known
}

void RuleSema::run(const Syn &r, std::vector<Rule> &out) {
  const Syn &nameSyn = r.kids.front();
  rule_.name = nameSyn.text;
  rule_.loc = loc(nameSyn);
  rule_.doc = docFor(r);
  header(r);

  std::map<SK, const Syn *> sections;
  for (const Syn &k : r.kids) {
    if (k.kind != SK::Match && k.kind != SK::Where && k.kind != SK::Rewrite &&
        k.kind != SK::Example)
      continue;
    if (auto it = sections.find(k.kind); it != sections.end()) {
      std::string what = k.text.substr(0, k.text.find_first_of(" \t\n{("));
      error(k, "duplicate '" + what + "' section in rule " + quoted(rule_.name))
          .note(loc(*it->second), "previous '" + what + "' section here");
      continue;
    }
    sections[k.kind] = &k;
  }
  const Syn *match = sections.count(SK::Match) ? sections[SK::Match] : nullptr;
  const Syn *rw = sections.count(SK::Rewrite) ? sections[SK::Rewrite] : nullptr;
  if (!match) {
    error(nameSyn, "rule " + quoted(rule_.name) + " has no 'match' section");
    return;
  }
  matchSection(*match);
  if (stmts_.empty())
    return;
  // Where predicates see the match only; the example and tolerance too.
  if (sections.count(SK::Where))
    for (const Syn &p : sections[SK::Where]->kids) {
      Typed t = lowerExpr(p, ExprCtx::Where);
      requireBool(p, t, "a where predicate");
      if (t.ok)
        rule_.where.push_back(t.e);
    }
  if (!rw)
    error(nameSyn, "rule " + quoted(rule_.name) + " has no 'rewrite' section");
  else
    rewriteSection(*rw);
  if (sections.count(SK::Example))
    exampleSection(*sections[SK::Example]);
  toleranceClauses(r);
  unusedWarnings();
  if (failed_)
    return;

  if (rule_.benefit < 0)
    rule_.benefit = static_cast<int>(stmts_.size());
  // Expand statement-level alternatives: one Rule per combination.
  std::size_t combos = 1;
  for (const MatchStmtInfo &s : stmts_) {
    combos *= s.variants.size();
    if (combos > 64) {
      error(*match, "the alternatives of this match expand to more than 64 combinations; split "
                    "the rule");
      return;
    }
  }
  std::vector<std::size_t> pick(stmts_.size(), 0);
  for (std::size_t n = 0; n < combos; ++n) {
    Rule copy = rule_;
    copy.variant = combos > 1 ? static_cast<unsigned>(n + 1) : 0;
    for (std::size_t i = 0; i < stmts_.size(); ++i)
      copy.nodes.push_back(stmts_[i].variants[pick[i]]);
    copy.root = copy.nodes.size() - 1;
    for (std::size_t i = 0; i + 1 < stmts_.size(); ++i)
      if (stmts_[i].isRoot)
        copy.extraRoots.push_back(i);
    // Later statements vary fastest: variants follow source order.
    for (std::size_t i = stmts_.size(); i-- > 0;) {
      if (++pick[i] < stmts_[i].variants.size())
        break;
      pick[i] = 0;
    }
    std::vector<Diagnostic> protoDiags;
    if (!copy.extraRoots.empty()) {
      auto plan = rewrite::planRootSearch(copy, [&](const std::string &nm) {
        auto it = captures_.find(nm);
        return it != captures_.end() && it->second.type == ExprType::Tensor;
      });
      if (!plan.ok())
        for (Diagnostic &d : plan.takeFailure().diags)
          protoDiags.push_back(std::move(d));
    }
    if (protoDiags.empty())
      protoDiags = checkRewritePrototypes(copy, ctx_);
    bool bad = false;
    for (Diagnostic &d : protoDiags) {
      bad |= d.severity == Severity::Error;
      // Variants share their rewrite: report each problem once.
      bool dup = false;
      for (const Diagnostic &e : diags_)
        dup |= e.message == d.message && e.range && d.range &&
               e.range->begin.line == d.range->begin.line &&
               e.range->begin.column == d.range->begin.column;
      if (!dup)
        diags_.push_back(std::move(d));
    }
    if (!bad)
      out.push_back(std::move(copy));
  }
}

//===----------------------------------------------------------------------===//
// Match
//===----------------------------------------------------------------------===//

void RuleSema::matchSection(const Syn &sec) {
  matchSyn_ = &sec;
  if (sec.kids.empty()) {
    error(sec, "the match of rule " + quoted(rule_.name) + " is empty");
    return;
  }
  for (std::size_t i = 0; i < sec.kids.size(); ++i)
    matchStmt(sec.kids[i], i);
  // A multi-root match marks each of its roots; the last statement is then
  // one of them (the one the engine finds first).
  bool multi =
      std::any_of(stmts_.begin(), stmts_.end(), [](const MatchStmtInfo &s) { return s.isRoot; });
  const Syn &lastRes = *stmts_.back().syn->find(SK::Results);
  if (multi && !stmts_.back().isRoot) {
    const Syn &firstRoot = *std::find_if(stmts_.begin(), stmts_.end(), [](const MatchStmtInfo &s) {
                              return s.isRoot;
                            })->syn->find(SK::RootMark);
    error(lastRes, "the last statement of a match with 'root' statements must be a root too")
        .note(loc(firstRoot), "this match marks its roots with 'root'; mark " +
                                  printInline(lastRes) +
                                  " 'root' as well, or move a root statement to the end");
  } else if (multi && std::count_if(stmts_.begin(), stmts_.end(),
                                    [](const MatchStmtInfo &s) { return s.isRoot; }) == 1) {
    warning(loc(*stmts_.back().syn->find(SK::RootMark)),
            "'root' on the only root of the match has no effect (the last statement is the root)");
  }
  // A root's results leave the match: no other statement may consume them.
  for (std::size_t j = 0; j < stmts_.size(); ++j)
    for (std::size_t p : stmts_[j].producers)
      if (p != j && stmts_[p].isRoot) {
        const Syn &rootRes = *stmts_[p].syn->find(SK::Results);
        error(*stmts_[j].syn->find(SK::Results),
              "pattern node " + printInline(*stmts_[j].syn->find(SK::Results)) + " uses the root " +
                  printInline(rootRes))
            .note(loc(rootRes), "a root's results are replaced by the rewrite, so nothing in the "
                                "match may consume them; drop 'root' here or use another result");
      }
  checkConnected();
  // Roots are replaced: they may be neither optional nor shared.
  for (std::size_t i = 0; i < stmts_.size(); ++i) {
    if (i + 1 != stmts_.size() && !stmts_[i].isRoot)
      continue;
    const Syn &rootSyn = *stmts_[i].syn;
    if (rootSyn.find(SK::Shared))
      warning(loc(*rootSyn.find(SK::Shared)),
              "'shared' has no effect on the root of the match (its results are replaced)");
    if (const Syn *alt = rootSyn.find(SK::NodeAlt); alt && alt->find(SK::Optional))
      error(*alt->find(SK::Optional),
            multi ? "a root of a match cannot be optional"
                  : "the root of a match (its last statement) cannot be optional");
  }
}

std::vector<const OpSchema *> RuleSema::resolvePatternTarget(const Syn &opName, bool &insensitive) {
  const std::string &t = opName.text;
  int dots = static_cast<int>(std::count(t.begin(), t.end(), '.'));
  insensitive = dots == 1;
  if (dots > 2) {
    error(opName, "op " + quoted(t) + " has too many parts (write ns.name or ns.name.overload)");
    return {};
  }
  std::vector<const OpSchema *> schemas;
  if (dots == 2) {
    if (const OpSchema *s = ctx_.ops.lookup(t))
      schemas.push_back(s);
  } else {
    schemas = ctx_.ops.overloads(t);
  }
  if (!schemas.empty())
    return schemas;
  // Unknown: an overload of a known op, or an unknown op (suggest the closest).
  std::string base = dots == 2 ? t.substr(0, t.rfind('.')) : t;
  auto overloads = ctx_.ops.overloads(base);
  if (dots == 2 && !overloads.empty()) {
    std::vector<std::string> names, full;
    for (const OpSchema *s : overloads) {
      names.push_back(s->overload);
      full.push_back(s->qualifiedName());
    }
    Diagnostic &d = error(opName, "unknown overload " + quoted(t) + "; " + base +
                                      " has overloads " + joinNames(names));
    if (std::string c = closestName(t, full); !c.empty())
      d.note("did you mean " + quoted(c) + "?");
    return {};
  }
  std::vector<std::string> candidates;
  std::set<std::string> seen;
  for (const OpSchema *s : ctx_.ops.all()) {
    std::string n = dots == 2 ? s->qualifiedName() : s->ns + "." + s->name;
    if (seen.insert(n).second)
      candidates.push_back(n);
  }
  Diagnostic &d = error(opName, "unknown op " + quoted(t));
  if (std::string c = closestName(t, candidates); !c.empty())
    d.note("did you mean " + quoted(c) + "?");
  else
    d.note("'graft ops' lists the ops graft knows (declared in engine/ops/*.yaml)");
  return {};
}

CallArgs RuleSema::splitArgs(const Syn &call, bool allowRest) {
  CallArgs out;
  for (const Syn &k : call.kids) {
    if (k.kind == SK::OpName || k.kind == SK::FnName)
      continue;
    if (out.rest) {
      error(k, "'...' must be the last argument");
      continue;
    }
    if (k.kind == SK::Rest) {
      if (!allowRest)
        error(k, "'...' is only allowed in match patterns");
      else
        out.rest = &k;
    } else if (k.kind == SK::KwArg) {
      out.keywords.push_back(&k);
    } else if (!out.keywords.empty()) {
      error(k, "positional argument after a keyword argument")
          .note(loc(*out.keywords.back()), "keyword argument here");
    } else {
      out.positional.push_back(&k);
    }
  }
  return out;
}

std::vector<Diagnostic> RuleSema::checkPatternCall(const CallArgs &args, const OpSchema &s,
                                                   const Syn &call) {
  std::vector<Diagnostic> errs;
  std::string op = s.qualifiedName();
  std::size_t npos = s.numPositional();
  std::vector<const Syn *> given(s.args.size(), nullptr);
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    if (i >= npos) {
      errs.push_back(Diagnostic::error(
          loc(*args.positional[i]), op + " takes " + std::to_string(npos) + " positional argument" +
                                        (npos == 1 ? "" : "s") + ", the pattern gives " +
                                        std::to_string(args.positional.size())));
      break;
    }
    given[i] = args.positional[i];
  }
  for (const Syn *kw : args.keywords) {
    const std::string &key = kw->kids[0].text;
    int idx = s.argIndex(key);
    if (idx < 0) {
      std::vector<std::string> names;
      for (const SchemaArg &a : s.args)
        names.push_back(a.name);
      Diagnostic d = Diagnostic::error(loc(kw->kids[0]),
                                       "unknown keyword argument " + quoted(key) + " for " + op);
      if (std::string c = closestName(key, names); !c.empty())
        d.note("did you mean " + quoted(c) + "?");
      d.note(op + " takes: " + joinNames(names));
      errs.push_back(std::move(d));
      continue;
    }
    if (given[static_cast<std::size_t>(idx)]) {
      errs.push_back(Diagnostic::error(loc(kw->kids[0]), "argument " + quoted(key) + " of " + op +
                                                             " is given twice"));
      errs.back().note(loc(*given[static_cast<std::size_t>(idx)]), "first given here");
      continue;
    }
    given[static_cast<std::size_t>(idx)] = &kw->kids[1];
  }
  for (std::size_t i = 0; i < s.args.size(); ++i) {
    const SchemaArg &a = s.args[i];
    if (given[i])
      checkPatArg(*given[i], a.type, a.name, s, i, errs);
    else if (!a.defaultValue && !args.rest)
      errs.push_back(Diagnostic::error(
          loc(call), "missing argument " + quoted(a.name) + " of " + op +
                         " (write _ to accept any value, or end the arguments with '...')"));
  }
  return errs;
}

void RuleSema::checkPatArg(const Syn &p, const SchemaType &t, const std::string &param,
                           const OpSchema &s, std::size_t position, std::vector<Diagnostic> &errs) {
  auto mismatch = [&](const std::string &got) {
    errs.push_back(Diagnostic::error(loc(p), "argument " + quoted(param) + " of " +
                                                 s.qualifiedName() + " is " + t.str() +
                                                 ", but the pattern gives " + got));
  };
  const Syn *typed = p.kind == SK::PParam ? &p.kids.front() : &p;
  using B = SchemaType::Base;
  if (const Syn *tp = typed->find(SK::TypePat); tp && tp->kids.front().kind == SK::TScalar) {
    const std::string ann = printInline(*tp);
    if (p.kind != SK::PCapture && p.kind != SK::PWild) {
      errs.push_back(Diagnostic::error(
          loc(*tp), quoted(ann) + " is for a capture or _ (" +
                        (p.kind == SK::PParam ? "a parameter" : "a result") + " is a tensor)"));
    } else if (t.isList || (t.base != B::Tensor && t.base != B::Scalar && t.base != B::Any)) {
      errs.push_back(Diagnostic::error(
          loc(*tp), quoted(ann) + " needs a Tensor or Scalar argument, but " + quoted(param) +
                        " of " + s.qualifiedName() + " is " + t.str()));
    }
    return;
  }
  if (typed->find(SK::TypePat) && !tensorLike(t)) {
    errs.push_back(Diagnostic::error(loc(*typed->find(SK::TypePat)),
                                     "a type pattern needs a tensor argument, but " +
                                         quoted(param) + " of " + s.qualifiedName() + " is " +
                                         t.str()));
    return;
  }
  bool numberForTensor =
      t.base == B::Tensor && !t.isList && s.properties.elementwise && position > 0;
  switch (p.kind) {
  case SK::PWild:
  case SK::PCapture:
    return;
  case SK::PParam:
    if (!tensorLike(t))
      errs.push_back(Diagnostic::error(loc(p), "'param' needs a tensor argument, but " +
                                                   quoted(param) + " of " + s.qualifiedName() +
                                                   " is " + t.str()));
    return;
  case SK::PResult: {
    auto it = results_.find(bareName(p.text));
    if (it == results_.end())
      return; // reported when lowering
    ExprType rt = it->second.type;
    bool ok = rt == ExprType::Tensor ? tensorLike(t) || (t.isList && t.base == B::Tensor)
                                     : fits(rt, typeOfSchema(t)) || t.base == B::Scalar;
    if (!ok)
      mismatch(article(rt) + " (" + p.text.substr(0, p.text.find_first_of(" :")) + ")");
    return;
  }
  case SK::PGroup:
    checkPatArg(p.kids.front(), t, param, s, position, errs);
    return;
  case SK::PatAlt:
    for (const Syn &k : p.kids)
      checkPatArg(k, t, param, s, position, errs);
    return;
  case SK::PList: {
    if (!t.isList && t.base != B::Any) {
      mismatch("a list");
      return;
    }
    if (t.fixedLength >= 0 && static_cast<int64_t>(p.kids.size()) != t.fixedLength) {
      errs.push_back(Diagnostic::error(
          loc(p), "argument " + quoted(param) + " of " + s.qualifiedName() + " is " + t.str() +
                      ", a list of " + std::to_string(t.fixedLength) +
                      " elements, but the pattern lists " + std::to_string(p.kids.size())));
      return;
    }
    SchemaType elem = t;
    elem.isList = false;
    elem.fixedLength = -1;
    elem.optional = t.elementOptional;
    for (const Syn &k : p.kids)
      checkPatArg(k, elem, param, s, position, errs);
    return;
  }
  case SK::LInt:
    if (!(t.base == B::Int || t.base == B::SymInt || t.base == B::Float || t.base == B::Scalar ||
          t.base == B::Any || numberForTensor) ||
        t.isList)
      mismatch("an int");
    else if (!parseInt64(p.text))
      errs.push_back(Diagnostic::error(loc(p), "integer " + p.text + " is out of range"));
    return;
  case SK::LFloat:
    if (!(t.base == B::Float || t.base == B::Scalar || t.base == B::Any || numberForTensor) ||
        t.isList)
      mismatch("a float");
    return;
  case SK::LStr:
    if (t.base != B::Str && t.base != B::Any)
      mismatch("a string");
    return;
  case SK::LIdent: {
    const std::string &id = p.text;
    if (id == "none") {
      if (!acceptsNone(t))
        mismatch("none");
      return;
    }
    if (id == "true" || id == "false") {
      if (!(t.base == B::Bool || t.base == B::Scalar || t.base == B::Any) || t.isList)
        mismatch("a bool");
      return;
    }
    if (t.base == B::Str) {
      errs.push_back(
          Diagnostic::error(loc(p), "argument " + quoted(param) + " of " + s.qualifiedName() +
                                        " is a string; write it quoted: \"" + id + "\""));
      return;
    }
    if (!literalFor(p, &t)) {
      if (t.base == B::ScalarType) {
        std::vector<std::string> dts;
        for (int i = 0; i < kNumDTypes; ++i)
          dts.push_back(std::string(name(static_cast<DType>(i))));
        Diagnostic d = Diagnostic::error(loc(p), "unknown dtype " + quoted(id) + " for argument " +
                                                     quoted(param) + " of " + s.qualifiedName());
        if (std::string c = closestName(id, dts); !c.empty())
          d.note("did you mean " + quoted(c) + "?");
        errs.push_back(std::move(d));
      } else if (t.base == B::Layout || t.base == B::MemoryFormat || t.base == B::Device) {
        errs.push_back(Diagnostic::error(loc(p), quoted(id) + " is not a valid " + t.str() +
                                                     " for argument " + quoted(param) + " of " +
                                                     s.qualifiedName()));
      } else if (parseDType(id)) {
        mismatch("a dtype");
      } else {
        errs.push_back(Diagnostic::error(loc(p), "unknown name " + quoted(id) +
                                                     " (captures are written $" + id +
                                                     ", strings \"" + id + "\")"));
      }
    }
    return;
  }
  default:
    return;
  }
}

/// The Argument a literal pattern stands for, converted to the parameter's
/// type (an int for a float parameter becomes a float; bare names become
/// dtypes, layouts or memory formats); nullopt when it is not a valid literal.
std::optional<Argument> RuleSema::literalFor(const Syn &p, const SchemaType *t) {
  using B = SchemaType::Base;
  switch (p.kind) {
  case SK::LInt: {
    auto v = parseInt64(p.text);
    if (!v)
      return std::nullopt;
    if (t && !t->isList && t->base == B::Float)
      return Argument(static_cast<double>(*v));
    return Argument(*v);
  }
  case SK::LFloat: {
    auto v = parseDouble(p.text);
    if (!v)
      return std::nullopt;
    return Argument(*v);
  }
  case SK::LStr:
    return Argument(unescape(p.text));
  case SK::LIdent: {
    const std::string &id = p.text;
    if (id == "none")
      return Argument::none();
    if (id == "true" || id == "false")
      return Argument(id == "true");
    B base = t ? t->base : B::Any;
    if (base == B::Layout) {
      if (auto l = parseLayout(id))
        return Argument(*l);
      return std::nullopt;
    }
    if (base == B::MemoryFormat) {
      if (auto m = parseMemoryFormat(id))
        return Argument(*m);
      return std::nullopt;
    }
    if (base == B::Device) {
      static const std::set<std::string> kDevices = {"cpu", "cuda", "meta", "mps", "vulkan", "xpu"};
      if (kDevices.count(id))
        return Argument(Device{id, -1});
      return std::nullopt;
    }
    if (auto dt = parseDType(id))
      return Argument(*dt);
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

void RuleSema::bindCapture(const std::string &nm, ExprType type, const SourceRange &at,
                           BindCtx bctx, bool isDim) {
  auto [it, fresh] = captures_.try_emplace(nm);
  CaptureInfo &ci = it->second;
  if (fresh) {
    ci.type = type;
    ci.first = at;
    ci.isDim = isDim;
  } else if (auto u = unify(ci.type, type)) {
    ci.type = *u;
  } else {
    errorAt(at, "capture $" + nm + " is bound to " + article(type) + " here, but to " +
                    article(ci.type) + " before")
        .note(ci.first, "first bound here");
  }
  ++ci.occurrences;
  if (!bctx.conditional)
    ci.definite = true;
  else if (!ci.conditional)
    ci.conditional = at;
  if (bctx.collect)
    bctx.collect->insert(nm);
}

std::optional<TypePattern> RuleSema::lowerType(const Syn &tp, BindCtx bctx) {
  TypePattern out;
  out.loc = loc(tp);
  const Syn &d = tp.kids.front();
  if (d.kind == SK::TDType) {
    auto dt = parseDType(d.text);
    if (!dt) {
      std::vector<std::string> dts;
      for (int i = 0; i < kNumDTypes; ++i)
        dts.push_back(std::string(name(static_cast<DType>(i))));
      Diagnostic &e = error(d, "unknown dtype " + quoted(d.text));
      if (std::string c = closestName(d.text, dts); !c.empty())
        e.note("did you mean " + quoted(c) + "?");
      return std::nullopt;
    }
    out.dtype = dt;
  } else if (d.kind == SK::TDVar) {
    out.dtypeVar = bareName(d.text);
    bindCapture(out.dtypeVar, ExprType::DType, loc(d), bctx);
  }
  const Syn *shape = tp.find(SK::TShape);
  if (!shape) {
    out.anyRank = true;
    return out;
  }
  for (const Syn &k : shape->kids) {
    DimPattern dp;
    dp.loc = loc(k);
    switch (k.kind) {
    case SK::TEllipsis:
      out.anyRank = true;
      out.leadingEllipsis = true;
      continue;
    case SK::DInt: {
      auto v = parseInt64(k.text);
      if (!v) {
        error(k, "dimension " + k.text + " is out of range");
        return std::nullopt;
      }
      dp.kind = DimPattern::Kind::Literal;
      dp.value = *v;
      break;
    }
    case SK::DVar:
      dp.kind = DimPattern::Kind::Var;
      dp.var = bareName(k.text);
      bindCapture(dp.var, ExprType::Int, dp.loc, bctx, true);
      break;
    default:
      dp.kind = DimPattern::Kind::Any;
      break;
    }
    out.dims.push_back(dp);
  }
  if (out.leadingEllipsis && out.dims.empty())
    out.leadingEllipsis = false; // `[...]`: any rank
  return out;
}

ArgPattern RuleSema::lowerPat(const Syn &p, const SchemaType *t, std::size_t stmtIndex,
                              BindCtx bctx) {
  ArgPattern a;
  a.loc = loc(p);
  auto typeOf = [&](const Syn &n) {
    if (const Syn *tp = n.find(SK::TypePat))
      a.type = lowerType(*tp, bctx);
  };
  // `scalar float` / `scalar int` (checkPatArg rejects it elsewhere).
  auto scalarOf = [&](const Syn &n) {
    const Syn *tp = n.find(SK::TypePat);
    if (!tp || tp->kids.front().kind != SK::TScalar)
      return ArgPattern::Scalar::None;
    return tp->kids.front().kids.front().text == "int" ? ArgPattern::Scalar::Int
                                                       : ArgPattern::Scalar::Float;
  };
  switch (p.kind) {
  case SK::PWild:
    a.kind = ArgPattern::Kind::Wildcard;
    a.scalar = scalarOf(p);
    if (a.scalar == ArgPattern::Scalar::None)
      typeOf(p);
    return a;
  case SK::PCapture:
    a.kind = ArgPattern::Kind::Var;
    a.name = bareName(p.text);
    a.scalar = scalarOf(p);
    if (a.scalar != ArgPattern::Scalar::None) {
      // The annotation, not the (Tensor) parameter, gives the capture's kind.
      bindCapture(a.name, a.scalar == ArgPattern::Scalar::Int ? ExprType::Int : ExprType::Float,
                  a.loc, bctx);
      return a;
    }
    bindCapture(a.name, t ? typeOfSchema(*t) : ExprType::Any, a.loc, bctx);
    typeOf(p);
    return a;
  case SK::PParam: {
    a = lowerPat(p.kids.front(), t, stmtIndex, bctx);
    a.mustBeParam = true;
    a.loc = loc(p);
    return a;
  }
  case SK::PResult: {
    a.kind = ArgPattern::Kind::PatResult;
    a.name = bareName(p.text);
    auto it = results_.find(a.name);
    if (it == results_.end()) {
      Diagnostic &d = error(p, "%" + a.name + " is not defined before this use");
      const Syn *later = nullptr;
      if (matchSyn_)
        for (const Syn &st : matchSyn_->kids)
          for (const Syn &r : st.find(SK::Results)->kids)
            if (!later && st.begin > p.begin && r.text != "_" && bareName(r.text) == a.name)
              later = &r;
      if (later)
        d.note(loc(*later), "%" + a.name +
                                " is defined later; a match lists its statements in "
                                "dependency order (the root last)");
      else
        d.note("a value from outside the match is a capture: write $" + a.name);
    } else {
      ++it->second.patternUses;
      stmts_[stmtIndex].producers.insert(it->second.stmt);
    }
    typeOf(p);
    return a;
  }
  case SK::PGroup:
    return lowerPat(p.kids.front(), t, stmtIndex, bctx);
  case SK::PatAlt: {
    a.kind = ArgPattern::Kind::Alternatives;
    std::vector<std::set<std::string>> sets(p.kids.size());
    for (std::size_t i = 0; i < p.kids.size(); ++i) {
      BindCtx arm{true, &sets[i]};
      a.elements.push_back(lowerPat(p.kids[i], t, stmtIndex, arm));
    }
    // A capture bound in every alternative is bound whenever the pattern matches.
    for (const std::string &nm : sets.front()) {
      bool all = std::all_of(sets.begin(), sets.end(),
                             [&](const std::set<std::string> &s) { return s.count(nm) != 0; });
      if (!all)
        continue;
      if (!bctx.conditional)
        captures_[nm].definite = true;
      if (bctx.collect)
        bctx.collect->insert(nm);
    }
    return a;
  }
  case SK::PList: {
    a.kind = ArgPattern::Kind::List;
    SchemaType elem;
    const SchemaType *et = nullptr;
    if (t && t->isList) {
      elem = *t;
      elem.isList = false;
      elem.fixedLength = -1;
      elem.optional = t->elementOptional;
      et = &elem;
    }
    for (const Syn &k : p.kids)
      a.elements.push_back(lowerPat(k, et, stmtIndex, bctx));
    // A list of literals is one literal (the matcher compares it at once).
    bool allLiteral = !a.elements.empty() &&
                      std::all_of(a.elements.begin(), a.elements.end(), [](const ArgPattern &e) {
                        return e.kind == ArgPattern::Kind::Literal;
                      });
    if (allLiteral) {
      Argument::List items;
      for (const ArgPattern &e : a.elements)
        items.push_back(e.literal);
      a.kind = ArgPattern::Kind::Literal;
      a.literal = Argument(std::move(items));
      a.elements.clear();
    }
    return a;
  }
  default: {
    a.kind = ArgPattern::Kind::Literal;
    if (auto lit = literalFor(p, t))
      a.literal = *lit;
    return a;
  }
  }
}

/// A structural key of a pattern (statement-level alternatives with equal
/// arguments merge into one node with several targets).
std::string RuleSema::argKey(const ArgPattern &a) {
  std::string k = std::to_string(static_cast<int>(a.kind)) + ":" + a.name + ":" +
                  (a.mustBeParam ? "P" : "") + ":";
  if (a.scalar != ArgPattern::Scalar::None)
    k += a.scalar == ArgPattern::Scalar::Int ? "Si:" : "Sf:";
  if (a.kind == ArgPattern::Kind::Literal) {
    // Literal identity: kind plus a printable form.
    const Argument &l = a.literal;
    k += std::string(name(l.kind())) + "=";
    if (l.isInt())
      k += std::to_string(l.integer());
    else if (l.isFloat())
      k += std::to_string(l.floating());
    else if (l.isBool())
      k += l.boolean() ? "T" : "F";
    else if (l.isString())
      k += l.string();
    else if (l.isDType())
      k += std::string(name(l.dtype()));
    else if (l.isList())
      k += "list" + std::to_string(l.list().size());
  }
  if (a.type) {
    k += "T(" + (a.type->dtype ? std::string(name(*a.type->dtype)) : "") + a.type->dtypeVar +
         (a.type->anyRank ? "*" : "") + (a.type->leadingEllipsis ? "." : "");
    for (const DimPattern &d : a.type->dims)
      k += std::to_string(static_cast<int>(d.kind)) + std::to_string(d.value) + d.var + ",";
    k += ")";
  }
  k += "[";
  for (const ArgPattern &e : a.elements)
    k += argKey(e) + ";";
  return k + "]";
}

std::string RuleSema::nodeArgsKey(const PatternNode &n) {
  std::string k;
  for (const ArgPattern &a : n.args)
    k += argKey(a) + "|";
  k += "#";
  for (const auto &[name, a] : n.kwargs)
    k += name + "=" + argKey(a) + "|";
  return k;
}

std::optional<PatternNode> RuleSema::lowerNodeCall(const Syn &call, std::size_t stmtIndex,
                                                   BindCtx bctx) {
  // Targets and the schemas they stand for.
  struct Target {
    const Syn *syn;
    bool insensitive;
    std::vector<const OpSchema *> schemas;
  };
  std::vector<Target> targets;
  bool unknown = false;
  for (const Syn &k : call.kids) {
    if (k.kind != SK::OpName)
      continue;
    Target t{&k, false, {}};
    t.schemas = resolvePatternTarget(k, t.insensitive);
    unknown |= t.schemas.empty();
    targets.push_back(std::move(t));
  }
  CallArgs args = splitArgs(call, true);
  // A node that cannot be checked still binds its captures and uses its
  // operands, so one bad op does not cascade into "unbound" and
  // "disconnected" errors elsewhere.
  auto bindLoosely = [&] {
    for (const Syn *p : args.positional)
      lowerPat(*p, nullptr, stmtIndex, bctx);
    for (const Syn *kw : args.keywords)
      lowerPat(kw->kids[1], nullptr, stmtIndex, bctx);
  };
  if (unknown) {
    bindLoosely();
    return std::nullopt;
  }

  // Which schemas accept the arguments. When none does, report the errors of
  // the one with the fewest.
  std::vector<const OpSchema *> accepted;
  std::vector<Diagnostic> bestErrs;
  const OpSchema *best = nullptr;
  std::vector<std::string> tried;
  std::vector<std::vector<const OpSchema *>> acceptedPerTarget(targets.size());
  for (std::size_t ti = 0; ti < targets.size(); ++ti) {
    for (const OpSchema *s : targets[ti].schemas) {
      tried.push_back(s->qualifiedName());
      std::vector<Diagnostic> errs = checkPatternCall(args, *s, call);
      if (errs.empty()) {
        accepted.push_back(s);
        acceptedPerTarget[ti].push_back(s);
      } else if (!best || errs.size() < bestErrs.size() ||
                 (errs.size() == bestErrs.size() && s->overload == "default")) {
        best = s;
        bestErrs = std::move(errs);
      }
    }
  }
  if (accepted.empty()) {
    for (Diagnostic &d : bestErrs) {
      if (tried.size() > 1)
        d.note("no overload accepts the pattern's arguments; tried " + joinNames(tried));
      failed_ = true;
      diags_.push_back(std::move(d));
    }
    bindLoosely();
    return std::nullopt;
  }

  PatternNode node;
  node.loc = loc(call);
  for (std::size_t ti = 0; ti < targets.size(); ++ti) {
    const Target &t = targets[ti];
    if (!t.insensitive) {
      if (!acceptedPerTarget[ti].empty())
        node.targets.push_back(t.schemas.front()->qualifiedName());
    } else if (acceptedPerTarget[ti].size() == t.schemas.size()) {
      node.targets.push_back(t.syn->text);
    } else {
      for (const OpSchema *s : acceptedPerTarget[ti])
        node.targets.push_back(s->qualifiedName());
    }
  }

  // Lower the arguments with the first accepting schema's parameter types.
  const OpSchema &s0 = *accepted.front();
  for (std::size_t i = 0; i < args.positional.size(); ++i)
    node.args.push_back(lowerPat(*args.positional[i], &s0.args[i].type, stmtIndex, bctx));
  std::set<std::string> mentioned;
  for (std::size_t i = 0; i < args.positional.size(); ++i)
    mentioned.insert(s0.args[i].name);
  for (const Syn *kw : args.keywords) {
    const std::string &key = kw->kids[0].text;
    int idx = s0.argIndex(key);
    node.kwargs.emplace_back(
        key, lowerPat(kw->kids[1], &s0.args[static_cast<std::size_t>(idx)].type, stmtIndex, bctx));
    mentioned.insert(key);
  }
  // Unmentioned arguments must keep their default (Rule.h); `...` leaves them free.
  if (!args.rest) {
    // Every schema the node's targets can match: all overloads of a target
    // kept as "ns.name", the accepted ones otherwise.
    std::vector<const OpSchema *> all;
    for (std::size_t ti = 0; ti < targets.size(); ++ti) {
      const Target &t = targets[ti];
      bool whole = t.insensitive && std::find(node.targets.begin(), node.targets.end(),
                                              t.syn->text) != node.targets.end();
      for (const OpSchema *s : whole ? t.schemas : acceptedPerTarget[ti])
        if (std::find(all.begin(), all.end(), s) == all.end())
          all.push_back(s);
    }
    for (const SchemaArg &a : s0.args) {
      if (mentioned.count(a.name) || !a.defaultValue)
        continue;
      bool agree = std::all_of(all.begin(), all.end(), [&](const OpSchema *s) {
        int idx = s->argIndex(a.name);
        return idx >= 0 && s->args[static_cast<std::size_t>(idx)].defaultValue &&
               *s->args[static_cast<std::size_t>(idx)].defaultValue == *a.defaultValue;
      });
      if (!agree)
        continue;
      ArgPattern lit;
      lit.kind = ArgPattern::Kind::Literal;
      lit.literal = *a.defaultValue;
      lit.loc = node.loc;
      node.kwargs.emplace_back(a.name, std::move(lit));
    }
  }
  return node;
}

void RuleSema::matchStmt(const Syn &stmt, std::size_t index) {
  stmts_.push_back({});
  MatchStmtInfo &info = stmts_.back();
  info.syn = &stmt;
  const Syn &results = *stmt.find(SK::Results);
  const Syn &alt = *stmt.find(SK::NodeAlt);
  const Syn *optional = alt.find(SK::Optional);
  bool shared = stmt.find(SK::Shared) != nullptr;
  info.isRoot = stmt.find(SK::RootMark) != nullptr;

  // Statement-level alternatives; inside an optional node every binding is
  // conditional.
  std::vector<const Syn *> calls;
  for (const Syn &k : alt.kids)
    if (k.kind == SK::NodeCall)
      calls.push_back(&k);
  BindCtx outer{optional != nullptr, nullptr};
  std::vector<std::set<std::string>> sets(calls.size());
  std::vector<PatternNode> variants;
  std::vector<std::vector<const OpSchema *>> returnsOf;
  bool ok = true;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    BindCtx arm = calls.size() > 1 ? BindCtx{true, &sets[i]} : outer;
    auto node = lowerNodeCall(*calls[i], index, arm);
    if (!node) {
      ok = false;
      continue;
    }
    variants.push_back(std::move(*node));
  }
  if (calls.size() > 1 && !optional)
    for (const std::string &nm : sets.front())
      if (std::all_of(sets.begin(), sets.end(),
                      [&](const std::set<std::string> &s) { return s.count(nm) != 0; }))
        captures_[nm].definite = true;

  // Result names and kinds (from the schema returns of the first target).
  std::vector<ExprType> types;
  if (ok) {
    std::optional<std::size_t> count;
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const PatternNode &n = variants[i];
      std::string t0 = n.targets.front();
      const OpSchema *s = std::count(t0.begin(), t0.end(), '.') == 2
                              ? ctx_.ops.lookup(t0)
                              : ctx_.ops.overloads(t0).front();
      if (!count) {
        count = s->returns.size();
        for (const SchemaReturn &r : s->returns)
          types.push_back(typeOfSchema(r.type));
      } else if (*count != s->returns.size()) {
        error(*calls[i], "the alternatives of one statement must return the same number of "
                         "values (" +
                             std::to_string(*count) + " and " + std::to_string(s->returns.size()) +
                             ")");
        ok = false;
      }
    }
    if (ok && count && *count != results.kids.size()) {
      std::string op = variants.front().targets.front();
      if (*count == 0)
        error(results, op + " returns nothing, so it cannot be matched by a result");
      else
        error(results, op + " returns " + std::to_string(*count) + " value" +
                           (*count == 1 ? "" : "s") + ", the pattern names " +
                           std::to_string(results.kids.size()) +
                           (*count > 1 ? " (write _ for results you do not need)" : ""));
      ok = false;
    }
  }
  for (std::size_t r = 0; r < results.kids.size(); ++r) {
    const Syn &rn = results.kids[r];
    std::string nm = rn.text == "_" ? "" : bareName(rn.text);
    info.results.push_back(nm);
    if (nm.empty())
      continue;
    if (auto it = results_.find(nm); it != results_.end()) {
      error(rn, "redefinition of %" + nm).note(it->second.loc, "previous definition here");
      continue;
    }
    ResultInfo ri;
    ri.stmt = index;
    ri.index = r;
    ri.loc = loc(rn);
    ri.type = r < types.size() ? types[r] : ExprType::Tensor;
    results_.emplace(nm, ri);
  }
  if (!ok)
    return;

  // Optional: the passthrough argument.
  unsigned passthrough = 0;
  if (optional) {
    if (results.kids.size() != 1) {
      error(*optional, "an optional node must have exactly one result");
      return;
    }
    if (!optional->kids.empty()) {
      const Syn &ref = optional->kids.front();
      std::string want = ref.text.substr(0, ref.text.find_first_of(" :"));
      bool found = false;
      const Syn &call0 = *calls.front();
      unsigned pos = 0;
      for (const Syn &k : call0.kids) {
        if (k.kind == SK::OpName)
          continue;
        if (k.kind == SK::KwArg || k.kind == SK::Rest)
          break;
        const Syn *v = k.kind == SK::PParam ? &k.kids.front() : &k;
        if ((v->kind == SK::PResult || v->kind == SK::PCapture) &&
            v->text.substr(0, v->text.find_first_of(" :")) == want) {
          found = true;
          break;
        }
        ++pos;
      }
      if (!found) {
        error(ref, "'else " + want + "': " + want +
                       " is not a positional argument of the optional node");
        return;
      }
      passthrough = pos;
    } else {
      const ArgPattern *a0 = variants.front().args.empty() ? nullptr : &variants.front().args[0];
      if (!a0 || (a0->kind != ArgPattern::Kind::Var && a0->kind != ArgPattern::Kind::PatResult &&
                  a0->kind != ArgPattern::Kind::Wildcard)) {
        error(*optional, "an absent optional node stands for its first argument, which must "
                         "be %name, $name or _ (or name another argument with '? else %x')");
        return;
      }
    }
    for (PatternNode &n : variants)
      if (passthrough >= n.args.size()) {
        error(*optional, "'else': every alternative needs the passthrough argument at the same "
                         "position");
        return;
      }
  }

  // The passthrough argument is matched whether the node is present or not:
  // a capture there is bound on every path.
  if (optional) {
    std::optional<std::string> name;
    bool same = true;
    for (const PatternNode &n : variants) {
      const ArgPattern &a = n.args[passthrough];
      std::string nm = a.kind == ArgPattern::Kind::Var ? a.name : "";
      if (!name)
        name = nm;
      same &= *name == nm;
    }
    if (same && name && !name->empty())
      captures_[*name].definite = true;
  }

  // Alternatives with equal arguments are one node with several targets.
  std::vector<PatternNode> merged;
  std::vector<std::string> keys;
  for (PatternNode &n : variants) {
    std::string key = nodeArgsKey(n);
    auto it = std::find(keys.begin(), keys.end(), key);
    if (it != keys.end()) {
      PatternNode &m = merged[static_cast<std::size_t>(it - keys.begin())];
      for (const std::string &t : n.targets)
        if (std::find(m.targets.begin(), m.targets.end(), t) == m.targets.end())
          m.targets.push_back(t);
      continue;
    }
    keys.push_back(key);
    merged.push_back(std::move(n));
  }
  for (PatternNode &n : merged) {
    for (const std::string &r : info.results)
      n.results.push_back(r);
    n.optional = optional != nullptr;
    n.passthroughArg = passthrough;
    n.shared = shared;
  }
  info.variants = std::move(merged);
}

void RuleSema::checkConnected() {
  if (stmts_.empty())
    return;
  std::vector<bool> seen(stmts_.size(), false);
  std::vector<std::size_t> work{stmts_.size() - 1};
  seen.back() = true;
  bool multi = false;
  for (std::size_t i = 0; i < stmts_.size(); ++i)
    if (stmts_[i].isRoot && !seen[i]) {
      seen[i] = true;
      work.push_back(i);
      multi = true;
    }
  while (!work.empty()) {
    std::size_t s = work.back();
    work.pop_back();
    for (std::size_t p : stmts_[s].producers)
      if (!seen[p]) {
        seen[p] = true;
        work.push_back(p);
      }
  }
  const Syn &rootRes = *stmts_.back().syn->find(SK::Results);
  for (std::size_t i = 0; i + 1 < stmts_.size(); ++i) {
    if (seen[i])
      continue;
    const Syn &res = *stmts_[i].syn->find(SK::Results);
    if (multi)
      error(res, "pattern node " + printInline(res) +
                     " is disconnected from the roots of the match (nothing in the match uses it)")
          .note(loc(rootRes), "every statement of a multi-root match must feed a statement "
                              "marked 'root' (or mark this one 'root')");
    else
      error(res, "pattern node " + printInline(res) + " is disconnected from its root " +
                     printInline(rootRes) + " (nothing in the match uses it)")
          .note(loc(rootRes), "the root of a match is its last statement; every other statement "
                              "must feed it");
  }
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

RuleSema::Typed RuleSema::bad() {
  Typed t;
  auto e = std::make_shared<Expr>();
  t.e = e;
  t.ok = false;
  return t;
}

ExprPtr RuleSema::literalExpr(const Syn &at, Argument value) {
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Kind::Literal;
  e->loc = loc(at);
  e->literal = std::move(value);
  return e;
}

void RuleSema::requireBool(const Syn &at, const Typed &t, const char *what) {
  if (t.ok && t.type != ExprType::Bool && t.type != ExprType::Any)
    error(at, std::string(what) + " must be a bool, but this is " + article(t.type));
}

RuleSema::Typed RuleSema::binary(const Syn &at, const std::string &op, Typed a, Typed b,
                                 ExprType result) {
  Typed t;
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Kind::Binary;
  e->loc = loc(at);
  e->name = op;
  e->operands = {a.e, b.e};
  t.e = e;
  t.type = result;
  t.ok = a.ok && b.ok;
  return t;
}

RuleSema::Typed RuleSema::useCapture(const Syn &n, ExprCtx c) {
  std::string nm = bareName(n.text);
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Kind::Var;
  e->loc = loc(n);
  e->name = nm;
  Typed t;
  t.e = e;
  if (c == ExprCtx::Rewrite) {
    if (auto it = rewriteDefs_.find(nm); it != rewriteDefs_.end()) {
      ++it->second.uses;
      t.type = it->second.type;
      return t;
    }
  }
  auto it = captures_.find(nm);
  if (it == captures_.end()) {
    Diagnostic &d = error(n, "use of unbound capture $" + nm);
    if (auto p = pendingDefs_.find(nm); p != pendingDefs_.end())
      d.note(loc(*p->second), "$" + nm + " is defined later in the rewrite");
    std::vector<std::string> names;
    for (const auto &kv : captures_)
      names.push_back(kv.first);
    if (std::string s = closestName(nm, names); !s.empty())
      d.note("did you mean $" + s + "?");
    return bad();
  }
  CaptureInfo &ci = it->second;
  ++ci.uses;
  if (!ci.definite) {
    error(n, "$" + nm +
                 " may be unbound here: it is bound only inside an optional node or in "
                 "some of the alternatives")
        .note(ci.conditional ? *ci.conditional : ci.first, "bound here");
    return bad();
  }
  t.type = ci.type;
  return t;
}

RuleSema::Typed RuleSema::useResult(const Syn &n, ExprCtx c) {
  std::string nm = bareName(n.text);
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Kind::PatResult;
  e->loc = loc(n);
  e->name = nm;
  Typed t;
  t.e = e;
  if (c == ExprCtx::Rewrite) {
    if (auto it = newResults_.find(nm); it != newResults_.end()) {
      ++it->second.uses;
      t.type = it->second.type;
      return t;
    }
  }
  auto it = results_.find(nm);
  if (it == results_.end()) {
    Diagnostic &d = error(n, "%" + nm + " is not defined");
    std::vector<std::string> names;
    for (const auto &kv : results_)
      names.push_back(kv.first);
    if (captures_.count(nm))
      d.note("did you mean the capture $" + nm + "?");
    else if (std::string s = closestName(nm, names); !s.empty())
      d.note("did you mean %" + s + "?");
    return bad();
  }
  if (c == ExprCtx::Rewrite && it->second.replacedAt) {
    error(n, "the rewrite replaces %" + nm + ", so it cannot also use it")
        .note(loc(*it->second.replacedAt), "replaced here");
    return bad();
  }
  ++it->second.uses;
  t.type = it->second.type;
  return t;
}

RuleSema::Typed RuleSema::callExpr(const Syn &n, ExprCtx c) {
  const Syn &fn = n.kids.front();
  if (fn.kind == SK::OpName) {
    error(fn, c == ExprCtx::Where
                  ? "op calls are not allowed in where predicates"
                  : "an op call creates a node: write it as '%name = " + fn.text + "(...)'");
    return bad();
  }
  if (ctx_.transforms.find(fn.text)) {
    error(fn, "constant transform " + quoted(fn.text) +
                  (c == ExprCtx::Where
                       ? " cannot be used in where predicates"
                       : " must be the whole right-hand side of '$name = " + fn.text + "(...)'"));
    return bad();
  }
  const rewrite::BuiltinFunction *b = rewrite::findBuiltin(fn.text);
  if (!b) {
    std::vector<std::string> names;
    for (const auto &f : rewrite::kBuiltinFunctions)
      names.push_back(std::string(f.name));
    if (c == ExprCtx::Rewrite)
      for (const rewrite::ConstantTransform *t : ctx_.transforms.all())
        names.push_back(t->name);
    Diagnostic &d = error(fn, std::string("unknown function ") + quoted(fn.text));
    if (std::string s = closestName(fn.text, names); !s.empty())
      d.note("did you mean " + quoted(s) + "?");
    else
      d.note("builtin functions: " + joinNames(names));
    return bad();
  }
  CallArgs args = splitArgs(n, false);
  if (!args.keywords.empty()) {
    error(*args.keywords.front(), std::string(b->name) + "() takes no keyword arguments");
    return bad();
  }
  if (args.positional.size() != b->arity) {
    error(n, std::string(b->name) + "() takes " + std::to_string(b->arity) + " argument" +
                 (b->arity == 1 ? "" : "s") + ", got " + std::to_string(args.positional.size()));
    return bad();
  }
  auto e = std::make_shared<Expr>();
  e->kind = Expr::Kind::Call;
  e->loc = loc(n);
  e->name = std::string(b->name);
  bool ok = true;
  std::vector<ExprType> argTypes;
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    Typed a = lowerExpr(*args.positional[i], c);
    ok &= a.ok;
    if (a.ok && a.type != ExprType::None && !fits(a.type, b->params[i])) {
      error(*args.positional[i], "argument " + std::to_string(i + 1) + " of " +
                                     std::string(b->name) + "() must be " + article(b->params[i]) +
                                     ", but this is " + article(a.type));
      ok = false;
    }
    argTypes.push_back(a.type);
    e->operands.push_back(a.e);
  }
  Typed t;
  t.e = e;
  t.ok = ok;
  t.type = b->result;
  if (b->result == ExprType::Number) // min / max
    t.type = argTypes[0] == ExprType::Int && argTypes[1] == ExprType::Int       ? ExprType::Int
             : argTypes[0] == ExprType::Float || argTypes[1] == ExprType::Float ? ExprType::Float
                                                                                : ExprType::Number;
  return t;
}

RuleSema::Typed RuleSema::lowerExpr(const Syn &n, ExprCtx c, bool allowSymbol) {
  switch (n.kind) {
  case SK::LInt: {
    auto v = parseInt64(n.text);
    if (!v) {
      error(n, "integer " + n.text + " is out of range");
      return bad();
    }
    return {literalExpr(n, Argument(*v)), ExprType::Int};
  }
  case SK::LFloat:
    return {literalExpr(n, Argument(*parseDouble(n.text))), ExprType::Float};
  case SK::LStr:
    return {literalExpr(n, Argument(unescape(n.text))), ExprType::String};
  case SK::LIdent: {
    if (n.text == "none")
      return {literalExpr(n, Argument::none()), ExprType::None};
    if (n.text == "true" || n.text == "false")
      return {literalExpr(n, Argument(n.text == "true")), ExprType::Bool};
    if (auto dt = parseDType(n.text))
      return {literalExpr(n, Argument(*dt)), ExprType::DType};
    if (allowSymbol) {
      Typed t{literalExpr(n, Argument(n.text)), ExprType::String};
      t.symbol = true;
      return t;
    }
    Diagnostic &d = error(n, "unknown name " + quoted(n.text) + " (captures are written $" +
                                 n.text + ", strings \"" + n.text + "\")");
    if (captures_.count(n.text))
      d.note("did you mean $" + n.text + "?");
    return bad();
  }
  case SK::ECapture:
    return useCapture(n, c);
  case SK::EResult:
    return useResult(n, c);
  case SK::EParen:
    return lowerExpr(n.kids.front(), c, allowSymbol);
  case SK::EList: {
    std::vector<Typed> elems;
    bool allLiteral = true, allInt = true, ok = true;
    for (const Syn &k : n.kids) {
      elems.push_back(lowerExpr(k, c));
      ok &= elems.back().ok;
      allLiteral &= elems.back().e->kind == Expr::Kind::Literal;
      allInt &= elems.back().type == ExprType::Int;
    }
    Typed t;
    t.ok = ok;
    t.type = allInt ? ExprType::IntList : ExprType::List;
    if (allLiteral) {
      Argument::List items;
      for (const Typed &e : elems)
        items.push_back(e.e->literal);
      t.e = literalExpr(n, Argument(std::move(items)));
      return t;
    }
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Kind::List;
    e->loc = loc(n);
    for (const Typed &el : elems)
      e->operands.push_back(el.e);
    t.e = e;
    return t;
  }
  case SK::ENeg: {
    Typed a = lowerExpr(n.kids.front(), c);
    if (!a.ok)
      return a;
    if (!isNumeric(a.type)) {
      error(n, "unary '-' needs a number, but this is " + article(a.type));
      return bad();
    }
    // Fold `-8` into a literal.
    if (a.e->kind == Expr::Kind::Literal && (a.e->literal.isInt() || a.e->literal.isFloat()))
      return {literalExpr(n, a.e->literal.isInt() ? Argument(-a.e->literal.integer())
                                                  : Argument(-a.e->literal.floating())),
              a.type};
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Kind::Unary;
    e->loc = loc(n);
    e->name = "-";
    e->operands = {a.e};
    return {e, a.type};
  }
  case SK::ENot: {
    Typed a = lowerExpr(n.kids.front(), c);
    requireBool(n.kids.front(), a, "the operand of 'not'");
    auto e = std::make_shared<Expr>();
    e->kind = Expr::Kind::Unary;
    e->loc = loc(n);
    e->name = "!";
    e->operands = {a.e};
    Typed t{e, ExprType::Bool};
    t.ok = a.ok;
    return t;
  }
  case SK::EAnd:
  case SK::EOr: {
    std::string op = n.kind == SK::EAnd ? "&&" : "||";
    const char *what = n.kind == SK::EAnd ? "an operand of 'and'" : "an operand of 'or'";
    Typed acc = lowerExpr(n.kids.front(), c);
    requireBool(n.kids.front(), acc, what);
    for (std::size_t i = 1; i < n.kids.size(); ++i) {
      Typed b = lowerExpr(n.kids[i], c);
      requireBool(n.kids[i], b, what);
      acc = binary(n, op, acc, b, ExprType::Bool);
    }
    return acc;
  }
  case SK::ECmp: {
    Typed a = lowerExpr(n.kids[0], c);
    const Syn &tail = n.kids[1];
    bool negated = tail.find(SK::NotMark) != nullptr;
    if (tail.kind == SK::IsNone) {
      auto call = std::make_shared<Expr>();
      call->kind = Expr::Kind::Call;
      call->loc = loc(n);
      call->name = "is_none";
      call->operands = {a.e};
      Typed t{call, ExprType::Bool};
      t.ok = a.ok;
      if (!negated)
        return t;
      auto e = std::make_shared<Expr>();
      e->kind = Expr::Kind::Unary;
      e->loc = loc(n);
      e->name = "!";
      e->operands = {call};
      t.e = e;
      return t;
    }
    if (tail.kind == SK::InOp) {
      // `x in [a, b]` is `x == a or x == b`; `not in` is `x != a and x != b`.
      const Syn &list = n.kids[2];
      if (list.kids.empty()) {
        error(list, "'in' needs a non-empty list");
        return bad();
      }
      Typed acc;
      bool first = true;
      for (const Syn &k : list.kids) {
        Typed b = lowerExpr(k, c);
        if (a.ok && b.ok && !unify(a.type, b.type) && b.type != ExprType::None)
          error(k, "cannot compare " + article(a.type) + " with " + article(b.type));
        Typed cmp = binary(k, negated ? "!=" : "==", a, b, ExprType::Bool);
        acc = first ? cmp : binary(n, negated ? "&&" : "||", acc, cmp, ExprType::Bool);
        first = false;
      }
      return acc;
    }
    std::string op = printInline(tail);
    Typed b = lowerExpr(n.kids[2], c);
    if (a.ok && b.ok) {
      if (op == "==" || op == "!=") {
        if (!unify(a.type, b.type) && a.type != ExprType::None && b.type != ExprType::None)
          error(tail, "cannot compare " + article(a.type) + " with " + article(b.type));
        else if (a.type == ExprType::None || b.type == ExprType::None)
          error(tail, "compare with none using 'is none' / 'is not none'");
      } else if (!isNumeric(a.type) || !isNumeric(b.type)) {
        error(tail,
              "'" + op + "' needs numbers, but got " + article(a.type) + " and " + article(b.type));
      }
    }
    return binary(tail, op, a, b, ExprType::Bool);
  }
  case SK::EAdd:
  case SK::EMul: {
    Typed acc = lowerExpr(n.kids.front(), c);
    for (std::size_t i = 1; i + 1 < n.kids.size(); i += 2) {
      std::string op = printInline(n.kids[i]);
      Typed b = lowerExpr(n.kids[i + 1], c);
      ExprType result = ExprType::Any;
      if (acc.ok && b.ok) {
        if (!isNumeric(acc.type) || !isNumeric(b.type)) {
          error(n.kids[i], "'" + op + "' needs numbers, but got " + article(acc.type) + " and " +
                               article(b.type));
        } else if (op == "%" && (acc.type == ExprType::Float || b.type == ExprType::Float)) {
          error(n.kids[i], "'%' needs ints");
        } else if (acc.type == ExprType::Any || b.type == ExprType::Any) {
          result = ExprType::Any;
        } else if (acc.type == ExprType::Int && b.type == ExprType::Int) {
          result = ExprType::Int;
          if (op == "/")
            op = "//"; // integer division (Rule.h convention)
        } else if (op == "/" || acc.type == ExprType::Float || b.type == ExprType::Float) {
          result = ExprType::Float;
        } else {
          result = ExprType::Number;
        }
      }
      acc = binary(n.kids[i], op, acc, b, result);
    }
    return acc;
  }
  case SK::ECall:
    return callExpr(n, c);
  default:
    error(n, "expected an expression");
    return bad();
  }
}

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

void RuleSema::rewriteSection(const Syn &sec) {
  rewriteSyn_ = &sec;
  for (const Syn &s : sec.kids)
    if (s.kids.front().kind == SK::CaptureDef)
      pendingDefs_.emplace(bareName(s.kids.front().text), &s.kids.front());
  // Results the rewrite replaces may not be read by it, before or after the
  // replacing statement.
  for (const Syn &s : sec.kids)
    if (s.kids.front().kind == SK::Results)
      for (const Syn &r : s.kids.front().kids)
        if (r.text != "_")
          if (auto it = results_.find(bareName(r.text));
              it != results_.end() && !it->second.replacedAt)
            it->second.replacedAt = &r;
  for (const Syn &s : sec.kids)
    rewriteStmt(s);
  // Every named result of every root must be replaced.
  for (std::size_t si = 0; si < stmts_.size(); ++si) {
    const MatchStmtInfo &root = stmts_[si];
    if (si + 1 != stmts_.size() && !root.isRoot)
      continue;
    for (std::size_t r = 0; r < root.results.size(); ++r) {
      const std::string &nm = root.results[r];
      if (nm.empty())
        continue;
      auto it = results_.find(nm);
      if (it == results_.end() || it->second.replacedAt)
        continue;
      const Syn &anchor = sec.kids.empty() ? sec : sec.kids.back();
      error(anchor, "the rewrite does not replace %" + nm + ", the result of " +
                        (root.isRoot ? "a root of the match" : "the match's root"))
          .note(it->second.loc, "%" + nm + " is defined here; give the rewrite a statement '%" +
                                    nm + " = ns.op(...)'");
    }
  }
}

void RuleSema::rewriteStmt(const Syn &stmt) {
  const Syn &lhs = stmt.kids[0];
  const Syn &rhs = stmt.kids[1];
  if (lhs.kind == SK::CaptureDef) {
    std::string nm = bareName(lhs.text);
    pendingDefs_.erase(nm);
    if (auto it = captures_.find(nm); it != captures_.end()) {
      error(lhs, "redefinition of $" + nm).note(it->second.first, "previous definition here");
      return;
    }
    if (auto it = rewriteDefs_.find(nm); it != rewriteDefs_.end()) {
      error(lhs, "redefinition of $" + nm).note(it->second.loc, "previous definition here");
      return;
    }
    if (rhs.kind == SK::ECall && rhs.kids.front().kind == SK::FnName) {
      if (const rewrite::ConstantTransform *t = ctx_.transforms.find(rhs.kids.front().text)) {
        transformStmt(stmt, rhs, *t, nm);
        return;
      }
    }
    Typed v = lowerExpr(rhs, ExprCtx::Rewrite);
    RewriteDef def{loc(lhs), v.type, 0};
    rewriteDefs_.emplace(nm, def);
    if (!v.ok)
      return;
    RewriteStmt st;
    st.kind = RewriteStmt::Kind::Let;
    st.loc = loc(stmt);
    st.results = {nm};
    st.value = v.e;
    rule_.rewrite.push_back(std::move(st));
    return;
  }
  // `%dq = $x`: forward a match result to an existing value.
  if (rhs.kind == SK::ECapture || rhs.kind == SK::EResult) {
    forwardStmt(stmt, rhs);
    return;
  }
  // `%a, %b = ns.op(...)`
  if (rhs.kind != SK::ECall || rhs.kids.front().kind != SK::OpName) {
    error(rhs, "a result is defined by an op call: '" + printInline(lhs) +
                   " = ns.op(...)' (to compute a value, write '$name = ...')");
    return;
  }
  newNodeStmt(stmt, rhs);
}

void RuleSema::transformStmt(const Syn &stmt, const Syn &call, const rewrite::ConstantTransform &t,
                             const std::string &result) {
  RewriteStmt st;
  st.kind = RewriteStmt::Kind::ConstTransform;
  st.loc = loc(stmt);
  st.results = {result};
  st.target = t.name;
  rewriteDefs_.emplace(result, RewriteDef{loc(stmt.kids[0]), ExprType::Tensor, 0});
  CallArgs args = splitArgs(call, false);
  bool ok = true;
  std::size_t nin = t.inputs.size();
  std::vector<std::string> paramNames;
  for (const rewrite::TransformParam &p : t.params)
    paramNames.push_back(p.name);
  std::vector<bool> given(t.params.size(), false);
  auto checkParam = [&](const rewrite::TransformParam &p, const Syn &argSyn) -> ExprPtr {
    using PK = rewrite::TransformParamKind;
    Typed a = lowerExpr(argSyn, ExprCtx::Rewrite, p.kind == PK::Enum);
    if (!a.ok) {
      ok = false;
      return a.e;
    }
    if (p.kind == PK::Enum) {
      std::string v =
          a.e->kind == Expr::Kind::Literal && a.e->literal.isString() ? a.e->literal.string() : "";
      if (a.type == ExprType::Any)
        return a.e;
      if (std::find(p.enumValues.begin(), p.enumValues.end(), v) == p.enumValues.end()) {
        error(argSyn, "parameter " + quoted(p.name) + " of " + t.name + " takes one of " +
                          joinNames(p.enumValues) + (v.empty() ? "" : ", not " + quoted(v)));
        ok = false;
      }
      return a.e;
    }
    ExprType want = p.kind == PK::Int     ? ExprType::Int
                    : p.kind == PK::Float ? ExprType::Float
                    : p.kind == PK::Bool  ? ExprType::Bool
                    : p.kind == PK::DType ? ExprType::DType
                                          : ExprType::IntList;
    bool fine = fits(a.type, want) || (p.kind == PK::IntList && a.type == ExprType::Int);
    if (!fine) {
      error(argSyn, "parameter " + quoted(p.name) + " of " + t.name + " is " + article(want) +
                        ", but this is " + article(a.type));
      ok = false;
    }
    return a.e;
  };
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    const Syn &a = *args.positional[i];
    if (i < nin) {
      Typed v = lowerExpr(a, ExprCtx::Rewrite);
      if (v.ok && v.type != ExprType::Tensor && v.type != ExprType::Any) {
        error(a, "input " + quoted(t.inputs[i]) + " of " + t.name +
                     " must be a tensor (a captured constant or an earlier transform), but this "
                     "is " +
                     article(v.type));
        ok = false;
      }
      ok &= v.ok;
      st.args.push_back(v.e);
      continue;
    }
    std::size_t pi = i - nin;
    if (pi >= t.params.size()) {
      error(a, t.name + " takes " + std::to_string(nin + t.params.size()) +
                   " positional arguments: " + t.signature());
      ok = false;
      break;
    }
    given[pi] = true;
    st.args.push_back(checkParam(t.params[pi], a));
  }
  if (args.positional.size() < nin) {
    error(call, t.name + " needs " + std::to_string(nin) + " tensor input" + (nin == 1 ? "" : "s") +
                    " first: " + t.signature());
    ok = false;
  }
  for (const Syn *kw : args.keywords) {
    const std::string &key = kw->kids[0].text;
    auto it = std::find(paramNames.begin(), paramNames.end(), key);
    if (it == paramNames.end()) {
      Diagnostic &d = error(kw->kids[0], "unknown keyword argument " + quoted(key) + " for " +
                                             t.name + " (" + t.signature() + ")");
      if (std::string s = closestName(key, paramNames); !s.empty())
        d.note("did you mean " + quoted(s) + "?");
      ok = false;
      continue;
    }
    std::size_t pi = static_cast<std::size_t>(it - paramNames.begin());
    if (given[pi]) {
      error(kw->kids[0], "parameter " + quoted(key) + " of " + t.name + " is given twice");
      ok = false;
      continue;
    }
    given[pi] = true;
    st.kwargs.emplace_back(key, checkParam(t.params[pi], kw->kids[1]));
  }
  for (std::size_t i = 0; i < t.params.size(); ++i)
    if (!given[i] && !t.params[i].defaultValue) {
      error(call, "missing parameter " + quoted(t.params[i].name) + " of " + t.signature());
      ok = false;
    }
  if (ok)
    rule_.rewrite.push_back(std::move(st));
}

std::optional<Argument> RuleSema::convertSymbol(const Syn &at, const std::string &text,
                                                const SchemaType &t) {
  Syn fake = at;
  fake.kind = SK::LIdent;
  fake.text = text;
  return literalFor(fake, &t);
}

void RuleSema::newNodeStmt(const Syn &stmt, const Syn &call) {
  const Syn &lhs = stmt.kids[0];
  const Syn &opName = call.kids.front();
  std::string target = opName.text;
  int dots = static_cast<int>(std::count(target.begin(), target.end(), '.'));
  const OpSchema *schema = nullptr;
  bool ok = true;
  if (dots == 2) {
    schema = ctx_.ops.lookup(target);
  } else if (dots == 1) {
    auto ov = ctx_.ops.overloads(target);
    if (ov.size() == 1) {
      schema = ov.front();
    } else if (!ov.empty()) {
      schema = ctx_.ops.lookup(target + ".default");
      if (!schema) {
        std::vector<std::string> names;
        for (const OpSchema *s : ov)
          names.push_back(s->qualifiedName());
        error(opName,
              "a new node needs an exact op: " + target + " has overloads " + joinNames(names));
        ok = false;
      }
    }
  }
  if (ok && !schema) {
    bool insensitive = false;
    resolvePatternTarget(opName, insensitive); // reports unknown op / overload
    ok = false;
  }
  // Results are defined even when the call has errors (no cascades).
  std::vector<std::string> names;
  for (const Syn &r : lhs.kids)
    names.push_back(r.text == "_" ? "" : bareName(r.text));

  RewriteStmt st;
  st.kind = RewriteStmt::Kind::NewNode;
  st.loc = loc(stmt);
  st.results = names;
  if (schema) {
    st.target = schema->qualifiedName();
    CallArgs args = splitArgs(call, false);
    std::string op = schema->qualifiedName();
    std::size_t npos = schema->numPositional();
    std::vector<const Syn *> given(schema->args.size(), nullptr);
    auto argFor = [&](const Syn &syn, std::size_t idx) -> ExprPtr {
      const SchemaArg &param = schema->args[idx];
      const SchemaType &t = param.type;
      Typed a = lowerExpr(syn, ExprCtx::Rewrite, true);
      if (!a.ok) {
        ok = false;
        return a.e;
      }
      if (a.symbol) {
        auto lit = convertSymbol(syn, a.e->literal.string(), t);
        if (!lit) {
          error(syn, "unknown name " + quoted(syn.text) + " for argument " + quoted(param.name) +
                         " of " + op + " (" + t.str() + ")");
          ok = false;
          return a.e;
        }
        return literalExpr(syn, *lit);
      }
      using B = SchemaType::Base;
      bool fine;
      if (a.type == ExprType::None)
        fine = acceptsNone(t);
      else if (t.isList)
        fine = a.type == ExprType::IntList || a.type == ExprType::List || a.type == ExprType::Any ||
               (t.fixedLength >= 0 && fits(a.type, typeOfSchema([&] {
                                             SchemaType e = t;
                                             e.isList = false;
                                             return e;
                                           }())));
      else if (t.base == B::Tensor)
        fine = a.type == ExprType::Tensor || a.type == ExprType::Any ||
               (schema->properties.elementwise && idx > 0 && isNumeric(a.type));
      else if (t.base == B::Scalar)
        fine = isNumeric(a.type) || a.type == ExprType::Bool;
      else
        fine = fits(a.type, typeOfSchema(t));
      if (!fine) {
        error(syn, "argument " + quoted(param.name) + " of " + op + " is " + t.str() +
                       ", but this is " + article(a.type));
        ok = false;
      }
      // An int literal for a float parameter is a float.
      if (a.e->kind == Expr::Kind::Literal && a.e->literal.isInt() && !t.isList &&
          t.base == B::Float)
        return literalExpr(syn, Argument(static_cast<double>(a.e->literal.integer())));
      return a.e;
    };
    for (std::size_t i = 0; i < args.positional.size(); ++i) {
      if (i >= npos) {
        error(*args.positional[i], op + " takes " + std::to_string(npos) + " positional argument" +
                                       (npos == 1 ? "" : "s") + ", got " +
                                       std::to_string(args.positional.size()));
        ok = false;
        break;
      }
      given[i] = args.positional[i];
      st.args.push_back(argFor(*args.positional[i], i));
    }
    for (const Syn *kw : args.keywords) {
      const std::string &key = kw->kids[0].text;
      int idx = schema->argIndex(key);
      if (idx < 0) {
        std::vector<std::string> pnames;
        for (const SchemaArg &a : schema->args)
          pnames.push_back(a.name);
        Diagnostic &d =
            error(kw->kids[0], "unknown keyword argument " + quoted(key) + " for " + op);
        if (std::string s = closestName(key, pnames); !s.empty())
          d.note("did you mean " + quoted(s) + "?");
        d.note(op + " takes: " + joinNames(pnames));
        ok = false;
        continue;
      }
      if (given[static_cast<std::size_t>(idx)]) {
        error(kw->kids[0], "argument " + quoted(key) + " of " + op + " is given twice")
            .note(loc(*given[static_cast<std::size_t>(idx)]), "first given here");
        ok = false;
        continue;
      }
      given[static_cast<std::size_t>(idx)] = &kw->kids[1];
      st.kwargs.emplace_back(key, argFor(kw->kids[1], static_cast<std::size_t>(idx)));
    }
    for (std::size_t i = 0; i < schema->args.size(); ++i)
      if (!given[i] && !schema->args[i].defaultValue) {
        error(call, "missing argument " + quoted(schema->args[i].name) + " of " + op);
        ok = false;
      }
    if (schema->returns.size() != names.size()) {
      error(lhs, op + " returns " + std::to_string(schema->returns.size()) + " value" +
                     (schema->returns.size() == 1 ? "" : "s") + ", the rewrite names " +
                     std::to_string(names.size()));
      ok = false;
    }
  }
  // Define / replace the results.
  for (std::size_t r = 0; r < lhs.kids.size(); ++r) {
    const std::string &nm = names[r];
    if (nm.empty())
      continue;
    ExprType rt = schema && r < schema->returns.size() ? typeOfSchema(schema->returns[r].type)
                                                       : ExprType::Any;
    if (auto it = results_.find(nm); it != results_.end()) {
      if (it->second.replacedAt != &lhs.kids[r]) {
        error(lhs.kids[r], "%" + nm + " is replaced twice")
            .note(loc(*it->second.replacedAt), "first replaced here");
        ok = false;
        continue;
      }
      if (rt != ExprType::Any && !unify(rt, it->second.type)) {
        error(lhs.kids[r], "the rewrite replaces %" + nm + " (" + article(it->second.type) +
                               ") with " + article(rt) + " returned by " + st.target)
            .note(it->second.loc, "%" + nm + " is defined here");
        ok = false;
      }
      continue;
    }
    if (auto it = newResults_.find(nm); it != newResults_.end()) {
      error(lhs.kids[r], "redefinition of %" + nm).note(it->second.loc, "previous definition here");
      ok = false;
      continue;
    }
    newResults_.emplace(nm, RewriteDef{loc(lhs.kids[r]), rt, 0});
  }
  if (ok)
    rule_.rewrite.push_back(std::move(st));
}

// `%r = $x` / `%r = %m`: the match result %r is replaced by a value that
// already exists (a capture or another result), so no node is created. This
// is how a fold removes a pair of ops (dequantize(quantize(x)) -> x).
void RuleSema::forwardStmt(const Syn &stmt, const Syn &value) {
  const Syn &lhs = stmt.kids[0];
  if (lhs.kids.size() != 1 || lhs.kids[0].text == "_") {
    error(lhs, "forwarding a value ('%r = $x') defines exactly one named result");
    return;
  }
  const Syn &res = lhs.kids[0];
  std::string nm = bareName(res.text);
  Typed v = lowerExpr(value, ExprCtx::Rewrite);
  auto it = results_.find(nm);
  if (it == results_.end()) {
    error(res, "'%" + nm + " = " + value.text +
                   "' forwards a value, so it must replace a result of the match (to name a "
                   "new node write '%" +
                   nm + " = ns.op(...)')");
    return;
  }
  if (it->second.replacedAt != &res) {
    error(res, "%" + nm + " is replaced twice")
        .note(loc(*it->second.replacedAt), "first replaced here");
    return;
  }
  if (!v.ok)
    return;
  if (v.type != ExprType::Any && !unify(v.type, it->second.type)) {
    error(value, "the rewrite replaces %" + nm + " (" + article(it->second.type) + ") with " +
                     article(v.type))
        .note(it->second.loc, "%" + nm + " is defined here");
    return;
  }
  RewriteStmt st;
  st.kind = RewriteStmt::Kind::Forward;
  st.loc = loc(stmt);
  st.results = {nm};
  st.value = v.e;
  rule_.rewrite.push_back(std::move(st));
}

//===----------------------------------------------------------------------===//
// Example, tolerance, unused names
//===----------------------------------------------------------------------===//

void RuleSema::exampleSection(const Syn &sec) {
  std::map<std::string, SourceRange> seen;
  for (const Syn &e : sec.kids) {
    const Syn &nameSyn = e.kids[0];
    const Syn &v = e.kids[1];
    const std::string &nm = nameSyn.text;
    if (auto it = seen.find(nm); it != seen.end()) {
      error(nameSyn, "duplicate example entry " + quoted(nm))
          .note(it->second, "previous entry here");
      continue;
    }
    seen.emplace(nm, loc(nameSyn));
    auto it = captures_.find(nm);
    if (it == captures_.end()) {
      std::vector<std::string> names;
      for (const auto &kv : captures_)
        names.push_back(kv.first);
      Diagnostic &d = error(nameSyn, "example names " + quoted(nm) +
                                         ", which the match does not capture (example entries "
                                         "name captures without '$')");
      if (std::string s = closestName(nm, names); !s.empty())
        d.note("did you mean " + quoted(s) + "?");
      continue;
    }
    ++it->second.uses;
    ExprType type = it->second.type;
    if (v.kind == SK::ExUniform) {
      exampleRange(nm, it->second, v);
      continue;
    }
    // The values, as ints or dtypes.
    std::vector<int64_t> ints;
    std::vector<DType> dtypes;
    bool ok = true;
    auto item = [&](const Syn &x) {
      if (x.kind == SK::LInt) {
        auto n = parseInt64(x.text);
        if (!n) {
          error(x, "integer " + x.text + " is out of range");
          ok = false;
        } else {
          ints.push_back(*n);
        }
      } else if (auto dt = parseDType(x.text)) {
        dtypes.push_back(*dt);
      } else {
        error(x, "expected an integer or a dtype, got " + quoted(x.text));
        ok = false;
      }
    };
    if (v.kind == SK::ExRange) {
      auto lo = parseInt64(v.kids[0].text), hi = parseInt64(v.kids[1].text);
      auto step = v.kids.size() > 2 ? parseInt64(v.kids[2].text) : std::optional<int64_t>(1);
      if (!lo || !hi || !step || *step <= 0 || *hi < *lo) {
        error(v, "a range is lo..hi [step s] with lo <= hi and s > 0");
        continue;
      }
      if ((*hi - *lo) / *step >= 4096) {
        error(v, "a range may list at most 4096 values");
        continue;
      }
      for (int64_t x = *lo; x <= *hi; x += *step)
        ints.push_back(x);
    } else if (v.kind == SK::ExList) {
      for (const Syn &x : v.kids)
        item(x);
    } else {
      item(v);
    }
    if (!ok)
      continue;
    if (!ints.empty() && !dtypes.empty()) {
      error(v, "an example entry lists either integers or dtypes");
      continue;
    }
    if (!ints.empty()) {
      // Integers are valid values of a float capture (a scale of 1), as int
      // literals are for float parameters; verify-rules passes them as floats.
      if (type != ExprType::Int && type != ExprType::Number && type != ExprType::Float &&
          type != ExprType::Any) {
        error(v, "$" + nm + " is " + article(type) + ", but the example gives integers")
            .note(it->second.first, "$" + nm + " is bound here");
        continue;
      }
      rule_.example.ints[nm] = ints;
    } else {
      if (type != ExprType::DType && type != ExprType::Any) {
        error(v, "$" + nm + " is " + article(type) + ", but the example gives dtypes")
            .note(it->second.first, "$" + nm + " is bound here");
        continue;
      }
      rule_.example.dtypes[nm] = dtypes;
    }
  }
}

void RuleSema::exampleRange(const std::string &nm, const CaptureInfo &ci, const Syn &v) {
  if (ci.type != ExprType::Tensor) {
    error(v, "uniform(lo, hi) gives the random values of a tensor capture, but $" + nm + " is " +
                 article(ci.type))
        .note(ci.first, "$" + nm + " is bound here");
    return;
  }
  std::optional<double> bounds[2];
  for (int i = 0; i < 2; ++i) {
    bounds[i] = parseDouble(v.kids[i].text);
    if (!bounds[i] || !std::isfinite(*bounds[i])) {
      error(v.kids[i], "uniform bound " + v.kids[i].text + " is not a finite number");
      return;
    }
  }
  if (*bounds[0] >= *bounds[1]) {
    error(v, "uniform(lo, hi) needs lo < hi (values are drawn from [lo, hi))");
    return;
  }
  rule_.example.ranges[nm] = {*bounds[0], *bounds[1]};
}

void RuleSema::toleranceClauses(const Syn &r) {
  const Syn *unguarded = nullptr;
  for (const Syn &clause : r.kids) {
    if (clause.kind != SK::Tolerance)
      continue;
    const Syn *guard = clause.find(SK::TolGuard);
    if (!guard && unguarded) {
      error(clause, "rule " + quoted(rule_.name) +
                        " has two tolerance(...) clauses without 'when'; guard all but one "
                        "(tolerance(...) when $dt == f16)")
          .note(loc(*unguarded), "previous unguarded tolerance(...) here");
      continue;
    }
    auto bounds = toleranceBounds(clause);
    if (!guard) {
      unguarded = &clause;
      if (bounds)
        std::tie(rule_.atol, rule_.rtol) = *bounds;
      continue;
    }
    const Syn &cond = guard->kids.front();
    Typed t = lowerExpr(cond, ExprCtx::Where);
    requireBool(cond, t, "a tolerance guard");
    if (t.ok && bounds)
      rule_.guardedTolerances.push_back({t.e, bounds->first, bounds->second, loc(clause)});
  }
}

std::optional<std::pair<double, double>> RuleSema::toleranceBounds(const Syn &clause) {
  std::map<std::string, SourceRange> seen;
  std::pair<double, double> bounds{0.0, 0.0};
  bool ok = true;
  for (const Syn &kw : clause.kids) {
    if (kw.kind != SK::KwArg)
      continue;
    const std::string &key = kw.kids[0].text;
    if (key != "atol" && key != "rtol") {
      error(kw.kids[0], "unknown tolerance " + quoted(key) + " (expected atol or rtol)");
      ok = false;
      continue;
    }
    if (auto it = seen.find(key); it != seen.end()) {
      error(kw.kids[0], "duplicate " + quoted(key)).note(it->second, "previous value here");
      ok = false;
      continue;
    }
    seen.emplace(key, loc(kw.kids[0]));
    auto v = parseDouble(kw.kids[1].text);
    if (!v || !std::isfinite(*v) || *v < 0) {
      error(kw.kids[1], key + " must be a finite number >= 0");
      ok = false;
      continue;
    }
    (key == "atol" ? bounds.first : bounds.second) = *v;
  }
  if (!ok)
    return std::nullopt;
  return bounds;
}

void RuleSema::unusedWarnings() {
  for (const auto &[nm, ci] : captures_)
    if (ci.occurrences == 1 && ci.uses == 0)
      warning(ci.first, "capture $" + nm + " is never used" +
                            (ci.isDim ? "; write _ for a dimension that can be anything"
                                      : "; write _ to accept any value"));
  for (const auto &[nm, ri] : results_) {
    if (ri.stmt + 1 == stmts_.size() || ri.patternUses > 0 || ri.uses > 0)
      continue;
    if (stmts_[ri.stmt].results.size() > 1)
      warning(ri.loc, "result %" + nm + " is never used; write _ instead");
  }
  for (const auto &[nm, d] : rewriteDefs_)
    if (d.uses == 0)
      warning(d.loc, "$" + nm + " is computed but never used");
  for (const auto &[nm, d] : newResults_)
    if (d.uses == 0)
      warning(d.loc, "%" + nm +
                         " is created but never used (only results that replace a "
                         "matched result, or feed one, stay in the graph)");
}

} // namespace

void analyzeFile(const ParsedFile &file, const SemaContext &ctx, std::vector<Rule> &rules,
                 std::vector<Diagnostic> &diags) {
  for (const Syn &item : file.root.kids) {
    if (item.kind != SK::Rule)
      continue;
    RuleSema sema(file, ctx, diags);
    sema.run(item, rules);
  }
}

} // namespace graft::dsl
