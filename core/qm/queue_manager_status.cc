// queue_manager_status.cc — state for /status and /metrics.
#include "qm/queue_manager.h"

#include "common/invariant.h"

namespace lcc::qm {

void QueueManager::publishMetrics() {
  if (!deps_.metrics) return;
  auto bump = [&](const char* name, const char* help, std::uint64_t now, std::uint64_t& before) {
    deps_.metrics->counter(name, help).inc(now - before);
    before = now;
  };
  Stats& p = published_;
  const Stats& n = stats_;
  bump("lcc_qm_sets_total", "sets accepted (durable) by the QM", n.sets, p.sets);
  bump("lcc_qm_sets_duplicate_total", "replayed sets acknowledged without applying", n.sets_duplicate, p.sets_duplicate);
  bump("lcc_qm_sets_rejected_total", "sets rejected with 130", n.sets_rejected, p.sets_rejected);
  bump("lcc_qm_urls_total", "URL notices absorbed", n.urls, p.urls);
  bump("lcc_qm_fetches_dispatched_total", "fetches handed to BOT-Ms", n.dispatched, p.dispatched);
  bump("lcc_qm_fetched_total", "fetches stored", n.fetched, p.fetched);
  bump("lcc_qm_unchanged_total", "fetches answered 304", n.unchanged, p.unchanged);
  bump("lcc_qm_retries_total", "fetches to be retried", n.retries, p.retries);
  bump("lcc_qm_fetches_skipped_total", "updates not fetched (declared mt/size/md5 unchanged)", n.skipped, p.skipped);
  bump("lcc_qm_quota_refused_total", "new URLs refused (206): the provider's files quota was reached", n.quota_refused,
       p.quota_refused);
  bump("lcc_qm_removals_total", "records removed (tombstones)", n.removals, p.removals);
  bump("lcc_qm_deletes_sent_total", "file deletes sent to BOT-Ms", n.deletes_sent, p.deletes_sent);
  bump("lcc_qm_deletes_done_total", "file deletes confirmed", n.deletes_done, p.deletes_done);
  bump("lcc_qm_orphans_reclaimed_total", "orphan content files deleted by the sweep", n.orphans_reclaimed,
       p.orphans_reclaimed);
  bump("lcc_qm_orphan_bytes_reclaimed_total", "bytes of orphan content files deleted by the sweep",
       n.orphan_bytes_reclaimed, p.orphan_bytes_reclaimed);
  bump("lcc_qm_deletes_failed_total", "file deletes answered not ok (retried)", n.deletes_failed, p.deletes_failed);
  bump("lcc_qm_checkpoints_total", "store checkpoints", n.checkpoints, p.checkpoints);
  bump("lcc_qm_journal_syncs_total", "intake journal group commits", n.journal_syncs, p.journal_syncs);
  bump("lcc_invariant_failures_total", "broken invariants of lccd's own code (logged at error; common/invariant.h)",
       invariantFailures(), p.invariant_failures);
  deps_.metrics->gauge("lcc_qm_queued_urls", "URLs in the QDB").set(static_cast<std::int64_t>(queued_total_));
  deps_.metrics->gauge("lcc_qm_in_flight", "fetches outstanding").set(static_cast<std::int64_t>(inflight_.size()));
  deps_.metrics->gauge("lcc_qm_overloaded", "1 while sets are refused").set(overloaded_ ? 1 : 0);
  deps_.metrics->gauge("lcc_qm_cache_crash", "1 once cache-crash was raised").set(cache_crash_ ? 1 : 0);
}

std::uint64_t QueueManager::queued(ProviderId pid) const {
  std::lock_guard<std::mutex> lk(queued_mu_);
  auto it = queued_.find(pid);
  auto un = unapplied_urls_.find(pid);  // acked sets not yet applied count too
  return (it == queued_.end() ? 0 : it->second) + (un == unapplied_urls_.end() ? 0 : un->second);
}

nlohmann::json QueueManager::status() const {
  nlohmann::json j;
  j["queued_urls"] = queued_total_;
  {
    std::lock_guard<std::mutex> lk(queued_mu_);
    std::uint64_t unapplied = 0;
    for (const auto& [pid, n] : unapplied_urls_) unapplied += n;
    j["unapplied_urls"] = unapplied;  // in acked sets not applied yet (a Busy store's backlog)
  }
  j["providers_queued"] = queued_.size();
  j["providers_scheduled"] = sched_.providerCount();
  j["providers_eligible"] = sched_.eligibleCount();
  j["providers_delayed"] = sched_.delayedCount();
  j["providers_held"] = sched_.heldCount();  // suspended or being removed (queue_manager_providers.cc)
  j["ready_sets"] = sched_.readySetCount();
  j["in_flight"] = inflight_.size();
  j["capacity"] = sched_.capacity();
  j["in_flight_limit"] = sched_.limit();
  j["botm_links"] = links_.size();
  j["deletes_out"] = deletes_.outCount();
  j["overloaded"] = overloaded_;
  j["cache_crash"] = cache_crash_;
  j["failed"] = !failed_.isOk();
  j["store_busy"] = storeBusyStatus();  // a store answered Busy: work kept, sets get 130 (queue_manager_store_busy.cc)
  if (!failed_.isOk()) j["failure"] = failed_.toString();
  j["applied_journal_pos"] = applied_pos_;
  j["max_seq"] = seq_;
  j["sets"] = stats_.sets;
  j["sets_duplicate"] = stats_.sets_duplicate;
  j["sets_rejected"] = stats_.sets_rejected;
  j["urls_absorbed"] = stats_.urls;
  j["fetches_dispatched"] = stats_.dispatched;
  j["fetched"] = stats_.fetched;
  j["unchanged"] = stats_.unchanged;
  j["fetch_errors"] = stats_.errors;
  j["retries"] = stats_.retries;
  j["fetches_skipped"] = stats_.skipped;
  j["removals"] = stats_.removals;
  j["quota_refused"] = stats_.quota_refused;  // new URLs refused by the files quota (206)
  j["deletes_sent"] = stats_.deletes_sent;
  j["deletes_done"] = stats_.deletes_done;
  j["deletes_failed"] = stats_.deletes_failed;  // answered not ok (each is retried, see queue_manager_deletes.cc)
  j["sweep"] = sweepStatus();                    // the last orphan sweep (queue_manager_sweep.cc)
  j["fetch_lease"] = leaseStatus();               // the fetch leases (queue_manager_lease.cc)
  j["checkpoints"] = stats_.checkpoints;
  j["journal_syncs"] = stats_.journal_syncs;
  j["store_errors"] = stats_.store_errors;  // counted in /metrics as each comes (storeFailed)
  return j;
}

}  // namespace lcc::qm
