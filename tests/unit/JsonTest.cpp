// parseOrderedJson (JsonDocument::parse, then toOrderedJson) against
// nlohmann::ordered_json::parse: the same texts are accepted, and they build
// the same documents (member order, number types, float bits), including on
// random mutations of valid documents. Then JsonDocument's own accessors.
#include "graft/serialize/Json.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace graft;
using OJson = nlohmann::ordered_json;

namespace {

/// Equal as documents: types (unsigned, signed and float are different
/// here), member order, float bits.
bool same(const OJson &a, const OJson &b) {
  if (a.type() != b.type())
    return false;
  switch (a.type()) {
  case OJson::value_t::object: {
    if (a.size() != b.size())
      return false;
    auto i = a.begin(), j = b.begin();
    for (; i != a.end(); ++i, ++j)
      if (i.key() != j.key() || !same(i.value(), j.value()))
        return false;
    return true;
  }
  case OJson::value_t::array:
    if (a.size() != b.size())
      return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i]))
        return false;
    return true;
  case OJson::value_t::number_float: {
    double x = a.get<double>(), y = b.get<double>();
    return std::memcmp(&x, &y, sizeof x) == 0;
  }
  default:
    return a == b;
  }
}

/// Checks one text: both parsers accept it and agree, or both reject it with
/// the same message.
void expectAgree(const std::string &text) {
  auto mine = parseOrderedJson(text);
  OJson ref;
  std::string refError;
  try {
    ref = OJson::parse(text);
  } catch (const nlohmann::json::exception &e) {
    refError = e.what();
  }
  if (refError.empty()) {
    ASSERT_TRUE(mine.ok()) << text << "\n" << mine.diags().front().message;
    EXPECT_TRUE(same(*mine, ref)) << text << "\n" << mine->dump() << "\n" << ref.dump();
  } else {
    ASSERT_FALSE(mine.ok()) << text << " (nlohmann: " << refError << ")";
    EXPECT_EQ(mine.diags().front().message, refError) << text;
  }
}

const std::vector<std::string> kValid = {
    "{}",
    "[]",
    " \t\r\n[ ] ",
    "0",
    "-0",
    "-0.0",
    "1e-400",
    "4.9e-324",
    "2.2250738585072011e-308",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "-9223372036854775809",
    "9223372036854775807",
    "0.1",
    "1E+2",
    "1e-2",
    "123456789012345678901234567890",
    "true",
    "false",
    "null",
    "\"\"",
    "\"plain\"",
    R"("esc \" \\ \/ \b \f \n \r \t")",
    R"("\u0000\u0041\u00e9\u20ac\ud83d\ude00")",
    "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"",
    "\xEF\xBB\xBF{\"bom\": 1}",
    R"({"a": 1, "b": [1, 2, {"c": null}], "a": 2})",
    R"({"a": {"x": 1}, "a": [3]})",
    R"([[[[[]]]], [{}], {"": ""}])",
    R"({"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,
        "k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":"again",
        "k18":18,"k1":{"last":true}})",
    R"({"graph": {"nodes": [{"target": "aten.add.Tensor", "inputs": [{"name": "self",
        "arg": {"as_tensor": {"name": "x"}}}], "outputs": [{"as_tensor": {"name": "y"}}],
        "metadata": {"stack_trace": "  File \"m.py\", line 3\n"}}],
        "tensor_values": {"x": {"dtype": 7, "sizes": [{"as_int": 2}, {"as_expr":
        {"expr_str": "s0", "hint": {"as_int": 4}}}], "requires_grad": false}}}})",
};

const std::vector<std::string> kInvalid = {
    "",
    " ",
    "{",
    "[",
    "[1,]",
    "{\"a\":1,}",
    "{\"a\" 1}",
    "{a: 1}",
    "[1 2]",
    "01",
    "-",
    "1.",
    ".5",
    "1e",
    "1e+",
    "+1",
    "NaN",
    "Infinity",
    "tru",
    "nul",
    "\"unterminated",
    "\"ctrl \x01\"",
    R"("\x")",
    R"("\u12")",
    R"("\ud800")",
    R"("\ud800\u0041")",
    R"("\udc00")",
    "\"\xc0\xaf\"",
    "\"\xed\xa0\x80\"",
    "\"\xf4\x90\x80\x80\"",
    "\"\xe2\x82\"",
    "\xEF\xBB{}",
    "{} {}",
    "[] x",
    "{\"a\":[1,{\"b\":}]}",
    "1e400",
    "[-1e400]",
};

} // namespace

TEST(Json, AgreesWithNlohmannOnValidTexts) {
  for (const std::string &t : kValid)
    expectAgree(t);
}

TEST(Json, RejectsWhatNlohmannRejectsWithItsMessage) {
  for (const std::string &t : kInvalid)
    expectAgree(t);
}

TEST(Json, LargeObjectKeepsOrderAndLastDuplicate) {
  std::string text = "{";
  for (int i = 0; i < 5000; ++i)
    text += (i ? "," : "") + ("\"v" + std::to_string(i % 4000) + "\": " + std::to_string(i));
  text += "}";
  auto doc = parseOrderedJson(text);
  ASSERT_TRUE(doc.ok());
  ASSERT_EQ(doc->size(), 4000u);
  EXPECT_EQ(doc->begin().key(), "v0");
  EXPECT_EQ((*doc)["v0"].get<int>(), 4000);
  EXPECT_EQ((*doc)["v3999"].get<int>(), 3999);
  expectAgree(text);
}

