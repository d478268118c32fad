// The QM engine on every storage plugin: intake durability and acks, dispatch,
// results, errors, time slots, bandwidth, deletes, overload, cache-crash, restart.
#include "qm/queue_manager.h"

#include <gtest/gtest.h>

#include <fstream>

#include "faulty_stores.h"
#include "qm_test_util.h"
#include "support/fault_env.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;
using lcc::testing::FaultEnv;
using lcc::testing::SimClock;
using lcc::testing::TempDir;

constexpr std::int64_t kHourMs = 3600 * 1000;
const WallTime kMidnight = fromUnixMillis(1714521600000);  // 2024-05-01T00:00:00Z

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
  QmOptions options_;
  std::unique_ptr<Stores> stores_;
  std::unique_ptr<Journal> journal_;
  RecordingBotm botm_;
  std::unique_ptr<QueueManager> qm_;
  std::function<void(std::function<void()>)> post_;
  std::vector<Ack> acks_;
  std::vector<bool> accepting_;
  int files_ = 0;
};

TEST_P(QmTest, AcceptedSetIsFetchedSeriallyAndStored) {
  ASSERT_TRUE(start().isOk());
  submit(makeSet(1, {update(1, "http://a/1", 100), update(1, "http://a/2")}, 1));
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_TRUE(acks_[0].ok);
  EXPECT_EQ(qm_->queued(), 2u);
  EXPECT_EQ(qm_->queued(1), 2u);
  EXPECT_TRUE(botm_.fetches.empty());  // no BOT-M yet
  qm_->linkUp(7, "m1", 8);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u) << "one provider is fetched serially";
  EXPECT_EQ(f[0].order.url, "http://a/1");
  EXPECT_EQ(f[0].link, 7u);
  qm_->onResult(7, okResult(f[0].order.id, "00/00/01", 5120));
  auto r = record(1, "http://a/1");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->deleted);
  EXPECT_EQ(r->filename, "00/00/01");
  EXPECT_EQ(r->machine, "m1");
  EXPECT_EQ(r->size, 5120u);
  EXPECT_EQ(r->declared_mtime, 100);
  EXPECT_EQ(r->mtime, 100);  // no Last-Modified: the CP's mt
  EXPECT_EQ(qm_->queued(), 1u);
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.url, "http://a/2");
}

TEST_P(QmTest, AcksComeInOrderAfterOneGroupSync) {
  std::vector<std::function<void()>> posted;
  post_ = [&](std::function<void()> fn) { posted.push_back(std::move(fn)); };
  ASSERT_TRUE(start().isOk());
  const auto syncs_before = env_.syncCount();
  for (std::uint64_t id = 1; id <= 3; ++id) submit(makeSet(1, {update(1, "http://a/" + std::to_string(id))}, id));
  EXPECT_TRUE(acks_.empty()) << "acked before the journal was synced";
  ASSERT_EQ(posted.size(), 1u);
  auto fn = std::move(posted[0]);
  posted.clear();
  fn();
  ASSERT_EQ(acks_.size(), 3u);
  EXPECT_EQ(acks_[0].set, 1u);
  EXPECT_EQ(acks_[1].set, 2u);
  EXPECT_EQ(acks_[2].set, 3u);
  EXPECT_EQ(env_.syncCount() - syncs_before, 1u) << "one fsync for the three sets";
  EXPECT_EQ(qm_->status()["journal_syncs"], 1);
}

TEST_P(QmTest, ReplayedSetIdsAreAckedButNotAppliedAgain) {
  ASSERT_TRUE(start().isOk());
  submit(makeSet(1, {update(1, "http://a/1")}, 5));
  submit(makeSet(1, {update(1, "http://a/2")}, 5));
  submit(makeSet(1, {update(1, "http://a/3")}, 4));
  submit(makeSet(1, {update(1, "http://a/4")}, 5, SetKind::kPartial, "m2/uns"));  // another UNS
  ASSERT_EQ(acks_.size(), 4u);
  for (const auto& a : acks_) EXPECT_TRUE(a.ok);
  EXPECT_EQ(qm_->queued(), 2u);
  // Also across a restart: the highest id is kept with the applied set.
  ASSERT_TRUE(qm_->close().isOk());
  stopHard();
  ASSERT_TRUE(start().isOk());
  submit(makeSet(1, {update(1, "http://a/5")}, 5));
  EXPECT_EQ(qm_->queued(), 2u);
  submit(makeSet(1, {update(1, "http://a/6")}, 6));
  EXPECT_EQ(qm_->queued(), 3u);
}

