// address_policy.h — which peer addresses a robot may connect to (SSRF guard).
//
// Checked on the resolved socket address at socket-open time (libcurl's
// CURLOPT_OPENSOCKETFUNCTION), so every spelling of a host — decimal, octal, hex,
// short IPv4 forms, IPv6 literals, DNS names, redirect targets — is judged by the
// address it really connects to, never by its text.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lcc::plugins::curl {

// Why an address is refused; kAllowed when it is a public unicast address.
enum class AddressClass : std::uint8_t {
  kAllowed = 0,
  kUnspecified,   // 0.0.0.0/8, ::
  kLoopback,      // 127/8, ::1
  kPrivate,       // 10/8, 172.16/12, 192.168/16, fc00::/7 (ULA), fec0::/10 (old site-local)
  kSharedCgnat,   // 100.64/10
  kLinkLocal,     // 169.254/16, fe80::/10
  kMulticast,     // 224/4, ff00::/8
  kReserved,      // 240/4, broadcast, 192.0.0/24, TEST-NETs, 198.18/15, 2001:db8::/32, 100::/64
  kEmbeddedIpv4,  // IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96 and
                  // 64:ff9b:1::/48, 6to4 2002::/16 and Teredo 2001::/32 (the address inside
                  // could be anything: refused whatever it holds)
  kNotIp,         // not AF_INET/AF_INET6 (unix sockets...)
};

AddressClass classifyAddress(const sockaddr* addr, socklen_t len);
AddressClass classifyIpv4(std::uint32_t host_order);
AddressClass classifyIpv6(const unsigned char bytes[16]);
const char* addressClassName(AddressClass c);
// "127.0.0.1" / "::1" for messages.
std::string formatAddress(const sockaddr* addr, socklen_t len);

// Peers reached although their address is not public: the option allow_peers, each
// entry one address and port ("10.0.0.5:7780", "[fd00::5]:7780"). It is meant for the
// HTTP port of the other LCCs behind one front end, whose /cu/content/ a slot move's copies read
// (core/qm/move_copy.h), without opening every private address to provider URLs.
// Matched on the resolved socket address, like the rest of the policy.
class PeerAllowList {
 public:
  // False with `why` ("entry: why") on the first entry that is not ADDRESS:PORT.
  bool parse(const std::vector<std::string>& entries, std::string* why);
  bool allows(const sockaddr* addr, socklen_t len) const;
  bool empty() const { return peers_.empty(); }

 private:
  struct Peer {
    int family = 0;
    unsigned char bytes[16] = {};
    std::uint16_t port = 0;
  };
  std::vector<Peer> peers_;
};

}  // namespace lcc::plugins::curl
