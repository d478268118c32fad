// queue_manager_intake.cc — intake: sets taken in parts (a large one journaled as it
// comes), group commit of the intake journal, acks in arrival order, then each set
// applied to the stores in batches (rule 1); a streamed set is read back part by part.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

namespace lcc::qm {

namespace {

// URLs of a set whose QDB rows and LCC DB records are read in one batch (applyUrls()).
constexpr std::size_t kPrefetchUrls = 512;
constexpr std::uint64_t kLocalStream = 1ull << 63;  // stream numbers of submit()
constexpr std::size_t kMaxRefusedIds = 4096;         // refused ids kept per UNS
}  // namespace

// A set refused with 130 is sent again by the UNS from its spool, maybe after a later
// set of the same connection was taken: its id is below the seen one, yet it is new.
bool QueueManager::seenBefore(const Pending& p, std::uint64_t seen) const {
  if (p.set.id > seen) return false;
  auto r = uns_refused_.find(p.set.uns);
  return r == uns_refused_.end() || r->second.count(p.set.id) == 0;
}

// Rejected (130: failed, overloaded, or a store Busy: "try later"), a duplicate, or applied.
void QueueManager::decideIntake(Pending& p) {
  auto reject = [this, &p](std::string why) {
    p.kind = Pending::Kind::kRejected;
    p.reason = std::move(why);
    if (p.set.uns.empty() || p.set.id == 0) return;
    // Only a set not seen yet (as far as the QM knows; ids up to the seen one read
    // later are dropped then): a duplicate stays a duplicate.
    if (auto s = uns_seen_.find(p.set.uns); s != uns_seen_.end() && p.set.id <= s->second) return;
    auto& ids = uns_refused_[p.set.uns];
    ids.insert(p.set.id);
    if (ids.size() > kMaxRefusedIds) ids.erase(ids.begin());
  };
  if (!failed_.isOk()) return reject("queue manager failed: " + failed_.message());
  if (overloaded_) return reject("queue manager overloaded");
  if (store_busy_) return reject("store busy (try later)");
  if (p.set.uns.empty() || p.set.id == 0) return;
  auto it = uns_seen_.find(p.set.uns);
  if (it == uns_seen_.end()) {
    auto m = deps_.queue->getMeta(metaUnsKey(p.set.uns));
    if (!m.isOk()) {
      // Not known, so not "never seen": nothing is cached and the set is refused.
      storeFailed(m.status().withContext("queue store"));
      return reject(failed_.isOk() ? "store busy (try later)" : "queue manager failed: " + failed_.message());
    }
    it = uns_seen_.emplace(p.set.uns, parseMetaU64(m.value()).value_or(0)).first;
    uns_written_[p.set.uns] = std::max(uns_written_[p.set.uns], it->second);
    if (auto r = uns_refused_.find(p.set.uns); r != uns_refused_.end()) {
      r->second.erase(r->second.begin(), r->second.upper_bound(it->second));  // applied before all
    }
  }
  if (seenBefore(p, it->second)) p.kind = Pending::Kind::kDuplicate;
}

void QueueManager::beginSet(std::uint64_t stream, IntakeHeader header) {
  Pending p;
  p.set.uns = std::move(header.uns);
  p.set.id = header.id;
  p.set.pid = header.pid;
  p.set.kind = header.kind;
  decideIntake(p);
  open_sets_[stream] = std::move(p);
}

void QueueManager::addSetPart(std::uint64_t stream, std::vector<UrlNotice> urls) {
  auto it = open_sets_.find(stream);
  if (it == open_sets_.end()) return;
  Pending& p = it->second;
  p.count += urls.size();
  if (p.kind != Pending::Kind::kApply) return;  // refused or a duplicate: its URLs are not kept
  if (p.set.urls.empty()) {
    p.set.urls = std::move(urls);
  } else {
    p.set.urls.insert(p.set.urls.end(), std::make_move_iterator(urls.begin()), std::make_move_iterator(urls.end()));
  }
  if (deps_.journal && p.set.urls.size() >= options_.intake_hold_urls) spillPart(p);
}

void QueueManager::spillPart(Pending& p) {
  auto refuse = [&](const Status& s) {
    storeFailed(s.withContext("intake journal"));
    p.kind = Pending::Kind::kRejected;
    p.reason = "queue manager failed: " + failed_.message();
    p.set.urls.clear();
  };
  if (!failed_.isOk()) return refuse(failed_);
  if (p.begin == 0) {
    std::string rec = encodeIntakeBegin(IntakeHeader{p.set.uns, p.set.id, p.set.pid, p.set.kind});
    auto pos = deps_.journal->append(rec);
    if (!pos.isOk()) return refuse(pos.status());
    p.begin = pos.value();
    unapplied_begins_.insert(p.begin);
    unsynced_bytes_ += rec.size();
  }
  std::string rec = encodeIntakePart(p.begin, p.set.urls);
  p.set.urls.clear();
  auto pos = deps_.journal->append(rec);
  if (!pos.isOk()) return refuse(pos.status());
  unsynced_bytes_ += rec.size();
  if (unsynced_bytes_ >= options_.intake_sync_bytes) {
    // Written out so the journal's buffer stays small; the set is acked only at its end.
    // Busy (no descriptor): the records stay appended and go with the next commit.
    unsynced_bytes_ = 0;
    ++stats_.journal_syncs;
    if (auto c = deps_.journal->commit(); !c.isOk() && !c.status().isBusy()) return refuse(c.status());
  }
}

void QueueManager::endSet(std::uint64_t stream, AckFn ack) {
  auto it = open_sets_.find(stream);
  if (it == open_sets_.end()) return;
  Pending p = std::move(it->second);
  open_sets_.erase(it);
  p.ack = std::move(ack);
  if (p.kind == Pending::Kind::kApply && p.begin != 0 && !p.set.urls.empty()) spillPart(p);
  if (p.kind == Pending::Kind::kApply && !p.set.uns.empty() && p.set.id != 0) {
    auto& seen = uns_seen_[p.set.uns];  // decideIntake() loaded it
    if (seenBefore(p, seen)) {
      p.kind = Pending::Kind::kDuplicate;  // the same set ended twice (another link)
    } else {
      seen = std::max(seen, p.set.id);
      if (auto r = uns_refused_.find(p.set.uns); r != uns_refused_.end()) r->second.erase(p.set.id);
    }
  }
  if (p.kind != Pending::Kind::kApply && p.begin != 0) unapplied_begins_.erase(p.begin);
  pending_.push_back(std::move(p));
  scheduleCommit();
}

void QueueManager::abortSet(std::uint64_t stream) {
  auto it = open_sets_.find(stream);
  if (it == open_sets_.end()) return;
  if (it->second.begin != 0) unapplied_begins_.erase(it->second.begin);
  open_sets_.erase(it);
}

void QueueManager::submit(IntakeSet set, AckFn ack) {
  const std::uint64_t stream = kLocalStream | ++local_streams_;
  beginSet(stream, IntakeHeader{std::move(set.uns), set.id, set.pid, set.kind});
  addSetPart(stream, std::move(set.urls));
  endSet(stream, std::move(ack));
}

void QueueManager::scheduleCommit() {
  if (commit_posted_) return;
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

// The journal could not open a file (out of descriptors, issue 25): the batch waits,
// unacked, at the head of the queue and the commit is tried again after kStoreRetry.
void QueueManager::commitLater(std::deque<Pending> batch, const Status& why) {
  countStoreError();
  if (!commit_busy_) spdlog::warn("qm: intake journal busy, sets wait: {}", why.toString());
  commit_busy_ = true;
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) pending_.push_front(std::move(*it));
  commit_posted_ = true;
  std::weak_ptr<bool> alive = alive_;
  commit_timer_ = deps_.clock->schedule(kStoreRetry, [this, alive] {
    auto a = alive.lock();
    if (a && *a) post([this] { commitPending(); });
  });
}

void QueueManager::commitPending() {
  commit_posted_ = false;
  commit_timer_ = 0;
  if (pending_.empty()) return;
  std::deque<Pending> batch;
  batch.swap(pending_);
  if (deps_.journal && failed_.isOk()) {
    bool any = false;
    for (auto& p : batch) {
      if (p.kind != Pending::Kind::kApply) continue;
      any = true;
      if (p.pos != 0) continue;  // appended by a commit that was busy: it is in the journal's buffer
      auto pos = deps_.journal->append(p.begin == 0 ? encodeIntakeSet(p.set) : encodeIntakeEnd({p.begin, p.count}));
      if (!pos.isOk()) {
        storeFailed(pos.status().withContext("intake journal"));
        break;
      }
      p.pos = pos.value();
    }
    if (any && failed_.isOk()) {
      auto c = deps_.journal->commit();
      unsynced_bytes_ = 0;
      ++stats_.journal_syncs;
      if (!c.isOk() && c.status().isBusy()) return commitLater(std::move(batch), c.status());
      if (!c.isOk()) storeFailed(c.status().withContext("intake journal"));
    }
  }
  if (commit_busy_ && failed_.isOk()) {
    spdlog::info("qm: intake journal written again");
    commit_busy_ = false;
  }
  // Acks in submission order, only for what is durable (with qm.ack_after_store: in
  // the stores, queue_manager_acks.cc).
  for (auto& p : batch) {
    if (p.kind == Pending::Kind::kApply && !failed_.isOk()) {
      p.kind = Pending::Kind::kRejected;
      p.reason = "queue manager failed: " + failed_.message();
      if (p.begin != 0) unapplied_begins_.erase(p.begin);
    }
    switch (p.kind) {
      case Pending::Kind::kApply: {
        ++stats_.sets;
        {
          std::lock_guard<std::mutex> lk(queued_mu_);
          unapplied_urls_[p.set.pid] += p.count;  // `processing` counts it from now on
        }
        answer(p, true, ErrorCode::kNone, "");  // qm.ack_after_store: once it is in the stores
        break;
      }
      case Pending::Kind::kDuplicate:
        ++stats_.sets_duplicate;
        answer(p, true, ErrorCode::kNone, "");
        break;
      case Pending::Kind::kRejected:
        ++stats_.sets_rejected;
        answer(p, false, ErrorCode::kOffline, p.reason);
        break;
    }
  }
  if (failed_.isOk()) applyOrDefer(batch);  // a failure went through storeFailed(); Busy waits
  flushAcks();
  if (deps_.journal && deps_.journal->sizeBytes() > options_.checkpoint_bytes) routeStoreError(checkpoint());
  updateOverload();
  pump();
}

// The acked sets of one commit share one StoreTxn and one write of the metas (a group);
// a full set begins a group of its own, so its sweep reads stores holding every set
// before it. The stores end as if each set had been applied alone, in order.
Status QueueManager::applyBatch(std::deque<Pending>& batch) {
  ApplyGroup g(*deps_.queue, *deps_.content, seq_);
  for (auto& p : batch) {
    if (p.kind != Pending::Kind::kApply) continue;
    LCC_RETURN_IF_ERROR(applyPending(g, p));
  }
  return finishGroup(g);
}

// The set's URLs stay with it until its group committed: a Busy apply is done again.
Status QueueManager::applyPending(ApplyGroup& g, Pending& p) {
  if (p.applied) return Status::ok();
  if (p.begin == 0) return applySet(g, p.set, p.pos, &p);
  return applyStreamed(g, IntakeHeader{p.set.uns, p.set.id, p.set.pid, p.set.kind}, p.begin, p.pos, &p);
}

QueueManager::ProviderInfo QueueManager::providerInfo(ProviderId pid) {
  auto r = readProviderInfo(pid);
  if (r.isOk()) return r.value();
  storeFailed(r.status());
  return ProviderInfo{};  // not cached: read again next time
}

Result<QueueManager::ProviderInfo> QueueManager::readProviderInfo(ProviderId pid) {
  auto it = provider_info_.find(pid);
  if (it != provider_info_.end()) return it->second;
  ProviderInfo info;
  if (deps_.providers) {
    auto r = deps_.providers->get(pid);
    if (!r.isOk()) return r.status().withContext("provider store");
    if (r.value()) {
      info.priority = r.value()->priority;
      info.bandwidth = r.value()->bandwidth;
      info.prefixes = r.value()->prefixes;
      info.quota_files = r.value()->quota_files;
      info.used_files = r.value()->used_files;
      info.quota_bytes = r.value()->quota_bytes;
      info.used_bytes = r.value()->used_bytes;
    }
  }
  provider_info_[pid] = info;
  return info;
}

Status QueueManager::startApply(ApplyGroup& g, const IntakeHeader& header, JournalPos pos, Pending* src) {
  if (header.kind == SetKind::kFull && (!g.runs.empty() || g.txn.pendingOps() > 0)) {
    LCC_RETURN_IF_ERROR(finishGroup(g));  // the sweep reads the stores: the sets before it are in
  }
  // Fresh priority and bandwidth for this provider, once per group (an administrator
  // may have changed them).
  if (std::find(g.refreshed.begin(), g.refreshed.end(), header.pid) == g.refreshed.end()) {
    provider_info_.erase(header.pid);
    auto info = readProviderInfo(header.pid);
    if (!info.isOk()) {
      storeFailed(info.status());
      return info.status();  // not applied with a default record (Busy: applied again later)
    }
    g.refreshed.push_back(header.pid);
    sched_.setProvider(header.pid, info->priority, info->bandwidth);
  }
  const PSetId pset = pos > 0 ? std::max<PSetId>(pos, 1) : next_pset_;
  next_pset_ = std::max(next_pset_, pset + 1);
  ApplyRun& run = g.runs.emplace_back();
  run.header = header;
  run.pos = pos;
  run.src = src;
  if (src) run.settled = src->settled;  // applied again after a Busy: counted off once
  run.ctx = AbsorbContext{pset, provider_info_[header.pid].priority, deps_.clock->now(), &slots_};
  return Status::ok();
}

// Applies URLs in order (last wins per identity), committing every apply_batch_ops.
Status QueueManager::applyUrls(ApplyGroup& g, const std::vector<UrlNotice>& urls) {
  ApplyRun& run = g.runs.back();
  const ProviderId pid = run.header.pid;
  armFileQuota(g, run);
  const bool full = run.header.kind == SetKind::kFull;
  // The rows and records of the next URLs, read in one batch per store (a store a round
  // trip away must not pay two per URL); again after a flush, which empties the overlay.
  std::size_t fetched_to = deps_.queue->openInfo().remote ? 0 : urls.size();  // local: read as they come
  for (std::size_t i = 0; i < urls.size(); ++i) {
    if (i >= fetched_to) {
      fetched_to = std::min(urls.size(), i + kPrefetchUrls);
      std::vector<std::string> keys;
      for (std::size_t k = i; k < fetched_to; ++k) keys.push_back(encodeUrlKey(UrlKey{pid, urls[k].key.url, urls[k].key.mime}));
      if (Status s = g.txn.prefetch(keys); !s.isOk()) {
        storeFailed(s);
        return s;
      }
    }
    const UrlNotice& u0 = urls[i];
    const UrlNotice* u = &u0;
    UrlNotice fixed;
    if (u0.key.pid != pid) {
      fixed = u0;
      fixed.key.pid = pid;
      u = &fixed;
    }
    const bool first = full && run.keep.insert(encodeUrlKey(u->key)).second;
    Status s;
    if (u->op == UrlOp::kDelete) {
      s = insertRemoval(g.txn, *u, run.ctx.now);
    } else {
      auto r = insertUpdate(g.txn, *u, run.ctx);
      s = r.status();
      // A full set's files: each identity it names that is held or queued, once.
      if (r.isOk() && (r.value() == Absorbed::kQueuedNew || (r.value() == Absorbed::kKnown && first))) {
        ++run.full_claims;
      }
    }
    if (!s.isOk()) {
      storeFailed(s);
      return s;
    }
    ++run.done;
    if (g.txn.pendingOps() >= options_.apply_batch_ops) {
      LCC_RETURN_IF_ERROR(flushGroup(g));
      if (deps_.queue->openInfo().remote) fetched_to = 0;
    }
  }
  return Status::ok();
}

void QueueManager::settleUnapplied(ApplyRun& run) {
  if (run.done <= run.settled) return;
  const std::uint64_t n = run.done - run.settled;
  run.settled = run.done;
  if (run.src) run.src->settled = run.settled;
  std::lock_guard<std::mutex> lk(queued_mu_);
  auto it = unapplied_urls_.find(run.header.pid);
  if (it == unapplied_urls_.end()) return;
  it->second -= std::min(it->second, n);
  if (it->second == 0) unapplied_urls_.erase(it);
}

Status QueueManager::endApply(ApplyGroup& g) {
  ApplyRun& run = g.runs.back();
  if (run.header.kind != SetKind::kFull) return Status::ok();
  Status s = sweepFullSet(g.txn, run.header.pid, run.keep, run.ctx.now);
  run.keep.clear();
  if (!s.isOk()) storeFailed(s);
  return s;
}

Status QueueManager::flushGroup(ApplyGroup& g) {
  LCC_RETURN_IF_ERROR(finishTxn(g.txn));
  for (auto& run : g.runs) settleUnapplied(run);
  return Status::ok();
}

// The metas take the values the last set of the group would have written alone.
Status QueueManager::finishGroup(ApplyGroup& g) {
  if (g.runs.empty()) return flushGroup(g);
  // Replay starts after the lowest record a set not yet applied may still need.
  JournalPos last_pos = 0;
  std::map<std::string, std::uint64_t> uns_ids;
  for (const auto& run : g.runs) {
    if (run.pos > 0) last_pos = run.pos;
    if (!run.header.uns.empty() && run.header.id != 0) uns_ids[run.header.uns] = std::max(uns_ids[run.header.uns], run.header.id);
  }
  JournalPos replay_from = last_pos;
  if (!unapplied_begins_.empty()) replay_from = std::min(replay_from, *unapplied_begins_.begin() - 1);
  g.txn.putMeta(kMetaNextPSet, std::to_string(next_pset_));
  if (last_pos > 0) {
    g.txn.putMeta(kMetaAppliedPos, std::to_string(replay_from));
    g.txn.putMeta(kMetaAppliedEnd, std::to_string(last_pos));
  }
  for (auto& [uns, id] : uns_ids) {
    // A refused set sent again may come after a higher one: the meta never goes down.
    id = std::max(id, uns_written_[uns]);
    g.txn.putMeta(metaUnsKey(uns), std::to_string(id));
  }
  LCC_RETURN_IF_ERROR(flushGroup(g));
  if (last_pos > 0) {
    applied_pos_ = replay_from;
    applied_end_ = last_pos;
  }
  for (const auto& [uns, id] : uns_ids) uns_written_[uns] = id;
  std::vector<ApplyRun> runs = std::move(g.runs);
  g.runs.clear();
  for (const auto& run : runs) {
    if (run.src && run.src->deferred) {
      // A commit that answered Busy may have landed (lost during COMMIT): applying it
      // again found its rows queued and reported no new ready list. Its list is made
      // ready here; a list that does not exist is dropped by the first walk.
      sched_.addReadySet(run.header.pid, run.ctx.pset);
    }
    if (run.src) {
      run.src->applied = true;
      if (run.src->held) run.src->held->ready = true;  // qm.ack_after_store: its ack may go
      std::vector<UrlNotice>().swap(run.src->set.urls);  // applied: its memory goes now
    }
    stats_.urls += run.done;
    if (run.header.kind == SetKind::kFull && deps_.providers) clearFullSetWanted(run.header.pid);
  }
  return Status::ok();
}

void QueueManager::clearFullSetWanted(ProviderId pid) {
  Status s = deps_.providers->modify(
      pid,
      [](ProviderRecord& r) {
        r.fullset_wanted = false;
        r.fullset_reason = FullSetReason::kNone;
        return Status::ok();
      },
      WriteOptions{.durable = false});
  if (!s.isOk() && !s.isNotFound()) storeFailed(s.withContext("provider store: clearing the full-set flag"));
}

Status QueueManager::applySet(const IntakeSet& set, JournalPos pos) {
  ApplyGroup g(*deps_.queue, *deps_.content, seq_);
  LCC_RETURN_IF_ERROR(applySet(g, set, pos, nullptr));
  return finishGroup(g);
}

Status QueueManager::applySet(ApplyGroup& g, const IntakeSet& set, JournalPos pos, Pending* src) {
  if (set.pid == 0) return Status::ok();
  LCC_RETURN_IF_ERROR(startApply(g, IntakeHeader{set.uns, set.id, set.pid, set.kind}, pos, src));
  LCC_RETURN_IF_ERROR(applyUrls(g, set.urls));
  return endApply(g);
}

Status QueueManager::applyStreamed(const IntakeHeader& header, JournalPos begin, JournalPos end) {
  ApplyGroup g(*deps_.queue, *deps_.content, seq_);
  LCC_RETURN_IF_ERROR(applyStreamed(g, header, begin, end, nullptr));
  return finishGroup(g);
}

// A streamed set: its kPart records are read back from the journal one at a time.
Status QueueManager::applyStreamed(ApplyGroup& g, const IntakeHeader& header, JournalPos begin, JournalPos end,
                                   Pending* src) {
  unapplied_begins_.erase(begin);  // put back by deferApply() when it comes back Busy
  if (header.pid == 0) return Status::ok();
  LCC_RETURN_IF_ERROR(startApply(g, header, end, src));
  Status applied;
  auto r = deps_.journal->replay(begin, [&](JournalPos pos, std::string_view payload) -> Status {
    if (pos >= end) return Status::aborted("the set's end");
    if (intakeRecordType(payload) != IntakeRecord::kPart || intakeRecordBegin(payload) != begin) return Status::ok();
    auto part = decodeIntakePart(payload, header.pid);
    if (!part.isOk()) return part.status().withContext("journal record " + std::to_string(pos));
    applied = applyUrls(g, part->urls);
    return applied.isOk() ? Status::ok() : Status::aborted("apply failed");
  });
  if (!applied.isOk()) return applied;
  if (!r.isOk() && r.status().code() != StatusCode::kAborted) {
    storeFailed(r.status().withContext("intake journal: reading set parts back"));
    return r.status();
  }
  return endApply(g);
}
Status QueueManager::finishTxn(StoreTxn& t) {
  reads_ahead_.clear();  // what dispatch read ahead may be what this changes
  const auto claimed = writeClaimed(t);  // with the rows that changed it
  Status s = t.commit();
  if (!s.isOk()) {
    storeFailed(s);
    return s;
  }
  for (const auto& [pid, v] : claimed) claimed_[pid] = v;
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
  for (const auto& [pid, r] : e.refused) recordRefused(pid, r);
  stats_.skipped += e.fetches_skipped;
  stats_.removals += e.removals;
  if (!e.deletes.empty()) pumpDeletes();
}

}  // namespace lcc::qm
