// Group commit of PIDB writes: concurrent changes share one sync, nothing is reported
// durable before the sync that covers it, and a failed sync fails its whole batch.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <vector>

#include "common/config/config.h"
#include "common/password.h"
#include "support/sim_clock.h"
#include "uns/provider_committer.h"
#include "uns/uns_core.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

// A ProviderStore over storage-memory that counts writes and syncs, can hold a sync
// until the test opens the gate, can fail the next sync, and can answer Busy (a lost
// connection: reads, or syncs).
class GatedStore final : public ProviderStore {
 public:
  explicit GatedStore(ProviderStore* inner) : inner_(inner) {}
  const StoreOpenInfo& openInfo() const override { return inner_->openInfo(); }
  Result<ProviderId> create(const ProviderRecord& r) override { return inner_->create(r); }
  Result<std::optional<ProviderRecord>> get(ProviderId id) override {
    if (busy_reads_) return Status::busy("the connection was lost (test); try again later");
    return inner_->get(id);
  }
  Status put(const ProviderRecord& r, const WriteOptions& o) override { return inner_->put(r, o); }
  using ProviderStore::modify;
  using ProviderStore::put;
  Status modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn, const WriteOptions& o) override {
    (o.durable ? durable_writes_ : buffered_writes_)++;
    return inner_->modify(id, fn, o);
  }
  Status remove(ProviderId id) override { return inner_->remove(id); }
  Status scan(const std::function<bool(const ProviderRecord&)>& fn) override { return inner_->scan(fn); }
  Status close() override { return inner_->close(); }
  Status sync() override {
    std::unique_lock<std::mutex> lock(mu_);
    ++syncs_;
    in_sync_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    in_sync_ = false;
    if (syncs_ == fail_number_) return Status::ioError("fdatasync failed (test)");
    if (busy_syncs_) return Status::busy("the connection was lost (test); try again later");
    return inner_->sync();
  }

  void closeGate() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void openGate() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Sync number n (counting from 1) fails.
  void failSync(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_number_ = n;
  }
  // Waits (bounded) until a sync is held at the gate.
  bool waitInSync() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [this] { return in_sync_; });
  }
  int syncs() {
    std::lock_guard<std::mutex> lock(mu_);
    return syncs_;
  }
  void setBusy(bool reads, bool syncs) {
    busy_reads_ = reads;
    busy_syncs_ = syncs;
  }
  int durableWrites() const { return durable_writes_; }
  int bufferedWrites() const { return buffered_writes_; }

 private:
  ProviderStore* inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true, in_sync_ = false;
  int syncs_ = 0, fail_number_ = 0;
  std::atomic<int> durable_writes_{0}, buffered_writes_{0};
  std::atomic<bool> busy_reads_{false}, busy_syncs_{false};
};

ProviderRecord active(ProviderId id, std::string hash = "") {
  ProviderRecord p;
  p.id = id;
  p.state = ProviderState::kActive;
  p.password_hash = std::move(hash);
  return p;
}

// Counts the `done` calls and remembers their statuses.
struct Outcomes {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Status> got;
  ProviderCommitter::Done add() {
    return [this](const Status& s) {
      std::lock_guard<std::mutex> lock(mu);
      got.push_back(s);
      cv.notify_all();
    };
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return got.size();
  }
  bool waitFor(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return got.size() >= n; });
  }
};

Status bumpSeq(ProviderRecord& p) {
  ++p.conn_seq;
  return Status::ok();
}

class ProviderCommitterTest : public ::testing::Test {
 protected:
  std::uint64_t seqOf(ProviderId id) { return fx_.store()->get(id).value()->conn_seq; }
  // A UnsCore on store_ where provider 1 logs in with token_.
  std::unique_ptr<UnsCore> coreWith(std::uint64_t connections_per_provider) {
    EXPECT_TRUE(store_.put(active(1, hasher_->hashToken(token_))).isOk());
    CoreConfig config = CoreConfig::fromConfig(Config::defaults());
    config.passwords = hasher_;
    config.max_connections_per_provider = connections_per_provider;
    return std::make_unique<UnsCore>(config, &store_, &clock_, nullptr);
  }

