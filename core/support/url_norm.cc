// The URL normal form (url_norm.h): scheme, authority, path, query and fragment.
#include "lcc/support/url_norm.h"

#include <charconv>
#include <cstring>
#include <vector>

namespace lcc::url {

namespace {

Status bad(std::string why) { return Status::invalidArgument(std::move(why)); }

constexpr char kHex[] = "0123456789ABCDEF";

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool isUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

// Printable ASCII that RFC 3986 does not allow raw in a path, query or fragment.
bool mustEncode(unsigned char c) {
  return c >= 0x80 || c == '"' || c == '<' || c == '>' || c == '^' || c == '`' || c == '{' || c == '|' ||
         c == '}' || c == '[' || c == ']';
}

// Length of the UTF-8 sequence starting at s[i], 0 if it is bad (overlong, surrogate,
// beyond U+10FFFF, truncated).
std::size_t utf8Length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  std::size_t n;
  unsigned min_second = 0x80, max_second = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) min_second = 0xA0;
    if (c == 0xED) max_second = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) min_second = 0x90;
    if (c == 0xF4) max_second = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < min_second || b(i + 1) > max_second) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

// Refuses white space, controls, DEL, '\' and bad UTF-8 anywhere in the URL.
Status checkBytes(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return bad("URL contains NUL");
    if (c <= 0x20 || c == 0x7f) return bad("URL contains white space or control characters");
    if (c == '\\') return bad("URL contains '\\' (write %5C)");
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = utf8Length(s, i);
    if (n == 0) return bad("URL contains bad or overlong UTF-8");
    if (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      return bad("URL contains control characters");  // U+0080..U+009F
    }
    i += n;
  }
  return Status::ok();
}

// A percent-encoded byte that continues an overlong UTF-8 sequence begun by `lead`.
bool overlongPair(int lead, unsigned char b) {
  if (lead < 0 || b < 0x80 || b > 0xBF) return false;
  return lead == 0xC0 || lead == 0xC1 || (lead == 0xE0 && b < 0xA0) || (lead == 0xF0 && b < 0x90);
}

// Normalises the percent-encoding of a path, query or fragment: unreserved decoded,
// hex upper case, characters not allowed raw encoded. `extra` is also encoded.
Status normalizeEncoding(std::string_view in, char extra, std::string& out) {
  int last_escape = -1;  // the byte of the escape just before, for overlong sequences
  for (std::size_t i = 0; i < in.size(); ++i) {
    auto c = static_cast<unsigned char>(in[i]);
    if (c != '%') {
      last_escape = -1;
      if (mustEncode(c) || c == static_cast<unsigned char>(extra)) {
        out.push_back('%');
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
      } else {
        out.push_back(static_cast<char>(c));
      }
      continue;
    }
    if (i + 2 >= in.size() || hexValue(in[i + 1]) < 0 || hexValue(in[i + 2]) < 0) {
      return bad("'%' not followed by two hex digits (write %25)");
    }
    auto b = static_cast<unsigned char>(hexValue(in[i + 1]) * 16 + hexValue(in[i + 2]));
    i += 2;
    if (b == 0) return bad("URL contains %00");
    if (overlongPair(last_escape, b)) return bad("URL contains percent-encoded overlong UTF-8");
    last_escape = b;
    if (isUnreserved(b)) {
      out.push_back(static_cast<char>(b));
    } else {
      out.push_back('%');
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return Status::ok();
}

bool isDot(std::string_view s) { return s == "." || s == ".."; }

// A segment that some server would take as "." or ".." once it cuts at ';' (path
// parameters), or decodes %2F or %5C into a separator.
bool hidesDotSegment(std::string_view seg) {
  std::size_t start = 0;
  for (std::size_t i = 0; i <= seg.size(); ++i) {
    std::size_t cut = 0;
    if (i == seg.size() || seg[i] == ';') {
      cut = 1;
    } else if (seg.substr(i, 3) == "%2F" || seg.substr(i, 3) == "%5C") {
      cut = 3;
    } else {
      continue;
    }
    if (isDot(seg.substr(start, i - start))) return true;
    start = i + cut;
    i += cut - 1;
  }
  return false;
}

bool doubleEncodedSeparator(std::string_view seg) {
  for (std::size_t i = 0; i + 4 < seg.size(); ++i) {
    if (seg.compare(i, 3, "%25") != 0) continue;
    char a = seg[i + 3], b = static_cast<char>(seg[i + 4] & ~0x20);
    if ((a == '2' && (b == 'E' || b == 'F')) || (a == '5' && b == 'C')) return true;
  }
  return false;
}

// RFC 3986 §5.2.4 on out[start..], a path whose encoding is normalised, after the
// checks above; in place: a kept segment only ever moves towards the front.
Status removeDotSegments(std::string& out, std::size_t start) {
  const std::size_t end = out.size();
  std::size_t kept_end = start;  // out[start, kept_end) is the path kept so far, "/seg" each
  bool trailing_slash = false;
  std::size_t pos = start + 1;  // out[start] == '/'
  for (;;) {
    std::size_t slash = out.find('/', pos);
    const bool last = slash == std::string::npos;
    if (last) slash = end;
    const std::string_view seg(out.data() + pos, slash - pos);
    if (isDot(seg)) {
      if (seg == ".." && kept_end > start) kept_end = out.rfind('/', kept_end - 1);
      trailing_slash = last;
    } else {
      if (hidesDotSegment(seg)) return bad("dot segment hidden behind ';', %2F or %5C");
      if (doubleEncodedSeparator(seg)) return bad("double-encoded dot, slash or backslash");
      out[kept_end] = '/';
      std::memmove(out.data() + kept_end + 1, seg.data(), seg.size());
      kept_end += 1 + seg.size();
      trailing_slash = false;
    }
    if (last) break;
    pos = slash + 1;
  }
  out.resize(kept_end);
  if (trailing_slash || kept_end == start) out.push_back('/');
  return Status::ok();
}

Result<std::uint16_t> parsePort(std::string_view p, std::string_view scheme) {
  if (p.empty()) return std::uint16_t{0};
  unsigned long v = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return bad("bad port");
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > 65535) return bad("port beyond 65535");
  }
  if (v == 0) return bad("port 0");
  if ((scheme == "http" && v == 80) || (scheme == "https" && v == 443)) return std::uint16_t{0};
  return static_cast<std::uint16_t>(v);
}

