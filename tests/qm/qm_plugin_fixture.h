// qm_plugin_fixture.h — QmTest: a QueueManager on one storage plugin (the test's
// parameter, every plugin of LCC_QM_STORE_PLUGINS) through a FaultEnv, a recording BOT-M
// and a SimClock: the fixture of queue_manager_test.cc and queue_manager_recovery_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <fstream>

#include "common/config/config.h"
#include "faulty_stores.h"
#include "qm/queue_manager.h"
#include "qm_test_util.h"
#include "support/fault_env.h"

namespace lcc::qm::testing {

using lcc::testing::FaultEnv;
using lcc::testing::SimClock;
using lcc::testing::TempDir;

constexpr std::int64_t kHourMs = 3600 * 1000;
inline const WallTime kMidnight = fromUnixMillis(1714521600000);  // 2024-05-01T00:00:00Z

struct Ack {
  std::uint64_t set;
  bool ok;
  ErrorCode code;
};

class QmTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    clock_.setWall(kMidnight + Millis(12 * kHourMs));
    options_.bandwidth_tick = Millis(1000);
    options_.bandwidth_horizon = Millis(600 * 1000);
    options_.retry_delay = Millis(60 * 1000);
    options_.provider_error_delay = Millis(300 * 1000);
    options_.merge_interval = Millis(kHourMs);
    options_.botm_overload_pct = 100;
    options_.checkpoint_interval = Millis(kHourMs);
    openStores();
    addProviders(*stores_->providers, 3);
  }
  void TearDown() override {
    qm_.reset();
    journal_.reset();
    if (stores_) (void)stores_->close();
  }

  void openStores() {
    stores_ = std::make_unique<Stores>(GetParam(), dir_.file("stores"), &clock_, &env_);
    ASSERT_TRUE(env_.createDirs(dir_.file("stores")).isOk());
    ASSERT_TRUE(stores_->open().isOk());
  }
  Status start() {
    auto j = Journal::open(&env_, dir_.file("journal"));
    if (!j.isOk()) return j.status();
    journal_ = std::move(j).value();
    QmDeps deps;
    deps.queue = stores_->queue.get();
    deps.content = stores_->content.get();
    deps.providers = stores_->providers.get();
    deps.journal = journal_.get();
    deps.clock = &clock_;
    deps.botm = &botm_;
    deps.post = post_;
    qm_ = std::make_unique<QueueManager>(deps, options_);
    qm_->setIntakeListener([this](bool accepting) { accepting_.push_back(accepting); });
    if (shared_store_) qm_->treatStoreAsSharedForTest();
    return qm_->open();
  }
  // Drops the engine and the journal without a checkpoint (as a killed process).
  void stopHard() {
    qm_.reset();
    journal_.reset();
  }
  void submit(IntakeSet s) {
    std::uint64_t id = s.id;
    qm_->submit(std::move(s), [this, id](bool ok, ErrorCode code, const std::string&) { acks_.push_back({id, ok, code}); });
  }
  std::optional<ContentRecord> record(ProviderId pid, const std::string& url) {
    auto r = stores_->content->get(encodeUrlKey({pid, url, "text/html"}));
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }
  ProviderRecord provider(ProviderId pid) {
    auto r = stores_->providers->get(pid);
    EXPECT_TRUE(r.isOk() && r.value());
    return r.isOk() && r.value() ? *r.value() : ProviderRecord{};
  }
  std::vector<std::string> fetchedUrls(const std::vector<RecordingBotm::Fetch>& f) {
    std::vector<std::string> out;
    for (const auto& x : f) out.push_back(x.order.url);
    return out;
  }
  // Answers every outstanding fetch with success until nothing is left.
  void drain(int rounds = 100) {
    for (int i = 0; i < rounds; ++i) {
      auto f = botm_.takeFetches();
      if (f.empty()) return;
      for (const auto& x : f) qm_->onResult(x.link, okResult(x.order.id, "file-" + std::to_string(++files_)));
    }
  }

  SimClock clock_;
  TempDir dir_;
  FaultEnv env_{posixEnv()};
  QmOptions options_ = QmOptions::fromConfig(Config::defaults());
  std::unique_ptr<Stores> stores_;
  std::unique_ptr<Journal> journal_;
  RecordingBotm botm_;
  std::unique_ptr<QueueManager> qm_;
  std::function<void(std::function<void()>)> post_;
  std::vector<Ack> acks_;
  std::vector<bool> accepting_;
  int files_ = 0;
  bool shared_store_ = false;  // the queue store as storage-postgres's: another QM may take it over
};

}  // namespace lcc::qm::testing
