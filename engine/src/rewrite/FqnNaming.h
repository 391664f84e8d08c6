//===- FqnNaming.h - FqnRegistry naming in parts (private) ---*- C++ -*-===//
//
// FqnRegistry::deriveFqn is "<sources>.<transform>_<argument values>". The
// rewrite driver stages the same statement with the same argument text for
// every layer: it memoizes the tail (everything after the sources) per plan
// and builds the name from the parts, instead of re-parsing the argument
// text per rewrite. Implemented in FqnRegistry.cpp, so both paths make the
// same names.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace graft {
class StringArena;
} // namespace graft

namespace graft::rewrite {
class FqnRegistry;
struct TransformRequestRef;
} // namespace graft::rewrite

namespace graft::rewrite::detail {

/// FqnRegistry::deriveFqn from its parts, written into `arena`: the sources
/// ("a", "a+b", or "const" for none), then `tail` (deriveFqnTail's).
std::string_view fqnInArena(StringArena &arena, std::span<const std::string_view> sources,
                            std::string_view tail);
/// TransformRequest::key() of `request`, written into `arena`.
std::string_view keyInArena(StringArena &arena, const TransformRequestRef &request);
/// The tail: "." + transform + "_" + each argument value, identifier-safe.
std::string deriveFqnTail(std::string_view transform, std::string_view args);
/// FqnRegistry::proposeFqn for a base the caller derived: `base`, else
/// `base_2`, `base_3`, ... (skipping registry FQNs and what `isTaken` says).
std::string proposeFqnFrom(const FqnRegistry &registry, std::string base,
                           const std::function<bool(const std::string &)> &isTaken);

} // namespace graft::rewrite::detail