Status parseAuthority(std::string_view auth, std::string_view scheme, std::string& host_out, std::uint16_t& port_out) {
  if (auth.find('@') != std::string_view::npos) return bad("userinfo (user@ or user:password@) is not allowed");
  std::string_view host = auth, port;
  if (!auth.empty() && auth.front() == '[') {
    auto close = auth.find(']');
    if (close == std::string_view::npos) return bad("bad IPv6 address");
    host = auth.substr(0, close + 1);
    std::string_view after = auth.substr(close + 1);
    if (!after.empty() && after.front() != ':') return bad("bad characters after an IPv6 address");
    if (!after.empty()) port = after.substr(1);
  } else if (auto colon = auth.find(':'); colon != std::string_view::npos) {
    host = auth.substr(0, colon);
    port = auth.substr(colon + 1);
  }
  LCC_ASSIGN_OR_RETURN(host_out, detail::normalizeHost(host));
  LCC_ASSIGN_OR_RETURN(port_out, parsePort(port, scheme));
  return Status::ok();
}

// Where the parts lie in a normal form that normalizeInto() wrote.
struct PartOffsets {
  std::size_t scheme_end = 0, host = 0, host_end = 0;
  std::uint16_t port = 0;
  std::size_t path = 0, path_end = 0;
  std::size_t query = 0, fragment = 0;  // just after the '?' and the '#'; 0: none
};

// Writes the normal form of `in` to `out` (replacing what it held) in one pass: the
// parts are appended as they are read, never held apart and joined, so a URL costs one
// string (docs/design-decisions.md, "CPU per URL"). joinUrl() of the parts it marks is
// `out`, byte for byte.
Status normalizeInto(std::string_view in, std::size_t max_length, std::string& out, PartOffsets& at) {
  if (in.size() > max_length) return bad("URL longer than " + std::to_string(max_length) + " bytes");
  LCC_RETURN_IF_ERROR(checkBytes(in));
  auto colon = in.find(':');
  if (colon == std::string_view::npos || colon > 5) return bad("scheme is not http or https");
  out.clear();
  out.reserve(in.size() + 16);
  for (char c : in.substr(0, colon)) out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
  if (out != "http" && out != "https") return bad("scheme is not http or https");
  at.scheme_end = out.size();
  std::string_view rest = in.substr(colon + 1);
  if (rest.substr(0, 2) != "//") return bad("scheme not followed by //");
  rest.remove_prefix(2);
  auto auth_end = rest.find_first_of("/?#");
  std::string host;
  LCC_RETURN_IF_ERROR(parseAuthority(rest.substr(0, auth_end), out, host, at.port));
  out += "://";
  at.host = out.size();
  out += host;
  at.host_end = out.size();
  if (at.port != 0) {
    char digits[8];
    out.push_back(':');
    out.append(digits, std::to_chars(digits, digits + sizeof digits, at.port).ptr);
  }
  rest = auth_end == std::string_view::npos ? std::string_view() : rest.substr(auth_end);
  std::string_view fragment, query;
  bool has_fragment = false, has_query = false;
  if (auto hash = rest.find('#'); hash != std::string_view::npos) {
    fragment = rest.substr(hash + 1);
    rest = rest.substr(0, hash);
    has_fragment = true;
  }
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    has_query = true;
  }
  if (rest.empty()) rest = "/";
  at.path = out.size();
  LCC_RETURN_IF_ERROR(normalizeEncoding(rest, 0, out));
  LCC_RETURN_IF_ERROR(removeDotSegments(out, at.path));
  at.path_end = out.size();
  if (has_query) {
    out.push_back('?');
    at.query = out.size();
    LCC_RETURN_IF_ERROR(normalizeEncoding(query, 0, out));
  }
  if (has_fragment) {
    out.push_back('#');
    at.fragment = out.size();
    LCC_RETURN_IF_ERROR(normalizeEncoding(fragment, '#', out));
  }
  return Status::ok();
}

