#include "sqlite_provider_store.h"

#include <limits>
#include <vector>

#include "lcc/provider_states.h"
#include "record_codec.h"

namespace lcc::plugins::sqlite {
namespace {

constexpr std::int64_t kScanChunk = 256;

#define LCC_PIDB_COLS                                                                                       \
  "id, state, password_hash, prefixes, priority, bandwidth, quota_files, quota_bytes, used_files, "          \
  "used_bytes, secret, secret_url, contact, reg_expires, conn_seq, last_ip, last_connect, fullsets_used, "   \
  "fullset_period_start, fullset_wanted, fullset_reason, error_total, errors, created, state_reason, "                                                \
  "sitemap_url, sitemap_interval"
#define LCC_PIDB_PARAMS \
  "?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27"

// Binds every column; ?1 (id) only when `with_id`.
void bindProvider(Stmt& st, const ProviderRecord& r, bool with_id) {
  if (with_id) st.bindInt(1, r.id);
  st.bindInt(2, static_cast<std::int64_t>(r.state));
  st.bindText(3, r.password_hash);
  st.bindBlob(4, encodeStringList(r.prefixes));
  st.bindInt(5, r.priority);
  st.bindU64(6, r.bandwidth);
  st.bindU64(7, r.quota_files);
  st.bindU64(8, r.quota_bytes);
  st.bindU64(9, r.used_files);
  st.bindU64(10, r.used_bytes);
  st.bindText(11, r.secret);
  st.bindText(12, r.secret_url);
  st.bindText(13, r.contact);
  st.bindInt(14, toUnixMillis(r.reg_expires));
  st.bindU64(15, r.conn_seq);
  st.bindText(16, r.last_ip);
  if (r.last_connect) {
    st.bindInt(17, toUnixMillis(*r.last_connect));
  } else {
    st.bindNull(17);
  }
  st.bindInt(18, r.fullsets_used);
  st.bindInt(19, toUnixMillis(r.fullset_period_start));
  st.bindInt(20, r.fullset_wanted ? 1 : 0);
  st.bindInt(21, static_cast<std::int64_t>(r.fullset_reason));
  st.bindU64(22, r.error_total);
  st.bindBlob(23, encodeErrorList(r.errors));
  st.bindInt(24, toUnixMillis(r.created));
  st.bindText(25, r.state_reason);
  st.bindText(26, r.sitemap_url);
  st.bindInt(27, r.sitemap_interval.count());
}

std::optional<ProviderRecord> providerFromRow(const Stmt& st) {
  ProviderRecord r;
  const std::int64_t id = st.colInt(0), state = st.colInt(1), prio = st.colInt(4), used = st.colInt(17),
                     wanted = st.colInt(19), reason = st.colInt(20), interval = st.colInt(26);
  auto prefixes = decodeStringList(st.colText(3));
  auto errors = decodeErrorList(st.colText(22));
  if (id <= 0 || id > std::numeric_limits<ProviderId>::max() || state < 0 || state > kProviderStateMax ||
      prio < std::numeric_limits<std::int32_t>::min() || prio > std::numeric_limits<std::int32_t>::max() ||
      used < 0 || used > std::numeric_limits<std::uint32_t>::max() || (wanted != 0 && wanted != 1) || reason < 0 ||
      reason > static_cast<std::int64_t>(FullSetReason::kAdmin) || interval < 0 || !prefixes || !errors) {
    return std::nullopt;
  }
  r.id = static_cast<ProviderId>(id);
  r.state = static_cast<ProviderState>(state);
  r.password_hash = st.colText(2);
  r.prefixes = std::move(*prefixes);
  r.priority = static_cast<std::int32_t>(prio);
  r.bandwidth = st.colU64(5);
  r.quota_files = st.colU64(6);
  r.quota_bytes = st.colU64(7);
  r.used_files = st.colU64(8);
  r.used_bytes = st.colU64(9);
  r.secret = st.colText(10);
  r.secret_url = st.colText(11);
  r.contact = st.colText(12);
  r.reg_expires = fromUnixMillis(st.colInt(13));
  r.conn_seq = st.colU64(14);
  r.last_ip = st.colText(15);
  if (!st.isNull(16)) r.last_connect = fromUnixMillis(st.colInt(16));
  r.fullsets_used = static_cast<std::uint32_t>(used);
  r.fullset_period_start = fromUnixMillis(st.colInt(18));
  r.fullset_wanted = wanted == 1;
  r.fullset_reason = static_cast<FullSetReason>(reason);
  r.error_total = st.colU64(21);
  r.errors = std::move(*errors);
  r.created = fromUnixMillis(st.colInt(23));
  r.state_reason = st.colText(24);
  r.sitemap_url = st.colText(25);
  r.sitemap_interval = Millis(interval);
  return r;
}

// A providers table made before a column existed gets it, with its default.
// `check_sql` selects 1 when the column is there; the statements are constants.
Status addColumn(SqliteDb& db, const char* name, const char* check_sql, const char* alter_sql) {
  LCC_ASSIGN_OR_RETURN(auto st, db.stmt(check_sql));
  LCC_ASSIGN_OR_RETURN(bool has, st->step());
  st.reset();
  if (has) return Status::ok();
  return db.exec(alter_sql).withContext(db.path() + ": adding the " + name + " column");
}

#define LCC_HAS_COLUMN(name) "SELECT 1 FROM pragma_table_info('providers') WHERE name = '" name "'"

// The columns that came after format 1.
Status addLaterColumns(SqliteDb& db) {
  LCC_RETURN_IF_ERROR(addColumn(db, "state_reason", LCC_HAS_COLUMN("state_reason"),
                                "ALTER TABLE providers ADD COLUMN state_reason TEXT NOT NULL DEFAULT ''"));
  LCC_RETURN_IF_ERROR(addColumn(db, "sitemap_url", LCC_HAS_COLUMN("sitemap_url"),
                                "ALTER TABLE providers ADD COLUMN sitemap_url TEXT NOT NULL DEFAULT ''"));
  return addColumn(db, "sitemap_interval", LCC_HAS_COLUMN("sitemap_interval"),
                   "ALTER TABLE providers ADD COLUMN sitemap_interval INTEGER NOT NULL DEFAULT 0");
}

#undef LCC_HAS_COLUMN

}  // namespace

Result<ProviderStore*> SqliteProviderStore::open(const HostContext& host, const StoreOptions& opts) {
  StoreOpenInfo info;
  LCC_ASSIGN_OR_RETURN(auto db, SqliteDb::openWriter(host, opts, StoreKind::kProviders, &info));
  LCC_RETURN_IF_ERROR(addLaterColumns(*db));
  return new SqliteProviderStore(host, std::move(db), std::move(info));
}

SqliteProviderStore::SqliteProviderStore(const HostContext& host, std::unique_ptr<SqliteDb> db, StoreOpenInfo info)
    : host_(host), db_(std::move(db)), info_(std::move(info)) {}

SqliteProviderStore::~SqliteProviderStore() = default;

Status SqliteProviderStore::writableLocked() const {
  if (closed_) return Status::aborted(db_->path() + ": the provider store is closed");
  return failed_;
}

Status SqliteProviderStore::beginLocked(bool durable) {
  Status s = db_->begin(durable);
  if (s.isOk()) return s;
  db_->rollback();
  failed_ = s.withContext("provider store write failed, store is now read-only until restart");
  return failed_;
}

Status SqliteProviderStore::finishLocked(Status s, bool soft_failure) {
  if (s.isOk()) s = db_->commit();
  if (s.isOk()) return s;
  db_->rollback();
  if (soft_failure) return s;
  failed_ = s.withContext("provider store write failed, store is now read-only until restart");
  return failed_;
}

Result<ProviderId> SqliteProviderStore::create(const ProviderRecord& record) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(writableLocked());
  ProviderId id = 0;
  Status s = db_->begin(true);
  if (s.isOk()) {
    s = [&]() -> Status {
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("INSERT INTO providers(" LCC_PIDB_COLS ") VALUES(" LCC_PIDB_PARAMS ")"));
      bindProvider(*st, record, false);  // id NULL: AUTOINCREMENT picks it
      LCC_RETURN_IF_ERROR(st->run());
      const std::int64_t rowid = sqlite3_last_insert_rowid(db_->handle());
      if (rowid <= 0 || rowid > std::numeric_limits<ProviderId>::max()) {
        return Status::invalidArgument("provider ids are exhausted");
      }
      id = static_cast<ProviderId>(rowid);
      return Status::ok();
    }();
  }
  LCC_RETURN_IF_ERROR(finishLocked(s, false));
  return id;
}

