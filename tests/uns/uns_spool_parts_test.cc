// Issue 13, "per-set memory is O(1) in the set's size": a streamed set the QM cannot
// take as it comes (QM away) is spooled in parts as it is read and replayed in parts
// read back from the journal; the forwarder never holds it whole. A set cut off
// midway, or not synced to its end before a power loss, never reaches the QM and was
// never accepted; a spool that fills up midway refuses the set with 130.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "common/posix_env.h"
#include "support/fault_env.h"
#include "support/temp_dir.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;
using lcc::testing::FaultEnv;
using lcc::testing::TempDir;

constexpr std::size_t kBuffer = 64u << 10;  // the forwarder's buffer_bytes in these tests
constexpr std::uint64_t kHeldBound = 512u << 10;

// A CP that sent part of a set and stays connected until destroyed.
class HangingCp {
 public:
  HangingCp(std::uint16_t port, const std::string& bytes) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
          ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  ~HangingCp() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return ok_; }

 private:
  int fd_ = -1;
  bool ok_ = false;
};

std::uint64_t folderBytes(const std::string& dir) {
  std::uint64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.is_regular_file() ? e.file_size() : 0;
  return n;
}

class UnsSpoolPartsTest : public ::testing::Test {
 protected:
  // `spool_limit` 0: the default.
  UnsOptions options(std::uint16_t qm_port, std::uint64_t spool_limit = 0) {
    UnsOptions o = testOptions(dir_.path(), qm_port);
    o.session.stream_part_bytes = 2048;  // a few dozen URLs a part
    o.forwarder.buffer_bytes = kBuffer;
    if (spool_limit > 0) o.forwarder.spool_limit = spool_limit;
    return o;
  }
  // init + a set; the set_result (kind kSetResult) or an empty reply.
  static proto::CpReply sendSet(std::uint16_t port, const std::vector<std::string>& u) {
    auto replies = parseReplies(cpExchange(port, initXml(1) + setXml(u)));
    if (replies.size() != 2 || replies[1].kind != proto::CpReply::Kind::kSetResult) return {};
    return replies[1];
  }
  static std::vector<std::string> urlsOf(const proto::UnsQmSet& s) {
    std::vector<std::string> out;
    for (const auto& n : s.urls) out.push_back(n.key.url);
    return out;
  }
  lcc::testing::SimClock sim_;
  ProviderFixture fx_{goldenProviders(sim_.now())};
  TempDir dir_;
};

TEST_F(UnsSpoolPartsTest, ASetWithTheQmAwayIsSpooledInPartsAndReplayedInPartsInBoundedMemory) {
  const std::uint16_t qm_port = unusedPort();
  Harness h(options(qm_port), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  const auto u = urls("away", 90000);  // ~6 MB of <url/>: about 100 times kBuffer
  auto r = sendSet(h.port(), u);
  ASSERT_TRUE(r.accepted);
  EXPECT_EQ(r.received, 90000u);
  Forwarder& fwd = h.server().forwarder();
  EXPECT_EQ(fwd.spooledSets(), 1u);
  EXPECT_GT(fwd.spoolBytes(), 10 * kHeldBound) << "the set is in the spool";
  EXPECT_LT(fwd.heldBytesMax(), kHeldBound) << "spooled as it came, never held whole";

  FakeQm qm(qm_port);
  ASSERT_TRUE(qm.waitApplied(1));
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 1u);
  EXPECT_TRUE(applied[0].header.streamed) << "replayed in parts, as a streamed set";
  EXPECT_EQ(urlsOf(applied[0]), u) << "the same URLs, in order";
  ASSERT_TRUE(eventually([&] { return fwd.spooledSets() == 0 && fwd.spoolBytes() == 0; }));
  EXPECT_LT(fwd.heldBytesMax(), kHeldBound) << "read back part by part, never whole";
  EXPECT_LT(folderBytes(dir_.path() + "/uns/journal"), kHeldBound) << "the journal was trimmed after the ack";
  EXPECT_EQ(qm.begun(), 1u);
}

