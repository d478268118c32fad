// store_bench_pg.h — the raw-libpq baseline of store_bench for storage-postgres (built
// when libpq is found; store_bench.cc maps "storage-postgres" to it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

// DROP SCHEMA ... CASCADE (the plugin's tables after a run); "" or why it failed.
std::string dropPgSchema(const std::string& conninfo, const std::string& schema);

}  // namespace lcc::bench
