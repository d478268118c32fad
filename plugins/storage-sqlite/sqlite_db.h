// sqlite_db.h — one SQLite connection with its statement cache, the store identity
// checks and the clean-shutdown flag. Shared by the three stores of storage-sqlite.
//
// THREADS: a SqliteDb (a connection, opened SQLITE_OPEN_NOMUTEX) is used by one thread
// at a time; each store says how it guarantees that (README.md "Threads").
// ERRORS: every SQLite result code becomes an lcc::Status in sqliteStatus(), and only
// there.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/host.h"
#include "lcc/status.h"
#include "lcc/store_common.h"
#include "store_options.h"

namespace lcc::plugins::sqlite {

inline constexpr const char* kPluginName = "storage-sqlite";
inline constexpr const char* kEngineName = "sqlite";
// The layout of schema.sql. A file with another format is refused.
inline constexpr std::int64_t kFormatVersion = 1;

enum class StoreKind { kQueue, kContent, kProviders };
std::string_view storeKindName(StoreKind kind);  // "queue", "content", "providers"

// The one mapping from an SQLite result code to an lcc::Status. `db` (may be null)
// supplies the detailed message; `what` says what was being done.
Status sqliteStatus(int rc, sqlite3* db, std::string_view what);

// A prepared statement from a SqliteDb's cache. Using it through a Stmt resets it and
// clears its bindings when the Stmt goes out of scope. Every value is bound, never
// pasted into SQL text.
class Stmt {
 public:
  Stmt(sqlite3_stmt* s, sqlite3* db) : s_(s), db_(db) {}
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Binding (1-based indexes). u64 values are stored as their two's-complement i64.
  void bindInt(int i, std::int64_t v);
  void bindU64(int i, std::uint64_t v) { bindInt(i, static_cast<std::int64_t>(v)); }
  void bindText(int i, std::string_view v);
  void bindBlob(int i, std::string_view v);
  void bindNull(int i);
  // As bindText/bindBlob without a copy: `v` must stay valid until this Stmt is
  // destroyed or reset (the hot paths bind fields of the batch being applied).
  void bindTextRef(int i, std::string_view v);
  void bindBlobRef(int i, std::string_view v);
  void bindOptTextRef(int i, const std::optional<std::string>& v) { v ? bindTextRef(i, *v) : bindNull(i); }
  void bindOptInt(int i, const std::optional<std::int64_t>& v) { v ? bindInt(i, *v) : bindNull(i); }
  void bindOptU64(int i, const std::optional<std::uint64_t>& v) { v ? bindU64(i, *v) : bindNull(i); }
  void bindOptText(int i, const std::optional<std::string>& v) { v ? bindText(i, *v) : bindNull(i); }

  // Resets the statement for another run with new bindings.
  void reset();
  // Steps once: Result true when a row is ready, false when done.
  Result<bool> step();
  // Steps to the end (statements returning no rows).
  Status run();

  // Columns (0-based).
  bool isNull(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  int type(int c) const { return sqlite3_column_type(s_, c); }
  std::int64_t colInt(int c) const { return sqlite3_column_int64(s_, c); }
  std::uint64_t colU64(int c) const { return static_cast<std::uint64_t>(sqlite3_column_int64(s_, c)); }
  std::string colText(int c) const;  // TEXT or BLOB bytes, exactly
  std::optional<std::int64_t> colOptInt(int c) const {
    return isNull(c) ? std::nullopt : std::optional<std::int64_t>(colInt(c));
  }
  std::optional<std::string> colOptText(int c) const {
    return isNull(c) ? std::nullopt : std::optional<std::string>(colText(c));
  }

 private:
  sqlite3_stmt* s_;
  sqlite3* db_;
  Status bind_error_;
};

// What open() found.
struct OpenedFile {
  StoreOpenInfo info;
  std::string path;
};

class SqliteDb {
 public:
  ~SqliteDb();
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  // Opens (creating when absent) the writer connection of a store file: checks the
  // identity row (plugin, store, format), creates the schema when new, applies the
  // pragmas, reports the previous clean-shutdown flag in `info` and durably clears it.
  static Result<std::unique_ptr<SqliteDb>> openWriter(const HostContext& host, const StoreOptions& opts,
                                                      StoreKind kind, StoreOpenInfo* info);
  // Opens a read-only connection (query_only) to a file a writer already opened.
  static Result<std::unique_ptr<SqliteDb>> openReader(const std::string& path, const StoreOptions& opts);

  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

  // A statement from the cache, prepared on first use. `sql` is a constant.
  Result<std::unique_ptr<Stmt>> stmt(const char* sql);
  // Runs SQL without parameters (pragmas, BEGIN/COMMIT).
  Status exec(const char* sql);
  Status setSynchronous(bool full);

  // Transactions. begin(durable): when durable (or option synchronous=full), the
  // commit syncs the WAL (synchronous=FULL for that transaction), and with it every
  // commit before it. The safety level cannot change inside a transaction, so it is
  // chosen at begin().
  Status begin(bool durable);
  Status commit();
  void rollback();  // best effort; used after a failure

  // Makes every commit so far durable: one small FULL commit (bumps sync_count).
  Status syncCommitted();
  // Durably records a clean shutdown, truncates the WAL and closes the connection.
  Status closeClean();
  // Closes without marking clean (after a failure).
  void closeNow();

  // lcc_store counters (rows, max_seq) — read at open, written inside apply().
  Result<std::int64_t> getCounter(const char* name);
  Status putCounter(const char* name, std::int64_t value);

  Result<std::optional<std::string>> getMeta(std::string_view key);
  Status putMeta(std::string_view key, std::string_view value);

  bool fullSync() const { return full_sync_; }

 private:
  SqliteDb(sqlite3* db, std::string path, bool full_sync);
  Status pragmas(const StoreOptions& opts);

  sqlite3* db_;
  std::string path_;
  bool full_sync_;                  // synchronous=FULL on every commit (option)
  bool sync_is_full_ = false;       // current PRAGMA synchronous
  bool unsynced_ = false;           // a NORMAL commit happened since the last synced one
  std::map<const char*, sqlite3_stmt*> cache_;
};

}  // namespace lcc::plugins::sqlite
