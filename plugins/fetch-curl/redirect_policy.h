// redirect_policy.h — which redirect a fetch follows (FetchRequest::redirects). Pure
// policy: the fetcher hands it the target libcurl read from Location, and follows only
// what it allows; what it refuses ends the fetch with 310.
#pragma once

#include <string>
#include <string_view>

#include "lcc/types.h"

namespace lcc::plugins::curl {

struct RedirectVerdict {
  bool follow = false;
  std::string url;  // the target in normal form, when follow
  std::string why;  // why not, when !follow (the 310 message)
};

// `target`: the absolute target of the redirect (CURLINFO_REDIRECT_URL); `hops`: the
// redirects already followed. The target is normalised (url/url_norm.h) before it is
// judged: kPrefix wants it under one of request.redirect_prefixes, kHost on the host of
// request.url, kNone refuses all.
RedirectVerdict judgeRedirect(const FetchRequest& request, std::string_view target, long hops, long max_redirects);

}  // namespace lcc::plugins::curl
