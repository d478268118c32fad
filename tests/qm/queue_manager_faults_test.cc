// The QM under store faults (issue 15 §1): every store error takes one route (logged,
// counted in lcc_qm_store_errors_total, the sticky failed state, cache-crash), whether
// it comes from dispatch, a result, or a periodic timer; pump() stops at once on a
// persistent read error instead of spinning to its guard.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmFaults : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    options_.merge_interval = Millis(kHourMs);
    options_.age_check_interval = Millis(6 * kHourMs);
  }
  std::int64_t storeErrors() const { return metrics_->snapshot()["lcc_qm_store_errors_total"]; }
  bool fullSetAsked(ProviderId pid) {
    auto r = stores_.providers->get(pid);
    return r.isOk() && r.value() && r.value()->fullset_wanted && r.value()->fullset_reason == FullSetReason::kCacheCrash;
  }
  void expectFailedOnce() {
    EXPECT_TRUE(qm_->failed());
    EXPECT_TRUE(qm_->cacheCrash());
    EXPECT_TRUE(fullSetAsked(1));
    EXPECT_TRUE(fullSetAsked(2));
    EXPECT_GE(storeErrors(), 1);
    EXPECT_EQ(qm_->status()["store_errors"], storeErrors());
    // Sticky: a set is refused from now on.
    submit(makeSet(1, {update(1, "http://a/late")}, 99));
    ASSERT_FALSE(acks_.empty());
    EXPECT_FALSE(acks_.back());
  }
};

// Every read of a dispatch that can fail is failed in turn: a row whose window closed
// (moved to its slot), a row removed while queued (dropped), a plain row (sent).
TEST_F(QmFaults, EveryReadErrorOfDispatchFailsTheQmOnceAndStopsPump) {
  for (int n = 0; n < 40; ++n) {
    SCOPED_TRACE("reads before the fault: " + std::to_string(n));
    fresh();
    start();
    submit(makeSet(1, {update(1, "http://a/closed", std::nullopt, "12-13"), update(1, "http://a/gone"),
                       update(1, "http://a/ok")}, 1));
    submit(makeSet(1, {removal(1, "http://a/gone")}, 2));
    submit(makeSet(2, {update(2, "http://b/ok")}, 1, SetKind::kPartial, "m2/uns"));
    clock_.advance(Millis(kHourMs));  // a/closed's window closed while it was queued (no timers run)
    const std::uint64_t before = queue_->plan.reads() + content_->plan.reads();
    queue_->plan.failReadsAfter(n);
    content_->plan.failReadsAfter(n);
    qm_->linkUp(1, "m1", 8);
    const std::uint64_t reads = queue_->plan.reads() + content_->plan.reads() - before;
    EXPECT_LT(reads, 200u) << "pump() kept reading a failing store";
    if (queue_->plan.injected() + content_->plan.injected() == 0) {
      EXPECT_FALSE(qm_->failed());
      EXPECT_EQ(botm_.takeFetches().size(), 2u);
      continue;
    }
    expectFailedOnce();
  }
}

// A persistent read error on one list only: the row whose window closed cannot be
// moved to its slot list, while every other read works. pump() used to try the same
// head again until its 1,000,000-iteration guard, the error never routed.
TEST_F(QmFaults, APersistentErrorOnOneListStopsPumpAtOnce) {
  start();
  submit(makeSet(1, {update(1, "http://a/closed", std::nullopt, "12-13"), update(1, "http://a/ok")}, 1));
  clock_.advance(Millis(kHourMs));  // 13:17: the window closed; the row must move to list (1, 12)
  queue_->fail_pset = [](PSetId, TimeSlot slot) { return slot == 12; };
  const std::uint64_t before = queue_->plan.reads();
  qm_->linkUp(1, "m1", 8);
  EXPECT_LT(queue_->plan.reads() - before, 100u) << "pump() kept reading a failing store";
  EXPECT_TRUE(botm_.takeFetches().empty());
  expectFailedOnce();
}

TEST_F(QmFaults, AReadErrorInTheMergeTimerIsNotDropped) {
  start();
  qm_->startTimers();
  queue_->plan.failReadsAfter(0);
  clock_.advance(Millis(kHourMs));
  expectFailedOnce();
}

TEST_F(QmFaults, AReadErrorInTheAgeingTimerIsNotDropped) {
  start();
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  qm_->linkUp(1, "m1", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(1, okResult(f[0].order.id, "00/00/01"));
  qm_->startTimers();
  content_->plan.failReadsAfter(0);
  clock_.advance(Millis(6 * kHourMs));
  expectFailedOnce();
}

TEST_F(QmFaults, AWriteErrorOfAResultFailsTheQm) {
  start();
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  qm_->linkUp(1, "m1", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  content_->plan.failWritesAfter(0);
  qm_->onResult(1, okResult(f[0].order.id, "00/00/01"));
  expectFailedOnce();
  EXPECT_EQ(storeErrors(), 1) << "one error, counted once";
}

// The first periodic write (a slot merge's meta, a checkpoint's sync) fails; every
// timer after it finds the QM failed and routes nothing more: one error, counted once.
TEST_F(QmFaults, APeriodicWriteErrorFailsTheQmAndIsCountedOnce) {
  start();
  qm_->startTimers();
  queue_->plan.failWritesAfter(0);
  clock_.advance(Millis(24 * kHourMs));
  expectFailedOnce();
  EXPECT_EQ(storeErrors(), 1);
}

}  // namespace
}  // namespace lcc::qm
