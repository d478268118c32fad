// The QM engine on every storage plugin, first part: intake acks, dispatch, results,
// errors and retries, priorities, bandwidth, time slots, deletes (qm_plugin_fixture.h).
#include "qm_plugin_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

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
  EXPECT_FALSE(f[0].order.if_modified_since) << "nothing stored yet";
  qm_->onResult(1, okResult(f[0].order.id, "f1", 100));
  // Only a new mt: ask the server whether it changed.
  submit(makeSet(1, {update(1, "http://a/1", 200)}, 2));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.if_modified_since, std::optional<std::int64_t>(100));
  qm_->onResult(1, okResult(f[0].order.id, "f2", 100));
  // The CP says the bytes changed (another size): fetch unconditionally, since a
  // server's one-second Last-Modified could not tell.
  UrlNotice changed = update(1, "http://a/1", 200);
  changed.size = 7;
  submit(makeSet(1, {changed}, 3));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].order.if_modified_since);
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
    // Each on a host of its own: one host would allow one fetch (qm.host_inflight).
    submit(makeSet(p, {update(p, "http://x" + std::to_string(p) + "/1")}, p));
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

INSTANTIATE_TEST_SUITE_P(Plugins, QmTest, ::testing::ValuesIn(storePlugins()), [](const auto& info) {
  std::string n = info.param;
  for (auto& c : n) if (c == '-') c = '_';
  return n;
});

}  // namespace
}  // namespace lcc::qm
