// queue_manager_intake.cc — intake: sets buffered, group commit of the intake journal,
// acks in arrival order, then each set applied to the stores in batches (rule 1).
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace lcc::qm {

void QueueManager::submit(IntakeSet set, AckFn ack) {
  Pending p;
  p.ack = std::move(ack);
  if (!failed_.isOk()) {
    p.kind = Pending::Kind::kRejected;
    p.reason = "queue manager failed: " + failed_.message();
  } else if (overloaded_) {
    p.kind = Pending::Kind::kRejected;
    p.reason = "queue manager overloaded";
  } else if (!set.uns.empty() && set.id != 0) {
    auto it = uns_seen_.find(set.uns);
    if (it == uns_seen_.end()) {
      auto m = deps_.queue->getMeta(metaUnsKey(set.uns));
      if (!m.isOk()) storeFailed(m.status().withContext("queue store"));
      std::uint64_t seen = m.isOk() ? parseMetaU64(m.value()).value_or(0) : 0;
      it = uns_seen_.emplace(set.uns, seen).first;
    }
    if (!failed_.isOk()) {
      p.kind = Pending::Kind::kRejected;
      p.reason = "queue manager failed: " + failed_.message();
    } else if (set.id <= it->second) {
      p.kind = Pending::Kind::kDuplicate;
    } else {
      it->second = set.id;
    }
  }
  p.set = std::move(set);
  pending_.push_back(std::move(p));
  if (!commit_posted_) {
    commit_posted_ = true;
    if (options_.group_commit_delay.count() > 0) {
      std::weak_ptr<bool> alive = alive_;
      commit_timer_ = deps_.clock->schedule(options_.group_commit_delay, [this, alive] {
        auto a = alive.lock();
        if (a && *a) post([this] { commitPending(); });
      });
    } else {
      post([this] { commitPending(); });
    }
  }
}

void QueueManager::commitPending() {
  commit_posted_ = false;
  commit_timer_ = 0;
  if (pending_.empty()) return;
  std::deque<Pending> batch;
  batch.swap(pending_);
  bool any = false;
  if (deps_.journal && failed_.isOk()) {
    for (auto& p : batch) {
      if (p.kind != Pending::Kind::kApply) continue;
      auto pos = deps_.journal->append(encodeIntakeSet(p.set));
      if (!pos.isOk()) {
        storeFailed(pos.status().withContext("intake journal"));
        break;
      }
      p.pos = pos.value();
      any = true;
    }
    if (any && failed_.isOk()) {
      auto c = deps_.journal->commit();
      ++stats_.journal_syncs;
      if (!c.isOk()) storeFailed(c.status().withContext("intake journal"));
    }
  }
  // Acks in submission order, only for what is durable.
  for (auto& p : batch) {
    if (p.kind == Pending::Kind::kApply && !failed_.isOk()) {
      p.kind = Pending::Kind::kRejected;
      p.reason = "queue manager failed: " + failed_.message();
    }
    switch (p.kind) {
      case Pending::Kind::kApply:
        ++stats_.sets;
        if (p.ack) p.ack(true, ErrorCode::kNone, "");
        break;
      case Pending::Kind::kDuplicate:
        ++stats_.sets_duplicate;
        if (p.ack) p.ack(true, ErrorCode::kNone, "");
        break;
      case Pending::Kind::kRejected:
        ++stats_.sets_rejected;
        if (p.ack) p.ack(false, ErrorCode::kOffline, p.reason);
        break;
    }
  }
  for (auto& p : batch) {
    if (p.kind != Pending::Kind::kApply || !failed_.isOk()) continue;
    Status s = applySet(p.set, p.pos);
    if (!s.isOk()) break;
  }
  if (deps_.journal && deps_.journal->sizeBytes() > options_.checkpoint_bytes) routeStoreError(checkpoint());
  updateOverload();
  pump();
}

QueueManager::ProviderInfo QueueManager::providerInfo(ProviderId pid) {
  auto it = provider_info_.find(pid);
  if (it != provider_info_.end()) return it->second;
  ProviderInfo info;
  if (deps_.providers) {
    auto r = deps_.providers->get(pid);
    if (!r.isOk()) storeFailed(r.status().withContext("provider store"));
    if (r.isOk() && r.value()) {
      info.priority = r.value()->priority;
      info.bandwidth = r.value()->bandwidth;
      info.prefixes = r.value()->prefixes;
    }
  }
  provider_info_[pid] = info;
  return info;
}

Status QueueManager::applySet(const IntakeSet& set, JournalPos pos) {
  if (set.pid == 0) return Status::ok();
  // Fresh priority and bandwidth for this provider (an administrator may have changed them).
  provider_info_.erase(set.pid);
  ProviderInfo info = providerInfo(set.pid);
  sched_.setProvider(set.pid, info.priority, info.bandwidth);
  const PSetId pset = pos > 0 ? std::max<PSetId>(pos, 1) : next_pset_;
  next_pset_ = std::max(next_pset_, pset + 1);
  const WallTime now = deps_.clock->now();
  AbsorbContext ctx{pset, info.priority, now, &slots_};
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  std::unordered_set<std::string> keep;
  for (const auto& u0 : set.urls) {
    const UrlNotice* u = &u0;
    UrlNotice fixed;
    if (u0.key.pid != set.pid) {
      fixed = u0;
      fixed.key.pid = set.pid;
      u = &fixed;
    }
    if (set.kind == SetKind::kFull) keep.insert(encodeUrlKey(u->key));
    Status s = u->op == UrlOp::kDelete ? insertRemoval(t, *u, now) : insertUpdate(t, *u, ctx);
    if (!s.isOk()) {
      storeFailed(s);
      return s;
    }
    if (t.pendingOps() >= options_.apply_chunk_ops) LCC_RETURN_IF_ERROR(finishTxn(t));
  }
  if (set.kind == SetKind::kFull) {
    Status s = sweepFullSet(t, set.pid, keep, now);
    if (!s.isOk()) {
      storeFailed(s);
      return s;
    }
  }
  t.putMeta(kMetaNextPSet, std::to_string(next_pset_));
  if (pos > 0) t.putMeta(kMetaAppliedPos, std::to_string(pos));
  if (!set.uns.empty() && set.id != 0) t.putMeta(metaUnsKey(set.uns), std::to_string(set.id));
  LCC_RETURN_IF_ERROR(finishTxn(t));
  if (pos > 0) applied_pos_ = pos;
  stats_.urls += set.urls.size();
  if (set.kind == SetKind::kFull && deps_.providers) {
    Status s = deps_.providers->modify(
        set.pid,
        [](ProviderRecord& r) {
          r.fullset_wanted = false;
          r.fullset_reason = FullSetReason::kNone;
          return Status::ok();
        },
        WriteOptions{.durable = false});
    if (!s.isOk() && !s.isNotFound()) storeFailed(s.withContext("provider store: clearing the full-set flag"));
  }
  return Status::ok();
}

Status QueueManager::finishTxn(StoreTxn& t) {
  Status s = t.commit();
  if (!s.isOk()) {
    storeFailed(s);
    return s;
  }
  applyEffects(t.effects);
  t.effects.clear();
  return Status::ok();
}

void QueueManager::applyEffects(TxnEffects& e) {
  std::unique_lock<std::mutex> lk(queued_mu_);
  for (auto [pid, d] : e.queued_delta) {
    auto& q = queued_[pid];
    if (d < 0 && static_cast<std::uint64_t>(-d) > q) d = -static_cast<std::int64_t>(q);
    q = static_cast<std::uint64_t>(static_cast<std::int64_t>(q) + d);
    queued_total_ = static_cast<std::uint64_t>(std::max<std::int64_t>(0, static_cast<std::int64_t>(queued_total_) + d));
    if (q == 0) queued_.erase(pid);
  }
  lk.unlock();
  for (auto [pid, pset] : e.ready_psets) {
    if (!sched_.hasProvider(pid)) {
      ProviderInfo info = providerInfo(pid);
      sched_.setProvider(pid, info.priority, info.bandwidth);
    }
    sched_.addReadySet(pid, pset);
  }
  for (auto [pid, u] : e.usage_delta) {
    auto& p = usage_pending_[pid];
    p.files += u.files;
    p.bytes += u.bytes;
  }
  stats_.skipped += e.fetches_skipped;
  stats_.removals += e.removals;
  if (!e.deletes.empty()) pumpDeletes();
}

}  // namespace lcc::qm
