#include "sqlite_queue_store.h"

#include <limits>

namespace lcc::plugins::sqlite {
namespace {

constexpr std::int64_t kScanChunk = 512;  // rows read per short read transaction

#define LCC_QDB_COLS \
  "key, url_op, view_tag, browse, fetch, mtime, size, md5, tod, op, pset, slot, next, bad_count, queued"
#define LCC_QPSDB_COLS "pset, slot, pid, priority, first, last, count"

// Binds the QDB columns after `key` to ?2..?15 (the INSERT and UPDATE share them),
// without copies: `e` outlives the statement's use.
void bindEntry(Stmt& st, const QueueEntry& e) {
  const UrlNotice& n = e.notice;
  st.bindInt(2, static_cast<std::int64_t>(n.op));
  st.bindTextRef(3, n.view_tag);
  st.bindOptTextRef(4, n.browse);
  st.bindTextRef(5, n.fetch);
  st.bindOptInt(6, n.mtime);
  st.bindOptU64(7, n.size);
  st.bindTextRef(8, n.md5);
  st.bindTextRef(9, n.tod);
  st.bindInt(10, static_cast<std::int64_t>(e.op));
  st.bindU64(11, e.pset);
  st.bindInt(12, e.slot);
  st.bindBlobRef(13, e.next);
  st.bindInt(14, e.bad_count);
  st.bindInt(15, toUnixMillis(e.queued));
}

// A QDB row from columns c..c+14 in LCC_QDB_COLS order; nullopt when the row does
// not hold a valid entry.
std::optional<QueueEntry> entryFromRow(const Stmt& st, int c) {
  QueueEntry e;
  auto key = decodeUrlKey(st.colText(c));
  if (!key) return std::nullopt;
  const std::int64_t url_op = st.colInt(c + 1), op = st.colInt(c + 9), slot = st.colInt(c + 11),
                     bad = st.colInt(c + 13);
  if (url_op < 0 || url_op > kUrlOpMax || op < 0 || op > 1 || bad < 0 || bad > 0xffff ||
      slot < std::numeric_limits<TimeSlot>::min() || slot > std::numeric_limits<TimeSlot>::max()) {
    return std::nullopt;
  }
  e.notice.key = std::move(*key);
  e.notice.op = static_cast<UrlOp>(url_op);
  e.notice.view_tag = st.colText(c + 2);
  e.notice.browse = st.colOptText(c + 3);
  e.notice.fetch = st.colText(c + 4);
  e.notice.mtime = st.colOptInt(c + 5);
  if (!st.isNull(c + 6)) e.notice.size = st.colU64(c + 6);
  e.notice.md5 = st.colText(c + 7);
  e.notice.tod = st.colText(c + 8);
  e.op = static_cast<QueueOp>(op);
  e.pset = st.colU64(c + 10);
  e.slot = static_cast<TimeSlot>(slot);
  e.next = st.colText(c + 12);
  e.bad_count = static_cast<std::uint16_t>(bad);
  e.queued = fromUnixMillis(st.colInt(c + 14));
  return e;
}

std::optional<PSetRecord> psetFromRow(const Stmt& st) {
  const std::int64_t slot = st.colInt(1), pid = st.colInt(2), prio = st.colInt(3);
  if (slot < std::numeric_limits<TimeSlot>::min() || slot > std::numeric_limits<TimeSlot>::max() || pid < 0 ||
      pid > std::numeric_limits<ProviderId>::max() || prio < std::numeric_limits<std::int32_t>::min() ||
      prio > std::numeric_limits<std::int32_t>::max()) {
    return std::nullopt;
  }
  PSetRecord p;
  p.pset = st.colU64(0);
  p.slot = static_cast<TimeSlot>(slot);
  p.pid = static_cast<ProviderId>(pid);
  p.priority = static_cast<std::int32_t>(prio);
  p.first = st.colText(4);
  p.last = st.colText(5);
  p.count = st.colU64(6);
  return p;
}

}  // namespace

Result<QueueStore*> SqliteQueueStore::open(const HostContext& host, const StoreOptions& opts) {
  StoreOpenInfo info;
  LCC_ASSIGN_OR_RETURN(auto db, SqliteDb::openWriter(host, opts, StoreKind::kQueue, &info));
  LCC_ASSIGN_OR_RETURN(std::int64_t rows, db->getCounter("rows"));
  return new SqliteQueueStore(host, std::move(db), std::move(info), rows);
}

SqliteQueueStore::SqliteQueueStore(const HostContext& host, std::unique_ptr<SqliteDb> db, StoreOpenInfo info,
                                   std::int64_t rows)
    : host_(host), db_(std::move(db)), info_(std::move(info)), rows_(rows) {}

SqliteQueueStore::~SqliteQueueStore() = default;  // not close(): the next open sees an unclean shutdown

Status SqliteQueueStore::writable() const {
  if (closed_) return Status::aborted(db_->path() + ": the queue store is closed");
  return failed_;
}

void SqliteQueueStore::corruptRow(const std::string& what) {
  ++corrupt_rows_;
  if (host_.logger != nullptr) {
    host_.logger->warn(db_->path() + ": skipped a corrupt " + what + " (" + std::to_string(corrupt_rows_) +
                       " so far)");
  }
}

Status SqliteQueueStore::apply(const QueueBatch& batch) {
  LCC_RETURN_IF_ERROR(writable());
  if (batch.empty()) return Status::ok();
  std::int64_t rows = rows_;
  Status s = db_->begin(false);
  if (s.isOk()) s = applyOps(batch, &rows);
  if (s.isOk() && rows != rows_) s = db_->putCounter("rows", rows);
  if (s.isOk()) s = db_->commit();
  if (!s.isOk()) {
    db_->rollback();
    failed_ = s.withContext("queue store apply failed, store is now read-only until restart");
    return failed_;
  }
  rows_ = rows;
  return Status::ok();
}

Status SqliteQueueStore::applyOps(const QueueBatch& batch, std::int64_t* rows) {
  for (const auto& op : batch.ops()) {
    if (const auto* put = std::get_if<QueueBatch::PutEntry>(&op)) {
      const std::string key = encodeUrlKey(put->entry.notice.key);
      LCC_ASSIGN_OR_RETURN(auto ins, db_->stmt("INSERT INTO qdb(" LCC_QDB_COLS
                                               ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15) "
                                               "ON CONFLICT(key) DO NOTHING"));
      ins->bindBlobRef(1, key);
      bindEntry(*ins, put->entry);
      LCC_RETURN_IF_ERROR(ins->run());
      if (sqlite3_changes(db_->handle()) == 1) {
        ++*rows;
        continue;
      }
      LCC_ASSIGN_OR_RETURN(auto upd, db_->stmt("UPDATE qdb SET url_op=?2, view_tag=?3, browse=?4, fetch=?5, "
                                               "mtime=?6, size=?7, md5=?8, tod=?9, op=?10, pset=?11, slot=?12, "
                                               "next=?13, bad_count=?14, queued=?15 WHERE key=?1"));
      upd->bindBlobRef(1, key);
      bindEntry(*upd, put->entry);
      LCC_RETURN_IF_ERROR(upd->run());
    } else if (const auto* rm = std::get_if<QueueBatch::RemoveEntry>(&op)) {
      if (!decodeUrlKey(rm->key)) return Status::invalidArgument("queue batch removes a key that is not an encoded UrlKey");
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("DELETE FROM qdb WHERE key = ?1"));
      st->bindBlob(1, rm->key);
      LCC_RETURN_IF_ERROR(st->run());
      *rows -= sqlite3_changes(db_->handle());
    } else if (const auto* pp = std::get_if<QueueBatch::PutPSet>(&op)) {
      const PSetRecord& p = pp->pset;
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("INSERT INTO qpsdb(" LCC_QPSDB_COLS ") VALUES(?1,?2,?3,?4,?5,?6,?7) "
                                              "ON CONFLICT(pset, slot) DO UPDATE SET pid=excluded.pid, "
                                              "priority=excluded.priority, first=excluded.first, "
                                              "last=excluded.last, count=excluded.count"));
      st->bindU64(1, p.pset);
      st->bindInt(2, p.slot);
      st->bindInt(3, p.pid);
      st->bindInt(4, p.priority);
      st->bindBlob(5, p.first);
      st->bindBlob(6, p.last);
      st->bindU64(7, p.count);
      LCC_RETURN_IF_ERROR(st->run());
    } else if (const auto* rp = std::get_if<QueueBatch::RemovePSet>(&op)) {
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("DELETE FROM qpsdb WHERE pset = ?1 AND slot = ?2"));
      st->bindU64(1, rp->pset);
      st->bindInt(2, rp->slot);
      LCC_RETURN_IF_ERROR(st->run());
    } else if (const auto* pd = std::get_if<QueueBatch::PutDelete>(&op)) {
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("INSERT INTO fsmdb(machine, filename, since) VALUES(?1,?2,?3) "
                                              "ON CONFLICT(machine, filename) DO UPDATE SET since=excluded.since"));
      st->bindText(1, pd->request.machine);
      st->bindText(2, pd->request.filename);
      st->bindInt(3, toUnixMillis(pd->request.since));
      LCC_RETURN_IF_ERROR(st->run());
    } else if (const auto* rd = std::get_if<QueueBatch::RemoveDelete>(&op)) {
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("DELETE FROM fsmdb WHERE machine = ?1 AND filename = ?2"));
      st->bindText(1, rd->machine);
      st->bindText(2, rd->filename);
      LCC_RETURN_IF_ERROR(st->run());
    } else if (const auto* pm = std::get_if<QueueBatch::PutMeta>(&op)) {
      LCC_RETURN_IF_ERROR(db_->putMeta(pm->key, pm->value));
    }
  }
  return Status::ok();
}

