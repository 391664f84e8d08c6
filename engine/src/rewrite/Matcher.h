//===- Matcher.h - Compiled rules and the backtracking matcher -*- C++ -*-===//
//
// Internal to engine/src/rewrite. A Rule is compiled once per op registry
// into a CompiledRule: targets resolved to OpSchema pointers (matching a
// node's op is a pointer compare, never a string compare), each pattern
// node's arguments mapped to schema parameter indices per accepted overload,
// capture names mapped to slots and expressions resolved to slots.
//
// Matching is a depth-first search over a persistent goal list (an arena of
// cons cells: a choice point is just "push the alternative's goals in front
// of the continuation"), with a trail of bindings undone on backtracking.
// Captures live in the MatchState only while the search is on a path; a
// failed candidate leaves nothing behind. Choice points: `|` alternatives,
// optional nodes (present, then absent), commutative operand orders. All
// buffers are reused across candidates, so a candidate allocates nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"
#include "graft/rewrite/Builtins.h"
#include "graft/rewrite/ConstantTransforms.h"
#include "graft/rewrite/Rule.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace graft::rewrite::detail {

//===----------------------------------------------------------------------===//
// Values of expressions
//===----------------------------------------------------------------------===//

/// The value of a .pat expression: a number, a dim (possibly symbolic), a
/// dtype, a graph value, a list, ... `Unknown` carries why it could not be
/// computed (a symbolic dim compared with `<` and no declared range, a
/// constant without data), which explain reports.
struct EvalValue {
  enum class Kind : uint8_t { None, Bool, Int, Float, String, DType, Dim, Value, List, Unknown };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  DType dt = DType::F32;
  const Value *v = nullptr;
  std::string s; ///< String, or the reason for Unknown
  Dim dim;
  std::vector<EvalValue> list;

  static EvalValue none() { return {}; }
  static EvalValue boolean(bool x);
  static EvalValue integer(int64_t x);
  static EvalValue number(double x);
  static EvalValue string(std::string x);
  static EvalValue dtype(DType x);
  static EvalValue ofDim(const Dim &d); ///< Int when constant
  static EvalValue value(const Value *x);
  static EvalValue unknown(std::string why);

  bool isNumeric() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  /// Text for messages: 128, s0, f32, %w, [1, 32], none.
  std::string str() const;
};

/// Converts a node argument (graph side) to an EvalValue.
EvalValue fromArgument(const Argument &arg);

//===----------------------------------------------------------------------===//
// Compiled form
//===----------------------------------------------------------------------===//

enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  In,
  NotIn
};

/// An expression with names resolved.
struct CExpr {
  Expr::Kind kind = Expr::Kind::Literal;
  const Expr *src = nullptr;
  Argument literal;       ///< Literal
  int slot = -1;          ///< Var: capture slot
  int patNode = -1;       ///< PatResult: pattern node (-1: a rewrite-defined value)
  int result = 0;         ///< PatResult: result index
  int rewriteValue = -1;  ///< PatResult defined by an earlier rewrite statement
  std::string op;         ///< Unary: "-" or "!"
  BinOp bin = BinOp::Add; ///< Binary
  const BuiltinFunction *builtin = nullptr;     ///< Call of a builtin
  const ConstantTransform *transform = nullptr; ///< Call of a transform (rewrite only)
  std::vector<CExpr> operands;
  std::vector<std::pair<std::string, CExpr>> kwargs;
};

/// The pattern of one argument; mirrors ArgPattern with names resolved.
struct CArg {
  ArgPattern::Kind kind = ArgPattern::Kind::Wildcard;
  const ArgPattern *src = nullptr;
  int slot = -1;    ///< Var
  int patNode = -1; ///< PatResult
  int result = 0;   ///< PatResult
  bool mustBeParam = false;
  const TypePattern *type = nullptr;
  ArgPattern::Scalar scalar = ArgPattern::Scalar::None; ///< `$x : scalar float`
  std::vector<int> dimSlots;  ///< per TypePattern dim: slot of a Var dim, else -1
  int dtypeSlot = -1;         ///< TypePattern dtype capture
  std::vector<CArg> elements; ///< List / Alternatives
  int site = -1;              ///< explain/stats site of this element
};

