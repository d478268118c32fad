// Injected faults swept over every I/O of a short scenario (issue 15 §2, "Injected
// faults"): the Nth write or sync of the QueueStore, of the ContentStore, or of the
// intake journal (through the fault-injecting Env) fails, for every N the scenario
// reaches. Each time: the QM turns failed and loud (cache-crash, every provider asked
// for a full set, the error counted), never acknowledges a set it did not sync, never
// spins; and after a power loss (FaultEnv::crash()) every set it acknowledged is
// replayed from the journal.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmFaultSweep : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    options_.checkpoint_bytes = 1ull << 30;  // the journal keeps every set: the replay checks them
  }
  // Three sets from two UNSes, fetched, then a removal; answers every fetch with success.
  void scenario() {
    int file = 0;
    auto submitSet = [&](ProviderId pid, std::uint64_t id, std::vector<UrlNotice> urls, const std::string& uns) {
      std::vector<std::string> names;
      for (const auto& u : urls) names.push_back(u.key.url);
      sets_.push_back({pid, names});
      qm_->submit(makeSet(pid, std::move(urls), id, SetKind::kPartial, uns),
                  [this, pid, names, id](bool ok, ErrorCode code, const std::string&) {
                    if (ok) {
                      EXPECT_FALSE(qm_->failed()) << "set " << id << " acked by a failed QM";
                      for (const auto& n : names) acked_[pid].insert(n);
                    } else {
                      EXPECT_EQ(code, ErrorCode::kOffline);
                    }
                  });
    };
    submitSet(1, 1, {update(1, "http://a/1"), update(1, "http://a/2"), update(1, "http://a/3")}, "m1/uns");
    submitSet(1, 2, {update(1, "http://a/4"), update(1, "http://a/5")}, "m1/uns");
    submitSet(2, 1, {update(2, "http://b/1"), update(2, "http://b/2")}, "m2/uns");
    qm_->linkUp(1, "m1", 4);
    for (int round = 0; round < 20; ++round) {
      auto f = botm_.takeFetches();
      if (f.empty()) break;
      for (const auto& x : f) qm_->onResult(x.link, okResult(x.order.id, "00/00/" + std::to_string(++file)));
    }
    submitSet(2, 2, {update(2, "http://b/3")}, "m2/uns");
    for (const auto& x : botm_.takeFetches()) qm_->onResult(x.link, okResult(x.order.id, "00/01/" + std::to_string(++file)));
  }
  void expectFailedLoudly() {
    EXPECT_TRUE(qm_->failed());
    EXPECT_TRUE(qm_->cacheCrash());
    for (ProviderId pid : {1u, 2u}) {
      auto r = stores_.providers->get(pid);
      ASSERT_TRUE(r.isOk() && r.value());
      EXPECT_TRUE(r.value()->fullset_wanted);
      EXPECT_EQ(r.value()->fullset_reason, FullSetReason::kCacheCrash);
    }
    EXPECT_GE(metrics_->snapshot()["lcc_qm_store_errors_total"], 1);
  }
  // Power loss: the engine, the journal and the (memory) stores are gone; what the
  // journal synced is replayed into new stores. Every acknowledged URL must be there.
  void expectAckedSetsSurviveACrash() {
    qm_.reset();
    journal_.reset();
    env_.crash();
    env_.clearFaults();
    (void)stores_.close();
    ASSERT_TRUE(stores_.open().isOk());
    addProviders(*stores_.providers, 2);
    queue_ = std::make_unique<FaultyQueueStore>(*stores_.queue);
    content_ = std::make_unique<FaultyContentStore>(*stores_.content);
    auto j = Journal::open(&env_, journal_path_);
    ASSERT_TRUE(j.isOk());
    journal_ = std::move(j).value();
    start();
    for (const auto& [pid, urls] : acked_) {
      for (const auto& u : urls) {
        auto row = stores_.queue->getEntry(encodeUrlKey({pid, u, "text/html"}));
        EXPECT_TRUE(row.isOk() && row.value()) << u << " was acknowledged and is lost";
      }
    }
  }

  // A set is in the queue whole or not at all (a torn journal record is never half applied).
  void expectNoPartialSet() {
    for (const auto& [pid, names] : sets_) {
      std::size_t there = 0;
      for (const auto& u : names) {
        auto row = stores_.queue->getEntry(encodeUrlKey({pid, u, "text/html"}));
        if (row.isOk() && row.value()) ++there;
      }
      EXPECT_TRUE(there == 0 || there == names.size())
          << "a set of " << names.size() << " URLs from provider " << pid << " is partly there (" << there << ")";
    }
  }

  std::map<ProviderId, std::set<std::string>> acked_;
  std::vector<std::pair<ProviderId, std::vector<std::string>>> sets_;
};

// How many writes (applies and syncs) of each store, and journal writes and syncs, a
// clean run makes; the sweeps below fail each one in turn.
TEST_F(QmFaultSweep, TheCleanScenarioAcksEverythingAndCountsItsIO) {
  start();
  const auto w0 = env_.writeCount(), s0 = env_.syncCount();
  const auto q0 = queue_->plan.writes(), c0 = content_->plan.writes();
  scenario();
  ASSERT_TRUE(qm_->checkpoint().isOk());
  EXPECT_FALSE(qm_->failed());
  EXPECT_EQ(acked_[1].size() + acked_[2].size(), 8u);
  EXPECT_GE(queue_->plan.writes() - q0, 10u);
  EXPECT_GE(content_->plan.writes() - c0, 5u);
  EXPECT_GE(env_.syncCount() - s0, 1u);
  RecordProperty("queue_writes", static_cast<int>(queue_->plan.writes() - q0));
  RecordProperty("content_writes", static_cast<int>(content_->plan.writes() - c0));
  RecordProperty("journal_writes", static_cast<int>(env_.writeCount() - w0));
  RecordProperty("journal_syncs", static_cast<int>(env_.syncCount() - s0));
}

