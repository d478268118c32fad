// queue_manager_quota.cc — the files quota (issue 25), where the sets of every way in
// (CP sessions, IndexNow, sitemap polls) meet: a new identity that would take the
// provider past quota_files — the identities it claims: those it holds plus its new
// ones queued and not yet fetched — is not queued; it ends as error 206 in the
// provider's error list. Refreshes and deletes of what it holds are never refused.
//
// The count is per provider (rule 4): absorb.cc reports what claims an identity or
// gives it up (TxnEffects::claimed_delta; a fetched body stored under its row changes
// nothing, so the usual result writes no count), and it is kept as the QueueStore meta
// metaClaimedKey(pid), written in the same batch as the rows that change it, read back
// at first need after a restart: no scan. It is held between the files the provider
// holds (the PIDB's used_files plus what changed since the last checkpoint) and those
// plus its queued rows, so a store written before the count existed starts at what it
// holds, and a count a crash left off heals.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "qm/queue_manager.h"

namespace lcc::qm {

namespace {

template <typename Map>
std::int64_t deltaOf(const Map& m, ProviderId pid) {
  auto it = m.find(pid);
  return it == m.end() ? 0 : static_cast<std::int64_t>(it->second);
}

std::int64_t clampTo(std::int64_t v, std::int64_t lo, std::int64_t hi) { return std::max(lo, std::min(v, hi)); }

}  // namespace

std::uint64_t QueueManager::filesClaimed(ProviderId pid, const StoreTxn& t) {
  std::int64_t held = static_cast<std::int64_t>(providerInfo(pid).used_files);  // a failed read is not cached
  if (auto it = usage_pending_.find(pid); it != usage_pending_.end()) held += it->second.files;
  if (auto it = t.effects.usage_delta.find(pid); it != t.effects.usage_delta.end()) held += it->second.files;
  held = std::max<std::int64_t>(0, held);
  std::int64_t queued = deltaOf(t.effects.queued_delta, pid);
  {
    std::lock_guard<std::mutex> lk(queued_mu_);
    queued += deltaOf(queued_, pid);
  }
  auto kept = claimed_.find(pid);
  if (kept == claimed_.end()) {
    auto m = deps_.queue->getMeta(metaClaimedKey(pid));
    if (!m.isOk()) {
      storeFailed(m.status().withContext("queue store"));
      return static_cast<std::uint64_t>(held);  // not kept: read again once the QM runs again
    }
    kept = claimed_.emplace(pid, parseMetaU64(m.value())).first;
  }
  // None kept (a store written before the count existed): what it holds.
  const std::int64_t base = kept->second ? static_cast<std::int64_t>(*kept->second) : held;
  const std::int64_t v = base + deltaOf(t.effects.claimed_delta, pid);
  return static_cast<std::uint64_t>(clampTo(v, held, held + std::max<std::int64_t>(0, queued)));
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

std::vector<std::pair<ProviderId, std::uint64_t>> QueueManager::writeClaimed(StoreTxn& t) {
  std::vector<std::pair<ProviderId, std::uint64_t>> out;
  for (const auto& [pid, d] : t.effects.claimed_delta) {
    if (d == 0) continue;
    const std::uint64_t v = filesClaimed(pid, t);  // the count after t, held in its bounds
    t.putMeta(metaClaimedKey(pid), std::to_string(v));
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