TEST_P(QmTest, FailedJournalSyncRejectsAndRaisesCacheCrash) {
  ASSERT_TRUE(start().isOk());
  env_.failNthSync(1);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  ASSERT_EQ(acks_.size(), 1u);
  EXPECT_FALSE(acks_[0].ok);
  EXPECT_EQ(acks_[0].code, ErrorCode::kOffline);
  EXPECT_TRUE(qm_->cacheCrash());
  EXPECT_TRUE(qm_->failed());
  for (ProviderId p : {1u, 2u, 3u}) {
    EXPECT_TRUE(provider(p).fullset_wanted);
    EXPECT_EQ(provider(p).fullset_reason, FullSetReason::kCacheCrash);
  }
  ASSERT_FALSE(accepting_.empty());
  EXPECT_FALSE(accepting_.back());
  submit(makeSet(1, {update(1, "http://a/2")}, 2));  // sticky
  EXPECT_FALSE(acks_.back().ok);
}

TEST_P(QmTest, RemovalDuringTheFetchDropsWhatCameBack) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  submit(makeSet(1, {removal(1, "http://a/1")}, 2));
  qm_->onResult(1, okResult(f[0].order.id, "00/00/09"));
  auto r = record(1, "http://a/1");
  EXPECT_TRUE(!r || r->deleted) << "content stored although removed during the fetch";
  EXPECT_EQ(qm_->queued(), 0u);
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "00/00/09");
  EXPECT_EQ(d[0].machine, "m1");
  qm_->onDeleted(1, d[0].id, true, "");
  std::size_t fsm = 0;
  ASSERT_TRUE(stores_->queue->scanDeletes(std::nullopt, [&](const DeleteRequest&) { return ++fsm, true; }).isOk());
  EXPECT_EQ(fsm, 0u);
}

TEST_P(QmTest, UpdateDuringTheFetchIsFetchedAgain) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1", 1)}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  submit(makeSet(1, {update(1, "http://a/1", 2)}, 2));
  qm_->onResult(1, okResult(f[0].order.id, "f1"));
  EXPECT_EQ(record(1, "http://a/1")->declared_mtime, 1);
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(1, okResult(f[0].order.id, "f2"));
  EXPECT_EQ(record(1, "http://a/1")->declared_mtime, 2);
  EXPECT_EQ(record(1, "http://a/1")->filename, "f2");
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u) << "the replaced file is deleted";
  EXPECT_EQ(d[0].file, "f1");
}

TEST_P(QmTest, ConditionalFetchOnlyWhenTheCpDidNotDeclareOtherBytes) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1", 100)}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].order.since) << "nothing stored yet";
  qm_->onResult(1, okResult(f[0].order.id, "f1", 100));
  // Only a new mt: ask the server whether it changed.
  submit(makeSet(1, {update(1, "http://a/1", 200)}, 2));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.since, std::optional<std::int64_t>(100));
  qm_->onResult(1, okResult(f[0].order.id, "f2", 100));
  // The CP says the bytes changed (another size): fetch unconditionally, since a
  // server's one-second Last-Modified could not tell.
  UrlNotice changed = update(1, "http://a/1", 200);
  changed.size = 7;
  submit(makeSet(1, {changed}, 3));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].order.since);
}

