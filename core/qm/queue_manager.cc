// queue_manager.cc — the QM's life cycle: open (rule 3 checks, replay, tables,
// the slots that opened while it was down), close, and the periodic timers. The other
// concerns each have their own queue_manager_<concern>.cc (see README.md).
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/content_meta.h"

namespace lcc::qm {

QueueManager::QueueManager(QmDeps deps, QmOptions options)
    : deps_(std::move(deps)),
      options_(options),
      slots_(options.slots, options.slot_period),
      sched_(*deps_.clock, SchedulerOptions{options.provider_inflight, options.botm_overload_pct,
                                            options.bandwidth_tick, options.bandwidth_horizon, options.host_inflight}),
      links_(options.botm_overload_pct),
      deletes_(options.delete_window, DeleteRetryRules{options.delete_retry, options.delete_retry_max}),
      lease_(options.fetch_lease, false),
      alive_(std::make_shared<bool>(true)) {}

QueueManager::~QueueManager() {
  stopTimers();
  *alive_ = false;
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
  applied_pos_ = parseMetaU64(applied).value_or(0);
  LCC_ASSIGN_OR_RETURN(auto applied_end, deps_.queue->getMeta(kMetaAppliedEnd));
  applied_end_ = std::max(applied_pos_, parseMetaU64(applied_end).value_or(0));
  LCC_ASSIGN_OR_RETURN(auto next_pset, deps_.queue->getMeta(kMetaNextPSet));
  next_pset_ = std::max<PSetId>(1, parseMetaU64(next_pset).value_or(1));

  // Tables first (the replay appends to lists the scheduler must know).
  LCC_RETURN_IF_ERROR(loadTables());

  LCC_RETURN_IF_ERROR(replayJournal(crash_why));
  if (!failed_.isOk()) return failed_;
  LCC_RETURN_IF_ERROR(ensureStoreId());
  opened_ = true;
  if (!crash_why.empty()) raiseCacheCrash(crash_why);
  // Slots that opened while the QM was down.
  LCC_RETURN_IF_ERROR(mergeSlots());
  updateOverload();
  // A shared store: wait out the fetch leases of the QM before us, record ours.
  LCC_RETURN_IF_ERROR(openLeases());
  // Suspended and removed providers are held before anything is dispatched.
  refreshProviders();
  pump();
  // The gauges exist from the start, not from the first checkpoint (the status page's
  // charts and STATUS= read them).
  publishMetrics();
  return Status::ok();
}

// lcc.store_id (common/content_meta.h): written once, by the store's writer.
Status QueueManager::ensureStoreId() {
  LCC_ASSIGN_OR_RETURN(auto id, readStoreId(*deps_.content));
  if (id) return Status::ok();
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  t.putContentMeta(kContentMetaStoreId, newStoreId());
  LCC_RETURN_IF_ERROR(finishTxn(t));
  // Durable now, not at the next checkpoint: a crash before it would name the store anew.
  return deps_.content->sync();
}

Status QueueManager::close() {
  stopTimers();
  if (!pending_.empty()) commitPending();
  if (!failed_.isOk()) return failed_;
  return checkpoint();
}

void QueueManager::schedule(Millis every, std::function<Status()> fn, TimerId* id) {
  schedule([every] { return every; }, std::move(fn), id);
}

void QueueManager::schedule(std::function<Millis()> next, std::function<Status()> fn, TimerId* id) {
  std::weak_ptr<bool> alive = alive_;
  auto self = this;
  *id = deps_.clock->schedule(next(), [alive, self, next, fn, id]() {
    auto a = alive.lock();
    if (!a || !*a) return;
    self->post([alive, self, next, fn, id]() {
      auto a2 = alive.lock();
      if (!a2 || !*a2 || !self->timers_on_) return;
      self->routeStoreError(fn());
      if (self->timers_on_) self->schedule(next, fn, id);
    });
  });
}

Millis QueueManager::untilNextMerge() const {
  // The next slot boundary of the wall clock, so a window opens when its slot starts
  // (counted from the epoch, as slotAt() counts); qm.merge_interval is only a ceiling.
  const WallTime now = deps_.clock->now();
  const Millis boundary = slots_.untilSlotStart(now, (slots_.slotAt(now) + 1) % slots_.count());
  return std::min(boundary, options_.merge_interval);
}

void QueueManager::startTimers() {
  if (timers_on_) return;
  timers_on_ = true;
  schedule(options_.bandwidth_tick, [this] { tick(); return Status::ok(); }, &tick_timer_);
  schedule([this] { return untilNextMerge(); }, [this] { return mergeSlots(); }, &merge_timer_);
  schedule(options_.checkpoint_interval, [this] { return checkpoint(); }, &checkpoint_timer_);
  schedule(options_.age_check_interval, [this] { return age(); }, &age_timer_);
  schedule(options_.provider_refresh, [this] { refreshProviders(); return Status::ok(); }, &refresh_timer_);
  schedule(options_.delete_retry, [this] { pumpDeletes(); return Status::ok(); }, &delete_timer_);
  schedule(lease_.renewEvery(), [this] { return renewLeases(); }, &lease_timer_);
}

void QueueManager::stopTimers() {
  if (!timers_on_) return;
  timers_on_ = false;
  for (TimerId* t : {&tick_timer_, &merge_timer_, &checkpoint_timer_, &age_timer_, &commit_timer_, &refresh_timer_, &delete_timer_,
                     &store_retry_timer_, &lease_timer_, &lease_wake_timer_, &lost_timer_}) {
    if (*t) deps_.clock->cancel(*t);
    *t = 0;
  }
}

}  // namespace lcc::qm