/// One overload (and argument layout) a pattern node accepts.
struct Accept {
  /// The node's schema must be this pointer; null: an unregistered op
  /// matched by its target text.
  const OpSchema *schema = nullptr;
  /// -1: the node uses the current signature; k: legacySchemas[k] (old
  /// torchao graphs put `zero_point_domain` before `output_dtype`).
  int layout = -1;
  const OpSchema *layoutSchema = nullptr; ///< the signature indices refer to
  std::string target;                     ///< opaque ops: exact "ns.name.overload"
  std::string prefix;                     ///< opaque ops matched by "ns.name": "ns.name."
  struct Param {
    /// Schema index in layoutSchema; opaque ops: positional index, or -1 - k
    /// for keyword k of `keywords`; kFixed: the parameter does not exist in
    /// this legacy layout and the pattern is compared with `fixed`.
    int index = 0;
    const CArg *pat = nullptr;
    const Argument *fixed = nullptr;
  };
  static constexpr int kFixed = -1000000;
  std::vector<Param> constrained;
  std::vector<std::string> keywords; ///< opaque ops only
  /// Commutative ops: layout indices of the two swappable tensor operands.
  int commA = -1, commB = -1;
};

struct CNode {
  const PatternNode *src = nullptr;
  std::vector<Accept> accepts;
  std::vector<CArg> args;
  std::vector<std::pair<std::string, CArg>> kwargs;
  bool optional = false;
  bool shared = false;
  unsigned passthroughArg = 0;
  int siteTarget = -1;     ///< "not produced by this op"
  int siteUse = -1;        ///< "used outside the match"
  std::string targetsText; ///< "torchao.dequantize_affine | ..." for messages
  /// Patterns the compiler adds: a legacy-only parameter the pattern cannot
  /// mention must keep its legacy default (zero_point_domain="INT"), or an
  /// old graph with different semantics would match. Deques: stable addresses.
  std::deque<ArgPattern> synthPatterns;
  std::deque<CArg> synthArgs;
};

/// A place where matching can fail, for explain and per-rule stats.
struct Site {
  SourceRange loc;
  std::string what; ///< short description: "quant_min", "where $D % $G == 0", "use of %dq"
};

/// A rewrite statement with expressions resolved.
struct CStmt {
  const RewriteStmt *src = nullptr;
  RewriteStmt::Kind kind = RewriteStmt::Kind::NewNode;
  std::vector<int> resultSlots;  ///< ConstTransform/Let: capture slots
  std::vector<int> resultValues; ///< NewNode/Forward: rewrite value indices (one per result)
  /// NewNode/Forward: for each result, the pattern value it replaces
  /// (patNode, result), or (-1, 0) for a fresh intermediate.
  std::vector<std::pair<int, int>> replaces;
  std::string target;   ///< NewNode: canonical target
  std::string baseName; ///< NewNode: op name, the base of fresh value names
  const OpSchema *schema = nullptr;
  const void *inferFn = nullptr; ///< NewNode: the schema's InferFn (resolved once)
  const ConstantTransform *transform = nullptr;
  std::vector<CExpr> args;
  std::vector<std::pair<std::string, CExpr>> kwargs;
  CExpr value; ///< Let, Forward (the forwarded value)
  /// ConstTransform whose non-tensor arguments are all literals: bound once
  /// at compile time (staging then skips evaluation and binding).
  std::optional<TransformArgs> literalArgs;
};

class CompiledRule {
public:
  const Rule &rule() const { return rule_; }
  std::size_t index = 0; ///< position in the rule set

