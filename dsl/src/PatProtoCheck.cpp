//===- PatProtoCheck.cpp - Does the rewrite keep the replaced prototypes? --===//
//
// A rewrite that replaces a matched result must produce a value of the same
// prototype (kind, dtype, rank, dims): otherwise every user of the old value
// silently sees another tensor. `graft check` proves a violation by
// building one concrete instance of the rule:
//
//  1. the match becomes a small graph: type patterns give graph inputs
//     (`param $w : i8[$V, $D]` is a parameter of that type), dims come from
//     the example block (`example { V = 64 }`) or stay symbolic (symbol V),
//     captured ints/dtypes from the example, literals as written, untyped
//     optional tensors as None; each pattern node is created and its results
//     inferred with the op's shape/dtype rule (graft::inferResults);
//  2. the rewrite runs on that graph: constant transforms through their
//     `infer` half (ConstantTransforms.h), computed attributes evaluated,
//     new nodes created and inferred;
//  3. each replaced result is compared with its replacement.
//
// Whatever the pattern does not pin down (an untyped tensor capture, a dtype
// capture without an example value, an inference rule that cannot handle a
// symbolic dim) makes the values that depend on it unknown, and unknown
// values are not compared: the check reports only real mismatches, never
// guesses. docs/dsl.md ("Static checks") describes this for rule authors.
//
//===----------------------------------------------------------------------===//
#include "PatSema.h"

#include "graft/ir/Graph.h"
#include "graft/ops/OpRegistry.h"
#include "graft/ops/ShapeInference.h"
#include "graft/rewrite/ConstantTransforms.h"

#include <map>
#include <optional>

namespace graft::dsl {

using rewrite::ArgPattern;
using rewrite::DimPattern;
using rewrite::Expr;
using rewrite::PatternNode;
using rewrite::RewriteStmt;
using rewrite::Rule;

namespace {

class ProtoChecker {
public:
  ProtoChecker(const Rule &rule, const SemaContext &ctx) : rule_(rule), ctx_(ctx) {}

  std::vector<Diagnostic> run() {
    for (const auto &[name, values] : rule_.example.ints)
      if (!values.empty())
        ints_[name] = values.front();
    for (const auto &[name, values] : rule_.example.dtypes)
      if (!values.empty())
        dtypes_[name] = values.front();
    // A capture may be typed at any of its occurrences (`$x` first, `$x : f32[...]`
    // later): remember each capture's type pattern so the first use can build it.
    for (const PatternNode &n : rule_.nodes) {
      for (const ArgPattern &a : n.args)
        collectTypes(a);
      for (const auto &kv : n.kwargs)
        collectTypes(kv.second);
    }
    for (const PatternNode &n : rule_.nodes)
      matchNode(n);
    for (const RewriteStmt &s : rule_.rewrite)
      rewriteStmt(s);
    return std::move(diags_);
  }

private:
  //===-- Instantiating the match -----------------------------------------===//

  void collectTypes(const ArgPattern &a) {
    if (a.kind == ArgPattern::Kind::Var && a.type && !typed_.count(a.name))
      typed_[a.name] = &a;
    if (a.kind == ArgPattern::Kind::List)
      for (const ArgPattern &e : a.elements)
        collectTypes(e);
  }

  /// The Dim a dimension pattern stands for in this instance.
  std::optional<Dim> dimOf(const DimPattern &d) {
    switch (d.kind) {
    case DimPattern::Kind::Literal:
      return Dim(d.value);
    case DimPattern::Kind::Var:
      if (auto it = ints_.find(d.var); it != ints_.end())
        return Dim(it->second);
      symbol(d.var);
      symbolic_ = true;
      return Dim::symbol(d.var);
    default: {
      // `_`: a fresh symbol, so comparisons still see the dim unchanged.
      std::string name = "_" + std::to_string(anonymous_++);
      symbol(name);
      symbolic_ = true;
      return Dim::symbol(name);
    }
    }
  }

  void symbol(const std::string &name) { graph_.symbols().declare(name, SymbolRange{1, {}}); }

  /// A tensor prototype from a type pattern, when it fixes dtype and shape.
  std::optional<TensorProto> protoOf(const rewrite::TypePattern &t) {
    std::optional<DType> dt = t.dtype;
    if (!dt && !t.dtypeVar.empty())
      if (auto it = dtypes_.find(t.dtypeVar); it != dtypes_.end())
        dt = it->second;
    if (!dt || t.anyRank)
      return std::nullopt;
    Shape shape;
    for (const DimPattern &d : t.dims) {
      auto dim = dimOf(d);
      if (!dim)
        return std::nullopt;
      shape.push_back(*dim);
    }
    return TensorProto(*dt, shape);
  }

