// The slot directory's policy without I/O: where a provider of a held or unheld slot
// goes (chooseForSlot), and the move's state machine (slot_move.h): the order of its
// steps, and what a front end that was killed in each phase does next.
#include <gtest/gtest.h>

#include <vector>

#include "front/placement.h"
#include "front/slot_move.h"

namespace lcc::front {
namespace {

const MonoTime kT0 = MonoTime{} + std::chrono::hours(1);
const Millis kStale{30000};

LccLoad lcc(const std::string& name, std::uint64_t providers, std::optional<MonoTime> last_ok = kT0) {
  LccLoad l;
  l.name = name;
  l.providers = providers;
  l.last_ok = last_ok;
  return l;
}

TEST(SlotPlacement, SlotsSpreadSequentialIdsEvenly) {
  std::vector<int> per(4);
  for (std::uint64_t id = 1; id <= 400; ++id) ++per[slotOf(id, 4)];
  EXPECT_EQ(per, (std::vector<int>{100, 100, 100, 100}));
  EXPECT_EQ(slotOf(5, 4), 1u);
}

TEST(SlotPlacement, AnUnheldSlotGoesToTheLeastLoadedLiveLcc) {
  SlotChoice c = chooseForSlot(std::nullopt, {lcc("a", 5), lcc("b", 3)}, kT0, kStale);
  EXPECT_EQ(c.status, 0);
  EXPECT_EQ(c.lcc, "b");
}

TEST(SlotPlacement, AHeldSlotKeepsItsProvidersTogetherEvenOnTheBusierLcc) {
  SlotChoice c = chooseForSlot(std::string("a"), {lcc("a", 50), lcc("b", 3)}, kT0, kStale);
  EXPECT_EQ(c.status, 0);
  EXPECT_EQ(c.lcc, "a");
  LccLoad closed = lcc("a", 50);
  closed.open = false;  // closed: no unheld slot goes there, its own slots still do
  EXPECT_EQ(chooseForSlot(std::string("a"), {closed, lcc("b", 3)}, kT0, kStale).lcc, "a");
}

TEST(SlotPlacement, AHeldSlotWhoseLccIsNotLiveIsRefusedNotSentElsewhere) {
  SlotChoice c = chooseForSlot(std::string("a"), {lcc("a", 1, kT0 - Millis(60000)), lcc("b", 3)}, kT0, kStale);
  EXPECT_EQ(c.status, 503);
  EXPECT_TRUE(c.lcc.empty());
  EXPECT_NE(c.why.find("held by sub-LCC a"), std::string::npos) << c.why;
  EXPECT_EQ(chooseForSlot(std::string("gone"), {lcc("b", 3)}, kT0, kStale).status, 503);
  EXPECT_EQ(chooseForSlot(std::nullopt, {lcc("a", 1, std::nullopt)}, kT0, kStale).status, 503);
}

TEST(SlotPlacement, TheAddFlowTakesTheSubLccTheReserveChose) {
  AddFlow flow(std::string("b"));
  ASSERT_EQ(flow.start(), AddFlow::Action::kReserve);
  EXPECT_EQ(flow.onReserved(7, "a"), AddFlow::Action::kCreate);
  EXPECT_EQ(flow.lcc(), "a");
  AddFlow refused(std::string("b"));
  ASSERT_EQ(refused.start(), AddFlow::Action::kReserve);
  EXPECT_EQ(refused.onNotPlaceable(503, "held by a"), AddFlow::Action::kAnswer);
  EXPECT_EQ(refused.status(), 503);
  EXPECT_EQ(refused.globalId(), 0u) << "nothing reserved";
}

TEST(SlotMove, AMoveRunsItsStepsInTheOrderThatLosesNothing) {
  std::vector<MoveStep> steps;
  MovePhase p = MovePhase::kPlanned;
  for (int n = 0; p != MovePhase::kDone && n < 20; ++n) {
    steps.push_back(nextMoveStep(p));
    p = phaseAfter(steps.back());
  }
  const std::vector<MoveStep> want = {MoveStep::kFreeze,       MoveStep::kSuspendSource, MoveStep::kWaitDrained,
                                      MoveStep::kCreateTarget, MoveStep::kCopy,          MoveStep::kRemoveSource,
                                      MoveStep::kPlace,        MoveStep::kResumeTarget};
  EXPECT_EQ(steps, want);
  EXPECT_EQ(nextMoveStep(MovePhase::kDone), MoveStep::kNone);
}

// A front end killed during a step finds the phase of the step before it: it does
// the interrupted step again (each is idempotent), never skips one, and never goes back.
TEST(SlotMove, AfterACrashInEachPhaseTheInterruptedStepIsDoneAgain) {
  for (MovePhase recorded : {MovePhase::kPlanned, MovePhase::kFrozen, MovePhase::kSuspended, MovePhase::kDrained,
                             MovePhase::kCreated, MovePhase::kCopied, MovePhase::kRemoved, MovePhase::kPlaced}) {
    const std::string name = movePhaseName(recorded);
    auto parsed = parseMovePhase(name);
    ASSERT_TRUE(parsed) << name;
    EXPECT_EQ(*parsed, recorded);
    const MoveStep again = nextMoveStep(*parsed);
    EXPECT_NE(again, MoveStep::kNone) << name;
    EXPECT_GT(static_cast<int>(phaseAfter(again)), static_cast<int>(recorded)) << name;
  }
  EXPECT_FALSE(parseMovePhase("half-copied"));
  // The source is removed only after the copy, and routed to the target only after that.
  EXPECT_EQ(nextMoveStep(MovePhase::kCopied), MoveStep::kRemoveSource);
  EXPECT_EQ(nextMoveStep(MovePhase::kRemoved), MoveStep::kPlace);
  EXPECT_LT(static_cast<int>(phaseAfter(MoveStep::kCopy)), static_cast<int>(phaseAfter(MoveStep::kRemoveSource)));
}

TEST(SlotMove, TheSourceIsDrainedOnlyWhenHeldWithNothingOutOrUnapplied) {
  const MonoTime deadline = kT0 + Millis(1000);
  SourceProbe p;
  p.asked = true;
  p.held = true;
  EXPECT_EQ(decideDrain(p, kT0, deadline), DrainDecision::kDrained);
  p.in_flight = 1;
  EXPECT_EQ(decideDrain(p, kT0, deadline), DrainDecision::kWait);
  EXPECT_EQ(decideDrain(p, deadline, deadline), DrainDecision::kGiveUp);
  p.in_flight = 0;
  p.unapplied = 3;  // an acked set not applied yet: its URLs are not in the export
  EXPECT_EQ(decideDrain(p, kT0, deadline), DrainDecision::kWait);
  p.unapplied = 0;
  p.held = false;  // its QM has not seen the suspension yet
  EXPECT_EQ(decideDrain(p, kT0, deadline), DrainDecision::kWait);
  SourceProbe down;  // could not be asked
  EXPECT_EQ(decideDrain(down, kT0, deadline), DrainDecision::kWait);
  SourceProbe lost;
  lost.asked = true;
  lost.exists = false;
  EXPECT_EQ(decideDrain(lost, kT0, deadline), DrainDecision::kSourceLost);
}

TEST(SlotMove, ACreateInterruptedAfterTheTargetMadeTheProviderUsesThatOne) {
  TargetProbe found;
  found.asked = true;
  found.local_id = 9;
  EXPECT_EQ(decideCreate(found), CreateDecision::kUseFound);
  TargetProbe none;
  none.asked = true;
  EXPECT_EQ(decideCreate(none), CreateDecision::kCreate);
  EXPECT_EQ(decideCreate(TargetProbe{}), CreateDecision::kRetryLater) << "unknown: never make a second one";
}

TEST(SlotMove, EachMoveCopiesUnderItsOwnIntakeName) {
  EXPECT_EQ(moveSetName("lcc_front", 12, 3), "front-move/lcc_front/12/3");
  EXPECT_NE(moveSetName("lcc_front", 12, 3), moveSetName("lcc_front", 12, 4)) << "a later move back is not a duplicate";
}

}  // namespace
}  // namespace lcc::front
