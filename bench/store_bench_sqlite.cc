#include "store_bench_sqlite.h"

#include <sqlite3.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace lcc::bench {
namespace {

[[noreturn]] void die(sqlite3* db, const char* what) {
  std::fprintf(stderr, "raw sqlite: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
  std::exit(1);
}

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) die(db, sql);
}

}  // namespace

RawSqliteRun rawSqliteInsert(std::uint64_t urls, std::uint64_t batch, std::size_t value_bytes,
                             const std::string& dir, const std::function<std::string(std::uint64_t)>& key) {
  RawSqliteRun r;
  sqlite3* db = nullptr;
  if (sqlite3_open((dir + "/raw.sqlite").c_str(), &db) != SQLITE_OK) die(db, "open");
  exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
           "CREATE TABLE qdb(id INTEGER PRIMARY KEY, urlkey BLOB NOT NULL UNIQUE, val BLOB)");
  sqlite3_stmt* ins = nullptr;
  if (sqlite3_prepare_v2(db, "INSERT INTO qdb(urlkey, val) VALUES(?1, ?2) ON CONFLICT(urlkey) DO UPDATE SET val=excluded.val",
                         -1, &ins, nullptr) != SQLITE_OK) {
    die(db, "prepare");
  }
  const std::string value(value_bytes, 'x');
  const std::uint64_t rss0 = rssBytes();
  std::vector<std::string> keys;
  for (std::uint64_t i = 0; i < urls; i += batch) {
    keys.clear();  // the caller's rows, made before the clock runs
    for (std::uint64_t k = i; k < std::min(urls, i + batch); ++k) keys.push_back(key(k));
    Stopwatch one;
    exec(db, "BEGIN");
    for (const std::string& k : keys) {
      r.raw_bytes += k.size() + value.size();
      sqlite3_bind_blob(ins, 1, k.data(), static_cast<int>(k.size()), SQLITE_TRANSIENT);
      sqlite3_bind_blob(ins, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
      if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
      sqlite3_reset(ins);
    }
    exec(db, "COMMIT");
    r.commit_us.push_back(one.micros());
    r.seconds += r.commit_us.back() / 1e6;
  }
  r.rss_growth = static_cast<std::int64_t>(rssBytes()) - static_cast<std::int64_t>(rss0);
  r.disk = diskUse(dir);
  sqlite3_finalize(ins);
  sqlite3_close(db);
  r.disk_after_close = diskUse(dir);
  return r;
}

}  // namespace lcc::bench
