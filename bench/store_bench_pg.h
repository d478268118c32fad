// store_bench_pg.h — the raw-libpq baseline of store_bench for storage-postgres (built
// when libpq is found; store_bench.cc maps "storage-postgres" to it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct pg_conn;  // libpq's PGconn

namespace lcc::bench {

struct RawPgRun {
  double seconds = 0;
  std::uint64_t raw_bytes = 0;  // key + value bytes written
  std::vector<double> commit_us;
  std::string error;            // empty when it ran
};

// Plain libpq: table (key bytea PRIMARY KEY, val bytea) in schema `schema` (created,
// dropped at the end), and per `batch` records one transaction with synchronous_commit
// on (durable when COMMIT returns): BEGIN, then `copy` ? COPY ... FROM STDIN (FORMAT
// binary) : one multi-row INSERT ... VALUES ($1,$2),($3,$4),... (binary parameters),
// then COMMIT.
RawPgRun rawPgBatches(const std::string& conninfo, const std::string& schema, bool copy, std::uint64_t urls,
                      std::uint64_t batch, std::size_t value_bytes,
                      const std::function<std::string(std::uint64_t)>& key);

// The same, one batch at a time (store_bench --interleave alternates its batches
// with the plugin's, so both meet the same load on a shared machine).
class RawPgWriter {
 public:
  RawPgWriter(const std::string& conninfo, const std::string& schema, bool copy);  // connects, makes the table
  ~RawPgWriter();                                                                   // drops the schema
  RawPgWriter(const RawPgWriter&) = delete;
  RawPgWriter& operator=(const RawPgWriter&) = delete;
  // One durable transaction writing `keys` with `value`: its seconds, or -1 (error()).
  double write(const std::vector<std::string>& keys, const std::string& value);
  const std::string& error() const { return error_; }
  std::uint64_t rawBytes() const { return raw_bytes_; }

 private:
  pg_conn* c_ = nullptr;
  std::string schema_;
  bool copy_;
  std::string error_;
  std::uint64_t raw_bytes_ = 0;
};

// DROP SCHEMA ... CASCADE (the plugin's tables after a run); "" or why it failed.
std::string dropPgSchema(const std::string& conninfo, const std::string& schema);

}  // namespace lcc::bench
