//===- RootIndex.h - Which rules to try at a node -*- C++ -*-===//
//
// Internal to engine/src/rewrite. Rules are indexed by the schema pointer of
// their root op (a rule set roots at a handful of ops: a short array scanned
// per node, no hashing, no string compares); rules on
// unregistered ops fall back to comparing target text. Each bucket is in
// benefit order (ties: rule order), the order the driver tries them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "Matcher.h"

#include "graft/rewrite/Rewriter.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace graft::rewrite::detail {

/// Root-op index: which rules to try at a node, already in benefit order.
class RootIndex {
public:
  RootIndex(const CompiledRules &rules, const std::vector<bool> &enabled) {
    for (std::size_t ri : rules.byBenefit()) {
      if (!enabled[ri])
        continue;
      const CompiledRule &cr = rules.compiled(ri);
      for (const OpSchema *s : cr.rootSchemas) {
        auto it = std::find_if(bySchema_.begin(), bySchema_.end(),
                               [&](const auto &e) { return e.first == s; });
        if (it == bySchema_.end()) {
          bySchema_.emplace_back(s, std::vector<uint32_t>());
          it = bySchema_.end() - 1;
        }
        it->second.push_back(static_cast<uint32_t>(ri));
      }
      for (const std::string &t : cr.rootOpaqueTargets)
        opaque_.push_back({t, false, static_cast<uint32_t>(ri)});
      for (const std::string &p : cr.rootOpaquePrefixes)
        opaque_.push_back({p, true, static_cast<uint32_t>(ri)});
    }
  }
  /// Rules to try at `n`; `scratch` holds opaque matches.
  const std::vector<uint32_t> *lookup(const Node &n, std::vector<uint32_t> &scratch) const {
    if (const OpSchema *s = n.schema()) {
      for (const auto &e : bySchema_)
        if (e.first == s)
          return &e.second;
      return nullptr;
    }
    if (opaque_.empty())
      return nullptr;
    scratch.clear();
    for (const auto &o : opaque_)
      if (o.prefix ? n.target().compare(0, o.text.size(), o.text) == 0 : n.target() == o.text)
        scratch.push_back(o.rule);
    return scratch.empty() ? nullptr : &scratch;
  }

private:
  struct Opaque {
    std::string text;
    bool prefix;
    uint32_t rule;
  };
  std::vector<std::pair<const OpSchema *, std::vector<uint32_t>>> bySchema_;
  std::vector<Opaque> opaque_;
};

} // namespace graft::rewrite::detail