TEST_F(QmFaultSweep, EveryStoreWriteOfTheScenarioFailedInTurn) {
  start();  // the faults are armed after open(): its writes are not counted
  const std::uint64_t q0 = queue_->plan.writes(), c0 = content_->plan.writes();
  scenario();
  ASSERT_TRUE(qm_->checkpoint().isOk());
  const std::uint64_t queue_writes = queue_->plan.writes() - q0, content_writes = content_->plan.writes() - c0;
  int swept = 0;
  for (int store = 0; store < 2; ++store) {
    const std::uint64_t n_max = store == 0 ? queue_writes : content_writes;
    for (std::uint64_t n = 0; n < n_max; ++n) {
      SCOPED_TRACE((store == 0 ? "queue store write " : "content store write ") + std::to_string(n + 1));
      fresh();
      acked_.clear();
      start();
      (store == 0 ? queue_->plan : content_->plan).failWritesAfter(static_cast<int>(n));
      scenario();
      EXPECT_FALSE(qm_->checkpoint().isOk());  // the write may be one of the checkpoint's syncs
      expectFailedLoudly();
      EXPECT_LT(queue_->plan.reads() + content_->plan.reads(), 5000u) << "a failed QM kept reading";
      expectAckedSetsSurviveACrash();
      ++swept;
    }
  }
  RecordProperty("store_writes_swept", swept);
  EXPECT_GE(swept, 15);
}

TEST_F(QmFaultSweep, EveryJournalWriteAndSyncOfTheScenarioFailedInTurn) {
  start();
  const auto w0 = env_.writeCount(), s0 = env_.syncCount();
  scenario();
  const int writes = static_cast<int>(env_.writeCount() - w0), syncs = static_cast<int>(env_.syncCount() - s0);
  int swept = 0;
  for (int kind = 0; kind < 2; ++kind) {
    for (int n = 1; n <= (kind == 0 ? writes : syncs); ++n) {
      SCOPED_TRACE((kind == 0 ? "journal write " : "journal sync ") + std::to_string(n));
      fresh();
      acked_.clear();
      start();
      if (kind == 0) env_.failNthWrite(n); else env_.failNthSync(n);
      scenario();
      EXPECT_GE(env_.injectedFailures(), 1u);
      expectFailedLoudly();
      expectAckedSetsSurviveACrash();
      ++swept;
    }
  }
  RecordProperty("journal_io_swept", swept);
  EXPECT_GE(swept, 2);
}

// ENOSPC: the disk fills up at the Nth byte the journal writes, so the write that
// crosses it is short (part of a record lands, as write(2) does). N is swept over the
// scenario's journal bytes. Then the process dies: after a power loss (unsynced bytes
// gone) and after a plain restart (the short write still in the file), every
// acknowledged URL is back and no set is half there.
TEST_F(QmFaultSweep, AFullDiskAtEveryByteOfTheJournal) {
  start();
  const std::uint64_t b0 = env_.bytesWritten();
  scenario();
  const std::uint64_t bytes = env_.bytesWritten() - b0;
  ASSERT_GT(bytes, 100u);
  const std::uint64_t step = std::max<std::uint64_t>(1, bytes / 48);
  int swept = 0;
  for (int power_loss = 0; power_loss < 2; ++power_loss) {
    for (std::uint64_t n = 0; n < bytes; n += step) {
      SCOPED_TRACE("disk full after " + std::to_string(n) + " of " + std::to_string(bytes) + " journal bytes" +
                   (power_loss ? ", then a power loss" : ", then a restart"));
      fresh();
      acked_.clear();
      sets_.clear();
      start();
      env_.diskFullAfterBytes(n);
      scenario();
      ASSERT_GE(env_.injectedFailures(), 1u);
      expectFailedLoudly();
      if (!power_loss) env_.forgetUnsynced();  // the process died; the kernel kept what it was given
      expectAckedSetsSurviveACrash();
      expectNoPartialSet();
      ++swept;
    }
  }
  RecordProperty("full_disk_offsets_swept", swept);
  EXPECT_GE(swept, 40);
}

// Issue 25: a journal file that cannot be opened for want of a descriptor (EMFILE) is an
// overload: the set waits unacked, nothing fails, no cache-crash; when descriptors are
// back, the retry (kStoreRetry on the clock) writes the set and acks it.
TEST_F(QmFaultSweep, OutOfDescriptorsDelaysTheAckAndFailsNothing) {
  start();
  env_.outOfDescriptors(true);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1, SetKind::kPartial, "m1/uns"));
  EXPECT_TRUE(acks_.empty());
  EXPECT_FALSE(qm_->failed());
  EXPECT_FALSE(qm_->cacheCrash());
  clock_.advance(kStoreRetry);  // still out of descriptors: tried, waits again
  EXPECT_TRUE(acks_.empty());
  env_.outOfDescriptors(false);
  clock_.advance(kStoreRetry);
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_TRUE(acks_[0]);
  EXPECT_FALSE(qm_->failed());
  EXPECT_FALSE(qm_->cacheCrash());
  auto row = stores_.queue->getEntry(encodeUrlKey({1, "http://a/2", "text/html"}));
  EXPECT_TRUE(row.isOk() && row.value());
  for (ProviderId pid : {1u, 2u}) EXPECT_FALSE(stores_.providers->get(pid).value()->fullset_wanted);
}

}  // namespace
}  // namespace lcc::qm
