//===- SymExpr.cpp - sympy expression text <-> graft Dims -----------------===//
//
// One small recursive-descent parser reads both sympy spellings into an AST:
// function-call syntax (srepr: Add, Mul, Integer, Symbol, FloorDiv, ...) and
// infix syntax (str: +, -, *, //, **, parentheses). The AST is folded into a
// Dim with Dim's own arithmetic, so linear expressions normalize and the
// opaque ones read the way the text IR prints them.
//
//===----------------------------------------------------------------------===//
#include "pt2/SymExpr.h"

#include <cctype>
#include <memory>
#include <vector>

namespace graft::pt2 {

namespace {

struct Ast {
  enum class Kind { Int, Name, Call, Binary, Neg, String } kind = Kind::Int;
  int64_t value = 0;
  std::string name; ///< symbol / function name, operator, or string literal
  std::vector<std::unique_ptr<Ast>> args;
  std::vector<std::pair<std::string, std::unique_ptr<Ast>>> kwargs;
};
using AstPtr = std::unique_ptr<Ast>;

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Expected<AstPtr> parse() {
    auto e = expr(0);
    if (!e)
      return e;
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return e;
  }

private:
  Diagnostic fail(const std::string &why) const {
    return Diagnostic::error("cannot parse symbolic expression '" + std::string(text_) +
                             "': " + why + " at column " + std::to_string(pos_ + 1));
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool eat(std::string_view tok) {
    skipSpace();
    if (text_.substr(pos_, tok.size()) == tok) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }

  Expected<AstPtr> expr(int depth) {
    if (depth > 200)
      return fail("expression nests too deeply");
    GRAFT_TRY(AstPtr lhs, term(depth));
    while (true) {
      skipSpace();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) {
        char op = text_[pos_++];
        GRAFT_TRY(AstPtr rhs, term(depth));
        lhs = binary(std::string(1, op), std::move(lhs), std::move(rhs));
        continue;
      }
      return lhs;
    }
  }

  Expected<AstPtr> term(int depth) {
    GRAFT_TRY(AstPtr lhs, unary(depth));
    while (true) {
      skipSpace();
      std::string op;
      if (text_.substr(pos_, 2) == "//")
        op = "//";
      else if (text_.substr(pos_, 2) == "**")
        op = "**";
      else if (pos_ < text_.size() &&
               (text_[pos_] == '*' || text_[pos_] == '/' || text_[pos_] == '%'))
        op = std::string(1, text_[pos_]);
      if (op.empty())
        return lhs;
      pos_ += op.size();
      GRAFT_TRY(AstPtr rhs, unary(depth));
      lhs = binary(op, std::move(lhs), std::move(rhs));
    }
  }

  Expected<AstPtr> unary(int depth) {
    if (eat("-")) {
      GRAFT_TRY(AstPtr inner, unary(depth + 1));
      auto n = std::make_unique<Ast>();
      n->kind = Ast::Kind::Neg;
      n->args.push_back(std::move(inner));
      return n;
    }
    return primary(depth);
  }

  static AstPtr binary(std::string op, AstPtr a, AstPtr b) {
    auto n = std::make_unique<Ast>();
    n->kind = Ast::Kind::Binary;
    n->name = std::move(op);
    n->args.push_back(std::move(a));
    n->args.push_back(std::move(b));
    return n;
  }

