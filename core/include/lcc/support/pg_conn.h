// lcc/support/pg_conn.h — one libpq connection: prepared statements with binary
// parameters and results, transactions, reconnecting, errors as lcc::Status. Used by
// storage-postgres (its three stores) and the front end's PMDB/FEDB (core/front); built
// as lcc_support_pg (core/support/CMakeLists.txt) only when libpq is found.
//
// Every value crosses in binary: integers as int8 (8 bytes, big-endian), strings and
// keys as bytea or text (their raw bytes), so nothing is escaped and no SQL text is
// built from data. Integer columns are BIGINT throughout (schema.sql).
// THREADS: a PgConn is used by one thread at a time (the stores lock or pool them).
// RECONNECT: a statement that fails because the connection is gone, outside a
// transaction, reconnects (PQreset, which walks a multi-host conninfo again) and runs
// once more; inside a transaction the failure is returned as Busy (the server rolled
// the transaction back) and the next call outside one reconnects. A connection that
// cannot be made again, a server shutting down or starting (57P01-57P03), too many
// connections (53300) and a writer that finds itself on a read-only server (25006,
// after a failover) are Busy too: "try again later", never a broken store.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lcc/status.h"

namespace lcc::pg {

// Parameters of one statement run; their types (OIDs) are fixed when the statement
// is prepared, on its first run on a connection.
class PgParams {
 public:
  PgParams& i64(std::int64_t v);
  PgParams& u64(std::uint64_t v) { return i64(static_cast<std::int64_t>(v)); }  // two's complement
  PgParams& bytes(std::string_view v);  // bytea
  PgParams& text(std::string_view v);   // text (ASCII names only: store, counter names)
  PgParams& optI64(const std::optional<std::int64_t>& v) { return v ? i64(*v) : null(kInt8); }
  PgParams& optU64(const std::optional<std::uint64_t>& v) { return v ? u64(*v) : null(kInt8); }
  PgParams& optBytes(const std::optional<std::string>& v) { return v ? bytes(*v) : null(kBytea); }
  // One-dimensional arrays (bytea[], int8[]) in binary, for multi-row statements
  // (`unnest($1, $2, ...)`); a nullopt element is NULL.
  PgParams& bytesArray(const std::vector<std::optional<std::string>>& v);
  PgParams& i64Array(const std::vector<std::optional<std::int64_t>>& v);

  int size() const { return static_cast<int>(oids_.size()); }
  const Oid* oids() const { return oids_.data(); }
  std::vector<const char*> values() const;
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }

  static constexpr Oid kBytea = 17, kInt8 = 20, kText = 25, kByteaArray = 1001, kInt8Array = 1016;

 private:
  PgParams& null(Oid oid);
  PgParams& add(Oid oid, std::string bytes, bool is_null);
  std::vector<Oid> oids_;
  std::vector<std::string> data_;
  std::vector<bool> nulls_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
};

// One statement of a pipeline (PgConn::runAndCommit): `sql` a constant, as for run().
struct PgStep {
  const char* sql;
  PgParams params;
};

// A statement's rows (binary). Owns the PGresult.
class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r) {}
  PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  PgResult& operator=(PgResult&& o) noexcept;
  ~PgResult();

  PGresult* raw() const { return r_; }
  int rows() const { return PQntuples(r_); }
  std::int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched
  bool isNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
  std::int64_t i64(int row, int col) const;  // 0 when the value is not 8 bytes
  std::uint64_t u64(int row, int col) const { return static_cast<std::uint64_t>(i64(row, col)); }
  std::string bytes(int row, int col) const;
  std::optional<std::int64_t> optI64(int row, int col) const {
    return isNull(row, col) ? std::nullopt : std::optional<std::int64_t>(i64(row, col));
  }
  std::optional<std::string> optBytes(int row, int col) const {
    return isNull(row, col) ? std::nullopt : std::optional<std::string>(bytes(row, col));
  }
  // Rows by the bytes of column `col` (a key): which row answers which key of a
  // `WHERE key = ANY($1)` read, whatever order the server returned them in.
  std::unordered_map<std::string, int> rowsBy(int col) const;

 private:
  PGresult* r_;
};

