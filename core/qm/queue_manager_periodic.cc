// queue_manager_periodic.cc — periodic work: the bandwidth wheel's tick, slot merges,
// checkpoints (content, queue, PIDB synced in that order; journal trimmed) and ageing.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/content_meta.h"

namespace lcc::qm {

void QueueManager::tick() {
  auto released = sched_.tick();
  if (!released.empty()) pump();
}

Status QueueManager::mergeSlots() {
  if (!failed_.isOk()) return failed_;
  const WallTime now = deps_.clock->now();
  LCC_ASSIGN_OR_RETURN(auto last_s, deps_.queue->getMeta(kMetaLastMerge));
  auto last = parseMetaU64(last_s);
  std::vector<TimeSlot> due;
  const TimeSlot cur = slots_.slotAt(now);
  if (!last) {
    due.push_back(cur);
  } else {
    WallTime from = fromUnixMillis(static_cast<std::int64_t>(*last));
    if (now - from >= slots_.period()) {
      for (TimeSlot s = 0; s < slots_.count(); ++s) due.push_back(s);
    } else if (now > from) {
      // Every slot that began in (from, now].
      TimeSlot s = slots_.slotAt(from);
      for (std::int32_t k = 0; k <= slots_.count(); ++k) {
        TimeSlot next = (s + 1) % slots_.count();
        Millis until = slots_.untilSlotStart(from, next);
        // Walk slot starts after `from`.
        WallTime start = from + until;
        if (start > now) break;
        due.push_back(next);
        from = start;
        s = next;
      }
    }
  }
  std::vector<PSetRecord> lists;
  for (TimeSlot s : due) {
    LCC_RETURN_IF_ERROR(deps_.queue->scanPSets(s, [&](const PSetRecord& p) {
      lists.push_back(p);
      return true;
    }));
  }
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  for (const auto& p : lists) {
    Status s = mergeIntoNow(t, p.pset, p.slot);
    if (!s.isOk()) {
      storeFailed(s);
      return s;
    }
    if (t.pendingOps() >= options_.apply_batch_ops) LCC_RETURN_IF_ERROR(finishTxn(t));
  }
  t.putMeta(kMetaLastMerge, std::to_string(toUnixMillis(now)));
  LCC_RETURN_IF_ERROR(finishTxn(t));
  if (!lists.empty()) {
    spdlog::info("qm: merged {} time-slot lists into fetch-now", lists.size());
    pump();
  }
  return Status::ok();
}

void QueueManager::flushProviderDeltas() {
  if (!deps_.providers) {
    usage_pending_.clear();
    return;
  }
  for (auto& [pid, u] : usage_pending_) {
    if (u.files == 0 && u.bytes == 0) continue;
    Status s = deps_.providers->modify(
        pid,
        [&](ProviderRecord& r) {
          auto add = [](std::uint64_t v, std::int64_t d) {
            return d < 0 && static_cast<std::uint64_t>(-d) > v ? 0 : static_cast<std::uint64_t>(static_cast<std::int64_t>(v) + d);
          };
          r.used_files = add(r.used_files, u.files);
          r.used_bytes = add(r.used_bytes, u.bytes);
          return Status::ok();
        },
        WriteOptions{.durable = false});
    if (!s.isOk() && !s.isNotFound()) storeFailed(s.withContext("provider store: quota use"));
    if (auto info = provider_info_.find(pid); info != provider_info_.end()) {
      info->second.used_files = static_cast<std::uint64_t>(
          std::max<std::int64_t>(0, static_cast<std::int64_t>(info->second.used_files) + u.files));
      info->second.used_bytes = static_cast<std::uint64_t>(
          std::max<std::int64_t>(0, static_cast<std::int64_t>(info->second.used_bytes) + u.bytes));
    }
  }
  usage_pending_.clear();
}

Status QueueManager::checkpoint() {
  if (!failed_.isOk()) return failed_;
  flushProviderDeltas();
  Status s = deps_.content->sync();
  if (s.isOk()) s = deps_.queue->sync().withContext("queue store");
  else s = s.withContext("content store");
  if (s.isOk() && deps_.providers) s = deps_.providers->sync().withContext("provider store");
  if (!s.isOk()) {
    storeFailed(s);
    return s;
  }
  ++stats_.checkpoints;
  publishMetrics();
  if (deps_.journal && applied_pos_ > 0) {
    Status tr = deps_.journal->trimUpTo(applied_pos_);
    if (!tr.isOk()) spdlog::warn("qm: trimming the intake journal: {}", tr.toString());
  }
  return Status::ok();
}

Status QueueManager::age() {
  if (!failed_.isOk() || !deps_.providers) return failed_;
  const WallTime now = deps_.clock->now();
  // The purge horizon content users are held to (common/content_meta.h): the highest
  // seq of an erased tombstone, written with the erasure.
  LCC_ASSIGN_OR_RETURN(auto horizon_s, deps_.content->getMeta(kContentMetaPurgedSeq));
  ChangeSeq horizon = parseMetaU64(horizon_s).value_or(0);
  std::vector<ProviderId> ids;
  LCC_RETURN_IF_ERROR(deps_.providers->scan([&](const ProviderRecord& r) {
    ids.push_back(r.id);
    return true;
  }));
  for (ProviderId pid : ids) {
    std::vector<std::string> expire, purge;
    ChangeSeq purged_seq = horizon;
    bool old = false;
    LCC_RETURN_IF_ERROR(deps_.content->scanProvider(pid, [&](const ContentRecord& r) {
      if (r.deleted) {
        if (now - r.stored >= options_.tombstone_keep) {
          purge.push_back(encodeUrlKey(r.key));
          purged_seq = std::max(purged_seq, r.seq);
        }
      } else if (now - r.refreshed >= options_.age_expire) {
        expire.push_back(encodeUrlKey(r.key));
      } else if (now - r.refreshed >= options_.age_warn) {
        old = true;
      }
      return true;
    }));
    if (expire.empty() && purge.empty() && !old) continue;
    StoreTxn t(*deps_.queue, *deps_.content, seq_);
    for (const auto& k : expire) {
      auto r = removeContent(t, k, now);
      if (!r.isOk()) return r.status();
    }
    for (const auto& k : purge) t.eraseContent(k);
    if (purged_seq > horizon) {
      horizon = purged_seq;
      t.putContentMeta(kContentMetaPurgedSeq, std::to_string(horizon));
    }
    LCC_RETURN_IF_ERROR(finishTxn(t));
    if (!expire.empty() || old) {
      const FullSetReason why = expire.empty() ? FullSetReason::kOldFiles : FullSetReason::kExpiredFiles;
      Status s = deps_.providers->modify(pid, [&](ProviderRecord& r) {
        if (!r.fullset_wanted) {
          r.fullset_wanted = true;
          r.fullset_reason = why;
        }
        return Status::ok();
      });
      if (!s.isOk() && !s.isNotFound()) {
        storeFailed(s.withContext("provider store: ageing"));
        return s;
      }
    }
    if (!expire.empty() || !purge.empty()) {
      spdlog::info("qm: ageing provider {}: {} expired, {} tombstones purged", pid, expire.size(), purge.size());
    }
  }
  return Status::ok();
}

}  // namespace lcc::qm
