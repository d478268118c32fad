// lcc/provider_store.h — the PIDB (design document §3–5, §13).
//
// WHO CALLS IT: the UNS (authentication, connection seq, reported errors), the QM
// (errors, quota use, wanted flag), the RS (registration) and the admin API.
// THREADS: every method is thread-safe; modify() is an atomic read-modify-write.
// DURABILITY: create(), put(), modify() and remove() return OK only when the change
// is durable (synced), unless WriteOptions::durable is false, in which case it is
// durable at the next durable write, sync() or close(). Writes are rare (connections, errors), so
// per-write sync is affordable.
#pragma once

#include <functional>
#include <optional>

#include "lcc/status.h"
#include "lcc/store_common.h"
#include "lcc/types.h"

namespace lcc {

// How put() and modify() make a change durable (as LevelDB's WriteOptions).
struct WriteOptions {
  // true: OK only once the change is synced. false: the change is written but
  // becomes durable with the next durable write, sync() or close().
  bool durable = true;
};

class ProviderStore {
 public:
  virtual ~ProviderStore() = default;
  ProviderStore() = default;
  ProviderStore(const ProviderStore&) = delete;
  ProviderStore& operator=(const ProviderStore&) = delete;

  virtual const StoreOpenInfo& openInfo() const = 0;

  // Stores `record` under a new id (monotonic, never reused, starting at 1), ignoring
  // record.id, and returns the id.
  virtual Result<ProviderId> create(const ProviderRecord& record) = 0;
  virtual Result<std::optional<ProviderRecord>> get(ProviderId id) = 0;
  // Replaces an existing record; NotFound if there is none.
  virtual Status put(const ProviderRecord& record, const WriteOptions& options) = 0;
  // Runs fn on the current record under the store's lock and stores the result if fn
  // returns OK. NotFound if there is no such provider. fn must not call the store.
  virtual Status modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                        const WriteOptions& options) = 0;
  // The same with the default WriteOptions (durable).
  Status put(const ProviderRecord& record) { return put(record, WriteOptions{}); }
  Status modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn) {
    return modify(id, fn, WriteOptions{});
  }
  virtual Status remove(ProviderId id) = 0;
  // Every provider in id order.
  virtual Status scan(const std::function<bool(const ProviderRecord&)>& fn) = 0;
  // The URLs of provider `id` still queued for a fetch, as the queue written into the
  // same store (its QPSDB counts) holds them at the call: init_accepted's "processing"
  // on a node without the QM (a UNS host of a shared PIDB). A store whose queue lives
  // elsewhere (a file of the QM's host) cannot know: NotSupported, as the default.
  virtual Result<std::uint64_t> queuedUrls(ProviderId id) {
    (void)id;
    return Status::notSupported("this provider store does not hold the queue");
  }

  virtual Status sync() = 0;
  virtual Status close() = 0;
};

}  // namespace lcc
