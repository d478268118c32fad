// provider_committer.h — group commit of PIDB writes (ProviderStore::modify) across CP
// sessions: the changes of every session that arrives while one sync runs share the
// next sync, so N concurrent sessions cost about one fdatasync per batch, not N.
//
// modify() queues a read-modify-write and returns at once. The committer's thread
// (lcc-pidb-commit) takes everything queued, applies each change with
// WriteOptions::durable = false (written, not yet synced), calls ProviderStore::sync()
// once, and only then calls each change's `done` with its status: the status of its
// own modify if that failed, else that of the sync. So a `done(OK)` means the change is
// durable, and a failed sync fails every change of its batch. A caller must not answer
// a CP before its `done` (nothing acknowledged may be lost: the connection seq a CP was
// told never repeats after a crash). Later changes see earlier ones of the same
// provider before they are synced; both are acknowledged only by syncs that cover them,
// in order.
//
// Why a thread and not "the first waiter leads": the callers do not block (a session
// waits on its strand, the password checks run on a two-thread pool), so a
// waiter-leads scheme would bound a batch by the number of blocked threads.
// THREADS: thread-safe. `done` runs on the committer's thread; it must not block
// (post the rest to the caller's executor) and may call modify() again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "lcc/provider_store.h"

namespace lcc::uns {

// Calls start(callback) and waits until the callback got its value (which may be
// on another thread, or already inside start). Not on the thread that calls back.
template <typename T, typename Start>
T waitFor(Start&& start) {
  auto result = std::make_shared<std::promise<T>>();
  std::future<T> got = result->get_future();
  start([result](T value) { result->set_value(std::move(value)); });
  return got.get();
}

class ProviderCommitter {
 public:
  using Change = std::function<Status(ProviderRecord&)>;
  using Done = std::function<void(const Status&)>;

  struct Stats {
    std::uint64_t changes = 0;    // changes committed (done called)
    std::uint64_t syncs = 0;      // ProviderStore::sync() calls
    std::uint64_t largest_batch = 0;
  };

  explicit ProviderCommitter(ProviderStore* store);
  // Commits what is queued, calls every `done`, then stops the thread.
  ~ProviderCommitter();
  ProviderCommitter(const ProviderCommitter&) = delete;
  ProviderCommitter& operator=(const ProviderCommitter&) = delete;

  // Queues `change` of provider `pid` (as ProviderStore::modify: NotFound when there
  // is no such provider; `change` runs under the store's lock and must not call it).
  void modify(ProviderId pid, Change change, Done done);
  // The same, waiting for the sync that covers it (not on the committer's thread).
  Status modifyAndWait(ProviderId pid, Change change);

  Stats stats() const;

 private:
  struct Item {
    ProviderId pid;
    Change change;
    Done done;
  };
  void run();
  void commit(std::deque<Item>& batch);

  ProviderStore* store_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  Stats stats_;
  std::thread thread_;
};

}  // namespace lcc::uns
