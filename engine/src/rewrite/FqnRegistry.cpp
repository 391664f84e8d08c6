//===- FqnRegistry.cpp - Provenance of transformed constants --------------===//
#include "graft/rewrite/FqnRegistry.h"
#include "graft/support/JsonQuote.h"

#include "FqnNaming.h"
#include "RewriteUtil.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

namespace graft::rewrite {

FqnRegistry::FqnRegistry(const FqnRegistry &other) {
  reserve(other.size());
  for (const ProvenanceEntry &o : other.entries_) {
    ProvenanceEntry &e = add(o.request, o.fqn, *o.proto, o.rule(), o.loc(), o.key);
    e.requests = o.requests;
    if (o.alsoRequestedBy_) {
      e.alsoRequestedBy_ = &alsoRequestedBy_.emplace_back();
      for (std::string_view r : *o.alsoRequestedBy_)
        e.alsoRequestedBy_->push_back(intern(r));
    }
    index(entries_.size() - 1);
  }
}

void FqnRegistry::reserve(std::size_t n) {
  byKey_.reserve(entries_.size() + n);
  byFqn_.reserve(entries_.size() + n);
}

void FqnRegistry::index(std::size_t i, uint64_t keyHash, uint64_t fqnHash) {
  ProvenanceEntry &e = entries_[i];
  byKey_.insert(e.key, &e, keyHash ? keyHash : byKey_.hash(e.key));
  byFqn_.insert(e.fqn, &e, fqnHash ? fqnHash : byFqn_.hash(e.fqn));
}

std::string_view FqnRegistry::intern(std::string_view s) {
  InternHint &hint =
      internHints_[(reinterpret_cast<std::uintptr_t>(s.data()) >> 3) % internHints_.size()];
  if (hint.from == s.data() && hint.interned == s)
    return hint.interned;
  uint64_t h = StringViewMap<std::string_view>::hash(s);
  std::string_view copy;
  if (const std::string_view *hit = interned_.find(s, h)) {
    copy = *hit;
  } else {
    copy = strings_.copy(s);
    interned_.insert(copy, copy, h);
  }
  hint = {s.data(), copy};
  return copy;
}

SourceRange ProvenanceLoc::range() const {
  SourceRange r;
  r.begin.file = std::string(file);
  r.begin.line = line;
  r.begin.column = column;
  r.length = length;
  return r;
}

std::vector<std::string> ProvenanceEntry::requestedBy() const {
  std::vector<std::string> out;
  out.reserve(1 + alsoRequestedBy().size());
  out.emplace_back(rule());
  for (std::string_view r : alsoRequestedBy())
    out.emplace_back(r);
  return out;
}

FqnRegistry &FqnRegistry::operator=(const FqnRegistry &other) {
  if (this != &other)
    *this = FqnRegistry(other);
  return *this;
}

namespace {

// Separators that cannot appear in FQNs or argument text: each source FQN
// ends with kSourceEnd, the transform and the arguments follow kFieldStart.
constexpr char kSourceEnd = '\x1f';
constexpr char kFieldStart = '\x1e';
template <class Sources>
std::size_t keySize(const Sources &sources, std::string_view transform, std::string_view args) {
  std::size_t n = transform.size() + args.size() + 2;
  for (const auto &s : sources)
    n += std::string_view(s).size() + 1;
  return n;
}
template <class Sources>
char *writeKey(char *out, const Sources &sources, std::string_view transform,
               std::string_view args) {
  auto put = [&](std::string_view s) {
    if (!s.empty())
      std::memcpy(out, s.data(), s.size());
    out += s.size();
  };
  for (const auto &s : sources) {
    put(s);
    *out++ = kSourceEnd;
  }
  *out++ = kFieldStart;
  put(transform);
  *out++ = kFieldStart;
  put(args);
  return out;
}
template <class Sources>
std::string keyOf(const Sources &sources, std::string_view transform, std::string_view args) {
  std::string k(keySize(sources, transform, args), '\0');
  writeKey(k.data(), sources, transform, args);
  return k;
}
/// The sources part of an FQN: "a", "a+b", or "const" for none.
std::size_t fqnSourcesSize(std::span<const std::string_view> sources) {
  if (sources.empty())
    return 5;
  std::size_t n = sources.size() - 1; // the '+'s
  for (std::string_view s : sources)
    n += s.size();
  return n;
}
char *writeFqnSources(char *out, std::span<const std::string_view> sources) {
  auto put = [&](std::string_view s) {
    if (!s.empty())
      std::memcpy(out, s.data(), s.size());
    out += s.size();
  };
  if (sources.empty())
    put("const");
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (i)
      *out++ = '+';
    put(sources[i]);
  }
  return out;
}
/// A TransformRequest's views, kept in `storage`.
TransformRequestRef refOf(const TransformRequest &request, std::vector<std::string_view> &storage) {
  storage.assign(request.sources.begin(), request.sources.end());
  return {storage, request.transform, request.args};
}
template <class Sources>
std::string strOf(const Sources &sources, std::string_view transform, std::string_view args) {
  std::string out(transform);
  out += '(';
  bool first = true;
  for (const auto &s : sources) {
    if (!first)
      out += ", ";
    out += s;
    first = false;
  }
  if (!args.empty()) {
    if (!first)
      out += ", ";
    out += args;
  }
  return out + ")";
}

} // namespace

