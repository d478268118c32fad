#include "pg_queue_store.h"

#include <algorithm>
#include <limits>
#include <map>

#include "pg_copy.h"

namespace lcc::plugins::postgres {
namespace {

constexpr std::int64_t kScanChunk = 512;  // rows per read round trip

#define LCC_QDB_COLS "key, url_op, view_tag, browse, fetch_url, mtime, size, md5, tod, op, pset, slot, next, bad_count, queued"
#define LCC_QPSDB_COLS "pset, slot, pid, priority, first, last, count"

// A QDB row in LCC_QDB_COLS order; nullopt when it does not hold a valid entry.
std::optional<QueueEntry> entryFromRow(const PgResult& r, int i) {
  auto key = decodeUrlKey(r.bytes(i, 0));
  const std::int64_t url_op = r.i64(i, 1), op = r.i64(i, 9), slot = r.i64(i, 11), bad = r.i64(i, 13);
  if (!key || url_op < 0 || url_op > kUrlOpMax || op < 0 || op > 1 || bad < 0 || bad > 0xffff ||
      slot < std::numeric_limits<TimeSlot>::min() || slot > std::numeric_limits<TimeSlot>::max()) {
    return std::nullopt;
  }
  QueueEntry e;
  e.notice.key = std::move(*key);
  e.notice.op = static_cast<UrlOp>(url_op);
  e.notice.view_tag = r.bytes(i, 2);
  e.notice.browse = r.optBytes(i, 3);
  e.notice.fetch = r.bytes(i, 4);
  e.notice.mtime = r.optI64(i, 5);
  if (!r.isNull(i, 6)) e.notice.size = r.u64(i, 6);
  e.notice.md5 = r.bytes(i, 7);
  e.notice.tod = r.bytes(i, 8);
  e.op = static_cast<QueueOp>(op);
  e.pset = r.u64(i, 10);
  e.slot = static_cast<TimeSlot>(slot);
  e.next = r.bytes(i, 12);
  e.bad_count = static_cast<std::uint16_t>(bad);
  e.queued = fromUnixMillis(r.i64(i, 14));
  return e;
}

std::optional<PSetRecord> psetFromRow(const PgResult& r, int i) {
  const std::int64_t slot = r.i64(i, 1), pid = r.i64(i, 2), prio = r.i64(i, 3);
  if (slot < std::numeric_limits<TimeSlot>::min() || slot > std::numeric_limits<TimeSlot>::max() || pid < 0 ||
      pid > std::numeric_limits<ProviderId>::max() || prio < std::numeric_limits<std::int32_t>::min() ||
      prio > std::numeric_limits<std::int32_t>::max()) {
    return std::nullopt;
  }
  PSetRecord p;
  p.pset = r.u64(i, 0);
  p.slot = static_cast<TimeSlot>(slot);
  p.pid = static_cast<ProviderId>(pid);
  p.priority = static_cast<std::int32_t>(prio);
  p.first = r.bytes(i, 4);
  p.last = r.bytes(i, 5);
  p.count = r.u64(i, 6);
  return p;
}

}  // namespace

Result<QueueStore*> PgQueueStore::open(const HostContext& host, const StoreOptions& opts) {
  StoreOpenInfo info;
  LCC_ASSIGN_OR_RETURN(auto conn, openStore(opts, StoreKind::kQueue, &info));
  std::shared_ptr<PgLease> lease;
  if (opts.qm_lease_ms > 0 && !opts.probe) {
    // The standby waits here until it holds the QM lease; then every write checks it.
    LCC_ASSIGN_OR_RETURN(lease, PgLease::acquire(host, opts));
    conn->setAfterBegin([l = lease.get()](PgConn& c) { return l->check(c); });
  }
  auto* store = new PgQueueStore(host, opts, std::move(conn), std::move(info));
  store->lease_ = std::move(lease);
  return store;
}

Status PgQueueStore::writable() const {
  if (closed_) return Status::aborted(conn_->what() + ": the queue store is closed");
  if (lease_) LCC_RETURN_IF_ERROR(lease_->fenced());
  return failed_;
}

Status PgQueueStore::readable() const {
  if (closed_) return Status::aborted(conn_->what() + ": the queue store is closed");
  return Status::ok();
}

void PgQueueStore::corruptRow(const std::string& what) {
  ++corrupt_rows_;
  if (host_.logger != nullptr) {
    host_.logger->warn(conn_->what() + ": skipped a corrupt " + what + " (" + std::to_string(corrupt_rows_) +
                       " so far)");
  }
}

// The end state of one batch: ops in order, folded per row key (the last put or
// remove of a row wins); each table is then written with one multi-row statement.
struct PgQueueStore::Plan {
  // The row of each key: null = remove; the batch's own rows, not copied. `fresh`:
  // every op on the key in this batch was a put marked fresh (QueueBatch::PutEntry).
  struct Row {
    const QueueEntry* entry = nullptr;
    bool fresh = false;
  };
  // The QDB ops in batch order, then (foldEntries) one per key in key order.
  std::vector<std::pair<std::string, Row>> entries;
  std::map<std::pair<PSetId, TimeSlot>, std::optional<PSetRecord>> psets;
  std::map<std::pair<std::string, std::string>, std::optional<WallTime>> deletes;
  std::map<std::string, std::string> meta;

