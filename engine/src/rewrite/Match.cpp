//===- Match.cpp - The backtracking matcher -------------------------------===//
//
// See Matcher.h for the design. The search is `solve(goal, depth)`: goal is
// the head of a persistent list of pending goals (indices into cells_), depth
// counts goals satisfied on the current path and ranks failures for explain
// ("the deepest failing check"). Choice points save the trail and arena
// marks, try an alternative, and undo both when it fails.
//
//===----------------------------------------------------------------------===//
#include "Matcher.h"
#include "RewriteUtil.h"

#include "graft/ops/BoundArgs.h"
#include "graft/ops/ShapeInference.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace graft::rewrite::detail {

namespace {

const Argument &noneArg() {
  static const Argument kNone;
  return kNone;
}

/// Literal pattern vs node argument. Ints and floats compare numerically
/// (a pattern `1` matches an argument `1.0`); everything else exactly.
bool literalMatches(const Argument &lit, const Argument &arg) {
  switch (lit.kind()) {
  case Argument::Kind::Int:
    if (arg.isInt())
      return arg.integer() == lit.integer();
    if (arg.isFloat())
      return arg.floating() == static_cast<double>(lit.integer());
    return false;
  case Argument::Kind::Float:
    if (arg.isFloat())
      return arg.floating() == lit.floating() ||
             (std::isnan(arg.floating()) && std::isnan(lit.floating()));
    if (arg.isInt())
      return static_cast<double>(arg.integer()) == lit.floating();
    return false;
  case Argument::Kind::List: {
    if (!arg.isList() || arg.list().size() != lit.list().size())
      return false;
    for (std::size_t i = 0; i < lit.list().size(); ++i)
      if (!literalMatches(lit.list()[i], arg.list()[i]))
        return false;
    return true;
  }
  default:
    return lit == arg;
  }
}

/// The Dim an Int argument or SymInt value stands for.
std::optional<Dim> argDim(const Argument &a) {
  return argumentDim(a);
}

bool capturesEqual(const Capture &a, const Capture &b) {
  using K = Capture::Kind;
  if (a.kind == K::DType || b.kind == K::DType) {
    DType da, db;
    if (a.kind == K::DType)
      da = a.dtype;
    else if (a.kind == K::Arg && a.arg->isDType())
      da = a.arg->dtype();
    else
      return false;
    if (b.kind == K::DType)
      db = b.dtype;
    else if (b.kind == K::Arg && b.arg->isDType())
      db = b.arg->dtype();
    else
      return false;
    return da == db;
  }
  if (a.kind == K::Arg && b.kind == K::Arg) {
    if (*a.arg == *b.arg)
      return true;
    // An Int and a SymInt value naming the same dim are the same capture.
    auto da = argDim(*a.arg), db = argDim(*b.arg);
    return da && db && *da == *db;
  }
  std::optional<Dim> da = a.kind == K::Dim ? std::optional<Dim>(*a.dim) : argDim(*a.arg);
  std::optional<Dim> db = b.kind == K::Dim ? std::optional<Dim>(*b.dim) : argDim(*b.arg);
  return da && db && *da == *db;
}

std::string captureText(const Capture &c) {
  switch (c.kind) {
  case Capture::Kind::Arg:
    return formatArgument(*c.arg);
  case Capture::Kind::Dim:
    return c.dim->str();
  case Capture::Kind::DType:
    return std::string(name(c.dtype));
  case Capture::Kind::Unbound:
    break;
  }
  return "<unbound>";
}

std::string producerText(const Value *v) {
  if (!v)
    return "nothing";
  if (const Node *p = v->producer())
    return "%" + v->name() + " is produced by " + p->target();
  return "%" + v->name() + " is a graph input";
}

/// Which signature a node's arguments follow (-1: current; k: legacy k).
int layoutOf(const Node &node, const OpSchema &schema) {
  if (schema.legacySchemas.empty())
    return -1;
  // Counts and keyword names first, then argument kinds (an old call spelled
  // positionally can have the current arity with a string where the current
  // signature has a dtype).
  auto fits = [&](const OpSchema &s) {
    if (node.args().size() > s.numPositional())
      return false;
    for (std::size_t i = 0; i < node.args().size(); ++i)
      if (!argumentMatchesType(node.args()[i], s.args[i].type))
        return false;
    for (const auto &kv : node.kwargs()) {
      int idx = s.argIndex(kv.first);
      if (idx < 0 || !argumentMatchesType(kv.second, s.args[static_cast<std::size_t>(idx)].type))
        return false;
    }
    return true;
  };
  if (fits(schema))
    return -1;
  for (std::size_t k = 0; k < schema.legacySchemas.size(); ++k)
    if (fits(schema.legacySchemas[k]))
      return static_cast<int>(k);
  return -1;
}

/// The argument a node passes for parameter `index` of its signature
/// `layout` (the default when left out).
const Argument *layoutArg(const Node &node, const OpSchema &layout, int index) {
  if (static_cast<std::size_t>(index) < node.args().size())
    return &node.args()[static_cast<std::size_t>(index)];
  const SchemaArg &p = layout.args[static_cast<std::size_t>(index)];
  if (!node.kwargs().empty())
    if (const Argument *kw = node.kwarg(p.name))
      return kw;
  return p.defaultValue ? &*p.defaultValue : &noneArg();
}

/// The argument a node passes for layout parameter `index` (its default
/// when left out; None when not given at all).
const Argument *nodeArg(const Node &node, const Accept &a, int index) {
  if (!a.layoutSchema) {
    if (index >= 0)
      return static_cast<std::size_t>(index) < node.args().size()
                 ? &node.args()[static_cast<std::size_t>(index)]
                 : &noneArg();
    const Argument *kw = node.kwarg(a.keywords[static_cast<std::size_t>(-1 - index)]);
    return kw ? kw : &noneArg();
  }
  return layoutArg(node, *a.layoutSchema, index);
}

/// The ends of each integer dtype's quantization range as Arguments, built
/// once: the matcher hands out pointers to arguments, never copies.
const Argument *quantRangeEnd(DType dtype, bool max) {
  static const auto kTable = [] {
    std::array<std::array<Argument, 2>, kNumDTypes> t;
    for (int i = 0; i < kNumDTypes; ++i)
      if (auto b = integerBounds(static_cast<DType>(i)))
        t[static_cast<std::size_t>(i)] = {Argument(b->first), Argument(b->second)};
    return t;
  }();
  const Argument &end = kTable[static_cast<std::size_t>(dtype)][max ? 1 : 0];
  return end.isNone() ? nullptr : &end;
}

/// What a None at parameter `index` of `node` stands for when its schema
/// declares it (`none_means` in the op YAML: torchao's quant_min/quant_max
/// default to the quant dtype's range), or null. Rules state the meaning
/// (`i8, -128, 127`); an exporter may spell it None or leave it out.
const Argument *noneMeaning(const Node &node, const OpSchema *layout, int index) {
  if (!layout || index < 0 || static_cast<std::size_t>(index) >= layout->args.size())
    return nullptr;
  const SchemaArg &p = layout->args[static_cast<std::size_t>(index)];
  if (p.noneRangeOf < 0)
    return nullptr;
  const Argument *dt = layoutArg(node, *layout, p.noneRangeOf);
  return dt->isDType() ? quantRangeEnd(dt->dtype(), p.noneRangeMax) : nullptr;
}

} // namespace