TEST_P(QmTest, NotModifiedRefreshesWithoutReportingAChange) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1", 100)}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(1, okResult(f[0].order.id, "f1"));
  const ChangeSeq seq = record(1, "http://a/1")->seq;
  submit(makeSet(1, {update(1, "http://a/1", 200)}, 2));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  FetchResult not_modified;
  not_modified.id = f[0].order.id;
  not_modified.http_status = 304;
  not_modified.unchanged = true;
  qm_->onResult(1, not_modified);
  auto r = record(1, "http://a/1");
  EXPECT_EQ(r->seq, seq) << "a content user must not see an unchanged URL as changed";
  EXPECT_EQ(r->declared_mtime, 200);
  EXPECT_EQ(r->filename, "f1");
  EXPECT_EQ(qm_->queued(), 0u);
}

TEST_P(QmTest, RetryableErrorGoesToTheEndMarkedBadAndWaitsRetryDelay) {
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/1"});
  qm_->onResult(1, errResult(f[0].order.id, ErrorCode::kServerError, 500));
  f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/2"});
  qm_->onResult(1, okResult(f[0].order.id, "f2"));
  EXPECT_TRUE(botm_.fetches.empty()) << "the bad URL came back before qm.retry_delay";
  clock_.advance(Millis(59 * 1000));
  EXPECT_TRUE(botm_.fetches.empty());
  clock_.advance(Millis(2 * 1000));
  f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/1"});
  qm_->onResult(1, okResult(f[0].order.id, "f1"));
  EXPECT_TRUE(record(1, "http://a/1"));
  EXPECT_EQ(provider(1).error_total, 0u);
}

TEST_P(QmTest, RetriesExhaustedBecomeAPermanentError) {
  options_.max_retries = 1;
  options_.retry_delay = Millis(0);
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, errResult(f[0].order.id, ErrorCode::kFetchTimeout));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(1, errResult(f[0].order.id, ErrorCode::kFetchTimeout));
  EXPECT_TRUE(botm_.fetches.empty());
  EXPECT_EQ(qm_->queued(), 0u);
  auto p = provider(1);
  EXPECT_EQ(p.error_total, 1u);
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].code, ErrorCode::kFetchTimeout);
  EXPECT_EQ(p.errors[0].notice.key.url, "http://a/1");
}

TEST_P(QmTest, PermanentErrorIsRecordedBoundedAndRemovesTheContent) {
  options_.max_errors_kept = 2;
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/0", 1)}, 1));
  drain();
  ASSERT_TRUE(record(1, "http://a/0"));
  submit(makeSet(1, {update(1, "http://a/0", 2), update(1, "http://a/1"), update(1, "http://a/2")}, 2));
  for (int i = 0; i < 3; ++i) {
    auto f = botm_.takeFetches();
    ASSERT_EQ(f.size(), 1u);
    qm_->onResult(1, errResult(f[0].order.id, ErrorCode::kNotFound, 404));
  }
  EXPECT_TRUE(record(1, "http://a/0")->deleted) << "a final error acts as a removal";
  auto p = provider(1);
  EXPECT_EQ(p.error_total, 3u);
  EXPECT_EQ(p.errors.size(), 2u) << "qm.max_errors_kept";
  EXPECT_EQ(p.errors[0].http_status, 404);
  ASSERT_EQ(botm_.takeDeletes().size(), 1u);
}

TEST_P(QmTest, RetryAfterHoldsTheWholeSet) {
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 2u);
  const auto& a = f[0].order.url == "http://a/1" ? f[0] : f[1];
  const auto& b = f[0].order.url == "http://a/1" ? f[1] : f[0];
  qm_->onResult(1, errResult(a.order.id, ErrorCode::kServerError, 503, std::chrono::seconds(120)));
  qm_->onResult(1, okResult(b.order.id, "b1"));
  clock_.advance(Millis(119 * 1000));
  EXPECT_TRUE(botm_.fetches.empty()) << "provider 1 fetched during its Retry-After";
  clock_.advance(Millis(2 * 1000));
  f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/1"}) << "the set resumes at the same URL";
}

TEST_P(QmTest, ProviderWideErrorDelaysTheSetByProviderErrorDelay) {
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, errResult(f[0].order.id, ErrorCode::kDnsFailure));
  clock_.advance(Millis(299 * 1000));
  EXPECT_TRUE(botm_.fetches.empty());
  clock_.advance(Millis(2 * 1000));
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://a/1"});
}