  // Last op per key wins (a stable sort keeps the batch order among equal keys); a
  // key stays fresh only if every op on it was a fresh put.
  void foldEntries() {
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::size_t out = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (out > 0 && entries[out - 1].first == entries[i].first) {
        const bool fresh = entries[out - 1].second.fresh && entries[i].second.fresh;
        entries[out - 1].second = {entries[i].second.entry, fresh};
      } else {
        if (out != i) entries[out] = std::move(entries[i]);
        ++out;
      }
    }
    entries.resize(out);
  }
};

Status PgQueueStore::apply(const QueueBatch& batch) {
  LCC_RETURN_IF_ERROR(writable());
  if (batch.empty()) return Status::ok();
  Plan plan;
  for (const auto& op : batch.ops()) LCC_RETURN_IF_ERROR(fold(op, &plan));
  plan.foldEntries();
  Status s = write(plan, true);
  if (!s.isOk() && conn_->lastSqlState() == "23505") {
    // A row marked fresh is there after all (a batch applied again, a wrong hint): the
    // COPY failed and nothing was written; write the batch again, every row upserted.
    conn_->rollback();
    ++copy_fallbacks_;
    if (host_.logger != nullptr) {
      host_.logger->info(conn_->what() + ": a QDB row marked fresh was there; the batch was upserted instead (" +
                         std::to_string(copy_fallbacks_) + " so far)");
    }
    s = write(plan, false);
  }
  if (!s.isOk()) {
    conn_->rollback();
    if (s.isBusy()) {
      // The connection went away: rolled back (or, lost during COMMIT, maybe committed);
      // applying the same batch again is safe. The next call reconnects.
      return s.withContext("queue store apply did not complete; the same batch may be applied again");
    }
    failed_ = s.withContext("queue store apply failed, store is now read-only until restart");
    return failed_;
  }
  // Were the commits before this one lost with a connection made again since?
  return unsynced_.afterApply(*conn_, opts_.full_sync, "queue store", failed_);
}

// One transaction: BEGIN (with the COPY of the fresh QDB rows when `copy_fresh` and
// there are any; the QM lease's check), then every other write, the stamp and COMMIT in
// one round trip (libpq pipeline mode). Two round trips a batch without fresh rows,
// three with them.
Status PgQueueStore::write(const Plan& plan, bool copy_fresh) {
  const bool copy = copy_fresh && copyFresh(plan);
  std::vector<PgStep> steps;
  writeEntries(plan, copy, &steps);
  writeOthers(plan, &steps);
  Status s = !copy ? conn_->begin(opts_.full_sync)
                   : conn_->beginCopy(opts_.full_sync, "COPY qdb (" LCC_QDB_COLS ") FROM STDIN (FORMAT binary)",
                                      copy_buf_);
  if (s.isOk() && !opts_.full_sync) steps.push_back(unsynced_.stampStep());
  if (s.isOk()) s = conn_->runAndCommit(steps);
  return s;
}

