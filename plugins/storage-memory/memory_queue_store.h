// memory_queue_store.h — QDB, QPSDB, FSMDB and meta in ordered maps.
// THREADS: as QueueStore (one thread at a time); a mutex makes misuse harmless.
// Scans copy up to 256 rows at a time and call back without the lock.
// DURABILITY: none (openInfo().persistent == false); sync() only checks state.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "lcc/queue_store.h"

namespace lcc::plugins::memory {

class MemoryQueueStore final : public QueueStore {
 public:
  MemoryQueueStore();

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const QueueBatch& batch) override;
  Status sync() override;
  Status close() override;

  Result<std::optional<QueueEntry>> getEntry(std::string_view key) override;
  Status scanEntries(const std::function<bool(const QueueEntry&)>& fn) override;
  Result<std::uint64_t> entryCount() override;
  Result<std::optional<PSetRecord>> getPSet(PSetId pset, TimeSlot slot) override;
  Status scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) override;
  Status scanDeletes(std::optional<std::string> machine,
                     const std::function<bool(const DeleteRequest&)>& fn) override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  static constexpr std::size_t kScanChunk = 256;
  Status usable() const;  // caller holds mu_
  template <typename Map, typename Key, typename Row, typename Pred, typename Stop = bool (*)(const Row&)>
  Status scanChunked(const Map& map, Key from, Pred matches, const std::function<bool(const Row&)>& fn,
                     Stop past_end = [](const Row&) { return false; });

  mutable std::mutex mu_;
  StoreOpenInfo info_;
  bool closed_ = false;
  Status failed_;  // sticky write error
  std::map<std::string, QueueEntry, std::less<>> entries_;
  std::map<std::pair<PSetId, TimeSlot>, PSetRecord> psets_;
  std::map<std::pair<std::string, std::string>, DeleteRequest> deletes_;
  std::map<std::string, std::string, std::less<>> meta_;
};

}  // namespace lcc::plugins::memory
