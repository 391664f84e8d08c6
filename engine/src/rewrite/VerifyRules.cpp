//===- VerifyRules.cpp - Differential testing of fusion rules -------------===//
//
// See VerifyRules.h for what an instance is. The pieces, in order:
//  * the example domain is enumerated into points (capture -> value),
//    pattern variants (optional nodes present/absent, `|` choices) are
//    enumerated, instances sorted smallest first;
//  * captures missing from a point are solved from `where` equalities;
//  * InstanceBuilder turns (point, variant, leaf shapes) into a Graph; leaf
//    tensors whose type is not fully given are found by searchLeaves;
//  * each instance must match its own rule (else it is outside the where
//    clause and skipped, or the rule is broken), runs before and after the
//    rewrite on the same random inputs, and the outputs are compared.
//
//===----------------------------------------------------------------------===//
#include "graft/rewrite/VerifyRules.h"

#include "Matcher.h"
#include "RewriteUtil.h"

#include "graft/interp/Interpreter.h"
#include "graft/ops/BoundArgs.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace graft::rewrite {

using detail::CArg;
using detail::CNode;
using detail::CompiledRule;

namespace {

/// Rewrites allowed on one verification instance before the rule counts as
/// re-firing on its own output.
constexpr uint64_t kInstanceRewriteLimit = 64;

//===----------------------------------------------------------------------===//
// Domain, variants, where analysis
//===----------------------------------------------------------------------===//

struct Env {
  std::map<std::string, int64_t> ints;
  std::map<std::string, DType> dtypes;
};

struct Point {
  Env env;
  double size = 0;
};

std::vector<Point> enumerateDomain(const ExampleDomain &d) {
  std::vector<Point> points{Point{}};
  for (const auto &[name, values] : d.ints) {
    if (values.empty())
      continue;
    std::vector<Point> next;
    for (const Point &p : points)
      for (int64_t v : values) {
        Point q = p;
        q.env.ints[name] = v;
        next.push_back(std::move(q));
        if (next.size() > 4096)
          break;
      }
    points = std::move(next);
  }
  for (const auto &[name, values] : d.dtypes) {
    if (values.empty())
      continue;
    std::vector<Point> next;
    for (const Point &p : points)
      for (DType v : values) {
        Point q = p;
        q.env.dtypes[name] = v;
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  for (Point &p : points) {
    p.size = 1;
    for (const auto &[n, v] : p.env.ints)
      p.size *= static_cast<double>(std::max<int64_t>(1, std::llabs(v)));
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const Point &a, const Point &b) { return a.size < b.size; });
  return points;
}

/// Choice sites of a pattern: optional nodes and `|` alternatives.
struct Sites {
  std::vector<int> optionalNodes;
  std::vector<const CArg *> alternatives;
  std::size_t count() const { return optionalNodes.size() + alternatives.size(); }
};

void collectAlternatives(const CArg &a, Sites &s) {
  if (a.kind == ArgPattern::Kind::Alternatives)
    s.alternatives.push_back(&a);
  for (const CArg &e : a.elements)
    collectAlternatives(e, s);
}

Sites choiceSites(const CompiledRule &cr) {
  Sites s;
  for (std::size_t i = 0; i < cr.nodes.size(); ++i) {
    if (cr.nodes[i].optional)
      s.optionalNodes.push_back(static_cast<int>(i));
    for (const CArg &a : cr.nodes[i].args)
      collectAlternatives(a, s);
    for (const auto &kv : cr.nodes[i].kwargs)
      collectAlternatives(kv.second, s);
  }
  return s;
}

/// Every combination of choices (optional: 0 present, 1 absent), at most 16.
std::vector<std::vector<int>> enumerateVariants(const Sites &s) {
  std::vector<int> radix;
  for (std::size_t i = 0; i < s.optionalNodes.size(); ++i)
    radix.push_back(2);
  for (const CArg *a : s.alternatives)
    radix.push_back(static_cast<int>(a->elements.size()));
  std::vector<std::vector<int>> out{std::vector<int>(radix.size(), 0)};
  for (std::size_t i = 0; i < radix.size(); ++i) {
    std::vector<std::vector<int>> next;
    for (const auto &v : out)
      for (int c = 0; c < radix[i]; ++c) {
        auto w = v;
        w[i] = c;
        next.push_back(std::move(w));
      }
    out = std::move(next);
    if (out.size() > 16)
      out.resize(16);
  }
  return out;
}

std::string bare(const std::string &n) {
  return !n.empty() && (n[0] == '$' || n[0] == '%') ? n.substr(1) : n;
}

/// What the where clause says about captures, read syntactically.
struct WhereFacts {
  std::set<std::string> mayBeNone;                         ///< appear in is_none(...)
  std::set<std::string> zeros;                             ///< appear in all_zero(...)
  std::map<std::string, std::pair<double, double>> ranges; ///< values_in($x, lo, hi)
  std::vector<const Expr *> equalities;                    ///< top-level `a == b`
};

std::optional<double> literalNumber(const Expr &e) {
  if (e.kind == Expr::Kind::Literal)
    return e.literal.number();
  if (e.kind == Expr::Kind::Unary && e.name == "-" && e.operands.size() == 1 && e.operands[0])
    if (auto v = literalNumber(*e.operands[0]))
      return -*v;
  return std::nullopt;
}

void scanWhere(const Expr &e, bool topLevel, WhereFacts &f) {
  if (e.kind == Expr::Kind::Call && !e.operands.empty() && e.operands[0] &&
      e.operands[0]->kind == Expr::Kind::Var) {
    std::string v = bare(e.operands[0]->name);
    if (e.name == "is_none")
      f.mayBeNone.insert(v);
    else if (e.name == "all_zero")
      f.zeros.insert(v);
    else if (e.name == "values_in" && e.operands.size() == 3 && e.operands[1] && e.operands[2]) {
      auto lo = literalNumber(*e.operands[1]), hi = literalNumber(*e.operands[2]);
      if (lo && hi)
        f.ranges[v] = {*lo, *hi};
    }
  }
  bool isAnd = e.kind == Expr::Kind::Binary && (e.name == "&&" || e.name == "and");
  if (topLevel && e.kind == Expr::Kind::Binary && e.name == "==")
    f.equalities.push_back(&e);
  for (const ExprPtr &o : e.operands)
    if (o)
      scanWhere(*o, topLevel && isAnd, f);
}

WhereFacts analyzeWhere(const Rule &r) {
  WhereFacts f;
  for (const ExprPtr &w : r.where)
    if (w)
      scanWhere(*w, true, f);
  return f;
}

/// Integer value of an expression over known captures.
std::optional<int64_t> evalInt(const Expr &e, const Env &env) {
  switch (e.kind) {
  case Expr::Kind::Literal:
    if (e.literal.isInt())
      return e.literal.integer();
    return std::nullopt;
  case Expr::Kind::Var: {
    auto it = env.ints.find(bare(e.name));
    if (it == env.ints.end())
      return std::nullopt;
    return it->second;
  }
  case Expr::Kind::Unary:
    if (e.name == "-" && e.operands[0])
      if (auto v = evalInt(*e.operands[0], env))
        return -*v;
    return std::nullopt;
  case Expr::Kind::Binary: {
    if (e.operands.size() != 2 || !e.operands[0] || !e.operands[1])
      return std::nullopt;
    auto a = evalInt(*e.operands[0], env), b = evalInt(*e.operands[1], env);
    if (!a || !b)
      return std::nullopt;
    if (e.name == "+")
      return *a + *b;
    if (e.name == "-")
      return *a - *b;
    if (e.name == "*")
      return *a * *b;
    if ((e.name == "//" || e.name == "/") && *b != 0 && *a % *b == 0)
      return *a / *b;
    if (e.name == "%" && *b != 0)
      return ((*a % *b) + *b) % *b;
    return std::nullopt;
  }
  case Expr::Kind::Call:
    if ((e.name == "min" || e.name == "max") && e.operands.size() == 2 && e.operands[0] &&
        e.operands[1]) {
      auto a = evalInt(*e.operands[0], env), b = evalInt(*e.operands[1], env);
      if (a && b)
        return e.name == "min" ? std::min(*a, *b) : std::max(*a, *b);
    }
    return std::nullopt;
  default:
    return std::nullopt;
  }
}

/// Makes `e` evaluate to `target` by assigning its one unknown capture.
bool invert(const Expr &e, int64_t target, Env &env) {
  if (e.kind == Expr::Kind::Var) {
    std::string n = bare(e.name);
    if (env.ints.count(n))
      return env.ints[n] == target;
    env.ints[n] = target;
    return true;
  }
  if (e.kind != Expr::Kind::Binary || e.operands.size() != 2 || !e.operands[0] || !e.operands[1])
    return false;
  const Expr &l = *e.operands[0], &r = *e.operands[1];
  auto lv = evalInt(l, env), rv = evalInt(r, env);
  if (lv && rv)
    return false;
  if (e.name == "+")
    return lv ? invert(r, target - *lv, env) : rv && invert(l, target - *rv, env);
  if (e.name == "-")
    return lv ? invert(r, *lv - target, env) : rv && invert(l, target + *rv, env);
  if (e.name == "*") {
    int64_t k = lv ? *lv : rv ? *rv : 0;
    if (k == 0 || target % k != 0)
      return false;
    return invert(lv ? r : l, target / k, env);
  }
  if ((e.name == "//" || e.name == "/") && rv && *rv != 0)
    return invert(l, target * *rv, env);
  return false;
}

void solveEqualities(const WhereFacts &f, Env &env) {
  for (int round = 0; round < 8; ++round) {
    bool changed = false;
    for (const Expr *eq : f.equalities) {
      const Expr &a = *eq->operands[0], &b = *eq->operands[1];
      auto av = evalInt(a, env), bv = evalInt(b, env);
      if (av && !bv)
        changed |= invert(b, *av, env);
      else if (bv && !av)
        changed |= invert(a, *bv, env);
    }
    if (!changed)
      break;
  }
}

//===----------------------------------------------------------------------===//
// Instances
//===----------------------------------------------------------------------===//

/// A tensor leaf of the pattern (a capture or a typed wildcard) and what its
/// type pattern fixes.
struct LeafSpec {
  std::string key;  ///< capture name, or "_<site>"
  std::string name; ///< value name in the instance
  bool param = false;
  std::optional<DType> dtype;
  std::string dtypeVar;
  std::optional<std::size_t> rank;          ///< nullopt: free
  std::vector<std::optional<int64_t>> dims; ///< nullopt entries: free
  bool free() const {
    if (!dtype || !rank)
      return true;
    for (const auto &d : dims)
      if (!d)
        return true;
    return false;
  }
};

struct BuildResult {
  std::unique_ptr<Graph> graph;
  Node *root = nullptr;
  int failedNode = -1;
  std::string error;
  /// Leaves built from a guessed prototype, and the node that introduced them.
  std::vector<std::pair<LeafSpec, int>> guessed;
  /// Inputs with an example `uniform(lo, hi)` range, by input name.
  std::map<std::string, std::pair<double, double>> inputRanges;
  bool ok() const { return error.empty(); }
};

class InstanceBuilder {
public:
  InstanceBuilder(const CompiledRule &cr, const OpRegistry &registry, const WhereFacts &facts,
                  Env env, const Sites &sites, std::vector<int> choices, uint64_t seed)
      : cr_(cr), registry_(registry), facts_(facts), env_(std::move(env)), sites_(sites),
        choices_(std::move(choices)), seed_(seed) {}

  std::map<std::string, TensorProto> fixedLeaves;
  const Env &env() const { return env_; }

  BuildResult build(int stopAfter = -1);

private:
  Expected<Argument> instantiate(const CArg &p, const SchemaType *type, int nodeIndex);
  Expected<Value *> leaf(const CArg &p, const std::string &key, int nodeIndex, bool allowNone,
                         bool *isNone);
  LeafSpec specOf(const CArg &p, const std::string &key) const;
  TensorProto guess(const LeafSpec &s) const;
  void fillData(GraphInput &in, const std::string &key);

  const CompiledRule &cr_;
  const OpRegistry &registry_;
  const WhereFacts &facts_;
  Env env_;
  const Sites &sites_;
  std::vector<int> choices_;
  uint64_t seed_;
  // per build
  Graph *g_ = nullptr;
  BuildResult *res_ = nullptr;
  std::map<int, Argument> slots_;
  std::vector<std::vector<Value *>> results_;
  unsigned leafCount_ = 0;
};

LeafSpec InstanceBuilder::specOf(const CArg &p, const std::string &key) const {
  LeafSpec s;
  s.key = key;
  s.name = key[0] == '_' ? "arg" + key : key;
  s.param = p.mustBeParam;
  if (!p.type)
    return s;
  const TypePattern &t = *p.type;
  if (t.dtype)
    s.dtype = t.dtype;
  if (!t.dtypeVar.empty()) {
    s.dtypeVar = bare(t.dtypeVar);
    auto it = env_.dtypes.find(s.dtypeVar);
    if (it != env_.dtypes.end())
      s.dtype = it->second;
  }
  bool trailing = t.leadingEllipsis || (t.anyRank && !t.dims.empty());
  if (t.anyRank && !trailing)
    return s;
  if (trailing)
    s.dims.push_back(int64_t(2)); // one leading dim
  for (const DimPattern &d : t.dims) {
    if (d.kind == DimPattern::Kind::Literal) {
      s.dims.push_back(d.value);
    } else if (d.kind == DimPattern::Kind::Var) {
      auto it = env_.ints.find(bare(d.var));
      s.dims.push_back(it != env_.ints.end() ? std::optional<int64_t>(it->second)
                                             : std::optional<int64_t>(8));
    } else {
      s.dims.push_back(std::nullopt);
    }
  }
  s.rank = s.dims.size();
  return s;
}

TensorProto InstanceBuilder::guess(const LeafSpec &s) const {
  Shape shape;
  if (s.rank) {
    for (const auto &d : s.dims)
      shape.push_back(Dim(d ? *d : 2));
  } else {
    shape = {Dim(2), Dim(3)};
  }
  return TensorProto(s.dtype ? *s.dtype : DType::F32, shape);
}

void InstanceBuilder::fillData(GraphInput &in, const std::string &key) {
  const TensorProto &p = in.value->proto();
  uint64_t seed = seed_ * 1000003u + (++leafCount_) * 7919u;
  if (facts_.zeros.count(key)) {
    in.init = FullInit{0.0};
    return;
  }
  double lo, hi;
  auto range = facts_.ranges.find(key);
  if (isIntegral(p.dtype, true)) {
    auto b = integerBounds(p.dtype);
    lo = b ? static_cast<double>(b->first) : 0;
    hi = b ? static_cast<double>(b->second) : 1;
    if (p.dtype == DType::I64 || p.dtype == DType::U64 || p.dtype == DType::I32 ||
        p.dtype == DType::U32) {
      lo = std::max(lo, -1000.0);
      hi = std::min(hi, 1000.0);
    }
    if (auto ex = cr_.rule().example.ranges.find(key); ex != cr_.rule().example.ranges.end()) {
      auto ints = integerDrawRange(p.dtype, ex->second.first, ex->second.second,
                                   "example uniform() of $" + key + " " + p.str());
      if (!ints.ok()) {
        if (res_->error.empty())
          res_->error = ints.diags()[0].message;
        return;
      }
      lo = static_cast<double>(ints->first);
      hi = static_cast<double>(ints->second);
    }
    if (range != facts_.ranges.end()) {
      lo = std::max(lo, std::ceil(range->second.first));
      hi = std::min(hi, std::floor(range->second.second));
    }
  } else {
    lo = 0.01;
    hi = 1.0;
    auto ex = cr_.rule().example.ranges.find(key);
    bool given = ex != cr_.rule().example.ranges.end();
    if (given) {
      lo = ex->second.first;
      hi = ex->second.second;
    }
    if (range != facts_.ranges.end()) {
      // values_in is a condition of the match: the example's uniform() draws
      // within it (as for integers); without one, its whole range is drawn.
      lo = given ? std::max(lo, range->second.first) : range->second.first;
      hi = given ? std::min(hi, range->second.second) : range->second.second;
      if (!(lo < hi)) {
        if (res_->error.empty())
          res_->error = "example uniform() of $" + key + " " + p.str() +
                        " lies outside the where clause's values_in range";
        return;
      }
    }
  }
  in.init = RandomInit{seed, lo, hi};
}

Expected<Value *> InstanceBuilder::leaf(const CArg &p, const std::string &key, int nodeIndex,
                                        bool allowNone, bool *isNone) {
  *isNone = false;
  LeafSpec spec = specOf(p, key);
  if (allowNone && !p.type && facts_.mayBeNone.count(key)) {
    *isNone = true;
    return nullptr;
  }
  TensorProto proto;
  auto fixed = fixedLeaves.find(key);
  if (fixed != fixedLeaves.end()) {
    proto = fixed->second;
  } else {
    proto = guess(spec);
    if (spec.free())
      res_->guessed.emplace_back(spec, nodeIndex);
  }
  if (!spec.dtypeVar.empty())
    env_.dtypes.emplace(spec.dtypeVar, proto.dtype);
  std::string name = g_->uniqueName(spec.name);
  if (spec.param) {
    Value *v = g_->addInput(InputKind::Parameter, name, proto, name);
    fillData(g_->inputs().back(), key);
    return v;
  }
  if (auto ex = cr_.rule().example.ranges.find(key); ex != cr_.rule().example.ranges.end())
    res_->inputRanges[name] = ex->second;
  return g_->addInput(InputKind::UserInput, name, proto);
}

Expected<Argument> InstanceBuilder::instantiate(const CArg &p, const SchemaType *type,
                                                int nodeIndex) {
  bool tensorType = type && type->base == SchemaType::Base::Tensor && !type->isList;
  bool optional = type && type->optional;
  switch (p.kind) {
  case ArgPattern::Kind::Literal:
    return p.src->literal;
  case ArgPattern::Kind::PatResult: {
    const auto &r = results_[static_cast<std::size_t>(p.patNode)];
    if (static_cast<std::size_t>(p.result) >= r.size() || !r[static_cast<std::size_t>(p.result)])
      return Diagnostic::error("%" + p.src->name + " is not available");
    return Argument(r[static_cast<std::size_t>(p.result)]);
  }
  case ArgPattern::Kind::List: {
    Argument::List elems;
    SchemaType elem;
    if (type) {
      elem = *type;
      elem.isList = false;
      elem.optional = type->elementOptional;
    }
    for (const CArg &e : p.elements) {
      GRAFT_TRY(Argument a, instantiate(e, type ? &elem : nullptr, nodeIndex));
      elems.push_back(std::move(a));
    }
    return Argument(std::move(elems));
  }
  case ArgPattern::Kind::Alternatives: {
    auto it = std::find(sites_.alternatives.begin(), sites_.alternatives.end(), &p);
    std::size_t choice = 0;
    if (it != sites_.alternatives.end())
      choice = static_cast<std::size_t>(
          choices_[sites_.optionalNodes.size() +
                   static_cast<std::size_t>(it - sites_.alternatives.begin())]);
    return instantiate(p.elements[std::min(choice, p.elements.size() - 1)], type, nodeIndex);
  }
  case ArgPattern::Kind::Wildcard: {
    if (p.scalar == ArgPattern::Scalar::Float)
      return Argument(1.0);
    if (p.scalar == ArgPattern::Scalar::Int)
      return Argument(int64_t{1});
    if (!p.type && !p.mustBeParam) {
      if (optional)
        return Argument();
      if (!tensorType)
        return Diagnostic::error("cannot instantiate `_` for a " +
                                 (type ? type->str() : std::string("?")) +
                                 " argument; capture it and give it an example value");
    }
    bool none = false;
    GRAFT_TRY(Value * v, leaf(p, "_" + std::to_string(p.site), nodeIndex, false, &none));
    return Argument(v);
  }
  case ArgPattern::Kind::Var: {
    auto known = slots_.find(p.slot);
    if (known != slots_.end())
      return known->second;
    std::string name = cr_.slotNames[static_cast<std::size_t>(p.slot)];
    Argument out;
    if (p.scalar != ArgPattern::Scalar::None) {
      // `$eps : scalar float`: a number from the example domain, even in a
      // Tensor slot (as an exporter writes `x + 1e-05`).
      auto it = env_.ints.find(name);
      if (it == env_.ints.end())
        it = env_.ints.emplace(name, 8).first;
      out = p.scalar == ArgPattern::Scalar::Float ? Argument(static_cast<double>(it->second))
                                                  : Argument(it->second);
    } else if (tensorType || p.type || p.mustBeParam || !type) {
      bool none = false;
      GRAFT_TRY(Value * v, leaf(p, name, nodeIndex, optional, &none));
      out = none ? Argument() : Argument(v);
    } else {
      using B = SchemaType::Base;
      if (type->isList) {
        return Diagnostic::error("cannot instantiate $" + name + " (" + type->str() +
                                 "): write the list in the pattern, e.g. [1, $G]");
      }
      switch (type->base) {
      case B::Int:
      case B::SymInt:
      case B::Scalar:
      case B::Float: {
        auto it = env_.ints.find(name);
        if (it == env_.ints.end())
          it = env_.ints.emplace(name, 8).first;
        out = type->base == B::Float ? Argument(static_cast<double>(it->second))
                                     : Argument(it->second);
        break;
      }
      case B::Bool:
        out = Argument(false);
        break;
      case B::ScalarType: {
        auto it = env_.dtypes.find(name);
        out = Argument(it == env_.dtypes.end() ? DType::F32 : it->second);
        env_.dtypes.emplace(name, out.dtype());
        break;
      }
      default:
        if (optional) {
          out = Argument();
          break;
        }
        return Diagnostic::error("cannot instantiate $" + name + " (" + type->str() +
                                 "): give it an example value");
      }
    }
    slots_[p.slot] = out;
    return out;
  }
  }
  return Diagnostic::error("unsupported pattern");
}

BuildResult InstanceBuilder::build(int stopAfter) {
  BuildResult res;
  res.graph = std::make_unique<Graph>("instance_" + cr_.rule().name);
  g_ = res.graph.get();
  res_ = &res;
  slots_.clear();
  leafCount_ = 0;
  results_.assign(cr_.nodes.size(), {});
  int last = stopAfter >= 0 ? stopAfter : static_cast<int>(cr_.nodes.size()) - 1;
  for (int i = 0; i <= last; ++i) {
    const CNode &cn = cr_.nodes[static_cast<std::size_t>(i)];
    auto fail = [&](const std::string &msg) {
      res.failedNode = i;
      res.error = msg;
      return std::move(res);
    };
    auto opt = std::find(sites_.optionalNodes.begin(), sites_.optionalNodes.end(), i);
    bool absent = opt != sites_.optionalNodes.end() &&
                  choices_[static_cast<std::size_t>(opt - sites_.optionalNodes.begin())] == 1;
    // The accept to build: the current signature of the first schema,
    // preferring the `default` overload of an overload-insensitive target.
    const detail::Accept *acc = nullptr;
    for (const detail::Accept &a : cn.accepts)
      if (a.schema && a.layout < 0 && (!acc || a.schema->overload == "default"))
        if (!acc || acc->schema->overload != "default")
          acc = &a;
    if (!acc)
      return fail("cannot instantiate " + cn.targetsText + ": the op is not registered");
    if (absent) {
      const SchemaType *t = cn.passthroughArg < acc->layoutSchema->args.size()
                                ? &acc->layoutSchema->args[cn.passthroughArg].type
                                : nullptr;
      auto a = instantiate(cn.args[cn.passthroughArg], t, i);
      if (!a.ok())
        return fail(a.diags()[0].message);
      if (!a->isValue())
        return fail("the passthrough of optional " + cn.targetsText + " is not a value");
      results_[static_cast<std::size_t>(i)] = {a->value()};
      continue;
    }
    const OpSchema &schema = *acc->layoutSchema;
    std::vector<std::optional<Argument>> values(schema.args.size());
    for (const auto &param : acc->constrained) {
      if (param.index < 0)
        continue;
      const SchemaArg &sa = schema.args[static_cast<std::size_t>(param.index)];
      auto a = instantiate(*param.pat, &sa.type, i);
      if (!a.ok())
        return fail(a.diags()[0].message);
      values[static_cast<std::size_t>(param.index)] = std::move(*a);
    }
    for (std::size_t k = 0; k < schema.args.size(); ++k)
      if (!values[k] && !schema.args[k].defaultValue)
        return fail("cannot instantiate " + schema.qualifiedName() + ": required argument '" +
                    schema.args[k].name + "' is not in the pattern");
    // Spell the call as an exporter would: leading arguments positionally,
    // trailing defaults left out, the rest by keyword.
    auto isDefault = [&](std::size_t k) {
      return !values[k] ||
             (schema.args[k].defaultValue && *values[k] == *schema.args[k].defaultValue);
    };
    std::size_t npos = 0;
    while (npos < schema.numPositional() && values[npos])
      ++npos;
    while (npos > 0 && isDefault(npos - 1) && schema.args[npos - 1].defaultValue)
      --npos;
    std::vector<Argument> positional;
    std::vector<std::pair<std::string, Argument>> kwargs;
    for (std::size_t k = 0; k < schema.args.size(); ++k) {
      if (k < npos)
        positional.push_back(*values[k]);
      else if (!isDefault(k))
        kwargs.emplace_back(schema.args[k].name, *values[k]);
    }
    // Keyword-only and positional parameters alike bind by name.
    std::vector<Graph::ResultSpec> specs;
    for (const SchemaReturn &r : schema.returns) {
      ValueKind kind =
          r.type.base == SchemaType::Base::SymInt || r.type.base == SchemaType::Base::Int
              ? ValueKind::SymInt
          : r.type.base == SchemaType::Base::Float ? ValueKind::SymFloat
          : r.type.base == SchemaType::Base::Bool  ? ValueKind::SymBool
                                                   : ValueKind::Tensor;
      if (r.type.base == SchemaType::Base::Scalar) {
        // A Scalar result (aten._local_scalar_dense, `.item()`) is an int,
        // float or bool by the dtype of the tensor it is read from.
        kind = ValueKind::SymInt;
        for (const Argument &a : positional)
          if (a.isValue() && a.value()->isTensor()) {
            DType dt = a.value()->proto().dtype;
            kind = dt == DType::Bool     ? ValueKind::SymBool
                   : isFloatingPoint(dt) ? ValueKind::SymFloat
                                         : ValueKind::SymInt;
            break;
          }
      }
      specs.push_back({"", kind, TensorProto()});
    }
    for (std::size_t r = 0; r < specs.size() && r < cn.src->results.size(); ++r)
      if (!bare(cn.src->results[r]).empty() && bare(cn.src->results[r]) != "_")
        specs[r].name = g_->uniqueName(bare(cn.src->results[r]));
    for (auto &s : specs)
      if (s.name.empty())
        s.name = g_->uniqueName("v");
    Node *n = g_->createNode(acc->schema->qualifiedName(), std::move(positional), std::move(kwargs),
                             std::move(specs));
    n->setSchema(acc->schema);
    auto inferred = inferResults(*n, g_->symbols());
    if (!inferred.ok())
      return fail(inferred.diags()[0].message);
    for (std::size_t r = 0; r < n->numOutputs() && r < inferred->size(); ++r)
      g_->setProto(n->output(static_cast<unsigned>(r)), (*inferred)[r].proto);
    results_[static_cast<std::size_t>(i)].assign(n->outputs().begin(), n->outputs().end());
    if (i == cr_.root)
      res.root = n;
  }
  // Outputs: the root's results, or (for a partial build) the last node's.
  const auto &outs = results_[static_cast<std::size_t>(last)];
  for (Value *v : outs)
    if (v)
      g_->addOutput(v);
  // A multi-root instance: every root's results are outputs (compared
  // before and after the rewrite like the first root's), except those
  // written `_` (`root _ = llama.update_cache(...)`: an in-place op whose
  // result must stay unused, or the rewrite is refused).
  if (stopAfter < 0)
    for (const RootSearch &rs : cr_.rootSearches) {
      const auto &names = cr_.nodes[static_cast<std::size_t>(rs.root)].src->results;
      const auto &vals = results_[rs.root];
      for (std::size_t r = 0; r < vals.size(); ++r)
        if (vals[r] && r < names.size() && !bare(names[r]).empty() && bare(names[r]) != "_")
          g_->addOutput(vals[r]);
    }
  // Inputs an in-place op of the instance mutates (a KV cache) are outputs
  // too, as the graph signature's input mutations: their final contents
  // are part of what the rewrite must keep.
  if (stopAfter < 0) {
    std::vector<Value *> mutated;
    for (const Node &n : g_->nodes()) {
      if (!n.schema())
        continue;
      auto b = BoundArgs::bind(n);
      if (!b.ok())
        continue;
      for (Value *v : b->mutatedValues())
        if (v->inputIndex() >= 0 && std::find(mutated.begin(), mutated.end(), v) == mutated.end())
          mutated.push_back(v);
    }
    for (Value *v : mutated)
      g_->addOutput(v, OutputKind::UserInputMutation, std::string(v->name()));
  }
  return res;
}

/// Candidate prototypes for a leaf whose type pattern leaves parts free.
std::vector<TensorProto> candidates(const LeafSpec &s, const CompiledRule &cr, const Env &env) {
  std::vector<DType> dtypes;
  auto addDt = [&](DType d) {
    if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end())
      dtypes.push_back(d);
  };
  if (s.dtype) {
    addDt(*s.dtype);
  } else {
    addDt(DType::F32);
    std::function<void(const CArg &)> lits = [&](const CArg &a) {
      if (a.kind == ArgPattern::Kind::Literal && a.src->literal.isDType())
        addDt(a.src->literal.dtype());
      for (const CArg &e : a.elements)
        lits(e);
    };
    for (const CNode &n : cr.nodes) {
      for (const CArg &a : n.args)
        lits(a);
      for (const auto &kv : n.kwargs)
        lits(kv.second);
    }
    for (const auto &[k, d] : env.dtypes)
      addDt(d);
    addDt(DType::I64);
    addDt(DType::I32);
  }
  std::vector<int64_t> pool;
  auto addP = [&](int64_t v) {
    if (v > 0 && std::find(pool.begin(), pool.end(), v) == pool.end() && pool.size() < 10)
      pool.push_back(v);
  };
  if (!s.param) {
    addP(2);
    addP(3);
  }
  // Captured dims in the order the pattern's type patterns mention them
  // (`param $w : i8[$V, $D]` puts V before D), so the natural shapes
  // ([V, D / G] for scales) come before merely compatible ones.
  std::function<void(const CArg &)> dimsOf = [&](const CArg &a) {
    if (a.type)
      for (const DimPattern &d : a.type->dims)
        if (d.kind == DimPattern::Kind::Var) {
          auto it = env.ints.find(bare(d.var));
          if (it != env.ints.end())
            addP(it->second);
        }
    for (const CArg &e : a.elements)
      dimsOf(e);
  };
  for (const CNode &n : cr.nodes) {
    for (const CArg &a : n.args)
      dimsOf(a);
    for (const auto &kv : n.kwargs)
      dimsOf(kv.second);
  }
  for (const auto &[k, v] : env.ints)
    addP(v);
  for (const auto &[ka, a] : env.ints)
    for (const auto &[kb, b] : env.ints)
      if (b > 1 && a > b && a % b == 0)
        addP(a / b);
  addP(1);
  addP(2);
  std::vector<std::vector<int64_t>> shapes;
  if (s.rank) {
    std::vector<std::vector<int64_t>> acc{{}};
    for (const auto &d : s.dims) {
      std::vector<std::vector<int64_t>> next;
      for (const auto &prefix : acc)
        for (int64_t v : d ? std::vector<int64_t>{*d} : pool) {
          auto w = prefix;
          w.push_back(v);
          next.push_back(std::move(w));
        }
      acc = std::move(next);
    }
    shapes = std::move(acc);
  } else {
    for (int64_t a : pool)
      for (int64_t b : pool)
        shapes.push_back({a, b});
    for (int64_t a : pool)
      shapes.push_back({a});
    shapes.push_back({});
  }
  std::vector<TensorProto> out;
  for (DType d : dtypes)
    for (const auto &sh : shapes) {
      Shape shape;
      for (int64_t v : sh)
        shape.push_back(Dim(v));
      out.emplace_back(d, shape);
    }
  return out;
}

/// Runs a (partial) instance; an error message, or empty when it runs.
std::string runsCleanly(const Graph &g, uint64_t seed) {
  auto in = makeRandomInputs(g, seed);
  if (!in.ok())
    return in.diags()[0].message;
  auto out = Interpreter().run(g, *in);
  if (!out.ok())
    return out.diags()[0].message;
  return "";
}

/// Fixes the prototypes of guessed leaves, node by node: all candidate
/// combinations of the leaves a node introduces are tried (at most 4096)
/// until shape inference accepts the node and the partial instance runs.
std::string searchLeaves(InstanceBuilder &b, const CompiledRule &cr, uint64_t seed) {
  for (std::size_t round = 0; round <= cr.nodes.size(); ++round) {
    BuildResult r = b.build();
    std::vector<LeafSpec> open;
    int node = -1;
    for (const auto &[spec, n] : r.guessed)
      if (!b.fixedLeaves.count(spec.key) && (node < 0 || n == node)) {
        node = n;
        if (std::none_of(open.begin(), open.end(),
                         [&](const LeafSpec &o) { return o.key == spec.key; }))
          open.push_back(spec);
      }
    if (open.empty())
      return r.ok() ? "" : r.error;
    std::vector<std::vector<TensorProto>> cands;
    for (const LeafSpec &s : open)
      cands.push_back(candidates(s, cr, b.env()));
    std::vector<std::size_t> idx(open.size(), 0);
    bool found = false;
    std::string lastError;
    for (unsigned tries = 0; tries < 4096 && !found; ++tries) {
      for (std::size_t k = 0; k < open.size(); ++k)
        b.fixedLeaves[open[k].key] = cands[k][idx[k]];
      BuildResult part = b.build(node);
      if (part.ok()) {
        std::string err = runsCleanly(*part.graph, seed);
        if (err.empty())
          found = true;
        else
          lastError = err;
      } else {
        lastError = part.error;
      }
      // Next combination.
      std::size_t k = 0;
      for (; k < idx.size() && !found; ++k) {
        if (++idx[k] < cands[k].size())
          break;
        idx[k] = 0;
      }
      if (k == idx.size())
        break;
    }
    if (!found) {
      std::string names;
      for (const LeafSpec &s : open)
        names += (names.empty() ? "" : ", ") + (s.key[0] == '_' ? "a `_` argument" : "$" + s.key);
      return "cannot find a prototype for " + names + " of " +
             cr.nodes[static_cast<std::size_t>(node)].targetsText + " (last error: " + lastError +
             "); give it a type pattern such as `$" + open[0].key +
             " : f32[$A, $B]` with example values";
    }
  }
  return "cannot build an instance";
}

std::string describe(const Env &env, const Sites &sites, const std::vector<int> &choices,
                     const CompiledRule &cr, uint64_t seed) {
  std::string out;
  for (const auto &[k, v] : env.ints)
    out += (out.empty() ? "" : ", ") + k + "=" + std::to_string(v);
  for (const auto &[k, v] : env.dtypes)
    out += (out.empty() ? "" : ", ") + k + "=" + std::string(name(v));
  for (std::size_t i = 0; i < sites.optionalNodes.size(); ++i) {
    const PatternNode &pn = *cr.nodes[static_cast<std::size_t>(sites.optionalNodes[i])].src;
    out += "; %" + (pn.results.empty() ? std::string("?") : bare(pn.results[0])) +
           (choices[i] ? " absent" : " present");
  }
  for (std::size_t i = 0; i < sites.alternatives.size(); ++i)
    out += "; alternative " + std::to_string(choices[sites.optionalNodes.size() + i] + 1) + " at " +
           detail::formatLoc(sites.alternatives[i]->src->loc);
  return out + (out.empty() ? "" : "; ") + "seed " + std::to_string(seed);
}

} // namespace

