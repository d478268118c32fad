#include "sqlite_db.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "schema_sql.h"

namespace lcc::plugins::sqlite {

std::string_view storeKindName(StoreKind kind) {
  switch (kind) {
    case StoreKind::kQueue: return "queue";
    case StoreKind::kContent: return "content";
    case StoreKind::kProviders: return "providers";
  }
  return "?";
}

Status sqliteStatus(int rc, sqlite3* db, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  const int primary = rc & 0xff;
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) {
    msg += sqlite3_errmsg(db);
  } else {
    msg += sqlite3_errstr(rc);
  }
  msg += " (sqlite " + std::to_string(rc) + ")";
  switch (primary) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return Status::internal("sqliteStatus called with a success code: " + msg);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
      return Status::corruption(std::move(msg));
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_PROTOCOL:
    case SQLITE_NOLFS:
    case SQLITE_AUTH:
      return Status::ioError(std::move(msg));
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::busy(std::move(msg));
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return Status::invalidArgument(std::move(msg));
    case SQLITE_INTERRUPT:
    case SQLITE_ABORT:
      return Status::aborted(std::move(msg));
    case SQLITE_NOTFOUND:  // an unknown file-control opcode: our bug
    case SQLITE_NOMEM:
    case SQLITE_MISUSE:
    case SQLITE_SCHEMA:
    case SQLITE_INTERNAL:
    case SQLITE_ERROR:
    default:
      return Status::internal(std::move(msg));
  }
}

// ---------------------------------------------------------------------------
// Stmt

Stmt::~Stmt() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

#define LCC_SQLITE_BIND(call)                                                            \
  do {                                                                                   \
    int rc_ = (call);                                                                    \
    if (rc_ != SQLITE_OK && bind_error_.isOk()) bind_error_ = sqliteStatus(rc_, db_, "bind"); \
  } while (0)