// The fresh QDB rows of `plan` as a binary COPY stream (LCC_QDB_COLS order) in
// copy_buf_; false if there are none.
bool PgQueueStore::copyFresh(const Plan& plan) {
  std::size_t bytes = PgCopyRows::kStreamBytes, rows = 0;
  for (const auto& [key, row] : plan.entries) {
    if (!row.fresh) continue;
    const UrlNotice& u = row.entry->notice;
    ++rows;
    bytes += PgCopyRows::kRowBytes + 15 * PgCopyRows::fieldBytes(0) + 8 * 8 + key.size() + u.view_tag.size() +
             (u.browse ? u.browse->size() : 0) + u.fetch.size() + u.md5.size() + u.tod.size() + row.entry->next.size();
  }
  if (rows == 0) return false;
  PgCopyRows out(&copy_buf_, bytes);
  for (const auto& [key, row] : plan.entries) {
    if (!row.fresh) continue;
    const QueueEntry& e = *row.entry;
    const UrlNotice& u = e.notice;
    out.row(15).bytes(key).i64(static_cast<std::int64_t>(u.op)).bytes(u.view_tag).optBytes(u.browse).bytes(u.fetch);
    out.optI64(u.mtime).optI64(u.size ? std::optional<std::int64_t>(static_cast<std::int64_t>(*u.size)) : std::nullopt);
    out.bytes(u.md5).bytes(u.tod).i64(static_cast<std::int64_t>(e.op)).i64(static_cast<std::int64_t>(e.pset));
    out.i64(e.slot).bytes(e.next).i64(e.bad_count).i64(toUnixMillis(e.queued));
  }
  out.finish();
  return true;
}

Status PgQueueStore::fold(const QueueBatch::Op& op, Plan* plan) {
  if (const auto* put = std::get_if<QueueBatch::PutEntry>(&op)) {
    plan->entries.push_back({encodeUrlKey(put->entry.notice.key), {&put->entry, put->fresh}});
  } else if (const auto* rm = std::get_if<QueueBatch::RemoveEntry>(&op)) {
    if (!decodeUrlKey(rm->key)) return Status::invalidArgument("queue batch removes a key that is not an encoded UrlKey");
    plan->entries.push_back({rm->key, {}});
  } else if (const auto* pp = std::get_if<QueueBatch::PutPSet>(&op)) {
    plan->psets[{pp->pset.pset, pp->pset.slot}] = pp->pset;
  } else if (const auto* rp = std::get_if<QueueBatch::RemovePSet>(&op)) {
    plan->psets[{rp->pset, rp->slot}] = std::nullopt;
  } else if (const auto* pd = std::get_if<QueueBatch::PutDelete>(&op)) {
    plan->deletes[{pd->request.machine, pd->request.filename}] = pd->request.since;
  } else if (const auto* rd = std::get_if<QueueBatch::RemoveDelete>(&op)) {
    plan->deletes[{rd->machine, rd->filename}] = std::nullopt;
  } else if (const auto* pm = std::get_if<QueueBatch::PutMeta>(&op)) {
    plan->meta[pm->key] = pm->value;
  }
  return Status::ok();
}

void PgQueueStore::writeEntries(const Plan& plan, bool skip_fresh, std::vector<PgStep>* steps) {
  constexpr int kCols = 15;
  std::vector<std::optional<std::string>> b[kCols], removed;  // bytea columns (by index in LCC_QDB_COLS)
  std::vector<std::optional<std::int64_t>> n[kCols];           // bigint columns
  for (const auto& [key, row] : plan.entries) {
    const QueueEntry* e = row.entry;
    if (!e) {
      removed.emplace_back(key);
      continue;
    }
    if (skip_fresh && row.fresh) continue;  // in the COPY
    const UrlNotice& u = e->notice;
    b[0].emplace_back(key);
    n[1].emplace_back(static_cast<std::int64_t>(u.op));
    b[2].emplace_back(u.view_tag);
    b[3].emplace_back(u.browse);
    b[4].emplace_back(u.fetch);
    n[5].emplace_back(u.mtime);
    n[6].emplace_back(u.size ? std::optional<std::int64_t>(static_cast<std::int64_t>(*u.size)) : std::nullopt);
    b[7].emplace_back(u.md5);
    b[8].emplace_back(u.tod);
    n[9].emplace_back(static_cast<std::int64_t>(e->op));
    n[10].emplace_back(static_cast<std::int64_t>(e->pset));
    n[11].emplace_back(e->slot);
    b[12].emplace_back(e->next);
    n[13].emplace_back(e->bad_count);
    n[14].emplace_back(toUnixMillis(e->queued));
  }
  if (!removed.empty()) steps->push_back({"DELETE FROM qdb WHERE key = ANY($1)", PgParams().bytesArray(removed)});
  if (b[0].empty()) return;
  PgParams p;
  for (int c = 0; c < kCols; ++c) {
    if (b[c].empty()) {
      p.i64Array(n[c]);
    } else {
      p.bytesArray(b[c]);
    }
  }
  steps->push_back(
      {"INSERT INTO qdb (" LCC_QDB_COLS ") SELECT unnest($1), unnest($2), unnest($3), unnest($4), unnest($5), "
       "unnest($6), unnest($7), unnest($8), unnest($9), unnest($10), unnest($11), unnest($12), unnest($13), "
       "unnest($14), unnest($15) ON CONFLICT (key) DO UPDATE SET url_op=EXCLUDED.url_op, view_tag=EXCLUDED.view_tag, "
       "browse=EXCLUDED.browse, fetch_url=EXCLUDED.fetch_url, mtime=EXCLUDED.mtime, size=EXCLUDED.size, "
       "md5=EXCLUDED.md5, tod=EXCLUDED.tod, op=EXCLUDED.op, pset=EXCLUDED.pset, slot=EXCLUDED.slot, "
       "next=EXCLUDED.next, bad_count=EXCLUDED.bad_count, queued=EXCLUDED.queued",
       std::move(p)});
}

