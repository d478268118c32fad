// queue_manager_sweep.cc — the orphan sweep (issue 15): content files that nothing
// points to are found and deleted. A QM crash between a result and its checkpoint
// leaves files whose LCC DB record was lost; a crash between the ContentStore and
// QueueStore syncs can lose an FSMDB row. Each BOT-M lists its content files (those no
// job in flight holds) on request; a file that no live LCC DB record of that machine
// and no FSMDB row names is an orphan: an FSMDB delete is written for it and the
// delete manager sends it. The BOT-M sent every result before the list, on the same
// link, so a file whose result is on its way is already in the LCC DB when the QM
// reads the list. The sweep's state (what it waits for, the referenced names, its
// counts) is OrphanSweep's (orphan_sweep.h); this file reads and writes the stores.
#include <spdlog/spdlog.h>

#include "qm/queue_manager.h"

namespace lcc::qm {

std::uint64_t QueueManager::sweepBotms() {
  sweep_.start();
  for (const auto& [id, l] : links_.all()) sweepLink(id);
  spdlog::info("qm: orphan sweep {} asked of {} BOT-M link(s)", sweep_.id(), sweep_.linksWaiting());
  return sweep_.id();
}

void QueueManager::sweepLink(LinkId link) {
  const BotmLinks::Link* l = links_.find(link);
  if (!l || !deps_.botm || !failed_.isOk()) return;
  std::vector<std::string> machines = l->machines;
  machines.push_back(l->machine);
  deps_.botm->sendSweep(link, sweep_.ask(link, machines));
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
  deletes_.outFiles(machine, out);
  return Status::ok();
}

void QueueManager::onSweepFile(LinkId link, std::uint64_t sweep, const std::string& machine, const std::string& file,
                               std::uint64_t size) {
  if (!sweep_.accepts(link, sweep) || !failed_.isOk()) return;  // an older sweep's
  sweep_.countListed();
  std::unordered_set<std::string>* ref = sweep_.referenced(machine);
  if (!ref) {
    ref = &sweep_.addReferenced(machine);
    Status s = buildReferenced(machine, *ref);
    if (!s.isOk()) return storeFailed(s.withContext("orphan sweep"));
  }
  if (!ref->insert(file).second) return;  // referenced (or listed twice)
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  DeleteRequest d{machine, file, deps_.clock->now()};
  t.putDelete(d);
  t.effects.deletes.push_back(d);
  sweep_.orphanFound(machine, file, size);
  spdlog::info("qm: orphan sweep {}: {}:{} ({} bytes) is referenced by nothing; deleting it", sweep, machine, file, size);
  if (!finishTxn(t).isOk()) return;  // routed by finishTxn
}

void QueueManager::onSwept(LinkId link, std::uint64_t sweep, const std::string& machine, std::uint64_t files) {
  const OrphanSweep::Swept w = sweep_.swept(link, sweep, machine);
  if (w == OrphanSweep::Swept::kIgnored) return;
  spdlog::info("qm: orphan sweep {}: BOT-M {} listed {} file(s)", sweep, machine, files);
  if (w == OrphanSweep::Swept::kSweepDone) {
    spdlog::info("qm: orphan sweep {} done: {} file(s) listed, {} orphan(s), {} bytes to reclaim", sweep_.id(),
                 sweep_.listed(), sweep_.orphans(), sweep_.orphanBytes());
  }
}

void QueueManager::sweepDeleted(const std::string& machine, const std::string& file) {
  const std::optional<std::uint64_t> bytes = sweep_.deleted(machine, file);
  if (!bytes) return;
  ++stats_.orphans_reclaimed;
  stats_.orphan_bytes_reclaimed += *bytes;
}

nlohmann::json QueueManager::sweepStatus() const { return sweep_.status(); }

}  // namespace lcc::qm