RuleVerification verifyRule(const CompiledRules &rules, std::size_t index,
                            const RuleVerifyOptions &options) {
  const CompiledRule &cr = rules.compiled(index);
  const Rule &rule = cr.rule();
  RuleVerification out;
  out.rule = rule.name;
  out.variant = rule.variant;
  out.loc = rule.loc;
  WhereFacts facts = analyzeWhere(rule);
  Sites sites = choiceSites(cr);
  std::vector<Point> points = enumerateDomain(rule.example);
  std::vector<std::vector<int>> variants = enumerateVariants(sites);
  struct Instance {
    const Point *point;
    const std::vector<int> *choices;
    uint64_t seed;
  };
  std::vector<Instance> all;
  for (const Point &p : points)
    for (const auto &v : variants)
      all.push_back({&p, &v, options.seed});
  unsigned want = std::max(1u, options.instances);
  std::vector<Instance> chosen;
  if (all.size() >= want) {
    for (unsigned i = 0; i < want; ++i) {
      std::size_t k = want == 1 ? 0 : i * (all.size() - 1) / (want - 1);
      chosen.push_back(all[k]);
    }
    chosen.erase(std::unique(chosen.begin(), chosen.end(),
                             [](const Instance &a, const Instance &b) {
                               return a.point == b.point && a.choices == b.choices;
                             }),
                 chosen.end());
  } else {
    for (unsigned i = 0; i < want; ++i) {
      Instance in = all[i % all.size()];
      in.seed = options.seed + i / all.size();
      chosen.push_back(in);
    }
  }
  std::set<std::string> errors;
  for (const Instance &inst : chosen) {
    Env env = inst.point->env;
    solveEqualities(facts, env);
    InstanceBuilder builder(cr, rules.registry(), facts, env, sites, *inst.choices, inst.seed);
    std::string err = searchLeaves(builder, cr, inst.seed);
    std::string what = describe(builder.env(), sites, *inst.choices, cr, inst.seed);
    if (!err.empty()) {
      errors.insert(err);
      continue;
    }
    BuildResult before = builder.build();
    BuildResult after = builder.build();
    if (!before.ok() || !after.ok() || !before.root) {
      errors.insert(before.ok() ? "the instance has no root" : before.error);
      continue;
    }
    // The instance must match its own rule; failing the where clause only
    // means the example point is outside the rule's domain.
    detail::Matcher m(*before.graph);
    m.explain = true;
    if (!m.match(cr, before.root)) {
      int site = m.failure().site;
      bool isWhere =
          std::find(cr.whereSites.begin(), cr.whereSites.end(), site) != cr.whereSites.end();
      if (isWhere) {
        ++out.skipped;
        continue;
      }
      errors.insert("an instance does not match its own pattern (" + what +
                    "): " + m.failure().message);
      continue;
    }
    // The instance's tolerance: the first guarded clause that holds on its
    // bindings, else the unguarded one.
    double atol = rule.atol, rtol = rule.rtol;
    for (std::size_t g = 0; g < cr.toleranceGuards.size(); ++g)
      if (detail::truthy(m.eval(cr.toleranceGuards[g]))) {
        atol = rule.guardedTolerances[g].atol;
        rtol = rule.guardedTolerances[g].rtol;
        break;
      }
    auto inputs = makeRandomInputs(*before.graph, inst.seed, {}, before.inputRanges);
    if (!inputs.ok()) {
      errors.insert(inputs.diags()[0].message);
      continue;
    }
    auto ref = Interpreter().run(*before.graph, *inputs);
    if (!ref.ok()) {
      errors.insert("the instance does not run (" + what + "): " + ref.diags()[0].message);
      continue;
    }
    ++out.tested;
    auto fail = [&](std::string message, double diff) {
      Counterexample c;
      c.instance = what;
      c.message = std::move(message);
      c.before = std::move(before.graph);
      c.after = std::move(after.graph);
      c.maxAbsDiff = diff;
      out.counterexample = std::move(c);
    };
    FqnRegistry fqns;
    RewriteOptions ro;
    ro.onlyRules = {rule.name};
    ro.recordLog = false;
    ro.maxIterations = 2;
    // One instance takes a handful of rewrites; a rule whose replacement its
    // own pattern matches again runs on to this limit.
    ro.maxRewrites = kInstanceRewriteLimit;
    auto applied = applyRules(*after.graph, rules, fqns, ro);
    if (!applied.ok()) {
      fail("the rewrite failed: " + applied.diags()[0].message, 0);
      break;
    }
    if (applied->rewrites == 0) {
      const RuleStats &st = applied->stats[index];
      std::string why =
          st.rejections.empty() ? "it did not match" : "it was refused: " + st.rejections[0].first;
      fail("the rule did not rewrite its own instance: " + why, 0);
      break;
    }
    if (applied->stopReason == "rewrite limit") {
      fail("the rule fires again on its own output: " + std::to_string(applied->rewrites) +
               " rewrites of one instance without reaching a fixpoint (its replacement matches "
               "its own pattern)",
           0);
      break;
    }
    auto got = Interpreter().run(*after.graph, *inputs);
    if (!got.ok()) {
      fail("the rewritten instance does not run: " + got.diags()[0].message, 0);
      break;
    }
    // Compare outputs.
    std::string mismatch;
    double worst = 0;
    for (std::size_t o = 0; o < ref->size() && mismatch.empty(); ++o) {
      const auto *a = std::get_if<Tensor>(&(*ref)[o]);
      const auto *b = o < got->size() ? std::get_if<Tensor>(&(*got)[o]) : nullptr;
      if (!a || !b) {
        std::string want = str((*ref)[o]);
        std::string have = o < got->size() ? str((*got)[o]) : std::string("nothing");
        if (want != have)
          mismatch = "output " + std::to_string(o) + " is " + have + ", expected " + want;
        continue;
      }
      if (a->sizes() != b->sizes() || a->dtype() != b->dtype()) {
        mismatch = "output " + std::to_string(o) + " is " + b->proto().str() + ", expected " +
                   a->proto().str();
        continue;
      }
      for (int64_t k = 0; k < a->numel(); ++k) {
        double x = a->getDouble(k), y = b->getDouble(k);
        // Equal infinities (both overflowed the same way) and NaNs agree; x - y
        // would be NaN for the former.
        if ((std::isnan(x) && std::isnan(y)) || (std::isinf(x) && x == y))
          continue;
        double d = std::abs(x - y);
        worst = std::max(worst, std::isnan(d) ? INFINITY : d);
        // Otherwise a non-finite value on either side is a difference: with an
        // infinite `before`, rtol * |before| would admit any `after`.
        bool finite = std::isfinite(x) && std::isfinite(y);
        if (!(finite && d <= atol + rtol * std::abs(x)) && mismatch.empty())
          mismatch = "output " + std::to_string(o) + " differs at " +
                     detail::formatIndex(a->sizes(), k) + ": before " + detail::formatDouble(x) +
                     ", after " + detail::formatDouble(y) + " (|diff| " + detail::formatDouble(d) +
                     " > atol " + detail::formatDouble(atol) + " + rtol " +
                     detail::formatDouble(rtol) + " * |before|)";
      }
    }
    if (!mismatch.empty()) {
      fail(mismatch, worst);
      break;
    }
    ++out.passed;
    out.worstDiff = std::max(out.worstDiff, worst);
  }
  out.errors.assign(errors.begin(), errors.end());
  if (out.tested == 0 && out.errors.empty() && !out.counterexample)
    out.errors.push_back("no instance of the example domain satisfies the where clause (" +
                         std::to_string(out.skipped) + " skipped); give example values that do");
  return out;
}

