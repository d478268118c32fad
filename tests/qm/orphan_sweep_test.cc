// The orphan sweep's state on its own (qm/orphan_sweep.h): which lists count, when a
// sweep ends, lost links, reclaimed bytes.
#include "qm/orphan_sweep.h"

#include <gtest/gtest.h>

namespace lcc::qm {
namespace {

TEST(OrphanSweep, ALinkAskedBeforeAnySweepStartsOne) {
  OrphanSweep s;
  EXPECT_EQ(s.id(), 0u);
  const auto id = s.ask(1, {"m1", "m2"});
  EXPECT_NE(id, 0u);
  EXPECT_EQ(s.ask(2, {"m3"}), id);  // the same sweep
  EXPECT_TRUE(s.asked("m1"));
  EXPECT_TRUE(s.asked("m3"));
  EXPECT_FALSE(s.asked("m4"));
  EXPECT_EQ(s.linksWaiting(), 2u);
}

TEST(OrphanSweep, OnlyTheCurrentSweepsListsOfWaitingLinksCount) {
  OrphanSweep s;
  const auto first = s.ask(1, {"m1"});
  const auto second = s.start();
  EXPECT_NE(first, second);
  EXPECT_FALSE(s.accepts(1, second));  // link 1 was asked for the old sweep
  EXPECT_EQ(s.ask(1, {"m1"}), second);
  EXPECT_TRUE(s.accepts(1, second));
  EXPECT_FALSE(s.accepts(1, first));
  EXPECT_FALSE(s.accepts(2, second));
  EXPECT_EQ(s.swept(1, first, "m1"), OrphanSweep::Swept::kIgnored);
  EXPECT_TRUE(s.asked("m1"));  // a new sweep does not forget what open() swept
}

TEST(OrphanSweep, ASweepEndsWhenEveryMachineOfEveryLinkHasSwept) {
  OrphanSweep s;
  const auto id = s.start();
  s.ask(1, {"m1", "m2"});
  s.ask(2, {"m3"});
  EXPECT_EQ(s.swept(1, id, "m1"), OrphanSweep::Swept::kMachine);
  EXPECT_EQ(s.swept(1, id, "m2"), OrphanSweep::Swept::kLink);
  EXPECT_FALSE(s.accepts(1, id));
  EXPECT_EQ(s.swept(1, id, "m2"), OrphanSweep::Swept::kIgnored);  // twice
  EXPECT_EQ(s.swept(2, id, "m3"), OrphanSweep::Swept::kSweepDone);
  EXPECT_FALSE(s.status()["running"].get<bool>());
}

TEST(OrphanSweep, ReferencedNamesAreKeptUntilTheirMachineHasSwept) {
  OrphanSweep s;
  const auto id = s.ask(1, {"m1"});
  EXPECT_EQ(s.referenced("m1"), nullptr);
  s.addReferenced("m1").insert("kept");
  ASSERT_NE(s.referenced("m1"), nullptr);
  EXPECT_EQ(s.referenced("m1")->count("kept"), 1u);
  s.swept(1, id, "m1");
  EXPECT_EQ(s.referenced("m1"), nullptr);
}

TEST(OrphanSweep, ALinkLostBeforeItsListsIsCounted) {
  OrphanSweep s;
  const auto id = s.ask(1, {"m1"});
  s.ask(2, {"m2"});
  s.linkDown(1);
  s.linkDown(3);  // never asked
  EXPECT_EQ(s.status()["links_lost"], 1u);
  EXPECT_EQ(s.swept(2, id, "m2"), OrphanSweep::Swept::kSweepDone);
}

TEST(OrphanSweep, AConfirmedDeleteOfAnOrphanIsReclaimedOnce) {
  OrphanSweep s;
  s.ask(1, {"m1"});
  s.countListed();
  s.countListed();
  s.orphanFound("m1", "x", 300);
  EXPECT_EQ(s.listed(), 2u);
  EXPECT_EQ(s.orphans(), 1u);
  EXPECT_EQ(s.orphanBytes(), 300u);
  EXPECT_FALSE(s.deleted("m1", "y").has_value());  // not an orphan's delete
  EXPECT_EQ(s.deleted("m1", "x"), 300u);
  EXPECT_FALSE(s.deleted("m1", "x").has_value());
  const auto j = s.status();
  EXPECT_EQ(j["reclaimed_files"], 1u);
  EXPECT_EQ(j["reclaimed_bytes"], 300u);
  EXPECT_EQ(j["files_listed"], 2u);
}

}  // namespace
}  // namespace lcc::qm
