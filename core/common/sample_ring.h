// sample_ring.h — the last hour of a node's figures, for the charts of the status page.
//
// lccd takes a Sample every 10 s (core/app/node_monitor.h) from its Metrics; the ring
// keeps the newest `capacity` of them and drops the oldest. Values are raw: gauges as
// they were, counters as running totals (a chart of a rate takes the differences).
// THREADS: thread-safe; push() from the monitor's timer, samples() from HTTP threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace lcc {

struct Sample {
  std::int64_t unix_ms = 0;                   // wall time of the sample
  std::map<std::string, std::int64_t> values;  // series name -> value
};

class SampleRing {
 public:
  explicit SampleRing(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}
  void push(Sample s);
  // Oldest first.
  std::vector<Sample> samples() const;
  std::size_t capacity() const { return capacity_; }

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Sample> ring_;
};

// The series the status page draws, read from a Metrics snapshot (name -> value):
//   queued       lcc_qm_queued_urls
//   in_flight    lcc_qm_in_flight, else lcc_botm_queued
//   fetches      completed fetches: QM stored + unchanged + errors, else BOT-M results
//   errors       failed fetches (every code of lcc_qm_fetch_errors_total, else BOT-M)
//   spool_bytes  lcc_uns_spool_bytes
// A series whose metric this node does not have is left out.
Sample sampleFromMetrics(std::int64_t unix_ms, const std::map<std::string, std::int64_t>& snapshot);

}  // namespace lcc
