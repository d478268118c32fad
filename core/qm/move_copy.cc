#include "qm/move_copy.h"

#include <charconv>

#include "http/url_codec.h"

namespace lcc::qm {
namespace {

constexpr std::string_view kCopy = "?lcc_copy=";
constexpr std::string_view kOf = "&lcc_of=";
constexpr std::string_view kRoute = "/cu/content/";

bool isMd5(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string makeCopyFetch(const CopyFetch& c) {
  return c.content_url + std::string(kCopy) + c.md5 + "-" + std::to_string(c.size) + std::string(kOf) +
         http::percentEncode(c.original);
}

std::optional<CopyFetch> parseCopyFetch(const std::string& fetch) {
  const std::size_t q = fetch.find(kCopy);
  if (q == std::string::npos || fetch.find('?') != q || fetch.find(kRoute) == std::string::npos) return std::nullopt;
  const std::size_t of = fetch.find(kOf, q);
  if (of == std::string::npos) return std::nullopt;
  const std::string_view what = std::string_view(fetch).substr(q + kCopy.size(), of - q - kCopy.size());
  const std::size_t dash = what.find('-');
  if (dash == std::string_view::npos || !isMd5(what.substr(0, dash))) return std::nullopt;
  CopyFetch c;
  c.content_url = fetch.substr(0, q);
  c.md5 = std::string(what.substr(0, dash));
  const std::string_view sz = what.substr(dash + 1);
  auto [end, ec] = std::from_chars(sz.data(), sz.data() + sz.size(), c.size);
  if (sz.empty() || ec != std::errc() || end != sz.data() + sz.size()) return std::nullopt;
  auto original = http::percentDecode(std::string_view(fetch).substr(of + kOf.size()), false);
  if (!original) return std::nullopt;
  c.original = std::move(*original);
  return c;
}

std::string storedFetch(const std::string& fetch) {
  auto c = parseCopyFetch(fetch);
  return c ? c->original : fetch;
}

}  // namespace lcc::qm
