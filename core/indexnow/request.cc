#include "indexnow/request.h"

#include <nlohmann/json.hpp>

#include <optional>

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

// The POST body read as SAX events (no DOM): a flat object whose "host", "key" and
// "keyLocation" are strings and whose "urlList" is an array of at most kMaxUrls
// strings. Other members are skipped when they are scalars or arrays/objects of
// scalars; anything nested deeper than that (depth > 2) is refused at once, as is the
// 10,001st URL, so a request costs at most its body and the URLs it holds.
class PostReader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<Refusal> refusal;
  std::optional<std::string> host_text, key_text, location_text;
  bool list_seen = false;
  std::vector<std::string> urls;

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }

  bool string(string_t& value) override {
    if (depth_ == 0) return notAnObject();
    if (depth_ == 2) {
      if (member_ != Member::kUrlList) return true;  // inside a member the LCC does not read
      if (urls.size() == kMaxUrls) return fail("more than 10,000 URLs in one submission");
      urls.push_back(std::move(value));
      return true;
    }
    switch (member_) {
      case Member::kHost: host_text = std::move(value); return true;
      case Member::kKey: key_text = std::move(value); return true;
      case Member::kLocation: location_text = std::move(value); return true;
      case Member::kUrlList: return fail("\"urlList\" must be an array of URLs");
      case Member::kOther: return true;
    }
    return true;
  }

  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& name) override {
    if (depth_ != 1) return true;  // a member of a skipped object
    member_ = name == "host" ? Member::kHost
              : name == "key" ? Member::kKey
              : name == "keyLocation" ? Member::kLocation
              : name == "urlList" ? Member::kUrlList
                                  : Member::kOther;
    if (member_ == Member::kOther) return true;
    const auto bit = static_cast<unsigned>(1u << static_cast<unsigned>(member_));
    if ((seen_ & bit) != 0) return fail("\"" + name + "\" is given twice");
    seen_ |= bit;
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return fail("the body is not a JSON object");
  }

 private:
  enum class Member : unsigned { kOther, kHost, kKey, kLocation, kUrlList };

  bool fail(std::string why) {
    if (!refusal) refusal = Refusal{400, std::move(why)};
    return false;
  }
  bool notAnObject() { return fail("the body is not a JSON object"); }
  bool wrongType() {
    switch (member_) {
      case Member::kHost:
      case Member::kKey: return fail("\"host\" and \"key\" must be strings");
      case Member::kLocation: return fail("\"keyLocation\" must be a string");
      case Member::kUrlList: return fail(depth_ == 1 ? "\"urlList\" must be an array of URLs"
                                                     : "\"urlList\" must hold strings only");
      case Member::kOther: return true;
    }
    return true;
  }
  bool scalar() { return depth_ == 0 ? notAnObject() : wrongType(); }
  bool open(bool array) {
    if (depth_ == 0 && array) return notAnObject();
    if (depth_ >= 2) {
      if (member_ == Member::kUrlList) return fail("\"urlList\" must hold strings only");
      return fail("the body nests deeper than a flat IndexNow object");
    }
    if (depth_ == 1 && member_ != Member::kOther) {
      if (!array || member_ != Member::kUrlList) return wrongType();
      list_seen = true;
    }
    ++depth_;
    return true;
  }
  bool close() {
    if (--depth_ == 1 && member_ == Member::kUrlList) member_ = Member::kOther;
    return true;
  }

  int depth_ = 0;
  Member member_ = Member::kOther;
  unsigned seen_ = 0;
};

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
  // JSON never holds a raw NUL, and nlohmann's lexer takes one for the end of the input:
  // "{...}\0[[[" would be read as "{...}" with the rest never looked at.
  if (body.find('\0') != std::string_view::npos) return refuse(400, "the body is not JSON: it holds a NUL byte");
  PostReader reader;
  const bool read = nlohmann::json::sax_parse(body.begin(), body.end(), &reader);
  if (reader.refusal) return *reader.refusal;
  if (!read) return refuse(400, "the body is not a JSON object");
  if (!reader.host_text || !reader.key_text) return refuse(400, "\"host\" and \"key\" must be strings");
  if (!reader.list_seen) return refuse(400, "\"urlList\" must be an array of URLs");
  return build(std::move(*reader.key_text), *reader.host_text,
               reader.location_text ? std::string_view(*reader.location_text) : std::string_view(), reader.urls);
}

}  // namespace lcc::indexnow
