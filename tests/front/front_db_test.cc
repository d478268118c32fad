// The PMDB/FEDB tables on the private PostgreSQL of the fixture lcc_pg_server: the
// pending → placed transition and what the schema refuses (core/front/front_db.h).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "contract/server_store_options.h"
#include "front/front_db.h"
#include "front/slot_mover.h"

namespace lcc::front {
namespace {

class FrontDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::serverStoreSkipReason("storage-postgres"); !why.empty()) GTEST_SKIP() << why;
    opt_.conninfo = std::getenv("LCC_TEST_PG_CONNINFO");
    opt_.schema = testing::freshSchemaName();
    opt_.request_timeout = Millis(5000);
    opt_.slots = 4;
    opt_.lccs = {{"east", "127.0.0.1:1", "127.0.0.1:2", "/t", ""}, {"west", "127.0.0.1:3", "127.0.0.1:4", "/t", ""},
                 {"north", "127.0.0.1:5", "127.0.0.1:6", "/t", ""}};
    auto db = FrontDb::open(opt_);
    ASSERT_TRUE(db.isOk()) << db.status().message();
    db_ = std::move(db).value();
  }
  // A provider placed on east (its id there 11), its slot being moved to west.
  FrontDb::Reserved moveOneToWest() {
    auto east = [](const std::optional<std::string>& h) -> Result<std::string> { return h.value_or("east"); };
    auto a = db_->reserveInSlot(4, east).value();
    EXPECT_TRUE(db_->markPlaced(a.id, 11).isOk());
    EXPECT_TRUE(db_->startMove(4, static_cast<std::uint32_t>(a.id % 4), "west").isOk());
    return a;
  }
  FrontOptions opt_;
  std::unique_ptr<FrontDb> db_;
};

TEST_F(FrontDbTest, TheConfiguredLccsAreInTheFedbOpenWithTheirLoad) {
  ASSERT_TRUE(db_->recordLoad("west", 12).isOk());
  auto rows = db_->lccs();
  ASSERT_TRUE(rows.isOk());
  ASSERT_EQ(rows.value().size(), 3u);
  EXPECT_EQ(rows.value()[0].spec.name, "east");
  EXPECT_EQ(rows.value()[2].spec.uns, "127.0.0.1:3");
  EXPECT_EQ(rows.value()[2].providers, 12u);
  EXPECT_TRUE(rows.value()[0].open);
  // A second open (a restart, another front end) keeps what is there.
  ASSERT_TRUE(FrontDb::open(opt_).isOk());
  EXPECT_EQ(db_->lccs().value()[2].providers, 12u);
}

TEST_F(FrontDbTest, ARowIsPendingUntilPlacedOnceAndIdsGoUp) {
  auto a = db_->reserve("east");
  auto b = db_->reserve("west");
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_LT(a.value(), b.value());
  auto pending = db_->pending(16);
  ASSERT_TRUE(pending.isOk());
  EXPECT_EQ(pending.value().size(), 2u);
  ASSERT_TRUE(db_->markPlaced(a.value(), 7).isOk());
  EXPECT_EQ(db_->markPlaced(a.value(), 8).code(), StatusCode::kNotFound) << "placed once";
  auto m = db_->lookup(a.value());
  ASSERT_TRUE(m.isOk() && m.value());
  EXPECT_TRUE(m.value()->placed);
  EXPECT_EQ(m.value()->lcc, "east");
  EXPECT_EQ(m.value()->local_id, 7u);
  EXPECT_EQ(db_->pending(16).value().size(), 1u);
  ASSERT_TRUE(db_->drop(b.value()).isOk());
  EXPECT_FALSE(db_->lookup(b.value()).value());
}

TEST_F(FrontDbTest, OneLocalIdOfOneLccIsMappedOnceAndAnUnknownLccIsRefused) {
  auto a = db_->reserve("east");
  auto b = db_->reserve("east");
  ASSERT_TRUE(db_->markPlaced(a.value(), 3).isOk());
  EXPECT_FALSE(db_->markPlaced(b.value(), 3).isOk());
  auto c = db_->reserve("west");
  EXPECT_TRUE(db_->markPlaced(c.value(), 3).isOk()) << "another sub-LCC's 3 is another provider";
  EXPECT_FALSE(db_->reserve("south").isOk());
}

