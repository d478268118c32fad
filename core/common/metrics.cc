#include "metrics.h"

namespace lcc {
namespace {

// `{a="x",b="y"}` with \, " and newline escaped as the text format wants; "" for none.
std::string labelText(const MetricLabels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (const auto& [k, v] : labels) {
    if (out.size() > 1) out += ',';
    out += k + "=\"";
    for (char c : v) {
      if (c == '\\' || c == '"') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += '"';
  }
  return out + "}";
}

}  // namespace

Metrics::Family& Metrics::family(const std::string& name, const std::string& help, bool is_counter) {
  auto [it, made] = families_.try_emplace(name);
  if (made) {
    it->second.help = help;
    it->second.is_counter = is_counter;
  }
  return it->second;
}

Counter& Metrics::counter(const std::string& name, const std::string& help) { return counter(name, help, {}); }

Counter& Metrics::counter(const std::string& name, const std::string& help, const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = family(name, help, true).counters[labelText(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

Gauge& Metrics::gauge(const std::string& name, const std::string& help) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = family(name, help, false).gauges[""];
  if (!slot) slot = std::make_unique<Gauge>();
  return *slot;
}

std::string Metrics::prometheusText() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + (f.is_counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, c] : f.counters) out += name + labels + " " + std::to_string(c->value()) + "\n";
    for (const auto& [labels, g] : f.gauges) out += name + labels + " " + std::to_string(g->value()) + "\n";
  }
  return out;
}

std::map<std::string, std::int64_t> Metrics::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::int64_t> out;
  for (const auto& [name, f] : families_) {
    for (const auto& [labels, c] : f.counters) out[name + labels] = static_cast<std::int64_t>(c->value());
    for (const auto& [labels, g] : f.gauges) out[name + labels] = g->value();
  }
  return out;
}

}  // namespace lcc
