// request.h — an IndexNow submission (the protocol of indexnow.org) read from a GET or
// a POST and checked against the protocol's rules, before any key is fetched.
//
//   GET  /indexnow?url=URL&key=KEY[&keyLocation=URL]
//   POST /indexnow  {"host": H, "key": KEY, "keyLocation": URL?, "urlList": [URL, ...]}
// Refusals carry the protocol's status: 400 for a body that is not the JSON object
// above, a missing field, an empty list or more than 10,000 URLs; 422 for a key that
// is not 8-128 of [A-Za-z0-9-], a URL that has no normal form, is not on the host, or
// lies outside the folder of the key file. Every URL comes out in the LCC's normal
// form (lcc/support/url_norm.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "http/http_server.h"

namespace lcc::indexnow {

inline constexpr std::size_t kMaxUrls = 10'000;

struct Submission {
  std::string key;
  std::string key_url;    // where the key file is read: keyLocation, or <origin>/<key>.txt
  std::string key_scope;  // the folder of the key file: URLs must lie under it
  std::vector<std::string> urls;  // normal form, each under key_scope
};

struct Refusal {
  int status = 400;
  std::string message;
};

using Parsed = std::variant<Submission, Refusal>;

// A key as the protocol allows it: 8 to 128 characters of a-z, A-Z, 0-9 and '-'.
bool validKey(std::string_view key);

Parsed parseGet(const http::Request& req);
Parsed parsePost(std::string_view json_body);

}  // namespace lcc::indexnow
