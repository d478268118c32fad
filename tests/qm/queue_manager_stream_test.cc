// Sets of any size (issue 13): a set taken in parts is journaled as it comes once it
// outgrows qm.intake_hold_urls, acked once only when its end is durable, applied in
// order from the journal, never applied when cut off, and replayed exactly.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmStream : public QmEngine {
 protected:
  void SetUp() override {
    options_.intake_hold_urls = 3;  // every set of more than two URLs is streamed
    options_.intake_sync_bytes = 1;  // and its parts synced as they come
    QmEngine::SetUp();
  }
  // Hands `urls` over as one set in parts of `part` URLs (no end).
  void stream(std::uint64_t stream, const IntakeHeader& h, const std::vector<UrlNotice>& urls, std::size_t part) {
    qm_->beginSet(stream, h);
    for (std::size_t i = 0; i < urls.size(); i += part) {
      qm_->addSetPart(stream, std::vector<UrlNotice>(urls.begin() + static_cast<std::ptrdiff_t>(i),
                                                     urls.begin() + static_cast<std::ptrdiff_t>(std::min(urls.size(), i + part))));
    }
  }
  void end(std::uint64_t stream) {
    qm_->endSet(stream, [this](bool ok, ErrorCode, const std::string&) {
      acks_.push_back(ok);
      queued_at_ack_.push_back(qm_->queued(1));
    });
  }
  std::vector<UrlNotice> urls(const std::string& base, int n) {
    std::vector<UrlNotice> out;
    for (int i = 1; i <= n; ++i) out.push_back(update(1, base + std::to_string(i)));
    return out;
  }
  std::optional<QueueEntry> row(const std::string& url) {
    auto r = stores_.queue->getEntry(encodeUrlKey({1, url, "text/html"}));
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }
  // Restarts the engine on the same stores and journal (a killed process whose
  // stores kept their writes).
  void restart() {
    qm_.reset();
    journal_.reset();
    auto j = Journal::open(&env_, journal_path_);
    ASSERT_TRUE(j.isOk());
    journal_ = std::move(j).value();
    start();
  }
  // Power loss: the stores lose everything, the journal what it did not sync.
  void crashAndRestart() {
    qm_.reset();
    journal_.reset();
    env_.crash();
    (void)stores_.close();
    ASSERT_TRUE(stores_.open().isOk());
    addProviders(*stores_.providers, 2);
    queue_ = std::make_unique<FaultyQueueStore>(*stores_.queue);
    content_ = std::make_unique<FaultyContentStore>(*stores_.content);
    env_.clearFaults();
    auto j = Journal::open(&env_, journal_path_);
    ASSERT_TRUE(j.isOk());
    journal_ = std::move(j).value();
    start();
  }

  std::vector<std::uint64_t> queued_at_ack_;
};

TEST_F(QmStream, StreamedSetIsAckedOnceAtItsEndAndAppliedInOrder) {
  start();
  auto set = urls("http://a/", 10);
  set[7] = update(1, "http://a/2", 77);  // the same identity again: the last one wins
  stream(1, IntakeHeader{"m1/uns", 1, 1, SetKind::kPartial}, set, 2);
  EXPECT_TRUE(acks_.empty());
  EXPECT_EQ(qm_->queued(), 0u) << "nothing is applied before the set's end";
  const JournalPos before_end = journal_->lastPosition();
  EXPECT_EQ(before_end, 3u) << "the parts went to the journal as they came (kBegin, two kParts)";
  end(1);
  ASSERT_EQ(acks_, std::vector<bool>{true});
  // `processing` counted the whole set at the ack, before it was applied.
  EXPECT_EQ(queued_at_ack_, std::vector<std::uint64_t>{10u});
  EXPECT_EQ(journal_->durablePosition(), before_end + 2);  // the last part and the kEnd, synced
  EXPECT_EQ(qm_->queued(), 9u);
  ASSERT_TRUE(row("http://a/2"));
  EXPECT_EQ(row("http://a/2")->notice.mtime, 77);
  // Fetched in the set's order, the repeated identity at its first place.
  qm_->linkUp(1, "m1", 1);
  EXPECT_EQ(fetchOne("f1"), "http://a/1");
  EXPECT_EQ(fetchOne("f2"), "http://a/2");
  EXPECT_EQ(fetchOne("f3"), "http://a/3");
}

