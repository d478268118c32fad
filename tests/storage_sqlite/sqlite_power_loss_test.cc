// storage-sqlite under simulated power loss (fault_vfs.h: nothing written after a
// file's last fsync survives) and failing fsyncs. kill -9 cannot catch a missing
// fsync; this can: it checks sync() really makes every earlier apply() durable,
// including across WAL checkpoints, and that a failed fsync makes the store sticky.
#include <random>

#include "fault_vfs.h"
#include "sqlite_test_util.h"

namespace lcc::testing {
namespace {

class SqlitePowerLossTest : public SqliteStoreTest {
 protected:
  QueueBatch batch(int n, int rows = 20) {
    QueueBatch b;
    for (int i = 0; i < rows; ++i) {
      QueueEntry e = makeEntry(1, "http://pl/" + std::to_string(n) + "/" + std::to_string(i), static_cast<PSetId>(n));
      e.notice.view_tag = std::string(300, 'v');  // fill pages, so checkpoints happen
      b.putEntry(e);
    }
    b.putMeta("last", std::to_string(n));
    return b;
  }
  // Rows per batch number, read back from a freshly opened store.
  std::map<int, int> batches(QueueStore& q) {
    std::map<int, int> out;
    EXPECT_TRUE(q.scanEntries([&](const QueueEntry& e) {
                   ++out[static_cast<int>(e.pset)];
                   return true;
                 }).isOk());
    return out;
  }
  // Pulls the plug: the store is dropped (nothing it does now reaches the disk) and
  // the files go back to what was last synced.
  template <typename Store>
  void powerLoss(Store& store) {
    vfs_.powerLoss();
    store.reset();
    vfs_.restore();
  }

  FaultVfs vfs_;  // before any store opens
};

TEST_F(SqlitePowerLossTest, WithoutSyncAnAppliedBatchIsNotDurable) {
  // The control case: it shows the simulation drops unsynced writes, so the next
  // test would notice a sync() that does not sync.
  auto q = openQueue();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->apply(batch(1)).isOk());
  powerLoss(q);
  auto again = openQueue();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->openInfo().clean_shutdown);
  EXPECT_EQ(*again->entryCount(), 0u);
  EXPECT_TRUE(batches(*again).empty());
}

TEST_F(SqlitePowerLossTest, SyncMakesEveryEarlierApplyDurable) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  for (int n = 1; n <= 5; ++n) ASSERT_TRUE(q->apply(batch(n)).isOk());
  ASSERT_TRUE(q->sync().isOk());
  ASSERT_TRUE(q->apply(batch(6)).isOk());  // not synced: may go
  powerLoss(q);
  auto again = openQueue();
  ASSERT_TRUE(again);
  auto got = batches(*again);
  for (int n = 1; n <= 5; ++n) EXPECT_EQ(got[n], 20) << "synced batch " << n;
  EXPECT_TRUE(got.count(6) == 0 || got[6] == 20) << "batch 6 partial";
  EXPECT_EQ(*again->getMeta("last"), std::optional<std::string>(got.count(6) ? "6" : "5"));
}

TEST_F(SqlitePowerLossTest, FullModeMakesEachApplyDurable) {
  auto q = openQueue({{"synchronous", "full"}});
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->apply(batch(1)).isOk());
  powerLoss(q);
  auto again = openQueue({{"synchronous", "full"}});
  EXPECT_EQ(batches(*again)[1], 20);
}

