// proxy_header.h — the PROXY protocol's version 2 header (HAProxy's "PROXY protocol",
// section 2.2): the binary header a relay puts before a TCP stream to name the client
// it carries. The front end (core/front) writes one before a relayed CP session; a
// UNS reads it from its trusted proxies (uns.trusted_proxies) only.
//
// Pure functions, no sockets. The decoder reads what is given so far and never more
// than its bound: a header longer than `max_size` is refused before waiting for it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lcc::proto {

// The 12 bytes every version 2 header starts with.
inline constexpr std::string_view kProxyV2Signature{"\r\n\r\n\0\r\nQUIT\n", 12};
// The fixed part: the signature, version/command, family/transport, length.
inline constexpr std::size_t kProxyV2Fixed = 16;
// A header with TLVs up to this size is read (an INET6 address block is 36 bytes).
inline constexpr std::size_t kProxyV2MaxSize = 512;

struct ProxyHeader {
  bool local = false;      // command LOCAL (or family UNSPEC): no client named, the connection's own
  std::string address;     // the client's address, "192.0.2.1" or "2001:db8::1" (not local; an
                           // IPv4-mapped IPv6 address is given as its IPv4 address)
  std::uint16_t port = 0;  // the client's port (not local)
};

struct ProxyDecode {
  enum class State : std::uint8_t {
    kNotProxy,  // the bytes do not start with the signature: no header, the stream as it is
    kNeedMore,  // a header so far: read more
    kRefused,   // a header, but a bad one (`why`)
    kDone,      // a header of `size` bytes, `header` what it says
  };
  State state = State::kNotProxy;
  std::size_t size = 0;
  ProxyHeader header;
  std::string why;
};

// What the first bytes of a stream are: `bytes` as received so far.
ProxyDecode decodeProxyV2(std::string_view bytes, std::size_t max_size = kProxyV2MaxSize);

// A PROXY header (command PROXY, TCP) naming `client` ("192.0.2.1" or "2001:db8::1"; an
// IPv4-mapped IPv6 address is written as IPv4) and `client_port`; the destination is
// the zero address of the same family, port 0. A `client` that is no IP address:
// the LOCAL command (no client named).
std::string encodeProxyV2(const std::string& client, std::uint16_t client_port);

}  // namespace lcc::proto
