#include "common/sample_ring.h"

#include <optional>
#include <string_view>

namespace lcc {

void SampleRing::push(Sample s) {
  std::lock_guard<std::mutex> lock(mu_);
  ring_.push_back(std::move(s));
  while (ring_.size() > capacity_) ring_.pop_front();
}

std::vector<Sample> SampleRing::samples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {ring_.begin(), ring_.end()};
}

namespace {

using Snapshot = std::map<std::string, std::int64_t>;

std::optional<std::int64_t> find(const Snapshot& m, const std::string& name) {
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

// The sum over every label set of `family` (`family` itself and `family{...}`).
std::optional<std::int64_t> sumFamily(const Snapshot& m, const std::string& family) {
  std::optional<std::int64_t> sum;
  for (auto it = m.lower_bound(family); it != m.end(); ++it) {
    const std::string& k = it->first;
    if (k.compare(0, family.size(), family) != 0) break;
    if (k.size() != family.size() && k[family.size()] != '{') continue;
    sum = sum.value_or(0) + it->second;
  }
  return sum;
}

}  // namespace

Sample sampleFromMetrics(std::int64_t unix_ms, const Snapshot& m) {
  Sample s;
  s.unix_ms = unix_ms;
  auto put = [&](const char* series, std::optional<std::int64_t> v) {
    if (v) s.values[series] = *v;
  };
  put("queued", find(m, "lcc_qm_queued_urls"));
  auto in_flight = find(m, "lcc_qm_in_flight");
  put("in_flight", in_flight ? in_flight : find(m, "lcc_botm_queued"));
  auto stored = find(m, "lcc_qm_fetched_total");
  auto errors = sumFamily(m, "lcc_qm_fetch_errors_total");
  if (stored) {
    put("fetches", *stored + find(m, "lcc_qm_unchanged_total").value_or(0) + errors.value_or(0));
    put("errors", errors.value_or(0));
  } else if (auto ok = find(m, "lcc_botm_results_ok_total")) {
    auto failed = find(m, "lcc_botm_results_failed_total").value_or(0);
    put("fetches", *ok + failed);
    put("errors", failed);
  }
  put("spool_bytes", find(m, "lcc_uns_spool_bytes"));
  return s;
}

}  // namespace lcc
