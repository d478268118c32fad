// front_db_slots.cc — FrontDb's slot directory and moves (front_db.h): the tables
// `slots`, `moves` and `front_meta`, and the reserve of a new provider in its slot.
#include "front/front_db.h"

#include "front/slot_move.h"

namespace lcc::front {
namespace {

constexpr const char* kNextId = "SELECT nextval(pg_get_serial_sequence('pmdb', 'id'))";
constexpr const char* kHolder = "SELECT lcc FROM slots WHERE slot = $1 FOR UPDATE";
constexpr const char* kTakeSlot = "INSERT INTO slots (slot, lcc) VALUES ($1, $2) ON CONFLICT (slot) DO NOTHING";
constexpr const char* kReserveId =
    "INSERT INTO pmdb (id, lcc, state) OVERRIDING SYSTEM VALUE VALUES ($1, $2, 'pending')";
constexpr const char* kMetaInit = "INSERT INTO front_meta (key, value) VALUES ('slots', $1) ON CONFLICT (key) DO NOTHING";
constexpr const char* kMetaSlots = "SELECT value FROM front_meta WHERE key = 'slots'";
// Rows placed before the directory existed: each slot goes to the sub-LCC of its
// lowest provider id (a move of the slot gathers the others).
constexpr const char* kBackfill =
    "INSERT INTO slots (slot, lcc) SELECT DISTINCT ON (id % $1) id % $1, lcc FROM pmdb "
    "ORDER BY id % $1, id ON CONFLICT (slot) DO NOTHING";
constexpr const char* kSlotRows =
    "SELECT s.slot, s.lcc, s.epoch, count(p.id), count(p.id) FILTER (WHERE p.state = 'moving'), "
    "count(p.id) FILTER (WHERE p.lcc <> s.lcc) "
    "FROM slots s LEFT JOIN pmdb p ON p.id % $1 = s.slot GROUP BY s.slot, s.lcc, s.epoch ORDER BY s.slot";
constexpr const char* kPendingInSlot = "SELECT count(*) FROM pmdb WHERE id % $1 = $2 AND state = 'pending'";
constexpr const char* kOtherMoves = "SELECT src, phase FROM moves WHERE slot = $1 AND dst <> $2";
constexpr const char* kUndoingTo =
    "SELECT count(*) FROM moves WHERE slot = $1 AND dst = $2 AND phase IN ('undo', 'target-removed')";
constexpr const char* kUndoMoves =
    "UPDATE moves SET phase = 'undo' WHERE slot = $1 AND dst <> $2 AND phase NOT IN ('undo', 'target-removed')";
constexpr const char* kGiveSlot = "UPDATE slots SET lcc = $2, epoch = epoch + 1 WHERE slot = $1 AND lcc <> $2";
constexpr const char* kPlanMoves =
    "INSERT INTO moves (provider, slot, src, dst, phase, src_local_id) "
    "SELECT id, $2, lcc, $3, 'planned', local_id FROM pmdb WHERE id % $1 = $2 AND lcc <> $3 "
    "ON CONFLICT (provider) DO NOTHING";
constexpr const char* kMovesOfSlot = "SELECT count(*) FROM moves WHERE slot = $1";
#define LCC_MOVE_COLUMNS "SELECT provider, slot, src, dst, phase, src_local_id, to_local_id FROM moves "
constexpr const char* kMoves = LCC_MOVE_COLUMNS "ORDER BY slot, provider LIMIT $1";
constexpr const char* kMoveOf = LCC_MOVE_COLUMNS "WHERE provider = $1";
#undef LCC_MOVE_COLUMNS
// A move's claim: a session advisory lock of the front end's PMDB connection, keyed by
// (the schema, the provider id as an int4), so front ends sharing one PMDB never run
// steps of one move at once; the server lets it go when that connection ends (the
// front end died). Taken by SlotMover::run() per move, all let go at the end of a pass.
#define LCC_MOVE_CLAIM(provider) "hashtext(current_schema()), (" provider " - 2147483648)::int4"
constexpr const char* kClaimMove = "SELECT pg_try_advisory_lock(" LCC_MOVE_CLAIM("$1") ")::int::int8";
constexpr const char* kReleaseMoves = "SELECT 1 FROM (SELECT pg_advisory_unlock_all()) AS u";
// Moves of the slot (to another sub-LCC than $2) whose claim another front end holds:
// startMove() does not mark them to be undone under a step running there (the claims
// it takes here end with its transaction).
constexpr const char* kClaimedElsewhere =
    "SELECT count(*) FROM moves WHERE slot = $1 AND dst <> $2 AND NOT pg_try_advisory_xact_lock(" LCC_MOVE_CLAIM(
        "provider") ")";
#undef LCC_MOVE_CLAIM
constexpr const char* kSetPhase = "UPDATE moves SET phase = $2, to_local_id = $3 WHERE provider = $1";
constexpr const char* kDropMove = "DELETE FROM moves WHERE provider = $1";
constexpr const char* kSetMoving = "UPDATE pmdb SET state = 'moving' WHERE id = $1 AND state IN ('placed', 'moving')";
constexpr const char* kPlaceMoved = "UPDATE pmdb SET lcc = $2, local_id = $3, state = 'placed' WHERE id = $1";

// `fn` (statements on `c`) in one durable transaction: committed when it succeeds,
// rolled back otherwise.
template <typename Fn>
auto inTransaction(pg::PgConn& c, Fn fn) -> decltype(fn()) {
  LCC_RETURN_IF_ERROR(c.begin(true));
  auto r = fn();
  if (!r.isOk()) {
    c.rollback();
    return r.status();
  }
  if (Status s = c.commit(); !s.isOk()) {
    c.rollback();
    return s;
  }
  return r;
}

MoveRow moveRowAt(const pg::PgResult& res, int i) {
  return {res.u64(i, 0), static_cast<std::uint32_t>(res.u64(i, 1)), res.bytes(i, 2), res.bytes(i, 3),
          res.bytes(i, 4), res.u64(i, 5), res.u64(i, 6)};
}

}  // namespace

Status FrontDb::runOne(const char* sql, const pg::PgParams& params) {
  std::lock_guard<std::mutex> lock(mu_);
  return conn_->run(sql, params).status();
}

Result<FrontDb::Reserved> FrontDb::reserveInSlot(std::uint32_t slots, const SlotDecider& decide) {
  std::lock_guard<std::mutex> lock(mu_);
  return inTransaction(*conn_, [&] { return reserveLocked(slots, decide); });
}

Result<FrontDb::Reserved> FrontDb::reserveLocked(std::uint32_t slots, const SlotDecider& decide) {
  auto id = conn_->run(kNextId, pg::PgParams());
  if (!id.isOk()) return id.status();
  Reserved out;
  out.id = id.value().u64(0, 0);
  pg::PgParams ps;
  ps.u64(out.id % slots);
  auto held = conn_->run(kHolder, ps);
  if (!held.isOk()) return held.status();
  std::optional<std::string> holder;
  if (held.value().rows() == 1) holder = held.value().bytes(0, 0);
  auto lcc = decide(holder);
  if (!lcc.isOk()) return lcc.status();
  out.lcc = lcc.value();
  pg::PgParams p;
  p.u64(out.id % slots).text(out.lcc);
  if (!holder) {
    auto t = conn_->run(kTakeSlot, p);
    if (!t.isOk()) return t.status();
    if (t.value().affected() != 1) return Status::busy("slot " + std::to_string(out.id % slots) + " was taken meanwhile");
  }
  pg::PgParams pr;
  pr.u64(out.id).text(out.lcc);
  auto ins = conn_->run(kReserveId, pr);
  if (!ins.isOk()) return ins.status();
  return out;
}

Status FrontDb::checkSlots(std::uint32_t slots) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.text(std::to_string(slots));
  LCC_RETURN_IF_ERROR(conn_->run(kMetaInit, p).status());
  auto r = conn_->run(kMetaSlots, pg::PgParams());
  if (!r.isOk()) return r.status();
  const std::string have = r.value().rows() == 1 ? r.value().bytes(0, 0) : "";
  if (have != std::to_string(slots)) {
    return Status::invalidArgument("front.slots: the slot directory (front_meta in this front.schema) has " + have +
                                   " slots; the count is fixed once the directory exists (got " +
                                   std::to_string(slots) + ")");
  }
  pg::PgParams b;
  b.u64(slots);
  return conn_->run(kBackfill, b).status();
}

