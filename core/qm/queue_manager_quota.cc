// queue_manager_quota.cc — the files quota (issue 25), where the sets of every way in
// (CP sessions, IndexNow, sitemap polls) meet: a new identity that would take the
// provider past quota_files — the files it holds plus its fresh queued fetches (of
// identities it does not hold yet) — is not queued; it ends as error 206 in the
// provider's error list. Refreshes and deletes of what it holds are never refused.
//
// The counts are per provider (rule 4): held files are the PIDB's used_files plus the
// changes since the last checkpoint (usage_pending_); fresh fetches are kept as the
// QueueStore meta metaFreshKey(pid), written in the same batch as the rows that change
// it (absorb.cc reports the changes in TxnEffects::fresh_delta), so a restart reads it
// back and no scan is needed.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "qm/queue_manager.h"

namespace lcc::qm {

namespace {

std::int64_t deltaOf(const std::map<ProviderId, std::int64_t>& m, ProviderId pid) {
  auto it = m.find(pid);
  return it == m.end() ? 0 : it->second;
}

std::uint64_t clampAdd(std::uint64_t v, std::int64_t d) {
  if (d < 0 && static_cast<std::uint64_t>(-d) > v) return 0;
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(v) + d);
}

}  // namespace

std::uint64_t QueueManager::freshCount(ProviderId pid) {
  if (auto it = fresh_.find(pid); it != fresh_.end()) return it->second;
  auto m = deps_.queue->getMeta(metaFreshKey(pid));
  if (!m.isOk()) {
    storeFailed(m.status().withContext("queue store"));
    return 0;  // not kept: read again once the QM runs again
  }
  // Absent (a store written before the count existed): nothing counted yet.
  const std::uint64_t v = parseMetaU64(m.value()).value_or(0);
  fresh_[pid] = v;
  return v;
}

std::uint64_t QueueManager::filesClaimed(ProviderId pid, const StoreTxn& t) {
  std::int64_t held = 0;
  if (auto it = provider_info_.find(pid); it != provider_info_.end()) held = static_cast<std::int64_t>(it->second.used_files);
  if (auto it = usage_pending_.find(pid); it != usage_pending_.end()) held += it->second.files;
  if (auto it = t.effects.usage_delta.find(pid); it != t.effects.usage_delta.end()) held += it->second.files;
  const std::uint64_t fresh = clampAdd(freshCount(pid), deltaOf(t.effects.fresh_delta, pid));
  return static_cast<std::uint64_t>(std::max<std::int64_t>(0, held)) + fresh;
}

void QueueManager::armFileQuota(ApplyGroup& g, ApplyRun& run) {
  const ProviderId pid = run.header.pid;
  auto info = provider_info_.find(pid);
  run.ctx.quota_files = info == provider_info_.end() ? 0 : info->second.quota_files;
  run.ctx.keep_refused = options_.max_errors_kept;
  if (run.ctx.quota_files == 0) {
    run.ctx.files_claimed = nullptr;
  } else if (run.header.kind == SetKind::kFull) {
    // What the set does not name is swept at its end: only its own identities count.
    run.ctx.files_claimed = [&run] { return run.full_claims; };
  } else {
    run.ctx.files_claimed = [this, &g, pid] { return filesClaimed(pid, g.txn); };
  }
}

std::vector<std::pair<ProviderId, std::uint64_t>> QueueManager::writeFresh(StoreTxn& t) {
  std::vector<std::pair<ProviderId, std::uint64_t>> out;
  for (const auto& [pid, d] : t.effects.fresh_delta) {
    if (d == 0) continue;
    std::uint64_t queued_after = 0;
    {
      std::lock_guard<std::mutex> lk(queued_mu_);
      auto q = queued_.find(pid);
      queued_after = clampAdd(q == queued_.end() ? 0 : q->second, deltaOf(t.effects.queued_delta, pid));
    }
    // Never more than the provider's queued rows: a count a crash left off (the
    // catalog applied, the queue batch lost) heals once its queue drains.
    const std::uint64_t v = std::min(clampAdd(freshCount(pid), d), queued_after);
    t.putMeta(metaFreshKey(pid), std::to_string(v));
    out.emplace_back(pid, v);
  }
  return out;
}

void QueueManager::recordRefused(ProviderId pid, const TxnEffects::Refused& r) {
  stats_.quota_refused += r.count;
  auto info = provider_info_.find(pid);
  const std::uint64_t quota = info == provider_info_.end() ? 0 : info->second.quota_files;
  spdlog::info("qm: provider {}: {} new URL(s) refused (206), files quota {} reached", pid, r.count, quota);
  if (!deps_.providers) return;
  const std::string message = "files quota exceeded (quota_files " + std::to_string(quota) + ")";
  const WallTime now = deps_.clock->now();
  const std::size_t keep = options_.max_errors_kept;
  Status s = deps_.providers->modify(
      pid,
      [&](ProviderRecord& rec) {
        rec.error_total += r.count;
        for (const auto& n : r.notices) {
          if (rec.errors.size() >= keep) break;
          FetchErrorEntry err;
          err.notice = n;
          err.code = ErrorCode::kQuotaExceeded;
          err.message = message;
          err.when = now;
          rec.errors.push_back(std::move(err));
        }
        return Status::ok();
      },
      WriteOptions{.durable = false});
  if (!s.isOk() && !s.isNotFound()) storeFailed(s.withContext("provider store: recording refused URLs"));
}

}  // namespace lcc::qm