  /// The argument an instance passes for pattern `p` (schema type `t`), or
  /// nullopt when the pattern does not determine it.
  std::optional<Argument> argOf(const ArgPattern &p, const SchemaType *t) {
    switch (p.kind) {
    case ArgPattern::Kind::Literal:
      return p.literal;
    case ArgPattern::Kind::PatResult: {
      auto it = results_.find(p.name);
      if (it == results_.end())
        return std::nullopt;
      return Argument(it->second);
    }
    case ArgPattern::Kind::List: {
      SchemaType elem;
      const SchemaType *et = nullptr;
      if (t) {
        elem = *t;
        elem.isList = false;
        elem.optional = t->elementOptional;
        et = &elem;
      }
      Argument::List items;
      for (const ArgPattern &e : p.elements) {
        auto a = argOf(e, et);
        if (!a)
          return std::nullopt;
        items.push_back(*a);
      }
      return Argument(std::move(items));
    }
    case ArgPattern::Kind::Alternatives:
      // Any alternative is a valid instance; take the first.
      return p.elements.empty() ? std::nullopt : argOf(p.elements.front(), t);
    case ArgPattern::Kind::Var:
    case ArgPattern::Kind::Wildcard:
      break;
    }
    bool isVar = p.kind == ArgPattern::Kind::Var;
    if (p.scalar != ArgPattern::Scalar::None) {
      // `scalar float`/`scalar int`: a number from the example (else 1).
      int64_t v = 1;
      if (auto it = ints_.find(p.name); isVar && it != ints_.end())
        v = it->second;
      return p.scalar == ArgPattern::Scalar::Float ? Argument(static_cast<double>(v)) : Argument(v);
    }
    if (isVar) {
      if (auto it = values_.find(p.name); it != values_.end())
        return Argument(it->second);
      if (auto it = ints_.find(p.name); it != ints_.end())
        return Argument(it->second);
      if (auto it = dtypes_.find(p.name); it != dtypes_.end())
        return Argument(it->second);
    }
    const ArgPattern *typedAt = &p;
    if (isVar && !p.type)
      if (auto it = typed_.find(p.name); it != typed_.end())
        typedAt = it->second;
    if (typedAt->type) {
      auto proto = protoOf(*typedAt->type);
      if (!proto)
        return std::nullopt;
      std::string name = isVar ? p.name : graph_.uniqueName("any");
      Value *v = p.mustBeParam || typedAt->mustBeParam
                     ? graph_.addInput(InputKind::Parameter, graph_.uniqueName(name), *proto,
                                       "check." + name)
                     : graph_.addInput(InputKind::UserInput, graph_.uniqueName(name), *proto);
      if (isVar)
        values_[p.name] = v;
      return Argument(v);
    }
    if (!t)
      return std::nullopt;
    using B = SchemaType::Base;
    if (t->optional && t->base == B::Tensor && !t->isList)
      return Argument::none();
    // A captured int that is also a (symbolic) dim of some type pattern.
    if (isVar && (t->base == B::Int || t->base == B::SymInt) && !t->isList &&
        graph_.symbols().find(p.name)) {
      Value *v = graph_.addScalarInput(ValueKind::SymInt, p.name);
      values_[p.name] = v;
      return Argument(v);
    }
    return std::nullopt;
  }

  const OpSchema *schemaFor(const std::string &target) const {
    if (std::count(target.begin(), target.end(), '.') == 2)
      return ctx_.ops.lookup(target);
    auto ov = ctx_.ops.overloads(target);
    return ov.empty() ? nullptr : ov.front();
  }

