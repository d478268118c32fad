#include "qm/absorb.h"

#include <charconv>

#include "common/invariant.h"

namespace lcc::qm {

std::optional<std::uint64_t> parseMetaU64(const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  std::uint64_t v = 0;
  auto r = std::from_chars(value->data(), value->data() + value->size(), v);
  if (r.ec != std::errc() || r.ptr != value->data() + value->size()) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------------------
// StoreTxn

// Reads are kept in the overlay too: the QM is the only writer of both stores, so
// what it read stays true until it writes it, through this txn (read-your-writes).
Result<std::optional<QueueEntry>> StoreTxn::entry(const std::string& key) {
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  LCC_ASSIGN_OR_RETURN(auto e, queue_.getEntry(key));
  if (!e) absent_.insert(key);
  entries_[key] = e;
  return e;
}

Status StoreTxn::prefetch(const std::vector<std::string>& keys) {
  std::vector<std::string> rows, records;
  for (const auto& k : keys) {
    if (!entries_.count(k)) rows.push_back(k);
    if (!content_overlay_.count(k)) records.push_back(k);
  }
  if (!rows.empty()) {
    LCC_ASSIGN_OR_RETURN(auto got, queue_.getEntries(rows));
    for (std::size_t i = 0; i < rows.size() && i < got.size(); ++i) {
      if (!got[i]) absent_.insert(rows[i]);
      entries_.emplace(rows[i], std::move(got[i]));
    }
  }
  if (!records.empty()) {
    LCC_ASSIGN_OR_RETURN(auto got, content_.getMany(records));
    for (std::size_t i = 0; i < records.size() && i < got.size(); ++i) {
      content_overlay_.emplace(records[i], std::move(got[i]));
    }
  }
  return Status::ok();
}

Status StoreTxn::prefetchPSets(const std::vector<std::pair<PSetId, TimeSlot>>& lists) {
  std::vector<std::pair<PSetId, TimeSlot>> want;
  for (const auto& l : lists) {
    if (!psets_.count(l)) want.push_back(l);
  }
  if (want.empty()) return Status::ok();
  LCC_ASSIGN_OR_RETURN(auto got, queue_.getPSets(want));
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i) psets_.emplace(want[i], std::move(got[i]));
  return Status::ok();
}

void StoreTxn::putEntry(const QueueEntry& e) {
  std::string key = encodeUrlKey(e.notice.key);
  entries_[key] = e;
  // Read as absent in this txn: the row is new to the store (a hint, lcc/queue_store.h).
  qbatch_.putEntry(e, absent_.count(key) > 0);
}

void StoreTxn::removeEntry(const std::string& key) {
  entries_[key] = std::nullopt;
  qbatch_.removeEntry(key);
}

Result<std::optional<PSetRecord>> StoreTxn::pset(PSetId pset, TimeSlot slot) {
  if (auto it = psets_.find({pset, slot}); it != psets_.end()) return it->second;
  LCC_ASSIGN_OR_RETURN(auto p, queue_.getPSet(pset, slot));
  psets_[{pset, slot}] = p;
  return p;
}

void StoreTxn::putPSet(const PSetRecord& p) {
  psets_[{p.pset, p.slot}] = p;
  qbatch_.putPSet(p);
}

void StoreTxn::removePSet(PSetId pset, TimeSlot slot) {
  psets_[{pset, slot}] = std::nullopt;
  qbatch_.removePSet(pset, slot);
}

Result<std::optional<ContentRecord>> StoreTxn::content(const std::string& key) {
  if (auto it = content_overlay_.find(key); it != content_overlay_.end()) return it->second;
  LCC_ASSIGN_OR_RETURN(auto r, content_.get(key));
  content_overlay_[key] = r;
  return r;
}

void StoreTxn::putContent(const ContentRecord& r) {
  std::string key = encodeUrlKey(r.key);
  auto put_before = batch_put_seq_.find(key);
  if (put_before != batch_put_seq_.end() && put_before->second == r.seq && r.seq > base_seq_) {
    // An in-place refresh of a seq this same batch assigned: the store only knows the
    // seqs it holds, so it takes a fresh one (content users see the change once). A
    // seq the store holds stays (as when the two refreshes are in separate batches).
    ContentRecord fresh = r;
    fresh.seq = nextSeq();
    batch_put_seq_[key] = fresh.seq;
    content_overlay_[key] = fresh;
    cbatch_.put(std::move(fresh));
    return;
  }
  batch_put_seq_[key] = r.seq;
  content_overlay_[key] = r;
  cbatch_.put(r);
}

void StoreTxn::eraseContent(const std::string& key) {
  content_overlay_[key] = std::nullopt;
  batch_put_seq_.erase(key);
  cbatch_.erase(key);
}

Result<std::optional<std::string>> StoreTxn::meta(const std::string& key) {
  if (auto it = meta_.find(key); it != meta_.end()) return it->second;
  LCC_ASSIGN_OR_RETURN(auto v, queue_.getMeta(key));
  meta_[key] = v;
  return v;
}

void StoreTxn::putMeta(const std::string& key, const std::string& value) {
  meta_[key] = value;
  qbatch_.putMeta(key, value);
}

void StoreTxn::putContentMeta(const std::string& key, const std::string& value) { cbatch_.putMeta(key, value); }

void StoreTxn::putDelete(const DeleteRequest& d) { qbatch_.putDelete(d); }

void StoreTxn::removeDelete(const std::string& machine, const std::string& filename) {
  qbatch_.removeDelete(machine, filename);
}

Status StoreTxn::commit() {
  if (!cbatch_.empty()) LCC_RETURN_IF_ERROR(content_.apply(cbatch_).withContext("content store"));
  if (!qbatch_.empty()) LCC_RETURN_IF_ERROR(queue_.apply(qbatch_).withContext("queue store"));
  cbatch_.clear();
  qbatch_.clear();
  entries_.clear();
  absent_.clear();
  psets_.clear();
  content_overlay_.clear();
  batch_put_seq_.clear();
  base_seq_ = seq_;
  meta_.clear();
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Lists

Status appendToList(StoreTxn& t, QueueEntry e, std::int32_t priority) {
  const std::string key = encodeUrlKey(e.notice.key);
  e.next.clear();
  LCC_ASSIGN_OR_RETURN(auto rec, t.pset(e.pset, e.slot));
  if (rec) {
    LCC_ASSIGN_OR_RETURN(auto tail, t.entry(rec->last));
    if (tail) {
      tail->next = key;
      t.putEntry(*tail);
      rec->last = key;
      rec->count += 1;
    } else {
      // The tail row is gone (a damaged list): start the list again from this row.
      rec->first = rec->last = key;
      rec->count = 1;
    }
    t.putPSet(*rec);
  } else {
    PSetRecord p;
    p.pset = e.pset;
    p.slot = e.slot;
    p.pid = e.notice.key.pid;
    p.priority = priority;
    p.first = p.last = key;
    p.count = 1;
    t.putPSet(p);
    if (p.slot == kSlotNow) t.effects.ready_psets.emplace_back(p.pid, p.pset);
  }
  t.putEntry(e);
  return Status::ok();
}

Status unlinkFromList(StoreTxn& t, const std::string& key, ListId list, bool* found_out) {
  if (found_out) *found_out = false;
  LCC_ASSIGN_OR_RETURN(auto rec, t.pset(list.pset, list.slot));
  if (!rec) return Status::ok();
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
  const std::string next = row ? row->next : std::string();
  if (rec->first == key) {
    rec->first = next;
  } else {
    // Walk to the predecessor. Rows being unlinked are near the head (in flight).
    std::string cur = rec->first;
    std::uint64_t steps = 0;
    bool found = false;
    while (!cur.empty()) {
      if (!LCC_INVARIANT(steps++ <= rec->count, "qm: a QPSDB list holds no more rows than its count")) break;
      LCC_ASSIGN_OR_RETURN(auto e, t.entry(cur));
      if (!e) break;
      if (e->next == key) {
        e->next = next;
        t.putEntry(*e);
        if (rec->last == key) rec->last = cur;
        found = true;
        break;
      }
      cur = e->next;
    }
    if (!found) return Status::ok();  // not on this list
  }
  if (found_out) *found_out = true;
  if (rec->count > 0) rec->count -= 1;
  if (rec->first.empty() || rec->count == 0) {
    t.removePSet(list.pset, list.slot);
  } else {
    if (rec->last == key) rec->last = rec->first;  // only when it was the head and the last
    t.putPSet(*rec);
  }
  return Status::ok();
}

Status dropRow(StoreTxn& t, const std::string& key, ListId list) {
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
  if (!row) return Status::ok();
  bool found = false;
  LCC_RETURN_IF_ERROR(unlinkFromList(t, key, list, &found));
  // Not where the caller last saw it (a QPSDB rebuild re-homed it): its own lists.
  for (ListId other : {ListId{row->pset, kSlotNow}, ListId{row->pset, row->slot}}) {
    if (found || other == list) continue;
    LCC_RETURN_IF_ERROR(unlinkFromList(t, key, other, &found));
  }
  if (row->op == QueueOp::kFetch) {
    LCC_ASSIGN_OR_RETURN(auto rec, t.content(key));
    if (!rec || rec->deleted) t.effects.claimed_delta[row->notice.key.pid] -= 1;
  }
  t.removeEntry(key);
  t.effects.queued_delta[row->notice.key.pid] -= 1;
  return Status::ok();
}

Status moveToTail(StoreTxn& t, const std::string& key, ListId list, std::uint16_t bad_count) {
  LCC_ASSIGN_OR_RETURN(auto rec, t.pset(list.pset, list.slot));
  LCC_RETURN_IF_ERROR(unlinkFromList(t, key, list));
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
  if (!row) return Status::ok();
  row->bad_count = bad_count;
  row->pset = list.pset;
  row->slot = list.slot;
  return appendToList(t, *row, rec ? rec->priority : 0);
}

Status moveToSlot(StoreTxn& t, const std::string& key, ListId from, TimeSlot slot) {
  LCC_ASSIGN_OR_RETURN(auto rec, t.pset(from.pset, from.slot));
  LCC_RETURN_IF_ERROR(unlinkFromList(t, key, from));
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
  if (!row) return Status::ok();
  row->pset = from.pset;
  row->slot = slot;
  return appendToList(t, *row, rec ? rec->priority : 0);
}

Result<std::optional<PSetRecord>> movePSet(StoreTxn& t, PSetId pset, TimeSlot from, TimeSlot to) {
  LCC_ASSIGN_OR_RETURN(auto src, t.pset(pset, from));
  if (!src) return std::optional<PSetRecord>();
  LCC_ASSIGN_OR_RETURN(auto dst, t.pset(pset, to));
  t.removePSet(pset, from);
  if (dst) {
    LCC_ASSIGN_OR_RETURN(auto tail, t.entry(dst->last));
    if (tail) {
      tail->next = src->first;
      t.putEntry(*tail);
      dst->last = src->last;
      dst->count += src->count;
      t.putPSet(*dst);
      return std::optional<PSetRecord>();
    }
  }
  PSetRecord p = *src;
  p.slot = to;
  t.putPSet(p);
  return std::optional<PSetRecord>(p);
}

Status mergeIntoNow(StoreTxn& t, PSetId pset, TimeSlot slot) {
  if (slot == kSlotNow) return Status::ok();
  LCC_ASSIGN_OR_RETURN(auto moved, movePSet(t, pset, slot, kSlotNow));
  if (moved) t.effects.ready_psets.emplace_back(moved->pid, moved->pset);
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Content

namespace {

// The tombstone of removeContent(), without looking at the queue.
Result<bool> tombstone(StoreTxn& t, const std::string& key, WallTime now) {
  LCC_ASSIGN_OR_RETURN(auto rec, t.content(key));
  if (!rec || rec->deleted) return false;
  if (!rec->filename.empty()) {
    DeleteRequest d{rec->machine, rec->filename, now};
    t.putDelete(d);
    t.effects.deletes.push_back(d);
  }
  auto& u = t.effects.usage_delta[rec->key.pid];
  u.files -= 1;
  u.bytes -= static_cast<std::int64_t>(rec->size);
  ContentRecord tomb;
  tomb.key = rec->key;
  tomb.seq = t.nextSeq();
  tomb.deleted = true;
  tomb.view_tag = rec->view_tag;
  tomb.browse = rec->browse;
  tomb.fetch = rec->fetch;
  tomb.stored = now;
  tomb.refreshed = now;
  t.putContent(tomb);
  t.effects.removals += 1;
  return true;
}

}  // namespace

Result<bool> removeContent(StoreTxn& t, const std::string& key, WallTime now) {
  LCC_ASSIGN_OR_RETURN(bool removed, tombstone(t, key, now));
  if (removed) {
    // A fetch still queued for it keeps the identity claimed.
    LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
    if (!row || row->op != QueueOp::kFetch) {
      if (auto k = decodeUrlKey(key)) t.effects.claimed_delta[k->pid] -= 1;
    }
  }
  return removed;
}

Status storeContent(StoreTxn& t, ContentRecord rec) {
  const std::string key = encodeUrlKey(rec.key);
  LCC_ASSIGN_OR_RETURN(auto old, t.content(key));
  auto& u = t.effects.usage_delta[rec.key.pid];
  if (old && !old->deleted) {
    u.files -= 1;
    u.bytes -= static_cast<std::int64_t>(old->size);
    if (!old->filename.empty() && (old->machine != rec.machine || old->filename != rec.filename)) {
      DeleteRequest d{old->machine, old->filename, rec.stored};
      t.putDelete(d);
      t.effects.deletes.push_back(d);
    }
  }
  u.files += 1;
  u.bytes += static_cast<std::int64_t>(rec.size);
  rec.deleted = false;
  rec.seq = t.nextSeq();
  t.putContent(rec);
  return Status::ok();
}

bool declaredMatches(const UrlNotice& n, const ContentRecord& r) {
  if (!n.mtime && !n.size && n.md5.empty()) return false;
  return n.mtime == r.declared_mtime && n.size == r.declared_size && n.md5 == r.declared_md5;
}

// ---------------------------------------------------------------------------
// Notifications

bool declaresOtherContent(const UrlNotice& n, const ContentRecord& r) {
  return (n.size && *n.size != r.size) || (!n.md5.empty() && n.md5 != r.md5);
}

bool visibleToContentUsersEqual(const ContentRecord& r, const UrlNotice& n) {
  return r.view_tag == n.view_tag && r.browse == n.browse && r.fetch == n.fetch;
}

namespace {

// A fetch for an identity not held is about to be queued: refused past the files quota
// (nothing changes), else claimed.
bool admitFresh(StoreTxn& t, const UrlNotice& n, const AbsorbContext& ctx) {
  if (ctx.quota_files > 0 && ctx.files_claimed && ctx.files_claimed() >= ctx.quota_files) {
    auto& r = t.effects.refused[n.key.pid];
    r.count += 1;
    if (r.notices.size() < ctx.keep_refused) r.notices.push_back(n);
    return false;
  }
  t.effects.claimed_delta[n.key.pid] += 1;
  return true;
}

}  // namespace

Result<Absorbed> insertUpdate(StoreTxn& t, const UrlNotice& n, const AbsorbContext& ctx) {
  const std::string key = encodeUrlKey(n.key);
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
  if (row) {
    Absorbed what = Absorbed::kKnown;
    if (row->op == QueueOp::kNothing) {
      // A removal overtook this row: the identity is not held, so it is new again.
      LCC_ASSIGN_OR_RETURN(auto rec, t.content(key));
      if (!rec || rec->deleted) {
        if (!admitFresh(t, n, ctx)) return Absorbed::kRefused;
        what = Absorbed::kQueuedNew;
      }
    }
    // Last wins, at the first one's place.
    if (row->notice == n && row->op == QueueOp::kFetch) return what;
    row->notice = n;
    row->op = QueueOp::kFetch;
    row->bad_count = 0;
    t.putEntry(*row);
    return what;
  }
  LCC_ASSIGN_OR_RETURN(auto rec, t.content(key));
  const bool held = rec && !rec->deleted;
  if (held && declaredMatches(n, *rec)) {
    // Not fetched; the record is confirmed (ageing) and takes the notice's other fields.
    t.effects.fetches_skipped += 1;
    if (rec->view_tag == n.view_tag && rec->browse == n.browse && rec->fetch == n.fetch &&
        rec->refreshed >= ctx.now) {
      return Absorbed::kKnown;  // a replay: nothing to change
    }
    // Only what a content user sees makes a change (a new seq); a confirmation alone
    // refreshes the record in place (content_store.h), so mirrors see no change.
    if (!visibleToContentUsersEqual(*rec, n)) rec->seq = t.nextSeq();
    rec->view_tag = n.view_tag;
    rec->browse = n.browse;
    rec->fetch = n.fetch;
    rec->refreshed = ctx.now;
    t.putContent(*rec);
    return Absorbed::kKnown;
  }
  if (!held && !admitFresh(t, n, ctx)) return Absorbed::kRefused;
  QueueEntry e;
  e.notice = n;
  e.op = QueueOp::kFetch;
  e.pset = ctx.pset;
  e.slot = ctx.slots ? ctx.slots->startSlot(n.tod, ctx.now) : kSlotNow;
  e.queued = ctx.now;
  t.effects.queued_delta[n.key.pid] += 1;
  LCC_RETURN_IF_ERROR(appendToList(t, std::move(e), ctx.priority));
  return held ? Absorbed::kKnown : Absorbed::kQueuedNew;
}

Status insertRemoval(StoreTxn& t, const UrlNotice& n, WallTime now) {
  const std::string key = encodeUrlKey(n.key);
  LCC_ASSIGN_OR_RETURN(auto row, t.entry(key));
  bool look_at_content = true;
  const bool fetch_row = row && row->op == QueueOp::kFetch;
  if (row) {
    look_at_content = fetch_row;
    if (row->op != QueueOp::kNothing) {
      row->op = QueueOp::kNothing;
      t.putEntry(*row);
    }
  }
  if (look_at_content) {
    // The row (if any) is op=nothing now: the identity is no longer claimed.
    LCC_ASSIGN_OR_RETURN(bool removed, tombstone(t, key, now));
    if (fetch_row || removed) t.effects.claimed_delta[n.key.pid] -= 1;
  }
  return Status::ok();
}

Status sweepFullSet(StoreTxn& t, ProviderId pid, const std::unordered_set<std::string>& keep, WallTime now) {
  // Collect first: the store is not called again from inside its own scan. Records
  // this txn already removed are skipped by removeContent (it reads the overlay).
  std::vector<std::string> gone;
  LCC_RETURN_IF_ERROR(t.scanProvider(pid, [&](const ContentRecord& r) {
    if (!r.deleted) {
      std::string key = encodeUrlKey(r.key);
      if (!keep.count(key)) gone.push_back(std::move(key));
    }
    return true;
  }));
  // Queued fetches of URLs the set lacks go too: walk the provider's lists.
  std::vector<PSetRecord> lists;
  LCC_RETURN_IF_ERROR(t.scanPSets([&](const PSetRecord& p) {
    if (p.pid == pid) lists.push_back(p);
    return true;
  }));
  for (const auto& p : lists) {
    std::string cur = p.first;
    std::uint64_t steps = 0;
    while (!cur.empty()) {
      if (!LCC_INVARIANT(steps++ <= p.count, "qm: a QPSDB list holds no more rows than its count")) break;
      LCC_ASSIGN_OR_RETURN(auto row, t.entry(cur));
      if (!row) break;
      if (row->op == QueueOp::kFetch && !keep.count(cur)) gone.push_back(cur);
      cur = row->next;
    }
  }
  for (const auto& key : gone) {
    auto k = decodeUrlKey(key);
    if (!k) continue;
    UrlNotice n;
    n.key = *k;
    n.op = UrlOp::kDelete;
    LCC_RETURN_IF_ERROR(insertRemoval(t, n, now));
  }
  return Status::ok();
}

}  // namespace lcc::qm
