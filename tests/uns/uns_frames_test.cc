// Issue 28: between hosts the UNS offers its QM compact frames (node.link_frames) and,
// when the QM takes them, sends its sets as frames: the notices its sessions parsed,
// a spooled set's XML read back into records on the way. A QM that declines gets the
// same sets as XML. A fake QM (uns_test_util.h) speaks both forms.
#include <gtest/gtest.h>

#include <set>

#include "support/temp_dir.h"
#include "uns/uns_service.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;
using lcc::testing::TempDir;

class UnsFramesTest : public ::testing::Test {
 protected:
  UnsOptions options(std::uint16_t qm_port) {
    UnsOptions o = testOptions(dir_.path(), qm_port);
    EXPECT_TRUE(o.forwarder.frames) << "node.link_frames is on by default";
    o.session.stream_part_bytes = 2048;  // sets over a few dozen URLs stream in parts
    return o;
  }
  static bool sendSet(std::uint16_t port, const std::vector<std::string>& u) {
    auto replies = parseReplies(cpExchange(port, initXml(1) + setXml(u)));
    return replies.size() == 2 && replies[1].kind == proto::CpReply::Kind::kSetResult && replies[1].accepted &&
           replies[1].received == u.size();
  }
  static void expectUrls(const proto::UnsQmSet& set, const std::vector<std::string>& u) {
    ASSERT_EQ(set.urls.size(), u.size());
    for (std::size_t i = 0; i < u.size(); ++i) ASSERT_EQ(set.urls[i].key.url, u[i]) << i;
  }
  // A UNS linked to `qm` takes a set that streams (3000 URLs) and a whole one (3): both
  // reach the QM as they were sent. The forwarder's /status part, after.
  nlohmann::json bigAndSmall(FakeQm& qm) {
    Harness h(options(qm.port()), fx_.store());
    EXPECT_TRUE(h.start().isOk());
    EXPECT_TRUE(eventually([&] { return h.server().forwarder().connected(); }));
    EXPECT_TRUE(sendSet(h.port(), urls("big", 3000)));
    EXPECT_TRUE(sendSet(h.port(), urls("small", 3)));
    auto applied = qm.applied();
    EXPECT_EQ(applied.size(), 2u);
    if (applied.size() == 2) {
      EXPECT_TRUE(applied[0].header.streamed);
      expectUrls(applied[0], urls("big", 3000));
      EXPECT_FALSE(applied[1].header.streamed);
      expectUrls(applied[1], urls("small", 3));
    }
    nlohmann::json st;
    h.server().forwarder().status(st);
    return st;
  }
  lcc::testing::SimClock sim_;
  ProviderFixture fx_{goldenProviders(sim_.now())};
  TempDir dir_;
};

TEST_F(UnsFramesTest, WholeAndStreamedSetsTravelAsFramesWhenTheQmTakesThem) {
  FakeQm qm(0, FakeQm::Mode::kAck, true);
  qm.setPinging(true);  // its pings are answered with pong frames between the set's frames
  const nlohmann::json st = bigAndSmall(qm);
  EXPECT_EQ(qm.framedConnections(), 1u);
  EXPECT_EQ(qm.connections(), 1u) << "the stream never broke";
  EXPECT_EQ(st["qm_link"], "tcp");
  EXPECT_TRUE(st["qm_link_frames"].get<bool>());
}

// The spool keeps the XML form; replayed over a framed link it is read into records
// and sent as frames, in id order, nothing lost or doubled.
TEST_F(UnsFramesTest, SpooledSetsAreReplayedAsFrames) {
  const std::uint16_t qm_port = unusedPort();
  Harness h(options(qm_port), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(sendSet(h.port(), urls("whole", 3)));
  ASSERT_TRUE(sendSet(h.port(), urls("parts", 2000)));
  ASSERT_TRUE(sendSet(h.port(), urls("whole2", 2)));
  EXPECT_EQ(h.server().forwarder().spooledSets(), 3u);
  FakeQm qm(qm_port, FakeQm::Mode::kAck, true);
  ASSERT_TRUE(qm.waitApplied(3));
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().spooledSets() == 0; }));
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 3u);
  expectUrls(applied[0], urls("whole", 3));
  expectUrls(applied[1], urls("parts", 2000));
  expectUrls(applied[2], urls("whole2", 2));
  EXPECT_GE(qm.framedConnections(), 1u);
}

// A QM that predates the frames (or has them off) answers without frames="1": the
// records the sessions made are written as the XML stream, and nothing changes for it.
TEST_F(UnsFramesTest, AQmThatDeclinesGetsTheSameSetsAsXml) {
  FakeQm qm;  // answers in XML at connect, ignores the offer
  const nlohmann::json st = bigAndSmall(qm);
  EXPECT_EQ(qm.framedConnections(), 0u);
  EXPECT_EQ(st["qm_link"], "tcp");
  EXPECT_FALSE(st["qm_link_frames"].get<bool>());
}

}  // namespace
}  // namespace lcc::uns
