//===- FqnRegistry.h - Provenance of every transformed constant ---*- C++ -*-===//
//
// Every constant transform a rewrite applies is recorded here by its request:
// (source FQN(s), transform name, canonical argument text). This closes the
// hazard of ExecuTorch's register_param_mutation (review of
// pytorch/executorch#20381), where a weight is repacked *in place* under its
// state-dict FQN:
//
//  * the same request again returns the constant made the first time, so a
//    tied embedding / lm_head weight is packed exactly once;
//  * a different transform of the same FQN yields a *separate* constant with
//    its own deterministic FQN (`tok_embeddings.scales.transpose_0_1`), never
//    a mutation, so an embedding reading scales [V, G] and an lm_head reading
//    them transposed [G, N] both stay correct.
//
// The registry outlives a single rewrite run (pass one registry to several
// runs over the same program) and is printed as provenance by `graft fuse`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/TensorProto.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/StableVector.h"
#include "graft/support/StringViewMap.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace graft::rewrite {

/// What was asked for: a transform of one or more source constants.
struct TransformRequest {
  std::vector<std::string> sources; ///< source FQNs, in argument order
  std::string transform;            ///< "pack_int4"
  std::string args;                 ///< canonical argument text, "nibbles=low_first"

  /// The registry key: sources, transform and arguments, unambiguous.
  std::string key() const;
  /// "pack_int4(tok_embeddings.weight, nibbles=low_first)"
  std::string str() const;
};

/// One constant the registry made.
struct ProvenanceEntry {
  std::string fqn; ///< the new constant's state-dict name
  TransformRequest request;
  TensorProto proto;
  std::string rule;      ///< the rule that first asked for it
  SourceRange loc;       ///< the rewrite statement that first asked for it
  uint64_t requests = 1; ///< how often it was asked for (2 for a tied weight)
  /// Distinct rules that asked for it, first-request order: `rule`, then
  /// alsoRequestedBy.
  std::vector<std::string> requestedBy() const;
  /// Rules other than `rule` that asked for it (empty for nearly every
  /// constant: no list and no second copy of the rule name per entry).
  std::vector<std::string> alsoRequestedBy;
};

class FqnRegistry {
public:
  FqnRegistry() = default;
  /// Copies rebuild the FQN index (its keys view this registry's entries).
  FqnRegistry(const FqnRegistry &other);
  FqnRegistry &operator=(const FqnRegistry &other);
  FqnRegistry(FqnRegistry &&) noexcept = default;
  FqnRegistry &operator=(FqnRegistry &&) noexcept = default;

  /// The entry for this request, or null.
  const ProvenanceEntry *find(const TransformRequest &request) const;
  const ProvenanceEntry *findByFqn(std::string_view fqn) const;
  /// By TransformRequest::key() (callers that already built the key).
  const ProvenanceEntry *findByKey(std::string_view key) const;
  /// The same with the key's hash (StringViewMap<>::hash) computed once by a
  /// caller that also passes it to recordAs.
  const ProvenanceEntry *findByKey(std::string_view key, uint64_t keyHash) const;
  const ProvenanceEntry *findByFqn(std::string_view fqn, uint64_t fqnHash) const;
  /// Records a new constant for `request`. Its FQN is deriveFqn(request), or,
  /// when `isTaken` says that name is used (by the graph or an earlier entry),
  /// that name plus "_2", "_3", ... — deterministic for a deterministic
  /// sequence of requests. Precondition: find(request) is null.
  const ProvenanceEntry &record(const TransformRequest &request, TensorProto proto,
                                std::string rule, SourceRange loc,
                                const std::function<bool(const std::string &)> &isTaken);
  /// The FQN record() would give `request` now (for naming a constant before
  /// a transaction commits; chained transforms key on it).
  std::string proposeFqn(const TransformRequest &request,
                         const std::function<bool(const std::string &)> &isTaken) const;
  /// Records `request` under an FQN from proposeFqn (precondition: unused).
  /// `key` is request.key() when the caller has it (else computed); a
  /// caller that hashed the key or the FQN already passes the hashes (0:
  /// not known).
  /// Takes the request by value: a caller done with its request moves it in.
  const ProvenanceEntry &recordAs(TransformRequest request, std::string fqn, TensorProto proto,
                                  std::string rule, SourceRange loc, std::string key = {},
                                  uint64_t keyHash = 0, uint64_t fqnHash = 0);
  /// Counts another request answered by `entry` (from `rule`).
  void noteReuse(const ProvenanceEntry &entry, const std::string &rule);

  /// Entries in creation order.
  const StableVector<ProvenanceEntry> &entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  /// Constants made directly from `sourceFqn`.
  std::vector<const ProvenanceEntry *> derivedFrom(std::string_view sourceFqn) const;
  /// The original (non-registry) FQNs a registry constant derives from,
  /// following chains of transforms; {fqn} itself for an original.
  std::vector<std::string> originsOf(std::string_view fqn) const;

  /// Deterministic base name: first source + "." + transform + "_" + the
  /// argument values ("layers.0.wq.scales.pad_to_multiple_1_8_0").
  static std::string deriveFqn(const TransformRequest &request);

  /// One line per entry: "fqn = transform(sources, args)  [rule x2]".
  std::string str() const;
  /// A JSON array of {fqn, transform, sources, args, shape, dtype, rule, loc,
  /// requests, requested_by}.
  std::string toJson() const;

private:
  void index(std::size_t i, uint64_t keyHash = 0, uint64_t fqnHash = 0);

  /// Entries never move (references to them are handed out, and the
  /// indexes view their strings); chunks of 32, not one allocation each.
  StableVector<ProvenanceEntry> entries_;
  /// keys_[i] is entries_[i].request.key().
  StableVector<std::string, 64> keys_;
  /// Flat tables whose keys view keys_[i] and entries_[i].fqn (neither
  /// moves): no second copy of a string, no string built per lookup, no
  /// allocation per entry.
  StringViewMap<std::size_t> byKey_;
  StringViewMap<std::size_t> byFqn_;
};

} // namespace graft::rewrite
