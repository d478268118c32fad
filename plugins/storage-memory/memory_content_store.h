// memory_content_store.h — the LCC DB in memory: records by encoded key, a seq index.
// THREADS: apply()/sync()/close() from one writer; reads run concurrently (a
// shared_mutex). Scans copy a chunk of records under the shared lock and call the
// callback without any lock, so a slow reader never stalls the writer for long and a
// callback may call the store.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>

#include "lcc/content_store.h"

namespace lcc::plugins::memory {

class MemoryContentStore final : public ContentStore {
 public:
  MemoryContentStore();

  const StoreOpenInfo& openInfo() const override { return info_; }
  Status apply(const ContentBatch& batch) override;
  Status sync() override;
  Status close() override;

  Result<std::optional<ContentRecord>> get(std::string_view encoded_key) override;
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) override;
  Status scanSince(ChangeSeq after, const ContentFilter& filter,
                   const std::function<bool(const ContentRecord&)>& fn) override;
  Result<ChangeSeq> maxSeq() override;
  Result<std::uint64_t> count() override;
  Result<std::optional<std::string>> getMeta(std::string_view key) override;

  static constexpr std::size_t kScanChunk = 256;

 private:
  Status usable() const;  // caller holds mu_

  mutable std::shared_mutex mu_;
  StoreOpenInfo info_;
  bool closed_ = false;
  Status failed_;
  ChangeSeq max_seq_ = 0;
  std::map<std::string, ContentRecord, std::less<>> records_;  // encoded key -> record
  std::map<ChangeSeq, std::string> by_seq_;                    // seq -> encoded key
  std::map<std::string, std::string, std::less<>> meta_;
};

}  // namespace lcc::plugins::memory
