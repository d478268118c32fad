// types.cc — the UrlKey byte encoding and value names (lcc/types.h).
#include "lcc/types.h"

namespace lcc {

std::string encodeUrlKey(const UrlKey& k) {
  std::string out;
  out.reserve(5 + k.url.size() + k.mime.size());
  out.push_back(static_cast<char>((k.pid >> 24) & 0xff));
  out.push_back(static_cast<char>((k.pid >> 16) & 0xff));
  out.push_back(static_cast<char>((k.pid >> 8) & 0xff));
  out.push_back(static_cast<char>(k.pid & 0xff));
  out += k.url;
  out.push_back('\0');
  out += k.mime;
  return out;
}

std::optional<UrlKey> decodeUrlKey(std::string_view bytes) {
  if (bytes.size() < 5) return std::nullopt;
  auto u = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])); };
  UrlKey k;
  k.pid = (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
  std::size_t nul = bytes.find('\0', 4);
  if (nul == std::string_view::npos) return std::nullopt;
  k.url.assign(bytes.substr(4, nul - 4));
  k.mime.assign(bytes.substr(nul + 1));
  return k;
}

std::string encodeProviderPrefix(ProviderId pid) {
  return encodeUrlKey(UrlKey{pid, {}, {}}).substr(0, 4);
}

std::string_view fullSetReasonName(FullSetReason r) {
  switch (r) {
    case FullSetReason::kNone: return "";
    case FullSetReason::kCacheCrash: return "cache-crash";
    case FullSetReason::kOldFiles: return "old-files";
    case FullSetReason::kExpiredFiles: return "expired-files";
    case FullSetReason::kFirstConnect: return "first-connect";
    case FullSetReason::kAdmin: return "admin";
  }
  return "";
}

std::string_view redirectPolicyName(RedirectPolicy p) {
  switch (p) {
    case RedirectPolicy::kPrefix: return "prefix";
    case RedirectPolicy::kHost: return "host";
    case RedirectPolicy::kNone: return "none";
  }
  return "none";
}

std::optional<RedirectPolicy> parseRedirectPolicy(std::string_view s) {
  if (s == "prefix") return RedirectPolicy::kPrefix;
  if (s == "host") return RedirectPolicy::kHost;
  if (s == "none") return RedirectPolicy::kNone;
  return std::nullopt;
}

}  // namespace lcc
