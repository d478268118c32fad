#include "redirect_policy.h"

#include "lcc/support/url_norm.h"

namespace lcc::plugins::curl {

RedirectVerdict judgeRedirect(const FetchRequest& request, std::string_view target, long hops, long max_redirects) {
  RedirectVerdict v;
  const std::string shown(target.substr(0, 200));
  if (request.redirects == RedirectPolicy::kNone) {
    v.why = "redirect to " + shown + " not followed (fetch.redirects: none)";
    return v;
  }
  if (hops >= max_redirects) {
    v.why = "more than " + std::to_string(max_redirects) + " redirects";
    return v;
  }
  auto normal = url::normalizeUrl(target);
  if (!normal.isOk()) {
    v.why = "redirect to an invalid URL " + shown + ": " + normal.status().message();
    return v;
  }
  bool allowed = false;
  if (request.redirects == RedirectPolicy::kHost) {
    auto to = url::splitNormalUrl(normal.value());
    auto from = url::normalizeUrl(request.url);
    auto from_parts = from.isOk() ? url::splitNormalUrl(from.value()) : Result<url::UrlParts>(from.status());
    allowed = to.isOk() && from_parts.isOk() && to->host == from_parts->host;
  } else {
    for (const auto& p : request.redirect_prefixes) allowed = allowed || url::underPrefix(normal.value(), p);
  }
  if (!allowed) {
    v.why = "redirect to " + normal.value() + " is outside the " +
            std::string(request.redirects == RedirectPolicy::kHost ? "host" : "provider's prefixes") +
            " (fetch.redirects: " + std::string(redirectPolicyName(request.redirects)) + ")";
    return v;
  }
  v.follow = true;
  v.url = std::move(normal).value();
  return v;
}

}  // namespace lcc::plugins::curl
