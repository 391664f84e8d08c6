//===- TextIRParser.cpp - Parser for graft's text IR (.gir) ---------------===//
//
// Two passes. A PEGTL grammar (private to this file) checks the syntax and
// builds a parse tree of the interesting tokens; every point where the
// grammar commits (`must<>`) names what it expected, so a syntax error reads
// "expected ',' or ']'" rather than a PEGTL rule name. The Builder then walks
// the tree in text order and constructs the Graph: it resolves value and
// symbol names, evaluates dimension expressions with graft::Dim arithmetic,
// validates types and quantization layouts, and loads constant data. Every
// semantic error is located at the offending token. The format is documented
// in docs/ir.md.
//
//===----------------------------------------------------------------------===//
#include "graft/ops/OpRegistry.h"
#include "graft/serialize/TextIR.h"
#include "graft/support/FileIO.h"
#include "graft/support/FloatBits.h"
#include "support/PegtlSupport.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace graft {
namespace {

// Error scaffolding, parse-tree plumbing, the lexical rules shared with the
// .pat parser (GRAFT_EXPECT, Tag, Identifier, Digits, QuotedString, ...) and
// literal decoding (parseInteger, parseDouble, unescape).
using namespace grammar;

//===----------------------------------------------------------------------===//
// Grammar
//===----------------------------------------------------------------------===//

/// Kinds of the parse-tree nodes the Builder looks at. Rules carrying a kind
/// (through Tag) are stored in the tree; all others only shape the syntax.
enum class K : uint8_t {
  Root,
  GraphName,
  SymDecl,
  SymName,
  IntLit,
  FloatLit,
  Inf,
  InputDecl,
  InputKindKw,
  ValueDef,
  ValueRef,
  ScalarType,
  TensorType,
  DTypeName,
  DimExpr,
  DimTerm,
  DimNeg,
  DimInt,
  DimSym,
  DimCall,
  DimCallName,
  AddOp,
  MulOp,
  StridesAttr,
  OffsetAttr,
  DeviceAttr,
  QuantAttr,
  InputAttr,
  AttrKey,
  FuncCall,
  FuncName,
  List,
  KwArg,
  ArgKey,
  String,
  Ident,
  NodeStmt,
  Result,
  OpCall,
  Target,
  BareNode,
  Metadata,
  MetaEntry,
  MetaKey,
  OutputStmt,
  MutateStmt,
  MutateKind,
};

// `//` is a comment everywhere except inside dimension expressions, where it
// is floor division; those use DimWs, which never eats a comment.
struct LineComment : peg::seq<peg::two<'/'>, peg::until<peg::eolf>> {};
struct Ws : peg::star<peg::sor<peg::space, LineComment>> {};
struct DimWs : peg::star<peg::space> {};

// A keyword must not run into an identifier or an op name ("input.x.y(...)"
// is a call of op "input.x.y", not an input declaration).
struct KwEnd : peg::not_at<peg::sor<IdentOther, peg::one<'.'>>> {};
template <typename Str> struct Kw : peg::seq<Str, KwEnd> {};
#define GRAFT_KW(text) Kw<TAO_PEGTL_STRING(text)>

// Literals.
struct FloatLit : peg::seq<peg::opt<peg::one<'-'>>, DecimalFloat<GRAFT_KW("inf"), GRAFT_KW("nan")>,
                           peg::not_at<IdentOther>>,
                  Tag<K::FloatLit> {};
struct IntLit
    : peg::seq<peg::opt<peg::one<'-'>>, Digits, peg::not_at<peg::sor<IdentOther, peg::one<'.'>>>>,
      Tag<K::IntLit> {};
struct Number : peg::sor<FloatLit, IntLit> {};

struct StringLit : QuotedString, Tag<K::String> {};

GRAFT_EXPECT(ValueNameChars, "expected a value name after '%' (letters, digits and '_')",
             peg::plus<IdentOther>);
struct ValueDef : peg::seq<peg::one<'%'>, peg::must<ValueNameChars>>, Tag<K::ValueDef> {};
struct ValueRef : peg::seq<peg::one<'%'>, peg::must<ValueNameChars>>, Tag<K::ValueRef> {};

// Generic values: node arguments, list elements, layout and initializer
// parameters. Bare names (none, true, f32, strided, cuda:0, ...) are all
// IdentValue; the Builder decides what they mean.
struct ArgValue;
GRAFT_EXPECT(ExpectArgValue,
             "expected a value (%name, number, string, [list], none, true, false, dtype, layout, "
             "memory format or device)",
             ArgValue);
GRAFT_EXPECT(DeviceIndex, "expected a device index after ':'", Digits);
struct IdentValue : peg::seq<Identifier, peg::opt<peg::one<':'>, peg::must<DeviceIndex>>>,
                    Tag<K::Ident> {};
GRAFT_EXPECT(ListEnd, "expected ',' or ']'", peg::one<']'>);
struct ListLit
    : peg::seq<peg::one<'['>, Ws,
               peg::opt<ArgValue, peg::star<Ws, peg::one<','>, Ws, peg::must<ExpectArgValue>>>, Ws,
               peg::must<ListEnd>>,
      Tag<K::List> {};
struct ArgValue : peg::sor<ValueRef, StringLit, Number, ListLit, IdentValue> {};

struct ArgKey : Identifier, Tag<K::ArgKey> {};
struct KwArg : peg::seq<ArgKey, Ws, peg::one<'='>, Ws, peg::must<ExpectArgValue>>, Tag<K::KwArg> {};
struct ArgItem : peg::sor<KwArg, ArgValue> {};
GRAFT_EXPECT(ExpectArgItem, "expected an argument", ArgItem);
struct ArgList : peg::opt<ArgItem, peg::star<Ws, peg::one<','>, Ws, peg::must<ExpectArgItem>>> {};
GRAFT_EXPECT(ArgsEnd, "expected ',' or ')'", peg::one<')'>);
struct FuncName : Identifier, Tag<K::FuncName> {};
struct FuncCall : peg::seq<FuncName, Ws, peg::one<'('>, Ws, ArgList, Ws, peg::must<ArgsEnd>>,
                  Tag<K::FuncCall> {};

// Dimension expressions: + - * // and parentheses over integers and symbols,
// plus function calls (Max(1, s0)) kept opaque.
struct DimExpr;
struct DimTerm;
struct DimUnary;
GRAFT_EXPECT(ExpectDim, "expected a dimension (integer, symbol or expression)", DimExpr);
GRAFT_EXPECT(ExpectDimOperand, "expected a dimension operand", DimUnary);
GRAFT_EXPECT(ExpectDimTerm, "expected a dimension operand", DimTerm);
GRAFT_EXPECT(DimParenEnd, "expected ')' in dimension expression", peg::one<')'>);
struct DimInt : Digits, Tag<K::DimInt> {};
struct DimSym : Identifier, Tag<K::DimSym> {};
struct DimCallName : Identifier, Tag<K::DimCallName> {};
struct DimCall : peg::seq<DimCallName, peg::one<'('>, DimWs, peg::must<ExpectDim>,
                          peg::star<DimWs, peg::one<','>, DimWs, peg::must<ExpectDim>>, DimWs,
                          peg::must<DimParenEnd>>,
                 Tag<K::DimCall> {};
struct DimParen
    : peg::seq<peg::one<'('>, DimWs, peg::must<ExpectDim>, DimWs, peg::must<DimParenEnd>> {};
struct DimAtom : peg::sor<DimInt, DimCall, DimSym, DimParen> {};
struct DimNeg : peg::seq<peg::one<'-'>, DimWs, peg::must<ExpectDimOperand>>, Tag<K::DimNeg> {};
struct DimUnary : peg::sor<DimNeg, DimAtom> {};
struct MulOp : peg::sor<peg::two<'/'>, peg::one<'*'>>, Tag<K::MulOp> {};
struct AddOp : peg::one<'+', '-'>, Tag<K::AddOp> {};
struct DimTerm : peg::seq<DimUnary, peg::star<DimWs, MulOp, DimWs, peg::must<ExpectDimOperand>>>,
                 Tag<K::DimTerm> {};
struct DimExpr : peg::seq<DimTerm, peg::star<DimWs, AddOp, DimWs, peg::must<ExpectDimTerm>>>,
                 Tag<K::DimExpr> {};
struct DimList : peg::opt<DimExpr, peg::star<DimWs, peg::one<','>, DimWs, peg::must<ExpectDim>>> {};

// Types: exactly what TensorProto::str() prints, or a symbolic scalar.
GRAFT_EXPECT(ExpectEquals, "expected '='", peg::one<'='>);
GRAFT_EXPECT(ExpectLBracket, "expected '['", peg::one<'['>);
GRAFT_EXPECT(ShapeOpen, "expected '[' and the shape after the dtype", peg::one<'['>);
GRAFT_EXPECT(ShapeEnd, "expected ',' or ']' in shape", peg::one<']'>);
struct ScalarType : peg::sor<GRAFT_KW("symint"), GRAFT_KW("symfloat"), GRAFT_KW("symbool")>,
                    Tag<K::ScalarType> {};
struct DTypeName : Identifier, Tag<K::DTypeName> {};
struct StridesAttr : peg::seq<GRAFT_KW("strides"), Ws, peg::must<ExpectEquals>, Ws,
                              peg::must<ExpectLBracket>, DimWs, DimList, DimWs, peg::must<ListEnd>>,
                     Tag<K::StridesAttr> {};
struct OffsetAttr
    : peg::seq<GRAFT_KW("offset"), Ws, peg::must<ExpectEquals>, DimWs, peg::must<ExpectDim>>,
      Tag<K::OffsetAttr> {};
GRAFT_EXPECT(ExpectDevice, "expected a device such as cpu or cuda:0", IdentValue);
struct DeviceAttr
    : peg::seq<GRAFT_KW("device"), Ws, peg::must<ExpectEquals>, Ws, peg::must<ExpectDevice>>,
      Tag<K::DeviceAttr> {};
GRAFT_EXPECT(ExpectLayout,
             "expected a quantization layout: affine(...), fp8(...), mxfp8(...), nvfp4(...) or "
             "fp8_blockwise(...)",
             FuncCall);
struct QuantAttr
    : peg::seq<GRAFT_KW("quant"), Ws, peg::must<ExpectEquals>, Ws, peg::must<ExpectLayout>>,
      Tag<K::QuantAttr> {};
struct TypeAttr : peg::sor<StridesAttr, OffsetAttr, DeviceAttr, QuantAttr> {};
GRAFT_EXPECT(ExpectTypeAttr,
             "expected a tensor attribute: strides=, offset=, device= or quant=", TypeAttr);
GRAFT_EXPECT(TypeAttrsEnd, "expected ',' or '}' after a tensor attribute", peg::one<'}'>);
struct TypeAttrs : peg::seq<peg::one<'{'>, Ws, peg::must<ExpectTypeAttr>,
                            peg::star<Ws, peg::one<','>, Ws, peg::must<ExpectTypeAttr>>, Ws,
                            peg::must<TypeAttrsEnd>> {};
struct TensorType : peg::seq<DTypeName, DimWs, peg::must<ShapeOpen>, DimWs, DimList, DimWs,
                             peg::must<ShapeEnd>, peg::opt<DimWs, TypeAttrs>>,
                    Tag<K::TensorType> {};
struct Type : peg::sor<ScalarType, TensorType> {};
GRAFT_EXPECT(ExpectType, "expected a type such as f32[4, s0] or symint", Type);

// sym s0 : [1, 2048]
struct SymName : Identifier, Tag<K::SymName> {};
struct InfKw : GRAFT_KW("inf"), Tag<K::Inf> {};
GRAFT_EXPECT(ExpectSymName, "expected a symbol name after 'sym'", SymName);
GRAFT_EXPECT(ExpectColon, "expected ':'", peg::one<':'>);
GRAFT_EXPECT(ExpectInt, "expected an integer", IntLit);
GRAFT_EXPECT(ExpectComma, "expected ','", peg::one<','>);
GRAFT_EXPECT(ExpectSymMax, "expected an integer or 'inf'", peg::sor<InfKw, IntLit>);
GRAFT_EXPECT(ExpectRBracket, "expected ']'", peg::one<']'>);
struct SymDecl
    : peg::seq<GRAFT_KW("sym"), Ws, peg::must<ExpectSymName>, Ws, peg::must<ExpectColon>, Ws,
               peg::must<ExpectLBracket>, Ws, peg::must<ExpectInt>, Ws, peg::must<ExpectComma>, Ws,
               peg::must<ExpectSymMax>, Ws, peg::must<ExpectRBracket>>,
      Tag<K::SymDecl> {};

// param %w : i8[64, 128] fqn="..." = random(seed=1, min=-8, max=7)
struct InputKindKw
    : peg::sor<GRAFT_KW("input"), GRAFT_KW("param"), GRAFT_KW("buffer"), GRAFT_KW("const")>,
      Tag<K::InputKindKw> {};
GRAFT_EXPECT(ExpectValueDef, "expected a value name such as %x", ValueDef);
struct AttrKey : Identifier, Tag<K::AttrKey> {};
GRAFT_EXPECT(ExpectAttrValue, "expected a string or true/false", peg::sor<StringLit, IdentValue>);
struct InputAttr : peg::seq<AttrKey, Ws, peg::one<'='>, Ws, peg::must<ExpectAttrValue>>,
                   Tag<K::InputAttr> {};
struct Initializer : peg::sor<FuncCall, ListLit> {};
GRAFT_EXPECT(ExpectInitializer,
             "expected an initializer: random(...), full(...), file(...) or [values]", Initializer);
struct InputDecl : peg::seq<InputKindKw, Ws, peg::must<ExpectValueDef>, Ws, peg::must<ExpectColon>,
                            Ws, peg::must<ExpectType>, peg::star<Ws, InputAttr>,
                            peg::opt<Ws, peg::one<'='>, Ws, peg::must<ExpectInitializer>>>,
                   Tag<K::InputDecl> {};

// output %x / mutate buffer "fqn" = %x
GRAFT_EXPECT(ExpectValueRef, "expected a value reference such as %x", ValueRef);
struct OutputStmt : peg::seq<GRAFT_KW("output"), Ws, peg::must<ExpectValueRef>>,
                    Tag<K::OutputStmt> {};
struct MutateKind : peg::sor<GRAFT_KW("buffer"), GRAFT_KW("input")>, Tag<K::MutateKind> {};
GRAFT_EXPECT(ExpectMutateKind, "expected 'buffer' or 'input' after 'mutate'", MutateKind);
GRAFT_EXPECT(ExpectString, "expected a string", StringLit);
struct MutateStmt
    : peg::seq<GRAFT_KW("mutate"), Ws, peg::must<ExpectMutateKind>, Ws, peg::must<ExpectString>, Ws,
               peg::must<ExpectEquals>, Ws, peg::must<ExpectValueRef>>,
      Tag<K::MutateStmt> {};

// %a : T, %b : T = ns.op.overload(args) {key="value"}   and the bare call form.
GRAFT_EXPECT(ExpectOpNamePart, "expected a name after '.' in the op name", Identifier);
struct Target : peg::seq<Identifier, peg::plus<peg::one<'.'>, peg::must<ExpectOpNamePart>>>,
                Tag<K::Target> {};
GRAFT_EXPECT(ExpectLParen, "expected '(' after the op name", peg::one<'('>);
struct OpCall : peg::seq<Target, Ws, peg::must<ExpectLParen>, Ws, ArgList, Ws, peg::must<ArgsEnd>>,
                Tag<K::OpCall> {};
GRAFT_EXPECT(ExpectCall, "expected an op call such as aten.add.Tensor(%a, %b)", OpCall);
struct MetaKey : Identifier, Tag<K::MetaKey> {};
struct MetaEntry : peg::seq<peg::sor<MetaKey, StringLit>, Ws, peg::must<ExpectEquals>, Ws,
                            peg::must<ExpectString>>,
                   Tag<K::MetaEntry> {};
GRAFT_EXPECT(ExpectMetaEntry, "expected a metadata entry key=\"value\"", MetaEntry);
GRAFT_EXPECT(MetadataEnd, "expected ',' or '}' in metadata", peg::one<'}'>);
struct Metadata
    : peg::seq<peg::one<'{'>, Ws,
               peg::opt<MetaEntry, peg::star<Ws, peg::one<','>, Ws, peg::must<ExpectMetaEntry>>>,
               Ws, peg::must<MetadataEnd>>,
      Tag<K::Metadata> {};
GRAFT_EXPECT(ExpectResultColon, "expected ':' and a type after the result name", peg::one<':'>);
struct Result : peg::seq<ValueDef, Ws, peg::must<ExpectResultColon>, Ws, peg::must<ExpectType>>,
                Tag<K::Result> {};
GRAFT_EXPECT(ExpectResult, "expected another result '%name : type'", Result);
GRAFT_EXPECT(ExpectResultsEnd, "expected ',' or '=' after the result type", peg::one<'='>);
struct NodeStmt
    : peg::seq<Result, peg::star<Ws, peg::one<','>, Ws, peg::must<ExpectResult>>, Ws,
               peg::must<ExpectResultsEnd>, Ws, peg::must<ExpectCall>, peg::opt<Ws, Metadata>>,
      Tag<K::NodeStmt> {};
struct BareNode : peg::seq<peg::at<Identifier, peg::one<'.'>>, OpCall, peg::opt<Ws, Metadata>>,
                  Tag<K::BareNode> {};

struct Statement : peg::sor<SymDecl, InputDecl, OutputStmt, MutateStmt, NodeStmt, BareNode> {};
GRAFT_EXPECT(ExpectStatement,
             "expected a statement (sym, input, param, buffer, const, '%name : type = op(...)', "
             "op(...), mutate or output) or '}'",
             Statement);
GRAFT_EXPECT(ExpectRBrace, "expected a statement or '}'", peg::one<'}'>);
struct GraphBody : peg::seq<Ws,
                            peg::star<peg::not_at<peg::one<'}'>>, peg::not_at<peg::eof>,
                                      peg::must<ExpectStatement>, Ws>,
                            peg::must<ExpectRBrace>> {};

GRAFT_EXPECT(ExpectGraphKw, "expected 'graph'", GRAFT_KW("graph"));
GRAFT_EXPECT(ExpectGraphAt, "expected '@name' after 'graph'", peg::one<'@'>);
struct GraphName : Identifier, Tag<K::GraphName> {};
GRAFT_EXPECT(ExpectGraphName, "expected a graph name after '@'", GraphName);
GRAFT_EXPECT(ExpectLBrace, "expected '{'", peg::one<'{'>);
GRAFT_EXPECT(ExpectEof, "expected end of input after the graph's closing '}'", peg::eof);
struct File : peg::seq<Ws, peg::must<ExpectGraphKw>, Ws, peg::must<ExpectGraphAt>,
                       peg::must<ExpectGraphName>, Ws, peg::must<ExpectLBrace>, GraphBody, Ws,
                       peg::must<ExpectEof>> {};

//===----------------------------------------------------------------------===//
// Parse tree plumbing: node kinds, error messages, nesting limit
//===----------------------------------------------------------------------===//

struct Ast : KindNode<Ast, K, K::Root> {
  std::string_view text() const { return string_view(); }
};

// The rules that recurse, bounded by NestingLimit.
template <typename Rule> struct Guard : peg::nothing<Rule> {};
template <> struct Guard<ListLit> : NestingLimit {};
template <> struct Guard<DimParen> : NestingLimit {};
template <> struct Guard<DimNeg> : NestingLimit {};
template <> struct Guard<DimCall> : NestingLimit {};

//===----------------------------------------------------------------------===//
// Literal helpers
//===----------------------------------------------------------------------===//

const std::set<std::string, std::less<>> &deviceTypes() {
  static const std::set<std::string, std::less<>> kTypes = {"cpu", "cuda",   "meta",
                                                            "mps", "vulkan", "xpu"};
  return kTypes;
}

/// How a dtype's elements are written inline.
enum class ElementForm { Bool, Int, Float, None };
ElementForm elementForm(DType dt) {
  if (dt == DType::Bool)
    return ElementForm::Bool;
  if (dt == DType::F4E2M1FNx2 || isComplex(dt))
    return ElementForm::None;
  if (isFloatingPoint(dt))
    return ElementForm::Float;
  if (isIntegral(dt))
    return ElementForm::Int;
  return ElementForm::None; // legacy quantized dtypes
}

/// Inclusive value range of an integer dtype (u64 unclipped, unlike integerBounds).
std::pair<Int128, Int128> intRange(DType dt) {
  if (dt == DType::Bool)
    return {0, 1};
  if (dt == DType::U64)
    return {0, (Int128(1) << 64) - 1};
  auto b = integerBounds(dt);
  return b ? std::pair<Int128, Int128>(b->first, b->second) : std::pair<Int128, Int128>(0, 0);
}

std::string int128Str(Int128 v) {
  if (v == 0)
    return "0";
  bool neg = v < 0;
  unsigned __int128 m =
      neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string s;
  while (m) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  }
  return neg ? "-" + s : s;
}