std::string TransformRequest::key() const {
  return keyOf(sources, transform, args);
}
std::string TransformRequest::str() const {
  return strOf(sources, transform, args);
}
std::string TransformRequestRef::key() const {
  return keyOf(sources, transform, args);
}
std::string TransformRequestRef::str() const {
  return strOf(sources, transform, args);
}
std::string_view detail::keyInArena(StringArena &arena, const TransformRequestRef &request) {
  std::size_t n = keySize(request.sources, request.transform, request.args);
  char *p = static_cast<char *>(arena.allocate(n));
  writeKey(p, request.sources, request.transform, request.args);
  return {p, n};
}

std::string_view detail::fqnInArena(StringArena &arena, std::span<const std::string_view> sources,
                                    std::string_view tail) {
  std::size_t n = fqnSourcesSize(sources) + tail.size();
  char *p = static_cast<char *>(arena.allocate(n));
  char *q = writeFqnSources(p, sources);
  if (!tail.empty())
    std::memcpy(q, tail.data(), tail.size());
  return {p, n};
}

TransformRequest TransformRequestRef::owned() const {
  TransformRequest r;
  r.sources.assign(sources.begin(), sources.end());
  r.transform = std::string(transform);
  r.args = std::string(args);
  return r;
}

const ProvenanceEntry *FqnRegistry::find(const TransformRequest &request) const {
  return findByKey(request.key());
}

const ProvenanceEntry *FqnRegistry::findByKey(std::string_view key) const {
  return findByKey(key, StringViewMap<std::size_t>::hash(key));
}

const ProvenanceEntry *FqnRegistry::findByKey(std::string_view key, uint64_t keyHash) const {
  ProvenanceEntry *const *e = byKey_.find(key, keyHash);
  return e ? *e : nullptr;
}

const ProvenanceEntry *FqnRegistry::findByFqn(std::string_view fqn) const {
  return findByFqn(fqn, StringViewMap<std::size_t>::hash(fqn));
}

const ProvenanceEntry *FqnRegistry::findByFqn(std::string_view fqn, uint64_t fqnHash) const {
  ProvenanceEntry *const *e = byFqn_.find(fqn, fqnHash);
  return e ? *e : nullptr;
}

std::string FqnRegistry::deriveFqn(const TransformRequest &request) {
  std::vector<std::string_view> sources;
  return deriveFqn(refOf(request, sources));
}

std::string FqnRegistry::deriveFqn(const TransformRequestRef &request) {
  std::string tail = detail::deriveFqnTail(request.transform, request.args);
  std::string out(fqnSourcesSize(request.sources) + tail.size(), '\0');
  char *q = writeFqnSources(out.data(), request.sources);
  std::memcpy(q, tail.data(), tail.size());
  return out;
}

