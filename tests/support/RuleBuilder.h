//===- RuleBuilder.h - Building rewrite::Rules in C++ for tests ---*- C++ -*-===//
//
// The rewrite engine's tests build rules directly (independent of the .pat
// front end) with these helpers. Every element gets a fake location in
// "rules.pat" (line = the order it was made) so explain output has
// something to point at. Also holds the reference rules the engine tests
// share: the torchao embedding rule and the q4gsw linear rules.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/rewrite/Rule.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graft::testing {

using namespace graft::rewrite;

inline SourceRange at(uint32_t line, uint32_t col = 1, const std::string &file = "rules.pat") {
  SourceRange r;
  r.begin.file = file;
  r.begin.line = line;
  r.begin.column = col;
  return r;
}

//===-- Argument patterns --------------------------------------------------===//

inline ArgPattern wild(SourceRange loc = {}) {
  ArgPattern p;
  p.kind = ArgPattern::Kind::Wildcard;
  p.loc = loc;
  return p;
}
inline ArgPattern var(std::string name, SourceRange loc = {}) {
  ArgPattern p;
  p.kind = ArgPattern::Kind::Var;
  p.name = std::move(name);
  p.loc = loc;
  return p;
}
inline ArgPattern res(std::string name, SourceRange loc = {}) {
  ArgPattern p;
  p.kind = ArgPattern::Kind::PatResult;
  p.name = std::move(name);
  p.loc = loc;
  return p;
}
inline ArgPattern lit(Argument value, SourceRange loc = {}) {
  ArgPattern p;
  p.kind = ArgPattern::Kind::Literal;
  p.literal = std::move(value);
  p.loc = loc;
  return p;
}
inline ArgPattern list(std::vector<ArgPattern> elems, SourceRange loc = {}) {
  ArgPattern p;
  p.kind = ArgPattern::Kind::List;
  p.elements = std::move(elems);
  p.loc = loc;
  return p;
}
inline ArgPattern alt(std::vector<ArgPattern> alts, SourceRange loc = {}) {
  ArgPattern p;
  p.kind = ArgPattern::Kind::Alternatives;
  p.elements = std::move(alts);
  p.loc = loc;
  return p;
}

inline DimPattern dvar(std::string name) {
  DimPattern d;
  d.kind = DimPattern::Kind::Var;
  d.var = std::move(name);
  return d;
}
inline DimPattern dlit(int64_t v) {
  DimPattern d;
  d.kind = DimPattern::Kind::Literal;
  d.value = v;
  return d;
}
inline DimPattern dany() {
  return DimPattern();
}

/// `: i8[$V, $D]`; dtype none + dtypeVar "" means any dtype.
inline TypePattern type(std::optional<DType> dt, std::vector<DimPattern> dims,
                        std::string dtypeVar = "", bool ellipsis = false) {
  TypePattern t;
  t.dtype = dt;
  t.dtypeVar = std::move(dtypeVar);
  t.dims = std::move(dims);
  t.leadingEllipsis = ellipsis;
  return t;
}
inline TypePattern anyType(std::optional<DType> dt = std::nullopt) {
  TypePattern t;
  t.dtype = dt;
  t.anyRank = true;
  return t;
}

inline ArgPattern typed(ArgPattern p, TypePattern t) {
  p.type = std::move(t);
  return p;
}
inline ArgPattern param(std::string name, std::optional<TypePattern> t = std::nullopt,
                        SourceRange loc = {}) {
  ArgPattern p = var(std::move(name), loc);
  p.mustBeParam = true;
  p.type = std::move(t);
  return p;
}

//===-- Expressions ---------------------------------------------------------===//

