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

#include "graft/ir/ProtoTable.h"
#include "graft/ir/TensorProto.h"
#include "graft/support/Diagnostic.h"
#include "graft/support/StableVector.h"
#include "graft/support/StringArena.h"
#include "graft/support/StringViewMap.h"

#include <array>
#include <cstdint>
#include <functional>
#include <span>
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

/// A request by reference: the strings are someone else's. Registry entries
/// hold these (their strings live in the registry's arena), and the rewrite
/// driver stages one per constant without copying a string to the heap.
struct TransformRequestRef {
  std::span<const std::string_view> sources; ///< source FQNs, in argument order
  std::string_view transform;
  std::string_view args;

  /// The same key and text as TransformRequest's.
  std::string key() const;
  std::string str() const;
  /// An owning copy.
  TransformRequest owned() const;
};

/// Where the rewrite statement that asked for a constant is; the file name
/// is interned in the registry (one copy per file, not per entry).
struct ProvenanceLoc {
  std::string_view file;
  uint32_t line = 0;
  uint32_t column = 0;
  uint32_t length = 1;
  SourceRange range() const;
};

/// The rule and the rewrite statement that first asked for a constant,
/// interned in the registry: a rule's statement makes one constant per
/// match, so every entry it makes shares one origin.
struct ProvenanceOrigin {
  std::string_view rule;
  ProvenanceLoc loc;
};

/// One constant the registry made. Its strings view the registry's arena:
/// valid as long as the registry (moving the registry keeps them valid;
/// a copy of the registry has its own). A rewrite run records one entry per
/// constant it makes (10^5 in a large model), so an entry keeps shared parts
/// (prototype, origin, other requesters) behind pointers: 112 bytes.
struct ProvenanceEntry {
  std::string_view fqn; ///< the new constant's state-dict name
  TransformRequestRef request;
  std::string_view key; ///< request.key()
  /// The constant's prototype, interned: entries with equal prototypes share
  /// one copy, owned by the registry (a model's constants come in a handful
  /// of shapes, and a prototype of its own was half of every entry's bytes).
  const TensorProto *proto = nullptr;
  const ProvenanceOrigin *origin = nullptr;
  uint32_t requests = 1; ///< how often it was asked for (2 for a tied weight)

  /// The rule that first asked for it.
  std::string_view rule() const { return origin->rule; }
  /// The rewrite statement that first asked for it.
  const ProvenanceLoc &loc() const { return origin->loc; }
  /// Distinct rules that asked for it, first-request order: rule(), then
  /// alsoRequestedBy().
  std::vector<std::string> requestedBy() const;
  /// Rules other than rule() that asked for it (empty for nearly every
  /// constant: the list is the registry's, made on the first such request).
  std::span<const std::string_view> alsoRequestedBy() const {
    return alsoRequestedBy_ ? std::span<const std::string_view>(*alsoRequestedBy_)
                            : std::span<const std::string_view>();
  }

private:
  friend class FqnRegistry;
  std::vector<std::string_view> *alsoRequestedBy_ = nullptr;
};

class FqnRegistry {
public:
  FqnRegistry() = default;
  /// A copy has its own arena: every entry's strings are copied into it and
  /// the indexes rebuilt.
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
  /// Cache hint for a caller about to look up or record an entry of FQN
  /// hash `fqnHash` (StringViewMap::prefetch).
  void prefetchFqn(uint64_t fqnHash) const { byFqn_.prefetch(fqnHash); }
  /// Records a new constant for `request`. Its FQN is deriveFqn(request), or,
  /// when `isTaken` says that name is used (by the graph or an earlier entry),
  /// that name plus "_2", "_3", ... — deterministic for a deterministic
  /// sequence of requests. Precondition: find(request) is null.
  const ProvenanceEntry &record(const TransformRequest &request, const TensorProto &proto,
                                std::string_view rule, const SourceRange &loc,
                                const std::function<bool(const std::string &)> &isTaken);
  /// The FQN record() would give `request` now (for naming a constant before
  /// a transaction commits; chained transforms key on it).
  std::string proposeFqn(const TransformRequest &request,
                         const std::function<bool(const std::string &)> &isTaken) const;
  /// Records `request` under an FQN from proposeFqn (precondition: unused).
  /// Every string is copied into the registry's arena.
  const ProvenanceEntry &recordAs(const TransformRequest &request, std::string_view fqn,
                                  const TensorProto &proto, std::string_view rule,
                                  const SourceRange &loc);
  /// The same for a request by reference. `key` is request.key() when the
  /// caller has it (else computed); a caller that hashed the key or the FQN
  /// already passes the hashes (0: not known).
  const ProvenanceEntry &recordAs(const TransformRequestRef &request, std::string_view fqn,
                                  const TensorProto &proto, std::string_view rule,
                                  const SourceRange &loc, std::string_view key = {},
                                  uint64_t keyHash = 0, uint64_t fqnHash = 0);
  /// Counts another request answered by `entry` (from `rule`).
  void noteReuse(const ProvenanceEntry &entry, std::string_view rule);

