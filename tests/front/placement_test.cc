// The front end's decisions without I/O: placement by load, the add flow's order
// (pending → create → placed, and what each failure leaves), pending-row cleaning,
// the route cache's bounds, the front.lccs entries; slots and slot moves.
#include <gtest/gtest.h>

#include "front/front_options.h"
#include "front/mapping_cache.h"
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

TEST(Placement, TheLeastLoadedLiveLccIsChosen) {
  EXPECT_EQ(choosePlacement({lcc("a", 5), lcc("b", 3), lcc("c", 4)}, kT0, kStale), "b");
}

TEST(Placement, PlacementsSinceTheRefreshCount) {
  LccLoad b = lcc("b", 3);
  b.placed_since = 2;  // 5 now
  EXPECT_EQ(choosePlacement({lcc("a", 4), b}, kT0, kStale), "a");
}

TEST(Placement, APlacementMadeWhileTheCountWasReadIsNotLost) {
  LccLoad a = lcc("a", 1);
  a.placed_since = 1;                      // placed before the read began: in its count
  const std::uint64_t before = a.placed_since;
  ++a.placed_since;                        // placed while the read ran: maybe not in it
  applyRead(a, 2, before, kT0 + Millis(10));
  EXPECT_EQ(a.placed_since, 1u);
  EXPECT_EQ(loadOf(a), 3u);                // counted twice at worst, never missed
  EXPECT_EQ(choosePlacement({a, lcc("b", 2)}, kT0 + Millis(10), kStale), "b");
  EXPECT_EQ(a.last_ok, kT0 + Millis(10));
}

TEST(Placement, TiesGoToTheSmallestName) {
  EXPECT_EQ(choosePlacement({lcc("b", 1), lcc("a", 1)}, kT0, kStale), "a");
}

TEST(Placement, StaleNeverReadAndClosedLccsAreSkipped) {
  LccLoad closed = lcc("c", 0);
  closed.open = false;
  const MonoTime later = kT0 + Millis(30001);
  LccLoad fresh = lcc("f", 9, later);
  EXPECT_EQ(choosePlacement({lcc("a", 0), lcc("n", 0, std::nullopt), closed, fresh}, later, kStale), "f");
  EXPECT_EQ(choosePlacement({lcc("a", 0), closed}, later, kStale), std::nullopt);
}

TEST(AddFlow, HappyPathReservesThenCreatesThenMarksPlaced) {
  AddFlow f(std::string("a"));
  EXPECT_EQ(f.start(), AddFlow::Action::kReserve);
  EXPECT_EQ(f.onReserved(17), AddFlow::Action::kCreate);
  EXPECT_EQ(f.onCreated(3), AddFlow::Action::kMarkPlaced);
  EXPECT_EQ(f.onPlaced(), AddFlow::Action::kAnswer);
  EXPECT_EQ(f.status(), 201);
  EXPECT_EQ(f.globalId(), 17u);
  EXPECT_EQ(f.localId(), 3u);
}

TEST(AddFlow, NoLiveLccIsTryLaterBeforeAnyRow) {
  AddFlow f(std::nullopt);
  EXPECT_EQ(f.start(), AddFlow::Action::kAnswer);
  EXPECT_EQ(f.status(), 503);
}

TEST(AddFlow, ARefusalByTheLccDropsTheRowAndPassesItsAnswerOn) {
  AddFlow f(std::string("a"));
  f.start();
  f.onReserved(4);
  EXPECT_EQ(f.onRefused(400, "prefix x: not a URL"), AddFlow::Action::kDropRow);
  EXPECT_EQ(f.onRowDropped(), AddFlow::Action::kAnswer);
  EXPECT_EQ(f.status(), 400);
  EXPECT_NE(f.message().find("not a URL"), std::string::npos);
}

