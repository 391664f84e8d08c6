//===- Compile.cpp - Rules to matchers: names, overloads, slots -----------===//
//
// compileRule resolves everything the matcher would otherwise look up by
// name at match time: pattern targets to OpSchema pointers (all overloads for
// an overload-insensitive `ns.name`, each legacy argument layout too),
// pattern arguments to schema parameter indices, captures to slots,
// expressions to slots/builtins/transforms, rewrite targets to schemas. The
// DSL front end has already checked rules; these checks still run so a Rule
// built in C++ (or a front-end bug) becomes a located diagnostic, never a
// crash.
//
//===----------------------------------------------------------------------===//
#include "Matcher.h"
#include "RewriteUtil.h"

#include "graft/ops/OpSchema.h"
#include "graft/ops/ShapeInference.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

namespace graft::rewrite::detail {

namespace {

std::string bare(const std::string &name) {
  if (!name.empty() && (name[0] == '$' || name[0] == '%'))
    return name.substr(1);
  return name;
}

Diagnostic errorAt(const SourceRange &loc, const std::string &message) {
  if (loc.begin.valid())
    return Diagnostic::error(loc, message);
  return Diagnostic::error(message);
}

std::optional<BinOp> parseBinOp(const std::string &op) {
  static const std::pair<const char *, BinOp> kOps[] = {
      {"+", BinOp::Add},       {"-", BinOp::Sub},       {"*", BinOp::Mul}, {"/", BinOp::Div},
      {"//", BinOp::FloorDiv}, {"%", BinOp::Mod},       {"==", BinOp::Eq}, {"!=", BinOp::Ne},
      {"<", BinOp::Lt},        {"<=", BinOp::Le},       {">", BinOp::Gt},  {">=", BinOp::Ge},
      {"&&", BinOp::And},      {"and", BinOp::And},     {"||", BinOp::Or}, {"or", BinOp::Or},
      {"in", BinOp::In},       {"not in", BinOp::NotIn}};
  for (const auto &[text, b] : kOps)
    if (op == text)
      return b;
  return std::nullopt;
}

class RuleCompiler {
public:
  RuleCompiler(CompiledRule &cr, const OpRegistry &registry,
               const ConstantTransformRegistry &transforms)
      : cr_(cr), rule_(cr.rule_), registry_(registry), transforms_(transforms) {}

  Status run();

private:
  int slot(const std::string &name, bool create) {
    std::string n = bare(name);
    auto it = slots_.find(n);
    if (it != slots_.end())
      return it->second;
    if (!create)
      return -1;
    int s = static_cast<int>(cr_.slotNames.size());
    cr_.slotNames.push_back(n);
    slots_[n] = s;
    return s;
  }

  Status compileNodes();
  Expected<CArg> compileArg(const ArgPattern &p, std::size_t nodeIndex);
  Status compileAccepts(std::size_t nodeIndex);
  Status checkConnected();
  Expected<CExpr> compileExpr(const Expr &e, bool inRewrite, const ConstantTransform *enumCtx);
  Status compileRewrite();
  void assignSites(CArg &arg, const std::string &label);

