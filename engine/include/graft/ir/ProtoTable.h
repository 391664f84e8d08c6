//===- ProtoTable.h - A graph's interned tensor prototypes -----*- C++ -*-===//
//
// A graph's values share their prototypes. A Llama layer has a few dozen
// distinct (dtype, shape, strides, quantization) combinations and repeats
// them in every layer, so each Value points at one interned, immutable copy
// instead of carrying 160 bytes of its own: at 10^6 nodes that is 190 MB
// less graph, and a matcher reading a cold value's dtype and shape touches
// the value's first cache line and a prototype that is already in cache.
// Interned prototypes never move or change, so a reference from
// Value::proto() stays valid (and unchanged) for the graph's lifetime even
// when the value is given another prototype.
//
//   ProtoTable protos;
//   const TensorProto *p = protos.intern(TensorProto(DType::F32, {4, 8}));
//   assert(p == protos.intern(TensorProto(DType::F32, {4, 8})));
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/TensorProto.h"
#include "graft/support/StableVector.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace graft {

class ProtoTable {
public:
  ProtoTable() = default;
  ProtoTable(const ProtoTable &) = delete;
  ProtoTable &operator=(const ProtoTable &) = delete;
  /// Interned prototypes stay where they are (their chunks change owner),
  /// so pointers into a moved table stay valid; the moved-from table is
  /// empty and forgets its last hit (which is the other table's now).
  ProtoTable(ProtoTable &&other) noexcept
      : protos_(std::move(other.protos_)), slots_(std::move(other.slots_)), last_(other.last_),
        lastHash_(other.lastHash_) {
    other.clearAfterMove();
  }
  ProtoTable &operator=(ProtoTable &&other) noexcept {
    if (this != &other) {
      protos_ = std::move(other.protos_);
      slots_ = std::move(other.slots_);
      last_ = other.last_;
      lastHash_ = other.lastHash_;
      other.clearAfterMove();
    }
    return *this;
  }

  /// The interned prototype equal (protoEqual) to `proto`, added when new.
  const TensorProto *intern(const TensorProto &proto);
  const TensorProto *intern(TensorProto &&proto);
  /// Distinct prototypes interned so far.
  std::size_t size() const { return protos_.size(); }
  /// The default prototype (TensorProto()), shared by every table: what a
  /// value reads before it is given one.
  static const TensorProto *empty();

private:
  template <class P> const TensorProto *internImpl(P &&proto);
  void grow();
  void clearAfterMove() {
    protos_.clear();
    slots_.clear();
    last_ = nullptr;
    lastHash_ = 0;
  }

  struct Slot {
    uint64_t hash = 0;
    const TensorProto *proto = nullptr; ///< null: empty slot
  };
  StableVector<TensorProto> protos_;
  std::vector<Slot> slots_; ///< open addressing, power-of-two size, load <= 1/2
  /// The last prototype interned or found: consecutive values (a node's
  /// results, a layer's repeated ops) often share one.
  const TensorProto *last_ = nullptr;
  uint64_t lastHash_ = 0;
  const TensorProto *remember(const TensorProto *p, uint64_t h) {
    lastHash_ = h;
    return last_ = p;
  }
};

} // namespace graft