TEST_P(QmTest, HigherPriorityProviderTakesTheNextSlot) {
  ASSERT_TRUE(stores_->providers->modify(2, [](ProviderRecord& r) { r.priority = 5; return Status::ok(); }).isOk());
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 1);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/1"});
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  EXPECT_TRUE(botm_.fetches.empty());  // the only slot is busy
  qm_->onResult(1, okResult(f[0].order.id, "a1"));
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://b/1"});
}

TEST_P(QmTest, BotmCapacityTimesOverloadIsTheInFlightCap) {
  options_.botm_overload_pct = 150;
  ASSERT_TRUE(start().isOk());
  for (ProviderId p = 1; p <= 3; ++p) {
    submit(makeSet(p, {update(p, "http://x/" + std::to_string(p))}, p));
  }
  qm_->linkUp(1, "m1", 2);
  EXPECT_EQ(botm_.takeFetches().size(), 3u);
  EXPECT_EQ(qm_->inFlight(), 3u);
}

TEST_P(QmTest, BandwidthLimitSpacesTheFetches) {
  ASSERT_TRUE(stores_->providers->modify(1, [](ProviderRecord& r) { r.bandwidth = 1000; return Status::ok(); }).isOk());
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, okResult(f[0].order.id, "a1", 10000));  // 10 s worth at 1000 B/s
  clock_.advance(Millis(9 * 1000));
  EXPECT_TRUE(botm_.fetches.empty()) << "bandwidth limit not enforced";
  clock_.advance(Millis(2 * 1000));
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://a/2"});
}

TEST_P(QmTest, BandwidthDebtPastTheHorizonMovesTheSetToATimeSlot) {
  ASSERT_TRUE(stores_->providers->modify(1, [](ProviderRecord& r) { r.bandwidth = 1; return Status::ok(); }).isOk());
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, okResult(f[0].order.id, "a1", 2 * 3600));  // two hours at 1 B/s
  std::vector<PSetRecord> lists;
  ASSERT_TRUE(stores_->queue->scanPSets(std::nullopt, [&](const PSetRecord& p) { return lists.push_back(p), true; }).isOk());
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_NE(lists[0].slot, kSlotNow);
  EXPECT_TRUE(botm_.fetches.empty());
  clock_.advance(Millis(3 * kHourMs));  // merges run every hour
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://a/2"});
}

TEST_P(QmTest, WindowClosingMidSetMovesTheRestToItsNextSlot) {
  clock_.setWall(kMidnight + Millis(12 * kHourMs + 30 * 60 * 1000));  // 12:30
  ASSERT_TRUE(start().isOk());
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1", std::nullopt, "12-13"), update(1, "http://a/2", std::nullopt, "12-13"),
                     update(1, "http://a/3")},
                 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/1"});
  clock_.advance(Millis(31 * 60 * 1000));  // 13:01: the window closed during the fetch
  qm_->onResult(1, okResult(f[0].order.id, "a1"));
  f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/3"}) << "any-time URLs go on";
  qm_->onResult(1, okResult(f[0].order.id, "a3"));
  auto l = stores_->queue->getPSet(1, 12);
  ASSERT_TRUE(l.isOk() && l.value());
  EXPECT_EQ(l.value()->count, 1u);
  clock_.advance(Millis(22 * kHourMs));  // 11:01 next day
  EXPECT_TRUE(botm_.fetches.empty());
  clock_.advance(Millis(2 * kHourMs));   // past 12:00: the slot merged
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://a/2"});
}

TEST_P(QmTest, SlotListsMergeWhenTheirSlotStarts) {
  ASSERT_TRUE(start().isOk());  // 12:00
  qm_->startTimers();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/night", std::nullopt, "2-4")}, 1));
  EXPECT_TRUE(botm_.fetches.empty());
  clock_.advance(Millis(13 * kHourMs));  // 01:00
  EXPECT_TRUE(botm_.fetches.empty());
  clock_.advance(Millis(2 * kHourMs));  // 03:00
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://a/night"});
}

