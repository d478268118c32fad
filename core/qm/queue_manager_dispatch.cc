// queue_manager_dispatch.cc — BOT-M link events and dispatch: capacity, the fetch slot to
// the best eligible provider, the head row of its oldest ready set out on the emptiest
// link (BotmLinks::pick(), botm_links.h).
#include "qm/move_copy.h"
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include "common/invariant.h"

namespace lcc::qm {

void QueueManager::linkUp(LinkId link, const std::string& machine, std::uint64_t capacity) {
  links_.up(link, machine, capacity);
  sched_.setCapacity(links_.totalCapacity());
  deletes_.linkUp();
  pumpDeletes();
  pump();
  // At start (the first link of each machine since open()): files a crash left behind.
  if (opened_ && !sweep_.asked(machine)) sweepLink(link);
}

void QueueManager::linkCapacity(LinkId link, std::uint64_t capacity) {
  if (!links_.setCapacity(link, capacity)) return;
  sched_.setCapacity(links_.totalCapacity());
  pump();
}

void QueueManager::linkMachines(LinkId link, const std::vector<std::string>& machines) {
  if (!links_.setMachines(link, machines)) return;
  deletes_.machinesListed(machines);
  pumpDeletes();
}

void QueueManager::linkDown(LinkId link) {
  // Every fetch outstanding on it is lost; the rows are still queued and go out again,
  // once the lease of each has run out: its BOT-M may still be fetching it (cut off, or
  // its end of the link closed while its robots run).
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    if (it->second.link == link) {
      if (!holdLost(it->second)) {
        sched_.lost(it->second.pid);
        sched_.hostDone(it->second.host);
        inflight_keys_.erase(it->second.key);
      }
      it = inflight_.erase(it);
    } else {
      ++it;
    }
  }
  deletes_.linkDown(link);  // its deletes out go again from the FSMDB
  link_lease_end_.erase(link);
  links_.down(link);
  sweep_.linkDown(link);
  sched_.setCapacity(links_.totalCapacity());
  pump();
}

void QueueManager::pump() {
  // A Busy store: nothing is sent until it answers (retryStore() pumps then).
  if (!opened_ || !deps_.botm || !failed_.isOk() || store_busy_) return;
  // No fetch lease to give now (issue 27 §3): waiting out the previous QM's, or our
  // proof is too old (renewLeases() pumps after the next one).
  if (!leaseNow()) return wakeAfterHold();
  // Every turn sends a fetch (at most the in-flight limit of them) or takes the picked
  // provider out of the eligible ones (blocked, delayed, its sets moved to a slot); a
  // QPSDB rebuild (a list pointing at a missing row) may put each back once.
  const std::uint64_t bound = sched_.limit() + 2 * sched_.providerCount() + 2;
  if (Status s = readAhead(); !s.isOk()) {
    reads_ahead_.clear();
    return storeFailed(s);
  }
  for (std::uint64_t turn = 0;; ++turn) {
    if (!LCC_INVARIANT(turn <= bound, "qm: pump() ends within the in-flight limit plus two turns per provider")) break;
    auto pid = sched_.pick();
    if (!pid) break;
    if (!links_.pick()) break;
    // false: no link has room, or a store failed (routed, the QM is failed): stop
    // either way; trying the same head again would only repeat the error.
    if (!dispatchOne(*pid)) break;
  }
  reads_ahead_.clear();
}

Status QueueManager::readAhead() {
  reads_ahead_.clear();
  const std::uint64_t room = sched_.limit() > sched_.inFlight() ? sched_.limit() - sched_.inFlight() : 0;
  const std::vector<ProviderId> pids = sched_.candidates(static_cast<std::size_t>(room));
  // One pick: its own reads are as many. A local store: reading ahead only adds work.
  if (pids.size() < 2 || !deps_.queue->openInfo().remote) return Status::ok();
  std::vector<std::pair<PSetId, TimeSlot>> lists;
  for (ProviderId pid : pids) {
    const std::vector<PSetId> sets = sched_.readySets(pid);
    if (!sets.empty()) lists.emplace_back(sets.front(), kSlotNow);
  }
  LCC_ASSIGN_OR_RETURN(auto psets, deps_.queue->getPSets(lists));
  std::vector<std::string> heads;
  for (std::size_t i = 0; i < lists.size() && i < psets.size(); ++i) {
    if (psets[i] && !psets[i]->first.empty()) heads.push_back(psets[i]->first);
    reads_ahead_.psets.emplace(lists[i].first, std::move(psets[i]));
  }
  if (heads.empty()) return Status::ok();
  LCC_ASSIGN_OR_RETURN(auto rows, deps_.queue->getEntries(heads));
  LCC_ASSIGN_OR_RETURN(auto records, deps_.content->getMany(heads));
  for (std::size_t i = 0; i < heads.size(); ++i) {
    if (i < rows.size()) reads_ahead_.entries.emplace(heads[i], std::move(rows[i]));
    if (i < records.size()) reads_ahead_.records.emplace(heads[i], std::move(records[i]));
  }
  return Status::ok();
}

