// rehash_test.cc — storage-kyoto rebuilds its hash file (queue.kch) with more buckets
// when the rows outgrow them (issue 28, "apply cost flat in queue size").
//
// Kyoto fixes a HashDB's bucket count when the file is made; each bucket is a tree of
// its rows, so every lookup of a large queue in a file made for a small one reads
// several records (qm_bench fill: 10M URLs in 2M buckets ran at 0.42x the rate of 1M).
// The bucket count is read from the file itself with Kyoto's own status call.
#include <gtest/gtest.h>
#include <kchashdb.h>

#include <map>
#include <string>

#include "common/posix_env.h"
#include "support/store_plugin_fixture.h"

namespace lcc::testing {
namespace {

class KyotoRehashTest : public StorePluginFixture {
 protected:
  KyotoRehashTest()
      : StorePluginFixture("storage-kyoto", {{"buckets", "1024"}, {"mmap_size", "1MiB"}, {"page_cache", "1MiB"}}) {}

  static QueueEntry row(int n) {
    QueueEntry e;
    e.notice.key = UrlKey{1 + static_cast<ProviderId>(n % 7), "http://rehash.test/p/" + std::to_string(n), "text/html"};
    e.notice.mtime = 1700000000 + n;
    e.notice.size = static_cast<std::uint64_t>(n);
    e.pset = 1 + static_cast<PSetId>(n / 500);
    return e;
  }

  // Puts rows [from, to) in batches of 500, each synced as the QM's checkpoints do.
  static void putRows(QueueStore& q, int from, int to) {
    for (int first = from; first < to; first += 500) {
      QueueBatch b;
      for (int n = first; n < first + 500 && n < to; ++n) b.putEntry(row(n));
      ASSERT_TRUE(q.apply(b).isOk());
      ASSERT_TRUE(q.sync().isOk());
    }
  }

  static void expectRows(QueueStore& q, int rows) {
    EXPECT_EQ(q.entryCount().value(), static_cast<std::uint64_t>(rows));
    int seen = 0;
    ASSERT_TRUE(q.scanEntries([&](const QueueEntry&) { return ++seen, true; }).isOk());
    EXPECT_EQ(seen, rows);
    for (int n = 0; n < rows; ++n) {
      auto got = q.getEntry(encodeUrlKey(row(n).notice.key));
      ASSERT_TRUE(got.isOk() && got.value()) << n;
      EXPECT_EQ(got.value()->notice.size, static_cast<std::uint64_t>(n));
      EXPECT_EQ(got.value()->pset, row(n).pset);
    }
  }

  // The bucket count of the closed queue.kch, from Kyoto.
  std::int64_t buckets() {
    kyotocabinet::HashDB db;
    EXPECT_TRUE(db.open(dir_.file("queue.kch"), kyotocabinet::BasicDB::OREADER));
    std::map<std::string, std::string> status;
    EXPECT_TRUE(db.status(&status));
    db.close();
    return std::atoll(status["bnum"].c_str());
  }
};

TEST_F(KyotoRehashTest, HashFileGetsMoreBucketsWhenItsRowsOutgrowThem) {
  {
    auto q = openQueue();
    putRows(*q, 0, 6000);  // 6,000 rows against 1,024 buckets: past 2 a bucket at 2,049
    expectRows(*q, 6000);
    ASSERT_TRUE(q->close().isOk());
  }
  // Rebuilt with twice the rows it had then (at least 4,098), and grown again at 4x that.
  const std::int64_t after = buckets();
  EXPECT_GE(after, 4098) << "still " << after << " buckets for 6,000 rows";
  EXPECT_LT(6000, 2 * after + 1);
  auto q = openQueue();
  EXPECT_TRUE(q->openInfo().clean_shutdown);
  expectRows(*q, 6000);
  ASSERT_TRUE(q->close().isOk());
}

TEST_F(KyotoRehashTest, RehashLoadZeroKeepsTheBucketsTheFileWasMadeWith) {
  auto q = openQueue({{"rehash_load", "0"}});
  putRows(*q, 0, 6000);
  ASSERT_TRUE(q->close().isOk());
  EXPECT_EQ(buckets(), 1024);
}

// Synced batches after a rebuild survive a stop without close(); nothing is lost or doubled.
TEST_F(KyotoRehashTest, RowsSurviveAnUncleanStopAfterARebuild) {
  {
    auto q = openQueue();
    putRows(*q, 0, 3000);
    QueueBatch b;
    b.removeEntry(encodeUrlKey(row(7).notice.key));
    b.putEntry(row(7));  // removed and put again in one batch
    ASSERT_TRUE(q->apply(b).isOk());
    ASSERT_TRUE(q->sync().isOk());
  }  // no close(): the redo journal holds what the checkpoints had not trimmed
  auto q = openQueue();
  EXPECT_FALSE(q->openInfo().clean_shutdown);
  EXPECT_FALSE(q->openInfo().may_have_lost_synced);
  expectRows(*q, 3000);
  ASSERT_TRUE(q->close().isOk());
  EXPECT_GE(buckets(), 4098);
}

// A crash during a rebuild leaves `queue.kch.new` beside the whole old file: the next
// open removes it and reads the old file.
TEST_F(KyotoRehashTest, ALeftoverRebuildFileIsRemovedAtOpen) {
  {
    auto q = openQueue({{"rehash_load", "0"}});
    putRows(*q, 0, 1000);
    ASSERT_TRUE(q->close().isOk());
  }
  ASSERT_TRUE(posixEnv()->writeFileAtomic(dir_.file("queue.kch.new"), std::string(5000, 'x')).isOk());
  auto q = openQueue();
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(posixEnv()->exists(dir_.file("queue.kch.new")));
  expectRows(*q, 1000);
  ASSERT_TRUE(q->close().isOk());
}

TEST_F(KyotoRehashTest, RehashLoadIsValidated) {
  EXPECT_TRUE(registry_.defaultOptions("storage-kyoto", {{"rehash_load", "0"}}).isOk());
  EXPECT_TRUE(registry_.defaultOptions("storage-kyoto", {{"rehash_load", "1000"}}).isOk());
  EXPECT_FALSE(registry_.defaultOptions("storage-kyoto", {{"rehash_load", "-1"}}).isOk());
  EXPECT_FALSE(registry_.defaultOptions("storage-kyoto", {{"rehash_load", "1001"}}).isOk());
}

}  // namespace
}  // namespace lcc::testing
