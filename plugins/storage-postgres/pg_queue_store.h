// pg_queue_store.h — QueueStore on PostgreSQL: tables qdb, qpsdb, fsmdb and the
// 'queue' rows of meta (schema.sql).
//
// THREADS: the QM's single store-writer strand; one connection, no locking.
// DURABILITY: apply() = one transaction. synchronous=normal (default): its COMMIT does
// not wait for the WAL flush, sync() commits once more waiting for it (covering every
// earlier commit); synchronous=full: every apply() waits. A failed apply()/sync()
// makes the store sticky-failed. A committed apply survives the LCC process dying at
// once (the server holds it). A lost connection is Busy, not a failure: the store stays
// usable and the next call reconnects (a multi-host conninfo finds the new primary).
// One QM writes a queue schema; with the option qm_lease, open() waits for the QM lease
// (a standby) and every write transaction checks its epoch (pg_lease.h).
// entryCount() is a count(*) on the server (the QM asks once, when it rebuilds its
// state at start).
#pragma once

#include <memory>

#include "lcc/host.h"
#include "lcc/queue_store.h"
#include "pg_lease.h"
#include "pg_store.h"

namespace lcc::plugins::postgres {

class PgQueueStore final : public QueueStore {
 public:
  static Result<QueueStore*> open(const HostContext& host, const StoreOptions& opts);
  ~PgQueueStore() override = default;  // not close(): the next open sees an unclean shutdown

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const QueueBatch& batch) override;
  Status sync() override;
  Status close() override;

  Result<std::optional<QueueEntry>> getEntry(std::string_view key) override;
  Result<std::vector<std::optional<QueueEntry>>> getEntries(const std::vector<std::string>& keys) override;
  Status scanEntries(const std::function<bool(const QueueEntry&)>& fn) override;
  Result<std::uint64_t> entryCount() override;
  Result<std::optional<PSetRecord>> getPSet(PSetId pset, TimeSlot slot) override;
  Result<std::vector<std::optional<PSetRecord>>> getPSets(const std::vector<std::pair<PSetId, TimeSlot>>& lists) override;
  Status scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) override;
  Status scanDeletes(std::optional<std::string> machine,
                     const std::function<bool(const DeleteRequest&)>& fn) override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  PgQueueStore(const HostContext& host, const StoreOptions& opts, std::unique_ptr<PgConn> conn, StoreOpenInfo info)
      : host_(host), opts_(opts), conn_(std::move(conn)), info_(std::move(info)) {}
  struct Plan;  // what one apply() writes (pg_queue_store.cc)
  static Status fold(const QueueBatch::Op& op, Plan* plan);
  // One transaction writing `plan`; `copy_fresh`: the rows marked fresh by COPY.
  Status write(const Plan& plan, bool copy_fresh);
  bool copyFresh(const Plan& plan);
  // The statements writing `plan`, appended to `steps` (run in one pipeline);
  // `skip_fresh`: not the fresh rows (the COPY wrote them).
  void writeEntries(const Plan& plan, bool skip_fresh, std::vector<PgStep>* steps);
  void writeOthers(const Plan& plan, std::vector<PgStep>* steps);
  Status writable() const;
  Status readable() const;
  void corruptRow(const std::string& what);

  HostContext host_;
  StoreOptions opts_;
  std::unique_ptr<PgConn> conn_;
  StoreOpenInfo info_;
  UnsyncedCommits unsynced_{StoreKind::kQueue};  // commits that did not wait for the flush since the last sync
  Status failed_;          // sticky
  bool closed_ = false;
  std::uint64_t corrupt_rows_ = 0;
  std::string copy_buf_;  // the COPY stream of an apply's fresh rows, kept for the next
  std::uint64_t copy_fallbacks_ = 0;  // batches whose COPY of fresh rows met a row that was there
  std::shared_ptr<PgLease> lease_;  // option qm_lease: held from open (pg_lease.h); null when off
};

}  // namespace lcc::plugins::postgres