  Expected<AstPtr> primary(int depth) {
    skipSpace();
    if (pos_ >= text_.size())
      return fail("unexpected end");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      GRAFT_TRY(AstPtr e, expr(depth + 1));
      if (!eat(")"))
        return fail("expected ')'");
      return e;
    }
    if (c == '\'' || c == '"') {
      std::size_t end = text_.find(c, pos_ + 1);
      if (end == std::string_view::npos)
        return fail("unterminated string");
      auto n = std::make_unique<Ast>();
      n->kind = Ast::Kind::String;
      n->name = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
      pos_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
        ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e'))
        return fail("non-integer number");
      auto n = std::make_unique<Ast>();
      n->kind = Ast::Kind::Int;
      try {
        n->value = std::stoll(std::string(text_.substr(start, pos_ - start)));
      } catch (const std::exception &) {
        return fail("integer out of range");
      }
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      auto n = std::make_unique<Ast>();
      n->name = std::string(text_.substr(start, pos_ - start));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        ++pos_;
        n->kind = Ast::Kind::Call;
        skipSpace();
        if (eat(")"))
          return n;
        while (true) {
          // keyword argument?
          skipSpace();
          std::size_t save = pos_;
          std::size_t k = pos_;
          while (k < text_.size() &&
                 (std::isalnum(static_cast<unsigned char>(text_[k])) || text_[k] == '_'))
            ++k;
          std::size_t after = k;
          while (after < text_.size() && text_[after] == ' ')
            ++after;
          if (k > save && after < text_.size() && text_[after] == '=' &&
              (after + 1 >= text_.size() || text_[after + 1] != '=')) {
            std::string key(text_.substr(save, k - save));
            pos_ = after + 1;
            GRAFT_TRY(AstPtr v, expr(depth + 1));
            n->kwargs.emplace_back(std::move(key), std::move(v));
          } else {
            GRAFT_TRY(AstPtr v, expr(depth + 1));
            n->args.push_back(std::move(v));
          }
          if (eat(","))
            continue;
          if (eat(")"))
            break;
          return fail("expected ',' or ')'");
        }
        return n;
      }
      n->kind = Ast::Kind::Name;
      return n;
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

/// Folds an AST into a Dim.
class Folder {
public:
  explicit Folder(const SymbolRenamer &rename) : rename_(rename) {}

  Expected<Dim> fold(const Ast &a) {
    switch (a.kind) {
    case Ast::Kind::Int:
      return Dim(a.value);
    case Ast::Kind::String:
      return Diagnostic::error("unexpected string '" + a.name + "' in a symbolic size");
    case Ast::Kind::Name:
      if (a.name == "True" || a.name == "False")
        return Dim(a.name == "True" ? 1 : 0);
      return Dim::symbol(rename_(a.name));
    case Ast::Kind::Neg: {
      GRAFT_TRY(Dim d, fold(*a.args[0]));
      return Dim(0) - d;
    }
    case Ast::Kind::Binary: {
      GRAFT_TRY(Dim l, fold(*a.args[0]));
      GRAFT_TRY(Dim r, fold(*a.args[1]));
      if (a.name == "+")
        return l + r;
      if (a.name == "-")
        return l - r;
      if (a.name == "*")
        return l * r;
      if (a.name == "//")
        return floorDiv(l, r);
      return Dim::opaque(paren(l) + a.name + paren(r));
    }
    case Ast::Kind::Call:
      return call(a);
    }
    return Diagnostic::internal("unreachable");
  }

private:
  static std::string paren(const Dim &d) {
    std::string s = d.str();
    bool simple = d.isConstant() || d.isSymbol();
    return simple ? s : "(" + s + ")";
  }
  static Dim floorDiv(const Dim &l, const Dim &r) {
    if (r.isConstant() && r.constant() > 0)
      return l.floorDiv(r.constant());
    return Dim::opaque(paren(l) + "//" + paren(r));
  }

  Expected<Dim> call(const Ast &a) {
    const std::string &f = a.name;
    if (f == "Symbol") {
      if (a.args.size() != 1 || a.args[0]->kind != Ast::Kind::String)
        return Diagnostic::error("Symbol() expects a quoted name");
      return Dim::symbol(rename_(a.args[0]->name));
    }
    if (f == "Integer") {
      if (a.args.size() != 1)
        return Diagnostic::error("Integer() expects one argument");
      return fold(*a.args[0]);
    }
    Shape args;
    for (const AstPtr &x : a.args) {
      GRAFT_TRY(Dim d, fold(*x));
      args.push_back(std::move(d));
    }
    if (f == "Add") {
      Dim sum(0);
      for (const Dim &d : args)
        sum = sum + d;
      return sum;
    }
    if (f == "Mul") {
      Dim prod(1);
      for (const Dim &d : args)
        prod = prod * d;
      return prod;
    }
    if (f == "FloorDiv" && args.size() == 2)
      return floorDiv(args[0], args[1]);
    std::string text = f + "(";
    for (std::size_t i = 0; i < args.size(); ++i)
      text += (i ? ", " : "") + args[i].str();
    return Dim::opaque(text + ")");
  }

