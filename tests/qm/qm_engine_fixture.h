// qm_engine_fixture.h — a QueueManager over storage-memory stores seen through the
// fault-injecting wrappers (faulty_stores.h), a recording BOT-M, metrics, and a
// SimClock that starts at a time of day that is not a slot boundary (12:17:23 UTC):
// the fixture of the issue-15 defect tests (faults, slot boundaries, deletes).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/metrics.h"
#include "faulty_stores.h"
#include "support/fault_env.h"
#include "qm/queue_manager.h"
#include "qm_test_util.h"

namespace lcc::qm::testing {

constexpr std::int64_t kHourMs = 3600 * 1000;
// 2024-05-01T00:00:00Z, a day boundary.
inline const WallTime kDayStart = fromUnixMillis(1714521600000);

class QmEngine : public ::testing::Test {
 protected:
  void SetUp() override {
    // Timers that would only add noise to a test that advances the clock by hours.
    options_.checkpoint_interval = Millis(24 * kHourMs);
    options_.provider_refresh = Millis(24 * kHourMs);
    fresh();
  }
  void TearDown() override {
    qm_.reset();
    journal_.reset();
    (void)stores_.close();
  }
  // New empty stores, wrappers and journal (also between the rounds of one test).
  void fresh() {
    TearDown();
    ASSERT_TRUE(stores_.open().isOk());
    addProviders(*stores_.providers, 2);
    queue_ = std::make_unique<FaultyQueueStore>(*stores_.queue);
    content_ = std::make_unique<FaultyContentStore>(*stores_.content);
    journal_path_ = dir_.file("journal" + std::to_string(++rounds_));
    env_.clearFaults();
    auto j = Journal::open(&env_, journal_path_);
    ASSERT_TRUE(j.isOk());
    journal_ = std::move(j).value();
    metrics_ = std::make_unique<Metrics>();
    acks_.clear();
    botm_.fetches.clear();
    botm_.deletes.clear();
  }
  void start() {
    QmDeps deps{queue_.get(), content_.get(), stores_.providers.get(), journal_.get(), &clock_, metrics_.get(), &botm_,
                nullptr};
    qm_ = std::make_unique<QueueManager>(deps, options_);
    ASSERT_TRUE(qm_->open().isOk());
  }
  void submit(IntakeSet s) {
    qm_->submit(std::move(s), [this](bool ok, ErrorCode, const std::string&) { acks_.push_back(ok); });
  }
  // The one fetch out now, answered with success into `file`; its URL.
  std::string fetchOne(const std::string& file) {
    auto f = botm_.takeFetches();
    EXPECT_EQ(f.size(), 1u);
    if (f.size() != 1) return {};
    qm_->onResult(f[0].link, okResult(f[0].order.id, file));
    return f[0].order.url;
  }

  lcc::testing::SimClock clock_{kDayStart + Millis(12 * kHourMs + 17 * 60 * 1000 + 23 * 1000)};  // 12:17:23 UTC
  lcc::testing::TempDir dir_;
  lcc::testing::FaultEnv env_{posixEnv()};  // the intake journal's files
  std::string journal_path_;
  Stores stores_{"storage-memory", dir_.path(), &clock_, posixEnv()};
  std::unique_ptr<FaultyQueueStore> queue_;
  std::unique_ptr<FaultyContentStore> content_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<Metrics> metrics_ = std::make_unique<Metrics>();
  RecordingBotm botm_;
  QmOptions options_ = QmOptions::fromConfig(Config::defaults());
  std::unique_ptr<QueueManager> qm_;
  std::vector<bool> acks_;
  int rounds_ = 0;
};

}  // namespace lcc::qm::testing