  void matchNode(const PatternNode &n) {
    const OpSchema *s = schemaFor(n.targets.front());
    if (!s)
      return;
    std::vector<Argument> args;
    std::vector<std::pair<std::string, Argument>> kwargs;
    for (std::size_t i = 0; i < n.args.size(); ++i) {
      auto a = argOf(n.args[i], i < s->args.size() ? &s->args[i].type : nullptr);
      if (!a)
        return;
      args.push_back(*a);
    }
    for (const auto &[key, p] : n.kwargs) {
      int idx = s->argIndex(key);
      auto a = argOf(p, idx >= 0 ? &s->args[static_cast<std::size_t>(idx)].type : nullptr);
      if (!a)
        return;
      kwargs.emplace_back(key, *a);
    }
    std::string why;
    auto protos = create(*s, args, kwargs, n.results, &why);
    if (!protos) {
      // A concrete instance the op rejects: the example contradicts the match.
      if (!symbolic_ && !why.empty() && !rule_.example.ints.empty() && !warnedExample_) {
        warnedExample_ = true;
        Diagnostic d = Diagnostic::warning(n.loc, "the example does not give a valid instance of "
                                                  "this pattern node: " +
                                                      why);
        d.note(instanceNote());
        diags_.push_back(std::move(d));
      }
      return;
    }
    for (std::size_t r = 0; r < n.results.size() && r < protos->size(); ++r)
      if (!n.results[r].empty()) {
        results_[n.results[r]] = (*protos)[r];
        matched_[n.results[r]] = &n;
      }
  }

  /// Creates a node and infers its results; nullopt when inference fails
  /// (then `why` says why, when the failure is the op rule's verdict).
  std::optional<std::vector<Value *>> create(const OpSchema &s, std::vector<Argument> args,
                                             std::vector<std::pair<std::string, Argument>> kwargs,
                                             const std::vector<std::string> &names,
                                             std::string *why = nullptr) {
    std::vector<Graph::ResultSpec> specs;
    for (std::size_t r = 0; r < s.returns.size(); ++r) {
      Graph::ResultSpec spec;
      spec.name = graph_.uniqueName(r < names.size() && !names[r].empty() ? names[r] : "v");
      using B = SchemaType::Base;
      B b = s.returns[r].type.base;
      spec.kind = b == B::Int || b == B::SymInt ? ValueKind::SymInt
                  : b == B::Float               ? ValueKind::SymFloat
                  : b == B::Bool                ? ValueKind::SymBool
                                                : ValueKind::Tensor;
      specs.push_back(std::move(spec));
    }
    Node *node =
        graph_.createNode(s.qualifiedName(), std::move(args), std::move(kwargs), std::move(specs));
    node->setSchema(&s);
    auto inferred = inferResults(*node, graph_.symbols());
    if (!inferred) {
      if (why && !inferred.diags().empty()) {
        // Drop the "node %v_1 (ns.op.overload): " prefix naming the scratch node.
        *why = inferred.diags().front().message;
        if (why->rfind("node %", 0) == 0)
          if (auto p = why->find("): "); p != std::string::npos)
            *why = why->substr(p + 3);
      }
      return std::nullopt;
    }
    if (inferred->size() != node->numOutputs())
      return std::nullopt;
    std::vector<Value *> out;
    for (unsigned i = 0; i < node->numOutputs(); ++i) {
      if ((*inferred)[i].kind != node->output(i)->kind())
        return std::nullopt;
      node->graph()->setProto(node->output(i), (*inferred)[i].proto);
      out.push_back(node->output(i));
    }
    return out;
  }

  //===-- Running the rewrite ---------------------------------------------===//