std::string detail::deriveFqnTail(std::string_view transform, std::string_view a) {
  std::string out;
  out.reserve(transform.size() + a.size() + 2);
  out += '.';
  out += transform;
  // Argument values only ("nibbles=low_first, x=[1, 2]" -> "_low_first_1x2"),
  // made identifier-safe: '-' -> 'm', '.' -> 'p', list commas -> 'x';
  // integral floats lose their ".0". One pass, no temporaries.
  std::size_t i = 0;
  while (i < a.size()) {
    std::size_t eq = a.find('=', i);
    if (eq == std::string_view::npos)
      break;
    std::size_t end = eq + 1;
    for (int depth = 0; end < a.size(); ++end) {
      char c = a[end];
      if (c == '[')
        ++depth;
      else if (c == ']')
        --depth;
      else if (c == ',' && depth == 0)
        break;
    }
    std::size_t valueEnd = end;
    if (valueEnd - (eq + 1) > 2 && a.compare(valueEnd - 2, 2, ".0") == 0)
      valueEnd -= 2;
    out += '_';
    for (std::size_t k = eq + 1; k < valueEnd; ++k) {
      char c = a[k];
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
        out += c;
      else if (c == '-')
        out += 'm';
      else if (c == '.')
        out += 'p';
      else if (c == ',')
        out += 'x';
    }
    i = end + 1;
    while (i < a.size() && a[i] == ' ')
      ++i;
  }
  return out;
}

std::string FqnRegistry::proposeFqn(const TransformRequest &request,
                                    const std::function<bool(const std::string &)> &isTaken) const {
  return detail::proposeFqnFrom(*this, deriveFqn(request), isTaken);
}

std::string detail::proposeFqnFrom(const FqnRegistry &registry, std::string base,
                                   const std::function<bool(const std::string &)> &isTaken) {
  auto taken = [&](const std::string &f) {
    return registry.findByFqn(f) != nullptr || (isTaken && isTaken(f));
  };
  if (!taken(base))
    return base; // the common case: no second string
  std::string fqn;
  for (int i = 2;; ++i) {
    fqn = base;
    fqn += '_';
    fqn += std::to_string(i);
    if (!taken(fqn))
      return fqn;
  }
}

const ProvenanceEntry &
FqnRegistry::record(const TransformRequest &request, const TensorProto &proto,
                    std::string_view rule, const SourceRange &loc,
                    const std::function<bool(const std::string &)> &isTaken) {
  return recordAs(request, proposeFqn(request, isTaken), proto, rule, loc);
}

const ProvenanceEntry &FqnRegistry::recordAs(const TransformRequest &request, std::string_view fqn,
                                             const TensorProto &proto, std::string_view rule,
                                             const SourceRange &loc) {
  std::vector<std::string_view> sources;
  return recordAs(refOf(request, sources), fqn, proto, rule, loc);
}

const ProvenanceEntry &FqnRegistry::recordAs(const TransformRequestRef &request,
                                             std::string_view fqn, const TensorProto &proto,
                                             std::string_view rule, const SourceRange &loc,
                                             std::string_view key, uint64_t keyHash,
                                             uint64_t fqnHash) {
  ProvenanceLoc l{loc.begin.file, loc.begin.line, loc.begin.column, loc.length};
  add(request, fqn, proto, rule, l, key);
  index(entries_.size() - 1, key.empty() ? 0 : keyHash, fqnHash);
  return entries_.back();
}

std::size_t FqnRegistry::OriginKeyHash::operator()(const OriginKey &k) const {
  uint64_t h = reinterpret_cast<std::uintptr_t>(k.rule) * 0x9E3779B97F4A7C15ull;
  h ^= reinterpret_cast<std::uintptr_t>(k.file) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= (uint64_t(k.line) << 32 | k.column) * 0xC2B2AE3D27D4EB4Full + (h >> 29);
  return static_cast<std::size_t>(h ^ (uint64_t(k.length) * 0x165667B19E3779F9ull));
}

const ProvenanceOrigin *FqnRegistry::internOrigin(std::string_view rule, const ProvenanceLoc &loc) {
  ProvenanceOrigin o{intern(rule), loc};
  o.loc.file = intern(loc.file);
  OriginKey k{o.rule.data(), o.loc.file.data(), o.loc.line, o.loc.column, o.loc.length};
  auto [it, inserted] = originsByKey_.try_emplace(k, nullptr);
  if (inserted)
    it->second = &origins_.emplace_back(o);
  return it->second;
}

