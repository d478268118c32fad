// A store that answers Busy for a while (issue 27 §3: a lost connection, a PostgreSQL
// failover), then answers again: nothing acked is lost, nothing is done twice, new sets
// get 130 ("try later") meanwhile, a result is written once the store answers, and no
// cache-crash is raised (queue_manager_store_busy.cc).
#include <gtest/gtest.h>

#include <set>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmStoreBusy : public QmEngine {
 protected:
  struct Ack {
    bool ok;
    ErrorCode code;
  };
  void submitSet(IntakeSet s) {
    qm_->submit(std::move(s), [this](bool ok, ErrorCode code, const std::string&) { answers_.push_back({ok, code}); });
  }
  void setBusy(bool on) {
    queue_->plan.setBusy(on);
    content_->plan.setBusy(on);
  }
  void expectNoFailure() {
    EXPECT_FALSE(qm_->failed());
    EXPECT_FALSE(qm_->cacheCrash());
    for (ProviderId pid : {1u, 2u}) {
      auto r = stores_.providers->get(pid);
      ASSERT_TRUE(r.isOk() && r.value());
      EXPECT_FALSE(r.value()->fullset_wanted) << "provider " << pid << " asked for a full set";
    }
  }
  // Every fetch the QM hands out, answered with success until none is left; the URLs.
  std::multiset<std::string> fetchAll() {
    std::multiset<std::string> urls;
    int file = 0;
    for (int round = 0; round < 50; ++round) {
      auto f = botm_.takeFetches();
      if (f.empty()) break;
      for (const auto& x : f) {
        urls.insert(x.order.url);
        qm_->onResult(x.link, okResult(x.order.id, "00/00/" + std::to_string(++file)));
      }
    }
    return urls;
  }
  std::vector<Ack> answers_;
};

// The apply of an acked set comes back Busy: the set waits (not dropped), the sets
// after it get 130, and once the store answers it is applied: every URL queued, once.
TEST_F(QmStoreBusy, AnAckedSetWhoseApplyWasBusyIsAppliedWhenTheStoreAnswers) {
  start();
  submitSet(makeSet(1, {update(1, "http://a/1")}, 1));
  ASSERT_EQ(qm_->queued(), 1u);
  setBusy(true);
  submitSet(makeSet(1, {update(1, "http://a/2"), update(1, "http://a/3")}, 2));
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_TRUE(answers_[1].ok) << "journaled, so acked";
  EXPECT_TRUE(qm_->storeBusy());
  EXPECT_EQ(qm_->queued(), 1u);
  EXPECT_EQ(qm_->status()["store_busy"]["backlog_sets"], 1);
  const JournalPos applied = qm_->appliedPosition();

  // Meanwhile: a new set is "try later" (130), not an error, not acked.
  submitSet(makeSet(2, {update(2, "http://b/1")}, 1, SetKind::kPartial, "m2/uns"));
  ASSERT_EQ(answers_.size(), 3u);
  EXPECT_FALSE(answers_[2].ok);
  EXPECT_EQ(answers_[2].code, ErrorCode::kOffline);
  EXPECT_EQ(static_cast<int>(answers_[2].code), 130);

  // Retries while it is still Busy change nothing; the journal is not trimmed past it.
  clock_.advance(Millis(5000));
  EXPECT_TRUE(qm_->storeBusy());
  EXPECT_EQ(qm_->queued(), 1u);
  EXPECT_FALSE(qm_->checkpoint().isOk());
  EXPECT_EQ(qm_->appliedPosition(), applied);
  expectNoFailure();

  setBusy(false);
  clock_.advance(Millis(2000));  // at most qm.store_retry_max (2 s) to the next retry
  EXPECT_FALSE(qm_->storeBusy());
  EXPECT_EQ(qm_->queued(), 3u);
  EXPECT_GT(qm_->appliedPosition(), applied);
  EXPECT_EQ(qm_->status()["store_busy"]["backlog_sets"], 0);
  expectNoFailure();

  // Sets are taken again; every acked URL is fetched, once.
  submitSet(makeSet(2, {update(2, "http://b/1")}, 1, SetKind::kPartial, "m2/uns"));
  ASSERT_EQ(answers_.size(), 4u);
  EXPECT_TRUE(answers_[3].ok);
  qm_->linkUp(1, "m1", 8);
  const auto urls = fetchAll();
  EXPECT_EQ(urls, (std::multiset<std::string>{"http://a/1", "http://a/2", "http://a/3", "http://b/1"}));
  EXPECT_EQ(qm_->status()["urls_absorbed"], 4) << "the Busy set counted once";
  expectNoFailure();
}