Result<std::vector<SlotRow>> FrontDb::slotRows(std::uint32_t slots) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.u64(slots);
  auto r = conn_->run(kSlotRows, p);
  if (!r.isOk()) return r.status();
  std::vector<SlotRow> out;
  const pg::PgResult& res = r.value();
  for (int i = 0; i < res.rows(); ++i) {
    out.push_back({static_cast<std::uint32_t>(res.u64(i, 0)), res.bytes(i, 1), res.u64(i, 2), res.u64(i, 3),
                   res.u64(i, 4), res.u64(i, 5)});
  }
  return out;
}

Result<std::uint64_t> FrontDb::startMove(std::uint32_t slots, std::uint32_t slot, const std::string& dst) {
  std::lock_guard<std::mutex> lock(mu_);
  return inTransaction(*conn_, [&] { return startMoveLocked(slots, slot, dst); });
}

Result<std::uint64_t> FrontDb::startMoveLocked(std::uint32_t slots, std::uint32_t slot, const std::string& dst) {
  const std::string name = "slot " + std::to_string(slot);
  pg::PgParams ps;
  ps.u64(slot);
  auto held = conn_->run(kHolder, ps);
  if (!held.isOk()) return held.status();
  if (held.value().rows() != 1) return Status::notFound(name + " is held by no sub-LCC (it has no provider)");
  pg::PgParams pp;
  pp.u64(slots).u64(slot);
  auto pending = conn_->run(kPendingInSlot, pp);
  if (!pending.isOk()) return pending.status();
  if (pending.value().i64(0, 0) > 0) return Status::busy(name + " has a provider being added (pending); try later");
  pg::PgParams po;
  po.u64(slot).text(dst);
  auto other = conn_->run(kOtherMoves, po);
  if (!other.isOk()) return other.status();
  // An unfinished move elsewhere is undone when it comes from `dst` and removed nothing there yet.
  for (int i = 0; i < other.value().rows(); ++i) {
    auto phase = parseMovePhase(other.value().bytes(i, 1));
    if (other.value().bytes(i, 0) != dst || !phase || !canUndo(*phase)) {
      return Status::busy(name + " is being moved to another sub-LCC past the point of undoing it; finish that move "
                                 "first (move-slot again to it)");
    }
  }
  if (other.value().rows() > 0) {
    auto claimed = conn_->run(kClaimedElsewhere, po);
    if (!claimed.isOk()) return claimed.status();
    if (claimed.value().i64(0, 0) > 0) {
      return Status::busy(name + ": another front end is running a step of a move of it; try again");
    }
    LCC_RETURN_IF_ERROR(conn_->run(kUndoMoves, po).status());
  }
  auto undoing = conn_->run(kUndoingTo, po);
  if (!undoing.isOk()) return undoing.status();
  if (undoing.value().i64(0, 0) > 0) {
    return Status::busy(name + ": a move of it to " + dst + " is being undone; try again when that ended");
  }
  LCC_RETURN_IF_ERROR(conn_->run(kGiveSlot, po).status());
  pg::PgParams pm;
  pm.u64(slots).u64(slot).text(dst);
  LCC_RETURN_IF_ERROR(conn_->run(kPlanMoves, pm).status());
  auto n = conn_->run(kMovesOfSlot, ps);
  if (!n.isOk()) return n.status();
  return n.value().u64(0, 0);
}

