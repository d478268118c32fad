#include "store_bench_pg.h"

#include <libpq-fe.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench_util.h"

namespace lcc::bench {
namespace {

void appendBE(std::string* out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Runs `sql`; "" or libpq's message.
std::string exec(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  const ExecStatusType t = PQresultStatus(r);
  std::string err = (t == PGRES_COMMAND_OK || t == PGRES_TUPLES_OK || t == PGRES_COPY_IN) ? "" : PQerrorMessage(c);
  PQclear(r);
  return err;
}

// One batch as COPY's binary format: header, tuples of (key, val), trailer.
std::string copyData(const std::vector<std::string>& keys, const std::string& value, std::uint64_t* raw_bytes) {
  std::string buf("PGCOPY\n\377\r\n\0", 11);
  appendBE(&buf, 0, 4);  // flags
  appendBE(&buf, 0, 4);  // header extension length
  for (const std::string& k : keys) {
    appendBE(&buf, 2, 2);
    appendBE(&buf, k.size(), 4);
    buf += k;
    appendBE(&buf, value.size(), 4);
    buf += value;
    *raw_bytes += k.size() + value.size();
  }
  appendBE(&buf, 0xffff, 2);
  return buf;
}

// One batch as a multi-row INSERT with binary parameters; "" or libpq's message.
std::string insertRows(PGconn* c, const std::string& table, const std::vector<std::string>& keys,
                       const std::string& value, std::uint64_t* raw_bytes) {
  std::string sql = "INSERT INTO " + table + " (key, val) VALUES ";
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    sql += (i == 0 ? "($" : ",($") + std::to_string(2 * i + 1) + "::bytea,$" + std::to_string(2 * i + 2) + "::bytea)";
    values.push_back(keys[i].data());
    values.push_back(value.data());
    lengths.push_back(static_cast<int>(keys[i].size()));
    lengths.push_back(static_cast<int>(value.size()));
    formats.push_back(1);
    formats.push_back(1);
    *raw_bytes += keys[i].size() + value.size();
  }
  PGresult* r = PQexecParams(c, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), lengths.data(),
                             formats.data(), 1);
  std::string err = PQresultStatus(r) == PGRES_COMMAND_OK ? "" : PQerrorMessage(c);
  PQclear(r);
  return err;
}

}  // namespace

RawPgWriter::RawPgWriter(const std::string& conninfo, const std::string& schema, bool use_copy)
    : schema_(schema), copy_(use_copy) {
  c_ = PQconnectdb(conninfo.c_str());
  if (PQstatus(c_) != CONNECTION_OK) {
    error_ = PQerrorMessage(c_);
    return;
  }
  error_ = exec(c_, "SET synchronous_commit TO on; DROP SCHEMA IF EXISTS " + schema + " CASCADE; CREATE SCHEMA " +
                        schema + "; CREATE TABLE " + schema + ".raw (key bytea PRIMARY KEY, val bytea NOT NULL)");
}

RawPgWriter::~RawPgWriter() {
  if (PQstatus(c_) == CONNECTION_OK) (void)exec(c_, "DROP SCHEMA " + schema_ + " CASCADE");
  PQfinish(c_);
}

double RawPgWriter::write(const std::vector<std::string>& keys, const std::string& value) {
  if (!error_.empty()) return -1;
  Stopwatch one;
  error_ = exec(c_, "BEGIN");
  if (!copy_) {
    if (error_.empty()) error_ = insertRows(c_, schema_ + ".raw", keys, value, &raw_bytes_);
  } else {
    const std::string data = copyData(keys, value, &raw_bytes_);
    if (error_.empty()) error_ = exec(c_, "COPY " + schema_ + ".raw (key, val) FROM STDIN (FORMAT binary)");
    if (error_.empty() && (PQputCopyData(c_, data.data(), static_cast<int>(data.size())) != 1 ||
                           PQputCopyEnd(c_, nullptr) != 1)) {
      error_ = PQerrorMessage(c_);
    }
    for (PGresult* r; error_.empty() && (r = PQgetResult(c_)) != nullptr;) {
      if (PQresultStatus(r) != PGRES_COMMAND_OK) error_ = PQerrorMessage(c_);
      PQclear(r);
    }
  }
  if (error_.empty()) error_ = exec(c_, "COMMIT");
  return error_.empty() ? one.seconds() : -1;
}

RawPgRun rawPgBatches(const std::string& conninfo, const std::string& schema, bool use_copy, std::uint64_t urls,
                      std::uint64_t batch, std::size_t value_bytes,
                      const std::function<std::string(std::uint64_t)>& key) {
  RawPgRun run;
  RawPgWriter w(conninfo, schema, use_copy);
  const std::string value(value_bytes, 'x');
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < urls && w.error().empty(); i += batch) {
    keys.clear();  // the caller's rows, made before the clock runs
    for (std::uint64_t k = i; k < std::min(urls, i + batch); ++k) keys.push_back(key(k));
    const double t = w.write(keys, value);
    if (t < 0) break;
    run.commit_us.push_back(t * 1e6);
    run.seconds += t;
  }
  run.error = w.error();
  run.raw_bytes = w.rawBytes();
  return run;
}

std::string dropPgSchema(const std::string& conninfo, const std::string& schema) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  std::string err = PQstatus(c) == CONNECTION_OK ? exec(c, "DROP SCHEMA IF EXISTS " + schema + " CASCADE")
                                                 : std::string(PQerrorMessage(c));
  PQfinish(c);
  return err;
}

}  // namespace lcc::bench