void PgQueueStore::writeOthers(const Plan& plan, std::vector<PgStep>* steps) {
  std::vector<std::optional<std::int64_t>> ps, sl, pid, prio, cnt, del_ps, del_sl, since;
  std::vector<std::optional<std::string>> first, last, mach, file, del_mach, del_file, mk, mv;
  for (const auto& [k, p] : plan.psets) {
    if (!p) {
      del_ps.emplace_back(static_cast<std::int64_t>(k.first));
      del_sl.emplace_back(k.second);
      continue;
    }
    ps.emplace_back(static_cast<std::int64_t>(p->pset));
    sl.emplace_back(p->slot);
    pid.emplace_back(p->pid);
    prio.emplace_back(p->priority);
    first.emplace_back(p->first);
    last.emplace_back(p->last);
    cnt.emplace_back(static_cast<std::int64_t>(p->count));
  }
  for (const auto& [k, t] : plan.deletes) {
    (t ? mach : del_mach).emplace_back(k.first);
    (t ? file : del_file).emplace_back(k.second);
    if (t) since.emplace_back(toUnixMillis(*t));
  }
  for (const auto& [k, v] : plan.meta) {
    mk.emplace_back(k);
    mv.emplace_back(v);
  }
  if (!del_ps.empty()) {
    steps->push_back({"DELETE FROM qpsdb WHERE (pset, slot) IN (SELECT * FROM unnest($1, $2))",
                      PgParams().i64Array(del_ps).i64Array(del_sl)});
  }
  if (!ps.empty()) {
    steps->push_back({"INSERT INTO qpsdb (" LCC_QPSDB_COLS ") SELECT * FROM unnest($1,$2,$3,$4,$5,$6,$7) "
                      "ON CONFLICT (pset, slot) DO UPDATE SET pid=EXCLUDED.pid, priority=EXCLUDED.priority, "
                      "first=EXCLUDED.first, last=EXCLUDED.last, count=EXCLUDED.count",
                      PgParams().i64Array(ps).i64Array(sl).i64Array(pid).i64Array(prio).bytesArray(first)
                          .bytesArray(last).i64Array(cnt)});
  }
  if (!del_mach.empty()) {
    steps->push_back({"DELETE FROM fsmdb WHERE (machine, filename) IN (SELECT * FROM unnest($1, $2))",
                      PgParams().bytesArray(del_mach).bytesArray(del_file)});
  }
  if (!mach.empty()) {
    steps->push_back({"INSERT INTO fsmdb (machine, filename, since) SELECT * FROM unnest($1, $2, $3) "
                      "ON CONFLICT (machine, filename) DO UPDATE SET since=EXCLUDED.since",
                      PgParams().bytesArray(mach).bytesArray(file).i64Array(since)});
  }
  if (!mk.empty()) {
    steps->push_back({"INSERT INTO meta (store, key, value) SELECT 'queue', k, v FROM unnest($1, $2) "
                      "AS m(k, v) ON CONFLICT (store, key) DO UPDATE SET value = EXCLUDED.value",
                      PgParams().bytesArray(mk).bytesArray(mv)});
  }
}

