// mapping_cache.h — the front end's provider → sub-LCC lookups, remembered: at most
// `capacity` entries (the least recently used goes first) for at most `ttl` each, so a
// provider moved or removed is seen again within ttl. Only placed mappings are kept.
// THREADS: thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "lcc/clock.h"

namespace lcc::front {

struct Route {
  std::string lcc;             // the sub-LCC's name
  std::uint64_t local_id = 0;  // the provider's id there
};

class MappingCache {
 public:
  MappingCache(std::size_t capacity, Millis ttl) : capacity_(capacity), ttl_(ttl) {}
  std::optional<Route> get(std::uint64_t id, MonoTime now);
  void put(std::uint64_t id, Route route, MonoTime now);
  void erase(std::uint64_t id);
  std::size_t size() const;

 private:
  struct Entry {
    Route route;
    MonoTime expires;
    std::list<std::uint64_t>::iterator pos;
  };
  const std::size_t capacity_;
  const Millis ttl_;
  mutable std::mutex mu_;
  std::list<std::uint64_t> order_;  // most recently used first
  std::unordered_map<std::uint64_t, Entry> map_;
};

}  // namespace lcc::front