// A sitemap poll or an IndexNow submission of more URLs than the QM holds is streamed
// like any other set, its notices with op "check": they are read back from the journal
// to be applied (and at replay) like updates and deletes.
TEST_F(QmStream, StreamedCheckNoticesAreAppliedFromTheJournalAndReplayed) {
  start();
  auto set = urls("http://sitemap/", 6);
  for (auto& n : set) n.op = UrlOp::kCheck;
  stream(1, IntakeHeader{"m1/uns", 1, 1, SetKind::kPartial}, set, 2);
  end(1);
  ASSERT_EQ(acks_, std::vector<bool>{true});
  EXPECT_EQ(qm_->queued(), 6u) << "the set was applied from its journal parts";
  ASSERT_TRUE(row("http://sitemap/6"));
  EXPECT_EQ(row("http://sitemap/6")->notice.op, UrlOp::kCheck);
  stream(2, IntakeHeader{"m1/uns", 2, 1, SetKind::kPartial}, urls("http://open/", 3), 3);
  crashAndRestart();  // the stores lose everything; the journal replays set 1
  EXPECT_EQ(qm_->queued(), 6u);
  EXPECT_TRUE(row("http://sitemap/1"));
  EXPECT_FALSE(qm_->cacheCrash());
}

TEST_F(QmStream, SetCutOffMidwayLeavesNothingAppliedAndNothingAcked) {
  start();
  stream(1, IntakeHeader{"m1/uns", 1, 1, SetKind::kPartial}, urls("http://cut/", 9), 2);
  qm_->abortSet(1);
  qm_->endSet(1, [this](bool ok, ErrorCode, const std::string&) { acks_.push_back(ok); });  // too late: unknown
  qm_->commitPending();
  EXPECT_TRUE(acks_.empty());
  EXPECT_EQ(qm_->queued(), 0u);
  // The UNS sends it again (same id) over a new link: taken, not a duplicate.
  stream(2, IntakeHeader{"m1/uns", 1, 1, SetKind::kPartial}, urls("http://cut/", 4), 2);
  end(2);
  EXPECT_EQ(acks_, std::vector<bool>{true});
  EXPECT_EQ(qm_->queued(), 4u);
  // Replay knows the cut-off set is dead: nothing of it comes back, nothing doubles.
  restart();
  EXPECT_EQ(qm_->queued(), 4u);
  EXPECT_FALSE(row("http://cut/9"));
  // And it no longer holds the journal: a checkpoint trims past it.
  stream(3, IntakeHeader{"m1/uns", 2, 1, SetKind::kPartial}, urls("http://next/", 1), 1);
  end(3);
  EXPECT_EQ(qm_->appliedPosition(), journal_->lastPosition());
}

TEST_F(QmStream, SetCutOffByACrashIsIgnoredAtReplay) {
  start();
  stream(1, IntakeHeader{"m1/uns", 1, 1, SetKind::kPartial}, urls("http://done/", 5), 2);
  end(1);
  stream(2, IntakeHeader{"m1/uns", 2, 1, SetKind::kPartial}, urls("http://open/", 7), 2);
  crashAndRestart();  // its parts were synced, its end never came
  EXPECT_EQ(qm_->queued(), 5u);
  EXPECT_FALSE(row("http://open/1"));
  EXPECT_TRUE(row("http://done/5"));
}

TEST_F(QmStream, ReplayAfterPowerLossIsExactWithInterleavedSets) {
  start();
  // A from one UNS begins (and spills), B from another begins, ends and is applied,
  // then A ends: applied in the order of their ends, and so replayed.
  stream(1, IntakeHeader{"u1/uns", 1, 1, SetKind::kPartial}, urls("http://x/", 6), 3);
  stream(2, IntakeHeader{"u2/uns", 1, 1, SetKind::kPartial}, {removal(1, "http://x/1"), update(1, "http://y/1"),
                                                              update(1, "http://y/2")}, 1);
  end(2);
  end(1);  // A re-adds x/1 after B's removal
  ASSERT_EQ(acks_, (std::vector<bool>{true, true}));
  EXPECT_EQ(qm_->queued(), 8u);
  auto x1 = row("http://x/1");
  ASSERT_TRUE(x1 && x1->op == QueueOp::kFetch);
  // The stores lose everything: the journal brings back exactly the same queue.
  crashAndRestart();
  EXPECT_EQ(qm_->queued(), 8u);
  x1 = row("http://x/1");
  ASSERT_TRUE(x1 && x1->op == QueueOp::kFetch);
  // The UNSes send their last sets again (acks lost): acked, nothing doubles.
  stream(3, IntakeHeader{"u1/uns", 1, 1, SetKind::kPartial}, urls("http://x/", 6), 3);
  end(3);
  EXPECT_EQ(acks_.back(), true);
  EXPECT_EQ(qm_->queued(), 8u);
}