  CompiledRule &cr_;
  const Rule &rule_;
  const OpRegistry &registry_;
  const ConstantTransformRegistry &transforms_;
  std::unordered_map<std::string, int> slots_;
  std::unordered_map<std::string, std::pair<int, int>> results_;
  /// Names defined by earlier rewrite statements -> rewrite value index.
  std::unordered_map<std::string, int> rewriteValues_;
};

Expected<CArg> RuleCompiler::compileArg(const ArgPattern &p, std::size_t nodeIndex) {
  CArg c;
  c.kind = p.kind;
  c.src = &p;
  c.mustBeParam = p.mustBeParam;
  c.scalar = p.scalar;
  if (p.type) {
    c.type = &*p.type;
    if (!p.type->dtypeVar.empty())
      c.dtypeSlot = slot(p.type->dtypeVar, true);
    for (const DimPattern &d : p.type->dims)
      c.dimSlots.push_back(d.kind == DimPattern::Kind::Var ? slot(d.var, true) : -1);
  }
  switch (p.kind) {
  case ArgPattern::Kind::Var:
    if (bare(p.name).empty())
      return errorAt(p.loc, "a capture needs a name");
    c.slot = slot(p.name, true);
    break;
  case ArgPattern::Kind::PatResult: {
    auto it = results_.find(bare(p.name));
    if (it == results_.end())
      return errorAt(p.loc, "%" + bare(p.name) + " is not the result of a pattern node");
    if (static_cast<std::size_t>(it->second.first) >= nodeIndex)
      return errorAt(p.loc, "%" + bare(p.name) +
                                " is used before the pattern node that defines it (pattern "
                                "nodes must be in dependency order)");
    c.patNode = it->second.first;
    c.result = it->second.second;
    break;
  }
  case ArgPattern::Kind::List:
  case ArgPattern::Kind::Alternatives:
    if (p.kind == ArgPattern::Kind::Alternatives && p.elements.empty())
      return errorAt(p.loc, "an alternative pattern needs at least one alternative");
    for (const ArgPattern &e : p.elements) {
      GRAFT_TRY(CArg ce, compileArg(e, nodeIndex));
      c.elements.push_back(std::move(ce));
    }
    break;
  case ArgPattern::Kind::Wildcard:
  case ArgPattern::Kind::Literal:
    break;
  }
  return c;
}

void RuleCompiler::assignSites(CArg &arg, const std::string &label) {
  std::string what = label;
  if (arg.kind == ArgPattern::Kind::Var)
    what += " ($" + cr_.slotNames[static_cast<std::size_t>(arg.slot)] + ")";
  arg.site = cr_.addSite(arg.src->loc, what);
  for (std::size_t i = 0; i < arg.elements.size(); ++i)
    assignSites(arg.elements[i],
                arg.kind == ArgPattern::Kind::List ? label + "[" + std::to_string(i) + "]" : label);
}

/// Whether `name` is a two-part "ns.name" (any overload) or three-part target.
int dotCount(const std::string &t) {
  return static_cast<int>(std::count(t.begin(), t.end(), '.'));
}

Status RuleCompiler::compileAccepts(std::size_t ni) {
  const PatternNode &pn = rule_.nodes[ni];
  CNode &cn = cr_.nodes[ni];
  std::string text;
  for (const std::string &t : pn.targets) {
    if (!text.empty())
      text += " | ";
    text += t;
  }
  cn.targetsText = text;
  std::vector<std::string> failures;
  for (const std::string &target : pn.targets) {
    int dots = dotCount(target);
    if (dots != 1 && dots != 2)
      return errorAt(pn.loc, "op '" + target + "' must be spelled ns.name or ns.name.overload");
    std::vector<const OpSchema *> schemas;
    if (dots == 2) {
      if (const OpSchema *s = registry_.lookup(target))
        schemas.push_back(s);
    } else {
      schemas = registry_.overloads(target);
    }
    if (schemas.empty()) {
      // An op the registry does not know: match nodes by their target text,
      // arguments positionally and by keyword as written.
      Accept a;
      if (dots == 2)
        a.target = target;
      else
        a.prefix = target + ".";
      for (std::size_t i = 0; i < cn.args.size(); ++i)
        a.constrained.push_back({static_cast<int>(i), &cn.args[i], nullptr});
      for (std::size_t k = 0; k < cn.kwargs.size(); ++k) {
        a.keywords.push_back(cn.kwargs[k].first);
        a.constrained.push_back({-1 - static_cast<int>(k), &cn.kwargs[k].second, nullptr});
      }
      cn.accepts.push_back(std::move(a));
      continue;
    }
    for (const OpSchema *s : schemas) {
      for (int layout = -1; layout < static_cast<int>(s->legacySchemas.size()); ++layout) {
        const OpSchema &ls = layout < 0 ? *s : s->legacySchemas[static_cast<std::size_t>(layout)];
        Accept a;
        a.schema = s;
        a.layout = layout;
        a.layoutSchema = &ls;
        std::string why;
        auto place = [&](const std::string &paramName, const CArg *pat) -> bool {
          int idx = ls.argIndex(paramName);
          if (idx >= 0) {
            a.constrained.push_back({idx, pat, nullptr});
            return true;
          }
          if (layout < 0)
            return false;
          // A parameter the legacy signature lacks: the node cannot pass it,
          // so it behaves as the current signature's default.
          int cur = s->argIndex(paramName);
          const Argument *def = cur >= 0 && s->args[static_cast<std::size_t>(cur)].defaultValue
                                    ? &*s->args[static_cast<std::size_t>(cur)].defaultValue
                                    : nullptr;
          a.constrained.push_back({Accept::kFixed, pat, def});
          return true;
        };
        bool ok = true;
        std::size_t npos = s->numPositional();
        for (std::size_t i = 0; i < cn.args.size() && ok; ++i) {
          if (i >= npos) {
            why = s->qualifiedName() + " takes " + std::to_string(npos) +
                  " positional arguments, the pattern gives " + std::to_string(cn.args.size());
            ok = false;
            break;
          }
          ok = place(s->args[i].name, &cn.args[i]);
        }
        for (std::size_t k = 0; k < cn.kwargs.size() && ok; ++k) {
          int cur = s->argIndex(cn.kwargs[k].first);
          if (cur < 0) {
            why = s->qualifiedName() + " has no argument '" + cn.kwargs[k].first + "'";
            ok = false;
            break;
          }
          if (static_cast<std::size_t>(cur) < cn.args.size()) {
            return errorAt(cn.kwargs[k].second.src->loc,
                           "argument '" + cn.kwargs[k].first + "' given twice");
          }
          ok = place(cn.kwargs[k].first, &cn.kwargs[k].second);
        }
        if (!ok) {
          if (layout < 0)
            failures.push_back(why);
          continue;
        }
        if (layout >= 0) {
          for (std::size_t i = 0; i < ls.args.size(); ++i) {
            const SchemaArg &la = ls.args[i];
            if (s->argIndex(la.name) >= 0 || !la.defaultValue)
              continue;
            ArgPattern lp;
            lp.kind = ArgPattern::Kind::Literal;
            lp.literal = *la.defaultValue;
            lp.loc = pn.loc;
            cn.synthPatterns.push_back(std::move(lp));
            CArg ca;
            ca.kind = ArgPattern::Kind::Literal;
            ca.src = &cn.synthPatterns.back();
            ca.site = cr_.addSite(pn.loc, la.name + " (legacy signature; must be its default)");
            cn.synthArgs.push_back(std::move(ca));
            a.constrained.push_back({static_cast<int>(i), &cn.synthArgs.back(), nullptr});
          }
        }
        if (s->properties.commutative) {
          for (std::size_t i = 0; i < ls.args.size(); ++i) {
            const SchemaType &t = ls.args[i].type;
            if (t.base == SchemaType::Base::Tensor && !t.isList) {
              if (a.commA < 0)
                a.commA = static_cast<int>(i);
              else if (a.commB < 0)
                a.commB = static_cast<int>(i);
            }
          }
          if (a.commB < 0)
            a.commA = -1;
        }
        cn.accepts.push_back(std::move(a));
      }
    }
  }
  if (cn.accepts.empty()) {
    Diagnostic d = errorAt(pn.loc, "no overload of " + text + " accepts the pattern's arguments");
    for (const std::string &f : failures)
      d.note(f);
    return d;
  }
  return okStatus();
}

Status RuleCompiler::compileNodes() {
  if (rule_.nodes.empty())
    return errorAt(rule_.loc, "rule '" + rule_.name + "' has an empty match");
  if (rule_.root >= rule_.nodes.size())
    return errorAt(rule_.loc, "rule '" + rule_.name + "': root index out of range");
  cr_.nodes.resize(rule_.nodes.size());
  for (std::size_t ni = 0; ni < rule_.nodes.size(); ++ni) {
    const PatternNode &pn = rule_.nodes[ni];
    CNode &cn = cr_.nodes[ni];
    cn.src = &pn;
    cn.optional = pn.optional;
    cn.shared = pn.shared;
    cn.passthroughArg = pn.passthroughArg;
    if (pn.targets.empty())
      return errorAt(pn.loc, "a pattern node needs an op");
    for (const ArgPattern &a : pn.args) {
      GRAFT_TRY(CArg c, compileArg(a, ni));
      cn.args.push_back(std::move(c));
    }
    for (const auto &[k, a] : pn.kwargs) {
      GRAFT_TRY(CArg c, compileArg(a, ni));
      cn.kwargs.emplace_back(k, std::move(c));
    }
    if (pn.optional) {
      if (ni == rule_.root)
        return errorAt(pn.loc, "the root of a match cannot be optional");
      if (pn.passthroughArg >= pn.args.size())
        return errorAt(pn.loc, "optional node: passthrough argument " +
                                   std::to_string(pn.passthroughArg) + " does not exist");
    }
    GRAFT_CHECK_OK(compileAccepts(ni));
    // Sites, labelled with the parameter names of the first accepted layout.
    const Accept &first = cn.accepts.front();
    for (std::size_t i = 0; i < cn.args.size(); ++i) {
      std::string label = first.layoutSchema && i < first.layoutSchema->args.size()
                              ? first.layoutSchema->args[i].name
                              : "argument " + std::to_string(i);
      assignSites(cn.args[i], label);
    }
    for (auto &[k, a] : cn.kwargs)
      assignSites(a, k);
    std::string nodeName =
        pn.results.empty() || pn.results[0].empty() ? cn.targetsText : "%" + bare(pn.results[0]);
    cn.siteTarget = cr_.addSite(pn.loc, "op of " + nodeName);
    cn.siteUse = cr_.addSite(pn.loc, "uses of " + nodeName);
    // Results become visible to later nodes.
    for (std::size_t r = 0; r < pn.results.size(); ++r) {
      std::string n = bare(pn.results[r]);
      if (n.empty() || n == "_")
        continue;
      if (results_.count(n))
        return errorAt(pn.loc, "%" + n + " is defined twice in the match");
      results_[n] = {static_cast<int>(ni), static_cast<int>(r)};
    }
    if (pn.optional && pn.results.size() != 1)
      return errorAt(pn.loc, "an optional node must have exactly one result");
  }
  cr_.root = static_cast<int>(rule_.root);
  return okStatus();
}

Status RuleCompiler::checkConnected() {
  std::vector<bool> seen(cr_.nodes.size(), false);
  std::vector<int> stack{cr_.root};
  seen[static_cast<std::size_t>(cr_.root)] = true;
  for (std::size_t r : rule_.extraRoots) {
    if (r >= cr_.nodes.size())
      return errorAt(rule_.loc, "rule '" + rule_.name + "': root index out of range");
    if (rule_.nodes[r].optional)
      return errorAt(rule_.nodes[r].loc, "a root of a match cannot be optional");
    if (!seen[r]) {
      seen[r] = true;
      stack.push_back(static_cast<int>(r));
    }
  }
  std::function<void(const CArg &)> visit = [&](const CArg &a) {
    if (a.kind == ArgPattern::Kind::PatResult && !seen[static_cast<std::size_t>(a.patNode)]) {
      seen[static_cast<std::size_t>(a.patNode)] = true;
      stack.push_back(a.patNode);
    }
    for (const CArg &e : a.elements)
      visit(e);
  };
  while (!stack.empty()) {
    int n = stack.back();
    stack.pop_back();
    const CNode &cn = cr_.nodes[static_cast<std::size_t>(n)];
    for (const CArg &a : cn.args)
      visit(a);
    for (const auto &kv : cn.kwargs)
      visit(kv.second);
  }
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (!seen[i])
      return errorAt(rule_.nodes[i].loc,
                     "pattern node " +
                         (rule_.nodes[i].results.empty() ? rule_.nodes[i].targets[0]
                                                         : "%" + bare(rule_.nodes[i].results[0])) +
                         " is not connected to " +
                         (rule_.extraRoots.empty() ? "the root" : "a root") + " of the match");
  return okStatus();
}

Expected<CExpr> RuleCompiler::compileExpr(const Expr &e, bool inRewrite,
                                          const ConstantTransform *enumCtx) {
  CExpr c;
  c.kind = e.kind;
  c.src = &e;
  switch (e.kind) {
  case Expr::Kind::Literal:
    if (e.literal.isValue())
      return errorAt(e.loc, "a literal cannot be a graph value");
    c.literal = e.literal;
    break;
  case Expr::Kind::Var: {
    c.slot = slot(e.name, false);
    if (c.slot < 0) {
      // `nibbles = low_first`: a bare identifier naming an enum value of a
      // constant transform's parameter is that value.
      if (enumCtx)
        for (const TransformParam &p : enumCtx->params)
          if (std::find(p.enumValues.begin(), p.enumValues.end(), bare(e.name)) !=
              p.enumValues.end()) {
            c.kind = Expr::Kind::Literal;
            c.literal = Argument(bare(e.name));
            return c;
          }
      return errorAt(e.loc, "$" + bare(e.name) + " is not bound");
    }
    break;
  }
  case Expr::Kind::PatResult: {
    std::string n = bare(e.name);
    auto rv = rewriteValues_.find(n);
    if (inRewrite && rv != rewriteValues_.end()) {
      c.rewriteValue = rv->second;
      break;
    }
    auto it = results_.find(n);
    if (it == results_.end())
      return errorAt(e.loc, "%" + n + " is not defined");
    c.patNode = it->second.first;
    c.result = it->second.second;
    break;
  }
  case Expr::Kind::List:
  case Expr::Kind::Unary:
  case Expr::Kind::Binary:
  case Expr::Kind::Call:
    break;
  }
  if (e.kind == Expr::Kind::Unary) {
    if (e.operands.size() != 1 || (e.name != "-" && e.name != "!" && e.name != "not"))
      return errorAt(e.loc, "unknown unary operator '" + e.name + "'");
    c.op = e.name == "-" ? "-" : "!";
  }
  if (e.kind == Expr::Kind::Binary) {
    auto b = parseBinOp(e.name);
    if (!b || e.operands.size() != 2)
      return errorAt(e.loc, "unknown binary operator '" + e.name + "'");
    c.bin = *b;
  }
  const ConstantTransform *ctx = nullptr;
  if (e.kind == Expr::Kind::Call) {
    c.builtin = findBuiltin(e.name);
    if (!c.builtin) {
      c.transform = transforms_.find(e.name);
      if (!c.transform)
        return errorAt(e.loc, "unknown function '" + e.name + "'");
      if (!inRewrite)
        return errorAt(e.loc,
                       "constant transform '" + e.name + "' can only be called in a rewrite");
      ctx = c.transform;
    } else if (e.operands.size() != c.builtin->arity || !e.kwargs.empty()) {
      return errorAt(e.loc, std::string(c.builtin->name) + " takes " +
                                std::to_string(c.builtin->arity) + " argument(s)");
    }
  }
  for (const ExprPtr &op : e.operands) {
    if (!op)
      return errorAt(e.loc, "missing operand");
    GRAFT_TRY(CExpr sub, compileExpr(*op, inRewrite, ctx ? ctx : enumCtx));
    c.operands.push_back(std::move(sub));
  }
  for (const auto &[k, op] : e.kwargs) {
    if (!op)
      return errorAt(e.loc, "missing value for '" + k + "'");
    GRAFT_TRY(CExpr sub, compileExpr(*op, inRewrite, ctx ? ctx : enumCtx));
    c.kwargs.emplace_back(k, std::move(sub));
  }
  return c;
}

Status RuleCompiler::compileRewrite() {
  auto nextValue = [&](const std::string &n) {
    int v = cr_.numRewriteValues++;
    cr_.rewriteValueNames.push_back(n);
    return v;
  };
  for (const RewriteStmt &st : rule_.rewrite) {
    CStmt cs;
    cs.src = &st;
    cs.kind = st.kind;
    switch (st.kind) {
    case RewriteStmt::Kind::ConstTransform: {
      cs.transform = transforms_.find(st.target);
      if (!cs.transform)
        return errorAt(st.loc, "unknown constant transform '" + st.target + "'");
      if (st.results.size() != 1)
        return errorAt(st.loc, st.target + " yields one constant");
      break;
    }
    case RewriteStmt::Kind::Let:
      if (!st.value)
        return errorAt(st.loc, "a computed attribute needs a value");
      if (st.results.size() != 1)
        return errorAt(st.loc, "a computed attribute binds one name");
      break;
    case RewriteStmt::Kind::Forward:
      if (!st.value)
        return errorAt(st.loc, "forwarding needs a value");
      if (st.results.size() != 1 || results_.find(bare(st.results[0])) == results_.end())
        return errorAt(st.loc, "forwarding replaces exactly one result of the match");
      break;
    case RewriteStmt::Kind::NewNode: {
      cs.target = canonicalTarget(st.target);
      cs.schema = registry_.lookup(cs.target);
      if (!cs.schema)
        return errorAt(st.loc, "unknown op '" + st.target +
                                   "' in rewrite (new nodes need a registered schema so "
                                   "their results can be inferred)");
      cs.inferFn = cs.schema->inferRule.empty()
                       ? nullptr
                       : InferenceRules::builtin().find(cs.schema->inferRule);
      if (!cs.inferFn)
        return errorAt(st.loc, cs.target + " has no shape inference rule, so its results "
                                           "cannot be inferred");
      {
        std::size_t a = cs.target.find('.'), b = cs.target.find('.', a + 1);
        cs.baseName = cs.target.substr(a + 1, b == std::string::npos ? b : b - a - 1);
      }
      if (st.results.size() > cs.schema->returns.size())
        return errorAt(st.loc, cs.target + " returns " + std::to_string(cs.schema->returns.size()) +
                                   " value(s), " + std::to_string(st.results.size()) + " named");
      break;
    }
    }
    const ConstantTransform *ctx = cs.transform;
    for (const ExprPtr &a : st.args) {
      if (!a)
        return errorAt(st.loc, "missing argument");
      GRAFT_TRY(CExpr c, compileExpr(*a, true, ctx));
      cs.args.push_back(std::move(c));
    }
    for (const auto &[k, a] : st.kwargs) {
      if (!a)
        return errorAt(st.loc, "missing value for '" + k + "'");
      GRAFT_TRY(CExpr c, compileExpr(*a, true, ctx));
      cs.kwargs.emplace_back(k, std::move(c));
    }
    if (st.kind == RewriteStmt::Kind::Let || st.kind == RewriteStmt::Kind::Forward) {
      GRAFT_TRY(CExpr c, compileExpr(*st.value, true, nullptr));
      cs.value = std::move(c);
    }
    if (st.kind == RewriteStmt::Kind::ConstTransform) {
      // All-literal arguments bind once, here; a binding error is a compile
      // error located at the statement.
      bool literal = cs.args.size() >= cs.transform->inputs.size();
      for (std::size_t i = cs.transform->inputs.size(); i < cs.args.size() && literal; ++i)
        literal = cs.args[i].kind == Expr::Kind::Literal;
      for (const auto &kv : cs.kwargs)
        literal = literal && kv.second.kind == Expr::Kind::Literal;
      if (literal) {
        std::vector<Argument> pos;
        for (std::size_t i = cs.transform->inputs.size(); i < cs.args.size(); ++i)
          pos.push_back(cs.args[i].literal);
        std::vector<std::pair<std::string, Argument>> kw;
        for (const auto &kv : cs.kwargs)
          kw.emplace_back(kv.first, kv.second.literal);
        auto bound = bindTransformArgs(*cs.transform, pos, kw);
        if (!bound.ok())
          return errorAt(st.loc, bound.diags()[0].message);
        cs.literalArgs = std::move(*bound);
      }
    }
    // Results become visible to later statements.
    if (st.kind == RewriteStmt::Kind::NewNode || st.kind == RewriteStmt::Kind::Forward) {
      for (const std::string &r : st.results) {
        std::string n = bare(r);
        auto it = results_.find(n);
        cs.replaces.push_back(it == results_.end() || n.empty() ? std::make_pair(-1, 0)
                                                                : it->second);
        int v = nextValue(n);
        cs.resultValues.push_back(v);
        if (!n.empty() && n != "_")
          rewriteValues_[n] = v;
      }
    } else {
      for (const std::string &r : st.results) {
        if (slot(r, false) >= 0)
          return errorAt(st.loc, "$" + bare(r) + " is already bound");
        cs.resultSlots.push_back(slot(r, true));
      }
    }
    cr_.rewrite.push_back(std::move(cs));
  }
  if (cr_.rewrite.empty())
    return errorAt(rule_.loc, "rule '" + rule_.name + "' has an empty rewrite");
  return okStatus();
}

Status RuleCompiler::run() {
  GRAFT_CHECK_OK(compileNodes());
  GRAFT_CHECK_OK(checkConnected());
  for (const ExprPtr &w : rule_.where) {
    if (!w)
      return errorAt(rule_.loc, "empty where predicate");
    GRAFT_TRY(CExpr c, compileExpr(*w, false, nullptr));
    cr_.where.push_back(std::move(c));
    cr_.whereSites.push_back(cr_.addSite(w->loc, "where " + exprText(*w)));
  }
  for (const GuardedTolerance &t : rule_.guardedTolerances) {
    if (!t.when)
      return errorAt(t.loc, "empty tolerance guard");
    GRAFT_TRY(CExpr c, compileExpr(*t.when, false, nullptr));
    cr_.toleranceGuards.push_back(std::move(c));
  }
  GRAFT_CHECK_OK(compileRewrite());
  if (!rule_.extraRoots.empty()) {
    // Only tensor values have users to walk: an anchor capture must be bound
    // at a Tensor parameter (or an element of a Tensor[]) of some accepted
    // schema, and not as a number (`: scalar`).
    std::set<std::string> tensorCaptures;
    std::function<void(const CArg &, bool)> collect = [&](const CArg &a, bool tensor) {
      if (a.kind == ArgPattern::Kind::Var && tensor && a.scalar == ArgPattern::Scalar::None)
        tensorCaptures.insert(cr_.slotNames[static_cast<std::size_t>(a.slot)]);
      if (a.kind == ArgPattern::Kind::List)
        for (const CArg &e : a.elements)
          collect(e, tensor);
    };
    for (const CNode &cn : cr_.nodes)
      for (const Accept &a : cn.accepts)
        for (const Accept::Param &p : a.constrained) {
          if (!p.pat || p.index < 0 || !a.layoutSchema)
            continue;
          const SchemaType &t = a.layoutSchema->args[static_cast<std::size_t>(p.index)].type;
          collect(*p.pat, t.base == SchemaType::Base::Tensor);
        }
    GRAFT_TRY(cr_.rootSearches,
              planRootSearch(rule_, [&](const std::string &n) { return tensorCaptures.count(n); }));
    for (const RootSearch &rs : cr_.rootSearches) {
      int slot = -1;
      if (!rs.anchorCapture.empty())
        slot = static_cast<int>(
            std::find(cr_.slotNames.begin(), cr_.slotNames.end(), rs.anchorCapture) -
            cr_.slotNames.begin());
      cr_.rootSearchSlots.push_back(slot);
      const PatternNode &rn = rule_.nodes[rs.root];
      std::string nm = rn.results.empty() || rn.results[0].empty() ? rn.targets.front()
                                                                   : "%" + bare(rn.results[0]);
      cr_.rootSearchSites.push_back(cr_.addSite(rn.loc, "root " + nm));
    }
  }
  const CNode &root = cr_.nodes[static_cast<std::size_t>(cr_.root)];
  for (const Accept &a : root.accepts) {
    if (a.schema) {
      if (std::find(cr_.rootSchemas.begin(), cr_.rootSchemas.end(), a.schema) ==
          cr_.rootSchemas.end())
        cr_.rootSchemas.push_back(a.schema);
    } else if (!a.target.empty()) {
      cr_.rootOpaqueTargets.push_back(a.target);
    } else {
      cr_.rootOpaquePrefixes.push_back(a.prefix);
    }
  }
  return okStatus();
}

} // namespace

std::pair<int, int> CompiledRule::findResult(const std::string &name) const {
  std::string n = bare(name);
  for (std::size_t i = 0; i < rule_.nodes.size(); ++i)
    for (std::size_t r = 0; r < rule_.nodes[i].results.size(); ++r)
      if (bare(rule_.nodes[i].results[r]) == n)
        return {static_cast<int>(i), static_cast<int>(r)};
  return {-1, 0};
}

Expected<std::unique_ptr<CompiledRule>> compileRule(const Rule &rule, const OpRegistry &registry,
                                                    const ConstantTransformRegistry &transforms) {
  auto cr = std::make_unique<CompiledRule>();
  cr->rule_ = rule;
  RuleCompiler compiler(*cr, registry, transforms);
  Status s = compiler.run();
  if (!s.ok()) {
    Failure f = s.takeFailure();
    for (Diagnostic &d : f.diags)
      if (d.message.rfind("rule '", 0) != 0)
        d.message = "rule '" + rule.name + "': " + d.message;
    return f;
  }
  return cr;
}

} // namespace graft::rewrite::detail

