// The UNS behind a front end (uns.trusted_proxies): a PROXY v2 header from a trusted
// peer names the CP, whose address then counts in uns.max_connections_per_ip and
// uns.auth_failures_per_minute and is recorded as the provider's lastConnectIP; a
// header from any other peer, or a malformed one, closes the connection unanswered
// (lcc_uns_proxy_refused_total); real sockets, a fake QM (uns_test_util.h).
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "net/address_ranges.h"
#include "proto/proxy_header.h"
#include "support/loopback.h"
#include "support/temp_dir.h"
#include "uns/uns_service.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;
using lcc::testing::TempDir;

std::shared_ptr<const net::AddressRanges> ranges(const std::vector<std::string>& entries) {
  auto r = net::AddressRanges::parse(entries);
  EXPECT_TRUE(r.isOk()) << r.status().toString();
  return std::make_shared<const net::AddressRanges>(std::move(r).value());
}

std::string via(const std::string& cp) { return proto::encodeProxyV2(cp, 40000); }

// A session left open after its init_accepted (it holds its place); the descriptor.
int openSession(std::uint16_t port, const std::string& request) {
  const int fd = lcc::testing::connectLoopback(port);  // reads time out after 20 s
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string got;
  char buf[4096];
  while (got.find("init_accepted>") == std::string::npos) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_NE(got.find("init_accepted"), std::string::npos) << got;
  return fd;
}

class UnsProxyTest : public ::testing::Test {
 protected:
  lcc::testing::SimClock sim_;
  ProviderFixture fx_{goldenProviders(sim_.now())};
  TempDir dir_;
  FakeQm qm_;
};

TEST_F(UnsProxyTest, ATrustedProxysCpsAreCountedPerCpAddress) {
  UnsOptions opt = testOptions(dir_.path(), qm_.port());
  opt.core.max_connections_per_ip = 1;
  opt.trusted_proxies = ranges({"10.9.0.0/16", "127.0.0.1"});
  Harness h(opt, fx_.store());
  ASSERT_TRUE(h.start().isOk());
  // CP 192.0.2.1 holds its one place; the proxy's own address (127.0.0.1) is not limited.
  const int held = openSession(h.port(), via("192.0.2.1") + initXml(1));
  auto r = parseReplies(cpExchange(h.port(), via("192.0.2.1") + initXml(1)));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, proto::CpReply::Kind::kInitRejected);
  EXPECT_EQ(r[0].code, ErrorCode::kTooManyConnections);
  // Another CP through the same proxy: its own place.
  r = parseReplies(cpExchange(h.port(), via("192.0.2.2") + initXml(1) + setXml(urls("b", 2))));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].kind, proto::CpReply::Kind::kInitAccepted);
  EXPECT_TRUE(r[1].accepted);
  EXPECT_TRUE(eventually([&] {
    auto p = fx_.store()->get(1);
    return p.isOk() && p.value() && p.value()->last_ip == "192.0.2.2";
  }));
  EXPECT_EQ(h.metrics().snapshot()["lcc_uns_connections_over_limit_total"], 1);
  ::close(held);
  // Without a header the proxy's peer is a CP like any other, at its own address.
  const int plain = openSession(h.port(), initXml(1));
  r = parseReplies(cpExchange(h.port(), initXml(1)));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].code, ErrorCode::kTooManyConnections);
  ::close(plain);
}

TEST_F(UnsProxyTest, FailedInitsCountAgainstTheCpNotTheProxy) {
  UnsOptions opt = testOptions(dir_.path(), qm_.port());
  opt.core.auth_failures_per_minute = 2;
  opt.core.auth_cooldown = Millis(5 * 60 * 1000);
  opt.trusted_proxies = ranges({"127.0.0.0/8"});
  Harness h(opt, fx_.store());
  ASSERT_TRUE(h.start().isOk());
  for (int i = 0; i < 2; ++i) {
    auto r = parseReplies(cpExchange(h.port(), via("203.0.113.5") + initXml(1, "guess")));
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].code, ErrorCode::kAuthFailed);
  }
  auto r = parseReplies(cpExchange(h.port(), via("203.0.113.5") + initXml(1)));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].code, ErrorCode::kTooManyConnections);
  EXPECT_NE(r[0].message.find("too many failed authentications"), std::string::npos) << r[0].message;
  // Another CP behind the same proxy is not locked out.
  r = parseReplies(cpExchange(h.port(), via("203.0.113.6") + initXml(1) + setXml(urls("c", 1))));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[1].accepted);
}

TEST_F(UnsProxyTest, AHeaderFromAPeerNotTrustedClosesTheConnectionUnanswered) {
  UnsOptions opt = testOptions(dir_.path(), qm_.port());
  opt.trusted_proxies = ranges({"192.0.2.0/24"});  // not the test's 127.0.0.1
  Harness h(opt, fx_.store());
  ASSERT_TRUE(h.start().isOk());
  EXPECT_EQ(cpExchange(h.port(), via("198.51.100.1") + initXml(1) + setXml(urls("u", 1))), "");
  EXPECT_EQ(qm_.received(), 0u);
  EXPECT_EQ(h.metrics().snapshot()["lcc_uns_proxy_refused_total"], 1);
  // No uns.trusted_proxies at all: refused the same way.
  UnsOptions none = testOptions(dir_.path() + "/2", qm_.port());
  Harness h2(none, fx_.store());
  ASSERT_TRUE(h2.start().isOk());
  EXPECT_EQ(cpExchange(h2.port(), via("198.51.100.1") + initXml(1)), "");
  EXPECT_EQ(h2.metrics().snapshot()["lcc_uns_proxy_refused_total"], 1);
  // A CP without a header is served.
  auto r = parseReplies(cpExchange(h.port(), initXml(1) + setXml(urls("u", 1))));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[1].accepted);
}

TEST_F(UnsProxyTest, CraftedHeadersFromATrustedPeerAreRefusedWithoutACrash) {
  UnsOptions opt = testOptions(dir_.path(), qm_.port());
  opt.trusted_proxies = ranges({"127.0.0.1"});
  opt.idle_timeout = Millis(300);  // the header cut short waits no longer than this
  Harness h(opt, fx_.store());
  ASSERT_TRUE(h.start().isOk());
  const std::string good = via("192.0.2.9");
  auto with = [&](std::size_t at, char c) {
    std::string b = good;
    b[at] = c;
    return b;
  };
  const std::string oversized = good.substr(0, 14) + std::string("\xff\xff", 2) + std::string(600, 'x');
  const std::string crafted[] = {
      with(12, '\x11'),               // version 1
      with(12, '\x2f'),               // command 15
      with(13, '\x31'),               // AF_UNIX
      with(13, '\x12'),               // UDP
      with(15, '\x04'),               // address block of 4 bytes
      oversized,                      // 65,551 bytes announced
  };
  for (const std::string& c : crafted) {
    EXPECT_EQ(cpExchange(h.port(), c + initXml(1)), "") << c.size();
  }
  // Cut short: the idle deadline ends it (133), the server goes on.
  auto cut = parseReplies(cpExchange(h.port(), good.substr(0, 20)));
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].code, ErrorCode::kTimeout);
  // Byte by byte, a good header still works.
  auto r = parseReplies(cpExchange(h.port(), good + initXml(1) + setXml(urls("ok", 1)), 1));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[1].accepted);
  EXPECT_EQ(h.metrics().snapshot()["lcc_uns_proxy_refused_total"], 6);
}

}  // namespace
}  // namespace lcc::uns
