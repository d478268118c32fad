// queue_manager_dispatch.cc — BOT-M links and dispatch: capacity, the fetch slot to the
// best eligible provider, the head row of its oldest ready set out on the emptiest link.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

namespace lcc::qm {

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
  // At start (the first link of each machine since open()): files a crash left behind.
  if (opened_ && !machines_swept_.count(machine)) sweepLink(link);
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
  if (sweep_.waiting.erase(link) > 0) ++sweep_.links_lost;
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
    // false: no link has room, or a store failed (routed, the QM is failed): stop
    // either way; trying the same head again would only repeat the error.
    if (!dispatchOne(*pid)) break;
  }
}

bool QueueManager::dispatchOne(ProviderId pid) {
  const WallTime now = deps_.clock->now();
  const TimeSlot cur_slot = slots_.slotAt(now);
  for (PSetId pset : sched_.readySets(pid)) {
    Walk w = Walk::kRestart;
    for (int again = 0; again < 1000 && w == Walk::kRestart; ++again) w = walkReadySet(pid, pset, now, cur_slot);
    if (w == Walk::kDone) return true;
    if (w == Walk::kStop) return false;
  }
  sched_.blocked(pid);
  return true;
}

QueueManager::Walk QueueManager::walkReadySet(ProviderId pid, PSetId pset, WallTime now, TimeSlot cur_slot) {
  auto rec = deps_.queue->getPSet(pset, kSlotNow);
  if (!rec.isOk()) {
    storeFailed(rec.status());
    return Walk::kStop;
  }
  if (!rec.value()) {
    sched_.removeReadySet(pid, pset);
    return Walk::kNext;
  }
  std::string cur = rec.value()->first;
  while (!cur.empty()) {
    auto row = deps_.queue->getEntry(cur);
    if (!row.isOk()) {
      storeFailed(row.status());
      return Walk::kStop;
    }
    if (!row.value()) {
      spdlog::warn("qm: QPSDB list ({}, -1) of provider {} points at a missing row; rebuilding", pset, pid);
      Status s = rebuildPSets();
      if (!s.isOk()) storeFailed(s);
      return Walk::kDone;
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
      routeStoreError(s);
      return s.isOk() ? Walk::kRestart : Walk::kStop;
    }
    auto w = slots_.parse(e.notice.tod);
    if (!slots_.inWindow(w, cur_slot)) {
      // Its window closed: the row waits in (pset, next open slot).
      StoreTxn t(*deps_.queue, *deps_.content, seq_);
      Status s = moveToSlot(t, cur, list, slots_.nextOpen(w, cur_slot));
      if (s.isOk()) s = finishTxn(t);
      routeStoreError(s);
      return s.isOk() ? Walk::kRestart : Walk::kStop;
    }
    if (e.bad_count > 0 && holdForRetry(pid)) return failed_.isOk() ? Walk::kDone : Walk::kStop;
    auto link = pickLink();
    if (!link) return Walk::kStop;
    return sendFetch(pid, pset, *link, cur, e.notice) ? Walk::kDone : Walk::kStop;
  }
  return Walk::kNext;  // every row of this set is in flight: try the next set
}

bool QueueManager::holdForRetry(ProviderId pid) {
  auto ra = sched_.retryAt(pid);
  auto mono = deps_.clock->monoNow();
  if (!ra || *ra <= mono) return false;
  auto d = std::chrono::duration_cast<Millis>(*ra - mono) + Millis(1);
  if (sched_.delay(pid, d) == Scheduler::After::kBeyondHorizon) routeStoreError(moveProviderToSlot(pid, d));
  return true;
}

bool QueueManager::sendFetch(ProviderId pid, PSetId pset, LinkId link, const std::string& key, const UrlNotice& n) {
  FetchRequest order;
  order.id = next_fetch_id_++;
  order.url = n.fetchUrl();
  order.expected_mime = n.key.mime;
  order.max_size = options_.max_fetch_size;
  order.redirects = options_.redirects;
  if (order.redirects == RedirectPolicy::kPrefix) order.redirect_prefixes = providerInfo(pid).prefixes;
  auto content = deps_.content->get(key);
  if (!content.isOk()) {
    storeFailed(content.status().withContext("content store"));
    return false;
  }
  if (content.value() && !content.value()->deleted && content.value()->mtime &&
      !declaresOtherContent(n, *content.value())) {
    // Conditional fetch only when the CP did not tell us the bytes changed: a
    // server's If-Modified-Since has one-second granularity and would answer 304
    // for a page rewritten within the same second.
    order.if_modified_since = content.value()->mtime;
  }
  inflight_[order.id] = InFlight{pid, key, pset, link, n};
  inflight_keys_.insert(key);
  links_[link].in_flight += 1;
  sched_.dispatched(pid);
  ++stats_.dispatched;
  deps_.botm->sendFetch(link, order);
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

}  // namespace lcc::qm