TEST_P(QmTest, DeleteManagerKeepsUndeliverableDeletesUntilTheMachineAppears) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, okResult(f[0].order.id, "00/00/05", 100, "m2"));  // stored on m2
  submit(makeSet(1, {removal(1, "http://a/1")}, 2));
  EXPECT_TRUE(botm_.deletes.empty()) << "no link serves m2 yet";
  qm_->linkMachines(1, {"m1", "m2"});
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  qm_->onDeleted(1, d[0].id, false, "unknown-machine");
  EXPECT_TRUE(botm_.deletes.empty());
  // Still in the FSMDB, also across a restart.
  ASSERT_TRUE(qm_->close().isOk());
  stopHard();
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(2, "m2", 4);
  d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].machine, "m2");
  EXPECT_EQ(d[0].file, "00/00/05");
  qm_->onDeleted(2, d[0].id, true, "");
  std::size_t fsm = 0;
  ASSERT_TRUE(stores_->queue->scanDeletes(std::nullopt, [&](const DeleteRequest&) { return ++fsm, true; }).isOk());
  EXPECT_EQ(fsm, 0u);
}

TEST_P(QmTest, AResultNamingAFileDropsAStaleDeleteOfThatName) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, okResult(f[0].order.id, "00/00/05"));
  submit(makeSet(1, {removal(1, "http://a/1")}, 2));
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  // The BOT-M unlinked and freed 00/00/05, but the answer was lost with the link.
  qm_->linkDown(1);
  // The name is handed out again for another URL, on a link that does not serve m1's
  // deletes yet, and its result comes back before the stale delete is sent again.
  qm_->linkUp(2, "m9", 4);
  botm_.takeDeletes();
  submit(makeSet(1, {update(1, "http://a/2")}, 3));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(2, okResult(f[0].order.id, "00/00/05", 100, "m1"));
  std::vector<DeleteRequest> fsm;
  ASSERT_TRUE(stores_->queue->scanDeletes(std::nullopt, [&](const DeleteRequest& r) { return fsm.push_back(r), true; }).isOk());
  EXPECT_TRUE(fsm.empty()) << "a delete of a name in use again would unlink the new content";
  qm_->linkUp(3, "m1", 4);
  EXPECT_TRUE(botm_.takeDeletes().empty());
  EXPECT_EQ(record(1, "http://a/2")->filename, "00/00/05");
}

TEST_P(QmTest, OverloadRefusesSetsAndResumesBelowTheLowMark) {
  options_.queue_high = 3;
  options_.queue_low = 2;
  ASSERT_TRUE(start().isOk());
  std::vector<UrlNotice> urls;
  for (int i = 0; i < 5; ++i) urls.push_back(update(1, "http://a/" + std::to_string(i)));
  submit(makeSet(1, urls, 1));
  EXPECT_TRUE(acks_.back().ok);
  EXPECT_TRUE(qm_->overloaded());
  ASSERT_EQ(accepting_, std::vector<bool>{false});
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  EXPECT_FALSE(acks_.back().ok);
  EXPECT_EQ(acks_.back().code, ErrorCode::kOffline);
  qm_->linkUp(1, "m1", 4);
  for (int i = 0; i < 4; ++i) {
    auto f = botm_.takeFetches();
    ASSERT_EQ(f.size(), 1u);
    qm_->onResult(1, okResult(f[0].order.id, "f" + std::to_string(i)));
  }
  EXPECT_FALSE(qm_->overloaded());
  EXPECT_EQ(accepting_, (std::vector<bool>{false, true}));
  submit(makeSet(2, {update(2, "http://b/1")}, 3));
  EXPECT_TRUE(acks_.back().ok);
}