//===----------------------------------------------------------------------===//
// Multi-root search plans
//===----------------------------------------------------------------------===//

namespace graft::rewrite {

namespace {

/// Calls f on every argument pattern of `n` that is matched unconditionally
/// (top level and list elements; not inside `|` alternatives, where a
/// capture may stay unbound).
template <class F> void forEachDefiniteArg(const PatternNode &n, F &&f) {
  std::function<void(const ArgPattern &)> walk = [&](const ArgPattern &a) {
    f(a);
    if (a.kind == ArgPattern::Kind::List)
      for (const ArgPattern &e : a.elements)
        walk(e);
  };
  for (const ArgPattern &a : n.args)
    walk(a);
  for (const auto &kv : n.kwargs)
    walk(kv.second);
}

int nodeOfResult(const Rule &rule, const std::string &name) {
  for (std::size_t i = 0; i < rule.nodes.size(); ++i)
    for (const std::string &r : rule.nodes[i].results)
      if (!r.empty() && r == name)
        return static_cast<int>(i);
  return -1;
}

std::string rootName(const Rule &rule, std::size_t r) {
  const PatternNode &n = rule.nodes[r];
  return n.results.empty() || n.results[0].empty() ? n.targets.front() : "%" + n.results[0];
}

} // namespace

Expected<std::vector<RootSearch>>
planRootSearch(const Rule &rule, const std::function<bool(const std::string &)> &isTensorCapture) {
  std::vector<RootSearch> plan;
  // What the matched roots bind: their nodes (reached through non-optional
  // nodes: a node behind an absent optional one is never bound) and the
  // tensor captures of those nodes.
  std::vector<bool> boundNode(rule.nodes.size(), false);
  std::set<std::string> boundCapture;
  auto addSubtree = [&](std::size_t r) {
    std::vector<std::size_t> work{r};
    boundNode[r] = true;
    while (!work.empty()) {
      std::size_t n = work.back();
      work.pop_back();
      if (rule.nodes[n].optional)
        continue;
      forEachDefiniteArg(rule.nodes[n], [&](const ArgPattern &a) {
        if (a.kind == ArgPattern::Kind::Var && isTensorCapture(a.name))
          boundCapture.insert(a.name);
        if (a.kind == ArgPattern::Kind::PatResult)
          if (int p = nodeOfResult(rule, a.name); p >= 0 && !boundNode[std::size_t(p)]) {
            boundNode[std::size_t(p)] = true;
            work.push_back(std::size_t(p));
          }
      });
    }
  };
  addSubtree(rule.root);
  // Breadth first from the root down through non-optional nodes to the
  // nearest node or tensor capture the matched roots bind.
  auto findPath = [&](std::size_t r) -> std::optional<RootSearch> {
    std::vector<int> parent(rule.nodes.size(), -2);
    std::vector<unsigned> viaResult(rule.nodes.size(), 0);
    std::vector<std::size_t> queue{r};
    parent[r] = -1;
    for (std::size_t qi = 0; qi < queue.size(); ++qi) {
      std::size_t n = queue[qi];
      std::optional<RootSearch> found;
      forEachDefiniteArg(rule.nodes[n], [&](const ArgPattern &a) {
        if (found)
          return;
        if (a.kind == ArgPattern::Kind::Var && boundCapture.count(a.name)) {
          found = RootSearch{};
          found->anchorCapture = a.name;
        } else if (a.kind == ArgPattern::Kind::PatResult) {
          int p = nodeOfResult(rule, a.name);
          if (p < 0)
            return;
          const PatternNode &pn = rule.nodes[std::size_t(p)];
          unsigned res = static_cast<unsigned>(
              std::find(pn.results.begin(), pn.results.end(), a.name) - pn.results.begin());
          if (boundNode[std::size_t(p)]) {
            found = RootSearch{};
            found->anchorNode = std::size_t(p);
            found->anchorResult = res;
          } else if (!pn.optional && parent[std::size_t(p)] == -2) {
            parent[std::size_t(p)] = static_cast<int>(n);
            viaResult[std::size_t(p)] = res;
            queue.push_back(std::size_t(p));
          }
        }
      });
      if (!found)
        continue;
      found->root = r;
      // n consumes the anchor; its parents lead up to the root.
      for (int k = static_cast<int>(n); k >= 0; k = parent[std::size_t(k)]) {
        unsigned via = 0;
        if (!found->path.empty())
          via = viaResult[found->path.back().first];
        found->path.emplace_back(std::size_t(k), via);
      }
      return found;
    }
    return std::nullopt;
  };
  std::vector<std::size_t> pending = rule.extraRoots;
  while (!pending.empty()) {
    bool progress = false;
    for (auto it = pending.begin(); it != pending.end(); ++it) {
      if (auto found = findPath(*it)) {
        addSubtree(*it);
        plan.push_back(std::move(*found));
        pending.erase(it);
        progress = true;
        break;
      }
    }
    if (progress)
      continue;
    std::size_t r = pending.front();
    std::string matched = rootName(rule, rule.root);
    for (const RootSearch &p : plan)
      matched += ", " + rootName(rule, p.root);
    Diagnostic d = rule.nodes[r].loc.begin.valid() ? Diagnostic::error(rule.nodes[r].loc, "")
                                                   : Diagnostic::error("");
    d.message = "root " + rootName(rule, r) + " shares no input with the other roots of the " +
                "match (" + matched + ")";
    std::string why = "the matcher finds the other roots of a match from a tensor capture or "
                      "a pattern node they share with a root it has matched (through "
                      "non-optional statements); make the roots use the same $capture or "
                      "%result, or split the rule";
    if (rule.nodes[rule.root].loc.begin.valid())
      d.note(rule.nodes[rule.root].loc, why);
    else
      d.note(why);
    return Failure(std::move(d));
  }
  return plan;
}

} // namespace graft::rewrite

