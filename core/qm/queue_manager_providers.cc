// queue_manager_providers.cc — administrator changes reach the engine.
//
// The admin API (core/http/admin_api_lifecycle.cc) writes changes to the PIDB only;
// the scheduler's in-memory state (priority, bandwidth, held) is the QM's. Every
// qm.provider_refresh, and once at open(), the QM scans the PIDB and applies:
//  - state suspended: the provider is held (its ready sets stay, nothing is dispatched);
//    active again: released, and pump() hands out its URLs;
//  - priority / bandwidth changed: the scheduler takes the new values at once, for the
//    queued URLs too (intake also re-reads them for each set, queue_manager_intake.cc);
//  - state removing / purging: held; once none of its fetches is in flight, every queued
//    row is dropped (never fetched), kPurging also removes its content (tombstones for
//    content users, file deletes through the delete manager), and the record is deleted.
// A provider removed here stays held in memory, and rows that arrive for it later
// (a set already in the intake journal) are dropped at the next refresh.
// LIMIT: the QM reads the PIDB it was given. In a split deployment the admin API must
// run on the node whose PIDB the QM uses (docs/protocol.md, admin API).
#include <spdlog/spdlog.h>

#include "common/invariant.h"
#include "common/provider_state_name.h"
#include "lcc/provider_states.h"
#include "qm/queue_manager.h"

namespace lcc::qm {

void QueueManager::refreshProviders() {
  if (!opened_ || !failed_.isOk() || !deps_.providers) return;
  // Collect first: the store must not be called from inside its own scan.
  std::vector<ProviderRecord> changed;
  Status s = deps_.providers->scan([&](const ProviderRecord& r) {
    const bool known = sched_.hasProvider(r.id);
    if (r.state != ProviderState::kActive || known) {
      ProviderRecord lite;
      lite.id = r.id;
      lite.state = r.state;
      lite.priority = r.priority;
      lite.bandwidth = r.bandwidth;
      lite.quota_bytes = r.quota_bytes;
      changed.push_back(std::move(lite));
    }
    return true;
  });
  if (!s.isOk()) {
    storeFailed(s.withContext("provider store: reading provider changes"));
    return;
  }
  for (const auto& r : changed) {
    applyProviderState(r);
    if (!failed_.isOk()) return;
  }
  for (ProviderId pid : removed_) {
    if (queued(pid) > 0 && sched_.inFlight(pid) == 0 && !dropQueuedRows(pid).isOk()) return;
  }
  pump();
}

void QueueManager::applyProviderState(const ProviderRecord& r) {
  const ProviderId pid = r.id;
  const bool removing = isProviderRemoving(r.state);
  if (r.state == ProviderState::kPending && !sched_.hasProvider(pid)) return;  // nothing queued yet
  auto& info = provider_info_[pid];
  info.quota_bytes = r.quota_bytes;  // an administrator's change counts from this refresh
  if (!sched_.hasProvider(pid) || info.priority != r.priority || info.bandwidth != r.bandwidth) {
    info.priority = r.priority;
    info.bandwidth = r.bandwidth;
    sched_.setProvider(pid, r.priority, r.bandwidth);
  }
  const bool held = r.state != ProviderState::kActive;
  if (sched_.isHeld(pid) != held) {
    spdlog::info("qm: provider {} {} ({})", pid, held ? "held" : "released", providerStateName(r.state));
  }
  sched_.setHeld(pid, held);
  if (!removing || sched_.inFlight(pid) > 0) return;  // a fetch is out: finish at the next refresh
  routeStoreError(finishRemoval(pid, r.state == kProviderPurging).withContext("removing provider " + std::to_string(pid)));
}

Status QueueManager::finishRemoval(ProviderId pid, bool purge) {
  const std::uint64_t rows = queued(pid);
  LCC_RETURN_IF_ERROR(dropQueuedRows(pid));
  std::uint64_t tombstones = 0;
  if (purge) {
    StoreTxn t(*deps_.queue, *deps_.content, seq_);
    // A full set naming nothing: every live record of the provider gets a tombstone
    // and its file a delete request (FSMDB), sent by pumpDeletes() from applyEffects().
    Status s = sweepFullSet(t, pid, {}, deps_.clock->now());
    if (!s.isOk()) {
      storeFailed(s);
      return s;
    }
    tombstones = t.effects.removals;
    LCC_RETURN_IF_ERROR(finishTxn(t));
  }
  // The queue and catalog changes are durable before the record goes: a crash in
  // between finds the record still marked and does this again (it is idempotent).
  LCC_RETURN_IF_ERROR(checkpoint());
  Status s = deps_.providers->remove(pid);
  if (!s.isOk() && !s.isNotFound()) return s;
  removed_.insert(pid);
  provider_info_.erase(pid);
  spdlog::info("qm: provider {} removed: {} queued URL(s) dropped, {} ({} tombstone(s))", pid, rows,
               purge ? "content purged" : "content kept", tombstones);
  return Status::ok();
}

Status QueueManager::dropQueuedRows(ProviderId pid) {
  std::vector<PSetRecord> lists;
  Status s = deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    if (p.pid == pid) lists.push_back(p);
    return true;
  });
  if (!s.isOk()) {
    storeFailed(s);
    return s;
  }
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  for (const auto& p : lists) {
    // Each list from its head: every drop takes the current head, so unlinking is O(1).
    const ListId list{p.pset, p.slot};
    std::string cur = p.first;
    for (std::uint64_t steps = 0; !cur.empty(); ++steps) {
      if (!LCC_INVARIANT(steps <= p.count, "qm: a QPSDB list holds no more rows than its count")) break;
      auto row = t.entry(cur);
      if (!row.isOk()) {
        storeFailed(row.status());
        return row.status();
      }
      if (!row.value()) break;
      std::string next = row.value()->next;
      s = dropRow(t, cur, list);
      if (!s.isOk()) {
        storeFailed(s);
        return s;
      }
      cur = std::move(next);
      if (t.pendingOps() >= options_.apply_batch_ops) LCC_RETURN_IF_ERROR(finishTxn(t));
    }
    if (p.slot == kSlotNow) sched_.removeReadySet(pid, p.pset);
  }
  return finishTxn(t);
}

}  // namespace lcc::qm
