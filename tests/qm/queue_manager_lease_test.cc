// The QM's fetch leases (issue 27 §3) on every storage plugin: each fetch carries the
// lease, a live QM renews it on the links with fetches out, and on a shared store a QM
// that opens after another waits out that QM's lease before it hands anything out, and
// one whose proof is too old (paused past its takeover) hands nothing out.
#include "qm_plugin_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

constexpr Millis kLease{30000};

TEST_P(QmTest, EveryFetchCarriesTheLeaseAndALiveQmRenewsItWhereFetchesAreOut) {
  options_.fetch_lease = kLease;
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  qm_->linkUp(7, "m1", 8);
  qm_->linkUp(8, "m2", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.lease, kLease) << "a local store: the whole lease, no proof needed";
  clock_.advance(kLease / 3);
  ASSERT_EQ(botm_.leases.size(), 1u) << "one renewal, on the one link with a fetch out";
  EXPECT_EQ(botm_.leases[0], (std::pair<LinkId, Millis>{f[0].link, kLease}));
  qm_->onResult(f[0].link, okResult(f[0].order.id, "00/00/01"));
  EXPECT_EQ(botm_.takeFetches().size(), 1u) << "dispatch goes on as before";
}

TEST_P(QmTest, ANewQmOnASharedStoreWaitsOutThePreviousQmsLeaseBeforeHandingOut) {
  options_.fetch_lease = kLease;
  shared_store_ = true;
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  qm_->linkUp(7, "m1", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u) << "the first QM on the store waits for nobody";
  EXPECT_EQ(f[0].order.lease, kLease);
  // It dies with the fetch out (its robot may still be fetching); another QM opens.
  stopHard();
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(9, "m2", 8);
  clock_.advance(kLease + FetchLease::kMargin - Millis(1));
  EXPECT_TRUE(botm_.takeFetches().empty()) << "the old QM's robot may still fetch http://a/1";
  EXPECT_GT(qm_->status()["fetch_lease"]["waiting_ms"].get<std::int64_t>(), 0);
  clock_.advance(Millis(1));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u) << "every lease of the old QM has run out: handed out again";
  EXPECT_EQ(f[0].order.url, "http://a/1");
  EXPECT_GE(f[0].order.lease, kLease / 2);
}

TEST_P(QmTest, AQmOnASharedStoreWhoseProofIsTooOldHandsNothingOut) {
  options_.fetch_lease = kLease;
  shared_store_ = true;
  ASSERT_TRUE(start().isOk());  // proven at open; no timers: as a process paused (SIGSTOP)
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  clock_.advance(kLease / 2 + Millis(1));  // continued: its monotonic clock moved on
  qm_->linkUp(7, "m1", 8);
  EXPECT_TRUE(botm_.takeFetches().empty()) << "another QM may have taken over meanwhile";
  qm_->startTimers();
  clock_.advance(kLease / 3);  // the renewal's write proves the store is still ours
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_LE(f[0].order.lease, kLease);
  EXPECT_GE(f[0].order.lease, kLease / 2);
}

}  // namespace
}  // namespace lcc::qm
