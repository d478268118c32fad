// A robot's fetch leases (issue 27 §3): the policy (FetchLeases) on its own, and
// RobotCore with a fetcher that never finishes by itself: a fetch whose lease runs out
// is cancelled and answered 130 (nothing fetched); a renewal keeps it going.
#include <gtest/gtest.h>

#include <map>

#include "bot/fetch_leases.h"
#include "bot/robot.h"
#include "common/config/config.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::bot {
namespace {

using testing::SimClock;
using testing::TempDir;

TEST(FetchLeases, ExpiredWhenTheDeadlinePassesUnlessRenewed) {
  const MonoTime t0{};
  FetchLeases l;
  l.add(1, t0, Millis(10000));
  l.add(2, t0 + Millis(5000), Millis(10000));
  l.add(3, t0, Millis(0));  // no lease: never expires here
  EXPECT_EQ(l.size(), 2u);
  EXPECT_EQ(l.earliest(), t0 + Millis(10000));
  EXPECT_TRUE(l.expired(t0 + Millis(9999)).empty());
  EXPECT_EQ(l.expired(t0 + Millis(10000)), std::vector<std::uint64_t>{1});
  l.renew(t0 + Millis(12000), Millis(10000));  // fetch 2 had until 15 s; now 22 s
  EXPECT_TRUE(l.expired(t0 + Millis(21000)).empty());
  EXPECT_EQ(l.expired(t0 + Millis(22000)), std::vector<std::uint64_t>{2});
  EXPECT_FALSE(l.earliest().has_value());
}

// Holds every fetch until the test finishes or cancels it.
class HeldFetcher : public Fetcher {
 public:
  Status start(const FetchRequest& request, FetchDone done) override {
    started.push_back(request);
    done_[request.id] = std::move(done);
    return Status::ok();
  }
  void cancel(std::uint64_t id) override {
    cancelled.push_back(id);
    finish(id, ErrorCode::kInternal);
  }
  void finish(std::uint64_t id, ErrorCode code) {
    auto it = done_.find(id);
    if (it == done_.end()) return;
    FetchResult r;
    r.id = id;
    r.code = code;
    r.message = code == ErrorCode::kNone ? "" : "cancelled";
    auto done = std::move(it->second);
    done_.erase(it);
    done(r);
  }
  std::size_t inFlight() const override { return done_.size(); }
  void stop() override {}

  std::vector<FetchRequest> started;
  std::vector<std::uint64_t> cancelled;

 private:
  std::map<std::uint64_t, FetchDone> done_;
};

class RobotLeaseTest : public ::testing::Test {
 protected:
  RobotLeaseTest() {
    RobotOptions o = RobotOptions::fromConfig(Config::defaults());
    o.name = "r";
    o.clock = &clock_;
    core_ = std::make_shared<RobotCore>(fetcher_, *posixEnv(), o, &counters_,
                                        [this](const FetchResult& r) { answers_.push_back(r); });
  }
  FetchRequest leased(std::uint64_t id, Millis lease) {
    FetchRequest f;
    f.id = id;
    f.url = "http://s/" + std::to_string(id);
    f.path = dir_.file("00/00/" + std::to_string(id));
    f.lease = lease;
    return f;
  }

  TempDir dir_;
  SimClock clock_;
  HeldFetcher fetcher_;
  RobotCounters counters_;
  std::vector<FetchResult> answers_;
  std::shared_ptr<RobotCore> core_;
};

TEST_F(RobotLeaseTest, AFetchWhoseLeaseRunsOutIsCancelledAndAnsweredAsNotFetched) {
  core_->fetch(leased(11, Millis(10000)));
  ASSERT_EQ(fetcher_.started.size(), 1u);
  clock_.advance(Millis(9999));
  EXPECT_TRUE(fetcher_.cancelled.empty());
  clock_.advance(Millis(1));
  ASSERT_EQ(fetcher_.cancelled.size(), 1u) << "the QM stopped renewing: the request ends";
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].id, 11u);
  EXPECT_EQ(answers_[0].code, ErrorCode::kOffline) << "retryable, nothing stored";
  EXPECT_EQ(counters_.lease_expired.load(), 1u);
  EXPECT_EQ(core_->inFlight(), 0u);
}

TEST_F(RobotLeaseTest, ARenewedFetchGoesOnAndAnswersWhatItFetched) {
  core_->fetch(leased(12, Millis(10000)));
  core_->fetch(leased(13, Millis(0)));  // no lease (an older BOT-M): never cancelled here
  for (int i = 0; i < 5; ++i) {
    clock_.advance(Millis(6000));
    core_->renewLeases(Millis(10000));  // every 6 s, as a live QM does (every third)
  }
  EXPECT_TRUE(fetcher_.cancelled.empty()) << "30 s and renewed: still running";
  clock_.advance(Millis(3600 * 1000));
  ASSERT_EQ(fetcher_.cancelled.size(), 1u) << "only the leased fetch ends when renewals stop";
  EXPECT_EQ(fetcher_.cancelled[0], fetcher_.started[0].id);
  fetcher_.finish(fetcher_.started[1].id, ErrorCode::kServerError);
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[1].code, ErrorCode::kServerError) << "a fetch without a lease answers as the fetcher says";
}

}  // namespace
}  // namespace lcc::bot
