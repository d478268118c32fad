// Absorb semantics (design document §6 "Arriving URLs"), case by case, on every storage plugin.
#include "qm/absorb.h"

#include <gtest/gtest.h>

#include "faulty_stores.h"
#include "qm_test_util.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;
using lcc::testing::SimClock;
using lcc::testing::TempDir;

constexpr std::int64_t kHourMs = 3600 * 1000;
const WallTime kMidnight = fromUnixMillis(1714521600000);

class AbsorbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    stores_ = std::make_unique<Stores>(GetParam(), dir_.path(), &clock_, posixEnv());
    ASSERT_TRUE(stores_->open().isOk());
    auto s = stores_->content->maxSeq();
    ASSERT_TRUE(s.isOk());
    seq_ = s.value();
  }
  void TearDown() override { (void)stores_->close(); }

  StoreTxn txn() { return StoreTxn(*stores_->queue, *stores_->content, seq_); }
  AbsorbContext ctx(PSetId pset, WallTime now = kMidnight + Millis(12 * kHourMs)) {
    return AbsorbContext{pset, 0, now, &slots_};
  }
  std::optional<QueueEntry> row(const UrlNotice& n) {
    auto r = stores_->queue->getEntry(encodeUrlKey(n.key));
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }
  std::optional<ContentRecord> record(const UrlNotice& n) {
    auto r = stores_->content->get(encodeUrlKey(n.key));
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }
  std::optional<PSetRecord> list(PSetId p, TimeSlot s) {
    auto r = stores_->queue->getPSet(p, s);
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }
  // The keys of list (p, s) in order, following `next`.
  std::vector<std::string> urls(PSetId p, TimeSlot s) {
    std::vector<std::string> out;
    auto l = list(p, s);
    if (!l) return out;
    std::string cur = l->first;
    while (!cur.empty() && out.size() < 1000) {
      auto e = stores_->queue->getEntry(cur);
      if (!e.isOk() || !e.value()) break;
      out.push_back(e.value()->notice.key.url);
      cur = e.value()->next;
    }
    return out;
  }
  void storeLive(const UrlNotice& n, const std::string& file) {
    auto t = txn();
    ContentRecord r;
    r.key = n.key;
    r.machine = "m1";
    r.filename = file;
    r.size = 10;
    r.declared_mtime = n.mtime;
    r.declared_size = n.size;
    r.declared_md5 = n.md5;
    r.stored = r.refreshed = kMidnight;
    ASSERT_TRUE(storeContent(t, r).isOk());
    ASSERT_TRUE(t.commit().isOk());
  }

  SimClock clock_;
  TempDir dir_;
  std::unique_ptr<Stores> stores_;
  ChangeSeq seq_ = 0;
  TimeSlots slots_{24, Millis(24 * kHourMs)};
};

