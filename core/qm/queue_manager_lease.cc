// queue_manager_lease.cc — the fetch leases at work (issue 27 §3; the policy is
// fetch_lease.h, the rules docs/reliability.md, "Fetch leases"): every fetch carries a
// lease, renewed on every link with fetches out every third of it; on a shared store
// each renewal is a write checked against the fencing epoch (the proof), and a QM that
// opens the store waits out the lease its predecessor recorded before it hands
// anything out.
#include <spdlog/spdlog.h>

#include "qm/queue_manager.h"

namespace lcc::qm {

Status QueueManager::openLeases() {
  const bool shared = lease_shared_for_test_ || deps_.queue->openInfo().remote;
  lease_ = FetchLease(options_.fetch_lease, shared);
  if (!shared) return Status::ok();  // one lccd holds a local store: no wait, no write
  LCC_ASSIGN_OR_RETURN(auto recorded, deps_.queue->getMeta(kMetaFetchLease));
  const MonoTime now = deps_.clock->monoNow();
  std::optional<Millis> previous;
  if (auto ms = parseMetaU64(recorded)) previous = Millis(static_cast<std::int64_t>(*ms));
  lease_.opened(now, previous);
  if (auto until = lease_.heldUntil(now)) {
    ++stats_.lease_waits;
    spdlog::warn("qm: a QM gave fetch leases of {} ms on this store; handing nothing out for {} ms (its robots may "
                 "still fetch until then)",
                 previous->count(), std::chrono::duration_cast<Millis>(*until - now).count());
  }
  // Our own lease, recorded for the QM after us; the write is the first proof.
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  t.putMeta(kMetaFetchLease, std::to_string(options_.fetch_lease.count()));
  LCC_RETURN_IF_ERROR(finishTxn(t));
  lease_.proven(now);
  return Status::ok();
}

std::optional<Millis> QueueManager::leaseNow() { return lease_.grant(deps_.clock->monoNow()); }

Status QueueManager::renewLeases() {
  if (!opened_ || !failed_.isOk() || store_busy_) return Status::ok();
  if (lease_.shared()) {
    const MonoTime began = deps_.clock->monoNow();
    StoreTxn t(*deps_.queue, *deps_.content, seq_);
    t.putMeta(kMetaFetchLease, std::to_string(options_.fetch_lease.count()));
    LCC_RETURN_IF_ERROR(finishTxn(t));  // fenced: storeFenced() stops this QM
    lease_.proven(began);
  }
  const std::optional<Millis> lease = leaseNow();
  if (lease && deps_.botm) {
    for (const auto& [link, l] : links_.all()) {
      if (l.in_flight == 0) continue;
      deps_.botm->sendLease(link, *lease);
      leaseGiven(link, *lease);
      ++stats_.lease_renewals;
    }
  }
  pump();  // dispatch may have waited for this proof
  return Status::ok();
}

void QueueManager::armOnce(TimerId* id, Millis in, std::function<void()> fn) {
  if (*id != 0) deps_.clock->cancel(*id);
  std::weak_ptr<bool> alive = alive_;
  *id = deps_.clock->schedule(std::max(Millis(0), in), [this, alive, id, fn = std::move(fn)] {
    auto a = alive.lock();
    if (!a || !*a) return;
    post([this, alive, id, fn] {
      auto a2 = alive.lock();
      if (!a2 || !*a2) return;
      *id = 0;
      fn();
    });
  });
}

void QueueManager::wakeAfterHold() {
  const MonoTime now = deps_.clock->monoNow();
  const auto until = lease_.heldUntil(now);
  if (!until || lease_wake_timer_ != 0) return;  // a stale proof: the renewal timer pumps
  armOnce(&lease_wake_timer_, std::chrono::ceil<Millis>(*until - now), [this] {
    spdlog::info("qm: the previous QM's fetch leases have run out; handing fetches out");
    pump();
  });
}

void QueueManager::leaseGiven(LinkId link, Millis lease) {
  if (lease.count() <= 0) return;
  const MonoTime end = deps_.clock->monoNow() + lease;
  auto [it, added] = link_lease_end_.emplace(link, end);
  if (!added && it->second < end) it->second = end;
}

bool QueueManager::holdLost(const InFlight& f) {
  auto it = link_lease_end_.find(f.link);
  const MonoTime now = deps_.clock->monoNow();
  if (it == link_lease_end_.end() || it->second + FetchLease::kMargin <= now) return false;
  lost_held_.push_back(LostFetch{f.pid, f.key, f.host, it->second + FetchLease::kMargin});
  armLostTimer(now);
  return true;
}

void QueueManager::armLostTimer(MonoTime now) {
  if (lost_held_.empty()) return;
  MonoTime first = lost_held_.front().until;
  for (const auto& l : lost_held_) first = std::min(first, l.until);
  armOnce(&lost_timer_, std::chrono::ceil<Millis>(first - now), [this] { releaseLost(); });
}

void QueueManager::releaseLost() {
  const MonoTime now = deps_.clock->monoNow();
  std::vector<LostFetch> keep;
  for (auto& l : lost_held_) {
    if (l.until > now) {
      keep.push_back(std::move(l));
      continue;
    }
    sched_.lost(l.pid);
    sched_.hostDone(l.host);
    inflight_keys_.erase(l.key);
  }
  lost_held_.swap(keep);
  armLostTimer(now);
  pump();
}

nlohmann::json QueueManager::leaseStatus() const {
  nlohmann::json j;
  j["lease_ms"] = lease_.lease().count();
  j["shared_store"] = lease_.shared();
  const MonoTime now = deps_.clock->monoNow();
  const auto until = lease_.heldUntil(now);
  j["waiting_ms"] = until ? std::chrono::duration_cast<Millis>(*until - now).count() : 0;
  j["renewals"] = stats_.lease_renewals;
  j["lost_held"] = lost_held_.size();  // fetches of lost links kept in flight until their lease ran out
  return j;
}

}  // namespace lcc::qm