// The reserve in a slot: an unheld slot is given to the decider's choice; a held one
// is offered to its holder only; a refusal writes nothing.
TEST_F(FrontDbTest, AProviderGoesToItsSlotsHolderAndARefusalWritesNothing) {
  auto first = db_->reserveInSlot(4, [](const std::optional<std::string>& holder) -> Result<std::string> {
    EXPECT_FALSE(holder);
    return std::string("east");
  });
  ASSERT_TRUE(first.isOk()) << first.status().message();
  EXPECT_EQ(first.value().lcc, "east");
  // Ids 2, 3, 4 fill the other slots (given to west); id 5 is in the first's slot.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(db_->reserveInSlot(4, [](const std::optional<std::string>&) -> Result<std::string> {
                     return std::string("west");
                   }).isOk());
  }
  std::optional<std::string> offered;
  auto fifth = db_->reserveInSlot(4, [&](const std::optional<std::string>& holder) -> Result<std::string> {
    offered = holder;
    return *holder;
  });
  ASSERT_TRUE(fifth.isOk());
  EXPECT_EQ(fifth.value().id % 4, first.value().id % 4);
  EXPECT_EQ(offered, std::optional<std::string>("east"));
  EXPECT_EQ(fifth.value().lcc, "east");
  const auto before = db_->list(100).value().size();
  auto refused = db_->reserveInSlot(4, [](const std::optional<std::string>&) -> Result<std::string> {
    return Status::busy("not live");
  });
  EXPECT_EQ(refused.status().code(), StatusCode::kBusy);
  EXPECT_EQ(db_->list(100).value().size(), before) << "nothing written";
  auto slots = db_->slotRows(4);
  ASSERT_TRUE(slots.isOk());
  ASSERT_EQ(slots.value().size(), 4u);
  std::uint64_t total = 0;
  for (const auto& r : slots.value()) total += r.providers;
  EXPECT_EQ(total, 5u);
}

TEST_F(FrontDbTest, TheSlotCountIsFixedOnceTheDirectoryExists) {
  FrontOptions other = opt_;
  other.slots = 8;
  auto again = FrontDb::open(other);
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.status().message().find("front.slots"), std::string::npos) << again.status().message();
  EXPECT_TRUE(FrontDb::open(opt_).isOk());
}

TEST_F(FrontDbTest, AMoveGivesTheSlotAwayPlansEachProviderAndEndsPlaced) {
  auto east = [](const std::optional<std::string>& h) -> Result<std::string> { return h.value_or("east"); };
  auto a = db_->reserveInSlot(4, east).value();
  ASSERT_TRUE(db_->markPlaced(a.id, 11).isOk());
  const std::uint32_t slot = static_cast<std::uint32_t>(a.id % 4);
  EXPECT_EQ(db_->startMove(4, (slot + 1) % 4, "west").status().code(), StatusCode::kNotFound) << "unheld";
  auto pending_in_slot = db_->reserveInSlot(4, east).value();
  for (int i = 0; i < 8 && pending_in_slot.id % 4 != slot; ++i) {
    ASSERT_TRUE(db_->drop(pending_in_slot.id).isOk());
    pending_in_slot = db_->reserveInSlot(4, east).value();
  }
  ASSERT_EQ(pending_in_slot.id % 4, slot);
  EXPECT_EQ(db_->startMove(4, slot, "west").status().code(), StatusCode::kBusy) << "a pending add in the slot";
  ASSERT_TRUE(db_->markPlaced(pending_in_slot.id, 12).isOk());
  auto planned = db_->startMove(4, slot, "west");
  ASSERT_TRUE(planned.isOk()) << planned.status().message();
  EXPECT_EQ(planned.value(), 2u);
  EXPECT_EQ(db_->startMove(4, slot, "north").status().code(), StatusCode::kBusy) << "unfinished move elsewhere";
  EXPECT_EQ(db_->startMove(4, slot, "west").value(), 2u) << "asked again: the same moves";
  auto rows = db_->slotRows(4).value();
  for (const auto& r : rows) {
    if (r.slot == slot) {
      EXPECT_EQ(r.lcc, "west");
      EXPECT_EQ(r.epoch, 2u);
      EXPECT_EQ(r.elsewhere, 2u);
    }
  }
  auto moves = db_->moves(10).value();
  ASSERT_EQ(moves.size(), 2u);
  EXPECT_EQ(moves[0].phase, "planned");
  EXPECT_EQ(moves[0].src, "east");
  EXPECT_EQ(moves[0].src_local_id, 11u);
  ASSERT_TRUE(db_->setMoving(a.id).isOk());
  EXPECT_TRUE(db_->lookup(a.id).value()->moving);
  EXPECT_FALSE(db_->lookup(a.id).value()->placed);
  ASSERT_TRUE(db_->setMovePhase(a.id, "created", 5).isOk());
  EXPECT_EQ(db_->moves(10).value()[0].to_local_id, 5u);
  ASSERT_TRUE(db_->placeMoved(a.id, "west", 5).isOk());
  ASSERT_TRUE(db_->dropMove(a.id).isOk());
  auto m = db_->lookup(a.id).value();
  EXPECT_TRUE(m->placed);
  EXPECT_EQ(m->lcc, "west");
  EXPECT_EQ(m->local_id, 5u);
  EXPECT_EQ(db_->moves(10).value().size(), 1u);
}