Status SqliteQueueStore::sync() {
  LCC_RETURN_IF_ERROR(writable());
  Status s = db_->syncCommitted();
  if (!s.isOk()) {
    db_->rollback();
    failed_ = s.withContext("queue store sync failed, store is now read-only until restart");
  }
  return s.isOk() ? s : failed_;
}

Status SqliteQueueStore::close() {
  if (closed_) return Status::ok();  // closing twice is harmless
  closed_ = true;
  if (!failed_.isOk()) {
    db_->closeNow();  // not clean: the next open reports it
    return failed_;
  }
  return db_->closeClean();
}

Result<std::optional<QueueEntry>> SqliteQueueStore::getEntry(std::string_view key) {
  LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("SELECT " LCC_QDB_COLS " FROM qdb WHERE key = ?1"));
  st->bindBlob(1, key);
  LCC_ASSIGN_OR_RETURN(bool row, st->step());
  if (!row) return std::optional<QueueEntry>();
  auto e = entryFromRow(*st, 0);
  if (!e) return Status::corruption(db_->path() + ": QDB row of this key is corrupt");
  return e;
}

Status SqliteQueueStore::scanEntries(const std::function<bool(const QueueEntry&)>& fn) {
  std::int64_t after = std::numeric_limits<std::int64_t>::min();
  for (;;) {
    std::vector<QueueEntry> chunk;
    std::int64_t got = 0;
    {
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("SELECT id, " LCC_QDB_COLS " FROM qdb WHERE id > ?1 ORDER BY id LIMIT ?2"));
      st->bindInt(1, after);
      st->bindInt(2, kScanChunk);
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) break;
        ++got;
        after = st->colInt(0);
        if (auto e = entryFromRow(*st, 1)) {
          chunk.push_back(std::move(*e));
        } else {
          corruptRow("QDB row " + std::to_string(after));
        }
      }
    }
    for (const auto& e : chunk) {
      if (!fn(e)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Result<std::uint64_t> SqliteQueueStore::entryCount() {
  if (closed_) return Status::aborted(db_->path() + ": the queue store is closed");
  return static_cast<std::uint64_t>(rows_);
}

Result<std::optional<PSetRecord>> SqliteQueueStore::getPSet(PSetId pset, TimeSlot slot) {
  LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("SELECT " LCC_QPSDB_COLS " FROM qpsdb WHERE pset = ?1 AND slot = ?2"));
  st->bindU64(1, pset);
  st->bindInt(2, slot);
  LCC_ASSIGN_OR_RETURN(bool row, st->step());
  if (!row) return std::optional<PSetRecord>();
  auto p = psetFromRow(*st);
  if (!p) return Status::corruption(db_->path() + ": QPSDB row is corrupt");
  return p;
}

Status SqliteQueueStore::scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) {
  // Keyset pagination: (pset, slot) after the last row of the previous chunk.
  std::int64_t after_pset = std::numeric_limits<std::int64_t>::min();
  std::int64_t after_slot = std::numeric_limits<std::int64_t>::min();
  for (;;) {
    std::vector<PSetRecord> chunk;
    std::int64_t got = 0;
    {
      auto stmt = slot ? db_->stmt("SELECT " LCC_QPSDB_COLS " FROM qpsdb INDEXED BY qpsdb_by_slot "
                                   "WHERE slot = ?3 AND pset > ?1 ORDER BY pset LIMIT ?4")
                       : db_->stmt("SELECT " LCC_QPSDB_COLS " FROM qpsdb WHERE (pset, slot) > (?1, ?2) "
                                   "ORDER BY pset, slot LIMIT ?4");
      if (!stmt.isOk()) return stmt.status();
      Stmt& st = **stmt;
      st.bindInt(1, after_pset);
      if (!slot) st.bindInt(2, after_slot);
      if (slot) st.bindInt(3, *slot);
      st.bindInt(4, kScanChunk);
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st.step());
        if (!row) break;
        ++got;
        after_pset = st.colInt(0);
        after_slot = st.colInt(1);
        if (auto p = psetFromRow(st)) {
          chunk.push_back(std::move(*p));
        } else {
          corruptRow("QPSDB row");
        }
      }
    }
    for (const auto& p : chunk) {
      if (!fn(p)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Status SqliteQueueStore::scanDeletes(std::optional<std::string> machine,
                                     const std::function<bool(const DeleteRequest&)>& fn) {
  bool first = true;
  std::string after_machine, after_file;
  for (;;) {
    std::vector<DeleteRequest> chunk;
    std::int64_t got = 0;
    {
      const char* sql =
          machine ? (first ? "SELECT machine, filename, since FROM fsmdb WHERE machine = ?1 "
                             "ORDER BY filename LIMIT ?3"
                           : "SELECT machine, filename, since FROM fsmdb WHERE machine = ?1 AND filename > ?2 "
                             "ORDER BY filename LIMIT ?3")
                  : (first ? "SELECT machine, filename, since FROM fsmdb ORDER BY machine, filename LIMIT ?3"
                           : "SELECT machine, filename, since FROM fsmdb WHERE (machine, filename) > (?1, ?2) "
                             "ORDER BY machine, filename LIMIT ?3");
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt(sql));
      if (machine) {
        st->bindText(1, *machine);
      } else if (!first) {
        st->bindText(1, after_machine);
      }
      if (!first) st->bindText(2, after_file);
      st->bindInt(3, kScanChunk);
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) break;
        ++got;
        DeleteRequest d;
        d.machine = st->colText(0);
        d.filename = st->colText(1);
        d.since = fromUnixMillis(st->colInt(2));
        after_machine = d.machine;
        after_file = d.filename;
        chunk.push_back(std::move(d));
      }
    }
    first = false;
    for (const auto& d : chunk) {
      if (!fn(d)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Result<std::optional<std::string>> SqliteQueueStore::getMeta(std::string_view key) { return db_->getMeta(key); }

}  // namespace lcc::plugins::sqlite