inline ExprPtr eptr(Expr e) {
  return std::make_shared<const Expr>(std::move(e));
}
inline ExprPtr elit(Argument a, SourceRange loc = {}) {
  Expr e;
  e.kind = Expr::Kind::Literal;
  e.literal = std::move(a);
  e.loc = loc;
  return eptr(std::move(e));
}
inline ExprPtr evar(std::string n, SourceRange loc = {}) {
  Expr e;
  e.kind = Expr::Kind::Var;
  e.name = std::move(n);
  e.loc = loc;
  return eptr(std::move(e));
}
inline ExprPtr eres(std::string n, SourceRange loc = {}) {
  Expr e;
  e.kind = Expr::Kind::PatResult;
  e.name = std::move(n);
  e.loc = loc;
  return eptr(std::move(e));
}
inline ExprPtr ebin(std::string op, ExprPtr a, ExprPtr b, SourceRange loc = {}) {
  Expr e;
  e.kind = Expr::Kind::Binary;
  e.name = std::move(op);
  e.operands = {std::move(a), std::move(b)};
  e.loc = loc;
  return eptr(std::move(e));
}
inline ExprPtr eun(std::string op, ExprPtr a, SourceRange loc = {}) {
  Expr e;
  e.kind = Expr::Kind::Unary;
  e.name = std::move(op);
  e.operands = {std::move(a)};
  e.loc = loc;
  return eptr(std::move(e));
}
inline ExprPtr ecall(std::string fn, std::vector<ExprPtr> args,
                     std::vector<std::pair<std::string, ExprPtr>> kwargs = {},
                     SourceRange loc = {}) {
  Expr e;
  e.kind = Expr::Kind::Call;
  e.name = std::move(fn);
  e.operands = std::move(args);
  e.kwargs = std::move(kwargs);
  e.loc = loc;
  return eptr(std::move(e));
}
inline ExprPtr elist(std::vector<ExprPtr> elems) {
  Expr e;
  e.kind = Expr::Kind::List;
  e.operands = std::move(elems);
  return eptr(std::move(e));
}
inline ExprPtr eint(int64_t v) {
  return elit(Argument(v));
}
inline ExprPtr estr(std::string s) {
  return elit(Argument(std::move(s)));
}

//===-- Nodes and statements -----------------------------------------------===//

inline PatternNode pnode(std::vector<std::string> results, std::vector<std::string> targets,
                         std::vector<ArgPattern> args,
                         std::vector<std::pair<std::string, ArgPattern>> kwargs = {},
                         SourceRange loc = {}) {
  PatternNode n;
  n.results = std::move(results);
  n.targets = std::move(targets);
  n.args = std::move(args);
  n.kwargs = std::move(kwargs);
  n.loc = loc;
  return n;
}

inline RewriteStmt transformStmt(std::string result, std::string transform,
                                 std::vector<ExprPtr> args,
                                 std::vector<std::pair<std::string, ExprPtr>> kwargs = {},
                                 SourceRange loc = {}) {
  RewriteStmt s;
  s.kind = RewriteStmt::Kind::ConstTransform;
  s.results = {std::move(result)};
  s.target = std::move(transform);
  s.args = std::move(args);
  s.kwargs = std::move(kwargs);
  s.loc = loc;
  return s;
}
inline RewriteStmt letStmt(std::string result, ExprPtr value, SourceRange loc = {}) {
  RewriteStmt s;
  s.kind = RewriteStmt::Kind::Let;
  s.results = {std::move(result)};
  s.value = std::move(value);
  s.loc = loc;
  return s;
}
inline RewriteStmt newNode(std::vector<std::string> results, std::string target,
                           std::vector<ExprPtr> args,
                           std::vector<std::pair<std::string, ExprPtr>> kwargs = {},
                           SourceRange loc = {}) {
  RewriteStmt s;
  s.kind = RewriteStmt::Kind::NewNode;
  s.results = std::move(results);
  s.target = std::move(target);
  s.args = std::move(args);
  s.kwargs = std::move(kwargs);
  s.loc = loc;
  return s;
}

//===-- The reference rules -------------------------------------------------===//

/// The torchao int4 dequantize_affine pattern of a weight: `%dq`.
///   %dq = torchao.dequantize_affine(param $w : i8[$N, $K], [1, $G], param $s, $zp,
///                                   i8, -8, 7, output_dtype = $odt)
inline PatternNode dqWeightNode(const std::string &dq, const std::string &w, const std::string &s,
                                const std::string &n, const std::string &k, uint32_t line) {
  return pnode(
      {dq}, {"torchao.dequantize_affine.default"},
      {param(w, type(DType::I8, {dvar(n), dvar(k)}), at(line, 30)),
       list({lit(Argument(int64_t(1)), at(line, 52)), var("G", at(line, 55))}, at(line, 51)),
       param(s, type(std::nullopt, {dvar(n), dany()}), at(line, 60)), var("zp", at(line, 69)),
       lit(Argument(DType::I8), at(line, 74)), lit(Argument(int64_t(-8)), at(line, 78)),
       lit(Argument(int64_t(7)), at(line, 82))},
      {{"output_dtype", var("odt", at(line, 100))}}, at(line, 3));
}

