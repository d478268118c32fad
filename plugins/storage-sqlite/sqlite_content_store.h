// sqlite_content_store.h — ContentStore (the LCC DB) on SQLite, in
// <data_dir>/content.sqlite (schema.sql sections "common" and "content").
//
// THREADS: apply()/sync()/close() from one writer thread (the QM) on the writer
// connection. Reads (get, scans, getMeta) are thread-safe and run concurrently with
// the writer on a pool of read connections (WAL readers never block the writer and
// see only committed transactions); at most `max_readers` reads run at once, more
// wait for a free connection. maxSeq() and count() are atomics, no SQL.
// Scans read in chunks of short read transactions, so a slow consumer (a CU export)
// never pins the WAL; each record is consistent, the scan is not one snapshot.
// DURABILITY: as SqliteQueueStore.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "lcc/content_store.h"
#include "lcc/host.h"
#include "sqlite_db.h"

namespace lcc::plugins::sqlite {

class SqliteContentStore final : public ContentStore {
 public:
  static Result<ContentStore*> open(const HostContext& host, const StoreOptions& opts);
  ~SqliteContentStore() override;

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const ContentBatch& batch) override;
  Status sync() override;
  Status close() override;

  Result<std::optional<ContentRecord>> get(std::string_view encoded_key) override;
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) override;
  Status scanSince(ChangeSeq after, const ContentFilter& filter,
                   const std::function<bool(const ContentRecord&)>& fn) override;
  Result<ChangeSeq> maxSeq() override;
  Result<std::uint64_t> count() override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  SqliteContentStore(const HostContext& host, const StoreOptions& opts, std::unique_ptr<SqliteDb> db,
                     StoreOpenInfo info, std::int64_t rows, std::int64_t max_seq);

  // A read connection from the pool, returned on destruction.
  class Reader;
  Result<Reader> acquire();
  void release(std::unique_ptr<SqliteDb> db);

  Status applyOps(const ContentBatch& batch, std::int64_t* rows, std::int64_t* max_seq);
  Status putRecord(const ContentRecord& put, std::int64_t* rows, std::int64_t* max_seq);
  static Status addLaterColumns(SqliteDb& db);  // created_seq, etag: to a file made before them
  Status writable() const;
  void corruptRow(const std::string& what);

  HostContext host_;
  StoreOptions opts_;
  std::unique_ptr<SqliteDb> db_;  // the writer connection
  StoreOpenInfo info_;
  std::atomic<std::int64_t> rows_;
  std::atomic<std::int64_t> max_seq_;
  Status failed_;  // sticky; writer thread only
  std::atomic<bool> closed_{false};
  std::atomic<std::uint64_t> corrupt_rows_{0};

  std::mutex pool_mu_;
  std::condition_variable pool_cv_;
  std::vector<std::unique_ptr<SqliteDb>> idle_;
  std::int64_t open_readers_ = 0;  // idle + lent out
};

}  // namespace lcc::plugins::sqlite