//===----------------------------------------------------------------------===//
// Matcher
//===----------------------------------------------------------------------===//

int Matcher::push(const Goal &g) {
  cells_.push_back(g);
  return static_cast<int>(cells_.size()) - 1;
}

void Matcher::undoTo(std::size_t mark) {
  while (trail_.size() > mark) {
    Undo &u = trail_.back();
    if (u.kind == Undo::Kind::Node)
      nodes_[static_cast<std::size_t>(u.index)] = u.node;
    else
      captures_[static_cast<std::size_t>(u.index)] = u.capture;
    trail_.pop_back();
  }
}

bool Matcher::match(const CompiledRule &rule, Node *root) {
  rule_ = &rule;
  cells_.clear();
  trail_.clear();
  nodes_.assign(rule.nodes.size(), NodeBinding());
  captures_.assign(rule.slotNames.size(), Capture());
  failure_ = MatchFailure();
  const CNode &rn = rule.nodes[static_cast<std::size_t>(rule.root)];
  const Accept *acc = nullptr;
  if (!accepts(rn, *root, &acc)) {
    fail(rn.siteTarget, 0, [&] {
      return "expected " + rn.targetsText + ", node %" + root->name() + " is " + root->target();
    });
    return false;
  }
  nodes_[static_cast<std::size_t>(rule.root)] = {NodeBinding::Kind::Node, root, nullptr};
  // A multi-root rule continues with its other roots once the first root's
  // subtree is bound (their anchors are in it).
  int next = -1;
  for (std::size_t i = rule.rootSearches.size(); i-- > 0;) {
    Goal r;
    r.kind = Goal::Kind::Root;
    r.patNode = static_cast<int>(i);
    r.next = next;
    next = push(r);
  }
  Goal g;
  g.kind = Goal::Kind::Node;
  g.patNode = rule.root;
  g.node = root;
  g.next = next;
  return solve(push(g), 1);
}

