// storage-sqlite QueueStore: rows round-trip, orders, atomic batches, sticky failure.
#include <limits>

#include "sqlite_test_util.h"

namespace lcc::testing {
namespace {

using SqliteQueueTest = SqliteStoreTest;

std::vector<QueueEntry> allEntries(QueueStore& q) {
  std::vector<QueueEntry> out;
  EXPECT_TRUE(q.scanEntries([&](const QueueEntry& e) {
                 out.push_back(e);
                 return true;
               }).isOk());
  return out;
}

TEST_F(SqliteQueueTest, EverythingRoundTripsAcrossReopen) {
  QueueEntry a = makeEntry(7, "http://s/a");
  a.notice.browse = "";  // not browsable
  a.notice.fetch = "http://s/a?lococa";
  a.next = encodeUrlKey(UrlKey{7, "http://s/b", "text/html"});
  a.bad_count = 3;
  a.op = QueueOp::kNothing;
  QueueEntry b = makeEntry(7, "http://s/b");
  b.notice.op = UrlOp::kDelete;
  b.notice.mtime.reset();
  b.notice.size.reset();
  b.notice.size = std::numeric_limits<std::uint64_t>::max();  // u64 extremes survive
  PSetRecord ps{1, 5, 7, -3, encodeUrlKey(a.notice.key), encodeUrlKey(b.notice.key), 2};
  DeleteRequest del{"m2", "00/01/ff", fromUnixMillis(1714564800999)};
  {
    auto q = openQueue();
    ASSERT_TRUE(q);
    QueueBatch batch;
    batch.putEntry(a);
    batch.putEntry(b);
    batch.putPSet(ps);
    batch.putDelete(del);
    batch.putMeta("next_pset", std::string("\x00\x01", 2));
    ASSERT_TRUE(q->apply(batch).isOk());
    ASSERT_TRUE(q->close().isOk());
  }
  auto q = openQueue();
  ASSERT_TRUE(q);
  auto ga = q->getEntry(encodeUrlKey(a.notice.key));
  ASSERT_TRUE(ga.isOk());
  ASSERT_TRUE(ga->has_value());
  EXPECT_EQ(**ga, a);
  auto gb = q->getEntry(encodeUrlKey(b.notice.key));
  ASSERT_TRUE(gb.isOk() && gb->has_value());
  EXPECT_EQ(**gb, b);
  EXPECT_EQ(*q->entryCount(), 2u);
  auto gp = q->getPSet(1, 5);
  ASSERT_TRUE(gp.isOk() && gp->has_value());
  EXPECT_EQ(**gp, ps);
  std::vector<DeleteRequest> dels;
  ASSERT_TRUE(q->scanDeletes(std::nullopt, [&](const DeleteRequest& d) {
                 dels.push_back(d);
                 return true;
               }).isOk());
  ASSERT_EQ(dels.size(), 1u);
  EXPECT_EQ(dels[0], del);
  auto meta = q->getMeta("next_pset");
  ASSERT_TRUE(meta.isOk() && meta->has_value());
  EXPECT_EQ(**meta, std::string("\x00\x01", 2));
  EXPECT_FALSE(q->getMeta("absent")->has_value());
}

TEST_F(SqliteQueueTest, PutReplacesAndRemoveForgets) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  QueueBatch b1;
  b1.putEntry(makeEntry(1, "http://s/a"));
  b1.putEntry(makeEntry(1, "http://s/b"));
  ASSERT_TRUE(q->apply(b1).isOk());
  QueueEntry changed = makeEntry(1, "http://s/a", 9, 4);
  changed.bad_count = 1;
  QueueBatch b2;
  b2.putEntry(changed);
  b2.removeEntry(encodeUrlKey(UrlKey{1, "http://s/b", "text/html"}));
  b2.removeEntry(encodeUrlKey(UrlKey{1, "http://s/never", "text/html"}));  // absent: nothing happens
  ASSERT_TRUE(q->apply(b2).isOk());
  auto all = allEntries(*q);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0], changed);
  EXPECT_EQ(*q->entryCount(), 1u);
  ASSERT_TRUE(q->close().isOk());
  auto again = openQueue();
  EXPECT_EQ(*again->entryCount(), 1u) << "the row count is stored with the rows";
}

