// The orphan sweep (issue 15 §1): a content file that no LCC DB record references (a
// QM crash between a result and its checkpoint) is deleted and its bytes counted; a
// referenced file, or one already waiting for its delete, never is.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmSweep : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    start();
    qm_->linkUp(1, "m1", 4);
    submit(makeSet(1, {update(1, "http://a/1")}, 1));
    fetchOne("00/00/01");
  }
};

TEST_F(QmSweep, AnOrphanIsDeletedAndCountedAReferencedFileNever) {
  ASSERT_EQ(botm_.sweeps.size(), 1u) << "a machine is swept when its link first comes up";
  const std::uint64_t id = botm_.sweeps[0].second;
  // A removal whose delete is still out: its file is listed too.
  submit(makeSet(1, {update(1, "http://a/2")}, 2));
  fetchOne("00/00/02");
  submit(makeSet(1, {removal(1, "http://a/2")}, 3));
  auto pending = botm_.takeDeletes();
  ASSERT_EQ(pending.size(), 1u);

  qm_->onSweepFile(1, id, "m1", "00/00/01", 100);   // referenced by http://a/1
  qm_->onSweepFile(1, id, "m1", "00/00/02", 100);   // its delete is out
  qm_->onSweepFile(1, id, "m1", "00/00/2a", 4096);  // nothing references it
  qm_->onSweepFile(1, id + 7, "m1", "00/00/2b", 1);  // another sweep's: ignored
  qm_->onSwept(1, id, "m1", 3);
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].file, "00/00/2a");
  EXPECT_EQ(qm_->sweepStatus()["orphans"], 1);
  EXPECT_EQ(qm_->sweepStatus()["orphan_bytes"], 4096);
  EXPECT_FALSE(qm_->sweepStatus()["running"]);
  EXPECT_EQ(qm_->sweepStatus()["reclaimed_bytes"], 0) << "not before the BOT-M deleted it";
  qm_->onDeleted(1, d[0].id, true, "");
  EXPECT_EQ(qm_->sweepStatus()["reclaimed_files"], 1);
  EXPECT_EQ(qm_->sweepStatus()["reclaimed_bytes"], 4096);
  EXPECT_TRUE(stores_.content->get(encodeUrlKey({1, "http://a/1", "text/html"})).value()) << "the record stays";
}

TEST_F(QmSweep, AnAdminSweepAsksEveryLinkAndALostLinkEndsIt) {
  qm_->linkUp(2, "m2", 4);
  botm_.sweeps.clear();
  const std::uint64_t id = qm_->sweepBotms();
  EXPECT_EQ(botm_.sweeps.size(), 2u);
  EXPECT_TRUE(qm_->sweepStatus()["running"]);
  qm_->onSwept(1, id, "m1", 0);
  EXPECT_TRUE(qm_->sweepStatus()["running"]);
  qm_->linkDown(2);
  EXPECT_FALSE(qm_->sweepStatus()["running"]);
  EXPECT_EQ(qm_->sweepStatus()["links_lost"], 1);
}

}  // namespace
}  // namespace lcc::qm
