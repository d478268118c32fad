// orphan_sweep.cc — the orphan sweep's state (orphan_sweep.h).
#include "qm/orphan_sweep.h"

namespace lcc::qm {

std::uint64_t OrphanSweep::start() {
  cur_ = Current{};
  cur_.id = next_id_++;
  return cur_.id;
}

std::uint64_t OrphanSweep::ask(LinkId link, const std::vector<std::string>& machines) {
  if (cur_.id == 0) cur_.id = next_id_++;
  auto& waiting = cur_.waiting[link];
  waiting.insert(machines.begin(), machines.end());
  asked_.insert(waiting.begin(), waiting.end());
  return cur_.id;
}

bool OrphanSweep::accepts(LinkId link, std::uint64_t sweep) const {
  return sweep == cur_.id && cur_.waiting.count(link) > 0;
}

std::unordered_set<std::string>* OrphanSweep::referenced(const std::string& machine) {
  auto it = cur_.referenced.find(machine);
  return it == cur_.referenced.end() ? nullptr : &it->second;
}

std::unordered_set<std::string>& OrphanSweep::addReferenced(const std::string& machine) {
  return cur_.referenced[machine];
}

void OrphanSweep::orphanFound(const std::string& machine, const std::string& file, std::uint64_t size) {
  ++cur_.orphans;
  cur_.orphan_bytes += size;
  pending_[{machine, file}] = size;
}

OrphanSweep::Swept OrphanSweep::swept(LinkId link, std::uint64_t sweep, const std::string& machine) {
  if (sweep != cur_.id) return Swept::kIgnored;
  auto it = cur_.waiting.find(link);
  if (it == cur_.waiting.end()) return Swept::kIgnored;
  it->second.erase(machine);
  cur_.referenced.erase(machine);  // its memory goes as soon as its list ended
  if (!it->second.empty()) return Swept::kMachine;
  cur_.waiting.erase(it);
  return cur_.waiting.empty() ? Swept::kSweepDone : Swept::kLink;
}

void OrphanSweep::linkDown(LinkId link) {
  if (cur_.waiting.erase(link) > 0) ++cur_.links_lost;
}

std::optional<std::uint64_t> OrphanSweep::deleted(const std::string& machine, const std::string& file) {
  auto it = pending_.find({machine, file});
  if (it == pending_.end()) return std::nullopt;
  const std::uint64_t size = it->second;
  ++cur_.reclaimed_files;
  cur_.reclaimed_bytes += size;
  pending_.erase(it);
  return size;
}

nlohmann::json OrphanSweep::status() const {
  nlohmann::json j;
  j["id"] = cur_.id;
  j["running"] = !cur_.waiting.empty();
  j["links_waiting"] = cur_.waiting.size();
  j["links_lost"] = cur_.links_lost;
  j["files_listed"] = cur_.listed;
  j["orphans"] = cur_.orphans;
  j["orphan_bytes"] = cur_.orphan_bytes;
  j["reclaimed_files"] = cur_.reclaimed_files;
  j["reclaimed_bytes"] = cur_.reclaimed_bytes;
  return j;
}

}  // namespace lcc::qm
