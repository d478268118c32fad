// content_filter.cc — ContentFilter, the CU's record filter (lcc/content_store.h).
#include "lcc/content_store.h"

namespace lcc {
namespace {

// True when the list is empty ("any") or `hit` holds for one of its values.
template <typename List, typename Hit>
bool anyOrEmpty(const List& values, Hit hit) {
  if (values.empty()) return true;
  for (const auto& v : values) {
    if (hit(v)) return true;
  }
  return false;
}

}  // namespace

bool ContentFilter::mimeMatches(std::string_view pattern, std::string_view mime) {
  if (pattern == "*" || pattern == "*/*") return true;
  if (pattern.size() >= 2 && pattern.substr(pattern.size() - 2) == "/*") {
    auto type = pattern.substr(0, pattern.size() - 1);  // "text/"
    return mime.size() > type.size() && mime.substr(0, type.size()) == type;
  }
  return pattern == mime;
}

bool ContentFilter::matches(const ContentRecord& r) const {
  if (r.deleted && !include_deleted) return false;
  if (stored_since && r.stored < *stored_since) return false;
  return anyOrEmpty(providers, [&](ProviderId p) { return p == r.key.pid; }) &&
         anyOrEmpty(mime_patterns, [&](const std::string& p) { return mimeMatches(p, r.key.mime); }) &&
         anyOrEmpty(url_prefixes, [&](const std::string& p) { return r.key.url.compare(0, p.size(), p) == 0; });
}

}  // namespace lcc