/// True when a finite value stays finite once rounded to the float dtype.
bool fitsFloatDType(double v, DType dt) {
  if (!std::isfinite(v) || dt == DType::F64)
    return true;
  float f = static_cast<float>(v);
  if (!std::isfinite(f))
    return false;
  return std::isfinite(roundToDType(f, dt));
}

/// A number as a message shows it: integral values without a fraction.
std::string numberStr(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 0x1p63)
    return std::to_string(static_cast<int64_t>(v));
  return formatFloat(v);
}

std::string paren(const Dim &d) {
  return d.isConstant() || d.isSymbol() ? d.str() : "(" + d.str() + ")";
}

int64_t coefficient(const Dim &d, const std::string &name) {
  for (const auto &[n, c] : d.terms())
    if (n == name)
      return c;
  return 0;
}

/// a + sign*b for linear dims, nullopt on int64 overflow.
std::optional<Dim> addLinear(const Dim &a, const Dim &b, int sign) {
  if (!fitsInt64(Int128(a.constant()) + sign * Int128(b.constant())))
    return std::nullopt;
  for (const auto &[n, c] : b.terms())
    if (!fitsInt64(Int128(coefficient(a, n)) + sign * Int128(c)))
      return std::nullopt;
  return sign > 0 ? a + b : a - b;
}

