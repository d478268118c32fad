// Issue 13: the UNS hands a large set to the QM as it reads it (pass-through in
// parts), acks the CP only after the QM acked the whole set, aborts a set its CP did
// not finish, and spools in parts a set it cannot stream (more in uns_spool_parts_test). A fake QM
// (uns_test_util.h) speaks docs/internal-protocols.md §1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "uns/uns_service.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;
using lcc::testing::TempDir;

// Connects, sends `bytes` and closes at once (a CP that dies mid-set).
void sendAndClose(std::uint16_t port, const std::string& bytes) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
}

class UnsStreamTest : public ::testing::Test {
 protected:
  UnsOptions options(std::uint16_t qm_port) {
    UnsOptions o = testOptions(dir_.path(), qm_port);
    o.session.stream_part_bytes = 2048;  // a few dozen URLs a part
    return o;
  }
  // init + a set of `u` and its replies; the set_result's accepted and count.
  static bool sendSet(std::uint16_t port, const std::vector<std::string>& u, std::uint64_t* received = nullptr) {
    auto replies = parseReplies(cpExchange(port, initXml(1) + setXml(u)));
    if (replies.size() != 2 || replies[1].kind != proto::CpReply::Kind::kSetResult) return false;
    if (received) *received = replies[1].received;
    return replies[1].accepted;
  }
  lcc::testing::SimClock sim_;
  ProviderFixture fx_{goldenProviders(sim_.now())};
  TempDir dir_;
};

TEST_F(UnsStreamTest, ALargeSetPassesThroughInPartsAndIsAcceptedAfterTheWholeIsAcked) {
  FakeQm qm;
  Harness h(options(qm.port()), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().connected(); }));
  std::vector<std::string> u = urls("big", 3000);
  u.push_back("http://elsewhere/x.htm");  // a per-URL error (outside the prefix) on the way
  auto replies = parseReplies(cpExchange(h.port(), initXml(1) + setXml(u)));
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_TRUE(replies[1].accepted);
  EXPECT_EQ(replies[1].received, 3000u);
  ASSERT_EQ(replies[1].set_errors.size(), 1u);
  EXPECT_EQ(replies[1].set_errors[0].code, ErrorCode::kOutsidePrefix);
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 1u) << "set_accepted only after the QM's ack of the whole set";
  EXPECT_TRUE(applied[0].header.streamed) << "sent as it was read, not collected";
  ASSERT_EQ(applied[0].urls.size(), 3000u);
  for (std::size_t i = 0; i < 3000; ++i) ASSERT_EQ(applied[0].urls[i].key.url, u[i]) << i;
  EXPECT_EQ(h.server().forwarder().spooledSets(), 0u);
  // A small set still goes whole, behind it.
  ASSERT_TRUE(sendSet(h.port(), urls("small", 3)));
  applied = qm.applied();
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_FALSE(applied[1].header.streamed);
  EXPECT_LT(applied[0].header.id, applied[1].header.id);
}

TEST_F(UnsStreamTest, ASetLargerThanTheForwardersOutputWindowPasses) {
  FakeQm qm;
  Harness h(options(qm.port()), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().connected(); }));
  std::uint64_t received = 0;  // 90k URLs: ~6 MB of <url/>, past the 4 MiB window
  ASSERT_TRUE(sendSet(h.port(), urls("window", 90000), &received));
  EXPECT_EQ(received, 90000u);
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_TRUE(applied[0].header.streamed);
  EXPECT_EQ(applied[0].urls.size(), 90000u);
}

// A QM's <ping/> while a whole set larger than the output window (4 MiB) is being
// written in slices: the <pong/> goes behind the set's bytes, never between two slices.
TEST_F(UnsStreamTest, APongNeverLandsInsideASetBeingWritten) {
  FakeQm qm;
  qm.setPinging(true);
  UnsOptions o = options(qm.port());
  o.session.stream_part_bytes = 0;  // collected whole: sent in 1 MiB slices
  Harness h(o, fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().connected(); }));
  for (int i = 0; i < 2; ++i) {
    std::uint64_t received = 0;  // 95k URLs: ~6 MB
    ASSERT_TRUE(sendSet(h.port(), urls("ping" + std::to_string(i), 95000), &received)) << i;
    EXPECT_EQ(received, 95000u);
  }
  EXPECT_EQ(qm.applied().size(), 2u);
  EXPECT_EQ(qm.connections(), 1u) << "the stream never broke";
}

TEST_F(UnsStreamTest, ACpCutOffMidSetHasNothingAppliedAndTheLinkGoesOn) {
  FakeQm qm;
  UnsOptions opt = options(qm.port());
  opt.idle_timeout = Millis(300);
  Harness h(opt, fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().connected(); }));
  std::string whole = setXml(urls("cut", 2000));
  std::string cut = initXml(1) + whole.substr(0, whole.size() / 2);
  sendAndClose(h.port(), cut);  // the CP dies
  // The CP goes silent: 133 after the idle time, and the set is aborted as well.
  auto replies = parseReplies(cpExchange(h.port(), cut));
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_FALSE(replies[1].accepted);
  EXPECT_EQ(replies[1].code, ErrorCode::kTimeout);
  // The next set passes on the same link; the cut ones were never applied.
  std::uint64_t received = 0;
  ASSERT_TRUE(sendSet(h.port(), urls("after", 500), &received));
  EXPECT_EQ(received, 500u);
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_EQ(applied[0].urls.front().key.url, urls("after", 1)[0]);
  EXPECT_EQ(qm.received(), 1u) << "the aborted sets were not delivered as sets";
  EXPECT_EQ(qm.connections(), 1u) << "the abort did not drop the link";
}

TEST_F(UnsStreamTest, ALargeSetWhileTheQmIsDownIsSpooledInPartsAndReplayed) {
  const std::uint16_t qm_port = unusedPort();
  Harness h(options(qm_port), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(sendSet(h.port(), urls("down", 2000)));
  EXPECT_EQ(h.server().forwarder().spooledSets(), 1u);
  FakeQm qm(qm_port);
  ASSERT_TRUE(qm.waitApplied(1));
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_TRUE(applied[0].header.streamed) << "replayed in parts (uns_spool_parts_test)";
  EXPECT_EQ(applied[0].urls.size(), 2000u);
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().spooledSets() == 0; }));
  // Back to pass-through: the next large set streams.
  ASSERT_TRUE(sendSet(h.port(), urls("up", 2000)));
  applied = qm.applied();
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_TRUE(applied[1].header.streamed);
}

}  // namespace
}  // namespace lcc::uns