namespace graft::rewrite::detail {

//===----------------------------------------------------------------------===//
// Expression text
//===----------------------------------------------------------------------===//

std::string exprText(const Expr &e) {
  auto sub = [](const ExprPtr &p) { return p ? exprText(*p) : std::string("?"); };
  switch (e.kind) {
  case Expr::Kind::Literal:
    return e.literal.isString() ? e.literal.string() : formatArgument(e.literal);
  case Expr::Kind::Var:
    return "$" + bare(e.name);
  case Expr::Kind::PatResult:
    return "%" + bare(e.name);
  case Expr::Kind::List: {
    std::string out = "[";
    for (std::size_t i = 0; i < e.operands.size(); ++i)
      out += (i ? ", " : "") + sub(e.operands[i]);
    return out + "]";
  }
  case Expr::Kind::Unary: {
    std::string op = e.name == "!" ? "not " : e.name;
    std::string inner = e.operands.empty() ? "?" : sub(e.operands[0]);
    if (!e.operands.empty() && e.operands[0] && e.operands[0]->kind == Expr::Kind::Binary)
      inner = "(" + inner + ")";
    return op + inner;
  }
  case Expr::Kind::Binary: {
    std::string op = e.name == "&&" ? "and" : e.name == "||" ? "or" : e.name;
    auto side = [&](std::size_t i) {
      if (i >= e.operands.size() || !e.operands[i])
        return std::string("?");
      std::string s = exprText(*e.operands[i]);
      if (e.operands[i]->kind == Expr::Kind::Binary && e.operands[i]->name != e.name)
        s = "(" + s + ")";
      return s;
    };
    return side(0) + " " + op + " " + side(1);
  }
  case Expr::Kind::Call: {
    std::string out = e.name + "(";
    bool first = true;
    for (const ExprPtr &o : e.operands) {
      out += (first ? "" : ", ") + sub(o);
      first = false;
    }
    for (const auto &[k, v] : e.kwargs) {
      out += (first ? "" : ", ") + k + " = " + sub(v);
      first = false;
    }
    return out + ")";
  }
  }
  return "?";
}

} // namespace graft::rewrite::detail