  Rule rule_;
  std::vector<CNode> nodes;
  int root = 0;
  std::vector<std::string> slotNames; ///< capture slot -> name (without '$')
  std::vector<CExpr> where;
  std::vector<int> whereSites;
  /// The guards of rule().guardedTolerances, in order (verify-rules).
  std::vector<CExpr> toleranceGuards;
  std::vector<CStmt> rewrite;
  int numRewriteValues = 0;
  std::vector<std::string> rewriteValueNames;
  std::vector<Site> sites;
  /// Multi-root rules: how each extra root is found (Rule.h, RootSearch),
  /// in search order; the anchor capture's slot (-1: a pattern result) and
  /// the explain site of each.
  std::vector<RootSearch> rootSearches;
  std::vector<int> rootSearchSlots;
  std::vector<int> rootSearchSites;
  /// True for the pattern nodes that are roots (their results leave the match).
  bool isRoot(int patNode) const {
    if (patNode == root)
      return true;
    for (const RootSearch &rs : rootSearches)
      if (static_cast<int>(rs.root) == patNode)
        return true;
    return false;
  }
  /// Root schemas (and opaque root targets) this rule is indexed under.
  std::vector<const OpSchema *> rootSchemas;
  std::vector<std::string> rootOpaqueTargets;  ///< exact
  std::vector<std::string> rootOpaquePrefixes; ///< "ns.name."

  int addSite(SourceRange loc, std::string what) {
    sites.push_back({std::move(loc), std::move(what)});
    return static_cast<int>(sites.size()) - 1;
  }
  /// (patNode, result) of a pattern result name, or (-1, 0).
  std::pair<int, int> findResult(const std::string &name) const;
};

Expected<std::unique_ptr<CompiledRule>> compileRule(const Rule &rule, const OpRegistry &registry,
                                                    const ConstantTransformRegistry &transforms);

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

/// A capture: an argument of a matched node (values, ints, lists, dtypes
/// all live there), a dim of a matched value's shape, or a dtype.
struct Capture {
  enum class Kind : uint8_t { Unbound, Arg, Dim, DType };
  Kind kind = Kind::Unbound;
  const Argument *arg = nullptr;
  const Dim *dim = nullptr;
  DType dtype = DType::F32;
};

/// How a pattern node was matched.
struct NodeBinding {
  enum class Kind : uint8_t { Unbound, Node, Absent };
  Kind kind = Kind::Unbound;
  Node *node = nullptr;
  /// Absent optional node: the value its results[0] stands for.
  const Value *passthrough = nullptr;
};

/// The deepest failure seen for a candidate.
struct MatchFailure {
  int site = -1;
  int depth = -1;
  std::string message; ///< explain mode only
};

class Matcher {
public:
  explicit Matcher(const Graph &graph) : graph_(graph) {
    // Room for any ordinary match up front: a goal list that first outgrows
    // its block deep into a run asks malloc for a block above its small-bin
    // range, and glibc then merges every small block freed since the run
    // began (the erased nodes' argument lists): ~5 % of fusing 10^6 nodes,
    // spent in one such request.
    cells_.reserve(64);
    trail_.reserve(64);
  }

  /// Tries `rule` with `root` as the root node. On success the bindings of
  /// the match are available through nodes()/captures() until the next call.
  bool match(const CompiledRule &rule, Node *root);

  /// Record human-readable failure messages (explain); off by default.
  bool explain = false;
  const MatchFailure &failure() const { return failure_; }
  const std::vector<NodeBinding> &nodes() const { return nodes_; }
  const std::vector<Capture> &captures() const { return captures_; }

  /// Evaluates an expression against the current bindings; rewrite-bound
  /// values (Let / ConstTransform captures, new node results) come from
  /// `extraSlots` / `rewriteValues` when given.
  EvalValue eval(const CExpr &e, const std::vector<EvalValue> *extraSlots = nullptr,
                 const std::vector<EvalValue> *rewriteValues = nullptr) const;
  /// The graph value `e` names (a variable or pattern result bound to
  /// one), as eval(e, ...) would give it, without building an EvalValue;
  /// null when eval would give anything else.
  const Value *valueOf(const CExpr &e, const std::vector<EvalValue> *extraSlots,
                       const std::vector<EvalValue> *rewriteValues) const;
  /// The value of a capture slot under the current bindings.
  EvalValue slotValue(int slot) const;
  /// An integer-only predicate (int literals and captures, + - * // %,
  /// comparisons: `$K % $G == 0`) evaluated without building EvalValues.
  /// Returns false when `e` is not of that form or cannot be decided so
  /// (division by zero); else sets `truth`. eval() is the authority: this
  /// agrees with it wherever it answers.
  bool intPredicate(const CExpr &e, bool &truth) const;
  /// The value of pattern result (node, result) under the current bindings.
  const Value *patternValue(int patNode, int result) const;

