// pg_lease.h — the QM lease of a schema (option qm_lease of the queue store): one active
// QM per queue schema, a standby that takes over when the active one stops renewing,
// and a fencing epoch that every write transaction of the holder checks.
//
// TABLE qm_lease (schema.sql): one row {epoch, holder, expires_at}, times from the
// server's clock only (now()), never a host's.
// ACQUIRE (at the queue store's open): waits until the row is free or expired and takes
// it with one UPDATE that increments epoch (this process's fencing token); logs who
// holds it while it waits.
// RENEW: a thread of its own (lcc-pg-lease, its own connection) extends expires_at every
// lease/3 with `UPDATE ... WHERE epoch = mine`; 0 rows: taken over, this process is fenced.
// FENCE: check() runs inside every write transaction of this process on the schema
// (queue store and content store: PgConn's after-BEGIN hook) and locks the row FOR SHARE,
// so a takeover UPDATE waits for the transactions in flight and every later one sees
// the new epoch and is refused. It also sets idle_in_transaction_session_timeout for
// that transaction, so a process paused (SIGSTOP) inside one does not hold the takeover
// back for longer than that: the server ends its session.
// A fenced write returns Aborted "fenced: QM epoch N was taken over by H (epoch M)"
// (isFencedMessage()); the stores then stay failed. Advisory locks alone are not
// fencing: a paused process keeps its lock-free view, the epoch in the transaction does not.
// REGISTRY: the lease of (conninfo, schema) held by this process, so that the content
// store opened with the same conninfo and schema checks it too.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "lcc/host.h"
#include "pg_conn.h"
#include "store_options.h"

namespace lcc::plugins::postgres {

// The start of a fenced store's error message (a Status::aborted).
inline constexpr const char* kFencedPrefix = "fenced: QM epoch ";

class PgLease {
 public:
  // Waits (as long as it takes: a standby) until this process holds the lease of
  // opts.schema, then renews it and registers it. Errors: the server cannot be reached
  // at the start (IOError), a statement refused.
  static Result<std::shared_ptr<PgLease>> acquire(const HostContext& host, const StoreOptions& opts);
  // The lease of (opts.conninfo, opts.schema) this process holds, or null.
  static std::shared_ptr<PgLease> find(const StoreOptions& opts);

  // Stops renewing and gives the lease up (expires now) unless fenced, so a standby
  // takes over at once after a clean stop.
  ~PgLease();
  PgLease(const PgLease&) = delete;
  PgLease& operator=(const PgLease&) = delete;

  // Inside a write transaction on `c`: OK when this process still holds the epoch;
  // the fenced error (sticky) when another took it; Busy when the server is gone.
  Status check(PgConn& c);
  // OK, or the fenced error once the renewal or a check found the lease taken.
  Status fenced() const;
  std::int64_t epoch() const { return epoch_; }
  const std::string& holder() const { return holder_; }

  // Tests: stop renewing (as a paused or dead QM), without giving the lease up.
  void stopRenewingForTest() { stopThread(); }

 private:
  PgLease(const HostContext& host, const StoreOptions& opts, std::unique_ptr<PgConn> conn, std::string holder,
          std::int64_t epoch);
  void renewLoop();
  Status renewOnce();
  void stopThread();
  Status fence(std::int64_t epoch, const std::string& holder);  // makes the fenced error sticky
  void log(bool error, const std::string& m) const;

  HostContext host_;
  StoreOptions opts_;
  std::unique_ptr<PgConn> conn_;  // the renewals' connection (the renew thread, then the destructor)
  const std::string holder_;
  const std::int64_t epoch_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  Status fenced_;  // under mu_
  std::thread thread_;
};

// Makes every transaction of `c` (a content or provider store's writer) check the QM
// lease this process holds on (opts.conninfo, opts.schema), if any, when it begins.
void checkLeaseAtBegin(PgConn& c, const StoreOptions& opts);

// Whether a store error is the fenced one (core/qm looks for the same words).
bool isFencedMessage(const std::string& message);

}  // namespace lcc::plugins::postgres