bool Matcher::taken(const Node *n) const {
  for (const NodeBinding &b : nodes_)
    if (b.kind == NodeBinding::Kind::Node && b.node == n)
      return true;
  return false;
}

bool Matcher::matchRoot(const Goal &g, int depth) {
  const std::size_t i = static_cast<std::size_t>(g.patNode);
  const RootSearch &rs = rule_->rootSearches[i];
  const int slot = rule_->rootSearchSlots[i];
  const int site = rule_->rootSearchSites[i];
  const CNode &rn = rule_->nodes[rs.root];
  const Value *anchor = nullptr;
  std::string anchorName;
  if (slot >= 0) {
    const Capture &c = captures_[static_cast<std::size_t>(slot)];
    if (c.kind == Capture::Kind::Arg && c.arg->isValue())
      anchor = c.arg->value();
    anchorName = "$" + rule_->slotNames[static_cast<std::size_t>(slot)];
  } else {
    anchor = patternValue(static_cast<int>(rs.anchorNode), static_cast<int>(rs.anchorResult));
    anchorName = "%" + rule_->rule().nodes[rs.anchorNode].results[rs.anchorResult];
  }
  if (!anchor) {
    fail(site, depth, [&] {
      return rule_->sites[static_cast<std::size_t>(site)].what + ": the shared " + anchorName +
             " is not bound to a graph value, so nothing leads to this root";
    });
    return false;
  }
  // Up the path: the users of the anchor the first path node accepts, then
  // the users of their results the next one accepts, and so on.
  std::vector<Node *> frontier, up;
  auto addAccepted = [&](std::vector<Node *> &to, const Value *v, std::size_t patNode) {
    const Accept *acc = nullptr;
    for (Node *u : v->users())
      if (accepts(rule_->nodes[patNode], *u, &acc) &&
          std::find(to.begin(), to.end(), u) == to.end())
        to.push_back(u);
  };
  addAccepted(frontier, anchor, rs.path.front().first);
  for (std::size_t k = 1; k < rs.path.size() && !frontier.empty(); ++k) {
    up.clear();
    for (const Node *f : frontier)
      if (rs.path[k].second < f->numOutputs())
        addAccepted(up, f->output(rs.path[k].second), rs.path[k].first);
    frontier.swap(up);
  }
  std::size_t trailMark = trail_.size(), cellMark = cells_.size();
  bool tried = false;
  for (Node *c : frontier) {
    if (taken(c))
      continue;
    tried = true;
    trail_.push_back({Undo::Kind::Node, static_cast<int>(rs.root), nodes_[rs.root], {}});
    nodes_[rs.root] = {NodeBinding::Kind::Node, c, nullptr};
    Goal ng;
    ng.kind = Goal::Kind::Node;
    ng.patNode = static_cast<int>(rs.root);
    ng.node = c;
    ng.next = g.next;
    if (solve(push(ng), depth + 1))
      return true;
    undoTo(trailMark);
    cells_.resize(cellMark);
  }
  if (!tried)
    fail(site, depth, [&] {
      std::string through;
      for (std::size_t k = 0; k + 1 < rs.path.size(); ++k)
        through += (k ? " -> " : "") + rule_->nodes[rs.path[k].first].targetsText;
      return rule_->sites[static_cast<std::size_t>(site)].what + ": no unmatched " +
             rn.targetsText + " is reached from " + anchorName + " (%" +
             std::string(anchor->name()) + ")" + (through.empty() ? "" : " through " + through) +
             "; the roots of a match must share it";
    });
  return false;
}