TEST(Json, AgreesOnRandomMutations) {
  // Deterministic: single-byte replacements, insertions and deletions of
  // every valid text, drawn from the bytes that matter to the grammar.
  std::mt19937 rng(21);
  const std::string alphabet = "{}[],:\"\\/ -+.eE0123456789tfnul\x01\x7f\xc3\xa9\xed\xf0";
  for (const std::string &base : kValid)
    for (int k = 0; k < 200; ++k) {
      std::string t = base;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        std::size_t at = t.empty() ? 0 : rng() % (t.size() + 1);
        char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
        case 0:
          if (at < t.size())
            t[at] = c;
          break;
        case 1:
          t.insert(t.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        default:
          if (at < t.size())
            t.erase(at, 1);
        }
      }
      expectAgree(t);
    }
}

TEST(JsonDocument, KindsViewsAndLookups) {
  std::string text =
      R"({"s": "plain", "e": "a\nb\u00e9", "i": -3, "u": 7, "f": 0.5, "t": true, "n": null,)"
      R"( "a": [1, "x", []], "o": {"k": 1, "k": 2, "j": {}}})";
  auto doc = JsonDocument::parse(text);
  ASSERT_TRUE(doc.ok()) << doc.diags().front().message;
  const JsonValue &root = doc->root();
  ASSERT_TRUE(root.isObject());
  ASSERT_EQ(root.size(), 9u);
  EXPECT_EQ(root.members()[0].key, "s");
  EXPECT_EQ(root.members()[8].key, "o");
  EXPECT_EQ(root.find("s")->string(), "plain");
  EXPECT_EQ(root.find("e")->string(), "a\nb\xc3\xa9");
  EXPECT_EQ(root.find("i")->kind(), JsonValue::Kind::Integer);
  EXPECT_EQ(root.find("i")->integer(), -3);
  EXPECT_EQ(root.find("u")->kind(), JsonValue::Kind::Unsigned);
  EXPECT_EQ(root.find("u")->unsignedInteger(), 7u);
  EXPECT_TRUE(root.find("u")->isInteger());
  EXPECT_EQ(root.find("u")->number(), 7.0);
  EXPECT_EQ(root.find("f")->kind(), JsonValue::Kind::Float);
  EXPECT_EQ(root.find("f")->number(), 0.5);
  EXPECT_TRUE(root.find("t")->isBoolean() && root.find("t")->boolean());
  EXPECT_TRUE(root.find("n")->isNull());
  EXPECT_EQ(root.find("missing"), nullptr);
  const JsonValue &a = *root.find("a");
  ASSERT_TRUE(a.isArray());
  ASSERT_EQ(a.elements().size(), 3u);
  EXPECT_EQ(a.elements()[1].string(), "x");
  EXPECT_TRUE(a.elements()[2].isArray() && a.elements()[2].size() == 0);
  EXPECT_EQ(a.find("x"), nullptr); // not an object
  EXPECT_TRUE(a.members().empty());
  // A repeated key keeps its first position and its last value.
  const JsonValue &o = *root.find("o");
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o.members()[0].key, "k");
  EXPECT_EQ(o.find("k")->unsignedInteger(), 2u);
  // Scalars have no elements or members.
  EXPECT_EQ(root.find("s")->size(), 0u);
  EXPECT_TRUE(root.find("s")->elements().empty());
}

TEST(JsonDocument, MovingKeepsViewsValid) {
  // A short text lives inside a std::string; the document keeps its own.
  auto doc = JsonDocument::parse(R"(["ab"])");
  ASSERT_TRUE(doc.ok());
  JsonDocument moved = std::move(*doc);
  JsonDocument again = std::move(moved);
  EXPECT_EQ(again.root().elements()[0].string(), "ab");
}

TEST(JsonDocument, DeepNestingNeedsNoRecursion) {
  // Parsing and converting are iterative: depth is bounded by memory only.
  const int depth = 200000;
  std::string text(depth, '[');
  text += "1";
  text.append(depth, ']');
  auto doc = JsonDocument::parse(text);
  ASSERT_TRUE(doc.ok());
  const JsonValue *v = &doc->root();
  for (int i = 0; i < depth; ++i) {
    ASSERT_TRUE(v->isArray());
    v = &v->elements()[0];
  }
  EXPECT_EQ(v->unsignedInteger(), 1u);
  OJson j = toOrderedJson(doc->root());
  const OJson *w = &j;
  for (int i = 0; i < depth; ++i)
    w = &(*w)[0];
  EXPECT_EQ(w->get<int>(), 1);
}

TEST(JsonDocument, ErrorsAreNlohmanns) {
  for (const std::string &t : kInvalid) {
    auto doc = JsonDocument::parse(t);
    ASSERT_FALSE(doc.ok()) << t;
    try {
      OJson accepted = OJson::parse(t);
      ADD_FAILURE() << "nlohmann accepts " << t << " as " << accepted.dump();
    } catch (const nlohmann::json::exception &e) {
      EXPECT_EQ(doc.diags().front().message, e.what()) << t;
    }
  }
}
