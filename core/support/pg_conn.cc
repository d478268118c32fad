#include "lcc/support/pg_conn.h"

#include <algorithm>
#include <cstring>

namespace lcc::pg {
namespace {

std::string trimmed(const char* msg) {
  std::string s = msg == nullptr ? std::string() : std::string(msg);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& ch : s) {
    if (ch == '\n' || ch == '\t') ch = ' ';
  }
  return s;
}

std::string bigEndian(std::uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return out;
}

void appendI32(std::string* out, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  const char b[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
                     static_cast<char>(u)};
  out->append(b, 4);
}

// PostgreSQL's binary array format (array_send): ndim, has-nulls flag, element type,
// then per dimension (size, lower bound 1), then per element its length (-1 = NULL)
// and bytes. An empty array has no dimensions. `encode(element, scratch)` gives an
// element's bytes (a view of the element, or of the 8-byte scratch), copied once.
template <typename T, typename Enc>
std::string arrayBytes(const std::vector<std::optional<T>>& v, Oid element, Enc encode) {
  bool nulls = false;
  std::size_t bytes = 20 + 4 * v.size();
  char scratch[8];
  for (const auto& e : v) {
    nulls = nulls || !e;
    if (e) bytes += encode(*e, scratch).size();
  }
  std::string out;
  out.reserve(bytes);
  appendI32(&out, v.empty() ? 0 : 1);
  appendI32(&out, nulls ? 1 : 0);
  appendI32(&out, static_cast<std::int32_t>(element));
  if (!v.empty()) {
    appendI32(&out, static_cast<std::int32_t>(v.size()));
    appendI32(&out, 1);
  }
  for (const auto& e : v) {
    if (!e) {
      appendI32(&out, -1);
      continue;
    }
    const std::string_view b = encode(*e, scratch);
    appendI32(&out, static_cast<std::int32_t>(b.size()));
    out.append(b.data(), b.size());
  }
  return out;
}

}  // namespace

// --- PgParams ------------------------------------------------------------------------

PgParams& PgParams::add(Oid oid, std::string bytes, bool is_null) {
  oids_.push_back(oid);
  lengths_.push_back(static_cast<int>(bytes.size()));
  formats_.push_back(1);
  nulls_.push_back(is_null);
  data_.push_back(std::move(bytes));
  return *this;
}

PgParams& PgParams::i64(std::int64_t v) { return add(kInt8, bigEndian(static_cast<std::uint64_t>(v)), false); }
PgParams& PgParams::bytes(std::string_view v) { return add(kBytea, std::string(v), false); }
PgParams& PgParams::text(std::string_view v) { return add(kText, std::string(v), false); }
PgParams& PgParams::null(Oid oid) { return add(oid, std::string(), true); }

PgParams& PgParams::bytesArray(const std::vector<std::optional<std::string>>& v) {
  return add(kByteaArray, arrayBytes(v, kBytea, [](const std::string& b, char*) { return std::string_view(b); }),
             false);
}

PgParams& PgParams::i64Array(const std::vector<std::optional<std::int64_t>>& v) {
  return add(kInt8Array,
             arrayBytes(v, kInt8,
                        [](std::int64_t x, char* scratch) {
                          auto u = static_cast<std::uint64_t>(x);
                          for (int i = 7; i >= 0; --i, u >>= 8) scratch[i] = static_cast<char>(u & 0xff);
                          return std::string_view(scratch, 8);
                        }),
             false);
}

std::vector<const char*> PgParams::values() const {
  std::vector<const char*> out;
  out.reserve(data_.size());
  // A zero-length bytea must still be a non-null pointer (null pointer = SQL NULL).
  for (std::size_t i = 0; i < data_.size(); ++i) out.push_back(nulls_[i] ? nullptr : data_[i].data());
  return out;
}

// --- PgResult ------------------------------------------------------------------------

PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = o.r_;
    o.r_ = nullptr;
  }
  return *this;
}

PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}

std::int64_t PgResult::affected() const {
  const char* n = PQcmdTuples(r_);
  return (n == nullptr || *n == '\0') ? 0 : std::strtoll(n, nullptr, 10);
}

std::int64_t PgResult::i64(int row, int col) const {
  if (PQgetlength(r_, row, col) != 8) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col));
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<std::int64_t>(v);
}