TEST_F(UnsSpoolPartsTest, SetsInPartsAndWholeSetsAreReplayedInIdOrder) {
  const std::uint16_t qm_port = unusedPort();
  Harness h(options(qm_port), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(sendSet(h.port(), urls("a", 2)).accepted);     // whole
  ASSERT_TRUE(sendSet(h.port(), urls("b", 3000)).accepted);  // in parts
  ASSERT_TRUE(sendSet(h.port(), urls("c", 3)).accepted);     // whole
  ASSERT_TRUE(sendSet(h.port(), urls("d", 2500)).accepted);  // in parts
  EXPECT_EQ(h.server().forwarder().spooledSets(), 4u);
  FakeQm qm(qm_port);
  ASSERT_TRUE(qm.waitApplied(4));
  auto applied = qm.applied();
  ASSERT_EQ(applied.size(), 4u);
  const char* tags[] = {"a", "b", "c", "d"};
  const int sizes[] = {2, 3000, 3, 2500};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(urlsOf(applied[i]), urls(tags[i], sizes[i])) << i;
    EXPECT_EQ(applied[i].header.streamed, i % 2 == 1) << i;
    if (i > 0) {
      EXPECT_LT(applied[i - 1].header.id, applied[i].header.id);
    }
  }
  EXPECT_EQ(qm.received(), 4u) << "each sent once";
}