Result<std::vector<MoveRow>> FrontDb::moves(int limit) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.i64(limit);
  auto r = conn_->run(kMoves, p);
  if (!r.isOk()) return r.status();
  std::vector<MoveRow> out;
  for (int i = 0; i < r.value().rows(); ++i) out.push_back(moveRowAt(r.value(), i));
  return out;
}

Result<pg::PgResult> FrontDb::runForProvider(const char* sql, std::uint64_t provider) {
  std::lock_guard<std::mutex> lock(mu_);
  pg::PgParams p;
  p.u64(provider);
  return conn_->run(sql, p);
}

Result<std::optional<MoveRow>> FrontDb::move(std::uint64_t provider) {
  auto r = runForProvider(kMoveOf, provider);
  if (!r.isOk()) return r.status();
  if (r.value().rows() == 0) return std::optional<MoveRow>();
  return std::optional<MoveRow>(moveRowAt(r.value(), 0));
}

Result<bool> FrontDb::claimMove(std::uint64_t provider) {
  auto r = runForProvider(kClaimMove, provider);
  if (!r.isOk()) return r.status();
  return r.value().i64(0, 0) == 1;
}

Status FrontDb::releaseMoves() { return runOne(kReleaseMoves, pg::PgParams()); }

Status FrontDb::setMovePhase(std::uint64_t provider, const std::string& phase, std::uint64_t to_local_id) {
  pg::PgParams p;
  p.u64(provider).text(phase).u64(to_local_id);
  return runOne(kSetPhase, p);
}

Status FrontDb::dropMove(std::uint64_t provider) {
  pg::PgParams p;
  p.u64(provider);
  return runOne(kDropMove, p);
}

Status FrontDb::setMoving(std::uint64_t id) {
  pg::PgParams p;
  p.u64(id);
  return runOne(kSetMoving, p);
}

Status FrontDb::placeMoved(std::uint64_t id, const std::string& lcc, std::uint64_t local_id) {
  pg::PgParams p;
  p.u64(id).text(lcc).u64(local_id);
  return runOne(kPlaceMoved, p);
}

}  // namespace lcc::front