TEST_P(AbsorbTest, UpdatesAreQueuedInSetOrder) {
  auto t = txn();
  for (const char* u : {"http://a/1", "http://a/2", "http://a/3"}) ASSERT_TRUE(insertUpdate(t, update(1, u), ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_EQ(urls(5, kSlotNow), (std::vector<std::string>{"http://a/1", "http://a/2", "http://a/3"}));
  EXPECT_EQ(list(5, kSlotNow)->count, 3u);
  EXPECT_EQ(t.effects.queued_delta[1], 3);
  ASSERT_EQ(t.effects.ready_psets.size(), 1u);
}

// The rows a step read as absent go to the store as fresh puts (QueueBatch::PutEntry::
// fresh: storage-postgres COPYs them); a row that was there is never marked fresh.
TEST_P(AbsorbTest, NewRowsAreMarkedFreshAndRowsThatWereThereAreNot) {
  FaultyQueueStore queue(*stores_->queue);
  std::map<std::string, std::vector<bool>> fresh;  // URL -> the fresh flag of each put, in order
  queue.on_apply = [&](const QueueBatch& b) {
    for (const auto& op : b.ops()) {
      if (const auto* put = std::get_if<QueueBatch::PutEntry>(&op)) fresh[put->entry.notice.key.url].push_back(put->fresh);
    }
  };
  StoreTxn t(queue, *stores_->content, seq_);
  for (const char* u : {"http://a/1", "http://a/2"}) ASSERT_TRUE(insertUpdate(t, update(1, u), ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_EQ(fresh["http://a/1"], (std::vector<bool>{true, true})) << "new, then linked to a/2 in the same step";
  EXPECT_EQ(fresh["http://a/2"], (std::vector<bool>{true}));
  fresh.clear();
  StoreTxn t2(queue, *stores_->content, seq_);
  ASSERT_TRUE(insertUpdate(t2, update(1, "http://a/1", 300), ctx(5)).isOk());  // there: replaced in place
  ASSERT_TRUE(insertUpdate(t2, update(1, "http://a/3"), ctx(5)).isOk());       // new, after the tail a/2
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_EQ(fresh["http://a/1"], (std::vector<bool>{false}));
  EXPECT_EQ(fresh["http://a/2"], (std::vector<bool>{false})) << "the old tail, linked to a/3";
  EXPECT_EQ(fresh["http://a/3"], (std::vector<bool>{true}));
  EXPECT_EQ(urls(5, kSlotNow), (std::vector<std::string>{"http://a/1", "http://a/2", "http://a/3"}));
  EXPECT_EQ(row(update(1, "http://a/1"))->notice.mtime, 300);
}

TEST_P(AbsorbTest, DuplicateKeepsTheLastNoticeAtTheFirstPlace) {
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/1", 100), ctx(5)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/2"), ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  auto t2 = txn();
  ASSERT_TRUE(insertUpdate(t2, update(1, "http://a/3"), ctx(6)).isOk());
  ASSERT_TRUE(insertUpdate(t2, update(1, "http://a/1", 200), ctx(6)).isOk());  // again, later set
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_EQ(urls(5, kSlotNow), (std::vector<std::string>{"http://a/1", "http://a/2"}));
  EXPECT_EQ(urls(6, kSlotNow), (std::vector<std::string>{"http://a/3"}));
  EXPECT_EQ(row(update(1, "http://a/1"))->notice.mtime, 200);
  EXPECT_EQ(row(update(1, "http://a/1"))->pset, 5u);
}

TEST_P(AbsorbTest, SameUrlTwiceInOneSetIsOneRow) {
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/1", 1), ctx(5)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/1", 2), ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_EQ(urls(5, kSlotNow), std::vector<std::string>{"http://a/1"});
  EXPECT_EQ(row(update(1, "http://a/1"))->notice.mtime, 2);
  auto n = stores_->queue->entryCount();
  EXPECT_EQ(n.value(), 1u);
}

TEST_P(AbsorbTest, IdentityIsProviderUrlAndMime) {
  auto t = txn();
  UrlNotice pdf = update(1, "http://a/1");
  pdf.key.mime = "application/pdf";
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/1"), ctx(5)).isOk());
  ASSERT_TRUE(insertUpdate(t, pdf, ctx(5)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(2, "http://a/1"), ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_EQ(stores_->queue->entryCount().value(), 3u);
}

TEST_P(AbsorbTest, RemovalOfAQueuedUrlMarksItNothingAndRemovesTheContent) {
  UrlNotice n = update(1, "http://a/1", 1);
  storeLive(n, "00/00/01");
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/1", 2), ctx(5)).isOk());
  ASSERT_TRUE(insertRemoval(t, removal(1, "http://a/1"), kMidnight).isOk());
  ASSERT_TRUE(t.commit().isOk());
  ASSERT_TRUE(row(n));
  EXPECT_EQ(row(n)->op, QueueOp::kNothing);
  EXPECT_TRUE(record(n)->deleted);
  ASSERT_EQ(t.effects.deletes.size(), 1u);
  EXPECT_EQ(t.effects.deletes[0].filename, "00/00/01");
  // The delete is durable in the FSMDB with the tombstone's batch.
  std::vector<DeleteRequest> fsm;
  ASSERT_TRUE(stores_->queue->scanDeletes(std::nullopt, [&](const DeleteRequest& d) {
    fsm.push_back(d);
    return true;
  }).isOk());
  ASSERT_EQ(fsm.size(), 1u);
  // An update after the removal revives the row in place.
  auto t2 = txn();
  ASSERT_TRUE(insertUpdate(t2, update(1, "http://a/1", 3), ctx(9)).isOk());
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_EQ(row(n)->op, QueueOp::kFetch);
  EXPECT_EQ(row(n)->pset, 5u);
}

TEST_P(AbsorbTest, RemovalOfAStoredUrlWritesATombstoneWithANewSeq) {
  UrlNotice n = update(1, "http://a/1", 1);
  storeLive(n, "00/00/01");
  ChangeSeq before = record(n)->seq;
  auto t = txn();
  ASSERT_TRUE(insertRemoval(t, removal(1, "http://a/1"), kMidnight + Millis(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  auto r = record(n);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->deleted);
  EXPECT_GT(r->seq, before);
  EXPECT_TRUE(r->filename.empty());
  EXPECT_FALSE(row(n));
  // A second removal changes nothing (replay).
  ChangeSeq tomb = r->seq;
  auto t2 = txn();
  ASSERT_TRUE(insertRemoval(t2, removal(1, "http://a/1"), kMidnight + Millis(9)).isOk());
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_EQ(record(n)->seq, tomb);
  EXPECT_TRUE(t2.effects.deletes.empty());
}

TEST_P(AbsorbTest, UpdateMatchingTheDeclaredRecordIsNotFetched) {
  UrlNotice n = update(1, "http://a/1", 1000);
  n.size = 10;
  n.md5 = "0123456789abcdef0123456789abcdef";
  storeLive(n, "00/00/01");
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, n, ctx(5, kMidnight + Millis(kHourMs))).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_FALSE(row(n)) << "fetched although mt/size/md5 are unchanged";
  EXPECT_EQ(record(n)->refreshed, kMidnight + Millis(kHourMs));
  EXPECT_EQ(t.effects.fetches_skipped, 1u);
  // Any difference queues a fetch.
  UrlNotice changed = n;
  changed.size = 11;
  auto t2 = txn();
  ASSERT_TRUE(insertUpdate(t2, changed, ctx(6)).isOk());
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_TRUE(row(n));
}

TEST_P(AbsorbTest, UpdateWithoutDeclaredFieldsIsAlwaysFetched) {
  UrlNotice n = update(1, "http://a/1");
  storeLive(n, "00/00/01");
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, n, ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_TRUE(row(n));
}

TEST_P(AbsorbTest, TimeOfDayWindowsGoToTheirStartSlotList) {
  const WallTime noon = kMidnight + Millis(12 * kHourMs);
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/any"), ctx(7, noon)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/night", std::nullopt, "0-8,22-24"), ctx(7, noon)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/noon", std::nullopt, "10-14"), ctx(7, noon)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/night2", std::nullopt, "22-24"), ctx(7, noon)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  EXPECT_EQ(urls(7, kSlotNow), (std::vector<std::string>{"http://a/any", "http://a/noon"}));
  EXPECT_EQ(urls(7, 22), (std::vector<std::string>{"http://a/night", "http://a/night2"}));
}

TEST_P(AbsorbTest, MergeJoinsASlotListOntoFetchNow) {
  const WallTime noon = kMidnight + Millis(12 * kHourMs);
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/1"), ctx(7, noon)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/2", std::nullopt, "13-14"), ctx(7, noon)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/3", std::nullopt, "13-14"), ctx(7, noon)).isOk());
  ASSERT_TRUE(insertUpdate(t, update(1, "http://b/1", std::nullopt, "13-14"), ctx(8, noon)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  auto t2 = txn();
  ASSERT_TRUE(mergeIntoNow(t2, 7, 13).isOk());
  ASSERT_TRUE(mergeIntoNow(t2, 8, 13).isOk());
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_EQ(urls(7, kSlotNow), (std::vector<std::string>{"http://a/1", "http://a/2", "http://a/3"}));
  EXPECT_EQ(list(7, kSlotNow)->count, 3u);
  EXPECT_FALSE(list(7, 13));
  EXPECT_EQ(urls(8, kSlotNow), (std::vector<std::string>{"http://b/1"}));
  EXPECT_EQ(t2.effects.ready_psets.size(), 1u);  // pset 8 is new in fetch-now; 7 was there
}

TEST_P(AbsorbTest, MoveToTailAndDropKeepTheListConsistent) {
  auto t = txn();
  for (const char* u : {"http://a/1", "http://a/2", "http://a/3"}) ASSERT_TRUE(insertUpdate(t, update(1, u), ctx(5)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  auto t2 = txn();
  ASSERT_TRUE(moveToTail(t2, encodeUrlKey(update(1, "http://a/1").key), {5, kSlotNow}, 1).isOk());
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_EQ(urls(5, kSlotNow), (std::vector<std::string>{"http://a/2", "http://a/3", "http://a/1"}));
  EXPECT_EQ(row(update(1, "http://a/1"))->bad_count, 1);
  auto t3 = txn();
  ASSERT_TRUE(dropRow(t3, encodeUrlKey(update(1, "http://a/3").key), {5, kSlotNow}).isOk());  // middle
  ASSERT_TRUE(dropRow(t3, encodeUrlKey(update(1, "http://a/1").key), {5, kSlotNow}).isOk());  // tail
  ASSERT_TRUE(t3.commit().isOk());
  EXPECT_EQ(urls(5, kSlotNow), (std::vector<std::string>{"http://a/2"}));
  EXPECT_EQ(list(5, kSlotNow)->last, encodeUrlKey(update(1, "http://a/2").key));
  EXPECT_EQ(list(5, kSlotNow)->count, 1u);
  auto t4 = txn();
  ASSERT_TRUE(dropRow(t4, encodeUrlKey(update(1, "http://a/2").key), {5, kSlotNow}).isOk());
  ASSERT_TRUE(t4.commit().isOk());
  EXPECT_FALSE(list(5, kSlotNow));
  EXPECT_EQ(stores_->queue->entryCount().value(), 0u);
}

TEST_P(AbsorbTest, FullSetSweepRemovesWhatTheSetLacks) {
  storeLive(update(1, "http://a/keep"), "f1");
  storeLive(update(1, "http://a/gone"), "f2");
  storeLive(update(2, "http://a/other"), "f3");
  auto t = txn();
  ASSERT_TRUE(insertUpdate(t, update(1, "http://a/queued"), ctx(4)).isOk());
  ASSERT_TRUE(t.commit().isOk());
  auto t2 = txn();
  std::unordered_set<std::string> keep{encodeUrlKey(update(1, "http://a/keep").key)};
  ASSERT_TRUE(insertUpdate(t2, update(1, "http://a/keep"), ctx(5)).isOk());
  ASSERT_TRUE(sweepFullSet(t2, 1, keep, kMidnight).isOk());
  ASSERT_TRUE(t2.commit().isOk());
  EXPECT_FALSE(record(update(1, "http://a/keep"))->deleted);
  EXPECT_TRUE(record(update(1, "http://a/gone"))->deleted);
  EXPECT_FALSE(record(update(2, "http://a/other"))->deleted);
  EXPECT_EQ(row(update(1, "http://a/queued"))->op, QueueOp::kNothing);
}

INSTANTIATE_TEST_SUITE_P(Plugins, AbsorbTest, ::testing::ValuesIn(storePlugins()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace lcc::qm
