#include "pg_lease.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "pg_store.h"

namespace lcc::plugins::postgres {
namespace {

// How often a standby looks at the lease: a fifth of it, within [200 ms, 1 s].
std::chrono::milliseconds pollEvery(std::int64_t lease_ms) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(lease_ms / 5, 200, 1000));
}

std::mutex& registryMutex() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, std::weak_ptr<PgLease>>& registry() {
  static std::map<std::string, std::weak_ptr<PgLease>> leases;
  return leases;
}

std::string registryKey(const StoreOptions& opts) { return opts.conninfo + '\0' + opts.schema; }

// The server ends a session idle inside a transaction for this long (a paused holder).
std::string idleTimeout(std::int64_t lease_ms) { return std::to_string(std::max<std::int64_t>(1000, lease_ms / 2)); }

constexpr const char* kTake =
    "UPDATE qm_lease SET epoch = epoch + 1, holder = $1, expires_at = now() + interval '1 millisecond' * $2::float8 "
    "WHERE id = 1 AND expires_at <= now() RETURNING epoch";
constexpr const char* kLook =
    "SELECT epoch, holder, (extract(epoch FROM expires_at - now()) * 1000)::bigint FROM qm_lease WHERE id = 1";
constexpr const char* kRenew =
    "UPDATE qm_lease SET expires_at = now() + interval '1 millisecond' * $2::float8 WHERE id = 1 AND epoch = $1";
constexpr const char* kRelease = "UPDATE qm_lease SET expires_at = now() WHERE id = 1 AND epoch = $1";
constexpr const char* kCheck =
    "SELECT epoch, holder, set_config('idle_in_transaction_session_timeout', $1, true) FROM qm_lease "
    "WHERE id = 1 FOR SHARE";

std::string describeHolder(const std::string& h) { return h.empty() ? std::string("nobody") : h; }

}  // namespace

void checkLeaseAtBegin(PgConn& c, const StoreOptions& opts) {
  c.setAfterBegin([opts](PgConn& conn) {
    auto lease = PgLease::find(opts);
    return lease ? lease->check(conn) : Status::ok();
  });
}

bool isFencedMessage(const std::string& message) { return message.find(kFencedPrefix) != std::string::npos; }

PgLease::PgLease(const HostContext& host, const StoreOptions& opts, std::unique_ptr<PgConn> conn, std::string holder,
                 std::int64_t epoch)
    : host_(host), opts_(opts), conn_(std::move(conn)), holder_(std::move(holder)), epoch_(epoch) {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "lcc-pg-lease");
    renewLoop();
  });
}

PgLease::~PgLease() {
  stopThread();
  {
    std::lock_guard<std::mutex> g(registryMutex());
    auto it = registry().find(registryKey(opts_));
    if (it != registry().end() && it->second.expired()) registry().erase(it);
  }
  if (fenced().isOk()) (void)conn_->run(kRelease, PgParams().i64(epoch_));  // best effort: else it expires
}

void PgLease::log(bool error, const std::string& m) const {
  if (host_.logger == nullptr) return;
  if (error) {
    host_.logger->error(conn_->what() + ": " + m);
  } else {
    host_.logger->info(conn_->what() + ": " + m);
  }
}