  const SymbolRenamer &rename_;
};

/// Renders an AST (parsed from an IR opaque dim's text) as srepr.
class Srepr {
public:
  explicit Srepr(const SymbolNamer &name) : name_(name) {}

  Expected<std::string> render(const Ast &a) {
    switch (a.kind) {
    case Ast::Kind::Int:
      return "Integer(" + std::to_string(a.value) + ")";
    case Ast::Kind::String:
      return Diagnostic::error("unexpected string in a symbolic size");
    case Ast::Kind::Name:
      return symbolSrepr(name_(a.name));
    case Ast::Kind::Neg: {
      GRAFT_TRY(std::string x, render(*a.args[0]));
      return "Mul(Integer(-1), " + x + ")";
    }
    case Ast::Kind::Binary: {
      GRAFT_TRY(std::string l, render(*a.args[0]));
      GRAFT_TRY(std::string r, render(*a.args[1]));
      if (a.name == "+")
        return "Add(" + l + ", " + r + ")";
      if (a.name == "-")
        return "Add(" + l + ", Mul(Integer(-1), " + r + "))";
      if (a.name == "*")
        return "Mul(" + l + ", " + r + ")";
      if (a.name == "//")
        return "FloorDiv(" + l + ", " + r + ")";
      if (a.name == "%")
        return "Mod(" + l + ", " + r + ")";
      if (a.name == "**")
        return "Pow(" + l + ", " + r + ")";
      return "CleanDiv(" + l + ", " + r + ")";
    }
    case Ast::Kind::Call: {
      std::string s = a.name + "(";
      for (std::size_t i = 0; i < a.args.size(); ++i) {
        GRAFT_TRY(std::string x, render(*a.args[i]));
        s += (i ? ", " : "") + x;
      }
      return s + ")";
    }
    }
    return Diagnostic::internal("unreachable");
  }

private:
  const SymbolNamer &name_;
};

} // namespace

Expected<Dim> parseSymExpr(std::string_view text, const SymbolRenamer &rename) {
  Parser p(text);
  GRAFT_TRY(AstPtr ast, p.parse());
  Folder f(rename);
  auto d = f.fold(*ast);
  if (!d)
    return Diagnostic::error("cannot convert symbolic expression '" + std::string(text) +
                             "': " + d.diags()[0].message);
  return d;
}

std::string bareSymbolName(std::string_view text) {
  Parser p(text);
  auto ast = p.parse();
  if (!ast)
    return {};
  const Ast &a = **ast;
  if (a.kind == Ast::Kind::Name)
    return a.name;
  if (a.kind == Ast::Kind::Call && a.name == "Symbol" && a.args.size() == 1 &&
      a.args[0]->kind == Ast::Kind::String)
    return a.args[0]->name;
  return {};
}

std::string symbolSrepr(const std::string &fileName) {
  if (!fileName.empty() && fileName[0] == 's')
    return "Symbol('" + fileName + "', integer=True, positive=True)";
  return "Symbol('" + fileName + "', integer=True)";
}

Expected<std::string> dimToSrepr(const Dim &dim, const SymbolNamer &name) {
  if (dim.isOpaque()) {
    Parser p(dim.opaqueExpr());
    GRAFT_TRY(AstPtr ast, p.parse());
    Srepr r(name);
    return r.render(*ast);
  }
  std::vector<std::string> parts;
  for (const auto &[sym, k] : dim.terms()) {
    std::string s = symbolSrepr(name(sym));
    parts.push_back(k == 1 ? s : "Mul(Integer(" + std::to_string(k) + "), " + s + ")");
  }
  if (dim.constant() != 0 || parts.empty())
    parts.push_back("Integer(" + std::to_string(dim.constant()) + ")");
  if (parts.size() == 1)
    return parts[0];
  std::string s = "Add(";
  for (std::size_t i = 0; i < parts.size(); ++i)
    s += (i ? ", " : "") + parts[i];
  return s + ")";
}

} // namespace graft::pt2