TEST(AddFlow, AnUnknownOutcomeLeavesTheRowPendingAndSaysTryAgain) {
  AddFlow f(std::string("a"));
  f.start();
  f.onReserved(4);
  EXPECT_EQ(f.onUnknown("timed out"), AddFlow::Action::kAnswer);  // no kDropRow: the row stays
  EXPECT_EQ(f.status(), 503);
  EXPECT_NE(f.message().find("pending"), std::string::npos);
}

TEST(AddFlow, APmdbFailureAfterTheCreateLeavesTheRowPending) {
  AddFlow f(std::string("a"));
  f.start();
  f.onReserved(4);
  f.onCreated(9);
  EXPECT_EQ(f.onPlaceFailed("connection lost"), AddFlow::Action::kAnswer);
  EXPECT_EQ(f.status(), 503);
}

TEST(AddFlow, AReserveFailureMakesNothing) {
  AddFlow f(std::string("a"));
  f.start();
  EXPECT_EQ(f.onReserveFailed("down"), AddFlow::Action::kAnswer);
  EXPECT_EQ(f.status(), 503);
}

TEST(PendingRows, AYoungRowIsKeptWhateverTheLccSays) {
  PendingRow row{4, "a", kT0};
  EXPECT_EQ(decidePending(row, {true, 9}, kT0 + Millis(59999), Millis(60000)), PendingAction::kKeep);
}

TEST(PendingRows, AnOldRowWhoseProviderWasMadeRemovesItThenDrops) {
  PendingRow row{4, "a", kT0};
  EXPECT_EQ(decidePending(row, {true, 9}, kT0 + Millis(60000), Millis(60000)), PendingAction::kRemoveThenDrop);
}

TEST(PendingRows, AnOldRowWithNothingOnTheLccIsDropped) {
  PendingRow row{4, "a", kT0};
  EXPECT_EQ(decidePending(row, {true, std::nullopt}, kT0 + Millis(60000), Millis(60000)), PendingAction::kDrop);
}

TEST(PendingRows, AnOldRowIsKeptWhileTheLccCannotBeAsked) {
  PendingRow row{4, "a", kT0};
  EXPECT_EQ(decidePending(row, {false, std::nullopt}, kT0 + Millis(600000), Millis(60000)), PendingAction::kKeep);
}

TEST(PendingRows, TheMarkerNamesTheSchemaAndTheId) {
  EXPECT_EQ(placementMarker("lcc_front", 42), "lcc-front:lcc_front:42");
  EXPECT_NE(placementMarker("x", 4), placementMarker("x", 42));
}

TEST(MappingCache, EntriesExpireAfterTheTtl) {
  MappingCache c(10, Millis(1000));
  c.put(1, {"a", 7}, kT0);
  ASSERT_TRUE(c.get(1, kT0 + Millis(999)));
  EXPECT_EQ(c.get(1, kT0 + Millis(999))->local_id, 7u);
  EXPECT_FALSE(c.get(1, kT0 + Millis(1000)));
}

TEST(MappingCache, TheLeastRecentlyUsedGoesPastTheCapacity) {
  MappingCache c(2, Millis(1000));
  c.put(1, {"a", 1}, kT0);
  c.put(2, {"a", 2}, kT0);
  ASSERT_TRUE(c.get(1, kT0));  // 2 is now the least recently used
  c.put(3, {"b", 3}, kT0);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_TRUE(c.get(1, kT0));
  EXPECT_FALSE(c.get(2, kT0));
  EXPECT_TRUE(c.get(3, kT0));
}

TEST(LccSpec, AnEntryIsParsedAndABadOneSaysWhy) {
  auto s = parseLccSpec("east uns=127.0.0.1:7700 admin=127.0.0.1:7780 token_file=/var/lcc/admin.token");
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ(s.value().name, "east");
  EXPECT_EQ(s.value().uns, "127.0.0.1:7700");
  EXPECT_EQ(s.value().token_file, "/var/lcc/admin.token");
  EXPECT_FALSE(parseLccSpec("East uns=a:1 admin=a:2 token_file=t").isOk());
  EXPECT_FALSE(parseLccSpec("e uns=a admin=a:2 token_file=t").isOk());
  EXPECT_FALSE(parseLccSpec("e uns=a:1 admin=a:2").isOk());
  auto bad = parseLccSpec("e uns=a:1 admin=a:2 token_file=t colour=red");
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("colour=red"), std::string::npos);
}

