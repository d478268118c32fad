// The front end's decisions without I/O: placement by load, the add flow's order
// (pending → create → placed, and what each failure leaves), pending-row cleaning,
// the route cache's bounds, the front.lccs entries.
#include <gtest/gtest.h>

#include "front/front_options.h"
#include "front/mapping_cache.h"
#include "front/placement.h"

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

}  // namespace
}  // namespace lcc::front
