// kyoto_stores.h — QueueStore, ContentStore and ProviderStore on KvEngine.
//
// Files (under the store folder, node.data_dir by default):
//   queue.kch      HashDB  QDB rows: encodeUrlKey -> QueueEntry
//   queue.kct      TreeDB  'P' pset slot -> PSetRecord; 'S' slot pset -> "" (the
//                          by-slot index); 'D' machine \0 filename -> DeleteRequest;
//                          'M' key -> meta value ('N', the QDB row count of earlier
//                          versions, is removed by the first batch: the count is
//                          queue.kch's own now, KvEngine::rowCount)
//   content.kct    TreeDB  'R' key -> ContentRecord; 'S' seq -> key; 'Q' -> max seq;
//                          'N' -> record count; 'M' key -> meta value
//   providers.kct  TreeDB  'R' id -> ProviderRecord; 'I' -> last id
//   <store>.meta, <store>.redo/  see kv_engine.h
#pragma once

#include <memory>
#include <mutex>

#include "kv_engine.h"
#include "lcc/content_store.h"
#include "lcc/provider_store.h"
#include "lcc/queue_store.h"

namespace lcc::plugins::kyoto {

class KyotoQueueStore final : public QueueStore {
 public:
  static Result<QueueStore*> open(const HostContext& host, const EngineOptions& options);

  const StoreOpenInfo& openInfo() const override { return engine_->openInfo(); }
  Status apply(const QueueBatch& batch) override;
  Status sync() override { return engine_->sync(); }
  Status close() override { return engine_->close(); }
  Result<std::optional<QueueEntry>> getEntry(std::string_view key) override;
  Status scanEntries(const std::function<bool(const QueueEntry&)>& fn) override;
  Result<std::uint64_t> entryCount() override;
  Result<std::optional<PSetRecord>> getPSet(PSetId pset, TimeSlot slot) override;
  Status scanPSets(std::optional<TimeSlot> slot, const std::function<bool(const PSetRecord&)>& fn) override;
  Status scanDeletes(std::optional<std::string> machine, const std::function<bool(const DeleteRequest&)>& fn) override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  std::unique_ptr<KvEngine> engine_;
  Status failed_;  // a refused batch (precondition violated) is sticky like an I/O error
  bool legacy_count_ = false;  // queue.kct still holds the 'N' row counter of an earlier version
};

class KyotoContentStore final : public ContentStore {
 public:
  static Result<ContentStore*> open(const HostContext& host, const EngineOptions& options);

  const StoreOpenInfo& openInfo() const override { return engine_->openInfo(); }
  Status apply(const ContentBatch& batch) override;
  Status sync() override { return engine_->sync(); }
  Status close() override { return engine_->close(); }
  Result<std::optional<ContentRecord>> get(std::string_view encoded_key) override;
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) override;
  Status scanSince(ChangeSeq after, const ContentFilter& filter,
                   const std::function<bool(const ContentRecord&)>& fn) override;
  Result<ChangeSeq> maxSeq() override;
  Result<std::uint64_t> count() override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

 private:
  std::unique_ptr<KvEngine> engine_;
  std::mutex write_mu_;
  Status failed_;
};

class KyotoProviderStore final : public ProviderStore {
 public:
  static Result<ProviderStore*> open(const HostContext& host, const EngineOptions& options);

  const StoreOpenInfo& openInfo() const override { return engine_->openInfo(); }
  Result<ProviderId> create(const ProviderRecord& record) override;
  Result<std::optional<ProviderRecord>> get(ProviderId id) override;
  Status put(const ProviderRecord& record, const WriteOptions& options) override;
  Status modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                const WriteOptions& options) override;
  using ProviderStore::modify;
  using ProviderStore::put;
  Status remove(ProviderId id) override;
  Status scan(const std::function<bool(const ProviderRecord&)>& fn) override;
  Status sync() override;
  Status close() override;

 private:
  Status write(KvEngine::Batch batch, bool durable);
  std::unique_ptr<KvEngine> engine_;
  std::mutex mu_;  // create/put/modify/remove are read-modify-writes
};

}  // namespace lcc::plugins::kyoto