void Stmt::bindInt(int i, std::int64_t v) { LCC_SQLITE_BIND(sqlite3_bind_int64(s_, i, v)); }
void Stmt::bindText(int i, std::string_view v) {
  LCC_SQLITE_BIND(sqlite3_bind_text64(s_, i, v.data() ? v.data() : "", v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}
void Stmt::bindBlob(int i, std::string_view v) {
  LCC_SQLITE_BIND(sqlite3_bind_blob64(s_, i, v.data() ? v.data() : "", v.size(), SQLITE_TRANSIENT));
}
void Stmt::bindTextRef(int i, std::string_view v) {
  LCC_SQLITE_BIND(sqlite3_bind_text64(s_, i, v.data() ? v.data() : "", v.size(), SQLITE_STATIC, SQLITE_UTF8));
}
void Stmt::bindBlobRef(int i, std::string_view v) {
  LCC_SQLITE_BIND(sqlite3_bind_blob64(s_, i, v.data() ? v.data() : "", v.size(), SQLITE_STATIC));
}
void Stmt::bindNull(int i) { LCC_SQLITE_BIND(sqlite3_bind_null(s_, i)); }
#undef LCC_SQLITE_BIND

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
  bind_error_ = Status::ok();
}

Result<bool> Stmt::step() {
  if (!bind_error_.isOk()) return bind_error_;
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return sqliteStatus(rc, db_, sqlite3_sql(s_));
}

Status Stmt::run() {
  for (;;) {
    LCC_ASSIGN_OR_RETURN(bool row, step());
    if (!row) return Status::ok();
  }
}

std::string Stmt::colText(int c) const {
  const int type = sqlite3_column_type(s_, c);
  if (type == SQLITE_BLOB) {
    const void* p = sqlite3_column_blob(s_, c);
    const int n = sqlite3_column_bytes(s_, c);
    return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
  }
  const unsigned char* p = sqlite3_column_text(s_, c);
  const int n = sqlite3_column_bytes(s_, c);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

// ---------------------------------------------------------------------------
// SqliteDb

namespace {

std::string resolvePath(const HostContext& host, const StoreOptions& opts, StoreKind kind) {
  std::string p = opts.path;
  if (p.empty()) p = std::string(storeKindName(kind)) + ".sqlite";
  if (p.front() != '/') p = host.data_dir + "/" + p;
  return p;
}

std::string parentDir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool nonEmptyFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

// The `-- @section <name>` part of schema.sql.
std::string schemaSection(std::string_view name) {
  std::string_view all = kSchemaSql;
  const std::string marker = "-- @section " + std::string(name) + "\n";
  auto start = all.find(marker);
  if (start == std::string_view::npos) return {};
  start += marker.size();
  auto end = all.find("-- @section ", start);
  return std::string(all.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

Result<sqlite3*> openHandle(const std::string& path, int flags, const StoreOptions& opts) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status s = sqliteStatus(rc, db, path + ": open");
    sqlite3_close_v2(db);
    return s;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, static_cast<int>(opts.busy_timeout_ms));
  return db;
}

}  // namespace

SqliteDb::SqliteDb(sqlite3* db, std::string path, bool full_sync)
    : db_(db), path_(std::move(path)), full_sync_(full_sync) {}

SqliteDb::~SqliteDb() { closeNow(); }

void SqliteDb::closeNow() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  cache_.clear();
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Result<std::unique_ptr<Stmt>> SqliteDb::stmt(const char* sql) {
  if (db_ == nullptr) return Status::aborted(path_ + ": the store is closed");
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
    if (rc != SQLITE_OK) return sqliteStatus(rc, db_, path_ + ": prepare " + sql);
    it = cache_.emplace(sql, s).first;
  }
  return std::make_unique<Stmt>(it->second, db_);
}

Status SqliteDb::exec(const char* sql) {
  if (db_ == nullptr) return Status::aborted(path_ + ": the store is closed");
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return sqliteStatus(rc, db_, path_ + ": " + sql);
  return Status::ok();
}

Status SqliteDb::setSynchronous(bool full) {
  if (sync_is_full_ == full) return Status::ok();
  LCC_RETURN_IF_ERROR(exec(full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  sync_is_full_ = full;
  return Status::ok();
}

Status SqliteDb::begin(bool durable) {
  // The safety level cannot change inside a transaction: it is chosen here.
  LCC_RETURN_IF_ERROR(setSynchronous(durable || full_sync_));
  return exec("BEGIN IMMEDIATE");
}

Status SqliteDb::commit() {
  LCC_RETURN_IF_ERROR(exec("COMMIT"));
  // A FULL commit syncs the WAL, and with it every frame written before it.
  unsynced_ = !sync_is_full_;
  return Status::ok();
}

void SqliteDb::rollback() {
  if (db_ != nullptr && sqlite3_get_autocommit(db_) == 0) {
    (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

Status SqliteDb::syncCommitted() {
  if (!unsynced_) return Status::ok();
  LCC_RETURN_IF_ERROR(begin(true));
  Status s = [&]() -> Status {
    LCC_ASSIGN_OR_RETURN(auto st, stmt("UPDATE lcc_store SET value = value + 1 WHERE name = 'sync_count'"));
    return st->run();
  }();
  if (!s.isOk()) {
    rollback();
    return s;
  }
  return commit();
}

Status SqliteDb::closeClean() {
  if (db_ == nullptr) return Status::aborted(path_ + ": the store is closed");
  LCC_RETURN_IF_ERROR(begin(true));
  Status s = putCounter("clean_shutdown", 1);
  if (!s.isOk()) {
    rollback();
    return s;
  }
  LCC_RETURN_IF_ERROR(commit());
  // Fold the WAL into the database file and empty it; a failure here loses nothing
  // (the WAL is synced) and the next open replays it.
  (void)sqlite3_exec(db_, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  for (auto& [sql, st] : cache_) sqlite3_finalize(st);
  cache_.clear();
  int rc = sqlite3_close_v2(db_);
  db_ = nullptr;
  if (rc != SQLITE_OK) return sqliteStatus(rc, nullptr, path_ + ": close");
  return Status::ok();
}

Result<std::int64_t> SqliteDb::getCounter(const char* name) {
  LCC_ASSIGN_OR_RETURN(auto st, stmt("SELECT value FROM lcc_store WHERE name = ?1"));
  st->bindText(1, name);
  LCC_ASSIGN_OR_RETURN(bool row, st->step());
  if (!row) return Status::corruption(path_ + ": lcc_store has no '" + std::string(name) + "' row");
  if (st->type(0) != SQLITE_INTEGER) {
    return Status::corruption(path_ + ": lcc_store '" + std::string(name) + "' is not an integer");
  }
  return st->colInt(0);
}

Status SqliteDb::putCounter(const char* name, std::int64_t value) {
  LCC_ASSIGN_OR_RETURN(auto st, stmt("INSERT INTO lcc_store(name, value) VALUES(?1, ?2) "
                                     "ON CONFLICT(name) DO UPDATE SET value = excluded.value"));
  st->bindText(1, name);
  st->bindInt(2, value);
  return st->run();
}

Result<std::optional<std::string>> SqliteDb::getMeta(std::string_view key) {
  LCC_ASSIGN_OR_RETURN(auto st, stmt("SELECT value FROM meta WHERE key = ?1"));
  st->bindBlob(1, key);
  LCC_ASSIGN_OR_RETURN(bool row, st->step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(st->colText(0));
}

Status SqliteDb::putMeta(std::string_view key, std::string_view value) {
  LCC_ASSIGN_OR_RETURN(auto st, stmt("INSERT INTO meta(key, value) VALUES(?1, ?2) "
                                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value"));
  st->bindBlob(1, key);
  st->bindBlob(2, value);
  return st->run();
}

Status SqliteDb::pragmas(const StoreOptions& opts) {
  {
    // journal_mode answers with the mode now in force.
    LCC_ASSIGN_OR_RETURN(auto st, stmt("PRAGMA journal_mode=WAL"));
    LCC_ASSIGN_OR_RETURN(bool row, st->step());
    std::string mode = row ? st->colText(0) : std::string();
    if (mode != "wal") return Status::ioError(path_ + ": cannot switch to WAL mode (got '" + mode + "')");
  }
  sync_is_full_ = !full_sync_;  // force the first setSynchronous to run
  LCC_RETURN_IF_ERROR(setSynchronous(full_sync_));
  const std::string pragmas = "PRAGMA cache_size=-" + std::to_string(opts.cache_bytes / 1024) +
                              "; PRAGMA journal_size_limit=" + std::to_string(opts.journal_size_limit) +
                              "; PRAGMA wal_autocheckpoint=" + std::to_string(opts.autocheckpoint_pages) +
                              "; PRAGMA temp_store=MEMORY; PRAGMA foreign_keys=OFF";
  // Numbers from the validated option table, not data.
  return exec(pragmas.c_str());
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::openWriter(const HostContext& host, const StoreOptions& opts,
                                                       StoreKind kind, StoreOpenInfo* info) {
  const std::string path = resolvePath(host, opts, kind);
  const std::string dir = parentDir(path);
  const std::string kind_name(storeKindName(kind));
  if (host.env != nullptr) {
    LCC_RETURN_IF_ERROR(host.env->createDirs(dir).withContext(path));
  } else {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
  }
  const bool existed = nonEmptyFile(path);

  LCC_ASSIGN_OR_RETURN(sqlite3 * handle, openHandle(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, opts));
  std::unique_ptr<SqliteDb> db(new SqliteDb(handle, path, opts.full_sync));

  *info = StoreOpenInfo{};
  info->engine = kEngineName;
  info->persistent = true;

  // Identity: is this a file of ours, for this store, in a format we read?
  bool fresh = !existed;
  if (existed) {
    bool has_store = false, has_any = false;
    Status listed = [&]() -> Status {
      LCC_ASSIGN_OR_RETURN(auto st, db->stmt("SELECT name FROM sqlite_schema WHERE type = 'table'"));
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) return Status::ok();
        has_any = true;
        if (st->colText(0) == "lcc_store") has_store = true;
      }
    }();
    if (listed.isCorruption()) {
      return Status::corruption(path + ": not an SQLite database (" + listed.message() +
                                "); is it another engine's file? Point options.path elsewhere or move it away");
    }
    LCC_RETURN_IF_ERROR(listed);
    if (!has_store && has_any) {
      return Status::invalidArgument(path + ": an SQLite database that storage-sqlite did not make (no lcc_store "
                                     "table); point options.path elsewhere or move the file away");
    }
    fresh = !has_store;
  }

  if (!fresh) {
    auto text = [&](const char* name) -> Result<std::string> {
      LCC_ASSIGN_OR_RETURN(auto st, db->stmt("SELECT value FROM lcc_store WHERE name = ?1"));
      st->bindText(1, name);
      LCC_ASSIGN_OR_RETURN(bool row, st->step());
      if (!row) return std::string();
      return st->colText(0);
    };
    LCC_ASSIGN_OR_RETURN(std::string plugin, text("plugin"));
    LCC_ASSIGN_OR_RETURN(std::string store, text("store"));
    LCC_ASSIGN_OR_RETURN(std::string format, text("format"));
    if (plugin != kPluginName) {
      return Status::invalidArgument(path + ": made by '" + plugin + "', not by " + kPluginName +
                                     "; point options.path elsewhere or move the file away");
    }
    if (store != kind_name) {
      return Status::invalidArgument(path + ": holds the " + store + " store, not the " + kind_name +
                                     " store; check storage." + kind_name + " options.path");
    }
    if (format != std::to_string(kFormatVersion)) {
      return Status::invalidArgument(path + ": format " + format + ", this " + kPluginName + " reads format " +
                                     std::to_string(kFormatVersion) + " only; use the matching lcc version");
    }
  }

  LCC_RETURN_IF_ERROR(db->pragmas(opts));

  if (fresh) {
    LCC_RETURN_IF_ERROR(db->begin(true));
    Status s = [&]() -> Status {
      const std::string ddl = schemaSection("common") + schemaSection(kind_name);
      LCC_RETURN_IF_ERROR(db->exec(ddl.c_str()));
      LCC_ASSIGN_OR_RETURN(auto st, db->stmt("INSERT INTO lcc_store(name, value) VALUES(?1, ?2)"));
      auto put = [&](const char* name, std::string_view v) -> Status {
        st->bindText(1, name);
        st->bindText(2, v);
        Status r = st->run();
        st->reset();
        return r;
      };
      LCC_RETURN_IF_ERROR(put("plugin", kPluginName));
      LCC_RETURN_IF_ERROR(put("store", kind_name));
      LCC_RETURN_IF_ERROR(put("format", std::to_string(kFormatVersion)));
      st.reset();
      for (const char* c : {"clean_shutdown", "rows", "max_seq", "sync_count"}) {
        LCC_RETURN_IF_ERROR(db->putCounter(c, 0));
      }
      return Status::ok();
    }();
    if (!s.isOk()) {
      db->rollback();
      return s.withContext(path + ": creating the schema");
    }
    LCC_RETURN_IF_ERROR(db->commit());
    info->created = true;
    info->clean_shutdown = true;
  } else {
    LCC_ASSIGN_OR_RETURN(std::int64_t clean, db->getCounter("clean_shutdown"));
    info->clean_shutdown = clean == 1;
    if (!info->clean_shutdown && opts.check_after_crash) {
      LCC_ASSIGN_OR_RETURN(auto st, db->stmt("PRAGMA quick_check(8)"));
      std::string problems;
      for (;;) {
        LCC_ASSIGN_OR_RETURN(bool row, st->step());
        if (!row) break;
        std::string line = st->colText(0);
        if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
      }
      if (!problems.empty()) {
        return Status::corruption(path + ": PRAGMA quick_check after an unclean shutdown failed: " + problems +
                                  "; move the file away to start empty (providers are then asked for full sets)");
      }
    }
    LCC_RETURN_IF_ERROR(db->begin(true));
    Status s = db->putCounter("clean_shutdown", 0);
    if (!s.isOk()) {
      db->rollback();
      return s;
    }
    LCC_RETURN_IF_ERROR(db->commit());
  }
  // The file and its WAL may be new names in `dir`.
  if (host.env != nullptr) LCC_RETURN_IF_ERROR(host.env->syncDir(dir).withContext(path));
  return db;
}

Result<std::unique_ptr<SqliteDb>> SqliteDb::openReader(const std::string& path, const StoreOptions& opts) {
  LCC_ASSIGN_OR_RETURN(sqlite3 * handle, openHandle(path, SQLITE_OPEN_READWRITE, opts));
  std::unique_ptr<SqliteDb> db(new SqliteDb(handle, path, opts.full_sync));
  // Readers mostly scan in seq or key order, where a big cache buys little: a quarter
  // of the writer's, at least 1 MiB, so max_readers connections stay cheap.
  const std::int64_t cache_kib = std::max<std::int64_t>(1024, opts.cache_bytes / 4 / 1024);
  const std::string pragmas = "PRAGMA query_only=1; PRAGMA cache_size=-" + std::to_string(cache_kib);
  LCC_RETURN_IF_ERROR(db->exec(pragmas.c_str()));
  return db;
}

}  // namespace lcc::plugins::sqlite