Status PgQueueStore::sync() {
  LCC_RETURN_IF_ERROR(writable());
  if (!unsynced_.pending()) return Status::ok();
  Status s = syncCommitted(*conn_, StoreKind::kQueue);
  // The flush covers every earlier commit the server still has; check() that it has
  // them all (a crash or failover since may have lost some).
  if (s.isOk()) s = unsynced_.check(*conn_);
  if (!s.isOk() && s.isBusy()) return s.withContext("queue store sync");  // still pending: sync again
  if (!s.isOk()) {
    failed_ = s.withContext("queue store sync failed, store is now read-only until restart");
    return failed_;
  }
  unsynced_.synced(*conn_);
  return s;
}

Status PgQueueStore::close() {
  if (closed_) return Status::ok();  // closing twice is harmless
  LCC_RETURN_IF_ERROR(failed_);
  if (opts_.probe) {  // lccd --check changes nothing
    closed_ = true;
    return Status::ok();
  }
  // The clean flag's commit waits for the WAL flush: every earlier commit is durable too.
  // It goes first: its transaction checks the QM lease (fenced: nothing written).
  Status s = markClean(*conn_, StoreKind::kQueue);
  if (s.isOk()) (void)unsynced_.forget(*conn_);  // best effort: a stale row is harmless
  closed_ = true;
  return s;
}

Result<std::optional<QueueEntry>> PgQueueStore::getEntry(std::string_view key) {
  LCC_RETURN_IF_ERROR(readable());
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT " LCC_QDB_COLS " FROM qdb WHERE key = $1",
                                              PgParams().bytes(key)));
  if (r.rows() == 0) return std::optional<QueueEntry>();
  auto e = entryFromRow(r, 0);
  if (!e) return Status::corruption(conn_->what() + ": the QDB row of this key does not decode");
  return e;
}

Result<std::vector<std::optional<QueueEntry>>> PgQueueStore::getEntries(const std::vector<std::string>& keys) {
  LCC_RETURN_IF_ERROR(readable());
  std::vector<std::optional<QueueEntry>> out(keys.size());
  if (keys.empty()) return out;
  std::vector<std::optional<std::string>> arr(keys.begin(), keys.end());
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT " LCC_QDB_COLS " FROM qdb WHERE key = ANY($1)",
                                              PgParams().bytesArray(arr)));
  const auto row_of = r.rowsBy(0);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    auto it = row_of.find(keys[k]);
    if (it == row_of.end()) continue;
    out[k] = entryFromRow(r, it->second);
    if (!out[k]) return Status::corruption(conn_->what() + ": the QDB row of this key does not decode");
  }
  return out;
}

Status PgQueueStore::scanEntries(const std::function<bool(const QueueEntry&)>& fn) {
  LCC_RETURN_IF_ERROR(readable());
  std::string after;  // every encoded key is longer than ""
  for (;;) {
    LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT " LCC_QDB_COLS " FROM qdb WHERE key > $1 ORDER BY key LIMIT $2",
                                                PgParams().bytes(after).i64(kScanChunk)));
    for (int i = 0; i < r.rows(); ++i) {
      after = r.bytes(i, 0);
      auto e = entryFromRow(r, i);
      if (!e) {
        corruptRow("QDB row");
      } else if (!fn(*e)) {
        return Status::ok();
      }
    }
    if (r.rows() < kScanChunk) return Status::ok();
  }
}

Result<std::uint64_t> PgQueueStore::entryCount() {
  LCC_RETURN_IF_ERROR(readable());
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT count(*) FROM qdb", PgParams()));
  return static_cast<std::uint64_t>(r.i64(0, 0));
}

Result<std::optional<PSetRecord>> PgQueueStore::getPSet(PSetId pset, TimeSlot slot) {
  LCC_RETURN_IF_ERROR(readable());
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT " LCC_QPSDB_COLS " FROM qpsdb WHERE pset = $1 AND slot = $2",
                                              PgParams().u64(pset).i64(slot)));
  if (r.rows() == 0) return std::optional<PSetRecord>();
  auto p = psetFromRow(r, 0);
  if (!p) return Status::corruption(conn_->what() + ": the QPSDB row does not decode");
  return p;
}