Result<std::optional<PSetRecord>> QueueManager::headPSet(PSetId pset) {
  if (auto it = reads_ahead_.psets.find(pset); it != reads_ahead_.psets.end()) return it->second;
  return deps_.queue->getPSet(pset, kSlotNow);
}

Result<std::optional<QueueEntry>> QueueManager::headEntry(const std::string& key) {
  if (auto it = reads_ahead_.entries.find(key); it != reads_ahead_.entries.end()) return it->second;
  return deps_.queue->getEntry(key);
}

Result<std::optional<ContentRecord>> QueueManager::headRecord(const std::string& key) {
  if (auto it = reads_ahead_.records.find(key); it != reads_ahead_.records.end()) return it->second;
  return deps_.content->get(key);
}

bool QueueManager::dispatchOne(ProviderId pid) {
  const WallTime now = deps_.clock->now();
  const TimeSlot cur_slot = slots_.slotAt(now);
  for (PSetId pset : sched_.readySets(pid)) {
    // A restart follows a row leaving the list (dropped, or moved to its slot): at
    // most one per row queued when the walk began.
    const std::uint64_t max_restarts = queued_total_;
    Walk w = walkReadySet(pid, pset, now, cur_slot);
    for (std::uint64_t again = 1; w == Walk::kRestart; ++again) {
      if (!LCC_INVARIANT(again <= max_restarts, "qm: a ready set's walk restarts at most once per queued row")) break;
      w = walkReadySet(pid, pset, now, cur_slot);
    }
    if (w == Walk::kDone) return true;
    if (w == Walk::kStop) return false;
  }
  sched_.blocked(pid);
  return true;
}

QueueManager::Walk QueueManager::walkReadySet(ProviderId pid, PSetId pset, WallTime now, TimeSlot cur_slot) {
  auto rec = headPSet(pset);
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
    auto row = headEntry(cur);
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
    std::string host = politenessHost(e.notice.fetchUrl());
    if (!sched_.hostHasRoom(host)) {
      // qm.host_inflight fetches are out on its host (maybe for other providers): the
      // provider waits for one of them to end, its row keeps its place.
      sched_.waitForHost(pid, host);
      return Walk::kDone;
    }
    auto link = links_.pick();
    if (!link) return Walk::kStop;
    return sendFetch(pid, pset, *link, cur, e.notice, host) ? Walk::kDone : Walk::kStop;
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

bool QueueManager::sendFetch(ProviderId pid, PSetId pset, LinkId link, const std::string& key, const UrlNotice& n,
                             const std::string& host) {
  FetchRequest order;
  order.id = next_fetch_id_++;
  order.url = n.fetchUrl();
  // A copy (move_copy.h) is answered as bytes; the QM checks it on its result.
  if (!parseCopyFetch(n.fetch)) order.expected_mime = n.key.mime;
  order.max_size = options_.max_fetch_size;
  order.redirects = options_.redirects;
  order.lease = leaseNow().value_or(Millis(0));  // pump() checked there is one
  if (order.redirects == RedirectPolicy::kPrefix) {
    auto info = readProviderInfo(pid);
    if (!info.isOk()) {
      storeFailed(info.status());  // not sent with no prefixes
      return false;
    }
    order.redirect_prefixes = info->prefixes;
  }
  auto content = headRecord(key);
  if (!content.isOk()) {
    storeFailed(content.status().withContext("content store"));
    return false;
  }
  if (content.value() && !content.value()->deleted && !declaresOtherContent(n, *content.value())) {
    // Conditional fetch only when the CP did not tell us the bytes changed: a
    // server's If-Modified-Since has one-second granularity and would answer 304
    // for a page rewritten within the same second (and a weak ETag may not change).
    order.if_modified_since = content.value()->mtime;
    order.if_none_match = content.value()->etag;
  }
  inflight_[order.id] = InFlight{pid, key, pset, link, n, host};
  inflight_keys_.insert(key);
  links_.fetchSent(link);
  leaseGiven(link, order.lease);
  sched_.dispatched(pid, host);
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
  const std::vector<PSetId> psets = sched_.readySets(pid);
  Status s;
  for (PSetId pset : psets) {
    s = movePSet(t, pset, kSlotNow, target).status();
    if (!s.isOk()) break;
  }
  if (s.isOk()) s = finishTxn(t);
  if (!s.isOk()) return s;  // not moved (a Busy store): the sets stay ready where they are
  for (PSetId pset : psets) sched_.removeReadySet(pid, pset);
  spdlog::info("qm: provider {} delayed past the bandwidth horizon; its sets wait for slot {}", pid, target);
  return Status::ok();
}

}  // namespace lcc::qm