/// a * k for a linear dim, nullopt on int64 overflow.
std::optional<Dim> scaleLinear(const Dim &a, int64_t k) {
  if (!fitsInt64(Int128(a.constant()) * k))
    return std::nullopt;
  for (const auto &[n, c] : a.terms())
    if (!fitsInt64(Int128(c) * k))
      return std::nullopt;
  return a * k;
}

//===----------------------------------------------------------------------===//
// Builder: parse tree -> Graph
//===----------------------------------------------------------------------===//

class Builder {
public:
  Builder(std::string file, const ParseOptions &options)
      : file_(std::move(file)), options_(options), graph_(std::make_unique<Graph>()) {}

  Expected<std::unique_ptr<Graph>> build(const Ast &root) {
    for (const auto &child : root.children)
      GRAFT_CHECK_OK(statement(*child));
    const OpRegistry &registry = options_.registry ? *options_.registry : OpRegistry::builtin();
    registry.bind(*graph_);
    return std::move(graph_);
  }

private:
  //===-- Locations and errors ------------------------------------------===//

  SourceRange rangeOf(const Ast &n) const {
    SourceRange r;
    r.begin.file = file_;
    r.begin.line = static_cast<uint32_t>(n.m_begin.line);
    r.begin.column = static_cast<uint32_t>(n.m_begin.column);
    std::string_view s = n.text();
    if (auto nl = s.find('\n'); nl != std::string_view::npos)
      s = s.substr(0, nl);
    r.length = static_cast<uint32_t>(std::max<std::size_t>(1, s.size()));
    return r;
  }
  Diagnostic error(const Ast &at, std::string message) const {
    return Diagnostic::error(rangeOf(at), std::move(message));
  }
  static std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

