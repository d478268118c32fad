#include "sqlite_content_store.h"

#include <limits>

namespace lcc::plugins::sqlite {
namespace {

constexpr std::int64_t kScanChunk = 512;  // rows per short read transaction

#define LCC_LCC_COLS                                                                                   \
  "key, seq, deleted, view_tag, browse, fetch, mtime, size, md5, machine, filename, stored, refreshed, " \
  "declared_mtime, declared_size, declared_md5, created_seq, etag"

// Binds without copies: `key` and `r` outlive the statement's use.
void bindRecord(Stmt& st, const std::string& key, const ContentRecord& r) {
  st.bindBlobRef(1, key);
  st.bindU64(2, r.seq);
  st.bindInt(3, r.deleted ? 1 : 0);
  st.bindTextRef(4, r.view_tag);
  st.bindOptTextRef(5, r.browse);
  st.bindTextRef(6, r.fetch);
  st.bindOptInt(7, r.mtime);
  st.bindU64(8, r.size);
  st.bindTextRef(9, r.md5);
  st.bindTextRef(10, r.machine);
  st.bindTextRef(11, r.filename);
  st.bindInt(12, toUnixMillis(r.stored));
  st.bindInt(13, toUnixMillis(r.refreshed));
  st.bindOptInt(14, r.declared_mtime);
  st.bindOptU64(15, r.declared_size);
  st.bindTextRef(16, r.declared_md5);
  st.bindU64(17, r.created_seq);
  st.bindTextRef(18, r.etag);
}

std::optional<ContentRecord> recordFromRow(const Stmt& st) {
  auto key = decodeUrlKey(st.colText(0));
  const std::int64_t deleted = st.colInt(2);
  if (!key || st.colInt(1) <= 0 || (deleted != 0 && deleted != 1)) return std::nullopt;
  ContentRecord r;
  r.key = std::move(*key);
  r.seq = st.colU64(1);
  r.deleted = deleted == 1;
  r.view_tag = st.colText(3);
  r.browse = st.colOptText(4);
  r.fetch = st.colText(5);
  r.mtime = st.colOptInt(6);
  r.size = st.colU64(7);
  r.md5 = st.colText(8);
  r.machine = st.colText(9);
  r.filename = st.colText(10);
  r.stored = fromUnixMillis(st.colInt(11));
  r.refreshed = fromUnixMillis(st.colInt(12));
  r.declared_mtime = st.colOptInt(13);
  if (!st.isNull(14)) r.declared_size = st.colU64(14);
  r.declared_md5 = st.colText(15);
  r.created_seq = st.colU64(16);
  r.etag = st.colText(17);
  return r;
}

}  // namespace

// A read connection lent by the pool; given back when destroyed.
class SqliteContentStore::Reader {
 public:
  Reader(SqliteContentStore* store, std::unique_ptr<SqliteDb> db) : store_(store), db_(std::move(db)) {}
  Reader(Reader&& o) noexcept : store_(o.store_), db_(std::move(o.db_)) {}
  Reader& operator=(Reader&&) = delete;
  ~Reader() {
    if (db_) store_->release(std::move(db_));
  }
  SqliteDb* operator->() { return db_.get(); }

