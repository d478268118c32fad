// fetch_rate.h — each provider's fetch results since the start and their recent rate, for
// the status page's provider page (NodeContext::provider_fetches; the QM counts).
//
// The rate is the count of the last two 5-minute windows, the older one weighted by how
// much of it still lies within the last 5 minutes (a sliding window without a list of
// times): results per minute over about the last 5 to 10 minutes. One small entry per
// provider that had a result since the start.
// THREADS: thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "common/service.h"

namespace lcc {

class FetchRates {
 public:
  static constexpr std::int64_t kWindowMs = 5 * 60 * 1000;

  // A result for `pid` at `unix_ms`: failed (an error code) or not (stored, unchanged, gone).
  void record(ProviderId pid, bool failed, std::int64_t unix_ms);
  ProviderFetchRate get(ProviderId pid, std::int64_t unix_ms) const;

 private:
  struct Entry {
    std::uint64_t fetched = 0, failed = 0;
    std::int64_t window = 0;      // index of the current window (unix_ms / kWindowMs)
    std::uint64_t current = 0;    // results in it
    std::uint64_t previous = 0;   // results in the window before it
  };
  mutable std::mutex mu_;
  std::unordered_map<ProviderId, Entry> entries_;
};

}  // namespace lcc
