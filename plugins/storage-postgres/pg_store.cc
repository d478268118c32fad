#include "pg_store.h"

#include <cstdio>
#include <cstdlib>
#include <random>

#include "schema_sql.h"

namespace lcc::plugins::postgres {
namespace {

// One lock for "create or check a schema", on every database of the server: opens are
// rare, and CREATE ... IF NOT EXISTS is not safe against a concurrent create.
constexpr const char* kCreateLock = "SELECT pg_advisory_xact_lock(7633261757)";

// Format 1 had no 'rows' counter (the content store counted at open, in memory);
// format 2 keeps it in lcc_store, written in every apply's transaction.
Status upgradeFrom1(PgConn& c, StoreKind kind) {
  if (kind == StoreKind::kContent) {
    LCC_RETURN_IF_ERROR(c.run("INSERT INTO lcc_store (store, name, value) SELECT 'content', 'rows', count(*)::text "
                              "FROM lcc ON CONFLICT (store, name) DO NOTHING", PgParams()).status());
  }
  return c.run("UPDATE lcc_store SET value = $2 WHERE store = $1 AND name = 'format'",
               PgParams().text(storeName(kind)).text(std::to_string(kFormatVersion)))
      .status();
}

// Checks plugin and format; `writer`: creates the identity rows of a new store,
// upgrades format 1 and clears the clean-shutdown flag (a reader changes nothing).
Status checkIdentity(PgConn& c, StoreKind kind, bool writer, StoreOpenInfo* info) {
  LCC_ASSIGN_OR_RETURN(PgResult rows, c.run("SELECT name, value FROM lcc_store WHERE store = $1 AND "
                                            "name IN ('plugin', 'format', 'clean_shutdown')",
                                            PgParams().text(storeName(kind))));
  const std::string where = c.what() + ": table lcc_store";
  if (rows.rows() == 0) {
    if (!writer) return Status::notFound(where + ": no " + std::string(storeName(kind)) + " store in this schema yet");
    info->created = true;
    info->clean_shutdown = true;
    const char* sql =
        "INSERT INTO lcc_store (store, name, value) VALUES ($1, 'plugin', $2), ($1, 'format', $3), "
        "($1, 'clean_shutdown', '0'), ($1, 'max_seq', '0'), ($1, 'rows', '0'), ($1, 'sync_count', '0')";
    auto r = c.run(sql, PgParams().text(storeName(kind)).text(kPluginName).text(std::to_string(kFormatVersion)));
    return r.status();
  }
  std::string plugin, format, clean;
  for (int i = 0; i < rows.rows(); ++i) {
    const std::string name = rows.bytes(i, 0), value = rows.bytes(i, 1);
    (name == "plugin" ? plugin : name == "format" ? format : clean) = value;
  }
  if (plugin != kPluginName) {
    return Status::invalidArgument(where + ": the " + storeName(kind) + " store was made by '" + plugin +
                                   "', not by storage-postgres");
  }
  const bool old = format == "1";
  if (format != std::to_string(kFormatVersion) && !old) {
    return Status::notSupported(where + ": format " + format + ", this storage-postgres reads format " +
                                std::to_string(kFormatVersion) + " (and upgrades format 1) only");
  }
  info->created = false;
  info->clean_shutdown = clean == "1";
  if (!writer) {
    if (old) return Status::notSupported(where + ": format 1: open it once with a writer to upgrade it");
    return Status::ok();
  }
  if (old) LCC_RETURN_IF_ERROR(upgradeFrom1(c, kind));
  return c.run("UPDATE lcc_store SET value = '0' WHERE store = $1 AND name = 'clean_shutdown'",
               PgParams().text(storeName(kind)))
      .status();
}

}  // namespace

const char* storeName(StoreKind kind) {
  switch (kind) {
    case StoreKind::kQueue: return "queue";
    case StoreKind::kContent: return "content";
    case StoreKind::kProviders: return "providers";
  }
  return "?";
}

Result<std::unique_ptr<PgConn>> connectStore(const StoreOptions& opts, StoreKind kind) {
  return PgConn::connect(opts.conninfo, opts.schema, opts.connect_timeout_ms, !opts.read_only && !opts.probe,
                         std::string(kPluginName) + ": " + storeName(kind) + " store (schema " + opts.schema + ")");
}

Result<std::unique_ptr<PgConn>> openStore(const StoreOptions& opts, StoreKind kind, StoreOpenInfo* info) {
  LCC_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> c, connectStore(opts, kind));
  info->engine = "postgres";
  info->persistent = true;
  info->remote = true;
  info->may_have_lost_synced = false;
  if (opts.read_only || opts.probe) {
    // A reader (maybe on a standby, where nothing can be written) checks only. So does
    // lccd --check: the server answers and what it holds is ours, or nothing yet (the
    // first writer's start makes it); a running lccd may share this store.
    // As text: results come in binary, where a bool is one byte 0x01, not "t".
    LCC_ASSIGN_OR_RETURN(PgResult t, c->run("SELECT (to_regclass('lcc_store') IS NOT NULL)::text", PgParams()));
    if (t.bytes(0, 0) != "true") {
      if (opts.probe) return c;
      return Status::notFound(c->what() + ": holds no LCC store yet; a read_only store reads what a writer made "
                              "(start the lccd that writes this schema first)");
    }
    Status s = checkIdentity(*c, kind, false, info);
    if (!s.isOk() && !(opts.probe && s.code() == StatusCode::kNotFound)) return s;
    return c;
  }
  LCC_RETURN_IF_ERROR(c->begin(true));
  Status s = c->exec(kCreateLock);
  if (s.isOk()) s = c->exec("CREATE SCHEMA IF NOT EXISTS " + quoteIdent(opts.schema));
  if (s.isOk()) s = c->exec(kSchemaSql).withContext("creating the tables");
  if (s.isOk()) s = checkIdentity(*c, kind, true, info);
  if (!s.isOk()) {
    c->rollback();
    return s;
  }
  LCC_RETURN_IF_ERROR(c->commit());
  return c;
}

