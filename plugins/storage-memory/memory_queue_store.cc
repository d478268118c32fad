#include "memory_queue_store.h"

#include <vector>

namespace lcc::plugins::memory {

MemoryQueueStore::MemoryQueueStore() {
  info_.engine = "memory";
  info_.persistent = false;
  info_.created = true;
  info_.clean_shutdown = true;
  info_.may_have_lost_synced = false;
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
  std::vector<QueueEntry> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LCC_RETURN_IF_ERROR(usable());
    rows.reserve(entries_.size());
    for (const auto& [k, e] : entries_) rows.push_back(e);
  }
  for (const auto& e : rows) {
    if (!fn(e)) break;
  }
  return Status::ok();
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
  std::vector<PSetRecord> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LCC_RETURN_IF_ERROR(usable());
    for (const auto& [k, p] : psets_) {
      if (!slot || p.slot == *slot) rows.push_back(p);
    }
  }
  for (const auto& p : rows) {
    if (!fn(p)) break;
  }
  return Status::ok();
}

Status MemoryQueueStore::scanDeletes(std::optional<std::string> machine,
                                     const std::function<bool(const DeleteRequest&)>& fn) {
  std::vector<DeleteRequest> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LCC_RETURN_IF_ERROR(usable());
    if (machine) {
      for (auto it = deletes_.lower_bound({*machine, std::string()}); it != deletes_.end() && it->first.first == *machine;
           ++it) {
        rows.push_back(it->second);
      }
    } else {
      for (const auto& [k, d] : deletes_) rows.push_back(d);
    }
  }
  for (const auto& d : rows) {
    if (!fn(d)) break;
  }
  return Status::ok();
}

Result<std::optional<std::string>> MemoryQueueStore::getMeta(std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = meta_.find(key);
  if (it == meta_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace lcc::plugins::memory
