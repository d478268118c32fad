// memory_provider_store.h — the PIDB in memory.
// THREADS: every method is thread-safe (one mutex). scan() copies the records and
// calls the callback without the lock; modify() runs its callback under the lock.
#pragma once

#include <map>
#include <mutex>

#include "lcc/provider_store.h"

namespace lcc::plugins::memory {

class MemoryProviderStore final : public ProviderStore {
 public:
  MemoryProviderStore();

  const StoreOpenInfo& openInfo() const override { return info_; }
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
  Status usable() const;  // caller holds mu_

  mutable std::mutex mu_;
  StoreOpenInfo info_;
  bool closed_ = false;
  ProviderId next_id_ = 1;
  std::map<ProviderId, ProviderRecord> records_;
};

}  // namespace lcc::plugins::memory
