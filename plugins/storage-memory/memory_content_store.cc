#include "memory_content_store.h"

#include <mutex>
#include <vector>

namespace lcc::plugins::memory {

MemoryContentStore::MemoryContentStore() {
  info_.engine = "memory";
  info_.persistent = false;
  info_.created = true;
  info_.clean_shutdown = true;
  info_.may_have_lost_synced = false;
}

Status MemoryContentStore::usable() const {
  if (closed_) return Status::aborted("storage-memory: content store is closed");
  return Status::ok();
}

Status MemoryContentStore::apply(const ContentBatch& batch) {
  std::unique_lock<std::shared_mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  if (!failed_.isOk()) return failed_;
  // Check the whole batch before changing anything: seqs must grow, keys must decode.
  ChangeSeq seq = max_seq_;
  for (const auto& op : batch.ops()) {
    if (const auto* p = std::get_if<ContentBatch::Put>(&op)) {
      auto existing = records_.find(encodeUrlKey(p->record.key));
      if (existing != records_.end() && existing->second.seq == p->record.seq) continue;  // in place
      if (p->record.seq <= seq) {
        failed_ = Status::invalidArgument("storage-memory: content put with seq " + std::to_string(p->record.seq) +
                                          ", expected more than " + std::to_string(seq));
        return failed_;
      }
      seq = p->record.seq;
    } else if (const auto* e = std::get_if<ContentBatch::Erase>(&op); e && !decodeUrlKey(e->key)) {
      failed_ = Status::invalidArgument("storage-memory: content erase of a key that is not an encoded UrlKey");
      return failed_;
    }
  }
  for (const auto& op : batch.ops()) {
    if (const auto* p = std::get_if<ContentBatch::Put>(&op)) {
      std::string key = encodeUrlKey(p->record.key);
      auto it = records_.find(key);
      // created_seq: kept while the URL stays stored, else this put's seq.
      const bool live = it != records_.end() && !it->second.deleted;
      const ChangeSeq created = live ? it->second.created_seq : p->record.seq;
      if (it != records_.end()) {
        by_seq_.erase(it->second.seq);
        it->second = p->record;
      } else {
        it = records_.emplace(key, p->record).first;
      }
      it->second.created_seq = created;
      by_seq_[p->record.seq] = std::move(key);
      max_seq_ = std::max(max_seq_, p->record.seq);
    } else if (const auto* e = std::get_if<ContentBatch::Erase>(&op)) {
      auto it = records_.find(e->key);
      if (it != records_.end()) {
        by_seq_.erase(it->second.seq);
        records_.erase(it);
      }
    } else if (const auto* m = std::get_if<ContentBatch::PutMeta>(&op)) {
      meta_[m->key] = m->value;
    }
  }
  return Status::ok();
}

Status MemoryContentStore::sync() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  return failed_;
}

Status MemoryContentStore::close() {
  std::unique_lock<std::shared_mutex> lock(mu_);
  if (closed_) return Status::ok();
  closed_ = true;
  records_.clear();
  by_seq_.clear();
  meta_.clear();
  return failed_;
}

Result<std::optional<ContentRecord>> MemoryContentStore::get(std::string_view encoded_key) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = records_.find(encoded_key);
  if (it == records_.end()) return std::optional<ContentRecord>();
  return std::optional<ContentRecord>(it->second);
}

Status MemoryContentStore::scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) {
  const std::string prefix = encodeProviderPrefix(pid);
  std::string from = prefix;  // next key to look at (inclusive on the first round)
  bool first = true;
  std::vector<ContentRecord> chunk;
  for (;;) {
    chunk.clear();
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      LCC_RETURN_IF_ERROR(usable());
      auto it = first ? records_.lower_bound(from) : records_.upper_bound(from);
      for (; it != records_.end() && chunk.size() < kScanChunk; ++it) {
        if (it->first.compare(0, prefix.size(), prefix) != 0) break;
        chunk.push_back(it->second);
        from = it->first;
      }
    }
    first = false;
    for (const auto& r : chunk) {
      if (!fn(r)) return Status::ok();
    }
    if (chunk.size() < kScanChunk) return Status::ok();
  }
}

Status MemoryContentStore::scanSince(ChangeSeq after, const ContentFilter& filter,
                                     const std::function<bool(const ContentRecord&)>& fn) {
  ChangeSeq from = after;
  std::vector<ContentRecord> chunk;
  for (;;) {
    chunk.clear();
    bool more = false;
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      LCC_RETURN_IF_ERROR(usable());
      std::size_t looked = 0;
      auto it = by_seq_.upper_bound(from);
      for (; it != by_seq_.end() && looked < kScanChunk * 16 && chunk.size() < kScanChunk; ++it, ++looked) {
        from = it->first;
        const ContentRecord& r = records_.at(it->second);
        if (filter.matches(r)) chunk.push_back(r);
      }
      more = it != by_seq_.end();
    }
    for (const auto& r : chunk) {
      if (!fn(r)) return Status::ok();
    }
    if (!more) return Status::ok();
  }
}

Result<ChangeSeq> MemoryContentStore::maxSeq() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  return max_seq_;
}

Result<std::uint64_t> MemoryContentStore::count() {
  std::shared_lock<std::shared_mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  return static_cast<std::uint64_t>(records_.size());
}

Result<std::optional<std::string>> MemoryContentStore::getMeta(std::string_view key) {
  std::shared_lock<std::shared_mutex> lock(mu_);
  LCC_RETURN_IF_ERROR(usable());
  auto it = meta_.find(key);
  if (it == meta_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace lcc::plugins::memory