  //===-- Statements ----------------------------------------------------===//

  Status statement(const Ast &n) {
    switch (n.kind) {
    case K::GraphName:
      graph_->setName(std::string(n.text()));
      return okStatus();
    case K::SymDecl:
      return symDecl(n);
    case K::InputDecl:
      return inputDecl(n);
    case K::NodeStmt:
    case K::BareNode:
      return nodeStmt(n);
    case K::OutputStmt: {
      GRAFT_TRY(Value * v, valueRef(*n.children[0]));
      graph_->addOutput(v, OutputKind::UserOutput);
      return okStatus();
    }
    case K::MutateStmt:
      return mutateStmt(n);
    default:
      return Diagnostic::internal("text IR parser: unexpected top-level node");
    }
  }

  Status symDecl(const Ast &n) {
    const Ast &nameNode = *n.children[0];
    std::string name(nameNode.text());
    GRAFT_TRY(int64_t lo, int64Of(*n.children[1]));
    SymbolRange range{lo, std::nullopt};
    const Ast &maxNode = *n.children[2];
    if (maxNode.kind == K::IntLit) {
      GRAFT_TRY(int64_t hi, int64Of(maxNode));
      if (hi < lo)
        return error(maxNode, "empty range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                  "] for symbol " + quoted(name));
      range.max = hi;
    }
    if (auto it = symLocs_.find(name); it != symLocs_.end()) {
      Diagnostic d = error(nameNode, "redeclaration of symbol " + quoted(name));
      d.note(it->second, "previous declaration here");
      return d;
    }
    graph_->symbols().declare(name, range);
    symLocs_.emplace(name, rangeOf(nameNode));
    return okStatus();
  }

  Status inputDecl(const Ast &n) {
    const Ast &kindNode = *n.children[0];
    const Ast &def = *n.children[1];
    const Ast &typeNode = *n.children[2];
    std::string_view kw = kindNode.text();
    InputKind kind = kw == "param"    ? InputKind::Parameter
                     : kw == "buffer" ? InputKind::Buffer
                     : kw == "const"  ? InputKind::ConstantTensor
                                      : InputKind::UserInput;
    GRAFT_CHECK_OK(checkFresh(def));
    GRAFT_TRY(auto type, typeOf(typeNode));

    const Ast *fqnNode = nullptr, *persistentNode = nullptr, *initNode = nullptr;
    for (std::size_t i = 3; i < n.children.size(); ++i) {
      const Ast &c = *n.children[i];
      if (c.kind != K::InputAttr) {
        initNode = &c;
        continue;
      }
      const Ast &key = *c.children[0];
      const Ast *&slot = key.text() == "fqn" ? fqnNode : persistentNode;
      if (key.text() != "fqn" && key.text() != "persistent")
        return error(key,
                     "unknown attribute " + quoted(key.text()) + " (expected fqn= or persistent=)");
      if (slot)
        return error(key, "duplicate attribute " + quoted(key.text()));
      slot = &c;
    }

    std::string name(def.text().substr(1));
    if (kind == InputKind::UserInput) {
      if (fqnNode)
        return error(*fqnNode, "fqn= is only valid for param, buffer and const");
      if (persistentNode)
        return error(*persistentNode, "persistent= is only valid for buffers");
      if (initNode)
        return error(*initNode, "a user input cannot have an initializer");
      Value *v = type.first == ValueKind::Tensor
                     ? graph_->addInput(InputKind::UserInput, name, std::move(type.second))
                     : graph_->addScalarInput(type.first, name);
      v->setLocation(rangeOf(def));
      return okStatus();
    }

    if (type.first != ValueKind::Tensor)
      return error(typeNode, std::string(kw) + " %" + name + " must have a tensor type");
    if (!concreteSizes(type.second.shape))
      return error(typeNode, "constant %" + name + " must have a concrete shape, not " +
                                 str(type.second.shape));
    if (!fqnNode)
      return error(def, std::string(kw) + " %" + name + " needs an fqn=\"...\" attribute");
    const Ast &fqnValue = *fqnNode->children[1];
    if (fqnValue.kind != K::String)
      return error(fqnValue, "fqn= takes a string");
    std::string fqn = unescape(fqnValue.text());
    if (fqn.empty())
      return error(fqnValue, "fqn must not be empty");
    if (auto it = fqnLocs_.find(fqn); it != fqnLocs_.end()) {
      Diagnostic d = error(fqnValue, "duplicate fqn " + quoted(fqn));
      d.note(it->second, "previous definition here");
      return d;
    }
    bool persistent = true;
    if (persistentNode) {
      if (kind != InputKind::Buffer)
        return error(*persistentNode, "persistent= is only valid for buffers");
      GRAFT_TRY(persistent, boolOf(*persistentNode->children[1]));
    }

    Value *v = graph_->addInput(kind, name, std::move(type.second), fqn);
    v->setLocation(rangeOf(def));
    fqnLocs_.emplace(fqn, rangeOf(fqnValue));
    std::size_t index = graph_->inputs().size() - 1;
    graph_->inputs()[index].persistent = persistent;
    if (initNode)
      GRAFT_CHECK_OK(initializer(*initNode, index));
    return okStatus();
  }

  Status nodeStmt(const Ast &n) {
    std::vector<Graph::ResultSpec> results;
    std::vector<const Ast *> defs;
    std::map<std::string, SourceRange> pending;
    const Ast *call = nullptr, *meta = nullptr;
    for (const auto &c : n.children) {
      if (c->kind == K::Result) {
        const Ast &def = *c->children[0];
        GRAFT_CHECK_OK(checkFresh(def, &pending));
        GRAFT_TRY(auto type, typeOf(*c->children[1]));
        std::string name(def.text().substr(1));
        pending.emplace(name, rangeOf(def));
        results.push_back({name, type.first, std::move(type.second)});
        defs.push_back(&def);
      } else if (c->kind == K::OpCall) {
        call = c.get();
      } else if (c->kind == K::Metadata) {
        meta = c.get();
      }
    }
    const Ast &target = *call->children[0];
    std::vector<Argument> args;
    std::vector<std::pair<std::string, Argument>> kwargs;
    GRAFT_CHECK_OK(callArgs(*call, 1, args, kwargs));

    std::vector<std::pair<std::string, std::string>> metadata;
    if (meta) {
      for (const auto &entry : meta->children) {
        const Ast &key = *entry->children[0];
        std::string k = key.kind == K::String ? unescape(key.text()) : std::string(key.text());
        for (const auto &[existing, unused] : metadata)
          if (existing == k)
            return error(key, "duplicate metadata key " + quoted(k));
        metadata.emplace_back(k, unescape(entry->children[1]->text()));
      }
    }

    Node *node = graph_->createNode(std::string(target.text()), std::move(args), std::move(kwargs),
                                    std::move(results));
    node->setLocation(rangeOf(target));
    for (std::size_t i = 0; i < defs.size(); ++i)
      node->output(static_cast<unsigned>(i))->setLocation(rangeOf(*defs[i]));
    node->metadata() = std::move(metadata);
    return okStatus();
  }

