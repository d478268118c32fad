// A QM with a standby on a shared store (issue 27 §2, §3; core/qm/README.md,
// "Durability" 8): with qm.ack_after_store a set is acked only once the stores hold
// it, in arrival order; open() replays nothing from the local journal and its pset ids
// go on above the store's; a store that refuses a write as fenced (another QM took the
// lease over) stops the QM once, without cache-crash.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmTakeover : public QmEngine {
 protected:
  struct Answer {
    bool ok;
    ErrorCode code;
  };
  void startWith(bool ack_after_store) {
    options_.ack_after_store = ack_after_store;
    QmDeps deps{queue_.get(), content_.get(), stores_.providers.get(), journal_.get(), &clock_, metrics_.get(), &botm_,
                nullptr};
    deps.on_fenced = [this](const Status& s) { fenced_.push_back(s); };
    qm_ = std::make_unique<QueueManager>(deps, options_);
    ASSERT_TRUE(qm_->open().isOk());
  }
  void submitSet(IntakeSet s) {
    qm_->submit(std::move(s), [this](bool ok, ErrorCode code, const std::string&) { answers_.push_back({ok, code}); });
  }
  void setBusy(bool on) {
    queue_->plan.setBusy(on);
    content_->plan.setBusy(on);
  }
  std::optional<QueueEntry> entry(ProviderId pid, const std::string& url) {
    auto e = stores_.queue->getEntry(encodeUrlKey(update(pid, url).key));
    EXPECT_TRUE(e.isOk());
    return e.isOk() ? e.value() : std::nullopt;
  }
  std::vector<Answer> answers_;
  std::vector<Status> fenced_;
};

// The default acks at the journal's commit (QmStoreBusy shows it); with
// qm.ack_after_store a set whose apply is Busy is not acked, and the answers after it
// wait behind it, in order, until the store answers and it is applied.
TEST_F(QmTakeover, WithAckAfterStoreASetIsAckedOnlyOnceItIsInTheStores) {
  startWith(true);
  submitSet(makeSet(1, {update(1, "http://a/1")}, 1));
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_TRUE(answers_[0].ok);
  EXPECT_TRUE(entry(1, "http://a/1")) << "acked before it was in the queue store";

  setBusy(true);
  submitSet(makeSet(1, {update(1, "http://a/2")}, 2));
  EXPECT_EQ(answers_.size(), 1u) << "acked though its apply was Busy (only in the local journal)";
  submitSet(makeSet(2, {update(2, "http://b/1")}, 1, SetKind::kPartial, "m2/uns"));  // 130: the store is busy
  EXPECT_EQ(answers_.size(), 1u) << "an answer overtook the set before it";
  clock_.advance(Millis(5000));
  EXPECT_EQ(answers_.size(), 1u);

  setBusy(false);
  clock_.advance(Millis(2000));  // the retry applies it
  EXPECT_FALSE(qm_->storeBusy());
  ASSERT_EQ(answers_.size(), 3u);
  EXPECT_TRUE(answers_[1].ok);
  EXPECT_TRUE(entry(1, "http://a/2"));
  EXPECT_FALSE(answers_[2].ok);
  EXPECT_EQ(answers_[2].code, ErrorCode::kOffline);
  EXPECT_FALSE(qm_->cacheCrash());
}

// Another QM wrote the shared store up to pset 1000; this QM's journal is its own. Open
// replays nothing and the next set's pset id is above the store's, never one the other
// QM used.
TEST_F(QmTakeover, WithAckAfterStoreOpenReplaysNothingAndPsetIdsGoOnAboveTheStore) {
  startWith(false);  // this host's journal: a set journaled and acked by the default path
  submitSet(makeSet(1, {update(1, "http://a/old")}, 1));
  ASSERT_TRUE(qm_->checkpoint().isOk());
  qm_.reset();
  QueueBatch other;  // the other QM's applies, after this journal was last used
  other.putMeta(kMetaNextPSet, "1000");
  other.putMeta(kMetaAppliedPos, "999");
  other.putMeta(kMetaAppliedEnd, "999");
  ASSERT_TRUE(stores_.queue->apply(other).isOk());
  answers_.clear();
  startWith(true);
  EXPECT_GE(journal_->lastPosition(), 999u);
  submitSet(makeSet(1, {update(1, "http://a/new")}, 2));
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_TRUE(answers_[0].ok);
  auto e = entry(1, "http://a/new");
  ASSERT_TRUE(e);
  EXPECT_GE(e->pset, 1000u) << "a pset id the other QM may have used";
}

// A fenced write: the QM stops (on_fenced once), refuses sets, raises no cache-crash;
// with qm.ack_after_store the set it could not store is refused (130), not acked.
TEST_F(QmTakeover, AFencedStoreStopsTheQmOnceWithoutCacheCrash) {
  startWith(true);
  queue_->plan.setFenced(true);
  content_->plan.setFenced(true);
  submitSet(makeSet(1, {update(1, "http://a/1")}, 1));
  ASSERT_EQ(fenced_.size(), 1u);
  EXPECT_NE(fenced_[0].message().find("fenced: QM epoch 1 was taken over by qm2"), std::string::npos)
      << fenced_[0].toString();
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_FALSE(answers_[0].ok) << "a set not in the stores was acked";
  EXPECT_TRUE(qm_->failed());
  EXPECT_FALSE(qm_->cacheCrash()) << "fenced is not a broken store";
  auto r = stores_.providers->get(1);
  ASSERT_TRUE(r.isOk() && r.value());
  EXPECT_FALSE(r.value()->fullset_wanted);
  EXPECT_FALSE(qm_->checkpoint().isOk());
  submitSet(makeSet(1, {update(1, "http://a/2")}, 2));
  EXPECT_EQ(fenced_.size(), 1u) << "on_fenced more than once";
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_FALSE(answers_[1].ok);
}

}  // namespace
}  // namespace lcc::qm
