//===- StringViewMap.h - Flat hash map from viewed strings ---*- C++ -*-===//
//
// An open-addressing hash map (linear probing, backward-shift deletion) from
// std::string_view keys to small trivially copyable values. The keys view
// strings the caller keeps alive and unchanged (value names, registry
// entries' FQNs): the map stores no strings and allocates only its slot
// array. It replaces std::unordered_map<std::string_view, T> on the rewrite
// engine's hot paths, where a node-based table costs an allocation per
// insert and two dependent cache misses (bucket, then node) per lookup, and a
// prime-modulo bucket index a division: at 10^6 entries those misses were a
// quarter of the time of fusing a graph. Each slot keeps its key's full
// hash, so a probe compares strings only on a hash match. A large slot
// array comes from allocateLarge (huge pages: see LargeAlloc.h).
//
// When the key can be read from the value (a Value's name), a KeyOf functor
// says how, and a slot holds only the hash and the value: 16 bytes instead
// of 32 for StringViewMap<Value *, ValueName>, which halves the memory a
// 10^6-entry table touches on every probe and rehash.
//
//   StringViewMap<Value *> byName;
//   byName.insertOrAssign(v->name(), v);
//   if (Value *const *hit = byName.find("x")) ...
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/support/LargeAlloc.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>

namespace graft {

/// The default KeyOf: slots store a view of their key.
struct ViewedKey {};

template <class T, class KeyOf = ViewedKey> class StringViewMap {
  static_assert(std::is_trivially_copyable_v<T>, "values are copied when slots move");
  static constexpr bool kStoresKey = std::is_same_v<KeyOf, ViewedKey>;

public:
  StringViewMap() = default;
  StringViewMap(const StringViewMap &o) { *this = o; }
  StringViewMap(StringViewMap &&o) noexcept { swap(o); }
  StringViewMap &operator=(const StringViewMap &o) {
    if (this != &o) {
      clear();
      if (o.cap_) {
        allocate(o.cap_);
        std::copy(o.slots_, o.slots_ + o.cap_, slots_);
        size_ = o.size_;
      }
    }
    return *this;
  }
  StringViewMap &operator=(StringViewMap &&o) noexcept {
    StringViewMap tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~StringViewMap() { deallocateLarge(slots_, cap_ * sizeof(Slot)); }
  void swap(StringViewMap &o) noexcept {
    std::swap(slots_, o.slots_);
    std::swap(cap_, o.cap_);
    std::swap(size_, o.size_);
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  /// Makes room for `n` entries without rehashing.
  void reserve(std::size_t n) {
    std::size_t want = 16;
    while (want * 3 < n * 4 + 4) // load factor <= 3/4
      want *= 2;
    if (want > cap_)
      rehash(want);
  }
  void clear() {
    deallocateLarge(slots_, cap_ * sizeof(Slot));
    slots_ = nullptr;
    cap_ = 0;
    size_ = 0;
  }

  /// The hash every StringViewMap uses for `key`: a caller that looks the
  /// same string up in several tables (or looks up, then inserts) computes it
  /// once and passes it to the overloads below.
  static uint64_t hash(std::string_view key) { return hashOf(key); }

  T *find(std::string_view key) { return find(key, hashOf(key)); }
  T *find(std::string_view key, uint64_t h) {
    std::size_t i = probe(h, [&](const Slot &s) { return keyOf(s) == key; });
    return i == kAbsent ? nullptr : &slots_[i].value;
  }
  const T *find(std::string_view key) const { return const_cast<StringViewMap *>(this)->find(key); }
  const T *find(std::string_view key, uint64_t h) const {
    return const_cast<StringViewMap *>(this)->find(key, h);
  }
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  /// Starts loading the slot a key of hash `h` probes first, for a caller
  /// that will look it up (or insert it) soon: in a table of 10^6 entries
  /// each lookup is a cache miss, and several prefetched together overlap
  /// instead of following one another.
  void prefetch(uint64_t h) const {
    if (cap_)
      __builtin_prefetch(&slots_[h & mask()]);
  }
  bool contains(std::string_view key, uint64_t h) const { return find(key, h) != nullptr; }

  /// Inserts `key` -> `value` unless `key` is present. Returns whether it
  /// inserted.
  bool insert(std::string_view key, T value) { return put(key, value, false, hashOf(key)); }
  bool insert(std::string_view key, T value, uint64_t h) { return put(key, value, false, h); }
  /// Inserts or overwrites.
  void insertOrAssign(std::string_view key, T value) { put(key, value, true, hashOf(key)); }
  void insertOrAssign(std::string_view key, T value, uint64_t h) { put(key, value, true, h); }

  /// Removes `key`; returns whether it was present.
  bool erase(std::string_view key) { return erase(key, hashOf(key)); }
  bool erase(std::string_view key, uint64_t h) {
    return eraseAt(probe(h, [&](const Slot &s) { return keyOf(s) == key; }));
  }
  /// Removes the entry holding `value` under hash `h` (the key's hash),
  /// without reading the key: for KeyOf maps whose values identify their
  /// entries (a Value's name entry, erased as the Value's slot is reused:
  /// its name string is a cold cache line). Returns whether it was present.
  bool eraseEntry(uint64_t h, const T &value) {
    return eraseAt(probe(h, [&](const Slot &s) { return s.value == value; }));
  }

private:
  static constexpr std::size_t kAbsent = ~std::size_t(0);
  /// The slot of the entry under hash `h` that `matches` accepts (compared
  /// only where the hash is equal), or kAbsent.
  template <class Matches> std::size_t probe(uint64_t h, Matches &&matches) const {
    if (!cap_)
      return kAbsent;
    for (std::size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot &s = slots_[i];
      if (s.hash == 0)
        return kAbsent;
      if (s.hash == h && matches(s))
        return i;
    }
  }
  /// Removes the entry in slot `i`; false (nothing removed) for kAbsent.
  bool eraseAt(std::size_t i) {
    if (i == kAbsent)
      return false;
    // Backward-shift deletion: pull later entries of the probe run into the
    // hole unless their home slot lies cyclically in (hole, their slot].
    std::size_t j = i;
    for (;;) {
      j = (j + 1) & mask();
      if (slots_[j].hash == 0)
        break;
      std::size_t home = slots_[j].hash & mask();
      bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays)
        continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
    --size_;
    return true;
  }

  struct ViewSlot {
    std::string_view key;
    uint64_t hash = 0; ///< 0: empty (hashOf never returns 0)
    T value{};
  };
  struct ValueSlot {
    uint64_t hash = 0; ///< 0: empty (hashOf never returns 0)
    T value{};
  };
  using Slot = std::conditional_t<kStoresKey, ViewSlot, ValueSlot>;

  static std::string_view keyOf(const Slot &s) {
    if constexpr (kStoresKey)
      return s.key;
    else
      return KeyOf{}(s.value);
  }
  static void setKey([[maybe_unused]] Slot &s, [[maybe_unused]] std::string_view key) {
    if constexpr (kStoresKey)
      s.key = key;
  }

  /// Eight bytes at a time, inline: the keys are names and FQNs of 10 to 60
  /// bytes, hashed once or twice per rewrite each, and std::hash (an
  /// out-of-line byte-oriented loop) was 4 % of fusing's instructions. The
  /// full 64 bits are mixed, since the low bits pick the slot.
  static uint64_t hashOf(std::string_view key) {
    const char *p = key.data();
    std::size_t n = key.size();
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(n) * 0xC2B2AE3D27D4EB4Full);
    auto word = [](const char *q) {
      uint64_t w;
      std::memcpy(&w, q, 8);
      return w;
    };
    auto step = [](uint64_t acc, uint64_t w) {
      acc = (acc ^ w) * 0xBF58476D1CE4E5B9ull;
      return acc ^ (acc >> 31);
    };
    if (n >= 8) {
      for (; n > 8; p += 8, n -= 8)
        h = step(h, word(p));
      h = step(h, word(p + n - 8)); // the last 8 bytes (may overlap the previous word)
    } else if (n >= 4) {
      uint32_t a, b;
      std::memcpy(&a, p, 4);
      std::memcpy(&b, p + n - 4, 4);
      h = step(h, (static_cast<uint64_t>(a) << 32) | b);
    } else if (n > 0) {
      auto byte = [&](std::size_t i) {
        return static_cast<uint64_t>(static_cast<unsigned char>(p[i]));
      };
      h = step(h, (byte(0) << 16) | (byte(n / 2) << 8) | byte(n - 1));
    }
    h ^= h >> 29;
    h *= 0x94D049BB133111EBull;
    h ^= h >> 32;
    return h ? h : 1;
  }
  std::size_t mask() const { return cap_ - 1; }

  bool put(std::string_view key, T value, bool assign, uint64_t h) {
    if ((size_ + 1) * 4 > cap_ * 3)
      rehash(cap_ ? cap_ * 2 : 16);
    for (std::size_t i = h & mask();; i = (i + 1) & mask()) {
      Slot &s = slots_[i];
      if (s.hash == 0) {
        setKey(s, key);
        s.hash = h;
        s.value = value;
        ++size_;
        return true;
      }
      if (s.hash == h && keyOf(s) == key) {
        if (assign) {
          setKey(s, key); // the newest string viewed under this name
          s.value = value;
        }
        return false;
      }
    }
  }

  void allocate(std::size_t n) {
    cap_ = n;
    if constexpr (std::is_trivially_copyable_v<Slot>) {
      // An empty slot is all zero bytes (hash 0, a null pointer or empty
      // view, or 0), and a Slot is an implicit-lifetime aggregate: zeroed
      // memory is an array of empty slots. A big table then costs a page
      // fault per page it fills, not a write of every slot up front.
      slots_ = static_cast<Slot *>(allocateLargeZeroed(n * sizeof(Slot)));
    } else {
      slots_ = static_cast<Slot *>(allocateLarge(n * sizeof(Slot)));
      std::uninitialized_value_construct_n(slots_, n);
    }
  }
  void rehash(std::size_t n) {
    Slot *old = slots_;
    std::size_t oldCap = cap_;
    allocate(n);
    for (std::size_t k = 0; k < oldCap; ++k) {
      const Slot &s = old[k];
      if (s.hash == 0)
        continue;
      std::size_t i = s.hash & mask();
      while (slots_[i].hash != 0)
        i = (i + 1) & mask();
      slots_[i] = s;
    }
    deallocateLarge(old, oldCap * sizeof(Slot));
  }

  Slot *slots_ = nullptr;
  std::size_t cap_ = 0; ///< a power of two, or 0
  std::size_t size_ = 0;
};

} // namespace graft