// A Busy read of a UNS's highest set id is not "never seen": the set is refused with
// 130 and nothing is cached, so once the store answers a resent set is a duplicate.
TEST_F(QmStoreBusy, ABusyReadOfTheSeenSetIdIsNotNeverSeen) {
  QueueBatch b;
  b.putMeta(metaUnsKey("m2/uns"), "7");  // set 7 of m2/uns was applied before
  ASSERT_TRUE(stores_.queue->apply(b).isOk());
  start();
  setBusy(true);
  submitSet(makeSet(2, {update(2, "http://b/old")}, 5, SetKind::kPartial, "m2/uns"));
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_FALSE(answers_[0].ok);
  EXPECT_EQ(answers_[0].code, ErrorCode::kOffline);
  setBusy(false);
  clock_.advance(Millis(2000));
  EXPECT_FALSE(qm_->storeBusy());
  submitSet(makeSet(2, {update(2, "http://b/old")}, 5, SetKind::kPartial, "m2/uns"));
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_TRUE(answers_[1].ok);
  EXPECT_EQ(qm_->status()["sets_duplicate"], 1);
  EXPECT_EQ(qm_->queued(), 0u) << "a set older than the one applied was applied again";
  expectNoFailure();
}

// A result whose write comes back Busy is kept and written once the store answers:
// its provider is no longer in flight and its next URL goes out.
TEST_F(QmStoreBusy, ABusyResultIsWrittenLaterAndItsProviderLeavesInFlight) {
  start();
  submitSet(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  qm_->linkUp(1, "m1", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);  // serial per provider (qm.provider_inflight 1)
  setBusy(true);
  qm_->onResult(f[0].link, okResult(f[0].order.id, "00/00/01"));
  EXPECT_TRUE(qm_->storeBusy());
  EXPECT_EQ(qm_->scheduler().inFlight(1), 1u) << "its result is not written yet";
  EXPECT_EQ(qm_->status()["store_busy"]["held_results"], 1);
  clock_.advance(Millis(3000));
  EXPECT_TRUE(botm_.takeFetches().empty()) << "nothing goes out while the store is Busy";

  setBusy(false);
  clock_.advance(Millis(2000));
  EXPECT_FALSE(qm_->storeBusy());
  EXPECT_EQ(qm_->status()["store_busy"]["held_results"], 0);
  auto rec = stores_.content->get(encodeUrlKey(UrlKey{1, f[0].order.url, "text/html"}));
  ASSERT_TRUE(rec.isOk());
  ASSERT_TRUE(rec.value().has_value()) << "the result was never written";
  EXPECT_EQ(rec.value()->filename, "00/00/01");
  EXPECT_EQ(qm_->status()["fetched"], 1) << "counted once";
  auto next = botm_.takeFetches();
  ASSERT_EQ(next.size(), 1u) << "the provider stayed in flight";
  EXPECT_NE(next[0].order.url, f[0].order.url);
  qm_->onResult(next[0].link, okResult(next[0].order.id, "00/00/02"));
  EXPECT_EQ(qm_->scheduler().inFlight(1), 0u);
  EXPECT_EQ(qm_->queued(), 0u);
  expectNoFailure();
}

// The apply of an acked set lands but answers Busy (the connection lost during COMMIT):
// applying it again finds its rows queued, and its list must still be made ready.
TEST_F(QmStoreBusy, AnApplyThatLandedButAnsweredBusyIsStillFetched) {
  start();
  queue_->plan.landBusy(1);
  submitSet(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_TRUE(answers_[0].ok);
  EXPECT_TRUE(qm_->storeBusy());
  clock_.advance(Millis(200));
  EXPECT_FALSE(qm_->storeBusy());
  qm_->linkUp(1, "m1", 8);
  EXPECT_EQ(fetchAll(), (std::multiset<std::string>{"http://a/1", "http://a/2"}));
  expectNoFailure();
}

// A result whose write landed but answered Busy: written again, its row is gone. It
// must not be taken for a result of a dropped row (that deletes the file it stored).
TEST_F(QmStoreBusy, AResultWhoseWriteLandedButAnsweredBusyKeepsItsFile) {
  start();
  submitSet(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  qm_->linkUp(1, "m1", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  queue_->plan.landBusy(1);  // the content batch is written, then the queue batch lands Busy
  qm_->onResult(f[0].link, okResult(f[0].order.id, "00/00/01"));
  EXPECT_TRUE(qm_->storeBusy());
  clock_.advance(Millis(200));
  EXPECT_FALSE(qm_->storeBusy());
  std::uint64_t deletes = 0;
  ASSERT_TRUE(stores_.queue->scanDeletes(std::nullopt, [&](const DeleteRequest&) { return ++deletes, true; }).isOk());
  EXPECT_EQ(deletes, 0u) << "the stored file was deleted";
  EXPECT_TRUE(botm_.takeDeletes().empty());
  auto rec = stores_.content->get(encodeUrlKey(UrlKey{1, f[0].order.url, "text/html"}));
  ASSERT_TRUE(rec.isOk() && rec.value());
  EXPECT_FALSE(rec.value()->deleted);
  EXPECT_EQ(rec.value()->filename, "00/00/01");
  auto next = botm_.takeFetches();
  ASSERT_EQ(next.size(), 1u) << "the provider stayed in flight";
  EXPECT_NE(next[0].order.url, f[0].order.url);
  expectNoFailure();
}

// A set refused with 130 while the store was Busy, and a later set of the same UNS
// taken once it answered (it was on the wire behind the refused one): the refused set,
// sent again from the UNS's spool, is not a duplicate of the later one.
TEST_F(QmStoreBusy, ARefusedSetSentAgainAfterALaterOneIsNotADuplicate) {
  start();
  submitSet(makeSet(1, {update(1, "http://a/1")}, 1));
  setBusy(true);
  qm_->linkUp(1, "m1", 8);  // a Busy read: the QM is store-busy
  (void)botm_.takeFetches();
  submitSet(makeSet(1, {update(1, "http://a/5")}, 5));
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_FALSE(answers_[1].ok);
  setBusy(false);
  clock_.advance(Millis(2000));
  ASSERT_FALSE(qm_->storeBusy());
  submitSet(makeSet(1, {update(1, "http://a/6")}, 6));
  submitSet(makeSet(1, {update(1, "http://a/5")}, 5));  // sent again
  ASSERT_EQ(answers_.size(), 4u);
  EXPECT_TRUE(answers_[2].ok);
  EXPECT_TRUE(answers_[3].ok);
  EXPECT_EQ(qm_->status()["sets_duplicate"], 0) << "the refused set was taken for a duplicate";
  auto row = stores_.queue->getEntry(encodeUrlKey(UrlKey{1, "http://a/5", "text/html"}));
  ASSERT_TRUE(row.isOk());
  auto rec = stores_.content->get(encodeUrlKey(UrlKey{1, "http://a/5", "text/html"}));
  ASSERT_TRUE(rec.isOk());
  EXPECT_TRUE(row.value().has_value() || (rec.value().has_value() && !rec.value()->deleted))
      << "set 5 was never applied";
  // The seen id stays at 6: a set 6 sent again is a duplicate.
  submitSet(makeSet(1, {update(1, "http://a/6")}, 6));
  ASSERT_EQ(answers_.size(), 5u);
  EXPECT_EQ(qm_->status()["sets_duplicate"], 1);
  expectNoFailure();
}

}  // namespace
}  // namespace lcc::qm
