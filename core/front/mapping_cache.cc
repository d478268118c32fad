#include "front/mapping_cache.h"

namespace lcc::front {

std::optional<Route> MappingCache::get(std::uint64_t id, MonoTime now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return std::nullopt;
  if (now >= it->second.expires) {
    order_.erase(it->second.pos);
    map_.erase(it);
    return std::nullopt;
  }
  order_.splice(order_.begin(), order_, it->second.pos);
  return it->second.route;
}

void MappingCache::put(std::uint64_t id, Route route, MonoTime now) {
  if (capacity_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(id); it != map_.end()) {
    order_.erase(it->second.pos);
    map_.erase(it);
  }
  while (map_.size() >= capacity_) {
    map_.erase(order_.back());
    order_.pop_back();
  }
  order_.push_front(id);
  map_[id] = Entry{std::move(route), now + ttl_, order_.begin()};
}

void MappingCache::erase(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(id); it != map_.end()) {
    order_.erase(it->second.pos);
    map_.erase(it);
  }
}

std::size_t MappingCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.size();
}

}  // namespace lcc::front
