// The QM engine on every storage plugin, second part: overload, full sets, quota,
// restarts and crashes, journal corruption, ageing, QPSDB rebuilds (qm_plugin_fixture.h),
// and the cache-crash of a store that may have lost synced writes.
#include "common/config/config.h"
#include "qm_plugin_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

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

TEST_P(QmTest, LostBotmConnectionHandsTheFetchOutAgainOnceItsLeaseRanOut) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  ASSERT_EQ(botm_.takeFetches().size(), 1u);
  qm_->linkDown(1);
  EXPECT_EQ(qm_->inFlight(), 0u);
  qm_->linkUp(2, "m1", 4);
  EXPECT_TRUE(botm_.takeFetches().empty()) << "the lost BOT-M (cut off) may still fetch it until its lease ends";
  EXPECT_EQ(qm_->status()["fetch_lease"]["lost_held"], 1);
  clock_.advance(options_.fetch_lease + FetchLease::kMargin);
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
  QueueManager qm(deps, QmOptions::fromConfig(Config::defaults()));
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