TEST_F(SqliteQueueTest, PSetScansAreOrderedAndFilteredBySlot) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  QueueBatch b;
  // Inserted out of order; more than one scan chunk (512) in total.
  for (PSetId p = 700; p >= 1; --p) {
    b.putPSet(PSetRecord{p, static_cast<TimeSlot>(p % 3) - 1, 1, 0, "f", "l", p});
  }
  b.putPSet(PSetRecord{5, 7, 1, 0, "f", "l", 1});
  b.removePSet(6, static_cast<TimeSlot>(6 % 3) - 1);
  ASSERT_TRUE(q->apply(b).isOk());

  std::vector<std::pair<PSetId, TimeSlot>> all;
  ASSERT_TRUE(q->scanPSets(std::nullopt, [&](const PSetRecord& r) {
                 all.emplace_back(r.pset, r.slot);
                 return true;
               }).isOk());
  EXPECT_EQ(all.size(), 700u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));

  std::vector<PSetId> slot0;
  ASSERT_TRUE(q->scanPSets(0, [&](const PSetRecord& r) {
                 EXPECT_EQ(r.slot, 0);
                 slot0.push_back(r.pset);
                 return true;
               }).isOk());
  EXPECT_EQ(slot0.size(), 234u);  // p % 3 == 1 for p in 1..700
  EXPECT_TRUE(std::is_sorted(slot0.begin(), slot0.end()));

  int seen = 0;
  ASSERT_TRUE(q->scanPSets(kSlotNow, [&](const PSetRecord&) { return ++seen < 10; }).isOk());
  EXPECT_EQ(seen, 10) << "a scan stops when the callback says so";
  EXPECT_FALSE(q->getPSet(6, -1)->has_value());
}

TEST_F(SqliteQueueTest, DeleteScansByMachineInFilenameOrder) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  QueueBatch b;
  for (int i = 0; i < 600; ++i) {
    b.putDelete(DeleteRequest{i % 2 ? "m2" : "m1", "f" + std::to_string(1000 - i), fromUnixMillis(i)});
  }
  b.putDelete(DeleteRequest{"m1", "", fromUnixMillis(0)});  // an empty name is still a row
  b.removeDelete("m2", "f999");
  ASSERT_TRUE(q->apply(b).isOk());
  std::vector<std::string> m1;
  ASSERT_TRUE(q->scanDeletes(std::string("m1"), [&](const DeleteRequest& d) {
                 EXPECT_EQ(d.machine, "m1");
                 m1.push_back(d.filename);
                 return true;
               }).isOk());
  EXPECT_EQ(m1.size(), 301u);
  EXPECT_EQ(m1.front(), "");
  EXPECT_TRUE(std::is_sorted(m1.begin(), m1.end()));
  std::vector<std::pair<std::string, std::string>> all;
  ASSERT_TRUE(q->scanDeletes(std::nullopt, [&](const DeleteRequest& d) {
                 all.emplace_back(d.machine, d.filename);
                 return true;
               }).isOk());
  EXPECT_EQ(all.size(), 600u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST_F(SqliteQueueTest, AFailedBatchChangesNothingAndTheStoreStaysFailed) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  QueueBatch good;
  good.putEntry(makeEntry(1, "http://s/kept"));
  ASSERT_TRUE(q->apply(good).isOk());
  QueueBatch bad;
  bad.putEntry(makeEntry(1, "http://s/x"));
  bad.putPSet(PSetRecord{3, 1, 1, 0, "f", "l", 1});
  bad.removeEntry("not an encoded key");
  Status s = q->apply(bad);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(q->getEntry(encodeUrlKey(UrlKey{1, "http://s/x", "text/html"}))->has_value());
  EXPECT_FALSE(q->getPSet(3, 1)->has_value());
  EXPECT_EQ(*q->entryCount(), 1u);
  // Sticky: later writes return the same error; reads still work.
  EXPECT_EQ(q->apply(good).code(), s.code());
  EXPECT_EQ(q->sync().code(), s.code());
  EXPECT_TRUE(q->getEntry(encodeUrlKey(UrlKey{1, "http://s/kept", "text/html"}))->has_value());
  EXPECT_FALSE(q->close().isOk()) << "close reports the failure";
  auto again = openQueue();
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->openInfo().clean_shutdown) << "a failed store is not closed cleanly";
  EXPECT_EQ(*again->entryCount(), 1u);
}

TEST_F(SqliteQueueTest, EverythingFailsAfterClose) {
  auto q = openQueue();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->close().isOk());
  QueueBatch b;
  b.putEntry(makeEntry(1, "http://s/a"));
  EXPECT_EQ(q->apply(b).code(), StatusCode::kAborted);
  EXPECT_EQ(q->sync().code(), StatusCode::kAborted);
  EXPECT_EQ(q->getEntry("k").status().code(), StatusCode::kAborted);
  EXPECT_EQ(q->entryCount().status().code(), StatusCode::kAborted);
}

TEST_F(SqliteQueueTest, FullSynchronousModeWorksTheSame) {
  auto q = openQueue({{"synchronous", "full"}});
  ASSERT_TRUE(q);
  QueueBatch b;
  b.putEntry(makeEntry(1, "http://s/a"));
  ASSERT_TRUE(q->apply(b).isOk());
  ASSERT_TRUE(q->sync().isOk());
  ASSERT_TRUE(q->close().isOk());
  auto again = openQueue({{"synchronous", "full"}});
  EXPECT_EQ(*again->entryCount(), 1u);
}

}  // namespace
}  // namespace lcc::testing