ProvenanceEntry &FqnRegistry::add(const TransformRequestRef &request, std::string_view fqn,
                                  const TensorProto &proto, std::string_view rule,
                                  ProvenanceLoc loc, std::string_view key) {
  // Built in place, every string copied into the arena: no heap allocation
  // per field (the driver records one entry per new constant).
  ProvenanceEntry &e = entries_.emplace_back();
  e.fqn = strings_.copy(fqn);
  e.key = key.empty() ? detail::keyInArena(strings_, request) : strings_.copy(key);
  // The key starts with the source FQNs, each followed by kSourceEnd
  // (writeKey): the sources view the key's copy instead of their own.
  std::span<std::string_view> sources = strings_.array<std::string_view>(request.sources.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::string_view src = request.sources[i];
    if (at + src.size() < e.key.size() && e.key.substr(at, src.size()) == src &&
        e.key[at + src.size()] == kSourceEnd)
      sources[i] = e.key.substr(at, src.size());
    else // a caller's key that is not request.key() (never the driver's)
      sources[i] = strings_.copy(src);
    at += src.size() + 1;
  }
  e.request.sources = sources;
  e.request.transform = intern(request.transform);
  e.request.args = intern(request.args);
  e.proto = protos_.intern(proto);
  e.origin = internOrigin(rule, loc);
  return e;
}

void FqnRegistry::noteReuse(const ProvenanceEntry &entry, std::string_view rule) {
  ProvenanceEntry *const *hit = byFqn_.find(entry.fqn);
  if (!hit)
    return;
  ProvenanceEntry &e = **hit;
  ++e.requests;
  if (rule == e.rule())
    return;
  if (!e.alsoRequestedBy_)
    e.alsoRequestedBy_ = &alsoRequestedBy_.emplace_back();
  std::vector<std::string_view> &also = *e.alsoRequestedBy_;
  if (std::find(also.begin(), also.end(), rule) == also.end())
    also.push_back(intern(rule));
}

std::vector<const ProvenanceEntry *> FqnRegistry::derivedFrom(std::string_view sourceFqn) const {
  std::vector<const ProvenanceEntry *> out;
  for (const ProvenanceEntry &e : entries_)
    if (std::find(e.request.sources.begin(), e.request.sources.end(), sourceFqn) !=
        e.request.sources.end())
      out.push_back(&e);
  return out;
}

std::vector<std::string> FqnRegistry::originsOf(std::string_view fqn) const {
  std::vector<std::string> out;
  std::vector<std::string> stack{std::string(fqn)};
  // Chains are acyclic (an entry's sources exist before it), so this ends.
  while (!stack.empty()) {
    std::string f = std::move(stack.back());
    stack.pop_back();
    if (const ProvenanceEntry *e = findByFqn(f)) {
      for (auto it = e->request.sources.rbegin(); it != e->request.sources.rend(); ++it)
        stack.emplace_back(*it);
    } else if (std::find(out.begin(), out.end(), f) == out.end()) {
      out.push_back(f);
    }
  }
  return out;
}

std::string FqnRegistry::str() const {
  std::string out;
  for (const ProvenanceEntry &e : entries_) {
    out += e.fqn;
    out += " : " + e.proto->str() + " = " + e.request.str() + "  [";
    out += e.rule();
    if (e.requests > 1)
      out += " x" + std::to_string(e.requests);
    out += "]\n";
  }
  return out;
}

std::string FqnRegistry::toJson() const {
  std::string out = "[";
  bool first = true;
  for (const ProvenanceEntry &e : entries_) {
    out += first ? "\n  {" : ",\n  {";
    first = false;
    out += "\"fqn\": " + jsonQuote(e.fqn);
    out += ", \"transform\": " + jsonQuote(e.request.transform);
    out += ", \"sources\": [";
    for (std::size_t i = 0; i < e.request.sources.size(); ++i)
      out += (i ? ", " : "") + jsonQuote(e.request.sources[i]);
    out += "], \"args\": " + jsonQuote(e.request.args);
    out += ", \"shape\": " + jsonQuote(graft::str(e.proto->shape));
    out += ", \"dtype\": " + jsonQuote(name(e.proto->dtype));
    out += ", \"rule\": " + jsonQuote(e.rule());
    out += ", \"loc\": " + jsonQuote(detail::formatLoc(e.loc().range()));
    out += ", \"requests\": " + std::to_string(e.requests);
    out += ", \"requested_by\": [";
    out += jsonQuote(e.rule());
    for (std::string_view r : e.alsoRequestedBy())
      out += ", " + jsonQuote(r);
    out += "]}";
  }
  out += first ? "]" : "\n]";
  return out;
}

} // namespace graft::rewrite
