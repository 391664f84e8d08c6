//===- Rule.h - The compiled form of a fusion rule ---*- C++ -*-===//
//
// A Rule is what a `.pat` rule lowers to and what the matcher and rewrite
// driver execute. The DSL front end (dsl/) produces Rules; the engine never
// sees DSL syntax. Every pattern element and expression keeps the SourceRange
// of the .pat text it came from so `explain`, `verify-rules` and runtime
// errors can point at it.
//
//   rule torchao_embedding_q4gsw benefit 10 {
//     match {
//       %dq  = torchao.dequantize_affine(param $w : i8[$V, $D], [1, $G], param $s, $zp,
//                                        i8, -8, 7, output_dtype = $odt)
//       %out = aten.embedding(%dq, $idx)
//     }
//     where   { $D % $G == 0; $zp is none or all_zero($zp) }
//     rewrite {
//       $packed = pack_int4($w, nibbles = low_first)
//       %out    = et_vk.embedding_q4gsw($packed, $s, $G, $idx, is_linear_weight = true)
//     }
//   }
//
// lowers to two PatternNodes (%dq, then the root %out), one where-Expr per
// predicate, and two RewriteStmts.
//
// Conventions the DSL front end (dsl/, docs/dsl.md) guarantees:
//  * Names are stored without their sigil: `%dq` is "dq", `$w` is "w" (in
//    results, ArgPattern/Expr names, ExampleDomain keys). An ignored result
//    (`_` in `%s, _ = ...`) is the empty string.
//  * Targets are canonical "ns.name.overload", or "ns.name" for a pattern
//    written without an overload (matches every overload).
//  * A PatternNode lists positional arguments as written (args[i] is schema
//    position i) and keyword arguments by schema name. Every schema argument
//    the .pat text leaves out is added to `kwargs` as a Literal of its default
//    (for an overload-insensitive target: when all overloads agree on it), so
//    the matcher can treat an argument the PatternNode does not list as
//    "matches anything" (the `...` rest marker leaves them out on purpose).
//  * Binary operators in Exprs are "+ - * / // % == != < <= > >= && ||";
//    the DSL writes `and`/`or`/`not`, and `/` between two ints becomes "//".
//  * Only rules that pass every semantic check (docs/dsl-errors.md) are
//    produced: ops and overloads exist, arities and argument kinds fit the
//    schema, every name is bound before use, the match is a connected DAG whose
//    last node is the root (plus, in a multi-root match, `extraRoots`, each
//    sharing a tensor capture or pattern node with another root), and the
//    rewrite replaces the results of every root.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Argument.h"
#include "graft/ir/DType.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace graft::rewrite {

//===----------------------------------------------------------------------===//
// Expressions (where-clauses, computed attributes, rewrite arguments)
//===----------------------------------------------------------------------===//

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  enum class Kind {
    Literal,   ///< `literal`: int, float, bool, string, dtype, none, list of literals
    Var,       ///< `$name`: a capture
    PatResult, ///< `%name`: a matched (or, in rewrite, newly built) value
    List,      ///< `[e, e]` with non-literal elements
    Unary,     ///< op: "-", "!"
    Binary,    ///< op: + - * / // % == != < <= > >= && ||
    Call,      ///< builtin function/predicate (all_zero, values_in, dim, rank, dtype,
               ///< numel, is_none, is_param, fqn, ...) or, in rewrite, a constant transform
  };
  Kind kind = Kind::Literal;
  SourceRange loc;
  Argument literal;              ///< Literal
  std::string name;              ///< Var / PatResult / Call / op of Unary/Binary
  std::vector<ExprPtr> operands; ///< List elems, Unary/Binary operands, Call args
  std::vector<std::pair<std::string, ExprPtr>> kwargs; ///< Call keyword args
};

//===----------------------------------------------------------------------===//
// Match patterns
//===----------------------------------------------------------------------===//

/// A pattern for one dimension inside a shape pattern: an integer, a
/// capture (`$D`, binds the Dim; symbolic dims bind symbolically) or `_`.
struct DimPattern {
  enum class Kind { Any, Literal, Var } kind = Kind::Any;
  int64_t value = 0;
  std::string var;
  SourceRange loc;
};