// uns=tls://, admin=https://, ca=, tls_name=, proxy=v2: the scheme taken off the
// address (and kept for the FEDB), TLS options only with TLS.
TEST(LccSpec, TlsAndProxyFieldsOfAnEntry) {
  auto s = parseLccSpec("e uns=tls://10.0.0.5:7701 admin=https://10.0.0.5:7443 ca=/etc/lcc/sub-ca.pem "
                        "tls_name=e.lcc.example proxy=v2 token_file=t");
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_TRUE(s.value().uns_tls);
  EXPECT_TRUE(s.value().admin_tls);
  EXPECT_EQ(s.value().uns, "10.0.0.5:7701");
  EXPECT_EQ(s.value().admin, "10.0.0.5:7443");
  EXPECT_EQ(s.value().unsAddress(), "tls://10.0.0.5:7701");
  EXPECT_EQ(s.value().adminAddress(), "https://10.0.0.5:7443");
  EXPECT_EQ(s.value().ca_file, "/etc/lcc/sub-ca.pem");
  EXPECT_EQ(s.value().tls_name, "e.lcc.example");
  EXPECT_TRUE(s.value().proxy_v2);
  auto plain = parseLccSpec("e uns=a:1 admin=a:2 token_file=t");
  ASSERT_TRUE(plain.isOk());
  EXPECT_FALSE(plain.value().wantsTls() || plain.value().proxy_v2);
  EXPECT_EQ(plain.value().unsAddress(), "a:1");
  auto no_tls = parseLccSpec("e uns=a:1 admin=a:2 ca=/x token_file=t");
  ASSERT_FALSE(no_tls.isOk());
  EXPECT_NE(no_tls.status().message().find("need uns=tls:// or admin=https://"), std::string::npos);
  EXPECT_FALSE(parseLccSpec("e uns=a:1 admin=a:2 proxy=v1 token_file=t").isOk());
  EXPECT_FALSE(parseLccSpec("e uns=tls://a admin=a:2 token_file=t").isOk()) << "a port is still needed";
}

// The slot directory's policy: where a provider of a held or unheld slot goes
// (chooseForSlot), and the move's state machine (slot_move.h): the order of its
// steps, and what a front end that was killed in each phase does next.
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
                                      MoveStep::kCreateTarget, MoveStep::kCopy,          MoveStep::kAwaitCopies,
                                      MoveStep::kRemoveSource, MoveStep::kPlace,         MoveStep::kResumeTarget};
  EXPECT_EQ(steps, want);
  EXPECT_EQ(nextMoveStep(MovePhase::kDone), MoveStep::kNone);
}

// A front end killed during a step finds the phase of the step before it: it does
// the interrupted step again (each is idempotent), never skips one, and never goes back.
TEST(SlotMove, AfterACrashInEachPhaseTheInterruptedStepIsDoneAgain) {
  for (MovePhase recorded : {MovePhase::kPlanned, MovePhase::kFrozen, MovePhase::kSuspended, MovePhase::kDrained,
                             MovePhase::kCreated, MovePhase::kCopied, MovePhase::kReceived, MovePhase::kRemoved,
                             MovePhase::kPlaced}) {
    const std::string name = movePhaseName(recorded);
    auto parsed = parseMovePhase(name);
    ASSERT_TRUE(parsed) << name;
    EXPECT_EQ(*parsed, recorded);
    const MoveStep again = nextMoveStep(*parsed);
    EXPECT_NE(again, MoveStep::kNone) << name;
    EXPECT_GT(static_cast<int>(phaseAfter(again)), static_cast<int>(recorded)) << name;
  }
  EXPECT_FALSE(parseMovePhase("half-copied"));
  // The source is removed only after the target took the bytes, and routed to the
  // target only after that; a move recorded as copied before this step existed waits for them.
  EXPECT_EQ(nextMoveStep(MovePhase::kCopied), MoveStep::kAwaitCopies);
  EXPECT_EQ(nextMoveStep(MovePhase::kReceived), MoveStep::kRemoveSource);
  EXPECT_EQ(parseMovePhase("received"), MovePhase::kReceived);
  EXPECT_EQ(nextMoveStep(MovePhase::kRemoved), MoveStep::kPlace);
  EXPECT_LT(static_cast<int>(phaseAfter(MoveStep::kCopy)), static_cast<int>(phaseAfter(MoveStep::kRemoveSource)));
}