bool Matcher::accepts(const CNode &n, const Node &node, const Accept **which) const {
  const OpSchema *s = node.schema();
  // Worked out once per node (layoutOf reads every argument), on the first
  // alternative that needs it.
  int layout = node.signatureHint();
  for (const Accept &a : n.accepts) {
    if (a.schema) {
      if (a.schema != s)
        continue;
      if (layout == Node::kSignatureUnknown) {
        layout = layoutOf(node, *s);
        node.setSignatureHint(layout);
      }
      if (a.layout != layout)
        continue;
    } else {
      if (s)
        continue;
      const std::string &t = node.target();
      if (!a.target.empty() ? t != a.target : t.compare(0, a.prefix.size(), a.prefix) != 0)
        continue;
    }
    *which = &a;
    return true;
  }
  return false;
}

std::string Matcher::argLabel(const Goal &g) const {
  std::string label;
  if (g.layout && g.param >= 0 && static_cast<std::size_t>(g.param) < g.layout->args.size())
    label = g.layout->args[static_cast<std::size_t>(g.param)].name;
  else if (g.pat && g.pat->site >= 0)
    label = rule_->sites[static_cast<std::size_t>(g.pat->site)].what;
  else
    label = "argument";
  if (g.elem >= 0)
    label += "[" + std::to_string(g.elem) + "]";
  return label;
}

bool Matcher::solve(int goal, int depth) {
  if (goal < 0)
    return finish(depth);
  Goal g = cells_[static_cast<std::size_t>(goal)];
  if (g.kind == Goal::Kind::Node)
    return matchNode(g, depth);
  if (g.kind == Goal::Kind::Root)
    return matchRoot(g, depth);
  return matchArg(g, depth);
}

bool Matcher::matchNode(const Goal &g, int depth) {
  const CNode &cn = rule_->nodes[static_cast<std::size_t>(g.patNode)];
  const Accept *acc = nullptr;
  if (!accepts(cn, *g.node, &acc)) {
    fail(cn.siteTarget, depth, [&] {
      return "expected " + cn.targetsText + ", node %" + g.node->name() + " is " + g.node->target();
    });
    return false;
  }
  if (cn.src->results.size() > g.node->numOutputs()) {
    fail(cn.siteTarget, depth, [&] {
      return "pattern names " + std::to_string(cn.src->results.size()) + " results, node %" +
             g.node->name() + " has " + std::to_string(g.node->numOutputs());
    });
    return false;
  }
  int orientations = acc->commA >= 0 ? 2 : 1;
  std::size_t trailMark = trail_.size(), cellMark = cells_.size();
  for (int o = 0; o < orientations; ++o) {
    int next = g.next;
    // Push in reverse so the first argument is examined first.
    for (auto it = acc->constrained.rbegin(); it != acc->constrained.rend(); ++it) {
      Goal a;
      a.kind = Goal::Kind::Arg;
      a.node = g.node;
      a.pat = it->pat;
      int idx = it->index;
      if (o == 1) {
        if (idx == acc->commA)
          idx = acc->commB;
        else if (idx == acc->commB)
          idx = acc->commA;
      }
      a.param = idx == Accept::kFixed ? -1 : idx;
      a.layout = acc->layoutSchema;
      a.arg = idx == Accept::kFixed ? (it->fixed ? it->fixed : &noneArg())
                                    : nodeArg(*g.node, *acc, idx);
      if (a.arg->isNone())
        if (const Argument *meant = noneMeaning(*g.node, acc->layoutSchema, a.param))
          a.arg = meant;
      a.next = next;
      next = push(a);
    }
    if (solve(next, depth + 1))
      return true;
    undoTo(trailMark);
    cells_.resize(cellMark);
  }
  return false;
}

bool Matcher::bindSlot(int slot, const Capture &c, const Goal &g, int site, int depth) {
  Capture &cur = captures_[static_cast<std::size_t>(slot)];
  if (cur.kind == Capture::Kind::Unbound) {
    trail_.push_back({Undo::Kind::Slot, slot, {}, cur});
    cur = c;
    return true;
  }
  if (capturesEqual(cur, c))
    return true;
  fail(site, depth, [&] {
    return argLabel(g) + ": $" + rule_->slotNames[static_cast<std::size_t>(slot)] +
           " is already bound to " + captureText(cur) + ", node %" +
           (g.node ? g.node->name() : std::string("?")) + " has " + captureText(c);
  });
  return false;
}