  Status mutateStmt(const Ast &n) {
    bool isBuffer = n.children[0]->text() == "buffer";
    const Ast &targetNode = *n.children[1];
    std::string target = unescape(targetNode.text());
    GRAFT_TRY(Value * v, valueRef(*n.children[2]));
    bool found = false;
    for (const GraphInput &in : graph_->inputs()) {
      if (isBuffer && in.kind == InputKind::Buffer && in.fqn == target)
        found = true;
      if (!isBuffer && in.kind == InputKind::UserInput && in.value->name() == target)
        found = true;
    }
    if (!found)
      return error(targetNode, isBuffer ? "no buffer with fqn " + quoted(target)
                                        : "no user input named " + quoted(target));
    graph_->addOutput(v, isBuffer ? OutputKind::BufferMutation : OutputKind::UserInputMutation,
                      target);
    return okStatus();
  }

  //===-- Values ----------------------------------------------------------===//

  /// Rejects a definition whose name is taken (by the graph, or by an
  /// earlier result of the same node), pointing at the first definition.
  Status checkFresh(const Ast &def, const std::map<std::string, SourceRange> *pending = nullptr) {
    std::string name(def.text().substr(1));
    std::optional<SourceRange> previous;
    bool taken = false;
    if (Value *v = graph_->findValue(name)) {
      taken = true;
      previous = v->location().optional();
    } else if (pending) {
      if (auto it = pending->find(name); it != pending->end()) {
        taken = true;
        previous = it->second;
      }
    }
    if (!taken)
      return okStatus();
    Diagnostic d = error(def, "redefinition of value %" + name);
    if (previous)
      d.note(*previous, "previous definition here");
    return d;
  }

  Expected<Value *> valueRef(const Ast &n) {
    std::string name(n.text().substr(1));
    if (Value *v = graph_->findValue(name))
      return v;
    return error(n, "use of undefined value %" + name);
  }

  //===-- Types and dims --------------------------------------------------===//

  Expected<std::pair<ValueKind, TensorProto>> typeOf(const Ast &n) {
    if (n.kind == K::ScalarType) {
      std::string_view t = n.text();
      ValueKind k = t == "symint"     ? ValueKind::SymInt
                    : t == "symfloat" ? ValueKind::SymFloat
                                      : ValueKind::SymBool;
      return std::make_pair(k, TensorProto());
    }
    GRAFT_TRY(TensorProto proto, tensorType(n));
    return std::make_pair(ValueKind::Tensor, std::move(proto));
  }

  Expected<TensorProto> tensorType(const Ast &n) {
    const Ast &dtNode = *n.children[0];
    auto dt = parseDType(dtNode.text());
    if (!dt)
      return error(dtNode, "unknown dtype " + quoted(dtNode.text()));
    TensorProto proto;
    proto.dtype = *dt;
    std::set<K> seen;
    const Ast *stridesNode = nullptr, *quantNode = nullptr;
    for (std::size_t i = 1; i < n.children.size(); ++i) {
      const Ast &c = *n.children[i];
      if (c.kind == K::DimExpr) {
        GRAFT_TRY(Dim d, dim(c));
        proto.shape.push_back(std::move(d));
        continue;
      }
      if (!seen.insert(c.kind).second) {
        std::string_view t = c.text();
        return error(c, "duplicate tensor attribute " + quoted(t.substr(0, t.find_first_of(" ="))));
      }
      switch (c.kind) {
      case K::StridesAttr:
        stridesNode = &c;
        for (const auto &s : c.children) {
          GRAFT_TRY(Dim d, dim(*s));
          proto.strides.push_back(std::move(d));
        }
        break;
      case K::OffsetAttr: {
        GRAFT_TRY(Dim d, dim(*c.children[0]));
        proto.storageOffset = std::move(d);
        break;
      }
      case K::DeviceAttr: {
        GRAFT_TRY(Device d, device(*c.children[0]));
        proto.device = std::move(d);
        break;
      }
      default: // K::QuantAttr
        quantNode = &c;
      }
    }
    if (stridesNode) {
      if (proto.strides.size() != proto.shape.size())
        return error(*stridesNode, "strides has " + std::to_string(proto.strides.size()) +
                                       (proto.strides.size() == 1 ? " entry" : " entries") +
                                       " for a rank-" + std::to_string(proto.shape.size()) +
                                       " tensor");
      // Contiguous strides are the default; keep one canonical spelling.
      if (proto.strides == contiguousStrides(proto.shape))
        proto.strides.clear();
    }
    if (quantNode) {
      GRAFT_TRY(QuantLayout layout, quantLayout(*quantNode->children[0]));
      proto.quant = std::move(layout);
      Status valid = validateQuantLayout(proto);
      if (!valid)
        return error(*quantNode, valid.diags().front().message);
    }
    return proto;
  }

  Expected<Device> device(const Ast &n) {
    std::string_view t = n.text();
    std::size_t colon = t.find(':');
    std::string_view type = t.substr(0, colon);
    if (!deviceTypes().count(type))
      return error(n, "unknown device " + quoted(t) +
                          " (expected cpu, cuda, meta, mps, vulkan or "
                          "xpu, optionally with :index)");
    Device d;
    d.type = std::string(type);
    if (colon != std::string_view::npos) {
      auto idx = parseInteger(t.substr(colon + 1));
      if (!idx || *idx > 65535)
        return error(n, "device index out of range in " + quoted(t));
      d.index = static_cast<int>(*idx);
    }
    return d;
  }

  Expected<Dim> dim(const Ast &n) {
    switch (n.kind) {
    case K::DimInt: {
      auto v = parseInteger(n.text());
      if (!v || !fitsInt64(*v))
        return error(n, "dimension " + std::string(n.text()) + " is out of range");
      return Dim(static_cast<int64_t>(*v));
    }
    case K::DimSym: {
      std::string name(n.text());
      if (!graph_->symbols().find(name))
        return error(n, "undeclared symbol " + quoted(name) + " (declare it with 'sym " + name +
                            " : [min, max]' before its first use)");
      return Dim::symbol(name);
    }
    case K::DimNeg: {
      GRAFT_TRY(Dim operand, dim(*n.children[0]));
      return combine(n, '*', operand, Dim(-1));
    }
    case K::DimCall: {
      std::string text = std::string(n.children[0]->text()) + "(";
      for (std::size_t i = 1; i < n.children.size(); ++i) {
        GRAFT_TRY(Dim arg, dim(*n.children[i]));
        text += (i > 1 ? ", " : "") + arg.str();
      }
      return Dim::opaque(text + ")");
    }
    default: { // DimExpr / DimTerm: operand (op operand)*
      GRAFT_TRY(Dim acc, dim(*n.children[0]));
      for (std::size_t i = 1; i + 1 < n.children.size(); i += 2) {
        GRAFT_TRY(Dim rhs, dim(*n.children[i + 1]));
        std::string_view op = n.children[i]->text();
        GRAFT_TRY(acc, combine(*n.children[i], op == "//" ? '/' : op[0], acc, rhs));
      }
      return acc;
    }
    }
  }

