#include "memory_provider_store.h"

#include <limits>
#include <string>
#include <vector>

namespace lcc::plugins::memory {

MemoryProviderStore::MemoryProviderStore() {
  info_.engine = "memory";
  info_.persistent = false;
  info_.created = true;
  info_.clean_shutdown = true;
  info_.may_have_lost_synced = false;
}

Status MemoryProviderStore::usable() const {
  if (closed_) return Status::aborted("storage-memory: provider store is closed");
  return Status::ok();
}

Result<ProviderId> MemoryProviderStore::create(const ProviderRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  if (next_id_ == std::numeric_limits<ProviderId>::max()) {
    return Status::ioError("storage-memory: provider ids exhausted");
  }
  const ProviderId id = next_id_++;
  ProviderRecord r = record;
  r.id = id;
  records_[id] = std::move(r);
  return id;
}

Result<std::optional<ProviderRecord>> MemoryProviderStore::get(ProviderId id) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = records_.find(id);
  if (it == records_.end()) return std::optional<ProviderRecord>();
  return std::optional<ProviderRecord>(it->second);
}

Status MemoryProviderStore::put(const ProviderRecord& record, const WriteOptions& /*options*/) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = records_.find(record.id);
  if (it == records_.end()) return Status::notFound("provider " + std::to_string(record.id) + " does not exist");
  it->second = record;
  return Status::ok();
}

Status MemoryProviderStore::modify(ProviderId id, const std::function<Status(ProviderRecord&)>& fn,
                                   const WriteOptions& /*options*/) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = records_.find(id);
  if (it == records_.end()) return Status::notFound("provider " + std::to_string(id) + " does not exist");
  ProviderRecord copy = it->second;
  LCC_RETURN_IF_ERROR(fn(copy));
  copy.id = id;  // the id is the key; fn cannot move a record
  it->second = std::move(copy);
  return Status::ok();
}

Status MemoryProviderStore::remove(ProviderId id) {
  std::lock_guard<std::mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  if (records_.erase(id) == 0) return Status::notFound("provider " + std::to_string(id) + " does not exist");
  return Status::ok();
}

Status MemoryProviderStore::scan(const std::function<bool(const ProviderRecord&)>& fn) {
  std::vector<ProviderRecord> rows;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LCC_RETURN_IF_ERROR(usable());
    rows.reserve(records_.size());
    for (const auto& [id, r] : records_) rows.push_back(r);
  }
  for (const auto& r : rows) {
    if (!fn(r)) break;
  }
  return Status::ok();
}

Status MemoryProviderStore::sync() {
  std::lock_guard<std::mutex> lock(mu_);
  return usable();
}

Status MemoryProviderStore::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  records_.clear();
  return Status::ok();
}

}  // namespace lcc::plugins::memory