// Moving the slot back while a move is unfinished: rows that removed nothing at the
// source are undone; one past that point keeps the move going forward.
TEST_F(FrontDbTest, AMoveBackToTheSourceUndoesWhatRemovedNothingThere) {
  const FrontDb::Reserved a = moveOneToWest();
  const std::uint32_t slot = static_cast<std::uint32_t>(a.id % 4);
  ASSERT_TRUE(db_->setMovePhase(a.id, "created", 5).isOk());
  auto back = db_->startMove(4, slot, "east");
  ASSERT_TRUE(back.isOk()) << back.status().message();
  auto moves = db_->moves(10).value();
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_EQ(moves[0].phase, "undo");
  EXPECT_EQ(moves[0].dst, "west") << "the undo removes what was made at west";
  const auto rows = db_->slotRows(4).value();
  for (const auto& r : rows) {
    if (r.slot == slot) EXPECT_EQ(r.lcc, "east");
  }
  EXPECT_EQ(db_->startMove(4, slot, "west").status().code(), StatusCode::kBusy) << "an undo under way ends first";
  ASSERT_TRUE(db_->setMovePhase(a.id, "removed", 5).isOk());
  EXPECT_EQ(db_->startMove(4, slot, "east").status().code(), StatusCode::kBusy)
      << "removed at the source already: only forward";
  EXPECT_TRUE(db_->startMove(4, slot, "west").isOk()) << "forward again";
}

// Two front ends on one PMDB: a move is claimed by one at a time; the other's pass
// leaves it alone (nothing frozen, no sub-LCC asked) and takes it over once the holder
// is gone (its connection closed); a move-slot back from the other does not mark it to
// be undone under the holder's step.
TEST_F(FrontDbTest, AMoveIsRunByOneFrontEndAtATimeAndTakenOverWhenItsHolderDies) {
  const FrontDb::Reserved a = moveOneToWest();
  const std::uint32_t slot = static_cast<std::uint32_t>(a.id % 4);
  auto other = FrontDb::open(opt_);
  ASSERT_TRUE(other.isOk()) << other.status().message();
  std::unique_ptr<FrontDb> db2 = std::move(other).value();

  ASSERT_TRUE(db_->claimMove(a.id).value());
  EXPECT_TRUE(db_->claimMove(a.id).value()) << "its holder may claim it again";
  EXPECT_FALSE(db2->claimMove(a.id).value());
  EXPECT_EQ(db2->startMove(4, slot, "east").status().code(), StatusCode::kBusy) << "no undo under a running step";

  // The sub-LCCs of opt_ listen nowhere: a step past the freeze fails with why.
  LccClient client(nullptr, Millis(500));
  SlotMover mover2(opt_, *db2, client, nullptr, [](std::uint64_t) {});
  SlotMover::Pass pass = mover2.run(slot);
  EXPECT_EQ(pass.left, 1u);
  EXPECT_EQ(pass.held_elsewhere, 1u);
  EXPECT_EQ(pass.error, "");
  EXPECT_FALSE(db2->lookup(a.id).value()->moving) << "not frozen by the front end that does not hold it";
  EXPECT_EQ(db2->moves(10).value()[0].phase, "planned");

  ASSERT_TRUE(db_->releaseMoves().isOk());
  ASSERT_TRUE(db2->claimMove(a.id).value()) << "let go: the other may take it";
  ASSERT_TRUE(db2->releaseMoves().isOk());
  ASSERT_TRUE(db_->claimMove(a.id).value());
  db_.reset();  // the holder dies: its connection ends, and its claim with it
  // The server lets the claim go once its backend saw the close (asynchronous): polled,
  // at most 400 tries (10 s).
  bool free = false;
  for (int i = 0; i < 400 && !free; ++i) {
    free = db2->claimMove(a.id).value();
    if (!free) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(free) << "the dead holder's claim was never let go";
  ASSERT_TRUE(db2->releaseMoves().isOk());
  pass = mover2.run(slot);
  EXPECT_EQ(pass.held_elsewhere, 0u);
  EXPECT_EQ(pass.left, 1u);
  EXPECT_NE(pass.error.find("phase frozen"), std::string::npos) << pass.error;  // frozen, then the suspend failed
  EXPECT_TRUE(db2->lookup(a.id).value()->moving);
  EXPECT_TRUE(db2->claimMove(a.id).value()) << "the pass let its claims go";
}

}  // namespace
}  // namespace lcc::front
