// front_db.h — the front end's PostgreSQL tables (one schema, front.schema):
//   fedb: the sub-LCCs {name, uns, admin, cu, token_file, state, providers,
//         refreshed_at, last_error};
//   pmdb: provider id (the front end's, from an identity column) → {lcc, local_id,
//         state 'pending'|'placed'|'moving', created_at}; (lcc, local_id) unique;
//   slots: the slot directory, slot (provider id mod front.slots) → {lcc, epoch};
//   moves: the providers of a slot being moved {provider, slot, src, dst, phase,
//          to_local_id} (slot_move.h);
//   front_meta: {key, value}; 'slots' = front.slots, fixed once written.
// A move is claimed by one front end at a time: a PostgreSQL advisory lock of this
// connection (claimMove, front_db_slots.cc).
// Over lcc/support/pg_conn.h (the libpq connection storage-postgres uses).
// THREADS: thread-safe (one connection under a mutex; every call is one statement).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "front/front_options.h"
#include "lcc/status.h"
#include "lcc/support/pg_conn.h"

namespace lcc::front {

struct Mapping {
  std::uint64_t id = 0;        // the provider id CPs and `lcc provider` use on the front end
  std::string lcc;             // the sub-LCC holding it
  std::uint64_t local_id = 0;  // its id there (0 while pending)
  bool placed = false;
  bool moving = false;         // state 'moving' (a slot move holds it: CPs 130, admin writes 409)
  std::int64_t age_ms = 0;     // since the row was made (server time)
};

struct SlotRow {
  std::uint32_t slot = 0;
  std::string lcc;
  std::uint64_t epoch = 0;      // +1 at every move
  std::uint64_t providers = 0;  // pmdb rows in the slot
  std::uint64_t moving = 0;     // of them, with a move under way
  std::uint64_t elsewhere = 0;  // of them, on another sub-LCC (placed before the directory, or moving)
};

struct MoveRow {
  std::uint64_t provider = 0;  // the front end's id
  std::uint32_t slot = 0;
  std::string src, dst;
  std::string phase;           // slot_move.h
  std::uint64_t src_local_id = 0;
  std::uint64_t to_local_id = 0;  // 0 until made at dst
};

// Decides, inside the reserve's transaction, where a provider of a slot held by
// `holder` (nullopt: unheld) goes: the sub-LCC, or an error Status (nothing written).
using SlotDecider = std::function<Result<std::string>(const std::optional<std::string>& holder)>;

struct LccRow {
  LccSpec spec;
  bool open = true;
  std::uint64_t providers = 0;  // at the last refresh
  std::string last_error;
};

class FrontDb {
 public:
  // Connects, makes the schema and tables (IF NOT EXISTS), and writes the sub-LCCs of
  // the config into fedb (their addresses; the state is left as it is).
  static Result<std::unique_ptr<FrontDb>> open(const FrontOptions& options);

  Result<std::vector<LccRow>> lccs();
  Status recordLoad(const std::string& lcc, std::uint64_t providers);
  Status recordLoadError(const std::string& lcc, const std::string& why);

  // A new pending row for `lcc`; its id.
  Result<std::uint64_t> reserve(const std::string& lcc);
  // A new pending row in one transaction with its slot: the id drawn, the slot's
  // holder read (locked), `decide` asked; an unheld slot is given to the chosen one.
  struct Reserved {
    std::uint64_t id = 0;
    std::string lcc;
  };
  Result<Reserved> reserveInSlot(std::uint32_t slots, const SlotDecider& decide);
  // Writes front.slots the first time; InvalidArgument when the directory has another.
  Status checkSlots(std::uint32_t slots);
  Result<std::vector<SlotRow>> slotRows(std::uint32_t slots);
  // Gives the slot to `dst` (epoch + 1) and plans a move for each of its providers on
  // another sub-LCC, in one transaction; unfinished moves of the slot from `dst` to
  // another that removed nothing at `dst` yet are marked to be undone (slot_move.h).
  // NotFound: no such slot is held; Busy: a provider of the slot is pending, or a move
  // of it to another sub-LCC is unfinished and cannot be undone.
  Result<std::uint64_t> startMove(std::uint32_t slots, std::uint32_t slot, const std::string& dst);
  Result<std::vector<MoveRow>> moves(int limit);
  // The move of `provider` as recorded now (nullopt: none).
  Result<std::optional<MoveRow>> move(std::uint64_t provider);
  // Claims the move of `provider` for this front end (true), unless another front end
  // sharing the PMDB holds it (false). Held until releaseMoves() or until this
  // connection ends (the front end dies, or the connection broke and was made again).
  Result<bool> claimMove(std::uint64_t provider);
  Status releaseMoves();
  Status setMovePhase(std::uint64_t provider, const std::string& phase, std::uint64_t to_local_id);
  Status dropMove(std::uint64_t provider);
  Status setMoving(std::uint64_t id);
  // The move's end: the row names `lcc`/`local_id` and is 'placed' again.
  Status placeMoved(std::uint64_t id, const std::string& lcc, std::uint64_t local_id);
  // pending → placed with `local_id`; NotFound when the row is not pending any more.
  Status markPlaced(std::uint64_t id, std::uint64_t local_id);
  Status drop(std::uint64_t id);
  Result<std::optional<Mapping>> lookup(std::uint64_t id);
  // The oldest pending rows, at most `limit`.
  Result<std::vector<Mapping>> pending(int limit);
  // Every row in id order, at most `limit`.
  Result<std::vector<Mapping>> list(int limit);

 private:
  explicit FrontDb(std::unique_ptr<pg::PgConn> c) : conn_(std::move(c)) {}
  Result<std::vector<Mapping>> mappings(const char* sql, const pg::PgParams& params);
  Result<Reserved> reserveLocked(std::uint32_t slots, const SlotDecider& decide);
  Result<std::uint64_t> startMoveLocked(std::uint32_t slots, std::uint32_t slot, const std::string& dst);
  Status runOne(const char* sql, const pg::PgParams& params);
  Result<pg::PgResult> runForProvider(const char* sql, std::uint64_t provider);  // one parameter, under mu_
  std::mutex mu_;
  std::unique_ptr<pg::PgConn> conn_;
};

}  // namespace lcc::front