class PgConn {
 public:
  // Connects with `conninfo` (a libpq connection string or URI), sets the session's
  // search_path to `schema` (validated by the options) and synchronous_commit on.
  // `what` starts every error message ("storage-postgres: queue store (schema lcc)").
  // `read_write`: unless the conninfo says otherwise, libpq's target_session_attrs is
  // read-write, so a multi-host conninfo ("host=db1,db2") finds the primary.
  static Result<std::unique_ptr<PgConn>> connect(const std::string& conninfo, const std::string& schema,
                                                 std::int64_t connect_timeout_ms, bool read_write, std::string what);
  ~PgConn();
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Runs `sql` (a constant: statements are cached by its address) as a prepared
  // statement with binary parameters and results.
  Result<PgResult> run(const char* sql, const PgParams& params);
  // Runs SQL without parameters (may hold several statements).
  Status exec(const std::string& sql);

  // BEGIN; when !durable, the commit does not wait for the WAL flush
  // (SET LOCAL synchronous_commit TO off). commit() returns once the server committed.
  Status begin(bool durable);
  // begin(durable), then `copy_sql` (a `COPY … FROM STDIN (FORMAT binary)`) fed with
  // `data` (storage-postgres's pg_copy.h), then the after-begin hook: the transaction
  // stays open for runAndCommit(). Two round trips (BEGIN and the COPY command go
  // together) plus the hook's. A failed COPY (e.g. a row that exists: SQLSTATE 23505,
  // lastSqlState()) leaves the transaction failed: the caller rolls back.
  Status beginCopy(bool durable, const char* copy_sql, const std::string& data);
  Status commit();
  // Runs `steps` in order and then COMMIT, inside the transaction begin() opened, in
  // one round trip (libpq pipeline mode; a statement not prepared on this connection
  // yet is prepared in the same pipeline). The server skips what follows a failed
  // statement: the first error is returned and the caller rolls back, as after run().
  // OK once the server committed; results (rows) are not kept.
  Status runAndCommit(const std::vector<PgStep>& steps);
  void rollback();  // best effort
  // Runs inside every transaction begin() opens, first (the QM lease's fencing check,
  // pg_lease.h); its error rolls the transaction back and is begin()'s.
  void setAfterBegin(std::function<Status(PgConn&)> hook) { after_begin_ = std::move(hook); }
  bool hasAfterBegin() const { return static_cast<bool>(after_begin_); }
  bool inTransaction() const { return in_tx_; }
  // How many times this connection was made again after a loss.
  std::uint64_t reconnects() const { return reconnects_; }
  const std::string& what() const { return what_; }
  // The SQLSTATE of the last server error this connection returned ("" if none yet).
  const std::string& lastSqlState() const { return last_sqlstate_; }
  bool lost() const { return broken_ || PQstatus(c_) == CONNECTION_BAD; }

 private:
  PgConn(PGconn* c, std::string schema, std::string what) : c_(c), schema_(std::move(schema)), what_(std::move(what)) {}
  Status setupSession();
  Status reconnect();
  Result<PgResult> runOnce(const char* sql, const PgParams& params);
  // runAndCommit's halves: send every statement and the sync; read every result.
  Status sendPipeline(const std::vector<PgStep>& steps, std::vector<std::string>* names, int* expected);
  Status readPipeline(const std::vector<PgStep>& steps, const std::vector<std::string>& names, int expected);
  Status resultStatus(PGresult* r, const char* doing);
  Status copyData(const std::string& data);

  PGconn* c_;
  std::string schema_;
  std::string what_;
  bool in_tx_ = false;
  bool broken_ = false;
  std::uint64_t reconnects_ = 0;  // reconnect before the next statement (a read-only server, 25006)
  std::map<const char*, std::string> prepared_;  // sql address → statement name
  std::uint64_t pipeline_names_ = 0;             // statements prepared in pipelines: lcc_p<n>
  std::function<Status(PgConn&)> after_begin_;
  std::string last_sqlstate_;
};

// Maps a server error (SQLSTATE) to a StatusCode: 23xxx/22xxx → InvalidArgument;
// 08xxx, 57P01-57P03, 53300 and 25006 → Busy (try later: the connection is gone or
// the server is not the primary now); 53xxx/58xxx → IOError; XX001/XX002 →
// Corruption; 40xxx/57014 → Aborted; else Internal.
Status statusFromSqlState(const char* sqlstate, std::string message);

// Quotes an identifier the options validated ([a-z_][a-z0-9_]*): "name".
std::string quoteIdent(const std::string& name);

}  // namespace lcc::pg
