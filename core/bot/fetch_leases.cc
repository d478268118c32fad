// fetch_leases.cc — a robot's fetch leases (fetch_leases.h).
#include "bot/fetch_leases.h"

#include <algorithm>

namespace lcc::bot {

void FetchLeases::add(std::uint64_t fetch, MonoTime now, Millis lease) {
  if (lease.count() > 0) until_[fetch] = now + lease;
}

void FetchLeases::renew(MonoTime now, Millis lease) {
  if (lease.count() <= 0) return;
  for (auto& [fetch, until] : until_) until = now + lease;
}

std::vector<std::uint64_t> FetchLeases::expired(MonoTime now) {
  std::vector<std::uint64_t> out;
  for (auto it = until_.begin(); it != until_.end();) {
    if (it->second <= now) {
      out.push_back(it->first);
      it = until_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<MonoTime> FetchLeases::earliest() const {
  std::optional<MonoTime> first;
  for (const auto& [fetch, until] : until_) {
    if (!first || until < *first) first = until;
  }
  return first;
}

}  // namespace lcc::bot
