#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "common/config/config.h"

namespace lcc::qm {

namespace {

constexpr const char* kMetaLastMerge = "qm.last_merge_ms";

std::optional<std::uint64_t> parseU64(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  std::uint64_t v = 0;
  auto r = std::from_chars(s->data(), s->data() + s->size(), v);
  if (r.ec != std::errc() || r.ptr != s->data() + s->size()) return std::nullopt;
  return v;
}

bool isPermanent(ErrorCode code) {
  switch (code) {
    case ErrorCode::kServerError:
    case ErrorCode::kFetchTimeout:
    case ErrorCode::kDnsFailure:
    case ErrorCode::kConnectFailure:
    case ErrorCode::kInternal:
    case ErrorCode::kOffline:
    case ErrorCode::kNone:
      return false;
    default:
      return true;
  }
}

}  // namespace

QmOptions QmOptions::fromConfig(const Config& c) {
  QmOptions o;
  o.queue_high = static_cast<std::uint64_t>(c.getInt("qm.queue_high"));
  o.queue_low = static_cast<std::uint64_t>(c.getInt("qm.queue_low"));
  o.slots = static_cast<std::int32_t>(c.getInt("qm.slots"));
  o.slot_period = Millis(c.getInt("qm.slot_period"));
  o.merge_interval = Millis(c.getInt("qm.merge_interval"));
  o.bandwidth_tick = Millis(c.getInt("qm.bandwidth_tick"));
  o.bandwidth_horizon = Millis(c.getInt("qm.bandwidth_horizon"));
  o.provider_inflight = static_cast<std::uint32_t>(c.getInt("qm.provider_inflight"));
  o.botm_overload_pct = static_cast<std::uint32_t>(c.getInt("qm.botm_overload_pct"));
  o.max_retries = static_cast<std::uint32_t>(c.getInt("qm.max_retries"));
  o.retry_delay = Millis(c.getInt("qm.retry_delay"));
  o.provider_error_delay = Millis(c.getInt("qm.provider_error_delay"));
  o.max_errors_kept = static_cast<std::uint32_t>(c.getInt("qm.max_errors_kept"));
  o.age_warn = Millis(c.getInt("qm.age_warn"));
  o.age_expire = Millis(c.getInt("qm.age_expire"));
  o.age_check_interval = Millis(c.getInt("qm.age_check_interval"));
  o.tombstone_keep = Millis(c.getInt("qm.tombstone_keep"));
  o.checkpoint_interval = Millis(c.getInt("qm.checkpoint_interval"));
  o.checkpoint_bytes = static_cast<std::uint64_t>(c.getInt("qm.checkpoint_bytes"));
  o.group_commit_delay = Millis(c.getInt("qm.group_commit_delay"));
  o.max_fetch_size = static_cast<std::uint64_t>(c.getInt("qm.max_fetch_size"));
  o.apply_chunk_ops = static_cast<std::size_t>(c.getInt("qm.apply_batch_ops"));
  o.delete_window = static_cast<std::size_t>(c.getInt("qm.delete_window"));
  return o;
}

QueueManager::QueueManager(QmDeps deps, QmOptions options)
    : deps_(std::move(deps)),
      options_(options),
      slots_(options.slots, options.slot_period),
      sched_(*deps_.clock, SchedulerOptions{options.provider_inflight, options.botm_overload_pct,
                                            options.bandwidth_tick, options.bandwidth_horizon}),
      alive_(std::make_shared<bool>(true)) {}

QueueManager::~QueueManager() {
  stopTimers();
  *alive_ = false;
}

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
  bump("lcc_qm_removals_total", "records removed (tombstones)", n.removals, p.removals);
  bump("lcc_qm_deletes_sent_total", "file deletes sent to BOT-Ms", n.deletes_sent, p.deletes_sent);
  bump("lcc_qm_deletes_done_total", "file deletes confirmed", n.deletes_done, p.deletes_done);
  bump("lcc_qm_checkpoints_total", "store checkpoints", n.checkpoints, p.checkpoints);
  bump("lcc_qm_journal_syncs_total", "intake journal group commits", n.journal_syncs, p.journal_syncs);
  deps_.metrics->gauge("lcc_qm_queued_urls", "URLs in the QDB").set(static_cast<std::int64_t>(queued_total_));
  deps_.metrics->gauge("lcc_qm_in_flight", "fetches outstanding").set(static_cast<std::int64_t>(inflight_.size()));
  deps_.metrics->gauge("lcc_qm_overloaded", "1 while sets are refused").set(overloaded_ ? 1 : 0);
  deps_.metrics->gauge("lcc_qm_cache_crash", "1 once cache-crash was raised").set(cache_crash_ ? 1 : 0);
}

