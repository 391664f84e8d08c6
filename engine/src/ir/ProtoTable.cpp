//===- ProtoTable.cpp - A graph's interned tensor prototypes --------------===//
//
// See ProtoTable.h. Linear probing over (fingerprint, prototype) slots; a
// full compare only on a fingerprint match.
//
//===----------------------------------------------------------------------===//
#include "graft/ir/ProtoTable.h"

#include <utility>

namespace graft {

const TensorProto *ProtoTable::empty() {
  static const TensorProto kEmpty{};
  return &kEmpty;
}

const TensorProto *ProtoTable::intern(const TensorProto &proto) {
  return internImpl(proto);
}

const TensorProto *ProtoTable::intern(TensorProto &&proto) {
  return internImpl(std::move(proto));
}

template <class P> const TensorProto *ProtoTable::internImpl(P &&proto) {
  uint64_t h = protoHash(proto);
  if (last_ && lastHash_ == h && protoEqual(*last_, proto))
    return last_;
  if (slots_.empty())
    slots_.resize(16);
  std::size_t mask = slots_.size() - 1;
  std::size_t i = h & mask;
  for (; slots_[i].proto; i = (i + 1) & mask)
    if (slots_[i].hash == h && protoEqual(*slots_[i].proto, proto))
      return remember(slots_[i].proto, h);
  const TensorProto *p = &protos_.emplace_back(std::forward<P>(proto));
  slots_[i] = {h, p};
  if (2 * protos_.size() > slots_.size())
    grow();
  return remember(p, h);
}

void ProtoTable::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  std::size_t mask = slots_.size() - 1;
  for (const Slot &s : old)
    if (s.proto) {
      std::size_t i = s.hash & mask;
      while (slots_[i].proto)
        i = (i + 1) & mask;
      slots_[i] = s;
    }
}

} // namespace graft