  /// One Dim operation, guarding the integer arithmetic Dim does not check.
  Expected<Dim> combine(const Ast &at, char op, const Dim &a, const Dim &b) {
    auto overflow = [&]() { return error(at, "dimension expression overflows int64"); };
    bool linear = !a.isOpaque() && !b.isOpaque();
    switch (op) {
    case '+':
    case '-': {
      if (!linear)
        return op == '+' ? a + b : a - b;
      auto r = addLinear(a, b, op == '+' ? 1 : -1);
      return r ? Expected<Dim>(*r) : Expected<Dim>(overflow());
    }
    case '*': {
      if (b.isConstant() && !a.isOpaque()) {
        auto r = scaleLinear(a, b.constant());
        return r ? Expected<Dim>(*r) : Expected<Dim>(overflow());
      }
      if (a.isConstant() && !b.isOpaque()) {
        auto r = scaleLinear(b, a.constant());
        return r ? Expected<Dim>(*r) : Expected<Dim>(overflow());
      }
      return a * b;
    }
    default: { // floor division
      if (!b.isConstant())
        return Dim::opaque(paren(a) + "//" + paren(b));
      int64_t k = b.constant();
      if (k == 0)
        return error(at, "division by zero in dimension expression");
      if (k == -1 && !a.isOpaque() && !scaleLinear(a, -1))
        return overflow();
      return a.floorDiv(k);
    }
    }
  }

  //===-- Quantization layouts --------------------------------------------===//

  /// Keyword parameters of a layout or initializer call, by name.
  struct Params {
    std::map<std::string, const Ast *, std::less<>> byName;
    std::vector<const Ast *> positional;
  };

  Expected<Params> params(const Ast &call, std::size_t first) {
    Params p;
    for (std::size_t i = first; i < call.children.size(); ++i) {
      const Ast &c = *call.children[i];
      if (c.kind != K::KwArg) {
        if (!p.byName.empty())
          return error(c, "positional argument after keyword argument");
        p.positional.push_back(&c);
        continue;
      }
      const Ast &key = *c.children[0];
      if (!p.byName.emplace(std::string(key.text()), c.children[1].get()).second)
        return error(key, "duplicate keyword argument " + quoted(key.text()));
    }
    return p;
  }

  /// Fails on any keyword not in `known`.
  Status onlyKeys(const Ast &call, const Params &p, std::initializer_list<std::string_view> known,
                  const std::string &what) {
    for (const auto &[k, v] : p.byName) {
      if (std::find(known.begin(), known.end(), k) != known.end())
        continue;
      std::string list;
      for (std::string_view s : known)
        list += (list.empty() ? "" : ", ") + std::string(s);
      for (std::size_t i = 1; i < call.children.size(); ++i)
        if (call.children[i]->kind == K::KwArg && call.children[i]->children[0]->text() == k)
          return error(*call.children[i]->children[0], "unknown parameter " + quoted(k) + " for " +
                                                           what + " (expected " + list + ")");
    }
    return okStatus();
  }

  Expected<int64_t> int64Of(const Ast &v) {
    if (v.kind != K::IntLit)
      return error(v, "expected an integer");
    auto i = parseInteger(v.text());
    if (!i || !fitsInt64(*i))
      return error(v, "integer " + std::string(v.text()) + " is out of range for int64");
    return static_cast<int64_t>(*i);
  }
  Expected<std::vector<int64_t>> intListOf(const Ast &v) {
    if (v.kind != K::List)
      return error(v, "expected a list of integers");
    std::vector<int64_t> out;
    for (const auto &e : v.children) {
      GRAFT_TRY(int64_t i, int64Of(*e));
      out.push_back(i);
    }
    return out;
  }
  Expected<DType> dtypeOf(const Ast &v) {
    if (v.kind == K::Ident)
      if (auto dt = parseDType(v.text()))
        return *dt;
    return error(v, "expected a dtype, not " + quoted(v.text()));
  }
  Expected<bool> boolOf(const Ast &v) {
    if (v.kind == K::Ident && (v.text() == "true" || v.text() == "false"))
      return v.text() == "true";
    return error(v, "expected true or false, not " + quoted(v.text()));
  }
  Expected<double> numberOf(const Ast &v) {
    if (v.kind == K::IntLit) {
      auto i = parseInteger(v.text());
      if (!i)
        return error(v, "integer " + std::string(v.text()) + " is out of range");
      return static_cast<double>(*i);
    }
    if (v.kind == K::FloatLit) {
      auto d = parseDouble(v.text());
      if (!d)
        return error(v, "float " + std::string(v.text()) + " is out of range for f64");
      return *d;
    }
    if (v.kind == K::Ident && (v.text() == "true" || v.text() == "false"))
      return v.text() == "true" ? 1.0 : 0.0;
    return error(v, "expected a number, not " + quoted(v.text()));
  }

  Expected<QuantLayout> quantLayout(const Ast &call) {
    const Ast &nameNode = *call.children[0];
    std::string_view name = nameNode.text();
    GRAFT_TRY(Params p, params(call, 1));
    if (!p.positional.empty())
      return error(*p.positional.front(), "quantization layout parameters are written name=value");
    auto get = [&](std::string_view key) -> const Ast * {
      auto it = p.byName.find(key);
      return it == p.byName.end() ? nullptr : it->second;
    };
    std::string what = std::string(name) + "(...)";
    if (name == "affine") {
      GRAFT_CHECK_OK(
          onlyKeys(call, p, {"block", "qdtype", "range", "scale", "zero_point", "packed"}, what));
      AffineQuant q;
      const Ast *block = get("block"), *qdtype = get("qdtype");
      if (!block || !qdtype)
        return error(nameNode, "affine(...) needs block= and qdtype=");
      GRAFT_TRY(q.blockSize, intListOf(*block));
      GRAFT_TRY(q.quantDType, dtypeOf(*qdtype));
      if (auto b = integerBounds(q.quantDType)) {
        q.quantMin = b->first;
        q.quantMax = b->second;
      }
      if (const Ast *r = get("range")) {
        GRAFT_TRY(auto range, intListOf(*r));
        if (range.size() != 2)
          return error(*r, "range= takes [min, max]");
        q.quantMin = range[0];
        q.quantMax = range[1];
      }
      if (const Ast *s = get("scale")) {
        GRAFT_TRY(q.scaleDType, dtypeOf(*s));
      }
      if (const Ast *z = get("zero_point")) {
        if (z->kind == K::Ident && z->text() == "none") {
          q.zeroPointDType = std::nullopt;
        } else {
          GRAFT_TRY(DType zp, dtypeOf(*z));
          q.zeroPointDType = zp;
        }
      }
      if (const Ast *pk = get("packed")) {
        if (pk->kind != K::Ident || (pk->text() != "low_first" && pk->text() != "high_first"))
          return error(*pk, "packed= takes low_first or high_first");
        q.packedInt4 = true;
        q.nibbleOrder = pk->text() == "low_first" ? NibbleOrder::LowFirst : NibbleOrder::HighFirst;
      }
      return QuantLayout(q);
    }
    if (name == "fp8") {
      GRAFT_CHECK_OK(onlyKeys(call, p, {"elem"}, what));
      Fp8PerTensor q;
      if (const Ast *e = get("elem")) {
        GRAFT_TRY(q.elementDType, dtypeOf(*e));
      }
      return QuantLayout(q);
    }
    if (name == "mxfp8") {
      GRAFT_CHECK_OK(onlyKeys(call, p, {"elem", "block"}, what));
      MxFp8 q;
      if (const Ast *e = get("elem")) {
        GRAFT_TRY(q.elementDType, dtypeOf(*e));
      }
      if (const Ast *b = get("block")) {
        GRAFT_TRY(q.blockSize, int64Of(*b));
      }
      if (q.blockSize <= 0)
        return error(*get("block"), "block= must be positive");
      return QuantLayout(q);
    }
    if (name == "nvfp4") {
      GRAFT_CHECK_OK(onlyKeys(call, p, {"block", "row_amax"}, what));
      NvFp4 q;
      if (const Ast *b = get("block")) {
        GRAFT_TRY(q.blockSize, int64Of(*b));
      }
      if (q.blockSize <= 0)
        return error(*get("block"), "block= must be positive");
      if (const Ast *r = get("row_amax")) {
        GRAFT_TRY(q.perRowAmax, boolOf(*r));
      }
      return QuantLayout(q);
    }
    if (name == "fp8_blockwise") {
      GRAFT_CHECK_OK(onlyKeys(call, p, {"elem", "block"}, what));
      Fp8Blockwise q;
      if (const Ast *e = get("elem")) {
        GRAFT_TRY(q.elementDType, dtypeOf(*e));
      }
      if (const Ast *b = get("block")) {
        GRAFT_TRY(q.blockSize, intListOf(*b));
        for (int64_t s : q.blockSize)
          if (s <= 0)
            return error(*b, "block= sizes must be positive");
      }
      return QuantLayout(q);
    }
    return error(nameNode, "unknown quantization layout " + quoted(name) +
                               " (expected affine, fp8, mxfp8, nvfp4 or fp8_blockwise)");
  }

