#include "uns/provider_committer.h"

#include <pthread.h>

#include <algorithm>
#include <vector>

namespace lcc::uns {

ProviderCommitter::ProviderCommitter(ProviderStore* store) : store_(store) {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "lcc-pidb-commit");  // top -H, perf, gdb
    run();
  });
}

ProviderCommitter::~ProviderCommitter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ProviderCommitter::modify(ProviderId pid, Change change, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Item{pid, std::move(change), std::move(done)});
  }
  wake_.notify_one();
}

Status ProviderCommitter::modifyAndWait(ProviderId pid, Change change) {
  return waitFor<Status>([&](Done done) { modify(pid, std::move(change), std::move(done)); });
}

ProviderCommitter::Stats ProviderCommitter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ProviderCommitter::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing is left to commit
    // Everything queued while the previous sync ran goes into this one.
    std::deque<Item> batch;
    batch.swap(queue_);
    lock.unlock();
    commit(batch);
    lock.lock();
  }
}

void ProviderCommitter::commit(std::deque<Item>& batch) {
  std::vector<Status> applied;
  applied.reserve(batch.size());
  bool any = false;
  for (Item& item : batch) {
    applied.push_back(store_ ? store_->modify(item.pid, item.change, WriteOptions{.durable = false})
                             : Status::internal("no provider store"));
    any = any || applied.back().isOk();
  }
  // One sync makes every change of the batch durable; none is reported before it.
  const Status synced = any ? store_->sync() : Status::ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.changes += batch.size();
    if (any) ++stats_.syncs;
    stats_.largest_batch = std::max<std::uint64_t>(stats_.largest_batch, batch.size());
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].done) batch[i].done(applied[i].isOk() ? synced : applied[i]);
  }
}

}  // namespace lcc::uns
