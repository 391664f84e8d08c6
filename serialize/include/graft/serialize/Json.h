//===- Json.h - Linear-time JSON parsing into nlohmann::ordered_json -*- C++ -*-===//
//
// nlohmann::ordered_json::parse builds each object by inserting its members one
// at a time into a vector of pairs whose keys are const: every insertion scans
// the members before it for a duplicate (quadratic in the object's size) and
// every growth copies the keys. A torch.export model.json of a 128-layer model
// (11 MB, tensor_values with ~9k members) spends over a second there.
// parseOrderedJson builds the same document in one pass: members are gathered
// on a scratch stack and each container is allocated once, at its final size.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/Expected.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace graft {

/// Parses `text` (RFC 8259, UTF-8) into the value nlohmann::ordered_json::parse
/// returns for it: the same members in the same order (a repeated key keeps
/// its first position and its last value), the same number types (unsigned,
/// signed, or float when an integer overflows). On invalid input the error is
/// nlohmann's message ("parse error at line 1, column 3: ...").
Expected<nlohmann::ordered_json> parseOrderedJson(std::string_view text);

} // namespace graft
