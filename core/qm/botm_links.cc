// botm_links.cc — the QM's BOT-M links and the link a fetch goes out on (botm_links.h).
#include "qm/botm_links.h"

namespace lcc::qm {

void BotmLinks::up(LinkId link, const std::string& machine, std::uint64_t capacity) {
  Link& l = links_[link];
  l.machine = machine;
  l.capacity = capacity;
  if (l.machines.empty()) l.machines.push_back(machine);
}

bool BotmLinks::setCapacity(LinkId link, std::uint64_t capacity) {
  auto it = links_.find(link);
  if (it == links_.end()) return false;
  it->second.capacity = capacity;
  return true;
}

bool BotmLinks::setMachines(LinkId link, std::vector<std::string> machines) {
  auto it = links_.find(link);
  if (it == links_.end()) return false;
  it->second.machines = std::move(machines);
  return true;
}

void BotmLinks::down(LinkId link) { links_.erase(link); }

std::optional<LinkId> BotmLinks::pick() const {
  std::optional<LinkId> best;
  double best_free = 0;
  for (const auto& [id, l] : links_) {
    double lim = static_cast<double>(l.capacity) * overload_pct_ / 100.0;
    double free = lim - static_cast<double>(l.in_flight);
    if (free >= 1.0 && (!best || free > best_free)) {
      best = id;
      best_free = free;
    }
  }
  return best;
}

void BotmLinks::fetchSent(LinkId link) {
  if (auto it = links_.find(link); it != links_.end()) it->second.in_flight += 1;
}

void BotmLinks::fetchEnded(LinkId link) {
  if (auto it = links_.find(link); it != links_.end() && it->second.in_flight > 0) it->second.in_flight -= 1;
}

std::uint64_t BotmLinks::totalCapacity() const {
  std::uint64_t total = 0;
  for (const auto& [id, l] : links_) total += l.capacity;
  return total;
}

const BotmLinks::Link* BotmLinks::find(LinkId link) const {
  auto it = links_.find(link);
  return it == links_.end() ? nullptr : &it->second;
}

}  // namespace lcc::qm
