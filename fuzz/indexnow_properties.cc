// checkIndexNowProperties (parser_properties.h): an IndexNow POST body.
#include <string>
#include <variant>

#include "indexnow/request.h"
#include "lcc/support/url_norm.h"
#include "parser_properties.h"

namespace lcc::fuzz {

std::string checkIndexNowProperties(std::string_view data) {
  const indexnow::Parsed parsed = indexnow::parsePost(data);
  if (const auto* refusal = std::get_if<indexnow::Refusal>(&parsed)) {
    if (refusal->status != 400 && refusal->status != 422) return "refused with " + std::to_string(refusal->status);
    return refusal->message.empty() ? "refused without a message" : "";
  }
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
