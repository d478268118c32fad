// metrics.h — counters and gauges for /metrics (Prometheus text) and /status.
//
// Names follow Prometheus conventions (docs/configuration.md, "Metrics"): lcc_<role>_…,
// counters end in _total, units are in the name (_bytes, _seconds), and a family that
// is split by a label (fetch errors by `code`) is one name with labels.
// THREADS: thread-safe; counters are atomics, registration takes a lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace lcc {

// Label name -> value, e.g. {{"code", "301"}}.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(std::uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  // For a running total kept elsewhere (it only grows).
  void setTotal(std::uint64_t v) { v_.store(v, std::memory_order_relaxed); }
  std::uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> v_{0};
};

class Gauge {
 public:
  void set(std::int64_t v) { v_.store(v, std::memory_order_relaxed); }
  void add(std::int64_t d) { v_.fetch_add(d, std::memory_order_relaxed); }
  std::int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> v_{0};
};

class Metrics {
 public:
  // Returns the counter named `name` ("lcc_uns_sets_accepted_total"), creating it.
  // The reference stays valid for the registry's lifetime.
  Counter& counter(const std::string& name, const std::string& help);
  Gauge& gauge(const std::string& name, const std::string& help);
  // One series of the family `name`, e.g. counter("lcc_qm_fetch_errors_total", help,
  // {{"code", "301"}}). A family is either labelled or not, and either counters or gauges.
  Counter& counter(const std::string& name, const std::string& help, const MetricLabels& labels);
  // Prometheus text exposition format 0.0.4: HELP and TYPE once per family.
  std::string prometheusText() const;
  // name -> value, for /status; a labelled series is `name{label="value"}`.
  std::map<std::string, std::int64_t> snapshot() const;

 private:
  struct Family {
    std::string help;
    bool is_counter = true;
    // label text ("" or `{code="301"}`) -> the series
    std::map<std::string, std::unique_ptr<Counter>> counters;
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
  };
  Family& family(const std::string& name, const std::string& help, bool is_counter);
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
};

}  // namespace lcc
