// queue_manager_store_busy.cc — a store that answers Busy (a lost connection, a
// PostgreSQL failover, no descriptor): the work it refused is kept and done again, in
// order, never dropped and never a cache-crash (core/qm/README.md, "Durability" 7).
// - An acked set whose apply came back Busy waits in apply_backlog_ (the sets acked
//   after it queue behind it); a result whose write came back Busy waits in
//   held_results_ (its provider stays in flight until it is written).
// - retryStore() runs on the Clock after kStoreRetry, doubling to qm.store_retry_max:
//   the backlog, then the held results, then (nothing held) one meta read as a probe.
// - While busy, a new set is answered 130 ("try later", decideIntake()).
// The intake journal keeps every acked set until its apply commits: applied_pos_ only
// moves when a group commits with its metas, so a checkpoint never trims past a set of
// the backlog.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace lcc::qm {

void QueueManager::noteStoreBusy(const Status& why) {
  if (!store_busy_) {
    store_busy_ = true;
    store_busy_since_ = deps_.clock->now();
    store_retry_delay_ = kStoreRetry;
    ++store_busy_episodes_;
    spdlog::warn("qm: store busy, new sets get 130 (try later) and its work is kept: {}", why.toString());
  }
  armStoreRetry();
}

void QueueManager::armStoreRetry() {
  if (store_retry_timer_ != 0 || store_retrying_ || !failed_.isOk()) return;
  std::weak_ptr<bool> alive = alive_;
  store_retry_timer_ = deps_.clock->schedule(store_retry_delay_, [this, alive] {
    auto a = alive.lock();
    if (a && *a) post([this] { retryStore(); });
  });
}

void QueueManager::applyOrDefer(std::deque<Pending>& batch) {
  if (!apply_backlog_.empty()) {
    // Order of applies: what was acked after a Busy batch waits behind it.
    for (auto& p : batch) {
      if (p.kind == Pending::Kind::kApply) apply_backlog_.push_back(std::move(p));
    }
    return;
  }
  Status s = applyBatch(batch);
  if (s.isBusy()) deferApply(batch, s);
}

// What of `batch` is not applied goes to the front of the backlog, in order; a
// streamed set's kBegin is unapplied again (replay_from stays below it).
void QueueManager::deferApply(std::deque<Pending>& batch, const Status& why) {
  std::deque<Pending> keep;
  for (auto& p : batch) {
    if (p.kind != Pending::Kind::kApply || p.applied) continue;
    if (p.begin != 0) unapplied_begins_.insert(p.begin);
    p.deferred = true;
    keep.push_back(std::move(p));
  }
  for (auto it = keep.rbegin(); it != keep.rend(); ++it) apply_backlog_.push_front(std::move(*it));
  noteStoreBusy(why);
}

void QueueManager::holdResult(const InFlight& f, const FetchResult& o, bool counted, const Status& why) {
  inflight_keys_.insert(f.key);  // not sent again while its result waits
  held_results_.push_back(HeldResult{f, o, counted});
  noteStoreBusy(why);
}

Status QueueManager::retryBacklog() {
  if (!apply_backlog_.empty()) {
    std::deque<Pending> batch;
    batch.swap(apply_backlog_);
    Status s = applyBatch(batch);
    if (s.isBusy()) deferApply(batch, s);
    if (!s.isOk()) return s;  // anything but Busy was routed (the QM failed)
  }
  while (!held_results_.empty()) {
    HeldResult& h = held_results_.front();
    Status s = handleResult(h.f, h.o, h.counted);
    if (!s.isOk() && !s.isBusy()) routeStoreError(s);
    if (!s.isOk()) return s;  // Busy: it stays first
    inflight_keys_.erase(held_results_.front().f.key);
    held_results_.pop_front();
  }
  return Status::ok();
}

void QueueManager::retryStore() {
  store_retry_timer_ = 0;
  if (!failed_.isOk() || !store_busy_) return;
  store_retrying_ = true;
  const bool held = !apply_backlog_.empty() || !held_results_.empty();
  Status s = retryBacklog();
  if (s.isOk() && !held) {
    // Nothing waited (a periodic read was Busy): one small read says whether it answers.
    auto m = deps_.queue->getMeta(kMetaNextPSet);
    s = m.status();
    if (!s.isOk() && !s.isBusy()) storeFailed(s.withContext("queue store"));
  }
  store_retrying_ = false;
  if (!failed_.isOk()) return;  // a real error: routed, the QM failed
  if (!s.isOk()) {
    store_retry_delay_ = std::min(store_retry_delay_ * 2, std::max(kStoreRetry, options_.store_retry_max));
    return armStoreRetry();
  }
  spdlog::info("qm: store answers again after {} ms; the work it refused is done",
               (deps_.clock->now() - store_busy_since_).count());
  store_busy_ = false;
  flushAcks();  // qm.ack_after_store: the sets applied now are answered
  updateOverload();
  pump();
}

nlohmann::json QueueManager::storeBusyStatus() const {
  nlohmann::json j;
  j["busy"] = store_busy_;
  if (store_busy_) j["since"] = toUnixMillis(store_busy_since_);
  j["backlog_sets"] = apply_backlog_.size();
  j["held_results"] = held_results_.size();
  j["retry_ms"] = store_busy_ ? store_retry_delay_.count() : 0;
  j["episodes"] = store_busy_episodes_;
  return j;
}

}  // namespace lcc::qm
