#include "front/placement.h"

#include <algorithm>

namespace lcc::front {

void applyRead(LccLoad& l, std::uint64_t providers, std::uint64_t placed_before_read, MonoTime now) {
  l.providers = providers;
  l.placed_since -= std::min(l.placed_since, placed_before_read);
  l.last_ok = now;
}

std::uint64_t loadOf(const LccLoad& l) { return l.providers + l.placed_since; }

bool isLive(const LccLoad& l, MonoTime now, Millis stale_after) {
  return l.open && l.last_ok && now - *l.last_ok <= stale_after;
}

std::optional<std::string> choosePlacement(const std::vector<LccLoad>& lccs, MonoTime now, Millis stale_after) {
  const LccLoad* best = nullptr;
  for (const auto& l : lccs) {
    if (!isLive(l, now, stale_after)) continue;
    if (best == nullptr || loadOf(l) < loadOf(*best) || (loadOf(l) == loadOf(*best) && l.name < best->name)) {
      best = &l;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->name;
}

std::uint32_t slotOf(std::uint64_t id, std::uint32_t slots) {
  return slots == 0 ? 0 : static_cast<std::uint32_t>(id % slots);
}

SlotChoice chooseForSlot(const std::optional<std::string>& holder, const std::vector<LccLoad>& lccs, MonoTime now,
                         Millis stale_after) {
  if (holder) {
    for (const auto& l : lccs) {
      if (l.name == *holder && l.last_ok && now - *l.last_ok <= stale_after) return SlotChoice{l.name, 0, ""};
    }
    return SlotChoice{"", 503, "its slot is held by sub-LCC " + *holder + ", which is not live; try again later"};
  }
  auto best = choosePlacement(lccs, now, stale_after);
  if (!best) return SlotChoice{"", 503, "no sub-LCC is live and open for new providers; try again later"};
  return SlotChoice{*best, 0, ""};
}

AddFlow::AddFlow(std::optional<std::string> lcc) : lcc_(lcc.value_or("")) {}

AddFlow::Action AddFlow::answer(int status, std::string message) {
  status_ = status;
  message_ = std::move(message);
  return Action::kAnswer;
}

AddFlow::Action AddFlow::start() {
  if (lcc_.empty()) return answer(503, "no sub-LCC is live and open for new providers; try again later");
  return Action::kReserve;
}

AddFlow::Action AddFlow::onReserved(std::uint64_t global_id) {
  global_id_ = global_id;
  return Action::kCreate;
}

AddFlow::Action AddFlow::onReserved(std::uint64_t global_id, const std::string& lcc) {
  lcc_ = lcc;
  return onReserved(global_id);
}

AddFlow::Action AddFlow::onReserveFailed(const std::string& why) { return answer(503, "PMDB: " + why); }

AddFlow::Action AddFlow::onNotPlaceable(int status, const std::string& why) { return answer(status, why); }

AddFlow::Action AddFlow::onCreated(std::uint64_t local_id) {
  local_id_ = local_id;
  return Action::kMarkPlaced;
}

AddFlow::Action AddFlow::onRefused(int status, const std::string& why) {
  status_ = status;
  message_ = "sub-LCC " + lcc_ + ": " + why;
  return Action::kDropRow;
}

AddFlow::Action AddFlow::onUnknown(const std::string& why) {
  return answer(503, "sub-LCC " + lcc_ + ": " + why + "; provider " + std::to_string(global_id_) +
                         " is left pending and will be cleaned; try the add again");
}

AddFlow::Action AddFlow::onPlaced() { return answer(201, ""); }

AddFlow::Action AddFlow::onPlaceFailed(const std::string& why) {
  return answer(503, "PMDB: " + why + "; provider " + std::to_string(global_id_) +
                         " is left pending and will be cleaned; try the add again");
}

AddFlow::Action AddFlow::onRowDropped() { return Action::kAnswer; }

std::string placementMarker(const std::string& front_schema, std::uint64_t global_id) {
  return "lcc-front:" + front_schema + ":" + std::to_string(global_id);
}

PendingAction decidePending(const PendingRow& row, const PendingProbe& probe, MonoTime now, Millis grace) {
  if (now - row.since < grace || !probe.asked) return PendingAction::kKeep;
  return probe.local_id ? PendingAction::kRemoveThenDrop : PendingAction::kDrop;
}

}  // namespace lcc::front