TEST_F(QmStream, RestartSkipsSetsAppliedAfterAnOpenOne) {
  start();
  // An open streamed set keeps the replay position behind it, so a set applied after
  // it lies past that position: a restart must not apply it again (here: fetch again
  // what was fetched since).
  stream(1, IntakeHeader{"u1/uns", 1, 1, SetKind::kPartial}, urls("http://open/", 5), 2);
  submit(makeSet(1, {update(1, "http://b/1")}, 1, SetKind::kPartial, "u2/uns"));
  EXPECT_LT(qm_->appliedPosition(), journal_->lastPosition());
  qm_->linkUp(1, "m1", 1);
  EXPECT_EQ(fetchOne("fb"), "http://b/1");
  restart();  // the open set is cut off by the restart
  EXPECT_EQ(qm_->queued(), 0u) << "an applied set was applied again";
  EXPECT_FALSE(row("http://open/1"));
}

TEST_F(QmStream, StreamedFullSetRemovesWhatItLacks) {
  start();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://f/1"), update(1, "http://f/2")}, 1));
  fetchOne("f1");
  fetchOne("f2");
  // A full set in parts, without f/1, and with a queued URL of an earlier set missing.
  submit(makeSet(1, {update(1, "http://q/1")}, 2));
  auto full = urls("http://g/", 5);
  full.push_back(update(1, "http://f/2"));
  stream(7, IntakeHeader{"m1/uns", 3, 1, SetKind::kFull}, full, 2);
  end(7);
  ASSERT_EQ(acks_.back(), true);
  auto gone = stores_.content->get(encodeUrlKey({1, "http://f/1", "text/html"}));
  ASSERT_TRUE(gone.isOk() && gone.value());
  EXPECT_TRUE(gone.value()->deleted);
  auto kept = stores_.content->get(encodeUrlKey({1, "http://f/2", "text/html"}));
  ASSERT_TRUE(kept.isOk() && kept.value());
  EXPECT_FALSE(kept.value()->deleted);
  auto q1 = row("http://q/1");
  EXPECT_TRUE(!q1 || q1->op == QueueOp::kNothing);
}

// The UNS forwards every URL of a set in the CP's order; applying in order makes the
// last notice of an identity win.
TEST_F(QmStream, TheLastNoticeOfAnIdentityWinsWhenAppliedInOrder) {
  start();
  submit(makeSet(1, {update(1, "http://l/a"), update(1, "http://l/b"), removal(1, "http://l/a"),
                     update(1, "http://l/b", 9)}, 1));
  auto a = row("http://l/a");
  EXPECT_TRUE(!a || a->op == QueueOp::kNothing);
  auto b = row("http://l/b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->notice.mtime, 9);
  qm_->linkUp(1, "m1", 1);
  EXPECT_EQ(fetchOne("fb"), "http://l/b");
  EXPECT_TRUE(botm_.takeFetches().empty());
}

TEST_F(QmStream, RefusedStreamKeepsNoUrlsAndWritesNothing) {
  start();
  submit(makeSet(1, {update(1, "http://d/1")}, 5));
  const JournalPos pos = journal_->lastPosition();
  // A duplicate (the UNS replays set 5): its parts are counted and dropped.
  stream(1, IntakeHeader{"m1/uns", 5, 1, SetKind::kPartial}, urls("http://d/", 9), 2);
  end(1);
  EXPECT_EQ(acks_.back(), true);
  EXPECT_EQ(journal_->lastPosition(), pos);
  EXPECT_EQ(qm_->queued(), 1u);
}

}  // namespace
}  // namespace lcc::qm
