#include "indexnow/request.h"

#include <nlohmann/json.hpp>

#include "lcc/support/url_norm.h"

namespace lcc::indexnow {
namespace {

Refusal refuse(int status, std::string message) { return Refusal{status, std::move(message)}; }

// "host" as the submitter wrote it, compared with a URL's: the host alone, or
// host:port when the URL has a port.
bool onHost(const url::UrlParts& u, std::string_view host) {
  if (host == u.host) return true;
  return u.port != 0 && host == u.host + ":" + std::to_string(u.port);
}

// Everything after the key's rules and the URL list's shape: normal forms, the host,
// the key file and its folder.
Parsed build(std::string key, std::string_view host, std::string_view key_location,
             const std::vector<std::string>& raw_urls) {
  if (!validKey(key)) return refuse(422, "the key must be 8 to 128 characters of a-z, A-Z, 0-9 and '-'");
  if (raw_urls.empty()) return refuse(400, "no URL to submit");
  if (raw_urls.size() > kMaxUrls) return refuse(400, "more than 10,000 URLs in one submission");
  Submission s;
  s.key = std::move(key);
  s.urls.reserve(raw_urls.size());
  for (const auto& raw : raw_urls) {
    auto normal = url::normalizeUrl(raw);
    if (!normal.isOk()) return refuse(422, "URL \"" + raw.substr(0, 200) + "\": " + normal.status().message());
    auto parts = url::splitNormalUrl(normal.value());
    if (!parts.isOk() || !onHost(parts.value(), host)) {
      return refuse(422, "URL \"" + raw.substr(0, 200) + "\" is not on host \"" + std::string(host) + "\"");
    }
    s.urls.push_back(std::move(normal).value());
  }
  if (key_location.empty()) {
    s.key_url = url::originOf(s.urls.front()) + s.key + ".txt";
  } else {
    auto normal = url::normalizeUrl(key_location);
    auto parts = normal.isOk() ? url::splitNormalUrl(normal.value()) : Result<url::UrlParts>(normal.status());
    if (!parts.isOk() || !onHost(parts.value(), host) || parts.value().query || parts.value().fragment) {
      return refuse(422, "keyLocation must be a URL on host \"" + std::string(host) + "\" without query");
    }
    s.key_url = std::move(normal).value();
  }
  s.key_scope = s.key_url.substr(0, s.key_url.rfind('/') + 1);
  for (const auto& u : s.urls) {
    if (!url::underPrefix(u, s.key_scope)) {
      return refuse(422, "URL \"" + u.substr(0, 200) + "\" is outside the folder of the key file (" + s.key_scope + ")");
    }
  }
  return s;
}

}  // namespace

bool validKey(std::string_view key) {
  if (key.size() < 8 || key.size() > 128) return false;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok) return false;
  }
  return true;
}

Parsed parseGet(const http::Request& req) {
  const auto urls = req.params("url");
  const auto keys = req.params("key");
  if (urls.size() != 1 || keys.size() != 1) return refuse(400, "expected one url and one key parameter");
  auto parts = url::normalizeUrl(urls.front());
  if (!parts.isOk()) return refuse(422, "URL \"" + urls.front().substr(0, 200) + "\": " + parts.status().message());
  auto split = url::splitNormalUrl(parts.value());
  if (!split.isOk()) return refuse(422, "URL \"" + urls.front().substr(0, 200) + "\" has no host");
  const std::string host = split.value().host;
  return build(keys.front(), host, req.param("keyLocation"), urls);
}

Parsed parsePost(std::string_view body) {
  const auto doc = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return refuse(400, "the body is not a JSON object");
  auto text = [&](const char* name) -> const std::string* {
    auto it = doc.find(name);
    return it != doc.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  const std::string* host = text("host");
  const std::string* key = text("key");
  if (host == nullptr || key == nullptr) return refuse(400, "\"host\" and \"key\" must be strings");
  if (doc.contains("keyLocation") && text("keyLocation") == nullptr) return refuse(400, "\"keyLocation\" must be a string");
  auto list = doc.find("urlList");
  if (list == doc.end() || !list->is_array()) return refuse(400, "\"urlList\" must be an array of URLs");
  if (list->size() > kMaxUrls) return refuse(400, "more than 10,000 URLs in one submission");
  std::vector<std::string> urls;
  urls.reserve(list->size());
  for (const auto& u : *list) {
    if (!u.is_string()) return refuse(400, "\"urlList\" must hold strings only");
    urls.push_back(u.get<std::string>());
  }
  const std::string* location = text("keyLocation");
  return build(*key, *host, location == nullptr ? std::string_view() : std::string_view(*location), urls);
}

}  // namespace lcc::indexnow