bool Matcher::matchValueConstraints(const Goal &g, const Value *v, int depth) {
  const CArg &p = *g.pat;
  if (p.mustBeParam) {
    const GraphInput *in = v ? graph_.inputFor(v) : nullptr;
    if (!in || !in->isConstant() || in->fqn.empty()) {
      fail(p.site, depth, [&] {
        return argLabel(g) + ": expected a constant parameter, " +
               (v ? producerText(v) : std::string("got ") + formatArgument(*g.arg));
      });
      return false;
    }
  }
  if (!p.type)
    return true;
  const TypePattern &t = *p.type;
  if (!v || !v->isTensor()) {
    fail(p.site, depth,
         [&] { return argLabel(g) + ": expected a tensor, got " + formatArgument(*g.arg); });
    return false;
  }
  const TensorProto &proto = v->proto();
  if (t.dtype && proto.dtype != *t.dtype) {
    fail(p.site, depth, [&] {
      return argLabel(g) + ": expected dtype " + std::string(name(*t.dtype)) + ", %" + v->name() +
             " is " + std::string(name(proto.dtype));
    });
    return false;
  }
  if (p.dtypeSlot >= 0) {
    Capture c;
    c.kind = Capture::Kind::DType;
    c.dtype = proto.dtype;
    if (!bindSlot(p.dtypeSlot, c, g, p.site, depth))
      return false;
  }
  bool trailing = t.leadingEllipsis || (t.anyRank && !t.dims.empty());
  if (t.anyRank && !trailing)
    return true;
  std::size_t rank = proto.shape.size();
  if (trailing ? rank < t.dims.size() : rank != t.dims.size()) {
    fail(p.site, depth, [&] {
      return argLabel(g) + ": expected rank " + (trailing ? ">= " : "") +
             std::to_string(t.dims.size()) + ", %" + v->name() + " is " + proto.str();
    });
    return false;
  }
  std::size_t offset = rank - t.dims.size();
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    const DimPattern &dp = t.dims[i];
    const Dim &d = proto.shape[offset + i];
    if (dp.kind == DimPattern::Kind::Literal) {
      if (!d.isConstant() || d.constant() != dp.value) {
        fail(p.site, depth, [&] {
          return argLabel(g) + ": expected dim " + std::to_string(offset + i) + " to be " +
                 std::to_string(dp.value) + ", %" + v->name() + " is " + proto.str();
        });
        return false;
      }
    } else if (dp.kind == DimPattern::Kind::Var) {
      Capture c;
      c.kind = Capture::Kind::Dim;
      c.dim = &d;
      if (!bindSlot(p.dimSlots[i], c, g, p.site, depth))
        return false;
    }
  }
  return true;
}

bool Matcher::matchScalar(const Goal &g, int depth) {
  const CArg &p = *g.pat;
  const Argument &arg = *g.arg;
  bool ok = p.scalar == ArgPattern::Scalar::Int ? arg.isInt() : arg.isInt() || arg.isFloat();
  if (ok)
    return true;
  fail(p.site, depth, [&] {
    std::string want = p.scalar == ArgPattern::Scalar::Int ? "an int" : "a number";
    std::string got = arg.isValue() && arg.value()->isTensor()
                          ? "a tensor (" + producerText(arg.value()) + ")"
                          : formatArgument(arg);
    return argLabel(g) + ": expected " + want + ", got " + got;
  });
  return false;
}

bool Matcher::matchArgConstraints(const Goal &g, int depth, std::size_t trailMark) {
  const CArg &p = *g.pat;
  if (p.scalar != ArgPattern::Scalar::None && !matchScalar(g, depth))
    return false;
  if ((p.mustBeParam || p.type) &&
      !matchValueConstraints(g, g.arg->isValue() ? g.arg->value() : nullptr, depth)) {
    undoTo(trailMark);
    return false;
  }
  return true;
}

