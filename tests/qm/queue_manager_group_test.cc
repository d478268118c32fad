// The sets of one group commit are applied in one StoreTxn with one write of the metas
// (queue_manager_intake.cc, applyBatch): on every storage plugin, a batch of small sets
// from two UNSes with a full set in the middle leaves the stores exactly as applying the
// sets one by one does, and so does replaying the batch from the journal after a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>

#include "common/config/config.h"
#include "qm/queue_manager.h"
#include "qm_test_util.h"
#include "support/fault_env.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;
using lcc::testing::FaultEnv;
using lcc::testing::SimClock;
using lcc::testing::TempDir;

// Everything the QM keeps in its stores, in a comparable form.
struct Dump {
  std::vector<QueueEntry> rows;
  std::vector<PSetRecord> lists;
  std::vector<ContentRecord> content;
  std::vector<DeleteRequest> deletes;
  std::vector<std::optional<std::string>> metas;
};

// One QM over its own stores, journal, Env and clock.
class World {
 public:
  World(const std::string& plugin, const std::string& dir) : plugin_(plugin), dir_(dir) {}
  ~World() { stopHard(); if (stores_) (void)stores_->close(); }

  void openStores(bool add_providers) {
    stores_ = std::make_unique<Stores>(plugin_, dir_ + "/stores", &clock_, &env_);
    ASSERT_TRUE(env_.createDirs(dir_ + "/stores").isOk());
    ASSERT_TRUE(stores_->open().isOk());
    if (add_providers) addProviders(*stores_->providers, 2);
  }
  void start(bool queued_posts) {
    auto j = Journal::open(&env_, dir_ + "/journal");
    ASSERT_TRUE(j.isOk());
    journal_ = std::move(j).value();
    acks_.clear();
    QmOptions options = QmOptions::fromConfig(Config::defaults());
    options.checkpoint_interval = Millis(24 * 3600 * 1000);
    options.provider_refresh = Millis(24 * 3600 * 1000);
    QmDeps deps{stores_->queue.get(), stores_->content.get(), stores_->providers.get(), journal_.get(), &clock_,
                nullptr, &botm_, nullptr};
    if (queued_posts) deps.post = [this](std::function<void()> fn) { tasks_.push_back(std::move(fn)); };
    qm_ = std::make_unique<QueueManager>(deps, options);
    ASSERT_TRUE(qm_->open().isOk());
  }
  void runPosted() {
    for (int i = 0; i < 1000 && !tasks_.empty(); ++i) {
      auto fn = std::move(tasks_.front());
      tasks_.pop_front();
      fn();
    }
  }
  void stopHard() {
    qm_.reset();
    journal_.reset();
    tasks_.clear();
  }
  // Power loss: what the journal and the stores did not sync is gone.
  void crashAndRestart() {
    stopHard();
    env_.crash();
    (void)stores_->close();
    stores_.reset();
    openStores(false);
    start(false);
  }
  void submit(IntakeSet s) {
    qm_->submit(std::move(s), [this](bool ok, ErrorCode, const std::string&) { acks_.push_back(ok); });
  }
  // Everything fetched is stored (file names in the order of the fetches).
  void fetchAll() {
    for (int round = 0; round < 100; ++round) {
      auto f = botm_.takeFetches();
      if (f.empty()) return;
      for (const auto& x : f) qm_->onResult(x.link, okResult(x.order.id, "file-" + std::to_string(++files_)));
    }
  }
  Dump dump() {
    Dump d;
    auto& q = *stores_->queue;
    EXPECT_TRUE(q.scanEntries([&](const QueueEntry& e) { return d.rows.push_back(e), true; }).isOk());
    EXPECT_TRUE(q.scanPSets(std::nullopt, [&](const PSetRecord& p) { return d.lists.push_back(p), true; }).isOk());
    EXPECT_TRUE(q.scanDeletes(std::nullopt, [&](const DeleteRequest& r) { return d.deletes.push_back(r), true; }).isOk());
    for (ProviderId pid : {1u, 2u}) {
      auto s = stores_->content->scanProvider(pid, [&](const ContentRecord& r) { return d.content.push_back(r), true; });
      EXPECT_TRUE(s.isOk());
    }
    for (const char* key : {kMetaNextPSet, kMetaAppliedEnd, "qm.uns.m1/uns", "qm.uns.m2/uns"}) {
      auto m = q.getMeta(key);
      EXPECT_TRUE(m.isOk());
      d.metas.push_back(m.isOk() ? m.value() : std::nullopt);
    }
    auto byKey = [](const QueueEntry& a, const QueueEntry& b) { return encodeUrlKey(a.notice.key) < encodeUrlKey(b.notice.key); };
    std::sort(d.rows.begin(), d.rows.end(), byKey);
    return d;
  }

  SimClock clock_;
  FaultEnv env_{posixEnv()};
  std::unique_ptr<QueueManager> qm_;
  RecordingBotm botm_;
  std::vector<bool> acks_;
  std::unique_ptr<Stores> stores_;

 private:
  std::string plugin_, dir_;
  std::unique_ptr<Journal> journal_;
  std::deque<std::function<void()>> tasks_;
  int files_ = 0;
};

