// The UNS spool under injected faults (issue 15 §2, "Injected faults"): with its QM away
// every set goes to the spool, and the Nth spool write, the Nth sync, or a disk that
// fills up at the Nth byte (a short write) fails, for every N a short scenario reaches.
// Then the UNS ends, the machine loses power or not, a new UNS starts on the same
// folder and replays to a QM that is back. Every set answered set_accepted reaches the
// QM whole; a set answered 130 may reach it (its bytes may have landed) but never in
// part; nothing else does. The last set is large enough to be spooled in parts.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "common/posix_env.h"
#include "support/fault_env.h"
#include "support/temp_dir.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;
using lcc::testing::FaultEnv;
using lcc::testing::TempDir;

constexpr int kSets = 7;
constexpr int kPartsUrls = 100;  // the last set: a few parts of 2048 bytes

std::vector<std::string> setUrls(int i) {
  std::vector<std::string> out;
  const int n = i == kSets - 1 ? kPartsUrls : i % 3 + 1;
  for (int k = 0; k < n; ++k) out.push_back("http://www.server.com/s" + std::to_string(i) + "/" + std::to_string(k));
  return out;
}

UnsOptions sweepOptions(const std::string& dir, std::uint16_t qm_port) {
  UnsOptions o = testOptions(dir, qm_port);
  o.session.stream_part_bytes = 2048;
  return o;
}

struct Sent {
  std::vector<std::vector<std::string>> accepted, refused;
};

class UnsSpoolFaultSweep : public ::testing::Test {
 protected:
  // One UNS with its QM away: kSets sets, one session each, after `arm` set the fault.
  Sent spoolSets(FaultEnv& env, const std::string& dir, std::uint16_t qm_port, const std::function<void()>& arm) {
    Sent sent;
    Harness h(sweepOptions(dir, qm_port), fx_.store(), &env);
    EXPECT_TRUE(h.start().isOk());
    arm();
    for (int i = 0; i < kSets; ++i) {
      auto r = parseReplies(cpExchange(h.port(), initXml(1) + setXml(setUrls(i))));
      const bool ok = r.size() == 2 && r[1].kind == proto::CpReply::Kind::kSetResult && r[1].accepted;
      if (!ok && r.size() == 2) {
        EXPECT_EQ(r[1].code, ErrorCode::kOffline) << "set " << i;
      }
      (ok ? sent.accepted : sent.refused).push_back(setUrls(i));
    }
    return sent;
  }

  // A new UNS on the same folder replays to a QM that is back; the checks of the header.
  void replayAndCheck(FaultEnv& env, const std::string& dir, std::uint16_t qm_port, const Sent& sent) {
    env.clearFaults();
    FakeQm qm(qm_port);
    Harness h(sweepOptions(dir, qm_port), fx_.store(), &env);
    ASSERT_TRUE(h.start().isOk());
    ASSERT_TRUE(qm.waitApplied(sent.accepted.size()));
    ASSERT_TRUE(eventually([&] { return h.server().forwarder().spooledSets() == 0; }));
    std::set<std::vector<std::string>> applied, known;
    for (const auto& s : qm.applied()) {
      if (s.urls.size() == kPartsUrls) {
        EXPECT_TRUE(s.header.streamed) << "replayed as it was spooled, in parts";
      }
      std::vector<std::string> u;
      for (const auto& n : s.urls) u.push_back(n.key.url);
      applied.insert(u);
    }
    for (const auto& s : sent.accepted) {
      EXPECT_TRUE(applied.count(s)) << s.front() << ": accepted and not replayed whole";
      known.insert(s);
    }
    for (const auto& s : sent.refused) known.insert(s);
    for (const auto& s : applied) EXPECT_TRUE(known.count(s)) << s.front() << ": a set reached the QM in part";
  }

  // Sweeps faults 1..n of one kind; `arm(env, k)` sets the k-th.
  int sweep(int n, const std::function<void(FaultEnv&, int)>& arm) {
    int runs = 0;
    for (int power_loss = 0; power_loss < 2; ++power_loss) {
      for (int k = 1; k <= n; ++k) {
        SCOPED_TRACE("fault " + std::to_string(k) + (power_loss ? ", then a power loss" : ", then a restart"));
        TempDir dir;
        FaultEnv env(posixEnv());
        const std::uint16_t qm_port = unusedPort();
        Sent sent = spoolSets(env, dir.path(), qm_port, [&] { arm(env, k); });
        EXPECT_GE(env.injectedFailures(), 1u);
        refused_ += sent.refused.size();
        if (power_loss) env.crash(); else env.forgetUnsynced();
        replayAndCheck(env, dir.path(), qm_port, sent);
        ++runs;
      }
    }
    return runs;
  }

  // What a clean run writes after start: appends, syncs, bytes.
  void countCleanRun(std::uint64_t* writes, std::uint64_t* syncs, std::uint64_t* bytes) {
    TempDir dir;
    FaultEnv env(posixEnv());
    std::uint64_t w0 = 0, s0 = 0, b0 = 0;
    Sent sent = spoolSets(env, dir.path(), unusedPort(), [&] {
      w0 = env.writeCount();
      s0 = env.syncCount();
      b0 = env.bytesWritten();
    });
    ASSERT_EQ(sent.accepted.size(), static_cast<std::size_t>(kSets));
    *writes = env.writeCount() - w0;
    *syncs = env.syncCount() - s0;
    *bytes = env.bytesWritten() - b0;
  }

  lcc::testing::SimClock sim_;
  ProviderFixture fx_{goldenProviders(sim_.now())};
  std::size_t refused_ = 0;  // sets answered 130 over a sweep: the faults reached the spool
};

TEST_F(UnsSpoolFaultSweep, EverySpoolWriteAndSyncFailedInTurn) {
  std::uint64_t writes = 0, syncs = 0, bytes = 0;
  countCleanRun(&writes, &syncs, &bytes);
  ASSERT_GE(writes, static_cast<std::uint64_t>(kSets));
  ASSERT_GE(syncs, static_cast<std::uint64_t>(kSets));
  int runs = sweep(static_cast<int>(writes), [](FaultEnv& env, int k) { env.failNthWrite(k); });
  runs += sweep(static_cast<int>(syncs), [](FaultEnv& env, int k) { env.failNthSync(k); });
  RecordProperty("spool_io_swept", runs);
  EXPECT_GE(refused_, static_cast<std::size_t>(runs));  // each fault cost at least one set its 130
}

TEST_F(UnsSpoolFaultSweep, AFullDiskAtEveryStepOfTheSpoolsBytes) {
  std::uint64_t writes = 0, syncs = 0, bytes = 0;
  countCleanRun(&writes, &syncs, &bytes);
  const std::uint64_t step = std::max<std::uint64_t>(1, bytes / 24);
  const int runs = sweep(24, [&](FaultEnv& env, int k) { env.diskFullAfterBytes(static_cast<std::uint64_t>(k - 1) * step); });
  RecordProperty("full_disk_offsets_swept", runs);
  EXPECT_GE(refused_, static_cast<std::size_t>(runs));
}

}  // namespace
}  // namespace lcc::uns
