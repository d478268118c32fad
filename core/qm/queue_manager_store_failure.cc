// queue_manager_store_failure.cc — THE route of a store error (core/qm/README.md,
// "Durability" 6): storeFailed() logs, counts, sets the sticky failed state and raises
// cache-crash; routeStoreError() for work whose Status may come after the QM failed;
// a Busy store (no descriptor) is an overload, counted and tried again, never a failure;
// a fenced store (another QM took the lease over) stops the QM, no cache-crash.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

#include "common/cache_crash.h"

namespace lcc::qm {

// THE route of a store error (issue 15): every failed read, write or sync of the
// QueueStore, ContentStore or PIDB comes here, once. Logged, counted
// (lcc_qm_store_errors_total), the sticky failed state (sets refused with 130, nothing
// dispatched, periodic work stops), and cache-crash.
//
// Except Busy (issue 25: no descriptor to open a file, EMFILE/ENFILE; issue 27: a lost
// connection, a failover): an overload, not a broken store. Counted and logged; nothing
// fails and no cache-crash: the work is kept and done again (queue_manager_store_busy.cc;
// periodic work at its next turn).
void QueueManager::storeFailed(const Status& s) {
  countStoreError();
  if (isFencedStoreError(s)) return storeFenced(s);
  if (s.isBusy()) {
    spdlog::debug("qm: store busy: {}", s.toString());
    return noteStoreBusy(s);
  }
  if (failed_.isOk()) {
    failed_ = s;
    spdlog::error("qm: store failure, refusing sets from now on: {}", s.toString());
    if (intake_listener_) intake_listener_(false);
  } else {
    spdlog::error("qm: store error (the QM failed already): {}", s.toString());
  }
  raiseCacheCrash(s.toString());
}

bool isFencedStoreError(const Status& s) {
  return s.code() == StatusCode::kAborted && s.message().find("fenced: QM epoch ") != std::string::npos;
}

// Another QM holds the lease now (storage-postgres, option qm_lease): this one's epoch
// is stale and the stores refuse its writes. Not a broken store: no cache-crash and no
// replay; the QM refuses sets and stops; lccd exits (on_fenced) and its supervisor may
// start it again as the standby.
void QueueManager::storeFenced(const Status& s) {
  const bool first = failed_.isOk();
  if (first) {
    failed_ = s;
    if (intake_listener_) intake_listener_(false);
  }
  if (!first && isFencedStoreError(failed_)) return;  // said once
  const std::string& m = s.message();
  spdlog::critical("qm: {}; stopping: another QM is active", m.substr(m.find("fenced: QM epoch ")));
  if (deps_.on_fenced) deps_.on_fenced(s);
}

void QueueManager::routeStoreError(const Status& s) {
  // A failed QM has routed its first error; what fails after it only repeats it.
  if (!s.isOk() && failed_.isOk()) storeFailed(s);
}

void QueueManager::countStoreError() {
  ++stats_.store_errors;
  if (deps_.metrics) deps_.metrics->counter("lcc_qm_store_errors_total", "QM store reads, writes and syncs that failed").inc();
}

void QueueManager::raiseCacheCrash(const std::string& why) {
  if (!cache_crash_) spdlog::error("qm: cache-crash: {}; every provider is asked for a full set", why);
  cache_crash_ = true;
  if (!deps_.providers) return;
  // An error here is counted and logged, not routed again: this is the route's last step.
  const CacheCrashRaised r = raiseCacheCrashFlags(*deps_.providers);
  if (!r.first_error.isOk()) {
    countStoreError();
    spdlog::error("qm: raising cache-crash: {}", r.first_error.toString());
  }
}

}  // namespace lcc::qm