std::string PgResult::bytes(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
}

std::unordered_map<std::string, int> PgResult::rowsBy(int col) const {
  std::unordered_map<std::string, int> out;
  for (int i = 0; i < rows(); ++i) out.emplace(bytes(i, col), i);
  return out;
}

// --- PgConn --------------------------------------------------------------------------

Status statusFromSqlState(const char* sqlstate, std::string message) {
  const std::string st = sqlstate == nullptr ? std::string() : std::string(sqlstate);
  if (!st.empty()) message += " (SQLSTATE " + st + ")";
  if (st.rfind("08", 0) == 0 || st == "57P01" || st == "57P02" || st == "57P03" || st == "53300" ||
      st == "25006") {
    return Status::busy(std::move(message) + "; try again later");
  }
  if (st.rfind("23", 0) == 0 || st.rfind("22", 0) == 0) return Status::invalidArgument(std::move(message));
  if (st == "XX001" || st == "XX002") return Status::corruption(std::move(message));
  if (st.rfind("40", 0) == 0 || st == "57014") return Status::aborted(std::move(message));
  if (st.empty() || st.rfind("08", 0) == 0 || st.rfind("53", 0) == 0 || st.rfind("58", 0) == 0 ||
      st.rfind("57P", 0) == 0) {
    return Status::ioError(std::move(message));
  }
  return Status::internal(std::move(message));
}

std::string quoteIdent(const std::string& name) { return "\"" + name + "\""; }

Result<std::unique_ptr<PgConn>> PgConn::connect(const std::string& conninfo, const std::string& schema,
                                                std::int64_t connect_timeout_ms, bool read_write, std::string what) {
  // dbname is expanded as a connection string / URI and comes last: what the user set
  // there overrides our defaults before it (application name, timeout, session attrs).
  const std::string timeout = std::to_string(std::max<std::int64_t>(1, (connect_timeout_ms + 999) / 1000));
  const char* keys[] = {"fallback_application_name", "connect_timeout", "target_session_attrs", "dbname", nullptr};
  const char* values[] = {"lccd storage-postgres", timeout.c_str(), read_write ? "read-write" : "any",
                          conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, 1);
  if (c == nullptr) return Status::ioError(what + ": libpq could not allocate a connection");
  if (PQstatus(c) != CONNECTION_OK) {
    Status s = Status::ioError(what + ": cannot connect: " + trimmed(PQerrorMessage(c)));
    PQfinish(c);
    return s;
  }
  std::unique_ptr<PgConn> conn(new PgConn(c, schema, std::move(what)));
  LCC_RETURN_IF_ERROR(conn->setupSession());
  return conn;
}

PgConn::~PgConn() { PQfinish(c_); }

Status PgConn::setupSession() {
  prepared_.clear();
  in_tx_ = false;
  return exec("SET search_path TO " + quoteIdent(schema_) + "; SET synchronous_commit TO on");
}

Status PgConn::reconnect() {
  // PQreset connects with the same conninfo: every host of a multi-host one is tried
  // again, in order, for one with the session attributes asked for.
  PQreset(c_);
  if (PQstatus(c_) != CONNECTION_OK) {
    return Status::busy(what_ + ": the connection was lost and reconnecting failed (try again later): " +
                        trimmed(PQerrorMessage(c_)));
  }
  broken_ = false;
  ++reconnects_;
  return setupSession();
}

Status PgConn::resultStatus(PGresult* r, const char* doing) {
  const ExecStatusType t = r == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(r);
  if (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK) return Status::ok();
  std::string msg = r == nullptr ? trimmed(PQerrorMessage(c_)) : trimmed(PQresultErrorMessage(r));
  if (msg.empty()) msg = trimmed(PQerrorMessage(c_));
  const char* state = r == nullptr ? nullptr : PQresultErrorField(r, PG_DIAG_SQLSTATE);
  last_sqlstate_ = state == nullptr ? "" : state;
  if ((state == nullptr || *state == '\0') && PQstatus(c_) == CONNECTION_BAD) {
    // libpq's own error: the server went away (restart, failover, network).
    return Status::busy(what_ + ": " + doing + ": the connection was lost (" + msg + "); try again later");
  }
  // A server that is no longer the primary (a failover demoted it): find the primary.
  if (state != nullptr && std::strcmp(state, "25006") == 0) broken_ = true;
  return statusFromSqlState(state, what_ + ": " + doing + ": " + msg);
}