TEST_F(SqlitePowerLossTest, RandomPowerLossesAcrossCheckpointsLoseNothingSynced) {
  std::mt19937 rng(7);
  const std::map<std::string, std::string> small = {{"wal_autocheckpoint", "8"}, {"cache_size", "256KiB"}};
  int next = 1, synced_upto = 0;
  for (int round = 0; round < 15; ++round) {
    auto q = openQueue(small);
    ASSERT_TRUE(q);
    const int applies = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < applies; ++i) {
      ASSERT_TRUE(q->apply(batch(next++)).isOk());
      if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
        ASSERT_TRUE(q->sync().isOk());
        synced_upto = next - 1;
      }
    }
    powerLoss(q);
    auto check = openQueue(small);
    ASSERT_TRUE(check);
    auto got = batches(*check);
    int last = 0;
    for (const auto& [n, rows] : got) {
      EXPECT_EQ(rows, 20) << "round " << round << ": batch " << n << " is partial";
      last = std::max(last, n);
    }
    for (int n = 1; n <= synced_upto; ++n) ASSERT_EQ(got[n], 20) << "round " << round << ": synced batch " << n << " lost";
    // Batches are applied in order: what survived is a prefix.
    EXPECT_EQ(static_cast<int>(got.size()), last) << "round " << round;
    EXPECT_EQ(static_cast<int>(*check->entryCount()), last * 20);
    // Continue after what survived.
    next = last + 1;
    synced_upto = last;
    powerLoss(check);  // the check itself did not write anything
  }
}

TEST_F(SqlitePowerLossTest, ContentAndProviderStoresKeepWhatWasSynced) {
  {
    auto c = openContent();
    auto p = openProviders();
    ASSERT_TRUE(c && p);
    ContentBatch b;
    b.put(makeRecord(1, "http://pl/a", 1));
    ASSERT_TRUE(c->apply(b).isOk());
    ASSERT_TRUE(c->sync().isOk());
    ContentBatch b2;
    b2.put(makeRecord(1, "http://pl/b", 2));
    ASSERT_TRUE(c->apply(b2).isOk());
    ASSERT_EQ(*p->create(ProviderRecord{}), 1u);  // durable on return
    ProviderRecord r = **p->get(1);
    r.used_files = 5;
    ASSERT_TRUE(p->put(r, WriteOptions{.durable = false}).isOk());  // may go
    vfs_.powerLoss();
    c.reset();
    p.reset();
    vfs_.restore();
  }
  auto c = openContent();
  auto p = openProviders();
  ASSERT_TRUE(c && p);
  EXPECT_TRUE(c->get(encodeUrlKey(UrlKey{1, "http://pl/a", "text/html"}))->has_value());
  EXPECT_EQ(*c->maxSeq(), c->get(encodeUrlKey(UrlKey{1, "http://pl/b", "text/html"}))->has_value() ? 2u : 1u);
  ASSERT_TRUE(p->get(1)->has_value());
  EXPECT_EQ((*p->get(1))->used_files, 0u) << "the non-durable put was not synced by anything";
}

TEST_F(SqlitePowerLossTest, AFailedFsyncMakesTheStoreStickyFailed) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->apply(batch(1)).isOk());
  vfs_.failSyncs(1);
  Status s = q->sync();
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.toString();
  EXPECT_NE(s.message().find("queue.sqlite"), std::string::npos) << s.toString();
  // The disk works again, the store does not: the QM must raise cache-crash.
  EXPECT_EQ(q->apply(batch(2)).code(), StatusCode::kIOError);
  EXPECT_EQ(q->sync().code(), StatusCode::kIOError);
  EXPECT_FALSE(q->close().isOk());
  auto again = openQueue();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->openInfo().clean_shutdown);
}

TEST_F(SqlitePowerLossTest, AFailedWriteLeavesNoTraceOfTheBatchAndMakesTheStoreSticky) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->apply(batch(1)).isOk());
  ASSERT_TRUE(q->sync().isOk());
  vfs_.failWrites(1);
  Status s = q->apply(batch(2));
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kIOError) << s.toString();
  EXPECT_EQ(q->apply(batch(3)).code(), StatusCode::kIOError) << "sticky";
  EXPECT_EQ(q->sync().code(), StatusCode::kIOError);
  EXPECT_FALSE(q->getEntry(encodeUrlKey(UrlKey{1, "http://pl/2/0", "text/html"}))->has_value());
  q.reset();
  auto again = openQueue();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->openInfo().clean_shutdown);
  auto got = batches(*again);
  EXPECT_EQ(got[1], 20);
  EXPECT_EQ(got.count(2), 0u) << "the failed batch is not there, not even in part";
}

}  // namespace
}  // namespace lcc::testing
