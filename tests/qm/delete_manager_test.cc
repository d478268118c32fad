// The delete manager's state on its own (qm/delete_manager.h): the window per link,
// per-file back-off, machines waiting for a link, a link going down.
#include "qm/delete_manager.h"

#include <gtest/gtest.h>

#include <chrono>

namespace lcc::qm {
namespace {

using std::chrono::seconds;

const MonoTime kT0 = MonoTime(seconds(1000));
const DeleteRetryRules kRules{Millis(60'000), Millis(240'000)};

DeleteRequest row(const std::string& machine, const std::string& file) { return DeleteRequest{machine, file, {}}; }

TEST(DeleteManager, EachLinkHasItsOwnWindow) {
  DeleteManager m(2, kRules);
  EXPECT_EQ(m.room(1), 2u);
  m.sent(1, "m1", "a");
  EXPECT_EQ(m.room(1), 1u);
  m.sent(1, "m1", "b");
  EXPECT_EQ(m.room(1), 0u);
  EXPECT_EQ(m.room(2), 2u);  // another link's window is its own
  m.sent(2, "m2", "c");
  EXPECT_EQ(m.outOn(1), 2u);
  EXPECT_EQ(m.outOn(2), 1u);
  EXPECT_EQ(m.outCount(), 3u);
}

TEST(DeleteManager, AFileOutIsNotSentTwiceAndAnAnswerFreesItsRoom) {
  DeleteManager m(2, kRules);
  const auto id = m.sent(1, "m1", "a");
  EXPECT_FALSE(m.wanted(row("m1", "a"), kT0));
  EXPECT_TRUE(m.wanted(row("m1", "b"), kT0));
  EXPECT_TRUE(m.wanted(row("m2", "a"), kT0));  // the same name on another machine
  auto a = m.answered(1, id, true, "", kT0);
  EXPECT_TRUE(a.known);
  EXPECT_EQ(a.machine, "m1");
  EXPECT_EQ(a.file, "a");
  EXPECT_EQ(m.room(1), 2u);
  EXPECT_TRUE(m.wanted(row("m1", "a"), kT0));
  EXPECT_FALSE(m.answered(1, id, true, "", kT0).known);  // answered twice: ignored
}

TEST(DeleteManager, AFailedFileBacksOffDoublingUpToTheCeiling) {
  DeleteManager m(4, kRules);
  MonoTime now = kT0;
  const Millis expected[] = {Millis(60'000), Millis(120'000), Millis(240'000), Millis(240'000)};
  for (std::uint32_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(m.wanted(row("m1", "a"), now)) << k;
    auto a = m.answered(1, m.sent(1, "m1", "a"), false, "in-use", now);
    EXPECT_EQ(a.failures, k + 1);
    EXPECT_FALSE(a.wait_for_machine);
    EXPECT_EQ(a.retry_after, expected[k]) << k;
    EXPECT_FALSE(m.wanted(row("m1", "a"), now + a.retry_after - Millis(1)));
    EXPECT_TRUE(m.wanted(row("m1", "b"), now));  // the machine's other files go on
    now += a.retry_after;
  }
  // A success forgets the back-off: the next failure starts again at the first delay.
  auto ok = m.answered(1, m.sent(1, "m1", "a"), true, "", now);
  EXPECT_TRUE(ok.known);
  EXPECT_EQ(m.answered(1, m.sent(1, "m1", "a"), false, "io-error: EIO", now).retry_after, Millis(60'000));
}

TEST(DeleteManager, UnknownMachineWaitsUntilALinkListsIt) {
  DeleteManager m(4, kRules);
  auto a = m.answered(1, m.sent(1, "m9", "a"), false, "unknown-machine", kT0);
  EXPECT_TRUE(a.wait_for_machine);
  EXPECT_TRUE(m.blocked("m9"));
  EXPECT_FALSE(m.blocked("m1"));
  EXPECT_FALSE(m.backingOff("m9", "a", kT0));  // no back-off of its own: it waits for the machine
  m.machinesListed({"m1"});
  EXPECT_TRUE(m.blocked("m9"));
  m.machinesListed({"m1", "m9"});
  EXPECT_FALSE(m.blocked("m9"));
  (void)m.answered(1, m.sent(1, "m9", "a"), false, "unknown-machine", kT0);
  ASSERT_TRUE(m.blocked("m9"));
  m.linkUp();  // any link coming up tries every waiting machine again
  EXPECT_FALSE(m.blocked("m9"));
}

TEST(DeleteManager, ALinkDownForgetsItsDeletesOutOnly) {
  DeleteManager m(2, kRules);
  const auto on1 = m.sent(1, "m1", "a");
  const auto on2 = m.sent(2, "m1", "b");
  m.linkDown(1);
  EXPECT_EQ(m.outCount(), 1u);
  EXPECT_EQ(m.room(1), 2u);
  EXPECT_TRUE(m.wanted(row("m1", "a"), kT0));   // sent again later
  EXPECT_FALSE(m.wanted(row("m1", "b"), kT0));  // still out on link 2
  EXPECT_FALSE(m.answered(1, on1, true, "", kT0).known);  // a late answer of the lost link
  EXPECT_TRUE(m.answered(2, on2, true, "", kT0).known);
  EXPECT_EQ(m.outCount(), 0u);
}

TEST(DeleteManager, TheSweepSeesTheFilesOutOfItsMachine) {
  DeleteManager m(4, kRules);
  m.sent(1, "m1", "a");
  m.sent(1, "m2", "b");
  m.sent(2, "m1", "c");
  std::unordered_set<std::string> names;
  m.outFiles("m1", names);
  EXPECT_EQ(names, (std::unordered_set<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace lcc::qm
