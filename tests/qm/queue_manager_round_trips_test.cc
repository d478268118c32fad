// Round trips per batch, not per URL (issue 27 §4, "latency and loss between hosts"):
// on a store a network away (storage-postgres) every store call is a round trip, so
// the QM must not pay several per URL one after the other. Results that reach the
// engine together are written in one StoreTxn (one apply per store: group commit), a
// set's rows are read in batches, and dispatch reads the head rows of its picks in one
// batch. The wrappers of faulty_stores.h count a batch read as one read.
#include <gtest/gtest.h>

#include <set>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

constexpr int kUrls = 8;

class QmRoundTrips : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    options_.provider_inflight = kUrls;  // every URL of the set out at once
    options_.host_inflight = kUrls;
  }
  // One set of kUrls URLs of provider 1, all out: the fetches.
  std::vector<RecordingBotm::Fetch> sendAll() {
    queue_->setRemote(true);  // a store a network away: the QM reads in batches
    start();
    std::vector<UrlNotice> urls;
    for (int i = 0; i < kUrls; ++i) urls.push_back(update(1, "http://a/" + std::to_string(i)));
    submit(makeSet(1, urls, 1));
    qm_->linkUp(1, "m1", 2 * kUrls);
    auto f = botm_.takeFetches();
    EXPECT_EQ(f.size(), static_cast<std::size_t>(kUrls));
    return f;
  }
  int stored() {
    int n = 0;
    for (int i = 0; i < kUrls; ++i) {
      auto r = stores_.content->get(encodeUrlKey({1, "http://a/" + std::to_string(i), "text/html"}));
      if (r.isOk() && r.value() && !r.value()->deleted) ++n;
    }
    return n;
  }
  static std::vector<std::pair<LinkId, FetchResult>> results(const std::vector<RecordingBotm::Fetch>& f) {
    std::vector<std::pair<LinkId, FetchResult>> out;
    for (std::size_t i = 0; i < f.size(); ++i) out.emplace_back(f[i].link, okResult(f[i].order.id, "f" + std::to_string(i)));
    return out;
  }
};

TEST_F(QmRoundTrips, ResultsThatArriveTogetherAreWrittenInOneApplyPerStore) {
  auto f = sendAll();
  const auto qw = queue_->plan.writes(), cw = content_->plan.writes();
  const auto qr = queue_->plan.reads(), cr = content_->plan.reads();
  qm_->onResults(results(f));
  EXPECT_EQ(stored(), kUrls);
  EXPECT_EQ(qm_->queued(), 0u);
  EXPECT_EQ(queue_->plan.writes() - qw, 1u) << "one queue store apply for the whole group";
  EXPECT_EQ(content_->plan.writes() - cw, 1u) << "one content store apply for the whole group";
  // Reads: a batch per store for the group (and what pump() reads after it), not per URL.
  EXPECT_LT(queue_->plan.reads() - qr, static_cast<std::uint64_t>(kUrls));
  EXPECT_LT(content_->plan.reads() - cr, static_cast<std::uint64_t>(kUrls));
  EXPECT_TRUE(botm_.takeFetches().empty()) << "nothing left to fetch";
}

TEST_F(QmRoundTrips, ResultsOneByOneStoreTheSame) {
  auto f = sendAll();
  const auto qw = queue_->plan.writes();
  for (const auto& [link, o] : results(f)) qm_->onResult(link, o);
  EXPECT_EQ(stored(), kUrls);
  EXPECT_EQ(qm_->queued(), 0u);
  EXPECT_EQ(queue_->plan.writes() - qw, static_cast<std::uint64_t>(kUrls)) << "one apply per result";
}

// A group whose write comes back Busy: every result of it is held, none dropped and none
// fetched again; once the store answers, all are stored.
TEST_F(QmRoundTrips, AGroupThatMeetsABusyStoreIsHeldWholeAndWrittenLater) {
  auto f = sendAll();
  content_->plan.setBusy(true);
  qm_->onResults(results(f));
  EXPECT_TRUE(qm_->storeBusy());
  EXPECT_EQ(qm_->status()["store_busy"]["held_results"], kUrls);
  EXPECT_EQ(stored(), 0);
  content_->plan.setBusy(false);
  clock_.advance(Millis(5000));
  EXPECT_FALSE(qm_->storeBusy());
  EXPECT_EQ(stored(), kUrls);
  EXPECT_EQ(qm_->queued(), 0u);
  EXPECT_TRUE(botm_.takeFetches().empty()) << "a held result's URL is not fetched again";
  EXPECT_FALSE(qm_->cacheCrash());
}

// On a store a network away, pump() reads the head rows of the providers it picks in one
// batch per store: sending a fetch to each of 2 providers costs 2 queue store reads
// (their lists, their head rows), not 2 per fetch.
TEST_F(QmRoundTrips, DispatchReadsItsPicksHeadRowsInOneBatch) {
  queue_->setRemote(true);
  options_.provider_inflight = 1;
  start();
  qm_->linkUp(1, "m1", 0);  // a link with no room yet: its deletes are read now, not below
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  submit(makeSet(2, {update(2, "http://b/1"), update(2, "http://b/2")}, 1, SetKind::kPartial, "m2/uns"));
  ASSERT_TRUE(botm_.takeFetches().empty());
  const auto qr = queue_->plan.reads(), cr = content_->plan.reads();
  qm_->linkCapacity(1, 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NE(f[0].order.url.substr(0, 9), f[1].order.url.substr(0, 9)) << "one fetch per provider";
  EXPECT_EQ(queue_->plan.reads() - qr, 2u);
  EXPECT_EQ(content_->plan.reads() - cr, 1u);
}

// A set's rows and records are read in batches, not one round trip per URL (no BOT-M
// link: nothing is dispatched, only the apply reads).
TEST_F(QmRoundTrips, ASetIsReadInBatches) {
  queue_->setRemote(true);
  start();
  const auto qr = queue_->plan.reads(), cr = content_->plan.reads();
  std::vector<UrlNotice> urls;
  for (int i = 0; i < 64; ++i) urls.push_back(update(2, "http://b/" + std::to_string(i)));
  submit(makeSet(2, urls, 1));
  EXPECT_EQ(qm_->queued(), 64u);
  EXPECT_LT(queue_->plan.reads() - qr, 16u);
  EXPECT_LT(content_->plan.reads() - cr, 16u);
}

}  // namespace
}  // namespace lcc::qm