Result<std::vector<std::optional<PSetRecord>>> PgQueueStore::getPSets(
    const std::vector<std::pair<PSetId, TimeSlot>>& lists) {
  LCC_RETURN_IF_ERROR(readable());
  std::vector<std::optional<PSetRecord>> out(lists.size());
  if (lists.empty()) return out;
  std::vector<std::optional<std::int64_t>> ps, sl;
  for (const auto& [pset, slot] : lists) {
    ps.emplace_back(static_cast<std::int64_t>(pset));
    sl.emplace_back(slot);
  }
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT " LCC_QPSDB_COLS " FROM qpsdb WHERE (pset, slot) IN "
                                              "(SELECT * FROM unnest($1, $2))",
                                              PgParams().i64Array(ps).i64Array(sl)));
  for (int i = 0; i < r.rows(); ++i) {
    auto p = psetFromRow(r, i);
    if (!p) return Status::corruption(conn_->what() + ": a QPSDB row does not decode");
    for (std::size_t k = 0; k < lists.size(); ++k) {
      if (lists[k].first == p->pset && lists[k].second == p->slot) out[k] = *p;
    }
  }
  return out;
}

Status PgQueueStore::scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) {
  LCC_RETURN_IF_ERROR(readable());
  std::int64_t after_pset = 0, after_slot = 0, first = 1;
  for (;;) {
    auto res = slot ? conn_->run("SELECT " LCC_QPSDB_COLS " FROM qpsdb WHERE slot = $1 AND ($2 = 1 OR pset > $3) "
                                 "ORDER BY pset LIMIT $4",
                                 PgParams().i64(*slot).i64(first).i64(after_pset).i64(kScanChunk))
                    : conn_->run("SELECT " LCC_QPSDB_COLS " FROM qpsdb WHERE $1 = 1 OR (pset, slot) > ($2, $3) "
                                 "ORDER BY pset, slot LIMIT $4",
                                 PgParams().i64(first).i64(after_pset).i64(after_slot).i64(kScanChunk));
    LCC_ASSIGN_OR_RETURN(PgResult r, std::move(res));
    first = 0;
    for (int i = 0; i < r.rows(); ++i) {
      after_pset = r.i64(i, 0);
      after_slot = r.i64(i, 1);
      auto p = psetFromRow(r, i);
      if (!p) {
        corruptRow("QPSDB row");
      } else if (!fn(*p)) {
        return Status::ok();
      }
    }
    if (r.rows() < kScanChunk) return Status::ok();
  }
}

Status PgQueueStore::scanDeletes(std::optional<std::string> machine,
                                 const std::function<bool(const DeleteRequest&)>& fn) {
  LCC_RETURN_IF_ERROR(readable());
  std::string after_machine, after_file;
  std::int64_t first = 1;
  for (;;) {
    auto res = machine ? conn_->run("SELECT machine, filename, since FROM fsmdb WHERE machine = $1 AND "
                                    "($2 = 1 OR filename > $3) ORDER BY filename LIMIT $4",
                                    PgParams().bytes(*machine).i64(first).bytes(after_file).i64(kScanChunk))
                       : conn_->run("SELECT machine, filename, since FROM fsmdb WHERE $1 = 1 OR "
                                    "(machine, filename) > ($2, $3) ORDER BY machine, filename LIMIT $4",
                                    PgParams().i64(first).bytes(after_machine).bytes(after_file).i64(kScanChunk));
    LCC_ASSIGN_OR_RETURN(PgResult r, std::move(res));
    first = 0;
    for (int i = 0; i < r.rows(); ++i) {
      DeleteRequest d{r.bytes(i, 0), r.bytes(i, 1), fromUnixMillis(r.i64(i, 2))};
      after_machine = d.machine;
      after_file = d.filename;
      if (!fn(d)) return Status::ok();
    }
    if (r.rows() < kScanChunk) return Status::ok();
  }
}

Result<std::optional<std::string>> PgQueueStore::getMeta(std::string_view key) {
  LCC_RETURN_IF_ERROR(readable());
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run("SELECT value FROM meta WHERE store = 'queue' AND key = $1",
                                              PgParams().bytes(key)));
  if (r.rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(r.bytes(0, 0));
}

}  // namespace lcc::plugins::postgres
