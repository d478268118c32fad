// placement.h — the front end's decisions, without I/O (policy classes: events in,
// actions out; times are passed in, so tests need no clock).
//
// - choosePlacement(): which sub-LCC a new provider goes to (the least loaded live one).
// - AddFlow: one `POST /admin/providers` on the front end, the order that keeps the
//   PMDB and the sub-LCCs consistent: reserve a 'pending' mapping row → create the
//   provider on the sub-LCC (marked with the row's id) → mark the row 'placed'.
// - decidePending(): what a later pass does with a row left 'pending' (the add failed
//   in the middle): clean it (remove the marked provider from the sub-LCC, then the row)
//   or keep it while the sub-LCC cannot be asked.
// See README.md in this folder, "Placement" and "Pending rows".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lcc/clock.h"

namespace lcc::front {

// A sub-LCC as the FEDB knows it, with its load figures.
struct LccLoad {
  std::string name;
  bool open = true;                      // state 'open' (new providers may go there); 'closed': not
  std::optional<MonoTime> last_ok;       // the last refresh that read its figures (none: never)
  std::uint64_t providers = 0;           // providers it holds, at that refresh
  std::uint64_t placed_since = 0;        // providers the front end placed there since that refresh
};

// A read of the sub-LCC's provider count that began when `placed_before_read` was its
// placed_since: the placements made before the read began are in `providers` now; those
// made while it ran may or may not be, and stay counted (twice at worst until the next
// read, never missed: a burst of adds during a read does not all go to one sub-LCC).
void applyRead(LccLoad& l, std::uint64_t providers, std::uint64_t placed_before_read, MonoTime now);
// The load measure: providers held at the last refresh + those placed there since.
std::uint64_t loadOf(const LccLoad& l);
// Live: open, and refreshed within `stale_after` of `now`.
bool isLive(const LccLoad& l, MonoTime now, Millis stale_after);
// The live sub-LCC with the least load (ties: the smallest name); nullopt when none is live.
std::optional<std::string> choosePlacement(const std::vector<LccLoad>& lccs, MonoTime now, Millis stale_after);

// The hash slot of a provider id: id mod `slots` (ids are sequential: slots fill evenly).
std::uint32_t slotOf(std::uint64_t id, std::uint32_t slots);

// Where a new provider whose slot is `holder`'s (nullopt: the slot is unheld) goes.
// Held: to its holder, if it was read within `stale_after` (an operator's 'closed'
// keeps unheld slots away from it, not the slots it holds); else 503 and nothing is
// written. Unheld: to the least loaded live sub-LCC (choosePlacement), which then
// holds the slot; none live: 503.
struct SlotChoice {
  std::string lcc;   // where the provider goes; empty when refused
  int status = 0;    // 0: placed on lcc; else the HTTP status to answer
  std::string why;
};
SlotChoice chooseForSlot(const std::optional<std::string>& holder, const std::vector<LccLoad>& lccs, MonoTime now,
                         Millis stale_after);

// One add, as a state machine. Each event returns the next action for the caller to
// carry out (and report the outcome of with the next event).
class AddFlow {
 public:
  enum class Action {
    kReserve,       // insert the pending row for lcc(): then onReserved(id) or onReserveFailed()
    kCreate,        // create the provider on lcc() with marker(): then onCreated / onRefused / onUnknown
    kMarkPlaced,    // set local id and state 'placed': then onPlaced() or onPlaceFailed()
    kDropRow,       // delete the pending row (nothing was made on the sub-LCC): then answer
    kAnswer,        // done: answer status() with message()
  };

  explicit AddFlow(std::optional<std::string> lcc);
  Action start();
  Action onReserved(std::uint64_t global_id);
  // The reserve chose the sub-LCC itself (the slot's holder, chooseForSlot).
  Action onReserved(std::uint64_t global_id, const std::string& lcc);
  Action onReserveFailed(const std::string& why);
  // The slot could not take it (chooseForSlot refused): nothing was written.
  Action onNotPlaceable(int status, const std::string& why);
  Action onCreated(std::uint64_t local_id);
  // The sub-LCC answered 4xx: it made nothing. `status` and `why` are passed on.
  Action onRefused(int status, const std::string& why);
  // No answer, a broken answer or a 5xx: it may have made the provider. The row stays
  // pending; a later pass (decidePending) cleans it.
  Action onUnknown(const std::string& why);
  Action onPlaced();
  Action onPlaceFailed(const std::string& why);
  Action onRowDropped();

  const std::string& lcc() const { return lcc_; }
  std::uint64_t globalId() const { return global_id_; }
  std::uint64_t localId() const { return local_id_; }
  int status() const { return status_; }
  const std::string& message() const { return message_; }

 private:
  Action answer(int status, std::string message);
  std::string lcc_;
  std::uint64_t global_id_ = 0, local_id_ = 0;
  int status_ = 0;
  std::string message_;
};

// The `contact` the front end gives a provider it creates on a sub-LCC: how a later
// pass finds the provider of a pending row there.
std::string placementMarker(const std::string& front_schema, std::uint64_t global_id);

// A pending row met by a later pass.
struct PendingRow {
  std::uint64_t global_id = 0;
  std::string lcc;
  MonoTime since{};  // when this process first saw it pending (or reserved it)
};
// What the sub-LCC's provider list said about the row's marker.
struct PendingProbe {
  bool asked = false;                     // false: the sub-LCC could not be asked
  std::optional<std::uint64_t> local_id;  // the provider carrying the marker, if any
};
enum class PendingAction {
  kKeep,            // too young (its add may still run) or the sub-LCC cannot be asked
  kRemoveThenDrop,  // remove provider local_id on the sub-LCC, then delete the row
  kDrop,            // the sub-LCC has nothing of it: delete the row
};
PendingAction decidePending(const PendingRow& row, const PendingProbe& probe, MonoTime now, Millis grace);

}  // namespace lcc::front