  /// Evaluates a rewrite expression in this instance.
  std::optional<Argument> eval(const Expr &e) {
    switch (e.kind) {
    case Expr::Kind::Literal:
      return e.literal;
    case Expr::Kind::Var: {
      if (auto it = values_.find(e.name); it != values_.end())
        return Argument(it->second);
      if (auto it = ints_.find(e.name); it != ints_.end())
        return Argument(it->second);
      if (auto it = dtypes_.find(e.name); it != dtypes_.end())
        return Argument(it->second);
      if (auto it = lets_.find(e.name); it != lets_.end())
        return it->second;
      return std::nullopt;
    }
    case Expr::Kind::PatResult: {
      if (auto it = results_.find(e.name); it != results_.end())
        return Argument(it->second);
      if (auto it = created_.find(e.name); it != created_.end())
        return Argument(it->second);
      return std::nullopt;
    }
    case Expr::Kind::List: {
      Argument::List items;
      for (const auto &op : e.operands) {
        auto a = eval(*op);
        if (!a)
          return std::nullopt;
        items.push_back(*a);
      }
      return Argument(std::move(items));
    }
    case Expr::Kind::Unary: {
      auto a = eval(*e.operands.front());
      if (!a)
        return std::nullopt;
      if (e.name == "-" && a->isInt())
        return Argument(-a->integer());
      if (e.name == "-" && a->isFloat())
        return Argument(-a->floating());
      if (e.name == "!" && a->isBool())
        return Argument(!a->boolean());
      return std::nullopt;
    }
    case Expr::Kind::Binary: {
      auto a = eval(*e.operands[0]);
      auto b = eval(*e.operands[1]);
      if (!a || !b || !a->isInt() || !b->isInt())
        return std::nullopt;
      int64_t x = a->integer(), y = b->integer();
      if (e.name == "+")
        return Argument(x + y);
      if (e.name == "-")
        return Argument(x - y);
      if (e.name == "*")
        return Argument(x * y);
      if ((e.name == "//" || e.name == "%") && y > 0)
        return Argument(e.name == "//" ? (x >= 0 ? x / y : -((-x + y - 1) / y))
                                       : ((x % y) + y) % y);
      return std::nullopt;
    }
    case Expr::Kind::Call: {
      if (e.operands.empty())
        return std::nullopt;
      auto a = eval(*e.operands.front());
      if (!a || !a->isValue() || !a->value()->isTensor())
        return std::nullopt;
      const TensorProto &p = a->value()->proto();
      if (e.name == "rank")
        return Argument(p.rank());
      if (e.name == "dtype")
        return Argument(p.dtype);
      if (e.name == "numel") {
        if (auto n = p.numel().value())
          return Argument(*n);
        return std::nullopt;
      }
      if (e.name == "dim" && e.operands.size() == 2) {
        auto i = eval(*e.operands[1]);
        if (!i || !i->isInt())
          return std::nullopt;
        int64_t d = normalizeDim(i->integer(), p.rank());
        if (d < 0)
          return std::nullopt;
        if (auto v = p.shape[static_cast<std::size_t>(d)].value())
          return Argument(*v);
      }
      return std::nullopt;
    }
    }
    return std::nullopt;
  }

  void rewriteStmt(const RewriteStmt &s) {
    switch (s.kind) {
    case RewriteStmt::Kind::Let:
      if (auto v = eval(*s.value))
        lets_[s.results.front()] = *v;
      return;
    case RewriteStmt::Kind::Forward: {
      auto v = eval(*s.value);
      auto old = results_.find(s.results.front());
      if (v && v->isValue() && old != results_.end())
        compare(s, s.results.front(), *old->second, *v->value());
      return;
    }
    case RewriteStmt::Kind::ConstTransform: {
      const rewrite::ConstantTransform *t = ctx_.transforms.find(s.target);
      if (!t)
        return;
      std::vector<const TensorProto *> inputs;
      std::vector<Argument> params;
      for (std::size_t i = 0; i < s.args.size(); ++i) {
        auto a = eval(*s.args[i]);
        if (!a)
          return;
        if (i < t->inputs.size()) {
          if (!a->isValue() || !a->value()->isTensor())
            return;
          inputs.push_back(&a->value()->proto());
        } else {
          params.push_back(*a);
        }
      }
      std::vector<std::pair<std::string, Argument>> kwargs;
      for (const auto &[k, v] : s.kwargs) {
        auto a = eval(*v);
        if (!a)
          return;
        kwargs.emplace_back(k, *a);
      }
      auto bound = rewrite::bindTransformArgs(*t, params, kwargs);
      if (!bound)
        return;
      auto plan = rewrite::planTransform(*t, inputs, *bound);
      if (!plan) {
        if (!symbolic_ && !plan.diags().empty()) {
          Diagnostic d =
              Diagnostic::error(s.loc, "constant transform " + t->name +
                                           " rejects its inputs: " + plan.diags().front().message);
          d.note(instanceNote());
          diags_.push_back(std::move(d));
        }
        return;
      }
      const std::string &name = s.results.front();
      values_[name] = graph_.addInput(InputKind::Parameter, graph_.uniqueName(name), plan->proto,
                                      "check." + name);
      return;
    }
    case RewriteStmt::Kind::NewNode: {
      const OpSchema *schema = ctx_.ops.lookup(s.target);
      if (!schema)
        return;
      std::vector<Argument> args;
      std::vector<std::pair<std::string, Argument>> kwargs;
      for (const auto &e : s.args) {
        auto a = eval(*e);
        if (!a)
          return;
        args.push_back(*a);
      }
      for (const auto &[k, e] : s.kwargs) {
        auto a = eval(*e);
        if (!a)
          return;
        kwargs.emplace_back(k, *a);
      }
      std::string why;
      auto outs = create(*schema, std::move(args), std::move(kwargs), s.results, &why);
      if (!outs) {
        // Every input is known and concrete, yet the op rejects them: the
        // rewrite builds an invalid node.
        if (!symbolic_ && !why.empty()) {
          Diagnostic d = Diagnostic::error(s.loc, "the rewrite builds an invalid " + s.target +
                                                      " node: " + why);
          d.note(instanceNote());
          diags_.push_back(std::move(d));
        }
        return;
      }
      for (std::size_t r = 0; r < s.results.size() && r < outs->size(); ++r) {
        const std::string &name = s.results[r];
        if (name.empty())
          continue;
        auto old = results_.find(name);
        if (old == results_.end()) {
          created_[name] = (*outs)[r];
          continue;
        }
        compare(s, name, *old->second, *(*outs)[r]);
      }
      return;
    }
    }
  }