Result<std::optional<ProviderRecord>> SqliteProviderStore::getLocked(ProviderId id) {
  LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("SELECT " LCC_PIDB_COLS " FROM providers WHERE id = ?1"));
  st->bindInt(1, id);
  LCC_ASSIGN_OR_RETURN(bool row, st->step());
  if (!row) return std::optional<ProviderRecord>();
  auto r = providerFromRow(*st);
  if (!r) return Status::corruption(db_->path() + ": provider " + std::to_string(id) + " is corrupt");
  return r;
}

Result<std::optional<ProviderRecord>> SqliteProviderStore::get(ProviderId id) {
  std::lock_guard<std::mutex> lk(mu_);
  return getLocked(id);
}

Status SqliteProviderStore::updateLocked(const ProviderRecord& r, bool* found) {
  LCC_ASSIGN_OR_RETURN(auto st, db_->stmt(
      "UPDATE providers SET state=?2, password_hash=?3, prefixes=?4, priority=?5, bandwidth=?6, quota_files=?7, "
      "quota_bytes=?8, used_files=?9, used_bytes=?10, secret=?11, secret_url=?12, contact=?13, reg_expires=?14, "
      "conn_seq=?15, last_ip=?16, last_connect=?17, fullsets_used=?18, fullset_period_start=?19, "
      "fullset_wanted=?20, fullset_reason=?21, error_total=?22, errors=?23, created=?24, state_reason=?25, "
      "sitemap_url=?26, sitemap_interval=?27 WHERE id=?1"));
  bindProvider(*st, r, true);
  LCC_RETURN_IF_ERROR(st->run());
  *found = sqlite3_changes(db_->handle()) == 1;
  return Status::ok();
}

