// Ageing records the purge horizon with the tombstones it erases (issue 15 §1, mirrors
// that would miss removals): the CU refuses `since seq` below it (tests/cu).
#include <gtest/gtest.h>

#include "common/content_meta.h"
#include "qm_engine_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

TEST_F(QmEngine, PurgingTombstonesRecordsTheHighestPurgedSeq) {
  options_.tombstone_keep = Millis(24 * kHourMs);
  start();
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  fetchOne("f1");
  submit(makeSet(1, {update(1, "http://a/2")}, 2));
  fetchOne("f2");
  submit(makeSet(1, {removal(1, "http://a/1")}, 3));  // tombstone, seq 3
  auto meta = [&] { return stores_.content->getMeta(kContentMetaPurgedSeq).value(); };
  ASSERT_TRUE(qm_->age().isOk());
  EXPECT_EQ(meta(), std::nullopt) << "nothing purged yet";
  clock_.advance(Millis(12 * kHourMs));
  submit(makeSet(1, {removal(1, "http://a/2")}, 4));  // tombstone, seq 4, 12 h younger
  clock_.advance(Millis(12 * kHourMs));
  ASSERT_TRUE(qm_->age().isOk());
  EXPECT_EQ(meta(), "3");
  EXPECT_FALSE(stores_.content->get(encodeUrlKey({1, "http://a/1", "text/html"})).value());
  clock_.advance(Millis(12 * kHourMs));
  ASSERT_TRUE(qm_->age().isOk());
  EXPECT_EQ(meta(), "4");
}

}  // namespace
}  // namespace lcc::qm