Result<PgResult> PgConn::runOnce(const char* sql, const PgParams& params) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    std::string name = "lcc_s" + std::to_string(prepared_.size() + 1);
    PgResult prep(PQprepare(c_, name.c_str(), sql, params.size(), params.oids()));
    LCC_RETURN_IF_ERROR(resultStatus(prep.raw(), "preparing a statement"));
    it = prepared_.emplace(sql, std::move(name)).first;
  }
  const std::vector<const char*> values = params.values();
  PGresult* r = PQexecPrepared(c_, it->second.c_str(), params.size(), values.data(), params.lengths(),
                               params.formats(), 1);
  PgResult res(r);
  LCC_RETURN_IF_ERROR(resultStatus(r, "a statement failed"));
  return res;
}

Result<PgResult> PgConn::run(const char* sql, const PgParams& params) {
  if (!in_tx_ && lost()) LCC_RETURN_IF_ERROR(reconnect());
  auto r = runOnce(sql, params);
  if (!r.isOk() && !in_tx_ && lost()) {
    // Outside a transaction only reads run here: safe to run again.
    LCC_RETURN_IF_ERROR(reconnect());
    return runOnce(sql, params);
  }
  return r;
}

Status PgConn::exec(const std::string& sql) {
  PgResult r(PQexec(c_, sql.c_str()));
  return resultStatus(r.raw(), "running SQL");
}

Status PgConn::begin(bool durable) {
  if (lost()) LCC_RETURN_IF_ERROR(reconnect());
  const char* sql = durable ? "BEGIN" : "BEGIN; SET LOCAL synchronous_commit TO off";
  Status s = exec(sql);
  if (!s.isOk() && lost()) {
    // Nothing ran yet: reconnect (e.g. after a server restart) and begin again.
    LCC_RETURN_IF_ERROR(reconnect());
    s = exec(sql);
  }
  if (s.isOk()) in_tx_ = true;
  if (s.isOk() && after_begin_) {
    s = after_begin_(*this);
    if (!s.isOk()) rollback();
  }
  return s;
}

Status PgConn::beginCopy(bool durable, const char* copy_sql, const std::string& data) {
  last_sqlstate_.clear();
  if (lost()) LCC_RETURN_IF_ERROR(reconnect());
  const std::string sql =
      std::string(durable ? "BEGIN; " : "BEGIN; SET LOCAL synchronous_commit TO off; ") + copy_sql;
  // PQexec stops at the COPY's answer (CopyInResponse): one round trip.
  PgResult start(PQexec(c_, sql.c_str()));
  if (PQresultStatus(start.raw()) != PGRES_COPY_IN && lost()) {
    // Nothing ran yet: reconnect (e.g. after a server restart) and begin again.
    LCC_RETURN_IF_ERROR(reconnect());
    start = PgResult(PQexec(c_, sql.c_str()));
  }
  in_tx_ = true;  // from here on the caller rolls back on an error
  if (PQresultStatus(start.raw()) != PGRES_COPY_IN) return resultStatus(start.raw(), "starting COPY");
  Status s = copyData(data);
  if (s.isOk() && after_begin_) s = after_begin_(*this);
  return s;
}

// Sends the rows and the end of the COPY, then reads its answer.
Status PgConn::copyData(const std::string& data) {
  constexpr std::size_t kChunk = 1 << 20;
  for (std::size_t at = 0; at < data.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, data.size() - at);
    if (PQputCopyData(c_, data.data() + at, static_cast<int>(n)) != 1) return resultStatus(nullptr, "sending COPY data");
  }
  if (PQputCopyEnd(c_, nullptr) != 1) return resultStatus(nullptr, "ending COPY");
  PgResult done(PQgetResult(c_));
  Status s = resultStatus(done.raw(), "COPY");
  while (PGresult* rest = PQgetResult(c_)) PQclear(rest);  // up to the null that ends it
  return s;
}