bool Matcher::matchArg(const Goal &g, int depth) {
  const CArg &p = *g.pat;
  const Argument &arg = *g.arg;
  std::size_t trailMark = trail_.size(), cellMark = cells_.size();
  switch (p.kind) {
  case ArgPattern::Kind::Wildcard: {
    if (!matchArgConstraints(g, depth, trailMark))
      return false;
    if (solve(g.next, depth + 1))
      return true;
    undoTo(trailMark);
    return false;
  }
  case ArgPattern::Kind::Var: {
    if (!matchArgConstraints(g, depth, trailMark))
      return false;
    Capture c;
    c.kind = Capture::Kind::Arg;
    c.arg = &arg;
    if (!bindSlot(p.slot, c, g, p.site, depth)) {
      undoTo(trailMark);
      return false;
    }
    if (solve(g.next, depth + 1))
      return true;
    undoTo(trailMark);
    return false;
  }
  case ArgPattern::Kind::Literal: {
    // A None in the pattern (an omitted default) means what the node's None
    // would: compare it by that meaning too.
    const Argument *lit = &p.src->literal;
    if (lit->isNone() && g.node)
      if (const Argument *meant = noneMeaning(*g.node, g.layout, g.param))
        lit = meant;
    if (!literalMatches(*lit, arg)) {
      fail(p.site, depth, [&] {
        // Say when the node's value is a None read by its meaning.
        std::string has = formatArgument(arg);
        if (g.node && g.layout && g.param >= 0 && !arg.isNone() &&
            layoutArg(*g.node, *g.layout, g.param)->isNone())
          has = "none (meaning " + has + ")";
        return argLabel(g) + ": expected " + formatArgument(p.src->literal) + ", node %" +
               (g.node ? g.node->name() : std::string("?")) + " has " + has;
      });
      return false;
    }
    return solve(g.next, depth + 1);
  }
  case ArgPattern::Kind::List: {
    if (!arg.isList() || arg.list().size() != p.elements.size()) {
      fail(p.site, depth, [&] {
        return argLabel(g) + ": expected a list of " + std::to_string(p.elements.size()) +
               ", node %" + (g.node ? g.node->name() : std::string("?")) + " has " +
               formatArgument(arg);
      });
      return false;
    }
    int next = g.next;
    for (std::size_t i = p.elements.size(); i-- > 0;) {
      Goal e = g;
      e.pat = &p.elements[i];
      e.arg = &arg.list()[i];
      e.elem = static_cast<int>(i);
      e.next = next;
      next = push(e);
    }
    if (solve(next, depth + 1))
      return true;
    undoTo(trailMark);
    cells_.resize(cellMark);
    return false;
  }
  case ArgPattern::Kind::Alternatives: {
    for (const CArg &alt : p.elements) {
      Goal a = g;
      a.pat = &alt;
      if (solve(push(a), depth + 1))
        return true;
      undoTo(trailMark);
      cells_.resize(cellMark);
    }
    return false;
  }
  case ArgPattern::Kind::PatResult: {
    const CNode &cn = rule_->nodes[static_cast<std::size_t>(p.patNode)];
    NodeBinding &nb = nodes_[static_cast<std::size_t>(p.patNode)];
    const Value *v = arg.isValue() ? arg.value() : nullptr;
    auto checkType = [&]() { return !p.type || matchValueConstraints(g, v, depth); };
    if (nb.kind != NodeBinding::Kind::Unbound) {
      const Value *expected = nb.kind == NodeBinding::Kind::Node
                                  ? nb.node->output(static_cast<unsigned>(p.result))
                                  : nb.passthrough;
      if (v != expected) {
        fail(p.site, depth, [&] {
          return argLabel(g) + ": expected %" + (expected ? expected->name().str() : "?") +
                 " (matched before), node %" + (g.node ? g.node->name() : std::string("?")) +
                 " has " + formatArgument(arg);
        });
        return false;
      }
      if (!checkType()) {
        undoTo(trailMark);
        return false;
      }
      if (solve(g.next, depth + 1))
        return true;
      undoTo(trailMark);
      return false;
    }
    // Present: the value is result p.result of a node the pattern node matches.
    Node *producer = v ? v->producer() : nullptr;
    const Accept *acc = nullptr;
    if (producer && v->resultIndex() == static_cast<unsigned>(p.result) &&
        accepts(cn, *producer, &acc)) {
      if (!taken(producer) && checkType()) {
        trail_.push_back({Undo::Kind::Node, p.patNode, nb, {}});
        nodes_[static_cast<std::size_t>(p.patNode)] = {NodeBinding::Kind::Node, producer, nullptr};
        Goal ng;
        ng.kind = Goal::Kind::Node;
        ng.patNode = p.patNode;
        ng.node = producer;
        ng.next = g.next;
        if (solve(push(ng), depth + 1))
          return true;
      }
      undoTo(trailMark);
      cells_.resize(cellMark);
    } else {
      fail(cn.siteTarget, depth, [&] {
        std::string got = v ? producerText(v) : "got " + formatArgument(arg);
        if (producer && v->resultIndex() != static_cast<unsigned>(p.result) && producer->schema())
          got = "%" + v->name() + " is result " + std::to_string(v->resultIndex()) + " of %" +
                producer->name();
        return argLabel(g) + ": expected a value produced by " + cn.targetsText + ", " + got;
      });
    }
    if (cn.optional && v) {
      // Absent: the optional node's results[0] is this value, and the
      // pattern of its passthrough argument applies to it directly.
      trail_.push_back({Undo::Kind::Node, p.patNode, nb, {}});
      nodes_[static_cast<std::size_t>(p.patNode)] = {NodeBinding::Kind::Absent, nullptr, v};
      if (checkType()) {
        Goal a = g;
        a.pat = &cn.args[cn.passthroughArg];
        if (solve(push(a), depth + 1))
          return true;
      }
      undoTo(trailMark);
      cells_.resize(cellMark);
    }
    return false;
  }
  }
  return false;
}