std::vector<RuleVerification> verifyRules(const CompiledRules &rules,
                                          const RuleVerifyOptions &options) {
  std::vector<RuleVerification> out;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const Rule &r = rules.rule(i);
    if (!options.onlyRules.empty() && std::find(options.onlyRules.begin(), options.onlyRules.end(),
                                                r.name) == options.onlyRules.end())
      continue;
    out.push_back(verifyRule(rules, i, options));
  }
  return out;
}

std::string format(const RuleVerification &v) {
  std::string head = "rule " + v.rule + (v.variant ? "#" + std::to_string(v.variant) : "") + " (" +
                     detail::formatLoc(v.loc) + "): ";
  if (v.ok())
    return head + "ok, " + std::to_string(v.passed) + " instance(s), max |diff| " +
           detail::formatDouble(v.worstDiff) +
           (v.skipped ? ", " + std::to_string(v.skipped) + " outside the where clause" : "") + "\n";
  std::string out;
  if (v.counterexample) {
    out += head + "FAILED on " + v.counterexample->instance + "\n  " + v.counterexample->message +
           "\n";
  }
  for (const std::string &e : v.errors)
    out += head + "cannot verify: " + e + "\n";
  if (out.empty())
    out = head + "nothing tested\n";
  return out;
}

} // namespace graft::rewrite