  //===-- Node arguments --------------------------------------------------===//

  Status callArgs(const Ast &call, std::size_t first, std::vector<Argument> &args,
                  std::vector<std::pair<std::string, Argument>> &kwargs) {
    for (std::size_t i = first; i < call.children.size(); ++i) {
      const Ast &c = *call.children[i];
      if (c.kind != K::KwArg) {
        if (!kwargs.empty())
          return error(c, "positional argument after keyword argument");
        GRAFT_TRY(Argument a, argument(c));
        args.push_back(std::move(a));
        continue;
      }
      const Ast &key = *c.children[0];
      for (const auto &[k, unused] : kwargs)
        if (k == key.text())
          return error(key, "duplicate keyword argument " + quoted(key.text()));
      GRAFT_TRY(Argument a, argument(*c.children[1]));
      kwargs.emplace_back(std::string(key.text()), std::move(a));
    }
    return okStatus();
  }

  Expected<Argument> argument(const Ast &v) {
    switch (v.kind) {
    case K::ValueRef: {
      GRAFT_TRY(Value * value, valueRef(v));
      return Argument(value);
    }
    case K::String:
      return Argument(unescape(v.text()));
    case K::IntLit: {
      GRAFT_TRY(int64_t i, int64Of(v));
      return Argument(i);
    }
    case K::FloatLit: {
      GRAFT_TRY(double d, numberOf(v));
      return Argument(d);
    }
    case K::List: {
      Argument::List list;
      for (const auto &e : v.children) {
        GRAFT_TRY(Argument a, argument(*e));
        list.push_back(std::move(a));
      }
      return Argument(std::move(list));
    }
    default:
      return identArgument(v);
    }
  }

  Expected<Argument> identArgument(const Ast &v) {
    std::string_view t = v.text();
    if (t.find(':') != std::string_view::npos) {
      GRAFT_TRY(Device d, device(v));
      return Argument(std::move(d));
    }
    if (t == "none")
      return Argument::none();
    if (t == "true" || t == "false")
      return Argument(t == "true");
    if (auto dt = parseDType(t))
      return Argument(*dt);
    if (auto l = parseLayout(t))
      return Argument(*l);
    if (auto m = parseMemoryFormat(t))
      return Argument(*m);
    if (deviceTypes().count(t)) {
      GRAFT_TRY(Device d, device(v));
      return Argument(std::move(d));
    }
    return error(v, "unknown name " + quoted(t) +
                        " (expected none, true, false, a dtype, a layout, a memory format or a "
                        "device)");
  }

  //===-- Constant initializers -------------------------------------------===//

  /// Checks that `v` can be stored in `dt` (integral and in range for
  /// integer dtypes, no overflow to infinity for float dtypes).
  Status checkValue(const Ast &at, double v, DType dt) {
    switch (elementForm(dt)) {
    case ElementForm::Bool:
    case ElementForm::Int: {
      auto [lo, hi] = intRange(dt);
      if (!std::isfinite(v) || v != std::floor(v) || v < static_cast<double>(lo) ||
          v > static_cast<double>(hi))
        return error(at, "value " + numberStr(v) + " does not fit " + std::string(name(dt)) +
                             " (range [" + int128Str(lo) + ", " + int128Str(hi) + "])");
      return okStatus();
    }
    case ElementForm::Float:
      if (!fitsFloatDType(v, dt))
        return error(at,
                     "value " + formatFloat(v) + " is out of range for " + std::string(name(dt)));
      return okStatus();
    case ElementForm::None:
      break;
    }
    return error(at, "dtype " + std::string(name(dt)) + " has no textual element values");
  }

  Status initializer(const Ast &n, std::size_t inputIndex) {
    const TensorProto &proto = graph_->inputs()[inputIndex].value->proto();
    std::vector<int64_t> sizes = *concreteSizes(proto.shape);
    // numel and bytes, refusing sizes whose byte count overflows.
    Int128 numel = 1;
    for (int64_t s : sizes) {
      if (s < 0)
        return error(n, "negative dimension in a constant's shape");
      numel *= s;
      if (numel > std::numeric_limits<int64_t>::max())
        return error(n, "constant is too large");
    }
    Int128 bytes = numel * static_cast<Int128>(elementSize(proto.dtype));
    if (bytes > std::numeric_limits<int64_t>::max())
      return error(n, "constant is too large");

    if (n.kind == K::List)
      return inlineInit(n, inputIndex, sizes, static_cast<int64_t>(numel));

    const Ast &nameNode = *n.children[0];
    std::string_view fn = nameNode.text();
    GRAFT_TRY(Params p, params(n, 1));
    auto get = [&](std::string_view key) -> const Ast * {
      auto it = p.byName.find(key);
      return it == p.byName.end() ? nullptr : it->second;
    };
    DType dt = proto.dtype;
    if ((fn == "random" || fn == "full") && elementForm(dt) == ElementForm::None)
      return error(nameNode,
                   std::string(fn) + "() is not supported for dtype " + std::string(name(dt)));
    if (fn == "random") {
      GRAFT_CHECK_OK(onlyKeys(n, p, {"seed", "min", "max"}, "random(...)"));
      if (!p.positional.empty())
        return error(*p.positional.front(), "random() parameters are written name=value");
      RandomInit init;
      if (const Ast *s = get("seed")) {
        auto seed = s->kind == K::IntLit ? parseInteger(s->text()) : std::nullopt;
        if (!seed || *seed < 0 || *seed >= (Int128(1) << 64))
          return error(*s, "seed= takes an integer in [0, 2^64)");
        init.seed = static_cast<uint64_t>(*seed);
      }
      if (const Ast *m = get("min")) {
        GRAFT_TRY(init.min, numberOf(*m));
      }
      if (const Ast *m = get("max")) {
        GRAFT_TRY(init.max, numberOf(*m));
      }
      GRAFT_CHECK_OK(checkRandomRange(n, init, dt));
      graph_->inputs()[inputIndex].init = init;
      return okStatus();
    }
    if (fn == "full") {
      if (!p.byName.empty() || p.positional.size() != 1)
        return error(nameNode, "full() takes exactly one value: full(0.0)");
      GRAFT_TRY(double v, numberOf(*p.positional[0]));
      GRAFT_CHECK_OK(checkValue(*p.positional[0], v, dt));
      graph_->inputs()[inputIndex].init = FullInit{v};
      return okStatus();
    }
    if (fn == "file")
      return fileInit(n, p, inputIndex, sizes, static_cast<uint64_t>(bytes));
    return error(nameNode, "unknown initializer " + quoted(fn) +
                               " (expected random(...), full(...), file(...) or [values])");
  }

