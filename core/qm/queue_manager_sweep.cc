// queue_manager_sweep.cc — the orphan sweep (issue 15): content files that nothing
// points to are found and deleted. A QM crash between a result and its checkpoint
// leaves files whose LCC DB record was lost; a crash between the ContentStore and
// QueueStore syncs can lose an FSMDB row. Each BOT-M lists its content files (those no
// job in flight holds) on request; a file that no live LCC DB record of that machine
// and no FSMDB row names is an orphan: an FSMDB delete is written for it and the
// delete manager sends it. The BOT-M sent every result before the list, on the same
// link, so a file whose result is on its way is already in the LCC DB when the QM
// reads the list.
#include <spdlog/spdlog.h>

#include "qm/queue_manager.h"

namespace lcc::qm {

std::uint64_t QueueManager::sweepBotms() {
  sweep_ = Sweep{};
  sweep_.id = next_sweep_id_++;
  for (const auto& [id, l] : links_) sweepLink(id);
  spdlog::info("qm: orphan sweep {} asked of {} BOT-M link(s)", sweep_.id, sweep_.waiting.size());
  return sweep_.id;
}

void QueueManager::sweepLink(LinkId link) {
  auto it = links_.find(link);
  if (it == links_.end() || !deps_.botm || !failed_.isOk()) return;
  if (sweep_.id == 0) sweep_.id = next_sweep_id_++;
  auto& machines = sweep_.waiting[link];
  machines.insert(it->second.machines.begin(), it->second.machines.end());
  machines.insert(it->second.machine);
  for (const auto& m : machines) machines_swept_.insert(m);
  deps_.botm->sendSweep(link, sweep_.id);
}

Status QueueManager::buildReferenced(const std::string& machine, std::unordered_set<std::string>& out) {
  // Every live record of the machine, every FSMDB row (the delete manager removes
  // those), every delete out now.
  ContentFilter all;
  LCC_RETURN_IF_ERROR(deps_.content->scanSince(0, all, [&](const ContentRecord& r) {
    if (!r.deleted && r.machine == machine && !r.filename.empty()) out.insert(r.filename);
    return true;
  }));
  LCC_RETURN_IF_ERROR(deps_.queue->scanDeletes(machine, [&](const DeleteRequest& d) {
    out.insert(d.filename);
    return true;
  }));
  for (const auto& [m, f] : deletes_out_keys_) {
    if (m == machine) out.insert(f);
  }
  return Status::ok();
}

void QueueManager::onSweepFile(LinkId link, std::uint64_t sweep, const std::string& machine, const std::string& file,
                               std::uint64_t size) {
  if (sweep != sweep_.id || !sweep_.waiting.count(link) || !failed_.isOk()) return;  // an older sweep's
  ++sweep_.listed;
  auto ref = sweep_.referenced.find(machine);
  if (ref == sweep_.referenced.end()) {
    ref = sweep_.referenced.emplace(machine, std::unordered_set<std::string>{}).first;
    Status s = buildReferenced(machine, ref->second);
    if (!s.isOk()) return storeFailed(s.withContext("orphan sweep"));
  }
  if (!ref->second.insert(file).second) return;  // referenced (or listed twice)
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  DeleteRequest d{machine, file, deps_.clock->now()};
  t.putDelete(d);
  t.effects.deletes.push_back(d);
  ++sweep_.orphans;
  sweep_.orphan_bytes += size;
  sweep_orphans_[{machine, file}] = size;
  spdlog::info("qm: orphan sweep {}: {}:{} ({} bytes) is referenced by nothing; deleting it", sweep, machine, file, size);
  if (!finishTxn(t).isOk()) return;  // routed by finishTxn
}

void QueueManager::onSwept(LinkId link, std::uint64_t sweep, const std::string& machine, std::uint64_t files) {
  if (sweep != sweep_.id) return;
  auto it = sweep_.waiting.find(link);
  if (it == sweep_.waiting.end()) return;
  it->second.erase(machine);
  sweep_.referenced.erase(machine);  // its memory goes as soon as its list ended
  spdlog::info("qm: orphan sweep {}: BOT-M {} listed {} file(s)", sweep, machine, files);
  if (!it->second.empty()) return;
  sweep_.waiting.erase(it);
  if (sweep_.waiting.empty()) {
    spdlog::info("qm: orphan sweep {} done: {} file(s) listed, {} orphan(s), {} bytes to reclaim", sweep_.id,
                 sweep_.listed, sweep_.orphans, sweep_.orphan_bytes);
  }
}

void QueueManager::sweepDeleted(const std::string& machine, const std::string& file) {
  auto it = sweep_orphans_.find({machine, file});
  if (it == sweep_orphans_.end()) return;
  ++sweep_.reclaimed_files;
  sweep_.reclaimed_bytes += it->second;
  ++stats_.orphans_reclaimed;
  stats_.orphan_bytes_reclaimed += it->second;
  sweep_orphans_.erase(it);
}

nlohmann::json QueueManager::sweepStatus() const {
  nlohmann::json j;
  j["id"] = sweep_.id;
  j["running"] = !sweep_.waiting.empty();
  j["links_waiting"] = sweep_.waiting.size();
  j["links_lost"] = sweep_.links_lost;
  j["files_listed"] = sweep_.listed;
  j["orphans"] = sweep_.orphans;
  j["orphan_bytes"] = sweep_.orphan_bytes;
  j["reclaimed_files"] = sweep_.reclaimed_files;
  j["reclaimed_bytes"] = sweep_.reclaimed_bytes;
  return j;
}

}  // namespace lcc::qm