bool Matcher::finish(int depth) {
  // Use constraints: an interior node whose results are used outside the
  // match would have to stay alive next to the fused node (duplicated work,
  // or worse, a rewrite that silently drops a use) unless marked `shared`.
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (rule_->isRoot(static_cast<int>(i)) || nodes_[i].kind != NodeBinding::Kind::Node)
      continue;
    const CNode &cn = rule_->nodes[i];
    if (cn.shared)
      continue;
    const Node *n = nodes_[i].node;
    for (const Value *out : n->outputs()) {
      if (out->isGraphOutput()) {
        fail(cn.siteUse, depth, [&] {
          return "%" + out->name() + " is a graph output, so node %" + n->name() +
                 " cannot be fused (mark it `shared` to keep it)";
        });
        return false;
      }
      for (const Node *u : out->users()) {
        bool inside = false;
        for (const NodeBinding &b : nodes_)
          if (b.kind == NodeBinding::Kind::Node && b.node == u) {
            inside = true;
            break;
          }
        if (!inside) {
          fail(cn.siteUse, depth, [&] {
            return "%" + out->name() + " is also used by %" + u->name() + " (" + u->target() +
                   ") outside the match (mark the node `shared` to allow this)";
          });
          return false;
        }
      }
    }
  }
  for (std::size_t i = 0; i < rule_->where.size(); ++i) {
    // Integer predicates that hold need no EvalValue; the rest (and any
    // that fail, which need their explanation) go through eval().
    bool truth = false;
    if (intPredicate(rule_->where[i], truth) && truth)
      continue;
    EvalValue v = eval(rule_->where[i]);
    if (!truthy(v)) {
      int site = rule_->whereSites[i];
      fail(site, depth + 1 + static_cast<int>(i), [&] {
        std::string msg = rule_->sites[static_cast<std::size_t>(site)].what + ": ";
        if (v.kind == EvalValue::Kind::Unknown)
          return msg + "cannot decide: " + v.s;
        if (!v.s.empty())
          return msg + v.s;
        return msg + "is " + v.str();
      });
      return false;
    }
  }
  return true;
}

const Value *Matcher::patternValue(int patNode, int result) const {
  if (patNode < 0 || static_cast<std::size_t>(patNode) >= nodes_.size())
    return nullptr;
  const NodeBinding &b = nodes_[static_cast<std::size_t>(patNode)];
  if (b.kind == NodeBinding::Kind::Node)
    return static_cast<unsigned>(result) < b.node->numOutputs()
               ? b.node->output(static_cast<unsigned>(result))
               : nullptr;
  if (b.kind == NodeBinding::Kind::Absent)
    return b.passthrough;
  return nullptr;
}

} // namespace graft::rewrite::detail
