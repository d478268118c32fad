#include "net/host_port.h"

#include <charconv>

namespace lcc::net {
namespace {

bool isHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// An IPv6 literal as it may stand between brackets: hex groups, colons, at most one
// "::", and an optional dotted IPv4 tail. (The resolver checks the rest.)
bool looksLikeIpv6(std::string_view s) {
  if (s.size() < 2 || s.size() > 45 || s.find(':') == std::string_view::npos) return false;
  if (auto dc = s.find("::"); dc != std::string_view::npos && s.find("::", dc + 1) != std::string_view::npos) {
    return false;
  }
  for (char c : s) {
    if (!isHex(c) && c != ':' && c != '.') return false;
  }
  return true;
}

bool hostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_';
}

Status bad(std::string_view text, const std::string& why) {
  std::string m = "'";
  m.append(text.substr(0, 200)).append("' is not host:port: ").append(why);
  return Status::invalidArgument(std::move(m));
}

Result<std::uint16_t> parsePort(std::string_view text, std::string_view port) {
  if (port.empty()) return bad(text, "the port is missing");
  if (port.size() > 5) return bad(text, "the port must be 0..65535");
  unsigned value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad(text, "the port must be a decimal number");
  }
  std::from_chars(port.data(), port.data() + port.size(), value);
  if (value > 65535) return bad(text, "the port must be 0..65535");
  return static_cast<std::uint16_t>(value);
}

}  // namespace

Result<HostPort> HostPort::parse(std::string_view text) { return parseImpl(text, std::nullopt); }

Result<HostPort> HostPort::parseAuthority(std::string_view authority, std::uint16_t default_port) {
  return parseImpl(authority, default_port);
}

Result<HostPort> HostPort::parseImpl(std::string_view text, std::optional<std::uint16_t> default_port) {
  HostPort out;
  std::string_view host, port;
  bool has_port = true;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "'[' without ']'");
    host = text.substr(1, close - 1);
    if (close + 1 == text.size() && default_port) {
      has_port = false;
    } else if (close + 1 >= text.size() || text[close + 1] != ':') {
      return bad(text, "']' must be followed by :port");
    }
    if (has_port) port = text.substr(close + 2);
    if (!looksLikeIpv6(host)) return bad(text, "only an IPv6 address goes between brackets");
    out.bracketed = true;
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos && !default_port) return bad(text, "no ':' before the port");
    has_port = colon != std::string_view::npos;
    host = has_port ? text.substr(0, colon) : text;
    if (has_port) port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad(text, "an IPv6 address needs brackets, as in [::1]:7700");
    }
    if (host.find(']') != std::string_view::npos) return bad(text, "']' without '['");
    if (host.empty()) return bad(text, "the host is missing (use * for every address)");
    if (host.size() > 253) return bad(text, "the host name is longer than 253 characters");
    if (host != "*") {
      for (char c : host) {
        if (!hostChar(c)) return bad(text, "the host has a character no host name has");
      }
      if (host.front() == '.' || host.front() == '-' || host.find("..") != std::string_view::npos) {
        return bad(text, "the host name has an empty or misplaced label");
      }
    }
  }
  if (has_port) {
    LCC_ASSIGN_OR_RETURN(out.port, parsePort(text, port));
  } else {
    out.port = *default_port;
  }
  out.host = std::string(host);
  return out;
}

Result<HostPort> HostPort::parseTarget(std::string_view text) {
  LCC_ASSIGN_OR_RETURN(HostPort hp, parse(text));
  if (hp.port == 0) return bad(text, "port 0 is no place to connect to");
  return hp;
}

bool HostPort::isWildcard() const { return host == "*" || host == "0.0.0.0" || host == "::"; }

HostPort HostPort::reachable() const {
  HostPort r = *this;
  if (host == "::") {
    r.host = "::1";
  } else if (isWildcard()) {
    r.host = "127.0.0.1";
    r.bracketed = false;
  }
  return r;
}

std::string HostPort::resolverHost() const { return host == "*" ? std::string("0.0.0.0") : host; }

std::string HostPort::toString() const {
  const bool v6 = bracketed || host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + portString();
}

LinkAddress splitLinkAddress(std::string_view text) {
  constexpr std::string_view kTls = "tls://";
  if (text.substr(0, kTls.size()) == kTls) return {true, std::string(text.substr(kTls.size()))};
  return {false, std::string(text)};
}

}  // namespace lcc::net
