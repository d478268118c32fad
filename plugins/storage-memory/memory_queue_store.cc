#include "memory_queue_store.h"

#include <limits>
#include <vector>

namespace lcc::plugins::memory {

MemoryQueueStore::MemoryQueueStore() {
  info_.engine = "memory";
  info_.persistent = false;
  info_.created = true;
  info_.clean_shutdown = true;
  info_.may_have_lost_synced = false;
}

// Copies up to kScanChunk matching rows at a time under the lock, then calls `fn`
// without it (so `fn` may call the store), resuming after the last key seen.
template <typename Map, typename Key, typename Row, typename Pred, typename Stop>
Status MemoryQueueStore::scanChunked(const Map& map, Key from, Pred matches,
                                     const std::function<bool(const Row&)>& fn, Stop past_end) {
  bool first = true;
  std::vector<Row> chunk;
  for (;;) {
    chunk.clear();
    bool more = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      LCC_RETURN_IF_ERROR(usable());
      auto it = first ? map.lower_bound(from) : map.upper_bound(from);
      std::size_t looked = 0;
      for (; it != map.end() && chunk.size() < kScanChunk && looked < kScanChunk * 16; ++it, ++looked) {
        if (past_end(it->second)) break;
        from = it->first;
        if (matches(it->second)) chunk.push_back(it->second);
      }
      more = it != map.end() && !past_end(it->second);
    }
    first = false;
    for (const auto& row : chunk) {
      if (!fn(row)) return Status::ok();
    }
    if (!more) return Status::ok();
  }
}

Status MemoryQueueStore::usable() const {
  if (closed_) return Status::aborted("storage-memory: queue store is closed");
  return Status::ok();
}

Status MemoryQueueStore::apply(const QueueBatch& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  if (!failed_.isOk()) return failed_;
  // Check the whole batch first, so that a refused batch changes nothing.
  for (const auto& op : batch.ops()) {
    if (const auto* r = std::get_if<QueueBatch::RemoveEntry>(&op); r && !decodeUrlKey(r->key)) {
      failed_ = Status::invalidArgument("storage-memory: queue batch removes a key that is not an encoded UrlKey");
      return failed_;
    }
  }
  for (const auto& op : batch.ops()) {
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, QueueBatch::PutEntry>) {
            entries_[encodeUrlKey(o.entry.notice.key)] = o.entry;
          } else if constexpr (std::is_same_v<T, QueueBatch::RemoveEntry>) {
            entries_.erase(o.key);
          } else if constexpr (std::is_same_v<T, QueueBatch::PutPSet>) {
            psets_[{o.pset.pset, o.pset.slot}] = o.pset;
          } else if constexpr (std::is_same_v<T, QueueBatch::RemovePSet>) {
            psets_.erase({o.pset, o.slot});
          } else if constexpr (std::is_same_v<T, QueueBatch::PutDelete>) {
            deletes_[{o.request.machine, o.request.filename}] = o.request;
          } else if constexpr (std::is_same_v<T, QueueBatch::RemoveDelete>) {
            deletes_.erase({o.machine, o.filename});
          } else if constexpr (std::is_same_v<T, QueueBatch::PutMeta>) {
            meta_[o.key] = o.value;
          }
        },
        op);
  }
  return Status::ok();
}

Status MemoryQueueStore::sync() {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  return failed_;
}

Status MemoryQueueStore::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Status::ok();
  closed_ = true;
  entries_.clear();
  psets_.clear();
  deletes_.clear();
  meta_.clear();
  return failed_;
}

Result<std::optional<QueueEntry>> MemoryQueueStore::getEntry(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::optional<QueueEntry>();
  return std::optional<QueueEntry>(it->second);
}

Status MemoryQueueStore::scanEntries(const std::function<bool(const QueueEntry&)>& fn) {
  return scanChunked(entries_, std::string(), [](const QueueEntry&) { return true; }, fn);
}

Result<std::uint64_t> MemoryQueueStore::entryCount() {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  return static_cast<std::uint64_t>(entries_.size());
}

Result<std::optional<PSetRecord>> MemoryQueueStore::getPSet(PSetId pset, TimeSlot slot) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = psets_.find({pset, slot});
  if (it == psets_.end()) return std::optional<PSetRecord>();
  return std::optional<PSetRecord>(it->second);
}

Status MemoryQueueStore::scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) {
  return scanChunked(psets_, std::pair<PSetId, TimeSlot>(0, std::numeric_limits<TimeSlot>::min()),
                     [&](const PSetRecord& p) { return !slot || p.slot == *slot; }, fn);
}

Status MemoryQueueStore::scanDeletes(std::optional<std::string> machine,
                                     const std::function<bool(const DeleteRequest&)>& fn) {
  return scanChunked(deletes_, std::pair<std::string, std::string>(machine.value_or(""), ""),
                     [&](const DeleteRequest& d) { return !machine || d.machine == *machine; }, fn,
                     [&](const DeleteRequest& d) { return machine && d.machine != *machine; });
}

Result<std::optional<std::string>> MemoryQueueStore::getMeta(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = meta_.find(key);
  if (it == meta_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace lcc::plugins::memory