  testing::ProviderFixture fx_{{active(1), active(2), active(3)}};
  GatedStore store_{fx_.store()};
  std::shared_ptr<const PasswordHasher> hasher_ = PasswordHasher::ephemeral();
  const std::string token_ = PasswordHasher::generateToken();
  lcc::testing::SimClock clock_;
};

TEST_F(ProviderCommitterTest, ChangesQueuedDuringASyncShareTheNextOne) {
  ProviderCommitter committer(&store_);
  Outcomes out;
  store_.closeGate();
  committer.modify(1, bumpSeq, out.add());
  ASSERT_TRUE(store_.waitInSync());
  constexpr int kQueued = 60;
  for (int i = 0; i < kQueued; ++i) committer.modify(static_cast<ProviderId>(1 + i % 3), bumpSeq, out.add());
  EXPECT_EQ(out.count(), 0u) << "nothing is reported before the sync that covers it";
  store_.openGate();
  ASSERT_TRUE(out.waitFor(kQueued + 1));
  for (const Status& s : out.got) EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(seqOf(1) + seqOf(2) + seqOf(3), static_cast<std::uint64_t>(kQueued + 1));
  EXPECT_EQ(store_.syncs(), 2) << "one sync for the first change, one for the 60 queued behind it";
  EXPECT_EQ(store_.bufferedWrites(), kQueued + 1);
  EXPECT_EQ(store_.durableWrites(), 0) << "every write waits for the batch's sync, none syncs alone";
  EXPECT_EQ(committer.stats().changes, static_cast<std::uint64_t>(kQueued + 1));
  EXPECT_EQ(committer.stats().largest_batch, static_cast<std::uint64_t>(kQueued));
}

TEST_F(ProviderCommitterTest, AFailedSyncFailsEveryChangeOfItsBatchAndOnlyThat) {
  ProviderCommitter committer(&store_);
  // The sync held at the gate fails: its one change fails, the five behind it do not.
  Outcomes first, batch;
  store_.closeGate();
  committer.modify(1, bumpSeq, first.add());
  ASSERT_TRUE(store_.waitInSync());
  for (int i = 0; i < 5; ++i) committer.modify(2, bumpSeq, batch.add());
  store_.failSync(store_.syncs());
  store_.openGate();
  ASSERT_TRUE(first.waitFor(1));
  EXPECT_TRUE(first.got[0].isIOError());
  ASSERT_TRUE(batch.waitFor(5));
  for (const Status& s : batch.got) EXPECT_TRUE(s.isOk()) << s.toString();

  // The sync of the five queued behind a held one fails: all five fail, the held one not.
  Outcomes held, failed;
  store_.closeGate();
  committer.modify(1, bumpSeq, held.add());
  ASSERT_TRUE(store_.waitInSync());
  for (int i = 0; i < 5; ++i) committer.modify(3, bumpSeq, failed.add());
  store_.failSync(store_.syncs() + 1);
  store_.openGate();
  ASSERT_TRUE(held.waitFor(1));
  EXPECT_TRUE(held.got[0].isOk()) << held.got[0].toString();
  ASSERT_TRUE(failed.waitFor(5));
  for (const Status& s : failed.got) EXPECT_TRUE(s.isIOError()) << s.toString();
  EXPECT_EQ(store_.syncs(), 4);
}

TEST_F(ProviderCommitterTest, AChangeThatFailsFailsAloneAndAnEmptyBatchIsNotSynced) {
  ProviderCommitter committer(&store_);
  EXPECT_TRUE(committer.modifyAndWait(99, bumpSeq).isNotFound());
  EXPECT_EQ(store_.syncs(), 0) << "nothing was written, so nothing is synced";
  Status refused = committer.modifyAndWait(1, [](ProviderRecord&) { return Status::invalidArgument("no"); });
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(seqOf(1), 0u);
  EXPECT_TRUE(committer.modifyAndWait(1, bumpSeq).isOk());
  EXPECT_EQ(seqOf(1), 1u);
  EXPECT_EQ(store_.syncs(), 1);
}