Result<UrlParts> parse(std::string_view in, std::size_t max_length) {
  std::string normal;
  PartOffsets at;
  LCC_RETURN_IF_ERROR(normalizeInto(in, max_length, normal, at));
  std::string_view n = normal;
  UrlParts parts;
  parts.scheme = n.substr(0, at.scheme_end);
  parts.host = n.substr(at.host, at.host_end - at.host);
  parts.port = at.port;
  parts.path = n.substr(at.path, at.path_end - at.path);
  if (at.query != 0) parts.query = std::string(n.substr(at.query, (at.fragment != 0 ? at.fragment - 1 : n.size()) - at.query));
  if (at.fragment != 0) parts.fragment = std::string(n.substr(at.fragment));
  return parts;
}

}  // namespace

std::string joinUrl(const UrlParts& p) {
  std::string out;
  out.reserve(p.scheme.size() + p.host.size() + p.path.size() + (p.query ? p.query->size() : 0) +
              (p.fragment ? p.fragment->size() : 0) + 16);
  out += p.scheme;
  out += "://";
  out += p.host;
  if (p.port != 0) {
    char digits[8];
    out.push_back(':');
    out.append(digits, std::to_chars(digits, digits + sizeof digits, p.port).ptr);
  }
  out += p.path;
  if (p.query) {
    out.push_back('?');
    out += *p.query;
  }
  if (p.fragment) {
    out.push_back('#');
    out += *p.fragment;
  }
  return out;
}

Result<std::string> normalizeUrl(std::string_view input, std::size_t max_length) {
  std::string out;
  PartOffsets at;
  LCC_RETURN_IF_ERROR(normalizeInto(input, max_length, out, at));
  if (out.size() > max_length) return bad("normalised URL longer than " + std::to_string(max_length) + " bytes");
  return out;
}

Result<std::string> normalizePrefix(std::string_view input, std::size_t max_length) {
  LCC_ASSIGN_OR_RETURN(UrlParts parts, parse(input, max_length));
  if (parts.query || parts.fragment) return bad("a prefix has no query or fragment");
  if (parts.path.back() != '/') parts.path.push_back('/');
  std::string out = joinUrl(parts);
  if (out.size() > max_length) return bad("normalised prefix longer than " + std::to_string(max_length) + " bytes");
  return out;
}

Result<UrlParts> splitNormalUrl(std::string_view normal) {
  LCC_ASSIGN_OR_RETURN(UrlParts parts, parse(normal, kMaxUrlLength));
  if (joinUrl(parts) != normal) return bad("URL is not in normal form");
  return parts;
}

bool underPrefix(std::string_view url, std::string_view prefix) {
  // In normal form the prefix holds "scheme://host[:port]/" whole, so an equal start
  // means an equal origin; its path ends with '/', so the match ends at a segment.
  if (prefix.empty() || prefix.back() != '/' || prefix.find_first_of("?#") != std::string_view::npos) return false;
  return url.size() >= prefix.size() && url.compare(0, prefix.size(), prefix) == 0;
}

std::vector<std::string> normalPrefixes(const std::vector<std::string>& prefixes, std::size_t max_length) {
  std::vector<std::string> out;
  for (const auto& p : prefixes) {
    if (auto n = normalizePrefix(p, max_length); n.isOk()) out.push_back(std::move(n).value());
  }
  return out;
}

bool underAnyPrefix(std::string_view normal_url, const std::vector<std::string>& normal_prefixes) {
  for (const auto& prefix : normal_prefixes) {
    if (underPrefix(normal_url, prefix)) return true;
  }
  return false;
}

std::string originOf(std::string_view url) {
  auto sep = url.find("://");
  if (sep == std::string_view::npos) return {};
  auto slash = url.find('/', sep + 3);
  if (slash == std::string_view::npos) return {};
  return std::string(url.substr(0, slash + 1));
}

}  // namespace lcc::url
