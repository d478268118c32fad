#include "http/url_codec.h"

namespace lcc::http {
namespace {
int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<std::string> percentDecode(std::string_view in, bool plus_is_space) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%') {
      if (i + 2 >= in.size()) return std::nullopt;
      int hi = hexValue(in[i + 1]);
      int lo = hexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool parseQuery(std::string_view in, std::multimap<std::string, std::string>* out) {
  while (!in.empty()) {
    auto amp = in.find('&');
    std::string_view pair = in.substr(0, amp);
    in = amp == std::string_view::npos ? std::string_view() : in.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    auto name = percentDecode(pair.substr(0, eq), true);
    auto value = eq == std::string_view::npos ? std::optional<std::string>(std::string())
                                              : percentDecode(pair.substr(eq + 1), true);
    if (!name || !value) return false;
    out->emplace(std::move(*name), std::move(*value));
  }
  return true;
}

std::string percentEncode(std::string_view in, std::string_view also_keep) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : in) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~' || also_keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

bool isHttpUrl(std::string_view url, std::string* why, std::size_t max_length) {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  if (url.empty()) return fail("empty URL");
  if (url.size() > max_length) return fail("URL longer than " + std::to_string(max_length) + " characters");
  for (unsigned char c : url) {
    if (c <= 0x20 || c == 0x7f) return fail("URL contains a space or control character");
  }
  std::string lower;
  for (char c : url.substr(0, 8)) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  std::size_t rest;
  if (lower.rfind("http://", 0) == 0) {
    rest = 7;
  } else if (lower.rfind("https://", 0) == 0) {
    rest = 8;
  } else {
    return fail("not an http:// or https:// URL");
  }
  std::string_view authority = url.substr(rest);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (auto at = authority.rfind('@'); at != std::string_view::npos) return fail("URL must not carry user information");
  std::string_view host = authority;
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    if (close == std::string_view::npos) return fail("URL has a bad IPv6 host");
    std::string_view after = host.substr(close + 1);
    if (!after.empty() && after.front() != ':') return fail("URL has a bad host");
    host = host.substr(0, close + 1);
    authority = after;
  } else {
    auto colon = host.find(':');
    authority = colon == std::string_view::npos ? std::string_view() : host.substr(colon);
    host = host.substr(0, colon);
  }
  if (host.empty() || host == "[]") return fail("URL has no host");
  if (!authority.empty()) {  // ":port"
    std::string_view port = authority.substr(1);
    if (port.empty() || port.size() > 5) return fail("URL has a bad port");
    for (char c : port) {
      if (c < '0' || c > '9') return fail("URL has a bad port");
    }
    if (std::stoi(std::string(port)) > 65535) return fail("URL has a bad port");
  }
  if (url.find('#') != std::string_view::npos) return fail("URL must not have a fragment");
  return true;
}

std::string trimSpace(std::string_view s) {
  auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && ws(s.back())) s.remove_suffix(1);
  return std::string(s);
}

std::optional<std::uint64_t> parseUnsigned(std::string_view s, std::uint64_t max) {
  if (s.empty() || s.size() > 20) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (max - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::string htmlEscape(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace lcc::http