  /// Makes room for `n` more entries in the indexes without rehashing (the
  /// rewrite driver reserves one per constant of the graph it rewrites: at
  /// 10^5 rewrites the indexes' rehashes were tens of MiB of fresh memory).
  void reserve(std::size_t n);

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
  static std::string deriveFqn(const TransformRequestRef &request);

  /// One line per entry: "fqn = transform(sources, args)  [rule x2]".
  std::string str() const;
  /// A JSON array of {fqn, transform, sources, args, shape, dtype, rule, loc,
  /// requests, requested_by}.
  std::string toJson() const;

private:
  void index(std::size_t i, uint64_t keyHash = 0, uint64_t fqnHash = 0);
  /// One arena copy per distinct rule name or file name.
  std::string_view intern(std::string_view s);
  ProvenanceEntry &add(const TransformRequestRef &request, std::string_view fqn,
                       const TensorProto &proto, std::string_view rule, ProvenanceLoc loc,
                       std::string_view key);
  /// The registry's origin for `rule` at `loc` (made on first sight).
  const ProvenanceOrigin *internOrigin(std::string_view rule, const ProvenanceLoc &loc);

  /// Every string of every entry: FQNs, sources, argument text, keys, and
  /// the interned rule and file names. A std::string per field was a heap
  /// allocation and a free per field of every constant a rewrite made.
  StringArena strings_;
  StringViewMap<std::string_view> interned_;
  /// The last interned copy per caller string address: the driver passes
  /// the same rule name, transform name, argument text and file name (its
  /// compiled rules' strings) for every entry, so a hit skips hashing them.
  /// A hit is confirmed by comparing the text (an address can be reused).
  struct InternHint {
    const char *from = nullptr;
    std::string_view interned;
  };
  std::array<InternHint, 16> internHints_{};
  /// Interned prototypes (never move: entries point at them; the same
  /// table a graph's values share theirs through).
  ProtoTable protos_;
  /// Interned origins (never move: entries point at them), by their interned
  /// rule and file names' addresses and position.
  StableVector<ProvenanceOrigin> origins_;
  struct OriginKey {
    const char *rule;
    const char *file;
    uint32_t line, column, length;
    bool operator==(const OriginKey &) const = default;
  };
  struct OriginKeyHash {
    std::size_t operator()(const OriginKey &k) const;
  };
  std::unordered_map<OriginKey, const ProvenanceOrigin *, OriginKeyHash> originsByKey_;
  /// Lists of other requesters, for the few entries that have one.
  StableVector<std::vector<std::string_view>> alsoRequestedBy_;
  /// Entries never move (references to them are handed out, and the
  /// indexes view their strings); chunks of 32, not one allocation each.
  StableVector<ProvenanceEntry> entries_;
  /// Flat tables of entries by key and by FQN, reading the key through the
  /// entry (entries never move, and their strings are arena views): a slot
  /// is a hash and a pointer, 16 bytes, with no second copy of a string, no
  /// string built per lookup and no allocation per entry. (Slots that also
  /// viewed the key were 32 bytes: at 10^5 rewrites the two tables and their
  /// rehashes were tens of MiB of fresh memory.)
  struct EntryKey {
    std::string_view operator()(const ProvenanceEntry *e) const { return e->key; }
  };
  struct EntryFqn {
    std::string_view operator()(const ProvenanceEntry *e) const { return e->fqn; }
  };
  StringViewMap<ProvenanceEntry *, EntryKey> byKey_;
  StringViewMap<ProvenanceEntry *, EntryFqn> byFqn_;
};

} // namespace graft::rewrite
