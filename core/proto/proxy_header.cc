#include "proto/proxy_header.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace lcc::proto {
namespace {

constexpr std::uint8_t kVersion2 = 0x20;
constexpr std::uint8_t kCommandLocal = 0x0, kCommandProxy = 0x1;
constexpr std::uint8_t kFamilyUnspec = 0x0, kFamilyInet = 0x1, kFamilyInet6 = 0x2;
constexpr std::uint8_t kTransportStream = 0x1;
constexpr std::size_t kInetBlock = 12, kInet6Block = 36;  // two addresses, two ports

std::uint16_t be16(const unsigned char* p) { return static_cast<std::uint16_t>((p[0] << 8) | p[1]); }

ProxyDecode refused(std::string why) {
  ProxyDecode d;
  d.state = ProxyDecode::State::kRefused;
  d.why = std::move(why);
  return d;
}

// The header of `fixed` bytes (signature checked) and its address block `block`.
ProxyDecode decodeBody(const unsigned char* fixed, const unsigned char* block, std::size_t block_len) {
  const std::uint8_t command = fixed[12] & 0x0f;
  const std::uint8_t family = fixed[13] >> 4, transport = fixed[13] & 0x0f;
  ProxyDecode d;
  d.state = ProxyDecode::State::kDone;
  d.size = kProxyV2Fixed + block_len;
  if (command == kCommandLocal || family == kFamilyUnspec) {  // the connection's own addresses
    d.header.local = true;
    return d;
  }
  if (transport != kTransportStream) return refused("not a TCP stream (transport " + std::to_string(transport) + ")");
  const bool v6 = family == kFamilyInet6;
  if (family != kFamilyInet && !v6) return refused("address family " + std::to_string(family) + " (not IPv4 or IPv6)");
  const std::size_t need = v6 ? kInet6Block : kInetBlock;
  if (block_len < need) return refused("address block of " + std::to_string(block_len) + " bytes (needs " +
                                       std::to_string(need) + ")");
  // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is its IPv4 client: one spelling per
  // client, so per-address counts (keyed by the text) cannot be split in two.
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  const bool mapped = v6 && std::memcmp(block, kMapped, sizeof kMapped) == 0;
  char text[INET6_ADDRSTRLEN] = {};
  if (::inet_ntop(v6 && !mapped ? AF_INET6 : AF_INET, mapped ? block + 12 : block, text, sizeof text) == nullptr) {
    return refused("unreadable address");
  }
  d.header.address = text;
  d.header.port = be16(block + (v6 ? 32 : 8));
  return d;
}

}  // namespace

ProxyDecode decodeProxyV2(std::string_view bytes, std::size_t max_size) {
  const std::size_t head = std::min(bytes.size(), kProxyV2Signature.size());
  if (bytes.substr(0, head) != kProxyV2Signature.substr(0, head)) return {};
  ProxyDecode more;
  more.state = ProxyDecode::State::kNeedMore;
  if (bytes.size() < kProxyV2Fixed) return more;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if ((p[12] & 0xf0) != kVersion2) return refused("version " + std::to_string(p[12] >> 4) + " (not 2)");
  const std::uint8_t command = p[12] & 0x0f;
  if (command != kCommandLocal && command != kCommandProxy) return refused("command " + std::to_string(command));
  const std::size_t len = be16(p + 14);
  if (kProxyV2Fixed + len > max_size) {
    return refused("header of " + std::to_string(kProxyV2Fixed + len) + " bytes (at most " + std::to_string(max_size) + ")");
  }
  if (bytes.size() < kProxyV2Fixed + len) return more;
  return decodeBody(p, p + kProxyV2Fixed, len);
}

std::string encodeProxyV2(const std::string& client, std::uint16_t client_port) {
  std::array<unsigned char, 16> addr{};
  bool v6 = false;
  std::string_view text = client;
  if (text.rfind("::ffff:", 0) == 0 && text.find('.') != std::string_view::npos) text.remove_prefix(7);
  const std::string host(text);
  bool ok = ::inet_pton(AF_INET, host.c_str(), addr.data()) == 1;
  if (!ok) ok = v6 = ::inet_pton(AF_INET6, host.c_str(), addr.data()) == 1;
  std::string out(kProxyV2Signature);
  out += static_cast<char>(kVersion2 | (ok ? kCommandProxy : kCommandLocal));
  if (!ok) {
    out += static_cast<char>(kFamilyUnspec << 4);
    out.append(2, '\0');
    return out;
  }
  out += static_cast<char>(((v6 ? kFamilyInet6 : kFamilyInet) << 4) | kTransportStream);
  const std::size_t n = v6 ? 16 : 4;
  const std::size_t block = v6 ? kInet6Block : kInetBlock;
  out += static_cast<char>(block >> 8);
  out += static_cast<char>(block & 0xff);
  out.append(reinterpret_cast<const char*>(addr.data()), n);  // source
  out.append(n, '\0');                                        // destination: not named
  out += static_cast<char>(client_port >> 8);
  out += static_cast<char>(client_port & 0xff);
  out.append(2, '\0');
  return out;
}

}  // namespace lcc::proto
