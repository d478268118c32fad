// pg_store.h — what the three stores of storage-postgres share: opening a store in
// its schema (tables, identity rows, the clean-shutdown flag), marking it clean, and
// the group-commit bookkeeping of sync().
#pragma once

#include <memory>
#include <string>

#include "lcc/store_common.h"
#include "pg_conn.h"
#include "store_options.h"

namespace lcc::plugins::postgres {

inline constexpr const char* kPluginName = "storage-postgres";
inline constexpr int kFormatVersion = 2;  // 2: lcc_store 'rows' (content); 1 is upgraded at open

enum class StoreKind { kQueue, kContent, kProviders };
const char* storeName(StoreKind kind);  // "queue", "content", "providers"

// A new connection for `kind` (search_path = the schema). Errors start with
// "storage-postgres: <store> store (schema <s>)".
Result<std::unique_ptr<PgConn>> connectStore(const StoreOptions& opts, StoreKind kind);

// Connects and, in one transaction under an advisory lock: creates the schema and its
// tables when absent, checks this store's identity rows (plugin, format), reports the
// previous clean-shutdown flag in `info` and clears it. With opts.read_only: connects
// and checks the identity rows only (no writes: it may be a standby).
Result<std::unique_ptr<PgConn>> openStore(const StoreOptions& opts, StoreKind kind, StoreOpenInfo* info);

// lcc_store values of this store (numbers as decimal text).
Result<std::int64_t> readCounter(PgConn& conn, StoreKind kind, const char* name);
Status writeCounter(PgConn& conn, StoreKind kind, const char* name, std::int64_t value);

// Makes every commit so far durable: a small commit that waits for the WAL flush
// (bumps sync_count); PostgreSQL's WAL is sequential, so it covers every earlier
// commit that did not wait. One round trip (two, plus the check's, with a QM lease).
Status syncCommitted(PgConn& conn, StoreKind kind);

// The commits of a store that did not wait for the WAL flush (synchronous: normal)
// since its last sync(). A server crash or a failover may lose them. Each such apply
// also writes a counter of this store instance (lcc_store row `commit_<random>`) in
// its transaction; when the connection was made again since, check() reads it back:
// below the last acknowledged value means commits were lost. (A transaction id would
// not do: after a failover the new primary may give the same id to another one.)
class UnsyncedCommits {
 public:
  explicit UnsyncedCommits(StoreKind kind);
  bool pending() const { return pending_; }
  // In an apply's transaction that will not wait for the flush, before COMMIT: the
  // statement to pipeline with it (PgConn::runAndCommit).
  PgStep stampStep();
  // After that COMMIT returned.
  void committed() {
    pending_ = true;
    acked_ = next_;
  }
  // OK when no reconnect happened, nothing was pending, or the last acknowledged
  // stamp is on the server; IOError (to be made sticky) when it is not; Busy when
  // the server cannot be asked now.
  Status check(PgConn& c);
  // After an apply's COMMIT returned (`waited`: it waited for the flush, synchronous:
  // full): check(), then the commit counts as unsynced. Busy: the server cannot be
  // asked now (the batch committed; applying it again is safe). Another error means
  // commits were lost: it is made sticky in `failed` ("<what> is now read-only ...").
  Status afterApply(PgConn& c, bool waited, const char* what, Status& failed);
  void synced(const PgConn& c) {
    pending_ = false;
    seen_ = c.reconnects();
  }
  // Removes this instance's row (close()).
  Status forget(PgConn& c);

 private:
  StoreKind kind_;
  std::string name_;
  bool pending_ = false;
  std::int64_t next_ = 0;
  std::int64_t acked_ = 0;
  std::uint64_t seen_ = 0;
};

// Durably records clean_shutdown = 1.
Status markClean(PgConn& conn, StoreKind kind);

}  // namespace lcc::plugins::postgres
