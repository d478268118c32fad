// The QM's BOT-M links on their own (qm/botm_links.h): capacity, machines, and which
// link a fetch goes out on.
#include "qm/botm_links.h"

#include <gtest/gtest.h>

namespace lcc::qm {
namespace {

TEST(BotmLinks, ALinkDeletesOnItsOwnMachineUntilItListsOthers) {
  BotmLinks links(100);
  links.up(1, "m1", 4);
  ASSERT_NE(links.find(1), nullptr);
  EXPECT_EQ(links.find(1)->machines, (std::vector<std::string>{"m1"}));
  EXPECT_TRUE(links.setMachines(1, {"m1", "m2"}));
  links.up(1, "m1", 8);  // hello again: the list it sent stays
  EXPECT_EQ(links.find(1)->machines, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(links.find(1)->capacity, 8u);
  EXPECT_FALSE(links.setMachines(7, {"x"}));  // unknown link: nothing changes
  EXPECT_FALSE(links.setCapacity(7, 3));
  EXPECT_EQ(links.find(7), nullptr);
}

TEST(BotmLinks, TotalCapacityFollowsLinksUpAndDown) {
  BotmLinks links(150);
  EXPECT_EQ(links.totalCapacity(), 0u);
  links.up(1, "m1", 4);
  links.up(2, "m2", 6);
  EXPECT_EQ(links.totalCapacity(), 10u);
  EXPECT_TRUE(links.setCapacity(2, 1));
  EXPECT_EQ(links.totalCapacity(), 5u);
  links.down(1);
  EXPECT_EQ(links.totalCapacity(), 1u);
  EXPECT_EQ(links.size(), 1u);
}

TEST(BotmLinks, AFetchGoesToTheLinkWithTheMostFreeRoom) {
  BotmLinks links(100);
  EXPECT_FALSE(links.pick().has_value());  // no link
  links.up(1, "m1", 2);
  links.up(2, "m2", 3);
  EXPECT_EQ(links.pick(), 2u);
  links.fetchSent(2);
  links.fetchSent(2);  // link 2: 1 free, link 1: 2 free
  EXPECT_EQ(links.pick(), 1u);
  links.fetchSent(1);  // 1 and 1: the first of equals
  EXPECT_EQ(links.pick(), 1u);
  links.fetchSent(1);
  links.fetchSent(2);
  EXPECT_FALSE(links.pick().has_value());  // every link full
  links.fetchEnded(2);
  EXPECT_EQ(links.pick(), 2u);
}

TEST(BotmLinks, TheOverloadPercentageScalesEachLinksRoom) {
  BotmLinks links(150);
  links.up(1, "m1", 2);  // takes 3
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(links.pick(), 1u) << i;
    links.fetchSent(1);
  }
  EXPECT_FALSE(links.pick().has_value());
  BotmLinks half(50);
  half.up(1, "m1", 1);  // 0.5 of a fetch: no room at all
  EXPECT_FALSE(half.pick().has_value());
}

TEST(BotmLinks, EndedFetchesOfAnUnknownOrIdleLinkChangeNothing) {
  BotmLinks links(100);
  links.up(1, "m1", 1);
  links.fetchEnded(1);  // never below zero
  links.fetchEnded(9);
  links.fetchSent(9);
  EXPECT_EQ(links.find(1)->in_flight, 0u);
  EXPECT_EQ(links.size(), 1u);
  EXPECT_EQ(links.pick(), 1u);
}

}  // namespace
}  // namespace lcc::qm
