//===- FqnRegistry.cpp - Provenance of transformed constants --------------===//
#include "graft/rewrite/FqnRegistry.h"
#include "graft/support/JsonQuote.h"

#include "FqnNaming.h"
#include "RewriteUtil.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace graft::rewrite {

FqnRegistry::FqnRegistry(const FqnRegistry &other) : entries_(other.entries_), keys_(other.keys_) {
  byKey_.reserve(entries_.size());
  byFqn_.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i)
    index(i);
}

void FqnRegistry::index(std::size_t i, uint64_t keyHash, uint64_t fqnHash) {
  const std::string &k = keys_[i], &f = entries_[i].fqn;
  byKey_.insert(k, i, keyHash ? keyHash : StringViewMap<std::size_t>::hash(k));
  byFqn_.insert(f, i, fqnHash ? fqnHash : StringViewMap<std::size_t>::hash(f));
}

std::vector<std::string> ProvenanceEntry::requestedBy() const {
  std::vector<std::string> out;
  out.reserve(1 + alsoRequestedBy.size());
  out.push_back(rule);
  out.insert(out.end(), alsoRequestedBy.begin(), alsoRequestedBy.end());
  return out;
}

FqnRegistry &FqnRegistry::operator=(const FqnRegistry &other) {
  if (this != &other)
    *this = FqnRegistry(other);
  return *this;
}

std::string TransformRequest::key() const {
  // Separators that cannot appear in FQNs or argument text. Sized once: the
  // driver builds a key per staged transform.
  std::size_t n = transform.size() + args.size() + 2;
  for (const std::string &s : sources)
    n += s.size() + 1;
  std::string k;
  k.reserve(n);
  for (const std::string &s : sources) {
    k += s;
    k += '\x1f';
  }
  k += '\x1e';
  k += transform;
  k += '\x1e';
  k += args;
  return k;
}

std::string TransformRequest::str() const {
  std::string out = transform + "(";
  for (std::size_t i = 0; i < sources.size(); ++i)
    out += (i ? ", " : "") + sources[i];
  if (!args.empty())
    out += (sources.empty() ? "" : ", ") + args;
  return out + ")";
}

const ProvenanceEntry *FqnRegistry::find(const TransformRequest &request) const {
  return findByKey(request.key());
}

const ProvenanceEntry *FqnRegistry::findByKey(std::string_view key) const {
  return findByKey(key, StringViewMap<std::size_t>::hash(key));
}

const ProvenanceEntry *FqnRegistry::findByKey(std::string_view key, uint64_t keyHash) const {
  const std::size_t *i = byKey_.find(key, keyHash);
  return i ? &entries_[*i] : nullptr;
}

const ProvenanceEntry *FqnRegistry::findByFqn(std::string_view fqn) const {
  return findByFqn(fqn, StringViewMap<std::size_t>::hash(fqn));
}

const ProvenanceEntry *FqnRegistry::findByFqn(std::string_view fqn, uint64_t fqnHash) const {
  const std::size_t *i = byFqn_.find(fqn, fqnHash);
  return i ? &entries_[*i] : nullptr;
}

std::string FqnRegistry::deriveFqn(const TransformRequest &request) {
  std::string tail = detail::deriveFqnTail(request.transform, request.args);
  std::size_t n = tail.size() + 8;
  for (const std::string &s : request.sources)
    n += s.size() + 1;
  std::string out;
  out.reserve(n);
  detail::appendFqnSources(out, request.sources);
  out += tail;
  return out;
}

void detail::appendFqnSources(std::string &out, const std::vector<std::string> &sources) {
  out += sources.empty() ? std::string_view("const") : std::string_view(sources[0]);
  for (std::size_t i = 1; i < sources.size(); ++i) {
    out += '+';
    out += sources[i];
  }
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
FqnRegistry::record(const TransformRequest &request, TensorProto proto, std::string rule,
                    SourceRange loc, const std::function<bool(const std::string &)> &isTaken) {
  return recordAs(request, proposeFqn(request, isTaken), std::move(proto), std::move(rule),
                  std::move(loc));
}

const ProvenanceEntry &FqnRegistry::recordAs(TransformRequest request, std::string fqn,
                                             TensorProto proto, std::string rule, SourceRange loc,
                                             std::string key, uint64_t keyHash, uint64_t fqnHash) {
  if (key.empty())
    key = request.key();
  // Built in place: an entry is a few hundred bytes of strings, vectors and
  // a prototype, and the driver records one per new constant.
  ProvenanceEntry &e = entries_.emplace_back();
  e.fqn = std::move(fqn);
  e.request = std::move(request);
  e.proto = std::move(proto);
  e.rule = std::move(rule);
  e.loc = std::move(loc);
  keys_.push_back(std::move(key));
  index(entries_.size() - 1, keyHash, fqnHash);
  return entries_.back();
}

void FqnRegistry::noteReuse(const ProvenanceEntry &entry, const std::string &rule) {
  const std::size_t *i = byFqn_.find(entry.fqn);
  if (!i)
    return;
  ProvenanceEntry &e = entries_[*i];
  ++e.requests;
  if (rule != e.rule && std::find(e.alsoRequestedBy.begin(), e.alsoRequestedBy.end(), rule) ==
                            e.alsoRequestedBy.end())
    e.alsoRequestedBy.push_back(rule);
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
        stack.push_back(*it);
    } else if (std::find(out.begin(), out.end(), f) == out.end()) {
      out.push_back(f);
    }
  }
  return out;
}

std::string FqnRegistry::str() const {
  std::string out;
  for (const ProvenanceEntry &e : entries_) {
    out += e.fqn + " : " + e.proto.str() + " = " + e.request.str() + "  [" + e.rule;
    if (e.requests > 1)
      out += " x" + std::to_string(e.requests);
    out += "]\n";
  }
  return out;
}

namespace {} // namespace

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
    out += ", \"shape\": " + jsonQuote(graft::str(e.proto.shape));
    out += ", \"dtype\": " + jsonQuote(name(e.proto.dtype));
    out += ", \"rule\": " + jsonQuote(e.rule);
    out += ", \"loc\": " + jsonQuote(detail::formatLoc(e.loc));
    out += ", \"requests\": " + std::to_string(e.requests);
    out += ", \"requested_by\": [";
    out += jsonQuote(e.rule);
    for (const std::string &r : e.alsoRequestedBy)
      out += ", " + jsonQuote(r);
    out += "]}";
  }
  out += first ? "]" : "\n]";
  return out;
}

} // namespace graft::rewrite
