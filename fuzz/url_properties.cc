#include "url_properties.h"

#include "lcc/support/url_norm.h"

namespace lcc::url {

namespace {

std::string checkNormalForm(const std::string& n) {
  auto again = normalizeUrl(n);
  if (!again.isOk()) return "normal form refused on the second pass: " + n + ": " + again.status().message();
  if (again.value() != n) return "not idempotent: " + n + " -> " + again.value();
  auto parts = splitNormalUrl(n);
  if (!parts.isOk()) return "normal form does not parse: " + n;
  if (joinUrl(parts.value()) != n) return "parts do not join back: " + n;
  const std::string& path = parts->path;
  if (path.empty() || path[0] != '/') return "path without a leading '/': " + n;
  std::size_t pos = 1;
  for (;;) {
    auto slash = path.find('/', pos);
    std::string_view seg = std::string_view(path).substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
    if (seg == "." || seg == "..") return "dot segment left in the path: " + n;
    if (slash == std::string::npos) break;
    pos = slash + 1;
  }
  for (char c : n) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '\\') return "raw byte in a normal form: " + n;
  }
  return {};
}

// Whether url lies under prefix, judged on their parts (not on the strings).
bool reallyUnder(const UrlParts& u, const UrlParts& p) {
  return u.scheme == p.scheme && u.host == p.host && u.port == p.port && !p.path.empty() && p.path.back() == '/' &&
         u.path.compare(0, p.path.size(), p.path) == 0;
}

std::string checkPrefix(std::string_view prefix, const std::string& n) {
  auto pn = normalizePrefix(prefix);
  if (!pn.isOk()) return {};
  auto again = normalizePrefix(pn.value());
  if (!again.isOk() || again.value() != pn.value()) return "prefix not idempotent: " + pn.value();
  if (pn.value().back() != '/') return "prefix not at a segment boundary: " + pn.value();
  auto pp = splitNormalUrl(pn.value());
  auto up = splitNormalUrl(n);
  if (!pp.isOk() || !up.isOk()) return "prefix or URL does not parse";
  const bool under = underPrefix(n, pn.value());
  const bool really = reallyUnder(up.value(), pp.value());
  if (under && !really) return "matched but not under: " + n + " / " + pn.value();
  if (!under && really) return "under but not matched: " + n + " / " + pn.value();
  return {};
}

}  // namespace

std::string checkUrlProperties(std::string_view data) {
  std::string_view prefix, url = data;
  if (auto nl = data.find('\n'); nl != std::string_view::npos) {
    prefix = data.substr(0, nl);
    url = data.substr(nl + 1);
  }
  auto n = normalizeUrl(url);
  if (!n.isOk()) {
    if (n.status().message().empty()) return "refused without a reason";
    return {};
  }
  if (std::string why = checkNormalForm(n.value()); !why.empty()) return why;
  if (!prefix.empty()) return checkPrefix(prefix, n.value());
  return {};
}

}  // namespace lcc::url