void QueueManager::post(std::function<void()> fn) {
  if (deps_.post) {
    deps_.post(std::move(fn));
  } else {
    fn();
  }
}

// ---------------------------------------------------------------------------
// Open / close

Status QueueManager::open() {
  std::string crash_why;
  auto check = [&](const char* what, const StoreOpenInfo& info) {
    if (info.may_have_lost_synced) crash_why += std::string(crash_why.empty() ? "" : "; ") + what + " may have lost synced writes";
  };
  check("queue store", deps_.queue->openInfo());
  check("content store", deps_.content->openInfo());
  check("provider store", deps_.providers->openInfo());

  LCC_ASSIGN_OR_RETURN(seq_, deps_.content->maxSeq());
  LCC_ASSIGN_OR_RETURN(auto applied, deps_.queue->getMeta(kMetaAppliedPos));
  applied_pos_ = parseU64(applied).value_or(0);
  LCC_ASSIGN_OR_RETURN(auto next_pset, deps_.queue->getMeta(kMetaNextPSet));
  next_pset_ = std::max<PSetId>(1, parseU64(next_pset).value_or(1));

  // Tables first (the replay appends to lists the scheduler must know).
  LCC_RETURN_IF_ERROR(loadTables());

  if (deps_.journal) {
    std::uint64_t replayed = 0;
    auto info = deps_.journal->replay(applied_pos_, [&](JournalPos pos, std::string_view payload) -> Status {
      auto set = decodeIntakeSet(payload);
      if (!set.isOk()) {
        crash_why += std::string(crash_why.empty() ? "" : "; ") + "journal record " + std::to_string(pos) + ": " +
                     set.status().message();
        return Status::ok();
      }
      if (!set->uns.empty()) {
        auto& seen = uns_seen_[set->uns];
        seen = std::max(seen, set->id);
      }
      ++replayed;
      return applySet(*set, pos);
    });
    if (!info.isOk()) {
      if (!failed_.isOk()) return failed_;
      crash_why += std::string(crash_why.empty() ? "" : "; ") + "journal replay: " + info.status().message();
    } else if (info->corruption) {
      crash_why += std::string(crash_why.empty() ? "" : "; ") + "journal corruption: " + info->detail;
    }
    if (replayed > 0) spdlog::info("qm: replayed {} sets from the intake journal", replayed);
    next_pset_ = std::max<PSetId>(next_pset_, deps_.journal->lastPosition() + 1);
  }
  if (!failed_.isOk()) return failed_;
  opened_ = true;
  if (!crash_why.empty()) raiseCacheCrash(crash_why);
  // Slots that opened while the QM was down.
  LCC_RETURN_IF_ERROR(mergeSlots());
  updateOverload();
  pump();
  return Status::ok();
}

Status QueueManager::loadTables() {
  std::unique_lock<std::mutex> lk(queued_mu_);
  queued_.clear();
  queued_total_ = 0;
  std::uint64_t sum = 0;
  std::vector<PSetRecord> ready;
  LCC_RETURN_IF_ERROR(deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    queued_[p.pid] += p.count;
    sum += p.count;
    if (p.slot == kSlotNow) ready.push_back(p);
    return true;
  }));
  LCC_ASSIGN_OR_RETURN(std::uint64_t rows, deps_.queue->entryCount());
  if (rows != sum) {
    lk.unlock();
    spdlog::warn("qm: QPSDB lists hold {} rows but the QDB has {}; rebuilding the QPSDB", sum, rows);
    return rebuildPSets();
  }
  queued_total_ = sum;
  for (const auto& p : ready) {
    ProviderInfo info = providerInfo(p.pid);
    sched_.setProvider(p.pid, info.priority, info.bandwidth);
    sched_.addReadySet(p.pid, p.pset);
  }
  return Status::ok();
}