inline ExprPtr zpIsZero(uint32_t line) {
  return ebin("||", ecall("is_none", {evar("zp")}), ecall("all_zero", {evar("zp")}), at(line, 26));
}

/// rule torchao_embedding_q4gsw: the example, with the nibble order
/// of the packing a parameter (high_first is the planted bug).
inline Rule embeddingRule(const std::string &nibbles = "low_first", bool sharedDq = false) {
  Rule r;
  r.name = "torchao_embedding_q4gsw";
  r.benefit = 10;
  r.loc = at(1, 1);
  r.nodes.push_back(dqWeightNode("dq", "w", "s", "V", "D", 3));
  r.nodes.back().shared = sharedDq;
  r.nodes.push_back(pnode({"out"}, {"aten.embedding"},
                          {res("dq", at(5, 28)), var("idx", at(5, 33))}, {}, at(5, 5)));
  r.root = 1;
  r.where = {ebin("==", ebin("%", evar("D"), evar("G")), eint(0), at(7, 11)),
             ebin("==", ebin("%", evar("D"), eint(32)), eint(0), at(7, 26)), zpIsZero(7),
             ecall("values_in", {evar("w"), eint(-8), eint(7)}, {}, at(7, 60))};
  r.rewrite = {
      transformStmt("packed", "pack_int4", {evar("w")}, {{"nibbles", estr(nibbles)}}, at(10, 5)),
      newNode({"out"}, "et_vk.embedding_q4gsw", {evar("packed"), evar("s"), evar("G"), evar("idx")},
              {{"is_linear_weight", elit(Argument(true))}}, at(11, 5))};
  r.example.ints = {{"V", {64}}, {"D", {64, 128}}, {"G", {32}}};
  return r;
}

/// rule torchao_linear_q4gsw: weight-only int4 linear. `transposeScales`
/// false is the planted bug (scales left [N, G]).
inline Rule linearRule(bool transposeScales = true, const std::string &nibbles = "low_first") {
  Rule r;
  r.name = "torchao_linear_q4gsw";
  r.benefit = 10;
  r.loc = at(20, 1);
  r.nodes.push_back(dqWeightNode("dq", "w", "s", "N", "K", 22));
  r.nodes.push_back(
      pnode({"out"}, {"aten.linear"},
            {typed(var("x", at(24, 25)), type(std::nullopt, {dvar("K")}, "xdt", true)),
             res("dq", at(24, 28)), var("bias", at(24, 33))},
            {}, at(24, 5)));
  r.root = 1;
  r.where = {ebin("==", ebin("%", evar("K"), evar("G")), eint(0), at(26, 11)), zpIsZero(26),
             ecall("values_in", {evar("w"), eint(-8), eint(7)}, {}, at(26, 60))};
  r.rewrite.push_back(transformStmt("wp", "pad_to_multiple", {evar("w")},
                                    {{"dim", eint(1)}, {"multiple", eint(8)}}, at(29, 5)));
  r.rewrite.push_back(
      transformStmt("packed", "pack_int4", {evar("wp")}, {{"nibbles", estr(nibbles)}}, at(30, 5)));
  if (transposeScales) {
    r.rewrite.push_back(
        transformStmt("st", "transpose", {evar("s"), eint(0), eint(1)}, {}, at(31, 5)));
    r.rewrite.push_back(transformStmt("sp", "pad_to_multiple", {evar("st")},
                                      {{"dim", eint(1)}, {"multiple", eint(8)}}, at(32, 5)));
  }
  r.rewrite.push_back(newNode(
      {"out"}, "et_vk.linear_q4gsw",
      {evar("x"), evar("packed"), evar(transposeScales ? "sp" : "s"), evar("G"), evar("bias")}, {},
      at(33, 5)));
  r.example.ints = {{"N", {8, 16}}, {"K", {64}}, {"G", {32}}};
  return r;
}

} // namespace graft::testing
