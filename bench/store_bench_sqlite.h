// store_bench_sqlite.h — the raw-SQLite baseline of store_bench (owned by the
// storage-sqlite engineer; store_bench.cc maps "storage-sqlite" to it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"

namespace lcc::bench {

struct RawSqliteRun {
  double seconds = 0;
  std::uint64_t raw_bytes = 0;  // key + value bytes written
  std::vector<double> commit_us;
  std::int64_t rss_growth = 0;
  DiskUse disk;
  DiskUse disk_after_close;
};

// Plain SQLite, the way the research note measured it (the performance research note §3):
// table (id INTEGER PRIMARY KEY, urlkey BLOB UNIQUE, val BLOB), WAL,
// synchronous=FULL, one prepared INSERT .. ON CONFLICT(urlkey) DO UPDATE per record,
// BEGIN/COMMIT per `batch` records (so every batch is durable when COMMIT returns).
RawSqliteRun rawSqliteInsert(std::uint64_t urls, std::uint64_t batch, std::size_t value_bytes,
                             const std::string& dir, const std::function<std::string(std::uint64_t)>& key);

}  // namespace lcc::bench