TEST_P(QmTest, FullSetRemovesTheRestAndClearsTheWantedFlag) {
  ASSERT_TRUE(stores_->providers->modify(1, [](ProviderRecord& r) {
    r.fullset_wanted = true;
    r.fullset_reason = FullSetReason::kOldFiles;
    return Status::ok();
  }).isOk());
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  drain();
  submit(makeSet(1, {update(1, "http://a/2")}, 2, SetKind::kFull));
  EXPECT_TRUE(record(1, "http://a/1")->deleted);
  EXPECT_FALSE(provider(1).fullset_wanted);
  drain();
  EXPECT_FALSE(record(1, "http://a/2")->deleted);
}

TEST_P(QmTest, QuotaUseIsKeptInThePidb) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  drain();
  ASSERT_TRUE(qm_->checkpoint().isOk());
  EXPECT_EQ(provider(1).used_files, 2u);
  EXPECT_EQ(provider(1).used_bytes, 200u);
  submit(makeSet(1, {removal(1, "http://a/1")}, 2));
  ASSERT_TRUE(qm_->checkpoint().isOk());
  EXPECT_EQ(provider(1).used_files, 1u);
  EXPECT_EQ(provider(1).used_bytes, 100u);
}

TEST_P(QmTest, RestartInTheMiddleOfASetResumesWhereItWas) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2"), update(1, "http://a/3")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, okResult(f[0].order.id, "f1"));
  f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/2"});  // in flight when we stop
  if (stores_->persistent()) {
    ASSERT_TRUE(qm_->checkpoint().isOk());
    stopHard();
    ASSERT_TRUE(stores_->close().isOk());
    openStores();
  } else {
    stopHard();  // the memory stores live on: only the engine restarts
  }
  ASSERT_TRUE(start().isOk());
  EXPECT_EQ(qm_->queued(), 2u);
  qm_->linkUp(1, "m1", 4);
  f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/2"});
  qm_->onResult(1, okResult(f[0].order.id, "f2"));
  EXPECT_EQ(fetchedUrls(botm_.takeFetches()), std::vector<std::string>{"http://a/3"});
  EXPECT_EQ(record(1, "http://a/1")->filename, "f1");
}

TEST_P(QmTest, CrashOfTheIntakeLosesNoAckedSet) {
  ASSERT_TRUE(start().isOk());
  for (std::uint64_t id = 1; id <= 20; ++id) {
    submit(makeSet(1 + id % 3, {update(1 + id % 3, "http://x/" + std::to_string(id))}, id));
  }
  ASSERT_EQ(acks_.size(), 20u);
  if (stores_->persistent()) {
    ASSERT_TRUE(qm_->checkpoint().isOk());
  }
  for (std::uint64_t id = 21; id <= 30; ++id) {
    submit(makeSet(1, {update(1, "http://x/" + std::to_string(id))}, id));
  }
  // Power loss: whatever the journal did not sync is gone; the stores are reopened
  // (a memory store loses everything, so only the journal can bring the sets back).
  stopHard();
  env_.crash();
  const bool persistent = stores_->persistent();
  // A store that writes through the Env (storage-kyoto's redo log) crashed too: its
  // close fails and whatever it did not sync is gone.
  if (persistent) (void)stores_->close();
  stores_.reset();
  openStores();
  if (!persistent) addProviders(*stores_->providers, 3);
  ASSERT_TRUE(start().isOk());
  EXPECT_EQ(qm_->queued(), 30u) << "an acknowledged set was lost";
  // The UNS sends the last set again (its ack might have been lost): nothing doubles.
  submit(makeSet(1, {update(1, "http://x/30")}, 30));
  EXPECT_EQ(qm_->queued(), 30u);
}

