// slot_move.h — moving a provider from one sub-LCC to another, as a state machine
// without I/O (the policy of `lcc front move-slot`; slot_mover.h carries it out).
//
// A move is a row of the front end's `moves` table; its phase is the last step that
// is done. The next step is a function of the phase alone, and every step may be done
// again with the same result (a front end killed mid-step does it again on the next
// call or refresh):
//   planned   → freeze: PMDB row 'moving' (CPs get 130, admin writes 409)
//   frozen    → suspend the provider at the source (sessions 111, nothing dispatched)
//   suspended → wait until the source's QM holds it with no fetch in flight and no
//               acked set unapplied (front.move_wait at most, then the move waits)
//   drained   → create it at the target, suspended, with the source's settings and
//               password hash and the front end's marker (placementMarker: a provider carrying it
//               already there is the one made before a crash: used, not made again)
//   created   → copy: the source's stored URLs and queued URLs into the target's QM,
//               page by page (an intake set per chunk, deduplicated by the move's name
//               and chunk); a stored URL goes as a copy: its bytes at the source's
//               GET /cu/content/ (core/qm/move_copy.h)
//   copied    → resume it at the target (if the move suspended it) and wait until its
//               QM holds no copy left to take from the source (front.move_wait at most,
//               then the move waits): the bytes are at the target before the source
//               removes them
//   received  → remove the provider at the source (its CUs get tombstones)
//   removed   → PMDB row: the target, its id there, 'placed'
//   placed    → resume it at the target; the move row is deleted
// Nothing is removed at the source before the target committed the copy; nothing is
// routed to the target before the source removed it.
//
// Undone (move-slot back to the source while the move is unfinished, canUndo):
//   undo            → remove what the move made at the target (found by the marker,
//                     removed with its content; the target could not be asked: later)
//   target-removed  → resume it at the source (if the move suspended it), PMDB row
//                     'placed' at the source again; the move row is deleted
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lcc/clock.h"

namespace lcc::front {

enum class MovePhase { kPlanned, kFrozen, kSuspended, kDrained, kCreated, kCopied, kReceived, kRemoved, kPlaced,
                       kDone, kUndo, kUndoTargetRemoved };
enum class MoveStep { kFreeze, kSuspendSource, kWaitDrained, kCreateTarget, kCopy, kRemoveSource, kPlace,
                      kResumeTarget, kNone, kRemoveTarget, kRestoreSource, kAwaitCopies };

const char* movePhaseName(MovePhase p);
std::optional<MovePhase> parseMovePhase(const std::string& name);
// The step a move in phase `p` takes next (kNone: done).
MoveStep nextMoveStep(MovePhase p);
// The phase once `step` succeeded.
MovePhase phaseAfter(MoveStep step);
// True when a move in phase `p` may be undone: nothing is removed at the source yet.
bool canUndo(MovePhase p);

// What the source's QM said of the provider (GET /admin/qm/providers/<id>/export).
struct SourceProbe {
  bool asked = false;        // false: the source could not be asked
  bool exists = true;        // false: the source has no such provider (404)
  bool held = false;         // its QM holds it (it saw the suspension)
  std::uint64_t in_flight = 0;
  std::uint64_t unapplied = 0;  // URLs of acked sets not applied yet
};
enum class DrainDecision { kDrained, kWait, kGiveUp, kSourceLost };
// Drained once held with nothing in flight or unapplied; waiting past `deadline`
// gives up this pass (the move keeps its phase and is taken up again later).
DrainDecision decideDrain(const SourceProbe& probe, MonoTime now, MonoTime deadline);

// What the target's QM said of the moved provider's copies (export?limit=0&copies=1).
struct CopiesProbe {
  bool asked = false;           // false: the target could not be asked
  bool exists = true;           // false: the target has no such provider (404)
  bool operator_suspended = false;  // suspended at the target by an operator: nothing is fetched
  std::uint64_t copies = 0;     // queued copies not taken yet
  std::uint64_t unapplied = 0;  // URLs of acked sets not applied yet
};
enum class CopiesDecision { kReceived, kWait, kGiveUp, kTargetLost };
// Received once nothing is unapplied and no copy is left (or the provider is held by an
// operator at the target: its copies wait for the resume, the source's bytes gone by
// then, so they fetch the site); waiting past `deadline` gives up this pass.
CopiesDecision decideCopies(const CopiesProbe& probe, MonoTime now, MonoTime deadline);

// What the target's provider list said about the move marker.
struct TargetProbe {
  bool asked = false;
  std::optional<std::uint64_t> local_id;  // the provider carrying the marker
};
enum class CreateDecision { kUseFound, kCreate, kRetryLater };
CreateDecision decideCreate(const TargetProbe& probe);

// The intake name the copy's sets carry at the target (deduplicated per chunk number).
std::string moveSetName(const std::string& front_schema, std::uint64_t global_id, std::uint64_t target_local_id);

}  // namespace lcc::front
