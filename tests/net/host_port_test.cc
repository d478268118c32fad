// The one host:port parser: a table of good and bad spellings.
#include "net/host_port.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lcc::net {
namespace {

using ::testing::HasSubstr;

struct Good {
  const char* text;
  const char* host;
  std::uint16_t port;
  const char* back;  // toString()
};

TEST(HostPortTest, GoodSpellings) {
  const Good table[] = {
      {"127.0.0.1:7700", "127.0.0.1", 7700, "127.0.0.1:7700"},
      {"localhost:80", "localhost", 80, "localhost:80"},
      {"cache-1.example.org:65535", "cache-1.example.org", 65535, "cache-1.example.org:65535"},
      {"0.0.0.0:0", "0.0.0.0", 0, "0.0.0.0:0"},
      {"*:7704", "*", 7704, "*:7704"},
      {"[::1]:7701", "::1", 7701, "[::1]:7701"},
      {"[::]:80", "::", 80, "[::]:80"},
      {"[fe80::1:2]:1", "fe80::1:2", 1, "[fe80::1:2]:1"},
      {"[::ffff:10.0.0.1]:443", "::ffff:10.0.0.1", 443, "[::ffff:10.0.0.1]:443"},
      {"under_score:00080", "under_score", 80, "under_score:80"},
  };
  for (const auto& g : table) {
    auto r = HostPort::parse(g.text);
    ASSERT_TRUE(r.isOk()) << g.text << ": " << r.status().message();
    EXPECT_EQ(r->host, g.host) << g.text;
    EXPECT_EQ(r->port, g.port) << g.text;
    EXPECT_EQ(r->toString(), g.back) << g.text;
  }
}

struct Bad {
  const char* text;
  const char* why;
};

TEST(HostPortTest, BadSpellingsSayWhatIsWrong) {
  const Bad table[] = {
      {"", "no ':'"},
      {"nowhere", "no ':'"},
      {":7700", "host is missing"},
      {"host:", "port is missing"},
      {"host:http", "decimal"},
      {"host:-1", "decimal"},
      {"host:+80", "decimal"},
      {"host: 80", "decimal"},
      {"host:65536", "0..65535"},
      {"host:123456", "0..65535"},
      {"::1:80", "needs brackets"},
      {"fe80::1", "needs brackets"},
      {"[::1:80", "without ']'"},
      {"[::1]80", "followed by :port"},
      {"[::1]", "followed by :port"},
      {"::1]:80", "needs brackets"},
      {"a]:80", "without '['"},
      {"[example.org]:80", "only an IPv6"},
      {"[1::2::3]:80", "only an IPv6"},
      {"user@host:80", "character"},
      {"ho st:80", "character"},
      {"host/path:80", "character"},
      {"host%eth0:80", "character"},
      {".host:80", "label"},
      {"a..b:80", "label"},
      {"-a:80", "label"},
  };
  for (const auto& b : table) {
    auto r = HostPort::parse(b.text);
    ASSERT_FALSE(r.isOk()) << b.text;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << b.text;
    EXPECT_THAT(r.status().message(), HasSubstr(b.why)) << b.text;
    EXPECT_THAT(r.status().message(), HasSubstr("'" + std::string(b.text) + "'")) << b.text;
  }
  std::string long_host(254, 'a');
  EXPECT_THAT(HostPort::parse(long_host + ":1").status().message(), HasSubstr("253"));
}

TEST(HostPortTest, TargetsNeedAPortAndWildcardsBecomeLoopback) {
  EXPECT_FALSE(HostPort::parseTarget("127.0.0.1:0").isOk());
  EXPECT_TRUE(HostPort::parseTarget("127.0.0.1:1").isOk());
  EXPECT_EQ(HostPort::parse("0.0.0.0:7780")->reachable().toString(), "127.0.0.1:7780");
  EXPECT_EQ(HostPort::parse("*:7780")->reachable().toString(), "127.0.0.1:7780");
  EXPECT_EQ(HostPort::parse("[::]:7780")->reachable().toString(), "[::1]:7780");
  EXPECT_EQ(HostPort::parse("cache:7780")->reachable().toString(), "cache:7780");
  EXPECT_TRUE(HostPort::parse("[::]:1")->isWildcard());
  EXPECT_FALSE(HostPort::parse("[::1]:1")->isWildcard());
  EXPECT_EQ(HostPort::parse("*:1")->resolverHost(), "0.0.0.0");
}

}  // namespace
}  // namespace lcc::net