  void compare(const RewriteStmt &s, const std::string &name, const Value &before,
               const Value &after) {
    std::string why;
    if (before.kind() != after.kind()) {
      why = "a " + std::string(graft::name(after.kind())) + " instead of a " +
            std::string(graft::name(before.kind()));
    } else if (before.isTensor()) {
      const TensorProto &a = before.proto(), &b = after.proto();
      if (a.dtype != b.dtype) {
        why = "dtype " + std::string(graft::name(b.dtype)) + " instead of " +
              std::string(graft::name(a.dtype));
      } else if (a.rank() != b.rank()) {
        why = "rank " + std::to_string(b.rank()) + " instead of " + std::to_string(a.rank());
      } else {
        for (std::size_t i = 0; i < a.shape.size(); ++i)
          if (!a.shape[i].isOpaque() && !b.shape[i].isOpaque() && a.shape[i] != b.shape[i]) {
            why = "dim " + std::to_string(i) + " is " + b.shape[i].str() + " instead of " +
                  a.shape[i].str();
            break;
          }
      }
    }
    if (why.empty())
      return;
    std::string beforeText =
        before.isTensor() ? before.proto().str() : graft::name(before.kind()).data();
    std::string afterText =
        after.isTensor() ? after.proto().str() : graft::name(after.kind()).data();
    Diagnostic d = Diagnostic::error(
        s.loc,
        "the rewrite replaces %" + name + " (" + beforeText +
            ") with a value of another "
            "prototype: " +
            (s.kind == RewriteStmt::Kind::Forward ? std::string("the forwarded value") : s.target) +
            " gives " + afterText + " (" + why + ")");
    if (auto it = matched_.find(name); it != matched_.end())
      d.note(it->second->loc, "%" + name + " is matched here");
    d.note(instanceNote());
    diags_.push_back(std::move(d));
  }

  std::string instanceNote() const {
    std::string inst;
    for (const auto &[k, v] : ints_)
      inst += (inst.empty() ? "" : ", ") + k + " = " + std::to_string(v);
    for (const auto &[k, v] : dtypes_)
      inst += (inst.empty() ? "" : ", ") + k + " = " + std::string(graft::name(v));
    return "checked on the instance " +
           (inst.empty() ? std::string("with symbolic dims") : "{ " + inst + " }") +
           " built from the match's type patterns and the example";
  }

  const Rule &rule_;
  const SemaContext &ctx_;
  Graph graph_{"check"};
  std::map<std::string, int64_t> ints_;
  std::map<std::string, DType> dtypes_;
  std::map<std::string, Value *> values_;           ///< captures bound to graph values
  std::map<std::string, const ArgPattern *> typed_; ///< first typed occurrence of each capture
  std::map<std::string, Argument> lets_;            ///< computed attributes
  std::map<std::string, Value *> results_;          ///< matched results
  std::map<std::string, const PatternNode *> matched_;
  std::map<std::string, Value *> created_; ///< new rewrite results
  std::vector<Diagnostic> diags_;
  bool symbolic_ = false; ///< some dim of the instance is a symbol
  bool warnedExample_ = false;
  int anonymous_ = 0;
};

} // namespace

std::vector<Diagnostic> checkRewritePrototypes(const Rule &rule, const SemaContext &ctx) {
  return ProtoChecker(rule, ctx).run();
}

} // namespace graft::dsl
