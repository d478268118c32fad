#include "front/slot_move.h"

#include <array>

namespace lcc::front {
namespace {

constexpr std::array<const char*, 12> kPhaseNames = {"planned", "frozen",  "suspended", "drained",
                                                     "created", "copied",  "received",  "removed",
                                                     "placed",  "done",    "undo",      "target-removed"};

}  // namespace

const char* movePhaseName(MovePhase p) { return kPhaseNames[static_cast<std::size_t>(p)]; }

std::optional<MovePhase> parseMovePhase(const std::string& name) {
  for (std::size_t i = 0; i < kPhaseNames.size(); ++i) {
    if (name == kPhaseNames[i]) return static_cast<MovePhase>(i);
  }
  return std::nullopt;
}

MoveStep nextMoveStep(MovePhase p) {
  switch (p) {
    case MovePhase::kPlanned: return MoveStep::kFreeze;
    case MovePhase::kFrozen: return MoveStep::kSuspendSource;
    case MovePhase::kSuspended: return MoveStep::kWaitDrained;
    case MovePhase::kDrained: return MoveStep::kCreateTarget;
    case MovePhase::kCreated: return MoveStep::kCopy;
    case MovePhase::kCopied: return MoveStep::kAwaitCopies;
    case MovePhase::kReceived: return MoveStep::kRemoveSource;
    case MovePhase::kRemoved: return MoveStep::kPlace;
    case MovePhase::kPlaced: return MoveStep::kResumeTarget;
    case MovePhase::kDone: return MoveStep::kNone;
    case MovePhase::kUndo: return MoveStep::kRemoveTarget;
    case MovePhase::kUndoTargetRemoved: return MoveStep::kRestoreSource;
  }
  return MoveStep::kNone;
}

MovePhase phaseAfter(MoveStep step) {
  switch (step) {
    case MoveStep::kFreeze: return MovePhase::kFrozen;
    case MoveStep::kSuspendSource: return MovePhase::kSuspended;
    case MoveStep::kWaitDrained: return MovePhase::kDrained;
    case MoveStep::kCreateTarget: return MovePhase::kCreated;
    case MoveStep::kCopy: return MovePhase::kCopied;
    case MoveStep::kAwaitCopies: return MovePhase::kReceived;
    case MoveStep::kRemoveSource: return MovePhase::kRemoved;
    case MoveStep::kPlace: return MovePhase::kPlaced;
    case MoveStep::kRemoveTarget: return MovePhase::kUndoTargetRemoved;
    case MoveStep::kResumeTarget:
    case MoveStep::kRestoreSource:
    case MoveStep::kNone: return MovePhase::kDone;
  }
  return MovePhase::kDone;
}

bool canUndo(MovePhase p) {
  return p == MovePhase::kPlanned || p == MovePhase::kFrozen || p == MovePhase::kSuspended ||
         p == MovePhase::kDrained || p == MovePhase::kCreated || p == MovePhase::kCopied || p == MovePhase::kReceived || p == MovePhase::kUndo ||
         p == MovePhase::kUndoTargetRemoved;
}

DrainDecision decideDrain(const SourceProbe& probe, MonoTime now, MonoTime deadline) {
  if (probe.asked && !probe.exists) return DrainDecision::kSourceLost;
  if (probe.asked && probe.held && probe.in_flight == 0 && probe.unapplied == 0) return DrainDecision::kDrained;
  return now >= deadline ? DrainDecision::kGiveUp : DrainDecision::kWait;
}

CopiesDecision decideCopies(const CopiesProbe& probe, MonoTime now, MonoTime deadline) {
  if (probe.asked && !probe.exists) return CopiesDecision::kTargetLost;
  if (probe.asked && probe.unapplied == 0 && (probe.copies == 0 || probe.operator_suspended)) {
    return CopiesDecision::kReceived;
  }
  return now >= deadline ? CopiesDecision::kGiveUp : CopiesDecision::kWait;
}

CreateDecision decideCreate(const TargetProbe& probe) {
  if (!probe.asked) return CreateDecision::kRetryLater;
  return probe.local_id ? CreateDecision::kUseFound : CreateDecision::kCreate;
}

std::string moveSetName(const std::string& front_schema, std::uint64_t global_id, std::uint64_t target_local_id) {
  return "front-move/" + front_schema + "/" + std::to_string(global_id) + "/" + std::to_string(target_local_id);
}

}  // namespace lcc::front
