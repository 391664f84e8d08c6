//===- PatParser.cpp - PEGTL grammar of the .pat language -----------------===//
//
// The grammar (private to this file) turns .pat text into the concrete syntax
// tree of PatSyntax.h. It is newline-aware the way Go is: statements end at a
// line break or ';', a binary operator must stay on the line of its left
// operand (a line may break after it), and inside (), [] and {} argument
// lists line breaks are free. That keeps `%` (remainder) and `%name`
// (result), or `-` (minus) and a predicate starting with `-`, unambiguous
// without requiring ';' everywhere. Every commit point (`must<>`) carries the
// message a user sees ("expected ',' or ')'"), never a PEGTL rule name. The
// language is documented in docs/dsl.md.
//
//===----------------------------------------------------------------------===//
#include "PatSyntax.h"
#include "support/PegtlSupport.h"

#include <algorithm>

namespace graft::dsl {
namespace {

// Error scaffolding, parse-tree plumbing and the lexical rules shared with the
// text IR parser (GRAFT_EXPECT, Tag, Identifier, Digits, QuotedString, ...).
using namespace grammar;

//===----------------------------------------------------------------------===//
// Lexical structure
//===----------------------------------------------------------------------===//

// `//` comments (and `///` doc comments) run to the end of the line. Hs is
// horizontal space: it never crosses a line break, so it separates the tokens
// of one statement; Nl crosses line breaks.
struct LineComment : peg::seq<peg::two<'/'>, peg::star<peg::not_one<'\n', '\r'>>> {};
struct Hs : peg::star<peg::sor<peg::blank, LineComment>> {};
struct Nl : peg::star<peg::sor<peg::space, LineComment>> {};

template <typename Str> struct Kw : peg::seq<Str, peg::not_at<IdentOther>> {};
#define GRAFT_KW(text) Kw<TAO_PEGTL_STRING(text)>
struct Underscore : peg::seq<peg::one<'_'>, peg::not_at<IdentOther>> {};
struct Ellipsis : peg::string<'.', '.', '.'> {};

struct FloatBody : DecimalFloat<GRAFT_KW("inf"), GRAFT_KW("nan")> {};
// Unsigned literals (expressions have a unary minus) and signed ones
// (argument patterns and example values have none).
struct LFloat : peg::seq<FloatBody, peg::not_at<IdentOther>>, Tag<SK::LFloat> {};
struct LInt : peg::seq<Digits, peg::not_at<IdentOther>>, Tag<SK::LInt> {};
struct SignedFloat : peg::seq<peg::opt<peg::one<'-'>>, FloatBody, peg::not_at<IdentOther>>,
                     Tag<SK::LFloat> {};
struct SignedInt : peg::seq<peg::opt<peg::one<'-'>>, Digits, peg::not_at<IdentOther>>,
                   Tag<SK::LInt> {};

struct LStr : QuotedString, Tag<SK::LStr> {};

GRAFT_EXPECT(ExpectCaptureName,
             "expected a capture name after '$' (a letter or '_', then letters, "
             "digits or '_')",
             Identifier);
GRAFT_EXPECT(ExpectResultName, "expected a result name after '%' (letters, digits and '_')",
             peg::plus<IdentOther>);
struct CaptureTok : peg::seq<peg::one<'$'>, peg::must<ExpectCaptureName>> {};
struct ResultTok : peg::seq<peg::one<'%'>, peg::must<ExpectResultName>> {};

GRAFT_EXPECT(ExpectOpNamePart, "expected a name after '.' in the op name", Identifier);
struct OpName : peg::seq<Identifier, peg::plus<peg::one<'.'>, peg::must<ExpectOpNamePart>>>,
                Tag<SK::OpName> {};

GRAFT_EXPECT(ExpectAssign, "expected '='", peg::one<'='>);
GRAFT_EXPECT(ExpectLBrace, "expected '{'", peg::one<'{'>);
GRAFT_EXPECT(ExpectRBrace, "expected '}'", peg::one<'}'>);
GRAFT_EXPECT(ExpectLParen, "expected '('", peg::one<'('>);
GRAFT_EXPECT(ArgsEnd, "expected ',' or ')'", peg::one<')'>);
GRAFT_EXPECT(ListEnd, "expected ',' or ']'", peg::one<']'>);
GRAFT_EXPECT(ParenEnd, "expected ')'", peg::one<')'>);
struct Comma : peg::seq<Nl, peg::one<','>, Nl> {};

//===----------------------------------------------------------------------===//
// Type patterns: `i8[$V, $D]`, `$dt[...]`, `_[$N, 4]`, `f32`
//===----------------------------------------------------------------------===//

struct DInt : Digits, Tag<SK::DInt> {};
struct DVar : CaptureTok, Tag<SK::DVar> {};
struct DAny : Underscore, Tag<SK::DAny> {};
struct TEllipsis : Ellipsis, Tag<SK::TEllipsis> {};
struct DimPat : peg::sor<DInt, DVar, DAny> {};
GRAFT_EXPECT(ExpectDimPat, "expected a dimension pattern: an integer, $name or _", DimPat);
GRAFT_EXPECT(ShapeEnd, "expected ',' or ']' in the shape pattern", peg::one<']'>);
struct DimPats;
GRAFT_EXPECT(DimPatsAfterEllipsis, "expected the trailing dimension patterns after '...,'",
             DimPats);
// `[...]` any rank; `[..., $K]` at least the trailing dims; `[$N, $K]` exact.
struct DimPats : peg::seq<DimPat, peg::star<Comma, peg::must<ExpectDimPat>>> {};
struct TShape
    : peg::seq<peg::one<'['>, Nl,
               peg::opt<peg::sor<
                   peg::seq<TEllipsis, peg::opt<Comma, peg::must<DimPatsAfterEllipsis>>>, DimPats>>,
               Nl, peg::must<ShapeEnd>>,
      Tag<SK::TShape> {};
struct TDType : Identifier, Tag<SK::TDType> {};
struct TDVar : CaptureTok, Tag<SK::TDVar> {};
struct TDAny : Underscore, Tag<SK::TDAny> {};
// `scalar float` / `scalar int`: a number (not a tensor) in a Tensor or
// Scalar slot; exported graphs put Python numbers there (`x + 1e-05` is
// aten.add.Tensor(x, 1e-05)).
struct TScalarKind : peg::sor<GRAFT_KW("float"), GRAFT_KW("int")>, Tag<SK::TScalarKind> {};
GRAFT_EXPECT(ExpectScalarKind, "expected 'float' or 'int' after 'scalar'", TScalarKind);
struct TScalar : peg::seq<GRAFT_KW("scalar"), Hs, peg::must<ExpectScalarKind>>, Tag<SK::TScalar> {};
struct TypePat : peg::sor<TScalar, peg::seq<peg::sor<TDVar, TDAny, TDType>, peg::opt<Hs, TShape>>>,
                 Tag<SK::TypePat> {};
GRAFT_EXPECT(ExpectTypePat, "expected a type pattern such as i8[$V, $D], $dt[...] or _[$N]",
             TypePat);
struct TypeAnn : peg::seq<Nl, peg::one<':'>, Nl, peg::must<ExpectTypePat>> {};

//===----------------------------------------------------------------------===//
// Argument patterns
//===----------------------------------------------------------------------===//

struct PatAlt;
GRAFT_EXPECT(ExpectPattern,
             "expected an argument pattern (_, $name, param $name, %name, a literal or [list])",
             PatAlt);
struct PWild : peg::seq<Underscore, peg::opt<TypeAnn>>, Tag<SK::PWild> {};
struct PCapture : peg::seq<CaptureTok, peg::opt<TypeAnn>>, Tag<SK::PCapture> {};
struct PResult : peg::seq<ResultTok, peg::opt<TypeAnn>>, Tag<SK::PResult> {};
GRAFT_EXPECT(ExpectParamTarget, "expected $name or _ after 'param'", peg::sor<PCapture, PWild>);
struct PParam : peg::seq<GRAFT_KW("param"), Nl, peg::must<ExpectParamTarget>>, Tag<SK::PParam> {};
struct PList
    : peg::seq<peg::one<'['>, Nl, peg::opt<PatAlt, peg::star<Comma, peg::must<ExpectPattern>>>, Nl,
               peg::must<ListEnd>>,
      Tag<SK::PList> {};
struct PGroup : peg::seq<peg::one<'('>, Nl, peg::must<ExpectPattern>, Nl, peg::must<ParenEnd>>,
                Tag<SK::PGroup> {};
GRAFT_EXPECT(NoNestedCall,
             "op patterns cannot be nested; bind the inner op to a name in its own statement "
             "(%t = ns.op(...)) and use %t here",
             peg::failure);
struct NestedCall
    : peg::seq<peg::at<Identifier, peg::star<peg::one<'.'>, Identifier>, Hs, peg::one<'('>>,
               peg::must<NoNestedCall>> {};
struct LIdent : Identifier, Tag<SK::LIdent> {};
struct PatPrim : peg::sor<PParam, PCapture, PResult, PWild, PList, PGroup, NestedCall, SignedFloat,
                          SignedInt, LStr, LIdent> {};
GRAFT_EXPECT(ExpectPatPrim, "expected an alternative after '|'", PatPrim);
struct PatAlt : peg::seq<PatPrim, peg::star<Nl, peg::one<'|'>, Nl, peg::must<ExpectPatPrim>>>,
                Tag<SK::PatAlt> {};

struct ArgKey : Identifier, Tag<SK::ArgKey> {};
struct PKwArg
    : peg::seq<ArgKey, Nl, peg::one<'='>, peg::not_at<peg::one<'='>>, Nl, peg::must<ExpectPattern>>,
      Tag<SK::KwArg> {};
struct Rest : Ellipsis, Tag<SK::Rest> {};
struct PatArg : peg::sor<PKwArg, Rest, PatAlt> {};
GRAFT_EXPECT(ExpectPatArg, "expected an argument pattern", PatArg);
struct PatArgs : peg::opt<PatArg, peg::star<Comma, peg::must<ExpectPatArg>>> {};

GRAFT_EXPECT(ExpectOpName, "expected an op name such as aten.linear", OpName);
GRAFT_EXPECT(TargetGroupEnd, "expected '|' or ')' in the list of alternative ops", peg::one<')'>);
struct TargetGroup : peg::seq<peg::one<'('>, Nl, peg::must<ExpectOpName>,
                              peg::star<Nl, peg::one<'|'>, Nl, peg::must<ExpectOpName>>, Nl,
                              peg::must<TargetGroupEnd>> {};
GRAFT_EXPECT(ExpectCallOpen, "expected '(' and the op's argument patterns", peg::one<'('>);
struct NodeCall : peg::seq<peg::sor<OpName, TargetGroup>, Hs, peg::must<ExpectCallOpen>, Nl,
                           PatArgs, Nl, peg::must<ArgsEnd>>,
                  Tag<SK::NodeCall> {};
GRAFT_EXPECT(ExpectNodeCall, "expected an op pattern such as aten.linear($x, param $w, _)",
             NodeCall);
GRAFT_EXPECT(ExpectElseValue, "expected %name or $name after 'else'", peg::sor<PResult, PCapture>);
struct Optional
    : peg::seq<peg::one<'?'>, peg::opt<Hs, GRAFT_KW("else"), Nl, peg::must<ExpectElseValue>>>,
      Tag<SK::Optional> {};
struct NodeAlt : peg::seq<NodeCall, peg::star<Nl, peg::one<'|'>, Nl, peg::must<ExpectNodeCall>>,
                          peg::opt<Hs, Optional>>,
                 Tag<SK::NodeAlt> {};

struct ResultName : peg::sor<ResultTok, Underscore>, Tag<SK::ResultName> {};
GRAFT_EXPECT(ExpectResultRef, "expected a result name such as %out (or _)", ResultName);
struct Results : peg::seq<ResultName, peg::star<Comma, peg::must<ExpectResultRef>>>,
                 Tag<SK::Results> {};
struct Shared : GRAFT_KW("shared"), Tag<SK::Shared> {};
struct RootMark : GRAFT_KW("root"), Tag<SK::RootMark> {};
GRAFT_EXPECT(ExpectPatternRhs,
             "expected an op pattern such as aten.linear($x, param $w, _) after '='", NodeAlt);
struct MatchStmt : peg::seq<peg::opt<peg::sor<Shared, RootMark>, Nl>, Results, Nl,
                            peg::must<ExpectAssign>, Nl, peg::must<ExpectPatternRhs>>,
                   Tag<SK::MatchStmt> {};

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

struct Expr;
GRAFT_EXPECT(ExpectExpr, "expected an expression", Expr);
struct ECapture : CaptureTok, Tag<SK::ECapture> {};
struct EResult : ResultTok, Tag<SK::EResult> {};
struct FnName : Identifier, Tag<SK::FnName> {};
struct EKwArg
    : peg::seq<ArgKey, Nl, peg::one<'='>, peg::not_at<peg::one<'='>>, Nl, peg::must<ExpectExpr>>,
      Tag<SK::KwArg> {};
struct CallArg : peg::sor<EKwArg, Expr> {};
GRAFT_EXPECT(ExpectCallArg, "expected an argument", CallArg);
struct ECall : peg::seq<peg::sor<OpName, FnName>, Hs, peg::one<'('>, Nl,
                        peg::opt<CallArg, peg::star<Comma, peg::must<ExpectCallArg>>>, Nl,
                        peg::must<ArgsEnd>>,
               Tag<SK::ECall> {};
struct EParen : peg::seq<peg::one<'('>, Nl, peg::must<ExpectExpr>, Nl, peg::must<ParenEnd>>,
                Tag<SK::EParen> {};
struct EList : peg::seq<peg::one<'['>, Nl, peg::opt<Expr, peg::star<Comma, peg::must<ExpectExpr>>>,
                        Nl, peg::must<ListEnd>>,
               Tag<SK::EList> {};
struct Reserved
    : peg::sor<GRAFT_KW("and"), GRAFT_KW("or"), GRAFT_KW("not"), GRAFT_KW("is"), GRAFT_KW("in")> {};
struct EIdent : peg::seq<peg::not_at<Reserved>, Identifier>, Tag<SK::LIdent> {};
struct Primary : peg::sor<LFloat, LInt, LStr, ECall, ECapture, EResult, EParen, EList, EIdent> {};

struct EUnary;
GRAFT_EXPECT(ExpectOperand, "expected an operand", EUnary);
struct ENeg : peg::seq<peg::one<'-'>, Nl, peg::must<ExpectOperand>>, Tag<SK::ENeg> {};
struct EUnary : peg::sor<ENeg, Primary> {};

struct MulOp : peg::sor<peg::one<'*'>, peg::seq<peg::one<'/'>, peg::not_at<peg::one<'/'>>>,
                        peg::seq<peg::one<'%'>, peg::not_at<IdentOther>>>,
               Tag<SK::Op> {};
GRAFT_EXPECT(ModuloSpace,
             "'%' directly followed by a name is a result reference; write '% ' with a space "
             "for the remainder operator",
             peg::failure);
struct MulTail : peg::sor<peg::seq<MulOp, Nl, peg::must<ExpectOperand>>,
                          peg::seq<peg::at<peg::one<'%'>>, peg::must<ModuloSpace>>> {};
struct EMul : peg::seq<EUnary, peg::star<Hs, MulTail>>, Tag<SK::EMul> {};
struct AddOp : peg::one<'+', '-'>, Tag<SK::Op> {};
GRAFT_EXPECT(ExpectTerm, "expected an operand", EMul);
struct EAdd : peg::seq<EMul, peg::star<Hs, AddOp, Nl, peg::must<ExpectTerm>>>, Tag<SK::EAdd> {};

struct CmpOp : peg::sor<peg::string<'=', '='>, peg::string<'!', '='>, peg::string<'<', '='>,
                        peg::string<'>', '='>, peg::one<'<'>, peg::one<'>'>>,
               Tag<SK::Op> {};
struct NotMark : GRAFT_KW("not"), Tag<SK::NotMark> {};
GRAFT_EXPECT(ExpectNone, "expected 'none' after 'is' (write 'x is none' or 'x is not none')",
             GRAFT_KW("none"));
struct IsNone : peg::seq<GRAFT_KW("is"), Hs, peg::opt<NotMark, Hs>, peg::must<ExpectNone>>,
                Tag<SK::IsNone> {};
struct InOp : peg::seq<peg::opt<NotMark, Hs>, GRAFT_KW("in")>, Tag<SK::InOp> {};
GRAFT_EXPECT(ExpectComparand, "expected an operand", EAdd);
GRAFT_EXPECT(ExpectInList, "expected a list such as [32, 64] after 'in'", EList);
GRAFT_EXPECT(UseDoubleEquals, "'=' assigns; write '==' to compare", peg::failure);
struct CmpTail : peg::sor<peg::seq<CmpOp, Nl, peg::must<ExpectComparand>>, IsNone,
                          peg::seq<InOp, Nl, peg::must<ExpectInList>>,
                          peg::seq<peg::one<'='>, peg::must<UseDoubleEquals>>> {};
struct ECmp : peg::seq<EAdd, peg::opt<Hs, CmpTail>>, Tag<SK::ECmp> {};

struct ENotLevel;
GRAFT_EXPECT(ExpectNotOperand, "expected an operand after 'not'", ENotLevel);
struct ENot : peg::seq<GRAFT_KW("not"), Nl, peg::must<ExpectNotOperand>>, Tag<SK::ENot> {};
struct ENotLevel : peg::sor<ENot, ECmp> {};
GRAFT_EXPECT(ExpectAndOperand, "expected an operand after 'and'", ENotLevel);
struct EAnd : peg::seq<ENotLevel, peg::star<Hs, GRAFT_KW("and"), Nl, peg::must<ExpectAndOperand>>>,
              Tag<SK::EAnd> {};
GRAFT_EXPECT(ExpectOrOperand, "expected an operand after 'or'", EAnd);
struct EOr : peg::seq<EAnd, peg::star<Hs, GRAFT_KW("or"), Nl, peg::must<ExpectOrOperand>>>,
             Tag<SK::EOr> {};
struct Expr : EOr {};

//===----------------------------------------------------------------------===//
// Sections and rules
//===----------------------------------------------------------------------===//

GRAFT_EXPECT(ExpectStmtEnd, "expected a line break or ';' after the statement",
             peg::sor<peg::one<';'>, peg::eol, peg::at<peg::one<'}'>>, peg::eof>);
/// The statements of a `{ ... }` block after its '{'.
template <typename ExpectStmt>
struct BlockBody : peg::seq<Nl,
                            peg::star<peg::not_at<peg::one<'}'>>, peg::not_at<peg::eof>,
                                      peg::must<ExpectStmt>, Hs, peg::must<ExpectStmtEnd>, Nl>,
                            peg::must<ExpectRBrace>> {};

GRAFT_EXPECT(ExpectMatchStmt, "expected a pattern statement such as '%y = aten.relu($x)' or '}'",
             MatchStmt);
struct Match : peg::seq<GRAFT_KW("match"), Nl, peg::must<ExpectLBrace>, BlockBody<ExpectMatchStmt>>,
               Tag<SK::Match> {};

GRAFT_EXPECT(ExpectPredicate, "expected a predicate such as '$K % 32 == 0' or '}'", Expr);
struct Where : peg::seq<GRAFT_KW("where"), Nl, peg::must<ExpectLBrace>, BlockBody<ExpectPredicate>>,
               Tag<SK::Where> {};

struct CaptureDef : CaptureTok, Tag<SK::CaptureDef> {};
struct RewriteStmt : peg::seq<peg::sor<CaptureDef, Results>, Nl, peg::must<ExpectAssign>, Nl,
                              peg::must<ExpectExpr>>,
                     Tag<SK::RewriteStmt> {};
GRAFT_EXPECT(ExpectRewriteStmt,
             "expected a rewrite statement ('$p = transform(...)', '$n = expression' or "
             "'%out = ns.op(...)') or '}'",
             RewriteStmt);
struct Rewrite
    : peg::seq<GRAFT_KW("rewrite"), Nl, peg::must<ExpectLBrace>, BlockBody<ExpectRewriteStmt>>,
      Tag<SK::Rewrite> {};

struct ExName : Identifier, Tag<SK::ExName> {};
GRAFT_EXPECT(ExpectExInt, "expected an integer", SignedInt);
struct ExRange : peg::seq<SignedInt, Hs, peg::two<'.'>, Hs, peg::must<ExpectExInt>,
                          peg::opt<Hs, GRAFT_KW("step"), Hs, peg::must<ExpectExInt>>>,
                 Tag<SK::ExRange> {};
struct ExItem : peg::sor<SignedInt, LIdent> {};
GRAFT_EXPECT(ExpectExItem, "expected an integer or a dtype", ExItem);
struct ExList : peg::seq<peg::one<'['>, Nl, peg::must<ExpectExItem>,
                         peg::star<Comma, peg::must<ExpectExItem>>, Nl, peg::must<ListEnd>>,
                Tag<SK::ExList> {};
// `uniform(lo, hi)`: the random range of a tensor capture's values.
struct ExNumber : peg::sor<SignedFloat, SignedInt> {};
GRAFT_EXPECT(ExpectExNumber, "expected a number", ExNumber);
GRAFT_EXPECT(ExpectExHi, "expected ',' and the upper bound: uniform(lo, hi)", Comma);
struct ExUniform
    : peg::seq<GRAFT_KW("uniform"), Hs, peg::must<ExpectLParen>, Nl, peg::must<ExpectExNumber>,
               peg::must<ExpectExHi>, peg::must<ExpectExNumber>, Nl, peg::must<ArgsEnd>>,
      Tag<SK::ExUniform> {};
struct ExValue : peg::sor<ExRange, SignedInt, ExList, ExUniform, LIdent> {};
GRAFT_EXPECT(ExpectExValue,
             "expected an example value: an integer, lo..hi [step s], a dtype, [a list] or "
             "uniform(lo, hi)",
             ExValue);
struct ExEntry : peg::seq<ExName, Nl, peg::must<ExpectAssign>, Nl, peg::must<ExpectExValue>>,
                 Tag<SK::ExEntry> {};
GRAFT_EXPECT(ExpectExEntry, "expected an example entry such as 'D = 128'", ExEntry);
struct ExSep
    : peg::sor<peg::seq<Nl, peg::one<','>>, peg::seq<Hs, peg::sor<peg::one<';'>, peg::eol>>> {};
GRAFT_EXPECT(ExampleEnd, "expected ',' or '}' in the example", peg::one<'}'>);
struct Example
    : peg::seq<GRAFT_KW("example"), Nl, peg::must<ExpectLBrace>, Nl,
               peg::opt<ExEntry,
                        peg::star<ExSep, Nl, peg::not_at<peg::one<'}'>>, peg::must<ExpectExEntry>>>,
               peg::opt<ExSep>, Nl, peg::must<ExampleEnd>>,
      Tag<SK::Example> {};

struct TolNumber : peg::sor<LFloat, LInt> {};
GRAFT_EXPECT(ExpectTolNumber, "expected a non-negative number", TolNumber);
struct TolEntry : peg::seq<ArgKey, Nl, peg::must<ExpectAssign>, Nl, peg::must<ExpectTolNumber>>,
                  Tag<SK::KwArg> {};
GRAFT_EXPECT(ExpectTolEntry, "expected 'atol = number' or 'rtol = number'", TolEntry);
// `tolerance(...) when $odt == f16`: the guard is a where-clause expression
// on the same line; verify-rules takes the first clause whose guard holds.
GRAFT_EXPECT(ExpectTolGuard, "expected a condition after 'when' such as '$dt == f16'", Expr);
struct TolGuard : peg::seq<GRAFT_KW("when"), Hs, peg::must<ExpectTolGuard>>, Tag<SK::TolGuard> {};
struct Tolerance : peg::seq<GRAFT_KW("tolerance"), Hs, peg::must<ExpectLParen>, Nl,
                            peg::must<ExpectTolEntry>, peg::star<Comma, peg::must<ExpectTolEntry>>,
                            Nl, peg::must<ArgsEnd>, peg::opt<Hs, TolGuard>>,
                   Tag<SK::Tolerance> {};

struct Section : peg::sor<Match, Where, Rewrite, Example, Tolerance> {};
GRAFT_EXPECT(ExpectSection,
             "expected a section (match { }, where { }, rewrite { }, example { } or "
             "tolerance(...)) or '}'",
             Section);

struct RuleName : Identifier, Tag<SK::RuleName> {};
GRAFT_EXPECT(ExpectRuleName, "expected a rule name after 'rule'", RuleName);
GRAFT_EXPECT(ExpectBenefit, "expected an integer after 'benefit'", SignedInt);
struct Benefit : peg::seq<GRAFT_KW("benefit"), Nl, peg::must<ExpectBenefit>>, Tag<SK::Benefit> {};
struct TagName : Identifier, Tag<SK::TagName> {};
GRAFT_EXPECT(ExpectTagName, "expected a tag name", TagName);
struct Tags : peg::seq<GRAFT_KW("tags"), Hs, peg::must<ExpectLParen>, Nl, peg::must<ExpectTagName>,
                       peg::star<Comma, peg::must<ExpectTagName>>, Nl, peg::must<ArgsEnd>>,
              Tag<SK::Tags> {};
struct BackendName : Identifier, Tag<SK::BackendName> {};
GRAFT_EXPECT(ExpectBackendName, "expected a backend name after 'backend' (e.g. vulkan)",
             BackendName);
struct Backend : peg::seq<GRAFT_KW("backend"), Nl, peg::must<ExpectBackendName>>,
                 Tag<SK::Backend> {};
struct RuleAttr : peg::sor<Benefit, Tags, Backend> {};
GRAFT_EXPECT(ExpectRuleOpen,
             "expected '{' or a rule attribute (benefit N, tags(...), backend NAME)",
             peg::one<'{'>);
struct Rule : peg::seq<GRAFT_KW("rule"), Nl, peg::must<ExpectRuleName>, peg::star<Nl, RuleAttr>, Nl,
                       peg::must<ExpectRuleOpen>, Nl,
                       peg::star<peg::not_at<peg::one<'}'>>, peg::not_at<peg::eof>,
                                 peg::must<ExpectSection>, Nl>,
                       peg::must<ExpectRBrace>>,
              Tag<SK::Rule> {};

GRAFT_EXPECT(ExpectImportPath, "expected a quoted path after 'import'", LStr);
struct Import
    : peg::seq<GRAFT_KW("import"), Hs, peg::must<ExpectImportPath>, peg::opt<Hs, peg::one<';'>>>,
      Tag<SK::Import> {};
struct PhaseName : Identifier, Tag<SK::PhaseName> {};
GRAFT_EXPECT(ExpectPhaseName, "expected a phase name after 'phase' (legalize or fuse)", PhaseName);
struct Phase
    : peg::seq<GRAFT_KW("phase"), Hs, peg::must<ExpectPhaseName>, peg::opt<Hs, peg::one<';'>>>,
      Tag<SK::Phase> {};
struct TopLevel : peg::sor<Import, Phase, Rule> {};
GRAFT_EXPECT(ExpectTopLevel, "expected 'rule', 'import' or 'phase'", TopLevel);
struct File : peg::seq<Nl, peg::star<peg::not_at<peg::eof>, peg::must<ExpectTopLevel>, Nl>> {};

//===----------------------------------------------------------------------===//
// Parse tree plumbing
//===----------------------------------------------------------------------===//

struct Ast : KindNode<Ast, SK, SK::File> {};

// The rules that recurse, bounded by NestingLimit.
template <typename Rule> struct Guard : peg::nothing<Rule> {};
template <> struct Guard<PList> : NestingLimit {};
template <> struct Guard<PGroup> : NestingLimit {};
template <> struct Guard<EParen> : NestingLimit {};
template <> struct Guard<EList> : NestingLimit {};
template <> struct Guard<ENeg> : NestingLimit {};
template <> struct Guard<ENot> : NestingLimit {};
template <> struct Guard<ECall> : NestingLimit {};

/// Kinds that exist only to group an operator chain: with one child they
/// are replaced by it.
bool foldable(SK k) {
  switch (k) {
  case SK::PatAlt:
  case SK::EOr:
  case SK::EAnd:
  case SK::ECmp:
  case SK::EAdd:
  case SK::EMul:
    return true;
  default:
    return false;
  }
}

Syn convert(const Ast &n) {
  Syn s;
  s.kind = n.kind;
  s.text = std::string(n.string_view());
  s.begin = static_cast<uint32_t>(n.m_begin.byte);
  s.end = static_cast<uint32_t>(n.m_end.byte);
  s.line = static_cast<uint32_t>(n.m_begin.line);
  s.column = static_cast<uint32_t>(n.m_begin.column);
  s.endLine = static_cast<uint32_t>(n.m_end.line);
  if (s.end > s.begin && !s.text.empty() && s.text.back() == '\n')
    --s.endLine;
  s.kids.reserve(n.children.size());
  for (const auto &c : n.children)
    s.kids.push_back(convert(*c));
  if (foldable(s.kind) && s.kids.size() == 1) {
    Syn only = std::move(s.kids.front());
    return only;
  }
  return s;
}

/// Finds the comments (outside string literals) of a file that parsed.
std::vector<Comment> scanComments(std::string_view text) {
  std::vector<Comment> out;
  uint32_t line = 1;
  std::size_t lineStart = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      lineStart = i + 1;
      continue;
    }
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      std::size_t end = i;
      while (end < text.size() && text[end] != '\n' && text[end] != '\r')
        ++end;
      Comment cm;
      cm.text = std::string(text.substr(i, end - i));
      while (!cm.text.empty() && (cm.text.back() == ' ' || cm.text.back() == '\t'))
        cm.text.pop_back();
      cm.begin = static_cast<uint32_t>(i);
      cm.end = static_cast<uint32_t>(end);
      cm.line = line;
      cm.column = static_cast<uint32_t>(i - lineStart + 1);
      cm.ownLine =
          text.substr(lineStart, i - lineStart).find_first_not_of(" \t") == std::string_view::npos;
      out.push_back(std::move(cm));
      i = end - 1;
    }
  }
  return out;
}

} // namespace

Expected<ParsedFile> parseSyntax(std::string_view text, const std::string &name) {
  GRAFT_TRY(std::unique_ptr<Ast> root, (parseTree<File, Ast, Guard>(text, name)));
  ParsedFile file;
  file.name = name;
  file.text = std::string(text);
  if (root) {
    file.root.kind = SK::File;
    file.root.begin = 0;
    file.root.end = static_cast<uint32_t>(text.size());
    file.root.line = file.root.column = 1;
    for (const auto &c : root->children)
      file.root.kids.push_back(convert(*c));
  }
  file.comments = scanComments(text);
  return file;
}

SourceRange rangeOf(const ParsedFile &file, const Syn &node) {
  SourceRange r;
  r.begin.file = file.name;
  r.begin.line = node.line;
  r.begin.column = node.column;
  std::string_view s = node.text;
  if (auto nl = s.find('\n'); nl != std::string_view::npos)
    s = s.substr(0, nl);
  r.length = static_cast<uint32_t>(std::max<std::size_t>(1, s.size()));
  return r;
}

} // namespace graft::dsl