  Status checkRandomRange(const Ast &at, const RandomInit &init, DType dt) {
    std::string range = "[" + numberStr(init.min) + ", " + numberStr(init.max) + "]";
    if (!std::isfinite(init.min) || !std::isfinite(init.max) || init.min > init.max)
      return error(at, "random() needs finite min <= max, got " + range);
    if (elementForm(dt) == ElementForm::Float) {
      if (!fitsFloatDType(init.min, dt) || !fitsFloatDType(init.max, dt))
        return error(at,
                     "random() range " + range + " is out of range for " + std::string(name(dt)));
      return okStatus();
    }
    auto [lo, hi] = intRange(dt);
    double cmin = std::ceil(init.min), fmax = std::floor(init.max);
    if (cmin > fmax)
      return error(at, "random() range " + range + " contains no integer");
    // generateRandom draws in int64; u64 beyond that is not reachable.
    Int128 top = std::min<Int128>(hi, std::numeric_limits<int64_t>::max());
    if (cmin < static_cast<double>(lo) || fmax > static_cast<double>(top) || fmax >= 0x1p63)
      return error(at, "random() range " + range + " exceeds " + std::string(name(dt)) +
                           " range [" + int128Str(lo) + ", " + int128Str(top) + "]");
    return okStatus();
  }

  Status inlineInit(const Ast &n, std::size_t inputIndex, const std::vector<int64_t> &sizes,
                    int64_t numel) {
    const TensorProto &proto = graph_->inputs()[inputIndex].value->proto();
    DType dt = proto.dtype;
    if (proto.quant)
      return error(n, "inline values are not supported for quantized tensors; give each buffer "
                      "as its own constant");
    ElementForm form = elementForm(dt);
    if (form == ElementForm::None)
      return error(n, "inline values are not supported for dtype " + std::string(name(dt)) +
                          "; use file(...)");
    int64_t count = static_cast<int64_t>(n.children.size());
    if (count != numel)
      return error(n, "inline data has " + std::to_string(count) + " values but " + proto.str() +
                          " has " + std::to_string(numel) + " elements");
    Tensor t = Tensor::empty(dt, sizes);
    for (int64_t i = 0; i < count; ++i) {
      const Ast &e = *n.children[static_cast<std::size_t>(i)];
      if (form == ElementForm::Float) {
        GRAFT_TRY(double v, numberOf(e));
        if (e.kind == K::Ident)
          return error(e, "expected a number for " + std::string(name(dt)) + " data");
        GRAFT_CHECK_OK(checkValue(e, v, dt));
        t.setDouble(i, v);
        continue;
      }
      if (form == ElementForm::Bool && e.kind == K::Ident) {
        GRAFT_TRY(bool b, boolOf(e));
        t.setInt(i, b ? 1 : 0);
        continue;
      }
      if (e.kind != K::IntLit)
        return error(e, "expected an integer for " + std::string(name(dt)) + " data");
      auto v = parseInteger(e.text());
      auto [lo, hi] = intRange(dt);
      if (!v || *v < lo || *v > hi)
        return error(e, "value " + std::string(e.text()) + " does not fit " +
                            std::string(name(dt)) + " (range [" + int128Str(lo) + ", " +
                            int128Str(hi) + "])");
      // u64 values above INT64_MAX wrap to the same bit pattern.
      t.setInt(i, static_cast<int64_t>(static_cast<uint64_t>(*v)));
    }
    graph_->inputs()[inputIndex].setData(std::move(t), InlineInit{});
    return okStatus();
  }

  Status fileInit(const Ast &n, const Params &p, std::size_t inputIndex,
                  const std::vector<int64_t> &sizes, uint64_t expectedBytes) {
    GRAFT_CHECK_OK(onlyKeys(n, p, {"offset", "bytes"}, "file(...)"));
    const TensorProto &proto = graph_->inputs()[inputIndex].value->proto();
    if (proto.quant)
      return error(n, "file() data is not supported for quantized tensors; give each buffer as "
                      "its own constant");
    if (p.positional.size() != 1 || p.positional[0]->kind != K::String)
      return error(*n.children[0], "file() takes the path as a string: file(\"w.bin\", "
                                   "offset=0, bytes=N)");
    FileInit init;
    init.path = unescape(p.positional[0]->text());
    auto unsignedParam = [&](const char *key, uint64_t &out) -> Status {
      auto it = p.byName.find(key);
      if (it == p.byName.end())
        return okStatus();
      auto v = it->second->kind == K::IntLit ? parseInteger(it->second->text()) : std::nullopt;
      if (!v || *v < 0 || !fitsInt64(*v))
        return error(*it->second, std::string(key) + "= takes a non-negative integer");
      out = static_cast<uint64_t>(*v);
      return okStatus();
    };
    init.bytes = expectedBytes;
    GRAFT_CHECK_OK(unsignedParam("offset", init.offset));
    GRAFT_CHECK_OK(unsignedParam("bytes", init.bytes));
    if (init.bytes != expectedBytes)
      return error(n, "file() has bytes=" + std::to_string(init.bytes) + " but " + proto.str() +
                          " needs " + std::to_string(expectedBytes) + " bytes");
    std::size_t esize = elementSize(proto.dtype);
    if (init.offset % esize != 0)
      return error(n, "file() offset=" + std::to_string(init.offset) +
                          " is not a multiple of the element size (" + std::to_string(esize) + ")");

    std::filesystem::path path(init.path);
    if (path.is_relative() && !options_.baseDir.empty())
      path = std::filesystem::path(options_.baseDir) / path;
    std::string resolved = path.lexically_normal().string();
    std::error_code absError;
    std::filesystem::path absolute = std::filesystem::absolute(path, absError);
    if (!absError)
      init.resolved = absolute.lexically_normal().string();
    // Constants referring to the same bytes share one mapping (tied weights).
    auto key = std::make_tuple(resolved, init.offset, init.bytes);
    std::shared_ptr<Storage> storage;
    if (auto it = mapped_.find(key); it != mapped_.end()) {
      storage = it->second;
    } else {
      auto m = Storage::mapFile(resolved, init.offset, init.bytes);
      if (!m)
        return error(n, m.diags().front().message);
      storage = *m;
      mapped_.emplace(key, storage);
    }
    graph_->inputs()[inputIndex].setData(Tensor(proto.dtype, sizes, std::move(storage)),
                                         std::move(init));
    return okStatus();
  }

  std::string file_;
  const ParseOptions &options_;
  std::unique_ptr<Graph> graph_;
  std::map<std::string, SourceRange> symLocs_;
  std::map<std::string, SourceRange> fqnLocs_;
  std::map<std::tuple<std::string, uint64_t, uint64_t>, std::shared_ptr<Storage>> mapped_;
};

} // namespace

Expected<std::unique_ptr<Graph>> parseGraph(std::string_view text, const std::string &name,
                                            const ParseOptions &options, SourceManager *sources) {
  if (sources)
    sources->add(name, std::string(text));
  GRAFT_TRY(std::unique_ptr<Ast> root, (parseTree<File, Ast, Guard>(text, name)));
  if (!root)
    return Diagnostic::error(SourceRange{SourceLoc{name, 1, 1}, 1}, "expected 'graph'");
  Builder builder(name, options);
  return builder.build(*root);
}

Expected<std::unique_ptr<Graph>> parseGraphFile(const std::string &path, SourceManager *sources) {
  GRAFT_TRY(std::string text, readFile(path));
  ParseOptions options;
  options.baseDir = std::filesystem::path(path).parent_path().string();
  return parseGraph(text, path, options, sources);
}

} // namespace graft
