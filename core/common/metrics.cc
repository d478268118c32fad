#include "metrics.h"

namespace lcc {

Counter& Metrics::counter(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[name];
  if (!e.counter) {
    e.help = help;
    e.counter = std::make_unique<Counter>();
  }
  return *e.counter;
}

Gauge& Metrics::gauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& e = entries_[name];
  if (!e.gauge) {
    e.help = help;
    e.gauge = std::make_unique<Gauge>();
  }
  return *e.gauge;
}

std::string Metrics::prometheusText() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, e] : entries_) {
    out += "# HELP " + name + " " + e.help + "\n";
    if (e.counter) {
      out += "# TYPE " + name + " counter\n" + name + " " + std::to_string(e.counter->value()) + "\n";
    } else if (e.gauge) {
      out += "# TYPE " + name + " gauge\n" + name + " " + std::to_string(e.gauge->value()) + "\n";
    }
  }
  return out;
}

std::map<std::string, std::int64_t> Metrics::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::int64_t> out;
  for (const auto& [name, e] : entries_) {
    out[name] = e.counter ? static_cast<std::int64_t>(e.counter->value()) : e.gauge ? e.gauge->value() : 0;
  }
  return out;
}

}  // namespace lcc