Result<std::shared_ptr<PgLease>> PgLease::acquire(const HostContext& host, const StoreOptions& opts) {
  LCC_ASSIGN_OR_RETURN(std::unique_ptr<PgConn> conn, connectStore(opts, StoreKind::kQueue));
  const std::string holder = (host.machine_id.empty() ? std::string("lccd") : host.machine_id) + " pid " +
                             std::to_string(::getpid());
  std::string last_seen;
  for (;;) {
    auto took = conn->run(kTake, PgParams().bytes(holder).i64(opts.qm_lease_ms));
    if (took.isOk() && took->rows() == 1) {
      auto lease = std::shared_ptr<PgLease>(new PgLease(host, opts, std::move(conn), holder, took->i64(0, 0)));
      lease->log(false, "took the QM lease: epoch " + std::to_string(lease->epoch_) + " as " + holder +
                            " (renewed every " + std::to_string(opts.qm_lease_ms / 3) + " ms)");
      std::lock_guard<std::mutex> g(registryMutex());
      registry()[registryKey(opts)] = lease;
      return lease;
    }
    if (!took.isOk() && !took.status().isBusy()) return took.status().withContext("taking the QM lease");
    auto look = conn->run(kLook, PgParams());
    if (look.isOk() && look->rows() == 1) {
      const std::string seen = describeHolder(look->bytes(0, 1)) + " (epoch " + std::to_string(look->i64(0, 0)) + ")";
      if (seen != last_seen && host.logger != nullptr) {
        host.logger->info(conn->what() + ": waiting for the QM lease (standby): held by " + seen + ", expires in " +
                          std::to_string(std::max<std::int64_t>(0, look->i64(0, 2))) + " ms");
      }
      last_seen = seen;
    } else if (!look.isOk() && !look.status().isBusy()) {
      return look.status().withContext("reading the QM lease");
    }
    std::this_thread::sleep_for(pollEvery(opts.qm_lease_ms));
  }
}

std::shared_ptr<PgLease> PgLease::find(const StoreOptions& opts) {
  std::lock_guard<std::mutex> g(registryMutex());
  auto it = registry().find(registryKey(opts));
  return it == registry().end() ? nullptr : it->second.lock();
}

void PgLease::stopThread() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PgLease::renewLoop() {
  const auto every = std::chrono::milliseconds(std::max<std::int64_t>(1, opts_.qm_lease_ms / 3));
  bool busy = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mu_);
      if (cv_.wait_for(lk, every, [this] { return stop_; })) return;
    }
    Status s = renewOnce();
    if (s.isBusy()) {
      // The server is away (a failover): keep trying; the lease may expire meanwhile,
      // and then the next renewal finds the epoch taken.
      if (!busy) log(false, "cannot renew the QM lease now (epoch " + std::to_string(epoch_) + "): " + s.message());
      busy = true;
      continue;
    }
    busy = false;
    if (!s.isOk()) return;  // fenced (logged), or refused: the next write transaction finds out
  }
}

Status PgLease::renewOnce() {
  LCC_ASSIGN_OR_RETURN(PgResult r, conn_->run(kRenew, PgParams().i64(epoch_).i64(opts_.qm_lease_ms)));
  if (r.affected() == 1) return Status::ok();
  LCC_ASSIGN_OR_RETURN(PgResult now, conn_->run(kLook, PgParams()));
  if (now.rows() != 1) return Status::corruption(conn_->what() + ": table qm_lease has no row");
  return fence(now.i64(0, 0), now.bytes(0, 1));
}

Status PgLease::fence(std::int64_t epoch, const std::string& holder) {
  std::lock_guard<std::mutex> g(mu_);
  if (fenced_.isOk()) {
    fenced_ = Status::aborted(std::string(kFencedPrefix) + std::to_string(epoch_) + " was taken over by " +
                              describeHolder(holder) + " (epoch " + std::to_string(epoch) +
                              "); this process writes nothing more");
    if (host_.logger != nullptr) host_.logger->error(conn_->what() + ": " + fenced_.message());
  }
  return fenced_;
}

Status PgLease::fenced() const {
  std::lock_guard<std::mutex> g(mu_);
  return fenced_;
}

Status PgLease::check(PgConn& c) {
  LCC_RETURN_IF_ERROR(fenced());
  LCC_ASSIGN_OR_RETURN(PgResult r, c.run(kCheck, PgParams().text(idleTimeout(opts_.qm_lease_ms))));
  if (r.rows() != 1) return Status::corruption(c.what() + ": table qm_lease has no row");
  if (r.i64(0, 0) == epoch_) return Status::ok();
  return fence(r.i64(0, 0), r.bytes(0, 1));
}

}  // namespace lcc::plugins::postgres
