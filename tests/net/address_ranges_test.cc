// AddressRanges (net/address_ranges.h): addresses and CIDR ranges, IPv4 and IPv6, and
// what they refuse (uns.trusted_proxies).
#include "net/address_ranges.h"

#include <gtest/gtest.h>

namespace lcc::net {
namespace {

TEST(AddressRanges, AddressesAndRangesOfBothFamilies) {
  auto r = AddressRanges::parse({"192.0.2.7", "10.0.0.0/8", "172.16.0.0/12", "fd00::/8", "::1"});
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  const AddressRanges& a = r.value();
  EXPECT_TRUE(a.contains("192.0.2.7"));
  EXPECT_FALSE(a.contains("192.0.2.8"));
  EXPECT_TRUE(a.contains("10.255.1.2"));
  EXPECT_TRUE(a.contains("172.31.255.255"));
  EXPECT_FALSE(a.contains("172.32.0.0"));
  EXPECT_TRUE(a.contains("fd12:3456::1"));
  EXPECT_FALSE(a.contains("fe80::1"));
  EXPECT_TRUE(a.contains("::1"));
  EXPECT_TRUE(a.contains("::ffff:10.1.2.3")) << "an IPv4-mapped address is its IPv4 address";
  EXPECT_FALSE(a.contains("not an address"));
  EXPECT_FALSE(a.contains(""));
  EXPECT_TRUE(AddressRanges::parse({"0.0.0.0/0"}).value().contains("203.0.113.9"));
  EXPECT_FALSE(AddressRanges::parse({"0.0.0.0/0"}).value().contains("2001:db8::1")) << "one family per range";
  EXPECT_TRUE(AddressRanges::parse({}).value().empty());
}

TEST(AddressRanges, BadEntriesAreNamed) {
  for (const char* bad : {"10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "host.example", "10.0.0.256", "1.2.3.4/-1"}) {
    auto r = AddressRanges::parse({"127.0.0.1", bad});
    ASSERT_FALSE(r.isOk()) << bad;
    EXPECT_EQ(r.status().message().rfind(bad, 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace lcc::net
