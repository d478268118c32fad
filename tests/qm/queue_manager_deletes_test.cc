// One failed delete does not block a machine (issue 15 §1): a file whose delete failed
// (in-use, io-error) is retried by itself with back-off, by a periodic retry, while
// the machine's other deletes go on; only unknown-machine waits for a link that lists
// the machine.
#include <gtest/gtest.h>

#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

class QmDeletes : public QmEngine {
 protected:
  void SetUp() override {
    QmEngine::SetUp();
    options_.delete_retry = Millis(60 * 1000);
    options_.delete_retry_max = Millis(240 * 1000);
    start();
    qm_->startTimers();
    qm_->linkUp(1, "m1", 4);
    for (int i = 1; i <= 3; ++i) {
      submit(makeSet(1, {update(1, url(i))}, static_cast<std::uint64_t>(i)));
      EXPECT_EQ(fetchOne(file(i)), url(i));
    }
  }
  static std::string url(int i) { return "http://a/" + std::to_string(i); }
  static std::string file(int i) { return "00/00/0" + std::to_string(i); }
  void remove(int i) { submit(makeSet(1, {removal(1, url(i))}, static_cast<std::uint64_t>(10 + i))); }
  std::vector<std::string> sentFiles() {
    std::vector<std::string> out;
    for (const auto& d : botm_.deletes) out.push_back(d.file);
    return out;
  }
  std::size_t fsmRows() {
    std::size_t n = 0;
    EXPECT_TRUE(stores_.queue->scanDeletes(std::nullopt, [&](const DeleteRequest&) { return ++n, true; }).isOk());
    return n;
  }
};

TEST_F(QmDeletes, AFailedDeleteIsRetriedAloneWithBackOffAndOthersGoOn) {
  remove(1);
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  qm_->onDeleted(1, d[0].id, false, "in-use");
  EXPECT_TRUE(botm_.deletes.empty()) << "retried at once, without back-off";

  remove(2);  // the same machine: not blocked by the failure of file 1
  d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u) << "one failed delete blocked the machine";
  EXPECT_EQ(d[0].file, file(2));
  qm_->onDeleted(1, d[0].id, true, "");

  clock_.advance(Millis(60 * 1000));  // the periodic retry, after the first back-off
  d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u) << "no periodic retry of the failed delete";
  EXPECT_EQ(d[0].file, file(1));
  qm_->onDeleted(1, d[0].id, false, "io-error");

  clock_.advance(Millis(60 * 1000));  // the back-off doubled: 2 min now
  EXPECT_TRUE(botm_.deletes.empty()) << "the back-off did not grow";
  clock_.advance(Millis(60 * 1000));
  d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 1u);
  qm_->onDeleted(1, d[0].id, true, "");
  EXPECT_EQ(fsmRows(), 0u);
  EXPECT_EQ(qm_->status()["deletes_failed"], 2);
}

TEST_F(QmDeletes, TheBackOffStopsGrowingAtItsCeiling) {
  remove(1);
  for (int attempt = 1; attempt <= 5; ++attempt) {
    auto d = botm_.takeDeletes();
    ASSERT_EQ(d.size(), 1u) << "attempt " << attempt;
    qm_->onDeleted(1, d[0].id, false, "io-error");
    clock_.advance(Millis(240 * 1000));  // the ceiling: always enough
  }
  EXPECT_EQ(fsmRows(), 1u);
}

TEST_F(QmDeletes, OnlyUnknownMachineWaitsForTheMachine) {
  remove(1);
  remove(2);
  auto d = botm_.takeDeletes();
  ASSERT_EQ(d.size(), 2u);
  qm_->onDeleted(1, d[0].id, false, "unknown-machine");
  qm_->onDeleted(1, d[1].id, false, "unknown-machine");
  remove(3);
  EXPECT_TRUE(botm_.deletes.empty()) << "m1 is unknown to the link: nothing more goes to it";
  clock_.advance(Millis(10 * 60 * 1000));
  EXPECT_TRUE(botm_.deletes.empty()) << "the periodic retry does not ask for an unknown machine";
  qm_->linkMachines(1, {"m1"});
  EXPECT_EQ(botm_.takeDeletes().size(), 3u);
}

}  // namespace
}  // namespace lcc::qm