Status SqliteProviderStore::put(const ProviderRecord& record, const WriteOptions& options) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(writableLocked());
  LCC_RETURN_IF_ERROR(beginLocked(options.durable));
  bool found = false;
  Status s = updateLocked(record, &found);
  if (s.isOk() && !found) {
    return finishLocked(Status::notFound("no provider " + std::to_string(record.id)), true);
  }
  return finishLocked(s, false);
}

Status SqliteProviderStore::modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                                   const WriteOptions& options) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(writableLocked());
  LCC_RETURN_IF_ERROR(beginLocked(options.durable));
  auto current = getLocked(id);
  if (!current.isOk()) return finishLocked(current.status(), current.status().isCorruption());
  if (!*current) return finishLocked(Status::notFound("no provider " + std::to_string(id)), true);
  ProviderRecord r = std::move(**current);
  Status fs;
  try {
    fs = fn(r);
  } catch (const std::exception& e) {
    fs = Status::internal(std::string("provider modify function threw: ") + e.what());
  } catch (...) {
    fs = Status::internal("provider modify function threw");
  }
  if (!fs.isOk()) return finishLocked(fs, true);  // the caller said no: nothing written
  r.id = id;
  bool found = false;
  return finishLocked(updateLocked(r, &found), false);
}

Status SqliteProviderStore::remove(ProviderId id) {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(writableLocked());
  LCC_RETURN_IF_ERROR(beginLocked(true));
  Status s = [&]() -> Status {
    LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("DELETE FROM providers WHERE id = ?1"));
    st->bindInt(1, id);
    return st->run();
  }();
  if (s.isOk() && sqlite3_changes(db_->handle()) == 0) {
    return finishLocked(Status::notFound("no provider " + std::to_string(id)), true);
  }
  return finishLocked(s, false);
}

Status SqliteProviderStore::scan(const std::function<bool(const ProviderRecord&)>& fn) {
  std::int64_t after = 0;
  for (;;) {
    std::vector<ProviderRecord> chunk;
    std::int64_t got = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      LCC_ASSIGN_OR_RETURN(auto st, db_->stmt("SELECT " LCC_PIDB_COLS " FROM providers WHERE id > ?1 "
                                              "ORDER BY id LIMIT ?2"));
      st->bindInt(1, after);
      st->bindInt(2, kScanChunk);
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) break;
        ++got;
        after = st->colInt(0);
        if (auto r = providerFromRow(*st)) {
          chunk.push_back(std::move(*r));
        } else if (host_.logger != nullptr) {
          host_.logger->warn(db_->path() + ": skipped corrupt provider " + std::to_string(after));
        }
      }
    }
    for (const auto& r : chunk) {
      if (!fn(r)) return Status::ok();
    }
    if (got < kScanChunk) return Status::ok();
  }
}

Status SqliteProviderStore::sync() {
  std::lock_guard<std::mutex> lk(mu_);
  LCC_RETURN_IF_ERROR(writableLocked());
  Status s = db_->syncCommitted();
  if (!s.isOk()) {
    db_->rollback();
    failed_ = s.withContext("provider store sync failed, store is now read-only until restart");
    return failed_;
  }
  return s;
}

Status SqliteProviderStore::close() {
  std::lock_guard<std::mutex> lk(mu_);
  if (closed_) return Status::ok();  // closing twice is harmless
  closed_ = true;
  if (!failed_.isOk()) {
    db_->closeNow();
    return failed_;
  }
  return db_->closeClean();
}

}  // namespace lcc::plugins::sqlite