// Stored content for both providers, then the link goes down (nothing is dispatched
// while the batch is applied) and the stores are synced.
void prelude(World& w) {
  w.start(false);
  w.qm_->linkUp(1, "m1", 64);
  std::vector<UrlNotice> a, b;
  for (int i = 1; i <= 6; ++i) a.push_back(update(1, "http://a/" + std::to_string(i), 100));
  for (int i = 1; i <= 4; ++i) b.push_back(update(2, "http://b/" + std::to_string(i), 100));
  w.submit(makeSet(1, a, 1, SetKind::kPartial, "m1/uns"));
  w.submit(makeSet(2, b, 1, SetKind::kPartial, "m2/uns"));
  w.fetchAll();
  w.qm_->linkDown(1);
  ASSERT_TRUE(w.qm_->checkpoint().isOk());
}

// Small sets from two UNSes; the full set of provider 1 (the fourth) lacks a/4..a/6
// (stored: removed) and a/8 (queued by the third: becomes "nothing").
std::vector<IntakeSet> batch() {
  const SetKind kP = SetKind::kPartial;
  std::vector<IntakeSet> out;
  out.push_back(makeSet(1, {update(1, "http://a/7"), update(1, "http://a/1", 100)}, 2, kP, "m1/uns"));
  out.push_back(makeSet(2, {removal(2, "http://b/1"), update(2, "http://b/5")}, 2, kP, "m2/uns"));
  out.push_back(makeSet(1, {update(1, "http://a/1", 100), removal(1, "http://a/2"), update(1, "http://a/8")}, 3, kP,
                        "m1/uns"));
  out.push_back(makeSet(1, {update(1, "http://a/1", 100), update(1, "http://a/3", 100), update(1, "http://a/7"),
                            update(1, "http://a/9")},
                        3, SetKind::kFull, "m2/uns"));
  out.push_back(makeSet(2, {update(2, "http://b/6", 5), removal(2, "http://b/5"), update(2, "http://b/2", 100)}, 4,
                        kP, "m1/uns"));
  out.push_back(makeSet(1, {update(1, "http://a/4"), update(1, "http://a/10", 7, "0-1")}, 4, kP, "m2/uns"));
  return out;
}

class QmGroupTest : public ::testing::TestWithParam<std::string> {
 protected:
  TempDir dir_;
};

TEST_P(QmGroupTest, OneGroupEndsAsTheSetsAppliedOneByOne) {
  World alone(GetParam(), dir_.file("alone"));
  alone.openStores(true);
  prelude(alone);
  for (auto& s : batch()) alone.submit(std::move(s));  // each set committed and applied alone
  ASSERT_EQ(alone.acks_, std::vector<bool>(alone.acks_.size(), true));
  const Dump want = alone.dump();

  World grouped(GetParam(), dir_.file("grouped"));
  grouped.openStores(true);
  prelude(grouped);
  grouped.stopHard();
  grouped.start(true);  // posts wait: the whole batch is one commitPending()
  for (auto& s : batch()) grouped.submit(std::move(s));
  EXPECT_TRUE(grouped.acks_.empty());
  grouped.runPosted();
  ASSERT_EQ(grouped.acks_.size(), 6u);
  EXPECT_EQ(grouped.qm_->status()["journal_syncs"], 1u);

  const Dump got = grouped.dump();
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.lists, want.lists);
  EXPECT_EQ(got.content, want.content);
  EXPECT_EQ(got.deletes, want.deletes);
  EXPECT_EQ(got.metas, want.metas);
  for (ProviderId pid : {1u, 2u}) EXPECT_EQ(grouped.qm_->queued(pid), alone.qm_->queued(pid));  // `processing` too
  EXPECT_EQ(grouped.qm_->queued(), alone.qm_->queued());
  EXPECT_FALSE(grouped.stores_->providers->get(1).value()->fullset_wanted);
  // Sanity of the scenario itself: the full set removed what it lacked.
  EXPECT_FALSE(want.deletes.empty());
  EXPECT_TRUE(std::any_of(want.rows.begin(), want.rows.end(), [](const QueueEntry& e) {
    return e.notice.key.url == "http://a/8" && e.op == QueueOp::kNothing;
  }));

  // A crash before the next checkpoint: the replay of the journal gives the same again
  // (a memory store loses everything, the prelude's content too: nothing to compare).
  if (!grouped.stores_->persistent()) return;
  grouped.crashAndRestart();
  const Dump replayed = grouped.dump();
  EXPECT_EQ(replayed.rows, want.rows);
  EXPECT_EQ(replayed.lists, want.lists);
  EXPECT_EQ(replayed.content, want.content);
  EXPECT_EQ(replayed.deletes, want.deletes);
  EXPECT_EQ(replayed.metas, want.metas);
  EXPECT_EQ(grouped.qm_->queued(), alone.qm_->queued());
}

INSTANTIATE_TEST_SUITE_P(Plugins, QmGroupTest, ::testing::ValuesIn(storePlugins()), [](const auto& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

}  // namespace
}  // namespace lcc::qm
