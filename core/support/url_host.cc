// The host part of the URL normal form: IPv6 literals, WHATWG IPv4 number forms,
// IDNs (libidn2, UTS #46 non-transitional) and plain DNS names.
#include <arpa/inet.h>
#include <idn2.h>

#include <cstdlib>
#include <vector>

#include "lcc/support/url_norm.h"

namespace lcc::url::detail {

namespace {

Status bad(std::string why) { return Status::invalidArgument(std::move(why)); }

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> normalizeIpv6(std::string_view inside) {
  if (inside.empty() || inside.size() > 45) return bad("bad IPv6 address");
  for (char c : inside) {
    if (c == '%') return bad("IPv6 zone identifiers are not allowed");
    if (!(hexValue(c) >= 0 || c == ':' || c == '.')) return bad("bad IPv6 address");
  }
  in6_addr a{};
  if (::inet_pton(AF_INET6, std::string(inside).c_str(), &a) != 1) return bad("bad IPv6 address");
  char out[INET6_ADDRSTRLEN];
  if (!::inet_ntop(AF_INET6, &a, out, sizeof out)) return bad("bad IPv6 address");
  std::string bracketed = "[";
  bracketed += out;
  bracketed += ']';
  return bracketed;
}

// One part of a WHATWG IPv4 address: decimal, 0x hex or 0-led octal.
std::optional<std::uint64_t> ipv4Number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
    if (s.empty()) return 0;  // "0x" is zero
  } else if (s.size() >= 2 && s[0] == '0') {
    base = 8;
    s.remove_prefix(1);
  }
  while (s.size() > 1 && s[0] == '0') s.remove_prefix(1);
  if (s.size() > 12) return std::nullopt;  // beyond 2^32 whatever the base
  std::uint64_t v = 0;
  for (char c : s) {
    int d = hexValue(c);
    if (d < 0 || d >= base) return std::nullopt;
    v = v * static_cast<unsigned>(base) + static_cast<unsigned>(d);
  }
  return v;
}

// WHATWG: a host whose last label is a number is an IPv4 address.
bool endsInNumber(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  auto dot = host.rfind('.');
  std::string_view last = dot == std::string_view::npos ? host : host.substr(dot + 1);
  if (last.empty()) return false;
  bool digits = true;
  for (char c : last) digits = digits && c >= '0' && c <= '9';
  if (digits) return true;
  return ipv4Number(last).has_value() && last.size() >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X');
}

Result<std::string> normalizeIpv4(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  std::vector<std::uint64_t> parts;
  std::size_t pos = 0;
  for (;;) {
    auto dot = host.find('.', pos);
    auto n = ipv4Number(host.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos));
    if (!n || parts.size() == 4) return bad("bad IPv4 address");
    parts.push_back(*n);
    if (dot == std::string_view::npos) break;
    pos = dot + 1;
  }
  std::uint64_t v = 0;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] > 255) return bad("bad IPv4 address");
    v = (v << 8) | parts[i];
  }
  const unsigned rest_bits = static_cast<unsigned>(8 * (5 - parts.size()));
  if (parts.back() >= (std::uint64_t{1} << rest_bits)) return bad("bad IPv4 address");
  v = (v << rest_bits) | parts.back();
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." + std::to_string((v >> 8) & 255) +
         "." + std::to_string(v & 255);
}

// Decodes %XX in a host; the decoded host must still be printable.
Result<std::string> percentDecodeHost(std::string_view host) {
  std::string out;
  out.reserve(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (host[i] != '%') {
      out.push_back(host[i]);
      continue;
    }
    if (i + 2 >= host.size()) return bad("bad percent-encoding in host");
    int h = hexValue(host[i + 1]), l = hexValue(host[i + 2]);
    if (h < 0 || l < 0) return bad("bad percent-encoding in host");
    auto b = static_cast<unsigned char>(h * 16 + l);
    if (b <= 0x20 || b == 0x7f) return bad("control character or space in host");
    out.push_back(static_cast<char>(b));
    i += 2;
  }
  return out;
}

Result<std::string> idnToAscii(const std::string& host) {
  char* out = nullptr;
  int rc = idn2_lookup_u8(reinterpret_cast<const uint8_t*>(host.c_str()), reinterpret_cast<uint8_t**>(&out),
                          IDN2_NFC_INPUT | IDN2_NONTRANSITIONAL);
  if (rc != IDN2_OK) return bad(std::string("bad international host name: ") + idn2_strerror(rc));
  std::string s(out);
  idn2_free(out);
  return s;
}

Status checkDnsName(std::string_view host) {
  if (host.empty()) return bad("URL without a host");
  if (host.size() > 254 || (host.size() == 254 && host.back() != '.')) return bad("host name too long");
  std::size_t label = 0;
  for (std::size_t i = 0; i < host.size(); ++i) {
    char c = host[i];
    if (c == '.') {
      if (label == 0) return bad("empty label in host");
      label = 0;
      continue;
    }
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) {
      return bad(std::string("bad character in host: '") + c + "'");
    }
    if (++label > 63) return bad("host label longer than 63 characters");
  }
  return Status::ok();
}

}  // namespace

Result<std::string> normalizeHost(std::string_view raw) {
  if (raw.empty()) return bad("URL without a host");
  if (raw.front() == '[') {
    if (raw.size() < 2 || raw.back() != ']') return bad("bad IPv6 address");
    return normalizeIpv6(raw.substr(1, raw.size() - 2));
  }
  LCC_ASSIGN_OR_RETURN(std::string host, percentDecodeHost(raw));
  bool ascii = true;
  for (char c : host) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  for (auto& c : host) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (!ascii || host.find("xn--") != std::string::npos) {
    LCC_ASSIGN_OR_RETURN(host, idnToAscii(host));
  }
  if (endsInNumber(host)) return normalizeIpv4(host);
  if (Status s = checkDnsName(host); !s.isOk()) return s;
  return host;
}

}  // namespace lcc::url::detail
