// checkIndexNowProperties (parser_properties.h): an IndexNow POST body, read as SAX
// events (core/indexnow/request.cc): besides what a submission must be, a body that
// nests deeper than a flat object (depth 2: the object, an array in it) is refused with
// 400 and never accepted. How much memory a body costs is the fuzzer's -rss_limit_mb
// (and tests/indexnow/post_memory_test.cc).
#include <algorithm>
#include <string>
#include <variant>

#include "indexnow/request.h"
#include "lcc/support/url_norm.h"
#include "parser_properties.h"

namespace lcc::fuzz {
namespace {

// The deepest nesting of [ and { outside JSON strings (exact for valid JSON).
std::size_t nesting(std::string_view data) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : data) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

std::string checkIndexNowProperties(std::string_view data) {
  const indexnow::Parsed parsed = indexnow::parsePost(data);
  const std::size_t depth = nesting(data);
  if (const auto* refusal = std::get_if<indexnow::Refusal>(&parsed)) {
    if (refusal->status != 400 && refusal->status != 422) return "refused with " + std::to_string(refusal->status);
    if (depth > 2 && refusal->status != 400) return "nested " + std::to_string(depth) + " deep, refused with 422";
    return refusal->message.empty() ? "refused without a message" : "";
  }
  if (depth > 2) return "accepted a body nested " + std::to_string(depth) + " deep";
  const auto& s = std::get<indexnow::Submission>(parsed);
  if (!indexnow::validKey(s.key)) return "accepted an invalid key";
  if (s.urls.empty() || s.urls.size() > indexnow::kMaxUrls) return "accepted " + std::to_string(s.urls.size()) + " URLs";
  if (s.key_scope.empty() || s.key_url.compare(0, s.key_scope.size(), s.key_scope) != 0) {
    return "the key file is not in its own folder";
  }
  for (const auto& u : s.urls) {
    if (!url::underPrefix(u, s.key_scope)) return "accepted a URL outside the key's folder: " + u;
    auto normal = url::normalizeUrl(u);
    if (!normal.isOk() || *normal != u) return "accepted a URL not in its normal form: " + u;
  }
  return "";
}

}  // namespace lcc::fuzz