Result<std::int64_t> readCounter(PgConn& conn, StoreKind kind, const char* name) {
  LCC_ASSIGN_OR_RETURN(PgResult r, conn.run("SELECT value FROM lcc_store WHERE store = $1 AND name = $2",
                                            PgParams().text(storeName(kind)).text(name)));
  if (r.rows() != 1) return Status::corruption(conn.what() + ": lcc_store has no '" + name + "' row");
  const std::string v = r.bytes(0, 0);
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end == nullptr || *end != '\0') {
    return Status::corruption(conn.what() + ": lcc_store '" + name + "' is not a number: " + v);
  }
  return static_cast<std::int64_t>(n);
}

Status writeCounter(PgConn& conn, StoreKind kind, const char* name, std::int64_t value) {
  return conn.run("UPDATE lcc_store SET value = $3 WHERE store = $1 AND name = $2",
                  PgParams().text(storeName(kind)).text(name).text(std::to_string(value)))
      .status();
}

// One statement in a transaction whose COMMIT waits for the WAL flush: the statement
// and COMMIT in one round trip after BEGIN's.
static Status runDurably(PgConn& conn, const char* sql, StoreKind kind) {
  LCC_RETURN_IF_ERROR(conn.begin(true));
  Status s = conn.runAndCommit({PgStep{sql, PgParams().text(storeName(kind))}});
  if (!s.isOk()) conn.rollback();
  return s;
}

UnsyncedCommits::UnsyncedCommits(StoreKind kind) : kind_(kind) {
  std::random_device rd;
  const std::uint64_t id = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  char buf[24];
  std::snprintf(buf, sizeof buf, "commit_%016llx", static_cast<unsigned long long>(id));
  name_ = buf;
}

PgStep UnsyncedCommits::stampStep() {
  ++next_;
  return PgStep{"INSERT INTO lcc_store (store, name, value) VALUES ($1, $2, $3) "
                "ON CONFLICT (store, name) DO UPDATE SET value = EXCLUDED.value",
                PgParams().text(storeName(kind_)).text(name_).text(std::to_string(next_))};
}


Status UnsyncedCommits::check(PgConn& c) {
  if (c.reconnects() == seen_) return Status::ok();
  if (pending_) {
    LCC_ASSIGN_OR_RETURN(PgResult r, c.run("SELECT value FROM lcc_store WHERE store = $1 AND name = $2",
                                           PgParams().text(storeName(kind_)).text(name_)));
    const std::int64_t there = r.rows() == 1 ? std::strtoll(r.bytes(0, 0).c_str(), nullptr, 10) : 0;
    if (there < acked_) {
      return Status::ioError(c.what() + ": commits not yet flushed (synchronous: normal) were lost with the "
                             "connection (a server crash or a failover before sync()): the server has apply " +
                             std::to_string(there) + " of " + std::to_string(acked_) + " of this process");
    }
  }
  seen_ = c.reconnects();
  return Status::ok();
}

Status UnsyncedCommits::afterApply(PgConn& c, bool waited, const char* what, Status& failed) {
  Status kept = check(c);
  if (kept.isBusy()) return kept.withContext(std::string(what) + " apply (committed; applying it again is safe)");
  if (!kept.isOk()) {
    failed = kept.withContext(std::string(what) + " is now read-only until restart");
    return failed;
  }
  if (!waited) committed();
  return Status::ok();
}

Status UnsyncedCommits::forget(PgConn& c) {
  return c.run("DELETE FROM lcc_store WHERE store = $1 AND name = $2",
               PgParams().text(storeName(kind_)).text(name_))
      .status();
}

Status syncCommitted(PgConn& conn, StoreKind kind) {
  static constexpr const char* kBump =
      "UPDATE lcc_store SET value = (value::bigint + 1)::text WHERE store = $1 AND name = 'sync_count'";
  if (conn.hasAfterBegin()) return runDurably(conn, kBump, kind);  // the QM lease's check goes in its transaction
  // Without it, one statement in a transaction of its own (the session's
  // synchronous_commit is on: it waits for the flush): one round trip. Running it
  // again after a lost connection is harmless (a counter nobody reads back).
  return conn.run(kBump, PgParams().text(storeName(kind))).status();
}

Status markClean(PgConn& conn, StoreKind kind) {
  return runDurably(conn, "UPDATE lcc_store SET value = '1' WHERE store = $1 AND name = 'clean_shutdown'", kind);
}

}  // namespace lcc::plugins::postgres
