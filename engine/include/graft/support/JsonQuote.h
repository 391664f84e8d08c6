//===- JsonQuote.h - A string as a JSON string literal ----------*- C++ -*-===//
//
// For the few places that print JSON by hand (compile summaries, FQN registry
// provenance) without pulling a JSON library into the engine.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace graft {

/// `s` as a JSON string literal, quotes included: `"`, `\` and control
/// characters escaped (\n \t \r by name, others as \u00XX); other bytes
/// (UTF-8 included) pass through.
std::string jsonQuote(std::string_view s);

} // namespace graft