Status PgConn::commit() {
  in_tx_ = false;
  PgResult r(PQexec(c_, "COMMIT"));
  LCC_RETURN_IF_ERROR(resultStatus(r.raw(), "COMMIT"));
  // A COMMIT of a transaction that failed earlier answers ROLLBACK, not an error.
  if (std::strcmp(PQcmdStatus(r.raw()), "COMMIT") != 0) {
    return Status::aborted(what_ + ": the transaction was rolled back by the server");
  }
  return Status::ok();
}

Status PgConn::sendPipeline(const std::vector<PgStep>& steps, std::vector<std::string>* names, int* expected) {
  *expected = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PgStep& st = steps[i];
    auto it = prepared_.find(st.sql);
    if (it == prepared_.end()) {
      // A name never used before on this connection: one prepared by a pipeline that
      // failed later may exist on the server without being in prepared_.
      auto same = std::find_if(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(i),
                               [&](const PgStep& o) { return o.sql == st.sql; });
      if (same != steps.begin() + static_cast<std::ptrdiff_t>(i)) {
        names->push_back((*names)[static_cast<std::size_t>(same - steps.begin())]);
      } else {
        names->push_back("lcc_p" + std::to_string(++pipeline_names_));
        if (PQsendPrepare(c_, names->back().c_str(), st.sql, st.params.size(), st.params.oids()) != 1) {
          return resultStatus(nullptr, "sending a statement");
        }
        ++*expected;
      }
    } else {
      names->push_back(it->second);
    }
    const std::vector<const char*> values = st.params.values();
    if (PQsendQueryPrepared(c_, names->back().c_str(), st.params.size(), values.data(), st.params.lengths(),
                            st.params.formats(), 1) != 1) {
      return resultStatus(nullptr, "sending a statement");
    }
    ++*expected;
  }
  if (PQsendQueryParams(c_, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0) != 1 || PQpipelineSync(c_) != 1) {
    return resultStatus(nullptr, "sending COMMIT");
  }
  return Status::ok();
}

// Every result in order (each followed by a null), then the sync's. The first error
// wins; what the server skipped after it answers PGRES_PIPELINE_ABORTED.
Status PgConn::readPipeline(const std::vector<PgStep>& steps, const std::vector<std::string>& names, int expected) {
  Status first;
  bool committed = false;
  for (int i = 0; i <= expected; ++i) {  // the prepares and statements, then COMMIT
    PgResult r(PQgetResult(c_));
    if (r.raw() == nullptr) return first.isOk() ? resultStatus(nullptr, "reading a pipeline") : first;
    const ExecStatusType t = PQresultStatus(r.raw());
    if (first.isOk() && t != PGRES_PIPELINE_ABORTED) {
      first = resultStatus(r.raw(), i < expected ? "a statement failed" : "COMMIT");
    }
    if (i == expected && t == PGRES_COMMAND_OK) committed = std::strcmp(PQcmdStatus(r.raw()), "COMMIT") == 0;
    while (PGresult* rest = PQgetResult(c_)) PQclear(rest);  // up to the null that ends it
  }
  PgResult sync(PQgetResult(c_));
  if (sync.raw() == nullptr || PQresultStatus(sync.raw()) != PGRES_PIPELINE_SYNC) {
    broken_ = true;  // out of step with the server: make the connection again
    return first.isOk() ? resultStatus(sync.raw(), "reading a pipeline") : first;
  }
  if (!first.isOk()) return first;
  for (std::size_t k = 0; k < steps.size(); ++k) prepared_.emplace(steps[k].sql, names[k]);
  if (!committed) return Status::aborted(what_ + ": the transaction was rolled back by the server");
  return Status::ok();
}

Status PgConn::runAndCommit(const std::vector<PgStep>& steps) {
  in_tx_ = false;  // as commit(): on an error the caller rolls back
  if (PQenterPipelineMode(c_) != 1) return resultStatus(nullptr, "entering pipeline mode");
  std::vector<std::string> names;
  int expected = 0;
  Status s = sendPipeline(steps, &names, &expected);
  if (s.isOk()) {
    s = readPipeline(steps, names, expected);
  } else {
    broken_ = true;  // what was sent is not synced: make the connection again (PQreset ends the mode)
  }
  if (!lost() && PQexitPipelineMode(c_) != 1) broken_ = true;
  return s;
}

void PgConn::rollback() {
  in_tx_ = false;
  if (lost()) return;
  PgResult r(PQexec(c_, "ROLLBACK"));
}

}  // namespace lcc::pg