TEST_F(ProviderCommitterTest, StoppingCommitsWhatIsQueued) {
  Outcomes out;
  {
    ProviderCommitter committer(&store_);
    store_.closeGate();
    committer.modify(1, bumpSeq, out.add());
    ASSERT_TRUE(store_.waitInSync());
    for (int i = 0; i < 10; ++i) committer.modify(2, bumpSeq, out.add());
    store_.openGate();
  }
  EXPECT_EQ(out.count(), 11u);
  EXPECT_EQ(seqOf(1) + seqOf(2), 11u);
}

// Sessions that authenticate together are counted with one sync, each with its own seq.
TEST_F(ProviderCommitterTest, ConcurrentInitsGetDistinctSeqsFromFewSyncs) {
  auto core = coreWith(100);
  const int syncs_before = store_.syncs();

  std::mutex mu;
  std::condition_variable cv;
  std::vector<AuthResult> results;
  auto collect = [&](AuthResult r) {
    std::lock_guard<std::mutex> lock(mu);
    results.push_back(std::move(r));
    cv.notify_all();
  };
  store_.closeGate();
  core->authenticate({"1", token_}, "192.0.2.1", collect);
  ASSERT_TRUE(store_.waitInSync());
  constexpr int kMore = 30;
  for (int i = 0; i < kMore; ++i) core->authenticate({"1", token_}, "192.0.2.1", collect);
  store_.openGate();
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return results.size() == kMore + 1; }));
  std::set<std::uint64_t> seqs;
  for (const AuthResult& r : results) {
    EXPECT_EQ(r.code, ErrorCode::kNone) << r.message;
    seqs.insert(r.info.seq);
  }
  EXPECT_EQ(seqs.size(), static_cast<std::size_t>(kMore + 1)) << "no connection seq is given twice";
  EXPECT_EQ(*seqs.rbegin(), static_cast<std::uint64_t>(kMore + 1));
  EXPECT_EQ(store_.syncs() - syncs_before, 2);
  EXPECT_EQ(core->commitStats().syncs, 2u);
}

// A failed sync refuses the init (500) and frees the provider's slot.
TEST_F(ProviderCommitterTest, AnInitWhoseSyncFailsIsRefusedAndFreesItsSlot) {
  auto core = coreWith(1);
  store_.failSync(store_.syncs() + 1);
  AuthResult r = core->authenticate({"1", token_}, "192.0.2.1");
  EXPECT_EQ(r.code, ErrorCode::kInternal);
  AuthResult again = core->authenticate({"1", token_}, "192.0.2.1");
  EXPECT_EQ(again.code, ErrorCode::kNone) << "the failed init did not keep the only slot: " << again.message;
}

// A PIDB that answers Busy (a lost connection, a failover of a shared store) is "try
// later" (130), not an error (500); the same init goes through once it answers.
TEST_F(ProviderCommitterTest, AnInitWhileThePidbIsBusyIsTryLater) {
  auto core = coreWith(1);
  store_.setBusy(/*reads=*/true, /*syncs=*/false);
  AuthResult r = core->authenticate({"1", token_}, "192.0.2.1");
  EXPECT_EQ(r.code, ErrorCode::kOffline) << r.message;
  store_.setBusy(false, /*syncs=*/true);
  r = core->authenticate({"1", token_}, "192.0.2.1");
  EXPECT_EQ(r.code, ErrorCode::kOffline) << r.message;
  store_.setBusy(false, false);
  r = core->authenticate({"1", token_}, "192.0.2.1");
  EXPECT_EQ(r.code, ErrorCode::kNone) << "the refused inits did not keep the only slot: " << r.message;
}

}  // namespace
}  // namespace lcc::uns
