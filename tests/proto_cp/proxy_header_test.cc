// The PROXY v2 header (proto/proxy_header.h): what the front end writes reads back the
// same, whole and byte by byte; the stream after it is left as it is; anything that
// is not a well-formed TCP header of at most kProxyV2MaxSize bytes is refused, and
// bytes without the signature are no header.
#include "proto/proxy_header.h"

#include <gtest/gtest.h>

#include <string>

namespace lcc::proto {
namespace {

using State = ProxyDecode::State;

std::string fixedPart(unsigned char ver_cmd, unsigned char fam, std::size_t len) {
  std::string h(kProxyV2Signature);
  h += static_cast<char>(ver_cmd);
  h += static_cast<char>(fam);
  h += static_cast<char>(len >> 8);
  h += static_cast<char>(len & 0xff);
  return h;
}

TEST(ProxyHeader, AnIpv4ClientReadsBackWithTheStreamAfterItUntouched) {
  const std::string header = encodeProxyV2("192.0.2.7", 40001);
  ASSERT_EQ(header.size(), 28u);
  const std::string stream = header + "<lococa:init/>";
  const ProxyDecode d = decodeProxyV2(stream);
  ASSERT_EQ(d.state, State::kDone) << d.why;
  EXPECT_EQ(d.size, header.size());
  EXPECT_FALSE(d.header.local);
  EXPECT_EQ(d.header.address, "192.0.2.7");
  EXPECT_EQ(d.header.port, 40001);
  EXPECT_EQ(stream.substr(d.size), "<lococa:init/>");
  for (std::size_t n = 0; n < header.size(); ++n) EXPECT_EQ(decodeProxyV2(stream.substr(0, n)).state, State::kNeedMore) << n;
}

TEST(ProxyHeader, Ipv6AndMappedAddresses) {
  ProxyDecode d = decodeProxyV2(encodeProxyV2("2001:db8::1", 443));
  ASSERT_EQ(d.state, State::kDone);
  EXPECT_EQ(d.header.address, "2001:db8::1");
  EXPECT_EQ(d.size, 16u + 36u);
  d = decodeProxyV2(encodeProxyV2("::ffff:198.51.100.2", 7));  // a dual-stack listener's IPv4 client
  ASSERT_EQ(d.state, State::kDone);
  EXPECT_EQ(d.header.address, "198.51.100.2");
  // Sent as IPv6 (::ffff:203.0.113.4, another relay's choice): read as the IPv4 client,
  // so one client is counted under one spelling (found by the proxy_header fuzz target).
  std::string mapped = encodeProxyV2("2001:db8::1", 9);
  const std::string v4mapped("\0\0\0\0\0\0\0\0\0\0\xff\xff\xcb\x00\x71\x04", 16);
  mapped.replace(16, 16, v4mapped);
  d = decodeProxyV2(mapped);
  ASSERT_EQ(d.state, State::kDone);
  EXPECT_EQ(d.header.address, "203.0.113.4");
  d = decodeProxyV2(encodeProxyV2("not an address", 1));  // nothing to name: LOCAL
  ASSERT_EQ(d.state, State::kDone);
  EXPECT_TRUE(d.header.local);
}

TEST(ProxyHeader, BytesWithoutTheSignatureAreNoHeader) {
  EXPECT_EQ(decodeProxyV2("<lococa:init").state, State::kNotProxy);
  EXPECT_EQ(decodeProxyV2("PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\n").state, State::kNotProxy);  // version 1: not read
  EXPECT_EQ(decodeProxyV2("\r\n\r\nX").state, State::kNotProxy);
  EXPECT_EQ(decodeProxyV2("").state, State::kNeedMore);
  EXPECT_EQ(decodeProxyV2("\r\n\r\n").state, State::kNeedMore);
}

TEST(ProxyHeader, TlvsAfterTheAddressesAreSkipped) {
  std::string h = encodeProxyV2("10.0.0.1", 5);
  h[15] = static_cast<char>(12 + 7);
  h += std::string("\x04\x00\x04" "abcd", 7);
  const ProxyDecode d = decodeProxyV2(h + "rest");
  ASSERT_EQ(d.state, State::kDone);
  EXPECT_EQ(d.size, h.size());
  EXPECT_EQ(d.header.address, "10.0.0.1");
}

TEST(ProxyHeader, CraftedHeadersAreRefusedWithAReason) {
  const std::string block12(12, '\1');
  const struct {
    std::string bytes;
    const char* why;
  } cases[] = {
      {fixedPart(0x11, 0x11, 12) + block12, "version 1"},
      {fixedPart(0x23, 0x11, 12) + block12, "command 3"},
      {fixedPart(0x21, 0x31, 12) + block12, "address family 3"},
      {fixedPart(0x21, 0x12, 12) + block12, "not a TCP stream"},
      {fixedPart(0x21, 0x11, 4) + "abcd", "address block of 4 bytes"},
      {fixedPart(0x21, 0x21, 12) + block12, "address block of 12 bytes (needs 36)"},
      {fixedPart(0x21, 0x11, 0xffff), "header of 65551 bytes"},  // refused before its body came
      {fixedPart(0x21, 0x11, kProxyV2MaxSize - 15), "at most 512"},
  };
  for (const auto& c : cases) {
    const ProxyDecode d = decodeProxyV2(c.bytes);
    EXPECT_EQ(d.state, State::kRefused) << c.why;
    EXPECT_NE(d.why.find(c.why), std::string::npos) << d.why;
  }
  // At the bound exactly: read (its TLV bytes skipped).
  const std::string at_bound = fixedPart(0x21, 0x11, kProxyV2MaxSize - 16) + std::string(kProxyV2MaxSize - 16, '\0');
  EXPECT_EQ(decodeProxyV2(at_bound).state, State::kDone);
  // LOCAL (a health check of the proxy itself) names nobody, whatever the family says.
  const ProxyDecode local = decodeProxyV2(fixedPart(0x20, 0x00, 0));
  ASSERT_EQ(local.state, State::kDone);
  EXPECT_TRUE(local.header.local);
  EXPECT_EQ(local.size, 16u);
}

}  // namespace
}  // namespace lcc::proto