TEST_F(UnsSpoolPartsTest, ASetCutOffMidwayNeverReachesTheQmAlsoAfterARestart) {
  const std::uint16_t qm_port = unusedPort();
  const std::string whole = setXml(urls("cut", 3000));
  {
    Harness h(options(qm_port), fx_.store());
    ASSERT_TRUE(h.start().isOk());
    {
      HangingCp cp(h.port(), initXml(1) + whole.substr(0, whole.size() / 2));
      ASSERT_TRUE(cp.ok());
      ASSERT_TRUE(eventually([&] { return h.server().forwarder().spoolBytes() > kBuffer; })) << "parts spooled";
    }  // the CP goes away: the set is cut off (an A record)
    ASSERT_TRUE(eventually([&] { return h.server().forwarder().spoolBytes() == 0; }));
    ASSERT_TRUE(sendSet(h.port(), urls("after", 3)).accepted);
    EXPECT_EQ(h.server().forwarder().spooledSets(), 1u);
  }
  Harness h(options(qm_port), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  EXPECT_EQ(h.server().forwarder().spooledSets(), 1u) << "only the set that was accepted";
  FakeQm qm(qm_port);
  ASSERT_TRUE(qm.waitApplied(1));
  EXPECT_EQ(urlsOf(qm.applied()[0]), urls("after", 3));
  ASSERT_TRUE(eventually([&] { return h.server().forwarder().spooledSets() == 0; }));
  EXPECT_EQ(qm.begun(), 1u) << "nothing of the cut set was sent";
}

TEST_F(UnsSpoolPartsTest, APowerLossMidSetLeavesAnUnfinishedSetThatIsDropped) {
  const std::uint16_t qm_port = unusedPort();
  FaultEnv env(posixEnv());
  const std::string whole = setXml(urls("torn", 3000));
  {
    Harness h(options(qm_port), fx_.store(), &env);
    ASSERT_TRUE(h.start().isOk());
    const std::uint64_t syncs = env.syncCount();
    HangingCp cp(h.port(), initXml(1) + whole.substr(0, whole.size() / 2));
    ASSERT_TRUE(cp.ok());
    ASSERT_TRUE(eventually([&] { return env.syncCount() > syncs; })) << "parts written out and synced";
    env.crash();  // power lost while the CP was still sending: nothing more reaches the disk
  }
  env.clearFaults();
  FakeQm qm(qm_port);
  Harness h(options(qm_port), fx_.store(), &env);
  ASSERT_TRUE(h.start().isOk());
  EXPECT_EQ(h.server().forwarder().spooledSets(), 0u) << "a set without its end record is dropped";
  ASSERT_TRUE(sendSet(h.port(), urls("next", 3)).accepted);
  ASSERT_TRUE(qm.waitApplied(1));
  EXPECT_EQ(urlsOf(qm.applied()[0]), urls("next", 3));
  EXPECT_EQ(qm.begun(), 1u);
}

// The default buffer: the parts stay unwritten until the end record, so the first sync
// after the start is the one that makes the set durable.
TEST_F(UnsSpoolPartsTest, APowerLossAfterTheEndIsSyncedReplaysTheSetBeforeItDoesNot) {
  for (const bool fail_end_sync : {false, true}) {
    SCOPED_TRACE(fail_end_sync ? "the end record's sync fails" : "the end record is synced");
    TempDir dir;
    const std::uint16_t qm_port = unusedPort();
    FaultEnv env(posixEnv());
    UnsOptions o = testOptions(dir.path(), qm_port);
    o.session.stream_part_bytes = 2048;
    const auto u = urls("power", 3000);
    {
      Harness h(o, fx_.store(), &env);
      ASSERT_TRUE(h.start().isOk());
      if (fail_end_sync) env.failNthSync(1);
      auto r = sendSet(h.port(), u);
      EXPECT_EQ(r.accepted, !fail_end_sync);
      if (fail_end_sync) {
        EXPECT_EQ(r.code, ErrorCode::kOffline);
      }
      EXPECT_EQ(env.injectedFailures(), fail_end_sync ? 1u : 0u);
      h.stop();
      env.crash();
    }
    env.clearFaults();
    FakeQm qm(qm_port);
    Harness h(o, fx_.store(), &env);
    ASSERT_TRUE(h.start().isOk());
    if (fail_end_sync) {
      EXPECT_EQ(h.server().forwarder().spooledSets(), 0u);
      ASSERT_TRUE(sendSet(h.port(), urls("next", 2)).accepted);
      ASSERT_TRUE(qm.waitApplied(1));
      EXPECT_EQ(urlsOf(qm.applied()[0]), urls("next", 2)) << "the refused set was not replayed";
      EXPECT_EQ(qm.begun(), 1u);
    } else {
      ASSERT_TRUE(qm.waitApplied(1));
      EXPECT_EQ(urlsOf(qm.applied()[0]), u);
    }
  }
}

TEST_F(UnsSpoolPartsTest, TheSpoolFillingUpMidSetRefusesItWith130) {
  const std::uint16_t qm_port = unusedPort();
  Harness h(options(qm_port, 64u << 10), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  auto r = sendSet(h.port(), urls("big", 3000));  // ~190 KB
  EXPECT_FALSE(r.accepted);
  EXPECT_EQ(r.code, ErrorCode::kOffline);
  Forwarder& fwd = h.server().forwarder();
  EXPECT_EQ(fwd.spooledSets(), 0u);
  EXPECT_EQ(fwd.spoolBytes(), 0u);
  EXPECT_FALSE(fwd.spoolFull()) << "the cut set's bytes were trimmed: nothing waits before them";
  ASSERT_TRUE(sendSet(h.port(), urls("small", 3)).accepted);
  FakeQm qm(qm_port);
  ASSERT_TRUE(qm.waitApplied(1));
  EXPECT_EQ(urlsOf(qm.applied()[0]), urls("small", 3));
  EXPECT_EQ(qm.begun(), 1u);
}

TEST_F(UnsSpoolPartsTest, BytesOfACutSetCountAgainstTheLimitWhileASetWaitsBeforeThem) {
  const std::uint16_t qm_port = unusedPort();
  Harness h(options(qm_port, 256u << 10), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  ASSERT_TRUE(sendSet(h.port(), urls("first", 3)).accepted);  // waits, so nothing behind it is trimmed
  EXPECT_FALSE(sendSet(h.port(), urls("big", 6000)).accepted);  // ~380 KB: cut off at the limit
  EXPECT_TRUE(h.server().forwarder().spoolFull()) << "its bytes are still on disk";
  EXPECT_FALSE(sendSet(h.port(), urls("more", 3)).accepted);
  FakeQm qm(qm_port);
  ASSERT_TRUE(qm.waitApplied(1));
  ASSERT_TRUE(eventually([&] { return !h.server().forwarder().spoolFull(); })) << "trimmed after the ack";
  ASSERT_TRUE(sendSet(h.port(), urls("later", 3)).accepted);
  ASSERT_TRUE(qm.waitApplied(2));
  EXPECT_EQ(urlsOf(qm.applied()[1]), urls("later", 3));
}

}  // namespace
}  // namespace lcc::uns
