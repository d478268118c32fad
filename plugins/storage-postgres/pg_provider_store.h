// pg_provider_store.h — ProviderStore (the PIDB) on PostgreSQL: table providers
// (schema.sql).
//
// THREADS: every method is thread-safe: one connection behind a mutex. modify() reads
// the row FOR UPDATE, runs the caller's function and writes in one transaction, so it
// is atomic also against another process using the same schema.
// DURABILITY: a durable write's COMMIT waits for the WAL flush (synchronous_commit
// on); WriteOptions::durable = false commits without waiting (SET LOCAL
// synchronous_commit TO off) and becomes durable with the next durable write, sync()
// or close(). A write that fails because the connection was lost leaves nothing
// (the server rolled it back) and does not fail the store: the next call reconnects.
// Other failures of a write (the server refusing a commit) make it sticky-failed.
#pragma once

#include <memory>
#include <mutex>

#include "lcc/host.h"
#include "lcc/provider_store.h"
#include "pg_store.h"

namespace lcc::plugins::postgres {

class PgProviderStore final : public ProviderStore {
 public:
  static Result<ProviderStore*> open(const HostContext& host, const StoreOptions& opts);
  ~PgProviderStore() override = default;

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
  // The sum of the provider's QPSDB counts in this schema (index qpsdb_by_pid): what
  // the QM has committed, read at the call.
  Result<std::uint64_t> queuedUrls(ProviderId id) override;
  Status sync() override;
  Status close() override;

 private:
  PgProviderStore(const HostContext& host, std::unique_ptr<PgConn> conn, StoreOpenInfo info)
      : host_(host), conn_(std::move(conn)), info_(std::move(info)) {}
  Status usableLocked() const;
  Result<std::optional<ProviderRecord>> getLocked(ProviderId id, bool for_update);
  Status updateLocked(const ProviderRecord& r, bool* found);
  Status beginLocked(bool durable);
  // Ends a write transaction: commits when `s` is OK, else rolls back. A storage
  // failure (not `soft`: NotFound, the caller's refusal) on a live connection makes
  // the store sticky-failed.
  Status finishLocked(Status s, bool soft);

  HostContext host_;
  std::mutex mu_;
  std::unique_ptr<PgConn> conn_;
  StoreOpenInfo info_;
  bool unsynced_ = false;
  Status failed_;
  bool closed_ = false;
  bool probe_ = false;  // opened by lccd --check: close() changes nothing
};

}  // namespace lcc::plugins::postgres