  const Graph &graph() const { return graph_; }

private:
  struct Goal {
    /// Root: find the extra root rootSearches[patNode] from its anchor.
    enum class Kind : uint8_t { Arg, Node, Root } kind = Kind::Arg;
    int patNode = -1;                 ///< Node; Root: index into rootSearches
    Node *node = nullptr;             ///< Node: the graph node; Arg: the node owning the argument
    const CArg *pat = nullptr;        ///< Arg
    const Argument *arg = nullptr;    ///< Arg (never null: absent arguments are None)
    const OpSchema *layout = nullptr; ///< Arg: the signature `param` indexes
    int param = -1;                   ///< Arg: schema parameter index (messages)
    int elem = -1;                    ///< Arg: list element index (messages)
    int next = -1;
  };
  struct Undo {
    enum class Kind : uint8_t { Node, Slot } kind;
    int index;
    NodeBinding node;
    Capture capture;
  };

  int push(const Goal &g);
  bool solve(int goal, int depth);
  bool matchArg(const Goal &g, int depth);
  bool matchNode(const Goal &g, int depth);
  /// Walks up from the anchor's users along the search path and tries each
  /// node it reaches as the extra root (a few use lists: linear).
  bool matchRoot(const Goal &g, int depth);
  bool taken(const Node *n) const;
  bool matchValueConstraints(const Goal &g, const Value *v, int depth);
  /// `$x : scalar float|int`: the argument is a number, not a tensor value.
  bool matchScalar(const Goal &g, int depth);
  /// What a wildcard or variable asks of its argument before it binds:
  /// matchScalar, then matchValueConstraints for `param` or a type pattern
  /// (undoing the trail to `trailMark` when those fail).
  bool matchArgConstraints(const Goal &g, int depth, std::size_t trailMark);
  bool finish(int depth);
  bool bindSlot(int slot, const Capture &c, const Goal &g, int site, int depth);
  void undoTo(std::size_t mark);
  bool accepts(const CNode &n, const Node &node, const Accept **which) const;

  template <class MessageFn> void fail(int site, int depth, MessageFn &&message) {
    if (depth <= failure_.depth)
      return;
    failure_.depth = depth;
    failure_.site = site;
    if (explain)
      failure_.message = message();
  }
  std::string argLabel(const Goal &g) const;

  /// Min/max of a constant's data, computed once per run (values_in and
  /// all_zero on a tied weight read it once, not once per candidate).
  struct DataRange {
    bool hasData = false;
    bool numeric = false;
    bool hasNaN = false;
    double min = 0, max = 0;
  };
  const DataRange &dataRange(const Value *v) const;
  EvalValue evalCall(const CExpr &e, std::span<const EvalValue> args) const;
  EvalValue evalBinary(const CExpr &e, const EvalValue &a, const EvalValue &b) const;

  const Graph &graph_;
  mutable std::unordered_map<const Value *, DataRange> ranges_;
  const CompiledRule *rule_ = nullptr;
  std::vector<Goal> cells_;
  std::vector<Undo> trail_;
  std::vector<NodeBinding> nodes_;
  std::vector<Capture> captures_;
  MatchFailure failure_;
};

/// Evaluates a where-clause predicate result as a truth value; a failure
/// message when it is false or unknown.
bool truthy(const EvalValue &v);

/// Text of an expression as .pat spells it (messages and docs).
std::string exprText(const Expr &e);

} // namespace graft::rewrite::detail
