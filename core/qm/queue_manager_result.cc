// queue_manager_result.cc — results: a fetch result is checked, decideResult()
// (result_policy.h) says what it does to the queue, and this file executes that action
// on the stores, the scheduler and the PIDB error list.
#include "qm/move_copy.h"
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include "lcc/support/time_util.h"

namespace lcc::qm {

void QueueManager::onResult(LinkId link, const FetchResult& o) { onResults({{link, o}}); }

void QueueManager::onResults(const std::vector<std::pair<LinkId, FetchResult>>& results) {
  std::vector<HeldResult> group;
  for (const auto& [link, o] : results) {
    auto it = inflight_.find(o.id);
    if (it == inflight_.end()) {
      spdlog::warn("qm: result for unknown fetch id {} from link {}", o.id, link);
      continue;
    }
    InFlight f = std::move(it->second);
    inflight_.erase(it);
    inflight_keys_.erase(f.key);
    links_.fetchEnded(f.link);
    sched_.hostDone(f.host);  // whatever the result does: the host has room again
    if (!failed_.isOk()) continue;
    FetchResult checked = o;
    if (checked.ok() && !checked.unchanged && checked.filename.empty()) {
      // A success that names no file cannot be stored: retry it like an internal error.
      spdlog::warn("qm: result {} from link {} says ok but names no file", o.id, link);
      checked.code = ErrorCode::kInternal;
      checked.message = "result without a file";
    }
    group.push_back(HeldResult{std::move(f), std::move(checked), false});
  }
  if (!group.empty()) writeResults(group);
  updateOverload();
  pump();
}

// Every result of `group` in one StoreTxn: their rows, records and lists read in one
// batch per store, one apply per store (group commit; a store a round trip away pays
// a fixed number of them per group, not per URL). A Busy store holds them all.
void QueueManager::writeResults(std::vector<HeldResult>& group) {
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  std::vector<std::string> keys;
  std::vector<std::pair<PSetId, TimeSlot>> lists;
  for (const auto& h : group) {
    keys.push_back(h.f.key);
    lists.emplace_back(h.f.pset, kSlotNow);
  }
  // A remote store answers them in one round trip each; a local one as cheaply one by one.
  Status s = deps_.queue->openInfo().remote ? t.prefetch(keys) : Status::ok();
  if (s.isOk() && deps_.queue->openInfo().remote) s = t.prefetchPSets(lists);
  std::vector<StagedResult> staged;
  for (std::size_t i = 0; s.isOk() && i < group.size(); ++i) {
    auto st = stageResult(t, group[i].f, group[i].o, group[i].counted);
    s = st.status();
    if (s.isOk()) staged.push_back(std::move(st).value());
  }
  if (s.isOk()) s = finishTxn(t);
  if (s.isBusy()) {
    for (auto& h : group) holdResult(h.f, h.o, h.counted, s);  // written again later, in flight till then
    return;
  }
  if (!s.isOk()) return routeStoreError(s);
  for (std::size_t i = 0; i < group.size(); ++i) routeStoreError(finishResult(group[i].f, group[i].o, staged[i]));
}

namespace {

RowState rowState(const std::optional<QueueEntry>& row, const UrlNotice& fetched) {
  if (!row) return RowState::kGone;
  if (row->op == QueueOp::kNothing) return RowState::kRemoved;
  return row->notice == fetched ? RowState::kCurrent : RowState::kNewer;
}

// The LCC DB record of a stored fetch: what the BOT-M wrote, described by the notice.
ContentRecord fetchedRecord(const UrlNotice& n, const FetchResult& o, WallTime now) {
  ContentRecord r;
  r.key = n.key;
  r.view_tag = n.view_tag;
  r.browse = n.browse;
  r.fetch = storedFetch(n.fetch);
  r.mtime = o.last_modified ? o.last_modified : n.mtime;
  r.size = o.size;
  r.md5 = o.md5;
  r.machine = o.machine;
  r.filename = o.filename;
  r.stored = now;
  r.refreshed = now;
  r.declared_mtime = n.mtime;
  r.declared_size = n.size;
  r.declared_md5 = n.md5;
  r.etag = o.etag;
  return r;
}

// A 304: the content did not change; only a change a content user can see (view
// tag, browse or fetch URL) takes a new seq.
// A 304 that names an ETag replaces the one kept (RFC 9110 §15.4.5: it describes the
// stored response); one without keeps it.
ContentRecord refreshedRecord(StoreTxn& t, ContentRecord r, const UrlNotice& n, const FetchResult& o, WallTime now) {
  if (!visibleToContentUsersEqual(r, n)) r.seq = t.nextSeq();
  if (!o.etag.empty()) r.etag = o.etag;
  r.refreshed = now;
  r.view_tag = n.view_tag;
  r.browse = n.browse;
  r.fetch = storedFetch(n.fetch);
  r.declared_mtime = n.mtime;
  r.declared_size = n.size;
  r.declared_md5 = n.md5;
  return r;
}

}  // namespace

Status QueueManager::handleResult(const InFlight& f, const FetchResult& o, bool& counted) {
  StoreTxn t(*deps_.queue, *deps_.content, seq_);
  LCC_ASSIGN_OR_RETURN(StagedResult st, stageResult(t, f, o, counted));
  LCC_RETURN_IF_ERROR(finishTxn(t));
  return finishResult(f, o, st);
}

Result<QueueManager::StagedResult> QueueManager::stageResult(StoreTxn& t, const InFlight& f, const FetchResult& o,
                                                             bool& counted) {
  const WallTime now = deps_.clock->now();
  StagedResult st;
  LCC_ASSIGN_OR_RETURN(st.row, t.entry(f.key));
  const auto& row = st.row;
  ResultEvent ev;
  ev.ok = o.ok();
  ev.unchanged = o.unchanged;
  ev.has_file = o.ok() && !o.unchanged && !o.filename.empty();
  ev.code = o.code;
  ev.retry_after = o.retry_after;
  ev.size = o.size;
  ev.row = rowState(row, f.notice);
  ev.gone_removes = f.notice.op == UrlOp::kCheck;
  ev.bad_count = row ? row->bad_count : 0;
  ev.mono_now = deps_.clock->monoNow();
  const ResultRules rules{options_.max_retries, options_.retry_delay, options_.provider_error_delay};
  if (counted && ev.has_file && ev.row == RowState::kGone) {
    // A held result whose earlier commit answered Busy but landed (the connection lost
    // during COMMIT): the record names this file already. Not "discarded": that would
    // delete the very file it stores. Only what follows the write is left to do.
    LCC_ASSIGN_OR_RETURN(auto cur, t.content(f.key));
    if (cur && !cur->deleted && cur->machine == o.machine && cur->filename == o.filename) {
      ResultEvent landed = ev;
      landed.row = RowState::kCurrent;
      st.action = decideResult(landed, rules);
      st.landed = true;
      return st;
    }
  }
  if (auto copy = parseCopyFetch(f.notice.fetch); copy && ev.row == RowState::kCurrent) {
    const bool good = ev.has_file && o.size == copy->size && o.md5 == copy->md5;
    if (!good) return copyFailed(t, f, o, *copy, st, counted);
  }
  std::optional<ContentRecord> old;
  if (ev.ok && ev.unchanged && (ev.row == RowState::kCurrent || ev.row == RowState::kNewer)) {
    LCC_ASSIGN_OR_RETURN(old, t.content(f.key));
    ev.content_live = old && !old->deleted;
  }
  if (ev.has_file && (ev.row == RowState::kCurrent || ev.row == RowState::kNewer)) {
    LCC_ASSIGN_OR_RETURN(ev.over_quota, overQuota(t, f.pid, f.key, o.size));
  }
  st.action = decideResult(ev, rules);
  // A copy read the source LCC, not the provider's site: not charged to its bandwidth.
  if (parseCopyFetch(f.notice.fetch)) st.action.charge_bytes = 0;
  const ResultAction& a = st.action;
  if (!counted) {
    counted = true;
    countResult(o, a);
    rates_.record(f.pid, a.verdict != ResultVerdict::kGoneAtSite && (o.ok() ? a.code : o.code) != ErrorCode::kNone,
                  toUnixMillis(deps_.clock->now()));
  }
  if (ev.has_file) {
    // The BOT-M handed this name out again, so it freed it: an FSMDB delete still
    // waiting for it (its first execution's answer was lost) is stale and would
    // unlink the new content.
    t.removeDelete(o.machine, o.filename);
  }
  LCC_RETURN_IF_ERROR(writeResult(t, f, o, a, st.row, old, now));
  return st;
}

// A copy the source could not give (move_copy.h): the row stays where it is with the
// URL's own fetch URL, so its site is fetched next; a body that came back is deleted.
Result<QueueManager::StagedResult> QueueManager::copyFailed(StoreTxn& t, const InFlight& f, const FetchResult& o,
                                                            const CopyFetch& copy, StagedResult& st, bool& counted) {
  spdlog::warn("qm: provider {}: copy of {} from {} failed ({}); its site is fetched instead", f.pid,
               f.notice.key.url, copy.content_url,
               o.ok() ? "size " + std::to_string(o.size) + ", md5 " + o.md5 : std::string(errorCodeMessage(o.code)));
  counted = true;
  if (deps_.metrics) {
    deps_.metrics->counter("lcc_qm_copy_fallbacks_total",
                           "copies of a moved provider's content its source could not give: the site fetched").inc();
  }
  st.action.verdict = ResultVerdict::kFetchAgain;
  st.action.bad_count = st.row->bad_count;
  st.action.delete_file = o.ok() && !o.unchanged && !o.filename.empty();
  st.row->notice.fetch = copy.original;
  LCC_RETURN_IF_ERROR(writeResult(t, f, o, st.action, st.row, std::nullopt, deps_.clock->now()));
  return st;
}

Status QueueManager::finishResult(const InFlight& f, const FetchResult& o, const StagedResult& st) {
  // Final: into the PIDB error list, once the txn committed (a Busy one is written again).
  if (!st.landed && st.action.verdict == ResultVerdict::kGiveUp) recordError(f.pid, st.row->notice, o, st.action.code);
  return afterResult(f.pid, st.action);
}

Status QueueManager::afterResult(ProviderId pid, const ResultAction& a) {
  Status after = scheduleAfterResult(pid, a);
  if (after.isBusy()) {
    // The result is written and its provider out of flight: not a result to write again
    // (its row is gone). Its sets stay where they were; the store is waited for.
    noteStoreBusy(after);
    return Status::ok();
  }
  return after;
}

Result<bool> QueueManager::overQuota(StoreTxn& t, ProviderId pid, const std::string& key, std::uint64_t size) {
  if (!deps_.providers) return false;
  // The PIDB record as the QM holds it (read once, quota_bytes taken again at every
  // provider refresh, used_bytes kept up at checkpoints): no PIDB read per result.
  LCC_ASSIGN_OR_RETURN(ProviderInfo info, readProviderInfo(pid));
  if (info.quota_bytes == 0) return false;
  // Stored bytes: the PIDB's (flushed at checkpoints) plus what changed since (and in
  // this txn, which may hold other results of the provider), less what this body replaces.
  std::int64_t used = static_cast<std::int64_t>(info.used_bytes);
  if (auto it = usage_pending_.find(pid); it != usage_pending_.end()) used += it->second.bytes;
  if (auto it = t.effects.usage_delta.find(pid); it != t.effects.usage_delta.end()) used += it->second.bytes;
  LCC_ASSIGN_OR_RETURN(auto old, t.content(key));
  if (old && !old->deleted) used -= static_cast<std::int64_t>(old->size);
  const auto after = static_cast<std::uint64_t>(std::max<std::int64_t>(0, used)) + size;
  return after > info.quota_bytes;
}

void QueueManager::countResult(const FetchResult& o, const ResultAction& a) {
  if (a.verdict == ResultVerdict::kGoneAtSite) {
    // Not an error: the site answered that the URL is gone, which is the removal.
    if (deps_.metrics) {
      deps_.metrics->counter("lcc_qm_gone_at_site_total",
                             "op=check fetches (IndexNow, sitemap polls) answered 404/410: the URL removed").inc();
    }
    return;
  }
  // A body refused by the quota is a failed fetch too (313).
  const ErrorCode code = o.ok() ? a.code : o.code;
  if (code != ErrorCode::kNone) {
    ++stats_.errors;
    if (deps_.metrics) {
      deps_.metrics->counter("lcc_qm_fetch_errors_total", "failed fetches, by error code",
                             {{"code", std::to_string(static_cast<int>(code))}}).inc();
    }
  } else if (a.verdict == ResultVerdict::kStored) {
    ++stats_.fetched;
  } else if (o.unchanged && a.verdict != ResultVerdict::kDiscarded) {
    ++stats_.unchanged;
  }
  if (a.verdict == ResultVerdict::kWaitSet || a.verdict == ResultVerdict::kRetryLater) ++stats_.retries;
}

Status QueueManager::writeResult(StoreTxn& t, const InFlight& f, const FetchResult& o, const ResultAction& a,
                                 std::optional<QueueEntry>& row, const std::optional<ContentRecord>& old,
                                 WallTime now) {
  const ListId list{f.pset, kSlotNow};
  if (a.delete_file) {
    DeleteRequest d{o.machine, o.filename, now};
    t.putDelete(d);
    t.effects.deletes.push_back(d);
  }
  // Final (the PIDB error list is written by handleResult()), and the URL's content goes
  // (a removal). Gone at the site (op=check, 404/410): the same removal, without the error.
  if (a.remove_url) {
    LCC_ASSIGN_OR_RETURN(bool removed, removeContent(t, f.key, now));
    (void)removed;
    return dropRow(t, f.key, list);
  }
  switch (a.verdict) {
    case ResultVerdict::kStored:
      LCC_RETURN_IF_ERROR(storeContent(t, fetchedRecord(f.notice, o, now)));
      break;
    case ResultVerdict::kRefreshed:
      t.putContent(refreshedRecord(t, *old, f.notice, o, now));
      break;
    case ResultVerdict::kRetryLater:
      // To the end of its set, marked bad; tried again after qm.retry_delay.
      return moveToTail(t, f.key, list, a.bad_count);
    case ResultVerdict::kFetchAgain:
    case ResultVerdict::kWaitSet:
      row->bad_count = a.bad_count;
      t.putEntry(*row);
      return Status::ok();
    case ResultVerdict::kDiscarded:
    case ResultVerdict::kGiveUp:
    case ResultVerdict::kGoneAtSite:
      return Status::ok();
  }
  // Catalog first, queue second (rule 2): both in this txn, applied in that order.
  if (!a.keep_row) return dropRow(t, f.key, list);
  row->bad_count = a.bad_count;
  t.putEntry(*row);
  return Status::ok();
}

Status QueueManager::scheduleAfterResult(ProviderId pid, const ResultAction& a) {
  if (a.verdict == ResultVerdict::kWaitSet) {
    // The whole set waits; the row keeps its place.
    (void)sched_.finished(pid, 0);
    if (sched_.delay(pid, a.delay) == Scheduler::After::kBeyondHorizon) return moveProviderToSlot(pid, a.delay);
    return Status::ok();
  }
  if (a.verdict == ResultVerdict::kRetryLater) sched_.setRetryAt(pid, a.retry_at);
  if (sched_.finished(pid, a.charge_bytes) == Scheduler::After::kBeyondHorizon) {
    // Over its bandwidth by more than the wheel holds: the sets wait for a time slot.
    return moveProviderToSlot(pid, sched_.lastBeyond(pid));
  }
  return Status::ok();
}

void QueueManager::recordError(ProviderId pid, const UrlNotice& n, const FetchResult& o, ErrorCode code) {
  if (!deps_.providers) return;
  FetchErrorEntry err;
  err.notice = n;
  err.code = code;
  err.http_status = o.http_status;
  err.message = o.message.empty() || code != o.code ? std::string(errorCodeMessage(code)) : o.message;
  err.when = deps_.clock->now();
  const std::size_t keep = options_.max_errors_kept;
  Status s = deps_.providers->modify(
      pid,
      [&](ProviderRecord& r) {
        r.error_total += 1;
        if (r.errors.size() < keep) r.errors.push_back(err);
        return Status::ok();
      },
      WriteOptions{.durable = false});
  if (!s.isOk() && !s.isNotFound()) storeFailed(s.withContext("provider store: recording a fetch error"));
}

}  // namespace lcc::qm
