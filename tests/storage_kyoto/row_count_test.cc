// row_count_test.cc — storage-kyoto counts queue rows without a lookup per row (issue
// 28, "apply cost flat in queue size"): entryCount() is queue.kch's own record count
// plus the unsynced overlay, not a counter row kept by reading each row before it is
// written; and a key the absent-key filter never saw is answered without Kyoto.
//
// The count must stay exact across new rows, updates of existing rows, removals (of
// rows that exist and rows that never did), reopening, and a crash without a clean
// close (Kyoto recounts a file it repairs; redo re-applies the synced batches).
#include <gtest/gtest.h>
#include <kchashdb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include "key_filter.h"
#include "support/store_plugin_fixture.h"

namespace lcc::testing {
namespace {

class KyotoRowCountTest : public StorePluginFixture {
 protected:
  KyotoRowCountTest()
      : StorePluginFixture("storage-kyoto", {{"buckets", "1024"}, {"mmap_size", "1MiB"}, {"page_cache", "1MiB"}}) {}

  static QueueEntry row(int n, std::uint64_t size = 1) {
    QueueEntry e;
    e.notice.key = UrlKey{1 + static_cast<ProviderId>(n % 5), "http://count.test/" + std::to_string(n), "text/html"};
    e.notice.size = size;
    e.pset = 1;
    return e;
  }
  static std::string key(int n) { return encodeUrlKey(row(n).notice.key); }
  static std::uint64_t count(QueueStore& q) {
    auto c = q.entryCount();
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.valueOr(~0ull);
  }
};

TEST_F(KyotoRowCountTest, CountStaysExactAcrossNewRowsUpdatesAndRemovals) {
  auto q = openQueue();
  QueueBatch a;
  for (int n = 0; n < 100; ++n) a.putEntry(row(n));
  ASSERT_TRUE(q->apply(a).isOk());
  EXPECT_EQ(count(*q), 100u);  // unsynced: counted from the overlay
  ASSERT_TRUE(q->sync().isOk());
  EXPECT_EQ(count(*q), 100u);  // synced: Kyoto's own count

  QueueBatch b;  // 50 updates, 10 new rows, one new row put twice
  for (int n = 50; n < 110; ++n) b.putEntry(row(n, 2));
  b.putEntry(row(200));
  b.putEntry(row(200, 3));
  ASSERT_TRUE(q->apply(b).isOk());
  EXPECT_EQ(count(*q), 111u);

  QueueBatch c;  // 20 removals of rows, 5 of rows that never were, a row made and removed
  for (int n = 0; n < 20; ++n) c.removeEntry(key(n));
  for (int n = 1000; n < 1005; ++n) c.removeEntry(key(n));
  c.putEntry(row(300));
  c.removeEntry(key(300));
  ASSERT_TRUE(q->apply(c).isOk());
  EXPECT_EQ(count(*q), 91u);
  ASSERT_TRUE(q->sync().isOk());
  EXPECT_EQ(count(*q), 91u);

  QueueBatch d;  // removed rows come back; a removal repeated
  for (int n = 0; n < 10; ++n) d.putEntry(row(n));
  d.removeEntry(key(1000));
  d.removeEntry(key(20));
  d.removeEntry(key(20));
  ASSERT_TRUE(q->apply(d).isOk());
  EXPECT_EQ(count(*q), 100u);
  ASSERT_TRUE(q->close().isOk());

  auto again = openQueue();
  EXPECT_EQ(count(*again), 100u);
  EXPECT_TRUE(again->getEntry(key(5)).value().has_value());
  EXPECT_FALSE(again->getEntry(key(15)).value().has_value());
  EXPECT_FALSE(again->getEntry(key(300)).value().has_value());
  EXPECT_EQ(again->getEntry(key(200)).value()->notice.size, 3u);
}

TEST_F(KyotoRowCountTest, CountIsExactAfterACrashWithoutClose) {
  {
    auto q = openQueue();
    QueueBatch a;
    for (int n = 0; n < 300; ++n) a.putEntry(row(n));
    ASSERT_TRUE(q->apply(a).isOk());
    ASSERT_TRUE(q->close().isOk());  // checkpointed: Kyoto holds 300 rows
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child writes synced and unsynced batches, then dies without closing anything:
    // the Kyoto files stay open (repaired at the next open), the journal holds the synced.
    auto q = openQueue();
    QueueBatch b;
    for (int n = 250; n < 400; ++n) b.putEntry(row(n, 2));  // 50 updates, 100 new
    for (int n = 0; n < 30; ++n) b.removeEntry(key(n));
    bool ok = q->apply(b).isOk() && q->sync().isOk();
    QueueBatch lost;
    for (int n = 1000; n < 1100; ++n) lost.putEntry(row(n));
    ok = ok && q->apply(lost).isOk();
    std::_Exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto q = openQueue();
  EXPECT_FALSE(q->openInfo().clean_shutdown);
  EXPECT_EQ(count(*q), 370u);
  EXPECT_FALSE(q->getEntry(key(1000)).value().has_value());
  EXPECT_EQ(q->getEntry(key(399)).value()->notice.size, 2u);
  std::size_t scanned = 0;
  ASSERT_TRUE(q->scanEntries([&](const QueueEntry&) { return ++scanned, true; }).isOk());
  EXPECT_EQ(scanned, 370u);
}

// An earlier version kept the count in a row of queue.kct ('N'). A stale one (a row
// counter that disagrees with the rows) no longer decides the count, and the first
// batch removes it.
TEST_F(KyotoRowCountTest, AStaleCounterRowOfAnEarlierVersionIsIgnoredAndRemoved) {
  {
    auto q = openQueue();
    QueueBatch a;
    for (int n = 0; n < 40; ++n) a.putEntry(row(n));
    ASSERT_TRUE(q->apply(a).isOk());
    ASSERT_TRUE(q->close().isOk());
  }
  {
    kyotocabinet::TreeDB db;
    ASSERT_TRUE(db.open(dir_.file("queue.kct"), kyotocabinet::BasicDB::OWRITER));
    ASSERT_TRUE(db.set("N", std::string("\0\0\0\0\0\0\0\x07", 8)));  // says 7 rows
    ASSERT_TRUE(db.close());
  }
  {
    auto q = openQueue();
    EXPECT_EQ(count(*q), 40u);
    QueueBatch b;
    b.putEntry(row(40));
    ASSERT_TRUE(q->apply(b).isOk());
    EXPECT_EQ(count(*q), 41u);
    ASSERT_TRUE(q->close().isOk());
  }
  kyotocabinet::TreeDB db;
  ASSERT_TRUE(db.open(dir_.file("queue.kct"), kyotocabinet::BasicDB::OREADER));
  EXPECT_LT(db.check("N"), 0) << "the counter row of the earlier version is still there";
  db.close();
}

// Rows are found whatever the absent-key filter holds: after a rebuild of the hash
// file (a new filter), a reopen (built from the file), and with the filter off.
TEST_F(KyotoRowCountTest, EveryRowIsFoundThroughTheFilterAfterRebuildAndReopen) {
  for (const char* bits : {"16", "1", "0"}) {
    SCOPED_TRACE(std::string("key_filter ") + bits);
    const std::map<std::string, std::string> opts{{"key_filter", bits}, {"dir", std::string("f") + bits}};
    {
      auto q = openQueue(opts);
      for (int first = 0; first < 5000; first += 500) {  // past 2 rows a bucket: rebuilt
        QueueBatch b;
        for (int n = first; n < first + 500; ++n) b.putEntry(row(n));
        ASSERT_TRUE(q->apply(b).isOk());
        ASSERT_TRUE(q->sync().isOk());
      }
      for (int n = 0; n < 5000; n += 7) ASSERT_TRUE(q->getEntry(key(n)).value().has_value()) << n;
      ASSERT_TRUE(q->close().isOk());
    }
    auto q = openQueue(opts);
    EXPECT_EQ(count(*q), 5000u);
    for (int n = 0; n < 5000; ++n) ASSERT_TRUE(q->getEntry(key(n)).value().has_value()) << n;
    for (int n = 5000; n < 5100; ++n) EXPECT_FALSE(q->getEntry(key(n)).value().has_value());
  }
}

TEST(KeyFilterTest, NeverAnswersAbsentForAnAddedKeyAndRarelyPresentForAnother) {
  plugins::kyoto::KeyFilter f;
  EXPECT_TRUE(f.mayContain("anything")) << "an unsized filter answers 'may be present'";
  f.reset(16 * 20000);
  for (int n = 0; n < 20000; ++n) f.add("http://filter.test/" + std::to_string(n));
  for (int n = 0; n < 20000; ++n) ASSERT_TRUE(f.mayContain("http://filter.test/" + std::to_string(n))) << n;
  int false_positives = 0;
  for (int n = 20000; n < 40000; ++n) false_positives += f.mayContain("http://filter.test/" + std::to_string(n));
  EXPECT_LT(false_positives, 400) << "more than 2 % false 'may be present' at 16 bits a key";
  f.reset(0);
  EXPECT_TRUE(f.mayContain("http://filter.test/1"));
}

// The filter is the size asked for: 16 bits a bucket just past a power of two (a queue
// rebuilt for a little over 16M buckets) took twice that when the size was rounded up.
TEST(KeyFilterTest, TakesTheBitsAskedForNotTheNextPowerOfTwo) {
  plugins::kyoto::KeyFilter f;
  const std::uint64_t bits = 16ull * ((1ull << 20) + 3);  // 1M + 3 buckets
  f.reset(bits);
  EXPECT_EQ(f.bytes(), (bits + 63) / 64 * 8);
  for (int n = 0; n < 30000; ++n) f.add("http://size.test/" + std::to_string(n));
  for (int n = 0; n < 30000; ++n) ASSERT_TRUE(f.mayContain("http://size.test/" + std::to_string(n))) << n;
}

}  // namespace
}  // namespace lcc::testing