TEST_P(QmTest, JournalCorruptionRaisesCacheCrash) {
  // Needs stores that forget what was applied, so that the journal is replayed.
  if (stores_->persistent()) GTEST_SKIP() << "covered on storage-memory";
  ASSERT_TRUE(start().isOk());
  for (std::uint64_t id = 1; id <= 3; ++id) submit(makeSet(1, {update(1, "http://x/" + std::to_string(id))}, id));
  stopHard();
  // Flip a byte inside the first record, with good records after it.
  auto files = env_.listDir(dir_.file("journal"));
  ASSERT_TRUE(files.isOk());
  std::string seg;
  for (const auto& n : files.value()) {
    if (n.size() > 4 && n.substr(n.size() - 4) == ".jnl") seg = dir_.file("journal/" + n);
  }
  ASSERT_FALSE(seg.empty());
  {
    std::fstream fs(seg, std::ios::in | std::ios::out | std::ios::binary);
    fs.seekp(30);
    fs.put('\x7f');
  }
  stores_.reset();
  openStores();
  addProviders(*stores_->providers, 3);
  ASSERT_TRUE(start().isOk());
  EXPECT_TRUE(qm_->cacheCrash());
  EXPECT_EQ(provider(1).fullset_reason, FullSetReason::kCacheCrash);
  EXPECT_TRUE(provider(2).fullset_wanted);
}

TEST_P(QmTest, AgeingWarnsExpiresAndPurges) {
  options_.age_warn = Millis(10 * 24 * kHourMs);
  options_.age_expire = Millis(20 * 24 * kHourMs);
  options_.tombstone_keep = Millis(5 * 24 * kHourMs);
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/old")}, 1));
  submit(makeSet(2, {update(2, "http://b/old"), update(2, "http://b/gone")}, 2));
  drain();
  submit(makeSet(2, {removal(2, "http://b/gone")}, 3));
  clock_.advance(Millis(6 * 24 * kHourMs));
  submit(makeSet(1, {update(1, "http://a/old")}, 4));  // no declared fields: fetched again, refreshed
  drain();
  clock_.advance(Millis(6 * 24 * kHourMs));  // day 12
  ASSERT_TRUE(qm_->age().isOk());
  EXPECT_FALSE(record(2, "http://b/gone")) << "tombstone not purged";
  EXPECT_TRUE(provider(2).fullset_wanted);
  EXPECT_EQ(provider(2).fullset_reason, FullSetReason::kOldFiles);
  EXPECT_FALSE(provider(1).fullset_wanted);
  clock_.advance(Millis(9 * 24 * kHourMs));  // day 21
  ASSERT_TRUE(qm_->age().isOk());
  EXPECT_TRUE(record(2, "http://b/old")->deleted);
  EXPECT_FALSE(record(1, "http://a/old")->deleted);
  EXPECT_EQ(provider(2).fullset_reason, FullSetReason::kOldFiles) << "an earlier reason is kept";
}

TEST_P(QmTest, DamagedQpsdbIsRebuiltFromTheQdbAtStart) {
  ASSERT_TRUE(start().isOk());
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  submit(makeSet(2, {update(2, "http://b/1")}, 2));
  ASSERT_TRUE(qm_->close().isOk());
  stopHard();
  QueueBatch b;
  b.removePSet(1, kSlotNow);  // lose the list of set 1
  ASSERT_TRUE(stores_->queue->apply(b).isOk());
  ASSERT_TRUE(start().isOk());
  EXPECT_EQ(qm_->queued(), 3u);
  qm_->linkUp(1, "m1", 8);
  drain();
  EXPECT_TRUE(record(1, "http://a/1"));
  EXPECT_TRUE(record(1, "http://a/2"));
  EXPECT_TRUE(record(2, "http://b/1"));
  EXPECT_EQ(qm_->queued(), 0u);
}

TEST_P(QmTest, LostBotmConnectionHandsTheFetchOutAgain) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  ASSERT_EQ(botm_.takeFetches().size(), 1u);
  qm_->linkDown(1);
  EXPECT_EQ(qm_->inFlight(), 0u);
  qm_->linkUp(2, "m1", 4);
  auto f = botm_.takeFetches();
  ASSERT_EQ(fetchedUrls(f), std::vector<std::string>{"http://a/1"});
  EXPECT_EQ(f[0].link, 2u);
}

TEST_P(QmTest, ASuccessWithoutAFileIsRetriedNotStored) {
  options_.retry_delay = Millis(0);
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  auto f = botm_.takeFetches();
  qm_->onResult(1, okResult(f[0].order.id, ""));
  EXPECT_FALSE(record(1, "http://a/1"));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u) << "not retried";
  qm_->onResult(1, okResult(f[0].order.id, "f1"));
  EXPECT_EQ(record(1, "http://a/1")->filename, "f1");
  qm_->onResult(1, okResult(f[0].order.id, "f2"));  // a duplicate result id is ignored
  EXPECT_EQ(record(1, "http://a/1")->filename, "f1");
}

