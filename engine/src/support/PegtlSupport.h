//===- PegtlSupport.h - What graft's PEGTL grammars share -------*- C++ -*-===//
//
// graft has two PEGTL grammars, the .pat rule language (dsl/src/PatParser.cpp)
// and the text IR (serialize/src/TextIRParser.cpp). Each grammar stays private
// to its .cpp; this header holds what they have in common, so both report
// syntax errors, bound nesting, lex numbers and strings and decode literals
// the same way:
//   - the error scaffolding: a rule at a commit point (`must<>`) carries the
//     message a user sees (GRAFT_EXPECT), never a PEGTL rule name, and a
//     syntax error becomes a located Diagnostic (parseTree);
//   - the parse-tree plumbing: only rules tagged with a node kind are stored
//     (Tag, KindNode), and recursion is bounded (NestingLimit);
//   - the shared lexical rules (identifiers, decimal numbers, string
//     literals with their escapes); LiteralText.h decodes their text.
//
// Private to graft: it is not installed (it lives under src/) and needs PEGTL,
// which only the two parsing libraries link (privately).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Diagnostic.h"
#include "graft/support/Expected.h"
#include "support/LiteralText.h"

#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/parse_tree.hpp>
#include <tao/pegtl/must_if.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace graft::grammar {

namespace peg = tao::pegtl;

/// A rule used only at a commit point: failing it is a syntax error with
/// `Message` (see Control). must_if raises for any rule with a message, so
/// these wrap the real rules and appear nowhere else.
#define GRAFT_EXPECT(Name, Message, ...)                                                           \
  struct Name : tao::pegtl::seq<__VA_ARGS__> {                                                     \
    static constexpr const char *kExpected = Message;                                              \
  }

//===----------------------------------------------------------------------===//
// Errors and the parse tree
//===----------------------------------------------------------------------===//

template <typename Rule> constexpr const char *expectedMessage() {
  if constexpr (requires { Rule::kExpected; })
    return Rule::kExpected;
  else
    return nullptr;
}
struct Errors {
  template <typename Rule> static constexpr const char *message = expectedMessage<Rule>();
};
template <typename Rule> struct Control : peg::must_if<Errors>::control<Rule> {};

/// Marks a rule whose matches the parse tree keeps, as a node of `Kind` (a
/// grammar's own enum); all other rules only shape the syntax.
template <auto Kind> struct Tag { static constexpr auto kKind = Kind; };
template <typename Rule> struct Selector : std::bool_constant < requires { Rule::kKind; } > {};

/// A parse-tree node that remembers the kind of the rule that made it; the
/// root, which no rule makes, is `RootKind`.
template <typename Derived, typename KindT, KindT RootKind>
struct KindNode : peg::parse_tree::basic_node<Derived> {
  KindT kind = RootKind;
  template <typename Rule, typename ParseInput, typename... States>
  void start(const ParseInput &in, States &&...st) {
    peg::parse_tree::basic_node<Derived>::template start<Rule>(in, st...);
    kind = Rule::kKind;
  }
};

/// Bounds recursion (nested lists, parentheses, unary operators, calls) so
/// hostile input cannot overflow the stack; the tree walks after parsing are
/// bounded by the same depth. A grammar's Guard<Rule> derives from it for
/// each rule that recurses.
constexpr std::size_t kMaxNesting = 64;
struct NestingLimit : peg::maybe_nothing {
  template <typename Rule, peg::apply_mode A, peg::rewind_mode M,
            template <typename...> class Action, template <typename...> class Ctrl,
            typename ParseInput, typename... States>
  static bool match(ParseInput &in, States &&...st) {
    struct Depth {
      std::size_t &d;
      explicit Depth(std::size_t &depth) : d(depth) { ++d; }
      ~Depth() { --d; }
    } depth(in.private_depth);
    if (in.private_depth > kMaxNesting)
      throw peg::parse_error("nesting deeper than " + std::to_string(kMaxNesting) + " levels", in);
    return peg::match<Rule, A, M, Action, Ctrl>(in, st...);
  }
};

/// Parses `text` (called `name` in messages) with `Grammar` into a tree of
/// `Node`s (null when the grammar matched nothing). PEGTL reports syntax
/// errors by exception; they never leave this function: a syntax error is a
/// Diagnostic at the position where the grammar gave up.
template <typename Grammar, typename Node, template <typename> class Guard>
Expected<std::unique_ptr<Node>> parseTree(std::string_view text, const std::string &name) {
  peg::memory_input<> in(text.data(), text.size(), name);
  try {
    return peg::parse_tree::parse<Grammar, Node, Selector, Guard, Control>(in);
  } catch (const peg::parse_error &e) {
    SourceRange r;
    r.begin.file = name;
    if (!e.positions().empty()) {
      r.begin.line = static_cast<uint32_t>(e.positions().front().line);
      r.begin.column = static_cast<uint32_t>(e.positions().front().column);
    }
    return Diagnostic::error(r, std::string(e.message()));
  }
}

//===----------------------------------------------------------------------===//
// Lexical rules both languages spell alike
//===----------------------------------------------------------------------===//

struct IdentFirst : peg::ranges<'a', 'z', 'A', 'Z', '_'> {};
struct IdentOther : peg::ranges<'a', 'z', 'A', 'Z', '0', '9', '_'> {};
struct Identifier : peg::seq<IdentFirst, peg::star<IdentOther>> {};

struct Digits : peg::plus<peg::digit> {};
struct Exponent : peg::seq<peg::one<'e', 'E'>, peg::opt<peg::one<'+', '-'>>, Digits> {};
/// An unsigned decimal float (1.5, 1e-3, 2.5E+7: a '.' or an exponent is what
/// makes it one) or one of `Special` (each grammar's keywords inf and nan).
template <typename... Special>
struct DecimalFloat
    : peg::sor<
          peg::seq<Digits, peg::sor<peg::seq<peg::one<'.'>, Digits, peg::opt<Exponent>>, Exponent>>,
          Special...> {};

GRAFT_EXPECT(EscapeSeq, "unknown escape sequence (expected \\\" \\\\ \\n \\t \\r or \\xHH)",
             peg::sor<peg::one<'"', '\\', 'n', 't', 'r'>,
                      peg::seq<peg::one<'x'>, peg::xdigit, peg::xdigit>>);
struct Escape : peg::seq<peg::one<'\\'>, peg::must<EscapeSeq>> {};
struct StringChar : peg::sor<Escape, peg::not_one<'"', '\\', '\n', '\r'>> {};
GRAFT_EXPECT(StringEnd, "unterminated string (missing closing '\"' on this line)", peg::one<'"'>);
/// A string literal on one line, quotes included (decoded by unescape()).
struct QuotedString : peg::seq<peg::one<'"'>, peg::star<StringChar>, peg::must<StringEnd>> {};

} // namespace graft::grammar