Status QueueManager::rebuildPSets() {
  // Lists are the `next` chains of the QDB: a head is a row no other row points to.
  std::unordered_map<std::string, QueueEntry> rows;
  std::unordered_set<std::string> pointed;
  LCC_RETURN_IF_ERROR(deps_.queue->scanEntries([&](const QueueEntry& e) {
    rows.emplace(encodeUrlKey(e.notice.key), e);
    if (!e.next.empty()) pointed.insert(e.next);
    return true;
  }));
  std::vector<std::pair<PSetId, TimeSlot>> old;
  LCC_RETURN_IF_ERROR(deps_.queue->scanPSets(std::nullopt, [&](const PSetRecord& p) {
    old.emplace_back(p.pset, p.slot);
    return true;
  }));
  QueueBatch b;
  for (auto [ps, sl] : old) b.removePSet(ps, sl);
  std::map<std::pair<PSetId, TimeSlot>, PSetRecord> lists;
  std::unordered_set<std::string> placed;
  auto place = [&](const std::string& head) {
    const QueueEntry& h = rows.at(head);
    std::pair<PSetId, TimeSlot> id{h.pset, h.slot};
    std::string cur = head, last;
    std::uint64_t n = 0;
    while (!cur.empty() && rows.count(cur) && placed.insert(cur).second) {
      last = cur;
      ++n;
      const QueueEntry& e = rows.at(cur);
      if (!e.next.empty() && !rows.count(e.next)) {
        QueueEntry fixed = e;  // points at a row that is gone: end the chain here
        fixed.next.clear();
        b.putEntry(fixed);
        break;
      }
      cur = e.next;
    }
    if (!cur.empty() && rows.count(cur) && placed.count(cur) && cur != last) {
      QueueEntry fixed = rows.at(last);  // a cycle: cut it
      fixed.next.clear();
      b.putEntry(fixed);
    }
    auto it = lists.find(id);
    if (it == lists.end()) {
      PSetRecord p;
      p.pset = id.first;
      p.slot = id.second;
      p.pid = h.notice.key.pid;
      p.priority = providerInfo(p.pid).priority;
      p.first = head;
      p.last = last;
      p.count = n;
      lists.emplace(id, p);
    } else {
      // Two chains with the same (pset, slot): join them.
      QueueEntry tail = rows.at(it->second.last);
      tail.next = head;
      rows[it->second.last].next = head;
      b.putEntry(tail);
      it->second.last = last;
      it->second.count += n;
    }
  };
  std::vector<std::string> heads;
  for (const auto& [key, e] : rows) {
    if (!pointed.count(key)) heads.push_back(key);
  }
  std::sort(heads.begin(), heads.end(), [&](const std::string& a, const std::string& b2) {
    const auto& x = rows.at(a);
    const auto& y = rows.at(b2);
    return std::tie(x.pset, x.slot, x.queued, a) < std::tie(y.pset, y.slot, y.queued, b2);
  });
  for (const auto& h : heads) place(h);
  // Rows only reachable through a cycle: each becomes its own list.
  for (const auto& [key, e] : rows) {
    if (!placed.count(key)) place(key);
  }
  for (const auto& [id, p] : lists) b.putPSet(p);
  LCC_RETURN_IF_ERROR(deps_.queue->apply(b).withContext("queue store"));
  spdlog::info("qm: rebuilt the QPSDB: {} lists over {} rows", lists.size(), rows.size());
  // Reload the in-memory tables from the new QPSDB.
  for (const auto& [id, p] : lists) {
    if (id.second == kSlotNow) sched_.removeReadySet(p.pid, p.pset);
  }
  std::vector<ProviderId> known;
  {
    std::lock_guard<std::mutex> lk(queued_mu_);
    for (const auto& [pid, n] : queued_) known.push_back(pid);
  }
  for (ProviderId pid : known) {
    for (PSetId ps : sched_.readySets(pid)) sched_.removeReadySet(pid, ps);
  }
  std::lock_guard<std::mutex> lk(queued_mu_);
  queued_.clear();
  queued_total_ = 0;
  for (const auto& [id, p] : lists) {
    queued_[p.pid] += p.count;
    queued_total_ += p.count;
    if (id.second == kSlotNow) {
      ProviderInfo info = providerInfo(p.pid);
      sched_.setProvider(p.pid, info.priority, info.bandwidth);
      sched_.addReadySet(p.pid, p.pset);
    }
  }
  return Status::ok();
}

Status QueueManager::close() {
  stopTimers();
  if (!pending_.empty()) commitPending();
  if (!failed_.isOk()) return failed_;
  return checkpoint();
}

void QueueManager::schedule(Millis every, std::function<void()> fn, TimerId* id) {
  std::weak_ptr<bool> alive = alive_;
  auto self = this;
  *id = deps_.clock->schedule(every, [alive, self, every, fn, id]() {
    auto a = alive.lock();
    if (!a || !*a) return;
    self->post([alive, self, every, fn, id]() {
      auto a2 = alive.lock();
      if (!a2 || !*a2 || !self->timers_on_) return;
      fn();
      if (self->timers_on_) self->schedule(every, fn, id);
    });
  });
}

void QueueManager::startTimers() {
  if (timers_on_) return;
  timers_on_ = true;
  schedule(options_.bandwidth_tick, [this] { tick(); }, &tick_timer_);
  schedule(options_.merge_interval, [this] { (void)mergeSlots(); }, &merge_timer_);
  schedule(options_.checkpoint_interval, [this] { (void)checkpoint(); }, &checkpoint_timer_);
  schedule(options_.age_check_interval, [this] { (void)age(); }, &age_timer_);
}