TEST_P(QmTest, GroupCommitDelayGathersSetsIntoOneSync) {
  options_.group_commit_delay = Millis(5);
  ASSERT_TRUE(start().isOk());
  const auto syncs_before = env_.syncCount();
  for (std::uint64_t id = 1; id <= 4; ++id) submit(makeSet(1, {update(1, "http://a/" + std::to_string(id))}, id));
  clock_.advance(Millis(4));
  EXPECT_TRUE(acks_.empty()) << "acked before the group commit";
  clock_.advance(Millis(1));
  ASSERT_EQ(acks_.size(), 4u);
  EXPECT_EQ(env_.syncCount() - syncs_before, 1u);
  EXPECT_EQ(qm_->queued(), 4u);
}

TEST_P(QmTest, QpsdbRebuildAtRunTimeKeepsTheQueueGoing) {
  ASSERT_TRUE(start().isOk());
  submit(makeSet(1, {update(1, "http://a/1"), update(1, "http://a/2")}, 1));
  submit(makeSet(2, {update(2, "http://b/1", std::nullopt, "2-4")}, 2));  // waits in slot 2
  ASSERT_TRUE(qm_->rebuildPSets().isOk());
  EXPECT_EQ(qm_->queued(), 3u);
  auto night = stores_->queue->getPSet(2, 2);
  ASSERT_TRUE(night.isOk() && night.value()) << "the slot list was not rebuilt";
  qm_->linkUp(1, "m1", 4);
  drain();
  EXPECT_TRUE(record(1, "http://a/1"));
  EXPECT_TRUE(record(1, "http://a/2"));
  EXPECT_EQ(qm_->queued(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Plugins, QmTest, ::testing::ValuesIn(storePlugins()), [](const auto& info) {
  std::string n = info.param;
  for (auto& c : n) if (c == '-') c = '_';
  return n;
});

}  // namespace
}  // namespace lcc::qm

namespace lcc::qm {
namespace {

TEST(QmCacheCrash, AStoreThatMayHaveLostSyncedWritesRaisesIt) {
  lcc::testing::SimClock clock;
  lcc::testing::TempDir dir;
  testing::Stores stores("storage-memory", dir.path(), &clock, posixEnv());
  ASSERT_TRUE(stores.open().isOk());
  testing::addProviders(*stores.providers, 2);
  testing::FaultyQueueStore lossy(*stores.queue, /*lossy=*/true);
  auto j = Journal::open(posixEnv(), dir.file("journal"));
  ASSERT_TRUE(j.isOk());
  QmDeps deps{&lossy, stores.content.get(), stores.providers.get(), j.value().get(), &clock, nullptr, nullptr, nullptr};
  QueueManager qm(deps, QmOptions{});
  ASSERT_TRUE(qm.open().isOk());
  EXPECT_TRUE(qm.cacheCrash());
  for (ProviderId p : {1u, 2u}) {
    auto r = stores.providers->get(p);
    ASSERT_TRUE(r.isOk() && r.value());
    EXPECT_TRUE(r.value()->fullset_wanted);
    EXPECT_EQ(r.value()->fullset_reason, FullSetReason::kCacheCrash);
  }
  // Sticky until the provider sends a full set; then only that provider's flag clears.
  bool acked = false;
  qm.submit(testing::makeSet(1, {testing::update(1, "http://a/1")}, 1, SetKind::kFull),
            [&](bool ok, ErrorCode, const std::string&) { acked = ok; });
  EXPECT_TRUE(acked);
  EXPECT_FALSE(stores.providers->get(1).value()->fullset_wanted);
  EXPECT_TRUE(stores.providers->get(2).value()->fullset_wanted);
}

}  // namespace
}  // namespace lcc::qm