/// `i8[$V, $D]`, `$dt[...]`: constrains a tensor value's dtype and shape.
struct TypePattern {
  std::optional<DType> dtype;   ///< literal dtype
  std::string dtypeVar;         ///< or a dtype capture ("" if none)
  bool anyRank = false;         ///< shape written `[...]` or omitted: any rank
  std::vector<DimPattern> dims; ///< exact rank otherwise
  /// `[..., $K]`: any number of leading dims, then `dims` as the trailing
  /// dims (rank >= dims.size()). The engine reads `anyRank` with a non-empty
  /// `dims` the same way.
  bool leadingEllipsis = false;
  SourceRange loc;
};

/// A pattern for one argument of an op pattern.
struct ArgPattern {
  enum class Kind {
    Wildcard,     ///< `_`: anything, including an absent optional argument
    Var,          ///< `$x`: binds the argument (value, int, list, ...); bound twice = equal
    PatResult,    ///< `%name`: the value must be produced by pattern node `name`
    Literal,      ///< an int/float/bool/string/dtype/none literal (or list of them)
    List,         ///< `[p, p]`: list argument, elementwise patterns, exact length
    Alternatives, ///< `p | p`: first alternative that matches (with binding rollback)
  };
  Kind kind = Kind::Wildcard;
  SourceRange loc;
  std::string name;                 ///< Var / PatResult
  Argument literal;                 ///< Literal
  std::vector<ArgPattern> elements; ///< List elements or Alternatives
  /// `param $w`: the bound value must be a constant graph input with an FQN.
  bool mustBeParam = false;
  /// `$w : i8[$V, $D]`: type constraint on a tensor value.
  std::optional<TypePattern> type;
  /// `$eps : scalar float` / `scalar int`: the argument must be a number,
  /// not a tensor value (exported graphs pass Python numbers in Tensor slots:
  /// `x + 1e-05` is aten.add.Tensor(x, 1e-05)). Float accepts ints too (torch
  /// promotes them); Int accepts ints only. Exclusive with `type`.
  enum class Scalar { None, Int, Float };
  Scalar scalar = Scalar::None;
};

/// One op in the match DAG.
struct PatternNode {
  /// Result names; more than one for multi-output ops (`%s, %zp = ...`).
  std::vector<std::string> results;
  /// Accepted targets. "ns.name.overload" matches exactly; "ns.name" (written
  /// without overload in the .pat) matches any overload. Several entries come
  /// from `opA | opB` alternatives.
  std::vector<std::string> targets;
  std::vector<ArgPattern> args;
  std::vector<std::pair<std::string, ArgPattern>> kwargs;
  /// `?`: the node may be absent; then results[0] stands for the value its
  /// argument `passthroughArg` would have been (an optional view/relu/t).
  bool optional = false;
  unsigned passthroughArg = 0;
  /// `shared`: interior results may have users outside the match.
  bool shared = false;
  SourceRange loc;
};

//===----------------------------------------------------------------------===//
// Rewrite
//===----------------------------------------------------------------------===//

struct RewriteStmt {
  enum class Kind {
    ConstTransform, ///< `$packed = pack_int4($w, nibbles = low_first)`: a registered
                    ///< constant transform; the result is a new constant (FQN-registered)
    Let,            ///< `$n = dim($w, 0) * 2`: a computed attribute
    NewNode,        ///< `%out = et_vk.linear_q4gsw(...)`: a new node
    Forward,        ///< `%dq = $x`: a match result is replaced by an existing value
                    ///< (a capture or another result; `value`), no node is created
  };
  Kind kind = Kind::NewNode;
  SourceRange loc;
  std::vector<std::string> results; ///< `$name` for ConstTransform/Let, `%name`s for NewNode
  /// NewNode: target "ns.name.overload"; ConstTransform: transform name.
  std::string target;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr value; ///< Let, Forward
};

/// The values a rule's `example` block gives each capture, used by
/// verify-rules to build instances: `V = 64` or `G = [32, 64]` or `D = 32..256 step 32`.
struct ExampleDomain {
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::vector<DType>> dtypes;
  /// `x = uniform(lo, hi)`: tensor capture -> the [lo, hi) its random values
  /// are drawn from (default [-1, 1) for inputs; docs/dsl.md).
  std::map<std::string, std::pair<double, double>> ranges;
};

