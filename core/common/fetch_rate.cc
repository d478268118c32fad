#include "common/fetch_rate.h"

namespace lcc {

void FetchRates::record(ProviderId pid, bool failed, std::int64_t unix_ms) {
  const std::int64_t w = unix_ms / kWindowMs;
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[pid];
  ++(failed ? e.failed : e.fetched);
  if (w > e.window) {
    e.previous = w == e.window + 1 ? e.current : 0;
    e.current = 0;
    e.window = w;
  }
  ++e.current;  // a result from an earlier window (a clock step back) counts as now
}

ProviderFetchRate FetchRates::get(ProviderId pid, std::int64_t unix_ms) const {
  ProviderFetchRate out;
  const std::int64_t w = unix_ms / kWindowMs;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pid);
  if (it == entries_.end()) return out;
  const Entry& e = it->second;
  out.fetched = e.fetched;
  out.failed = e.failed;
  std::uint64_t current = e.current, previous = e.previous;
  if (w == e.window + 1) {
    previous = current;
    current = 0;
  } else if (w > e.window + 1) {
    previous = current = 0;
  }
  const double into = static_cast<double>(unix_ms - w * kWindowMs) / kWindowMs;  // 0..1 of the current window
  const double last5 = static_cast<double>(previous) * (1.0 - into) + static_cast<double>(current);
  out.per_minute = last5 / (kWindowMs / 60000.0);
  return out;
}

}  // namespace lcc
