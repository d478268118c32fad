#include "address_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

namespace lcc::plugins::curl {

namespace {
bool inNet(std::uint32_t a, std::uint32_t net, int bits) {
  std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (a & mask) == (net & mask);
}
constexpr std::uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d) { return (a << 24) | (b << 16) | (c << 8) | d; }
}  // namespace

AddressClass classifyIpv4(std::uint32_t a) {
  if (inNet(a, ip4(0, 0, 0, 0), 8)) return AddressClass::kUnspecified;
  if (inNet(a, ip4(127, 0, 0, 0), 8)) return AddressClass::kLoopback;
  if (inNet(a, ip4(10, 0, 0, 0), 8) || inNet(a, ip4(172, 16, 0, 0), 12) || inNet(a, ip4(192, 168, 0, 0), 16)) {
    return AddressClass::kPrivate;
  }
  if (inNet(a, ip4(100, 64, 0, 0), 10)) return AddressClass::kSharedCgnat;
  if (inNet(a, ip4(169, 254, 0, 0), 16)) return AddressClass::kLinkLocal;
  if (inNet(a, ip4(224, 0, 0, 0), 4)) return AddressClass::kMulticast;
  if (inNet(a, ip4(240, 0, 0, 0), 4) || inNet(a, ip4(192, 0, 0, 0), 24) || inNet(a, ip4(192, 0, 2, 0), 24) ||
      inNet(a, ip4(198, 18, 0, 0), 15) || inNet(a, ip4(198, 51, 100, 0), 24) || inNet(a, ip4(203, 0, 113, 0), 24) ||
      inNet(a, ip4(192, 88, 99, 0), 24)) {
    return AddressClass::kReserved;
  }
  return AddressClass::kAllowed;
}

AddressClass classifyIpv6(const unsigned char b[16]) {
  static const unsigned char kZero[16] = {};
  if (std::memcmp(b, kZero, 16) == 0) return AddressClass::kUnspecified;
  if (std::memcmp(b, kZero, 15) == 0 && b[15] == 1) return AddressClass::kLoopback;
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated)
  if (std::memcmp(b, kZero, 10) == 0 && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0))) {
    return AddressClass::kEmbeddedIpv4;
  }
  // ::ffff:0:a.b.c.d (SIIT translated)
  if (std::memcmp(b, kZero, 8) == 0 && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) {
    return AddressClass::kEmbeddedIpv4;
  }
  // 64:ff9b::/96 and 64:ff9b:1::/48 (NAT64)
  if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return AddressClass::kEmbeddedIpv4;
  if (b[0] == 0x20 && b[1] == 0x02) return AddressClass::kEmbeddedIpv4;                                // 6to4
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) return AddressClass::kEmbeddedIpv4;  // Teredo
  if ((b[0] & 0xfe) == 0xfc) return AddressClass::kPrivate;                   // fc00::/7
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return AddressClass::kLinkLocal;  // fe80::/10
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return AddressClass::kPrivate;    // fec0::/10
  if (b[0] == 0xff) return AddressClass::kMulticast;
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return AddressClass::kReserved;  // doc
  if (b[0] == 0x01 && std::memcmp(b + 1, kZero, 7) == 0) return AddressClass::kReserved;             // 100::/64
  return AddressClass::kAllowed;
}

AddressClass classifyAddress(const sockaddr* addr, socklen_t len) {
  if (addr == nullptr) return AddressClass::kNotIp;
  if (addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
    return classifyIpv4(ntohl(in->sin_addr.s_addr));
  }
  if (addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    return classifyIpv6(in6->sin6_addr.s6_addr);
  }
  return AddressClass::kNotIp;
}

const char* addressClassName(AddressClass c) {
  switch (c) {
    case AddressClass::kAllowed: return "public";
    case AddressClass::kUnspecified: return "unspecified";
    case AddressClass::kLoopback: return "loopback";
    case AddressClass::kPrivate: return "private";
    case AddressClass::kSharedCgnat: return "shared (CGNAT)";
    case AddressClass::kLinkLocal: return "link-local";
    case AddressClass::kMulticast: return "multicast";
    case AddressClass::kReserved: return "reserved";
    case AddressClass::kEmbeddedIpv4: return "IPv6 with an embedded IPv4 address";
    case AddressClass::kNotIp: return "not an IP address";
  }
  return "?";
}

std::string formatAddress(const sockaddr* addr, socklen_t len) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr && addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, buf, sizeof buf);
  } else if (addr && addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, buf, sizeof buf);
  }
  return buf;
}

bool PeerAllowList::parse(const std::vector<std::string>& entries, std::string* why) {
  peers_.clear();
  for (const std::string& e : entries) {
    const std::size_t colon = e.rfind(':');
    std::string host = colon == std::string::npos ? std::string() : e.substr(0, colon);
    const std::string port = colon == std::string::npos ? std::string() : e.substr(colon + 1);
    const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
    if (bracketed) host = host.substr(1, host.size() - 2);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      *why = "\"" + e + "\": not ADDRESS:PORT with a port 1-65535";
      return false;
    }
    Peer p;
    p.port = static_cast<std::uint16_t>(value);
    if (!bracketed && ::inet_pton(AF_INET, host.c_str(), p.bytes) == 1) {
      p.family = AF_INET;
    } else if (bracketed && ::inet_pton(AF_INET6, host.c_str(), p.bytes) == 1) {
      p.family = AF_INET6;
    } else {
      *why = "\"" + e + "\": not an IPv4 address or a bracketed IPv6 address (no names: the socket's address is matched)";
      return false;
    }
    peers_.push_back(p);
  }
  return true;
}

bool PeerAllowList::allows(const sockaddr* addr, socklen_t len) const {
  if (addr == nullptr) return false;
  for (const Peer& p : peers_) {
    if (p.family == AF_INET && addr->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
      if (ntohs(in->sin_port) == p.port && std::memcmp(&in->sin_addr, p.bytes, 4) == 0) return true;
    }
    if (p.family == AF_INET6 && addr->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
      if (ntohs(in6->sin6_port) == p.port && std::memcmp(&in6->sin6_addr, p.bytes, 16) == 0) return true;
    }
  }
  return false;
}

}  // namespace lcc::plugins::curl
