// host_port.h — the one parser of "host:port" spellings (listen addresses, link
// targets, --uns/--http/--cu options, C API endpoints).
//
// Accepted: "name:port", "1.2.3.4:port", "[v6]:port", and "*:port" (any address).
// Refused, each with its own message: no colon, an empty host or port, a port that is
// not 0..65535 in plain decimal, an IPv6 address without brackets ("::1:80" is
// ambiguous), unbalanced brackets, something other than IPv6 inside brackets, and
// characters no host name has (space, '/', '@', '%', control bytes, ...).
// No I/O: resolving is the caller's business (net::resolveListen, net::Connector).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/status.h"

namespace lcc::net {

struct HostPort {
  std::string host;  // without brackets; "*" stays "*"
  std::uint16_t port = 0;
  bool bracketed = false;  // written as "[v6]:port"

  // Parses `text`. The error message names what is wrong and quotes the input.
  static Result<HostPort> parse(std::string_view text);
  // As parse(), but a place to connect to: port 0 is refused.
  static Result<HostPort> parseTarget(std::string_view text);
  // The authority of an http:// URL ("host", "host:port", "[v6]", "[v6]:port"): the
  // port may be left out (then `default_port`). User information is refused.
  static Result<HostPort> parseAuthority(std::string_view authority, std::uint16_t default_port);

  // "*", "0.0.0.0" or "::": every address of the host (only meaningful to listen on).
  bool isWildcard() const;
  // The address to connect to for a listen address: a wildcard becomes the loopback
  // address of its family ("127.0.0.1", or "::1" for "::"); anything else is kept.
  HostPort reachable() const;
  // The host as a resolver takes it ("*" becomes "0.0.0.0").
  std::string resolverHost() const;
  std::string portString() const { return std::to_string(port); }
  // Back to text: brackets around IPv6 literals.
  std::string toString() const;

 private:
  static Result<HostPort> parseImpl(std::string_view text, std::optional<std::uint16_t> default_port);
};

// A link address as the configuration and the clients spell it: "host:port", or
// "tls://host:port" for a connection that runs TLS. (Only the prefix is taken off;
// HostPort parses the rest.)
struct LinkAddress {
  bool tls = false;
  std::string host_port;
};
LinkAddress splitLinkAddress(std::string_view text);

}  // namespace lcc::net
