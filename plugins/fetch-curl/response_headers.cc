// response_headers.cc — what fetch-curl reads from a response's status and header
// values (curl_fetcher.h): the error code of a status, the MIME type, Retry-After, ETag.
#include <curl/curl.h>

#include <cctype>

#include "curl_fetcher.h"

namespace lcc::plugins::curl {

namespace {

std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r' || v.back() == '\n')) {
    v.remove_suffix(1);
  }
  return v;
}

}  // namespace

ErrorCode classifyHttpStatus(long s, bool conditional) {
  if (s == 404 || s == 410) return ErrorCode::kNotFound;
  if (s == 401 || s == 403) return ErrorCode::kAccessDenied;
  if (s >= 500 && s <= 599) return ErrorCode::kServerError;
  if (s == 429) return ErrorCode::kServerError;
  if (s == 304 && conditional) return ErrorCode::kNone;
  return ErrorCode::kHttpOther;
}

std::string baseMime(std::string_view ct) {
  auto semi = ct.find(';');
  if (semi != std::string_view::npos) ct = ct.substr(0, semi);
  while (!ct.empty() && std::isspace(static_cast<unsigned char>(ct.front()))) ct.remove_prefix(1);
  while (!ct.empty() && std::isspace(static_cast<unsigned char>(ct.back()))) ct.remove_suffix(1);
  std::string out(ct);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::int64_t> parseRetryAfter(std::string_view v, std::int64_t now_unix) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  if (v.empty()) return std::nullopt;
  bool digits = v.size() <= 12;
  for (char c : v) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (digits) return std::stoll(std::string(v));
  time_t t = curl_getdate(std::string(v).c_str(), nullptr);
  if (t < 0) return std::nullopt;
  return t > now_unix ? static_cast<std::int64_t>(t) - now_unix : 0;
}

std::optional<std::string> parseEtag(std::string_view value) {
  value = trimmed(value);
  if (!isValidEtag(value)) return std::nullopt;
  return std::string(value);
}

}  // namespace lcc::plugins::curl
