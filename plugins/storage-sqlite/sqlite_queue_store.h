// sqlite_queue_store.h — QueueStore on SQLite: QDB, QPSDB, FSMDB and meta in
// <data_dir>/queue.sqlite (schema.sql sections "common" and "queue").
//
// THREADS: the QM's single store-writer strand; one connection, no locking.
// DURABILITY: apply() = one transaction (all or nothing). With synchronous=normal
// (default) its commit is not synced; sync() makes every commit before it durable
// with one WAL fdatasync. With synchronous=full every apply() is already durable.
// A failed apply()/sync() makes the store sticky-failed.
#pragma once

#include <memory>

#include "lcc/host.h"
#include "lcc/queue_store.h"
#include "sqlite_db.h"

namespace lcc::plugins::sqlite {

class SqliteQueueStore final : public QueueStore {
 public:
  static Result<QueueStore*> open(const HostContext& host, const StoreOptions& opts);
  ~SqliteQueueStore() override;

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const QueueBatch& batch) override;
  Status sync() override;
  Status close() override;

  Result<std::optional<QueueEntry>> getEntry(std::string_view key) override;
  Status scanEntries(const std::function<bool(const QueueEntry&)>& fn) override;
  Result<std::uint64_t> entryCount() override;
  Result<std::optional<PSetRecord>> getPSet(PSetId pset, TimeSlot slot) override;
  Status scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) override;
  Status scanDeletes(std::optional<std::string> machine,
                     const std::function<bool(const DeleteRequest&)>& fn) override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  SqliteQueueStore(const HostContext& host, std::unique_ptr<SqliteDb> db, StoreOpenInfo info, std::int64_t rows);
  Status applyOps(const QueueBatch& batch, std::int64_t* rows);
  Status writable() const;
  void corruptRow(const std::string& what);

  HostContext host_;
  std::unique_ptr<SqliteDb> db_;
  StoreOpenInfo info_;
  std::int64_t rows_;  // QDB rows, kept in lcc_store 'rows' by every apply()
  Status failed_;      // sticky
  bool closed_ = false;
  std::uint64_t corrupt_rows_ = 0;
};

}  // namespace lcc::plugins::sqlite