// Moving the slot back to the source while a move is unfinished undoes it, as long as
// nothing was removed at the source: what the target holds goes, the source is resumed.
TEST(SlotMove, AnUnfinishedMoveIsUndoneOnlyBeforeTheSourceRemovedAnything) {
  for (MovePhase p : {MovePhase::kPlanned, MovePhase::kFrozen, MovePhase::kSuspended, MovePhase::kDrained,
                      MovePhase::kCreated, MovePhase::kCopied, MovePhase::kReceived}) {
    EXPECT_TRUE(canUndo(p)) << movePhaseName(p);
  }
  EXPECT_FALSE(canUndo(MovePhase::kRemoved)) << "the source removed it: only forward";
  EXPECT_FALSE(canUndo(MovePhase::kPlaced));
  EXPECT_TRUE(canUndo(MovePhase::kUndo)) << "an undo interrupted is taken up again";
  std::vector<MoveStep> steps;
  MovePhase p = *parseMovePhase("undo");
  for (int n = 0; p != MovePhase::kDone && n < 5; ++n) {
    steps.push_back(nextMoveStep(p));
    p = phaseAfter(steps.back());
  }
  EXPECT_EQ(steps, (std::vector<MoveStep>{MoveStep::kRemoveTarget, MoveStep::kRestoreSource}));
  EXPECT_EQ(parseMovePhase(movePhaseName(MovePhase::kUndoTargetRemoved)), MovePhase::kUndoTargetRemoved);
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

// The source removes nothing before the target took every copy of its bytes (or found
// it cannot, and fetches the site), and every acked set is applied.
TEST(SlotMove, TheSourceIsRemovedOnlyOnceTheTargetTookEveryCopy) {
  const MonoTime deadline = kT0 + Millis(1000);
  CopiesProbe p;
  p.asked = true;
  EXPECT_EQ(decideCopies(p, kT0, deadline), CopiesDecision::kReceived);
  p.copies = 2;
  EXPECT_EQ(decideCopies(p, kT0, deadline), CopiesDecision::kWait);
  EXPECT_EQ(decideCopies(p, deadline, deadline), CopiesDecision::kGiveUp) << "the move keeps its phase";
  p.copies = 0;
  p.unapplied = 5;  // an import acked, not applied: its copies are not counted yet
  EXPECT_EQ(decideCopies(p, kT0, deadline), CopiesDecision::kWait);
  p.unapplied = 0;
  p.copies = 2;
  p.operator_suspended = true;  // nothing is fetched there until an operator resumes it
  EXPECT_EQ(decideCopies(p, kT0, deadline), CopiesDecision::kReceived);
  CopiesProbe down;  // could not be asked
  down.copies = 0;
  EXPECT_EQ(decideCopies(down, kT0, deadline), CopiesDecision::kWait);
  EXPECT_EQ(decideCopies(down, deadline, deadline), CopiesDecision::kGiveUp);
  CopiesProbe lost;
  lost.asked = true;
  lost.exists = false;
  EXPECT_EQ(decideCopies(lost, kT0, deadline), CopiesDecision::kTargetLost);
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
