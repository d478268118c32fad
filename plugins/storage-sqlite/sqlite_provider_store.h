// sqlite_provider_store.h — ProviderStore (the PIDB) on SQLite, in
// <data_dir>/providers.sqlite (schema.sql sections "common" and "providers").
//
// THREADS: every method is thread-safe: one connection behind a mutex (PIDB traffic
// is a few writes per connection or error, and reads per CP login). modify() runs
// its read, the caller's function and the write in one transaction under the lock.
// scan() reads chunks under the lock and calls back outside it.
// DURABILITY: a durable write commits with synchronous=FULL (one WAL fdatasync that
// also covers earlier non-durable commits); WriteOptions::durable = false commits unsynced.
#pragma once

#include <memory>
#include <mutex>

#include "lcc/host.h"
#include "lcc/provider_store.h"
#include "sqlite_db.h"

namespace lcc::plugins::sqlite {

class SqliteProviderStore final : public ProviderStore {
 public:
  static Result<ProviderStore*> open(const HostContext& host, const StoreOptions& opts);
  ~SqliteProviderStore() override;

  const StoreOpenInfo& openInfo() const override { return info_; }
  Result<ProviderId> create(const ProviderRecord& record) override;
  Result<std::optional<ProviderRecord>> get(ProviderId id) override;
  Status put(const ProviderRecord& record, const WriteOptions& options) override;
  Status modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                const WriteOptions& options) override;
  using ProviderStore::modify;
  using ProviderStore::put;
  Status remove(ProviderId id) override;
  Status scan(const std::function<bool(const ProviderRecord&)>& fn) override;
  Status sync() override;
  Status close() override;

 private:
  SqliteProviderStore(const HostContext& host, std::unique_ptr<SqliteDb> db, StoreOpenInfo info);
  Status writableLocked() const;
  Result<std::optional<ProviderRecord>> getLocked(ProviderId id);
  Status updateLocked(const ProviderRecord& r, bool* found);
  Status beginLocked(bool durable);
  // Ends a write transaction begun with db_->begin(): commits when `s` is OK, else
  // rolls back; a storage failure (not `soft`) makes the store sticky-failed.
  Status finishLocked(Status s, bool soft_failure);

  HostContext host_;
  std::mutex mu_;
  std::unique_ptr<SqliteDb> db_;
  StoreOpenInfo info_;
  Status failed_;
  bool closed_ = false;
};

}  // namespace lcc::plugins::sqlite
