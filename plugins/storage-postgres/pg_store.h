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
// commit that did not wait.
Status syncCommitted(PgConn& conn, StoreKind kind);

// Durably records clean_shutdown = 1.
Status markClean(PgConn& conn, StoreKind kind);

}  // namespace lcc::plugins::postgres