/// A `tolerance(atol = A, rtol = R) when <guard>` clause (docs/dsl.md,
/// "example and tolerance"): a bound that holds only for some instances of a
/// rule, e.g. its f16 ones. The guard is a where-clause expression over the
/// match's bindings.
struct GuardedTolerance {
  ExprPtr when;
  double atol = 0.0;
  double rtol = 0.0;
  SourceRange loc;
};

/// When a rule runs. Phases run in this order, each to its fixpoint, so a
/// fusion rule sees the graph after every legalization (docs/dsl.md, "Phases").
/// A .pat file declares its phase with `phase NAME`; the default is Fuse.
enum class RulePhase : uint8_t {
  Legalize, ///< spellings to canonical form (dtype casts, f64 scales, decomposed fake-quant)
  Fuse,     ///< the fusions into backend ops
};
inline constexpr RulePhase kRulePhases[] = {RulePhase::Legalize, RulePhase::Fuse};
inline const char *name(RulePhase phase) {
  return phase == RulePhase::Legalize ? "legalize" : "fuse";
}

struct Rule {
  std::string name;
  RulePhase phase = RulePhase::Fuse;
  std::string doc; ///< from `///` comments
  int benefit = 1;
  std::vector<std::string> tags;
  std::string backend; ///< e.g. "vulkan"; empty = any
  /// Pattern nodes in dependency order; `root` indexes the one whose results
  /// are not consumed by another pattern node.
  std::vector<PatternNode> nodes;
  std::size_t root = 0;
  /// A multi-root match (`root %a = ...` statements, docs/dsl.md): the roots
  /// other than `root`, in source order. The matcher finds `root` first and
  /// each of these from a value an already matched root's subtree binds (a
  /// capture or pattern result the roots share), so the search stays local;
  /// the rewrite replaces the results of every root. Empty for a single root.
  std::vector<std::size_t> extraRoots;
  std::vector<ExprPtr> where;
  std::vector<RewriteStmt> rewrite;
  ExampleDomain example;
  /// Max abs / rel difference verify-rules accepts between before and after
  /// (the unguarded `tolerance(...)`; 0 without one).
  double atol = 0.0;
  double rtol = 0.0;
  /// `tolerance(...) when <guard>` clauses in source order: on an instance
  /// verify-rules uses the first whose guard holds, else atol / rtol above.
  std::vector<GuardedTolerance> guardedTolerances;
  SourceRange loc;
  /// Statement-level alternatives in the match (`%t = aten.t(param $w) |
  /// aten.permute_copy(param $w, [1, 0])`) whose argument patterns differ are
  /// expanded by the front end into one Rule per combination, all with the
  /// same name, doc, where and rewrite; `variant` numbers them 1..n in source
  /// order (0: the rule has a single form).
  unsigned variant = 0;
};

/// The largest atol and the largest rtol over all of a rule's tolerance
/// clauses: a bound for every instance, for checks that do not evaluate the
/// guards (the golden tests compare whole graphs where several rules fired).
inline std::pair<double, double> widestTolerance(const Rule &rule) {
  std::pair<double, double> out{rule.atol, rule.rtol};
  for (const GuardedTolerance &t : rule.guardedTolerances) {
    out.first = std::max(out.first, t.atol);
    out.second = std::max(out.second, t.rtol);
  }
  return out;
}

/// How the matcher reaches one extra root of a multi-root rule: from an
/// anchor (a tensor capture or a pattern result bound while matching the
/// roots before it) up through the users of each value to the root. `path`
/// runs from the node that consumes the anchor to the root; `path[i].second`
/// (i >= 1) is the result of `path[i - 1]` that `path[i]` consumes. Every
/// node on the path is non-optional, so each step is one use-list walk.
struct RootSearch {
  std::size_t root = 0;
  std::string anchorCapture; ///< "" when the anchor is a pattern result
  std::size_t anchorNode = 0;
  unsigned anchorResult = 0;
  std::vector<std::pair<std::size_t, unsigned>> path;
};

/// The order in which the extra roots are searched, each with its anchor
/// and path (shortest first). `isTensorCapture` says whether a capture binds
/// a tensor value (only those have users to walk). Fails with the first
/// extra root that shares nothing with the roots before it: the diagnostic
/// is at that root and names the roots it was compared with.
Expected<std::vector<RootSearch>>
planRootSearch(const Rule &rule, const std::function<bool(const std::string &)> &isTensorCapture);

} // namespace graft::rewrite