void QueueManager::stopTimers() {
  if (!timers_on_) return;
  timers_on_ = false;
  for (TimerId* t : {&tick_timer_, &merge_timer_, &checkpoint_timer_, &age_timer_, &commit_timer_}) {
    if (*t) deps_.clock->cancel(*t);
    *t = 0;
  }
}

// ---------------------------------------------------------------------------
// Intake

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
      std::uint64_t seen = m.isOk() ? parseU64(m.value()).value_or(0) : 0;
      it = uns_seen_.emplace(set.uns, seen).first;
    }
    if (set.id <= it->second) {
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
  if (deps_.journal && deps_.journal->sizeBytes() > options_.checkpoint_bytes) (void)checkpoint();
  updateOverload();
  pump();
}

QueueManager::ProviderInfo QueueManager::providerInfo(ProviderId pid) {
  auto it = provider_info_.find(pid);
  if (it != provider_info_.end()) return it->second;
  ProviderInfo info;
  if (deps_.providers) {
    auto r = deps_.providers->get(pid);
    if (r.isOk() && r.value()) {
      info.priority = r.value()->priority;
      info.bandwidth = r.value()->bandwidth;
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
        false);
    if (!s.isOk() && !s.isNotFound()) spdlog::warn("qm: clearing the full-set flag of provider {}: {}", set.pid, s.toString());
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

void QueueManager::updateOverload() {
  bool was = overloaded_;
  if (!overloaded_ && queued_total_ > options_.queue_high) overloaded_ = true;
  if (overloaded_ && queued_total_ < options_.queue_low) overloaded_ = false;
  if (was != overloaded_) {
    spdlog::warn("qm: {} ({} URLs queued)", overloaded_ ? "overloaded: refusing sets" : "taking sets again",
                 queued_total_);
    if (intake_listener_) intake_listener_(!overloaded_ && failed_.isOk());
  }
}

std::uint64_t QueueManager::queued(ProviderId pid) const {
  std::lock_guard<std::mutex> lk(queued_mu_);
  auto it = queued_.find(pid);
  return it == queued_.end() ? 0 : it->second;
}

// ---------------------------------------------------------------------------
// Failures

void QueueManager::storeFailed(const Status& s) {
  if (failed_.isOk()) {
    failed_ = s;
    spdlog::error("qm: store failure, refusing sets from now on: {}", s.toString());
    if (intake_listener_) intake_listener_(false);
  }
  raiseCacheCrash(s.toString());
}

void QueueManager::raiseCacheCrash(const std::string& why) {
  if (!cache_crash_) spdlog::error("qm: cache-crash: {}; every provider is asked for a full set", why);
  cache_crash_ = true;
  if (!deps_.providers) return;
  std::vector<ProviderId> ids;
  (void)deps_.providers->scan([&](const ProviderRecord& r) {
    if (!(r.fullset_wanted && r.fullset_reason == FullSetReason::kCacheCrash)) ids.push_back(r.id);
    return true;
  });
  for (ProviderId id : ids) {
    Status s = deps_.providers->modify(id, [](ProviderRecord& r) {
      r.fullset_wanted = true;
      r.fullset_reason = FullSetReason::kCacheCrash;
      return Status::ok();
    });
    if (!s.isOk()) spdlog::error("qm: raising cache-crash for provider {}: {}", id, s.toString());
  }
}

// ---------------------------------------------------------------------------
// BOT-M links and dispatch

void QueueManager::linkUp(LinkId link, const std::string& machine, std::uint64_t capacity) {
  Link& l = links_[link];
  l.machine = machine;
  l.capacity = capacity;
  if (l.machines.empty()) l.machines.push_back(machine);
  std::uint64_t total = 0;
  for (const auto& [id, x] : links_) total += x.capacity;
  sched_.setCapacity(total);
  machines_blocked_.clear();
  pumpDeletes();
  pump();
}

void QueueManager::linkCapacity(LinkId link, std::uint64_t capacity) {
  auto it = links_.find(link);
  if (it == links_.end()) return;
  it->second.capacity = capacity;
  std::uint64_t total = 0;
  for (const auto& [id, x] : links_) total += x.capacity;
  sched_.setCapacity(total);
  pump();
}

void QueueManager::linkMachines(LinkId link, const std::vector<std::string>& machines) {
  auto it = links_.find(link);
  if (it == links_.end()) return;
  it->second.machines = machines;
  for (const auto& m : machines) machines_blocked_.erase(m);
  pumpDeletes();
}

void QueueManager::linkDown(LinkId link) {
  // Every fetch outstanding on it is lost; the rows are still queued and go out again.
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    if (it->second.link == link) {
      sched_.lost(it->second.pid);
      inflight_keys_.erase(it->second.key);
      it = inflight_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = deletes_out_.begin(); it != deletes_out_.end();) {
    if (it->second.link == link) {
      deletes_out_keys_.erase({it->second.machine, it->second.file});
      it = deletes_out_.erase(it);
    } else {
      ++it;
    }
  }
  links_.erase(link);
  std::uint64_t total = 0;
  for (const auto& [id, x] : links_) total += x.capacity;
  sched_.setCapacity(total);
  pump();
}

std::optional<LinkId> QueueManager::pickLink() const {
  std::optional<LinkId> best;
  double best_free = 0;
  for (const auto& [id, l] : links_) {
    double lim = static_cast<double>(l.capacity) * options_.botm_overload_pct / 100.0;
    double free = lim - static_cast<double>(l.in_flight);
    if (free >= 1.0 && (!best || free > best_free)) {
      best = id;
      best_free = free;
    }
  }
  return best;
}

void QueueManager::pump() {
  if (!opened_ || !deps_.botm || !failed_.isOk()) return;
  for (int guard = 0; guard < 1000000; ++guard) {
    auto pid = sched_.pick();
    if (!pid) break;
    if (!pickLink()) break;
    if (!dispatchOne(*pid) && !failed_.isOk()) break;
  }
}

bool QueueManager::dispatchOne(ProviderId pid) {
  const WallTime now = deps_.clock->now();
  const TimeSlot cur_slot = slots_.slotAt(now);
  for (PSetId pset : sched_.readySets(pid)) {
    for (int again = 0; again < 1000; ++again) {
      auto rec = deps_.queue->getPSet(pset, kSlotNow);
      if (!rec.isOk()) {
        storeFailed(rec.status());
        return false;
      }
      if (!rec.value()) {
        sched_.removeReadySet(pid, pset);
        break;
      }
      std::string cur = rec.value()->first;
      bool restart = false;
      while (!cur.empty()) {
        auto row = deps_.queue->getEntry(cur);
        if (!row.isOk()) {
          storeFailed(row.status());
          return false;
        }
        if (!row.value()) {
          spdlog::warn("qm: QPSDB list ({}, -1) of provider {} points at a missing row; rebuilding", pset, pid);
          Status s = rebuildPSets();
          if (!s.isOk()) storeFailed(s);
          return true;
        }
        const QueueEntry& e = *row.value();
        if (inflight_keys_.count(cur)) {
          cur = e.next;
          continue;
        }
        const ListId list{pset, kSlotNow};
        if (e.op == QueueOp::kNothing) {
          // A removal came after this fetch was queued: the content went then; drop the row.
          StoreTxn t(*deps_.queue, *deps_.content, seq_);
          Status s = insertRemoval(t, e.notice, now);
          if (s.isOk()) s = dropRow(t, cur, list);
          if (s.isOk()) s = finishTxn(t);
          if (!s.isOk()) return false;
          restart = true;
          break;
        }
        auto w = slots_.parse(e.notice.tod);
        if (!slots_.inWindow(w, cur_slot)) {
          // Its window closed: the row waits in (pset, next open slot).
          StoreTxn t(*deps_.queue, *deps_.content, seq_);
          Status s = moveToSlot(t, cur, list, slots_.nextOpen(w, cur_slot));
          if (s.isOk()) s = finishTxn(t);
          if (!s.isOk()) return false;
          restart = true;
          break;
        }
        if (e.bad_count > 0) {
          auto ra = sched_.retryAt(pid);
          auto mono = deps_.clock->monoNow();
          if (ra && *ra > mono) {
            auto d = std::chrono::duration_cast<Millis>(*ra - mono) + Millis(1);
            if (sched_.delay(pid, d) == Scheduler::After::kBeyondHorizon) (void)moveProviderToSlot(pid, d);
            return true;
          }
        }
        auto link = pickLink();
        if (!link) return false;
        FetchOrder order;
        order.id = next_fetch_id_++;
        order.url = e.notice.fetchUrl();
        order.mime = e.notice.key.mime;
        order.max_size = options_.max_fetch_size;
        auto content = deps_.content->get(cur);
        if (content.isOk() && content.value() && !content.value()->deleted && content.value()->mtime &&
            !declaresOtherContent(e.notice, *content.value())) {
          // Conditional fetch only when the CP did not tell us the bytes changed: a
          // server's If-Modified-Since has one-second granularity and would answer 304
          // for a page rewritten within the same second.
          order.since = content.value()->mtime;
        }
        inflight_[order.id] = InFlight{pid, cur, pset, *link, e.notice};
        inflight_keys_.insert(cur);
        links_[*link].in_flight += 1;
        sched_.dispatched(pid);
        ++stats_.dispatched;
        deps_.botm->sendFetch(*link, order);
        return true;
      }
      if (!restart) break;  // every row of this set is in flight: try the next set
    }
  }
  sched_.blocked(pid);
  return true;
}

Status QueueManager::moveProviderToSlot(ProviderId pid, Millis delay) {
  if (sched_.inFlight(pid) > 0) {
    // Rows of these lists are out; hold the provider as long as the wheel allows.
    (void)sched_.delay(pid, options_.bandwidth_horizon);
    return Status::ok();
  }
  const TimeSlot target = slots_.slotAt(deps_.clock->now() + delay);
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  for (PSetId pset : sched_.readySets(pid)) {
    sched_.removeReadySet(pid, pset);
    LCC_RETURN_IF_ERROR(movePSet(t, pset, kSlotNow, target).status());
  }
  spdlog::info("qm: provider {} delayed past the bandwidth horizon; its sets wait for slot {}", pid, target);
  return finishTxn(t);
}

// ---------------------------------------------------------------------------
// Results

void QueueManager::onResult(LinkId link, const FetchOutcome& o) {
  auto it = inflight_.find(o.id);
  if (it == inflight_.end()) {
    spdlog::warn("qm: result for unknown fetch id {} from link {}", o.id, link);
    return;
  }
  InFlight f = std::move(it->second);
  inflight_.erase(it);
  inflight_keys_.erase(f.key);
  if (auto l = links_.find(f.link); l != links_.end() && l->second.in_flight > 0) l->second.in_flight -= 1;
  if (failed_.isOk()) {
    FetchOutcome checked = o;
    if (checked.ok && !checked.unchanged && checked.file.empty()) {
      // A success that names no file cannot be stored: retry it like an internal error.
      spdlog::warn("qm: result {} from link {} says ok but names no file", o.id, link);
      checked.ok = false;
      checked.code = ErrorCode::kInternal;
      checked.message = "result without a file";
    }
    Status s = handleResult(f, checked);
    if (!s.isOk()) storeFailed(s);
  }
  updateOverload();
  pump();
}

Status QueueManager::handleResult(const InFlight& f, const FetchOutcome& o) {
  const WallTime now = deps_.clock->now();
  const ListId list{f.pset, kSlotNow};
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(f.key));
  const bool has_file = o.ok && !o.unchanged && !o.file.empty();
  Scheduler::After after = Scheduler::After::kReady;
  if (has_file) {
    // The BOT-M handed this name out again, so it freed it: an FSMDB delete still
    // waiting for it (its first execution's answer was lost) is stale and would
    // unlink the new content.
    t.removeDelete(o.machine, o.file);
  }

  if (o.ok) {
    if (!row || row->op == QueueOp::kNothing) {
      // Removed during the fetch (design §6 "Some Notes"): drop what came back.
      if (has_file) {
        DeleteRequest d{o.machine, o.file, now};
        t.putDelete(d);
        t.effects.deletes.push_back(d);
      }
      if (row) {
        LCC_ASSIGN_OR_RETURN(bool removed, removeContent(t, f.key, now));
        (void)removed;
        LCC_RETURN_IF_ERROR(dropRow(t, f.key, list));
      }
    } else {
      const UrlNotice& n = f.notice;
      LCC_ASSIGN_OR_RETURN(auto old, t.content(f.key));
      if (o.unchanged) {
        ++stats_.unchanged;
        if (!old || old->deleted) {
          // 304 with nothing stored (a removal raced the fetch): fetch again unconditionally.
          row->bad_count = static_cast<std::uint16_t>(row->bad_count + 1);
          t.putEntry(*row);
          LCC_RETURN_IF_ERROR(finishTxn(t));
          (void)sched_.finished(f.pid, 0);
          return Status::ok();
        }
        {
          ContentRecord r = *old;
          // 304: the content did not change; only a change a content user can see
          // (view tag, browse or fetch URL) takes a new seq.
          if (!visibleToContentUsersEqual(r, n)) r.seq = t.nextSeq();
          r.refreshed = now;
          r.view_tag = n.view_tag;
          r.browse = n.browse;
          r.fetch = n.fetch;
          r.declared_mtime = n.mtime;
          r.declared_size = n.size;
          r.declared_md5 = n.md5;
          t.putContent(r);
        }
      } else {
        ++stats_.fetched;
        ContentRecord r;
        r.key = n.key;
        r.view_tag = n.view_tag;
        r.browse = n.browse;
        r.fetch = n.fetch;
        r.mtime = o.mtime ? o.mtime : n.mtime;
        r.size = o.size;
        r.md5 = o.md5;
        r.machine = o.machine;
        r.filename = o.file;
        r.stored = now;
        r.refreshed = now;
        r.declared_mtime = n.mtime;
        r.declared_size = n.size;
        r.declared_md5 = n.md5;
        LCC_RETURN_IF_ERROR(storeContent(t, std::move(r)));
      }
      // Catalog first, queue second (rule 2): both in this txn, applied in that order.
      if (row->notice == f.notice) {
        LCC_RETURN_IF_ERROR(dropRow(t, f.key, list));
      } else {
        // A newer notice arrived during the fetch: the row stays and is fetched again.
        row->bad_count = 0;
        t.putEntry(*row);
      }
    }
    LCC_RETURN_IF_ERROR(finishTxn(t));
    after = sched_.finished(f.pid, o.unchanged ? 0 : o.size);
  } else {
    ++stats_.errors;
    if (deps_.metrics) {
      deps_.metrics->counter("lcc_qm_fetch_errors_total", "failed fetches, by error code",
                             {{"code", std::to_string(static_cast<int>(o.code))}}).inc();
    }
    const bool provider_wide = isProviderWideFetchError(o.code) || o.retry_after.has_value();
    if (!row || row->op == QueueOp::kNothing) {
      if (row) {
        LCC_ASSIGN_OR_RETURN(bool removed, removeContent(t, f.key, now));
        (void)removed;
        LCC_RETURN_IF_ERROR(dropRow(t, f.key, list));
      }
      LCC_RETURN_IF_ERROR(finishTxn(t));
      after = sched_.finished(f.pid, 0);
    } else if (!(row->notice == f.notice)) {
      // A newer notice arrived during the fetch: fetch that one, from a clean slate.
      row->bad_count = 0;
      t.putEntry(*row);
      LCC_RETURN_IF_ERROR(finishTxn(t));
      after = sched_.finished(f.pid, 0);
    } else if (!isPermanent(o.code) && row->bad_count < options_.max_retries) {
      ++stats_.retries;
      const auto bad = static_cast<std::uint16_t>(row->bad_count + 1);
      if (provider_wide) {
        // The whole set waits; the row keeps its place.
        row->bad_count = bad;
        t.putEntry(*row);
        LCC_RETURN_IF_ERROR(finishTxn(t));
        (void)sched_.finished(f.pid, 0);
        Millis d = o.retry_after ? Millis(*o.retry_after * 1000) : options_.provider_error_delay;
        if (d.count() <= 0) d = Millis(1);
        after = sched_.delay(f.pid, d);
        if (after == Scheduler::After::kBeyondHorizon) LCC_RETURN_IF_ERROR(moveProviderToSlot(f.pid, d));
        return Status::ok();
      }
      // To the end of its set, marked bad; tried again after qm.retry_delay.
      LCC_RETURN_IF_ERROR(moveToTail(t, f.key, list, bad));
      LCC_RETURN_IF_ERROR(finishTxn(t));
      sched_.setRetryAt(f.pid, deps_.clock->monoNow() + options_.retry_delay);
      after = sched_.finished(f.pid, 0);
    } else {
      // Final: into the PIDB error list, and the URL's content goes (a removal).
      recordError(f.pid, row->notice, o);
      LCC_ASSIGN_OR_RETURN(bool removed, removeContent(t, f.key, now));
      (void)removed;
      LCC_RETURN_IF_ERROR(dropRow(t, f.key, list));
      LCC_RETURN_IF_ERROR(finishTxn(t));
      after = sched_.finished(f.pid, 0);
    }
  }
  if (after == Scheduler::After::kBeyondHorizon) {
    // Over its bandwidth by more than the wheel holds: the sets wait for a time slot.
    LCC_RETURN_IF_ERROR(moveProviderToSlot(f.pid, sched_.lastBeyond(f.pid)));
  }
  return Status::ok();
}

void QueueManager::recordError(ProviderId pid, const UrlNotice& n, const FetchOutcome& o) {
  if (!deps_.providers) return;
  FetchErrorEntry err;
  err.notice = n;
  err.code = o.code;
  err.http_status = o.http;
  err.message = o.message.empty() ? std::string(errorCodeMessage(o.code)) : o.message;
  err.when = deps_.clock->now();
  const std::size_t keep = options_.max_errors_kept;
  Status s = deps_.providers->modify(
      pid,
      [&](ProviderRecord& r) {
        r.error_total += 1;
        if (r.errors.size() < keep) r.errors.push_back(err);
        return Status::ok();
      },
      false);
  if (!s.isOk() && !s.isNotFound()) spdlog::warn("qm: recording a fetch error of provider {}: {}", pid, s.toString());
}

// ---------------------------------------------------------------------------
// Delete manager

void QueueManager::pumpDeletes() {
  if (!deps_.botm || !failed_.isOk()) return;
  for (auto& [id, l] : links_) {
    if (l.deletes_out >= options_.delete_window) continue;
    for (const auto& m : l.machines) {
      if (machines_blocked_.count(m)) continue;
      std::vector<DeleteRequest> todo;
      std::size_t room = options_.delete_window - l.deletes_out;
      Status s = deps_.queue->scanDeletes(m, [&](const DeleteRequest& d) {
        if (!deletes_out_keys_.count({d.machine, d.filename})) todo.push_back(d);
        return todo.size() < room;
      });
      if (!s.isOk()) {
        storeFailed(s);
        return;
      }
      for (const auto& d : todo) {
        std::uint64_t did = next_delete_id_++;
        deletes_out_[did] = OutDelete{id, d.machine, d.filename};
        deletes_out_keys_.insert({d.machine, d.filename});
        l.deletes_out += 1;
        ++stats_.deletes_sent;
        deps_.botm->sendDelete(id, did, d.machine, d.filename);
      }
      if (l.deletes_out >= options_.delete_window) break;
    }
  }
}

void QueueManager::onDeleted(LinkId link, std::uint64_t id, bool ok, const std::string& reason) {
  auto it = deletes_out_.find(id);
  if (it == deletes_out_.end()) return;
  OutDelete d = std::move(it->second);
  deletes_out_.erase(it);
  deletes_out_keys_.erase({d.machine, d.file});
  if (auto l = links_.find(link); l != links_.end() && l->second.deletes_out > 0) l->second.deletes_out -= 1;
  if (ok) {
    ++stats_.deletes_done;
    QueueBatch b;
    b.removeDelete(d.machine, d.file);
    Status s = deps_.queue->apply(b);
    if (!s.isOk()) {
      storeFailed(s.withContext("queue store"));
      return;
    }
  } else {
    // Kept in the FSMDB; sent again when a link lists the machine (again).
    machines_blocked_.insert(d.machine);
    if (reason != "unknown-machine") spdlog::warn("qm: delete of {}:{} failed: {}", d.machine, d.file, reason);
  }
  pumpDeletes();
}

// ---------------------------------------------------------------------------
// Periodic work

void QueueManager::tick() {
  auto released = sched_.tick();
  if (!released.empty()) pump();
}

Status QueueManager::mergeSlots() {
  if (!failed_.isOk()) return failed_;
  const WallTime now = deps_.clock->now();
  LCC_ASSIGN_OR_RETURN(auto last_s, deps_.queue->getMeta(kMetaLastMerge));
  auto last = parseU64(last_s);
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
    if (t.pendingOps() >= options_.apply_chunk_ops) LCC_RETURN_IF_ERROR(finishTxn(t));
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
        false);
    if (!s.isOk() && !s.isNotFound()) spdlog::warn("qm: quota use of provider {}: {}", pid, s.toString());
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
  std::vector<ProviderId> ids;
  LCC_RETURN_IF_ERROR(deps_.providers->scan([&](const ProviderRecord& r) {
    ids.push_back(r.id);
    return true;
  }));
  for (ProviderId pid : ids) {
    std::vector<std::string> expire, purge;
    bool old = false;
    LCC_RETURN_IF_ERROR(deps_.content->scanProvider(pid, [&](const ContentRecord& r) {
      if (r.deleted) {
        if (now - r.stored >= options_.tombstone_keep) purge.push_back(encodeUrlKey(r.key));
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
      if (!s.isOk() && !s.isNotFound()) spdlog::warn("qm: ageing provider {}: {}", pid, s.toString());
    }
    if (!expire.empty() || !purge.empty()) {
      spdlog::info("qm: ageing provider {}: {} expired, {} tombstones purged", pid, expire.size(), purge.size());
    }
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Status

nlohmann::json QueueManager::status() const {
  nlohmann::json j;
  j["queued_urls"] = queued_total_;
  j["providers_queued"] = queued_.size();
  j["providers_scheduled"] = sched_.providerCount();
  j["providers_eligible"] = sched_.eligibleCount();
  j["providers_delayed"] = sched_.delayedCount();
  j["ready_sets"] = sched_.readySetCount();
  j["in_flight"] = inflight_.size();
  j["capacity"] = sched_.capacity();
  j["in_flight_limit"] = sched_.limit();
  j["botm_links"] = links_.size();
  j["deletes_out"] = deletes_out_.size();
  j["overloaded"] = overloaded_;
  j["cache_crash"] = cache_crash_;
  j["failed"] = !failed_.isOk();
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
  j["deletes_sent"] = stats_.deletes_sent;
  j["deletes_done"] = stats_.deletes_done;
  j["checkpoints"] = stats_.checkpoints;
  j["journal_syncs"] = stats_.journal_syncs;
  return j;
}

}  // namespace lcc::qm