 private:
  SqliteContentStore* store_;
  std::unique_ptr<SqliteDb> db_;
};

Result<ContentStore*> SqliteContentStore::open(const HostContext& host, const StoreOptions& opts) {
  StoreOpenInfo info;
  LCC_ASSIGN_OR_RETURN(auto db, SqliteDb::openWriter(host, opts, StoreKind::kContent, &info));
  LCC_RETURN_IF_ERROR(addLaterColumns(*db));
  LCC_ASSIGN_OR_RETURN(std::int64_t rows, db->getCounter("rows"));
  LCC_ASSIGN_OR_RETURN(std::int64_t max_seq, db->getCounter("max_seq"));
  return new SqliteContentStore(host, opts, std::move(db), std::move(info), rows, max_seq);
}

SqliteContentStore::SqliteContentStore(const HostContext& host, const StoreOptions& opts,
                                       std::unique_ptr<SqliteDb> db, StoreOpenInfo info, std::int64_t rows,
                                       std::int64_t max_seq)
    : host_(host), opts_(opts), db_(std::move(db)), info_(std::move(info)), rows_(rows), max_seq_(max_seq) {}

SqliteContentStore::~SqliteContentStore() {
  std::lock_guard<std::mutex> lk(pool_mu_);
  idle_.clear();
}

Result<SqliteContentStore::Reader> SqliteContentStore::acquire() {
  std::unique_lock<std::mutex> lk(pool_mu_);
  for (;;) {
    if (closed_) return Status::aborted(db_->path() + ": the content store is closed");
    if (!idle_.empty()) {
      auto db = std::move(idle_.back());
      idle_.pop_back();
      return Reader(this, std::move(db));
    }
    if (open_readers_ < opts_.max_readers) {
      ++open_readers_;
      lk.unlock();
      auto db = SqliteDb::openReader(db_->path(), opts_);
      if (!db.isOk()) {
        lk.lock();
        --open_readers_;
        pool_cv_.notify_one();
        return db.status();
      }
      return Reader(this, std::move(*db));
    }
    pool_cv_.wait(lk);
  }
}

void SqliteContentStore::release(std::unique_ptr<SqliteDb> db) {
  std::lock_guard<std::mutex> lk(pool_mu_);
  idle_.push_back(std::move(db));
  pool_cv_.notify_all();
}

Status SqliteContentStore::writable() const {
  if (closed_) return Status::aborted(db_->path() + ": the content store is closed");
  return failed_;
}

void SqliteContentStore::corruptRow(const std::string& what) {
  const auto n = ++corrupt_rows_;
  if (host_.logger != nullptr) {
    host_.logger->warn(db_->path() + ": skipped a corrupt " + what + " (" + std::to_string(n) + " so far)");
  }
}

Status SqliteContentStore::apply(const ContentBatch& batch) {
  LCC_RETURN_IF_ERROR(writable());
  if (batch.empty()) return Status::ok();
  std::int64_t rows = rows_, max_seq = max_seq_;
  Status s = db_->begin(false);
  if (s.isOk()) s = applyOps(batch, &rows, &max_seq);
  if (s.isOk() && rows != rows_) s = db_->putCounter("rows", rows);
  if (s.isOk() && max_seq != max_seq_) s = db_->putCounter("max_seq", max_seq);
  if (s.isOk()) s = db_->commit();
  if (!s.isOk()) {
    db_->rollback();
    failed_ = s.withContext("content store apply failed, store is now read-only until restart");
    return failed_;
  }
  rows_ = rows;
  max_seq_ = max_seq;
  return Status::ok();
}

// A content file made before created_seq (or etag) existed gets the column (0: unknown;
// '': no ETag kept).
Status SqliteContentStore::addLaterColumns(SqliteDb& db) {
  struct Later {
    const char* name;
    const char* check;
    const char* alter;
  };
  static constexpr Later kLater[] = {
      {"created_seq", "SELECT 1 FROM pragma_table_info('lcc') WHERE name = 'created_seq'",
       "ALTER TABLE lcc ADD COLUMN created_seq INTEGER NOT NULL DEFAULT 0"},
      {"etag", "SELECT 1 FROM pragma_table_info('lcc') WHERE name = 'etag'",
       "ALTER TABLE lcc ADD COLUMN etag TEXT NOT NULL DEFAULT ''"},
  };
  for (const Later& c : kLater) {
    LCC_ASSIGN_OR_RETURN(auto st, db.stmt(c.check));
    LCC_ASSIGN_OR_RETURN(bool has, st->step());
    st.reset();
    if (has) continue;
    LCC_RETURN_IF_ERROR(db.exec(c.alter).withContext(db.path() + ": adding the " + c.name + " column"));
  }
  return Status::ok();
}

Status SqliteContentStore::putRecord(const ContentRecord& put, std::int64_t* rows, std::int64_t* max_seq) {
  const std::string key = encodeUrlKey(put.key);
  // The row this put replaces: its seq (an in-place refresh keeps it) and created_seq.
  std::optional<std::int64_t> held_seq;
  bool held_live = false;
  ChangeSeq held_created = 0;
  {
    LCC_ASSIGN_OR_RETURN(auto held, db_->stmt("SELECT seq, deleted, created_seq FROM lcc WHERE key = ?1"));
    held->bindBlobRef(1, key);
    LCC_ASSIGN_OR_RETURN(bool row, held->step());
    if (row) {
      held_seq = held->colInt(0);
      held_live = held->colInt(1) == 0;
      held_created = held->colU64(2);
    }
  }
  // The change feed (scanSince) depends on seqs only growing: a CU that read up to N
  // must never miss a record put later with a seq <= N. A seq at or below the highest
  // is allowed only as an in-place refresh of the record that holds it.
  const bool in_place = held_seq && *held_seq == static_cast<std::int64_t>(put.seq);
  if (!in_place && (put.seq > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
                    static_cast<std::int64_t>(put.seq) <= *max_seq)) {
    return Status::invalidArgument("content record seq " + std::to_string(put.seq) +
                                   " is not above the highest seq so far (" + std::to_string(*max_seq) + ")");
  }
  if (held_seq) {
    LCC_ASSIGN_OR_RETURN(auto del, db_->stmt("DELETE FROM lcc WHERE key = ?1"));
    del->bindBlobRef(1, key);
    LCC_RETURN_IF_ERROR(del->run());
  } else {
    ++*rows;
  }
  ContentRecord r = put;
  r.created_seq = held_live ? held_created : r.seq;
  LCC_ASSIGN_OR_RETURN(auto ins, db_->stmt("INSERT INTO lcc(" LCC_LCC_COLS ") VALUES"
                                           "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)"));
  bindRecord(*ins, key, r);
  LCC_RETURN_IF_ERROR(ins->run());
  *max_seq = std::max(*max_seq, static_cast<std::int64_t>(r.seq));
  return Status::ok();
}

Status SqliteContentStore::applyOps(const ContentBatch& batch, std::int64_t* rows, std::int64_t* max_seq) {
  for (const auto& op : batch.ops()) {
    if (const auto* put = std::get_if<ContentBatch::Put>(&op)) {
      LCC_RETURN_IF_ERROR(putRecord(put->record, rows, max_seq));
    } else if (const auto* er = std::get_if<ContentBatch::Erase>(&op)) {
      if (!decodeUrlKey(er->key)) return Status::invalidArgument("content erase of a key that is not an encoded UrlKey");
      LCC_ASSIGN_OR_RETURN(auto del, db_->stmt("DELETE FROM lcc WHERE key = ?1"));
      del->bindBlob(1, er->key);
      LCC_RETURN_IF_ERROR(del->run());
      *rows -= sqlite3_changes(db_->handle());
    } else if (const auto* pm = std::get_if<ContentBatch::PutMeta>(&op)) {
      LCC_RETURN_IF_ERROR(db_->putMeta(pm->key, pm->value));
    }
  }
  return Status::ok();
}

Status SqliteContentStore::sync() {
  LCC_RETURN_IF_ERROR(writable());
  Status s = db_->syncCommitted();
  if (!s.isOk()) {
    db_->rollback();
    failed_ = s.withContext("content store sync failed, store is now read-only until restart");
    return failed_;
  }
  return s;
}

Status SqliteContentStore::close() {
  {
    std::unique_lock<std::mutex> lk(pool_mu_);
    if (closed_) return Status::ok();  // closing twice is harmless
    closed_ = true;
    // Wait for reads in progress, then close the readers before the writer, so the
    // writer's close is the last connection and folds the WAL into the file.
    pool_cv_.wait(lk, [&] { return static_cast<std::int64_t>(idle_.size()) == open_readers_; });
    idle_.clear();
    open_readers_ = 0;
  }
  if (!failed_.isOk()) {
    db_->closeNow();
    return failed_;
  }
  return db_->closeClean();
}

Result<std::optional<ContentRecord>> SqliteContentStore::get(std::string_view encoded_key) {
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  LCC_ASSIGN_OR_RETURN(auto st, r->stmt("SELECT " LCC_LCC_COLS " FROM lcc WHERE key = ?1"));
  st->bindBlob(1, encoded_key);
  LCC_ASSIGN_OR_RETURN(bool row, st->step());
  if (!row) return std::optional<ContentRecord>();
  auto rec = recordFromRow(*st);
  if (!rec) return Status::corruption(db_->path() + ": LCC DB row of this key is corrupt");
  return rec;
}

Status SqliteContentStore::scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) {
  // Every key of `pid` is longer than its 4-byte prefix and below the next prefix.
  std::string after = encodeProviderPrefix(pid);
  const bool last_pid = pid == std::numeric_limits<ProviderId>::max();
  const std::string upper = last_pid ? std::string() : encodeProviderPrefix(pid + 1);
  for (;;) {
    std::vector<ContentRecord> chunk;
    std::int64_t got = 0;
    {
      LCC_ASSIGN_OR_RETURN(Reader r, acquire());
      auto stmt = last_pid ? r->stmt("SELECT " LCC_LCC_COLS " FROM lcc WHERE key > ?1 ORDER BY key LIMIT ?3")
                           : r->stmt("SELECT " LCC_LCC_COLS " FROM lcc WHERE key > ?1 AND key < ?2 "
                                     "ORDER BY key LIMIT ?3");
      if (!stmt.isOk()) return stmt.status();
      Stmt& st = **stmt;
      st.bindBlob(1, after);
      if (!last_pid) st.bindBlob(2, upper);
      st.bindInt(3, kScanChunk);
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st.step());
        if (!row) break;
        ++got;
        after = st.colText(0);
        if (auto rec = recordFromRow(st)) {
          chunk.push_back(std::move(*rec));
        } else {
          corruptRow("LCC DB row");
        }
      }
    }
    for (const auto& rec : chunk) {
      if (rec.key.pid != pid) return Status::ok();
      if (!fn(rec)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Status SqliteContentStore::scanSince(ChangeSeq after, const ContentFilter& filter,
                                     const std::function<bool(const ContentRecord&)>& fn) {
  if (after >= static_cast<ChangeSeq>(std::numeric_limits<std::int64_t>::max())) return Status::ok();
  std::int64_t from = static_cast<std::int64_t>(after);
  for (;;) {
    std::vector<ContentRecord> chunk;
    std::int64_t got = 0;
    {
      LCC_ASSIGN_OR_RETURN(Reader r, acquire());
      LCC_ASSIGN_OR_RETURN(auto st, r->stmt("SELECT " LCC_LCC_COLS " FROM lcc WHERE seq > ?1 ORDER BY seq LIMIT ?2"));
      st->bindInt(1, from);
      st->bindInt(2, kScanChunk);
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) break;
        ++got;
        from = st->colInt(1);
        auto rec = recordFromRow(*st);
        if (!rec) {
          corruptRow("LCC DB row seq " + std::to_string(from));
        } else if (filter.matches(*rec)) {
          chunk.push_back(std::move(*rec));
        }
      }
    }
    for (const auto& rec : chunk) {
      if (!fn(rec)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Result<ChangeSeq> SqliteContentStore::maxSeq() {
  if (closed_) return Status::aborted(db_->path() + ": the content store is closed");
  return static_cast<ChangeSeq>(max_seq_.load());
}

Result<std::uint64_t> SqliteContentStore::count() {
  if (closed_) return Status::aborted(db_->path() + ": the content store is closed");
  return static_cast<std::uint64_t>(rows_.load());
}

Result<std::optional<std::string>> SqliteContentStore::getMeta(std::string_view key) {
  LCC_ASSIGN_OR_RETURN(Reader r, acquire());
  return r->getMeta(key);
}

}  // namespace lcc::plugins::sqlite
