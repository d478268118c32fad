#include "app/node_monitor.h"

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

#include <cstdio>
#include <mutex>

namespace lcc {

void notifyReady(const std::string& status) { sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str()); }
void notifyStatus(const std::string& status) { sd_notifyf(0, "STATUS=%s", status.c_str()); }
void notifyStopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

std::string statusLine(const Sample& s) {
  std::string out;
  auto part = [&](const char* series, const char* fmt) {
    auto it = s.values.find(series);
    if (it == s.values.end()) return;
    char buf[96];
    std::snprintf(buf, sizeof buf, fmt, static_cast<long long>(it->second));
    out += (out.empty() ? "" : ", ") + std::string(buf);
  };
  part("queued", "queue %lld URLs");
  part("in_flight", "%lld fetching");
  part("fetches", "%lld fetches done");
  part("errors", "%lld failed");
  part("spool_bytes", "spool %lld bytes");
  return out.empty() ? "running" : out;
}

struct NodeMonitor::State {
  Clock* clock;
  const Metrics* metrics;
  SampleRing* ring;
  Millis period;
  std::mutex mu;
  bool stopped = false;
  TimerId timer = 0;
  HeapTrimmer trimmer{0};
  Counter* trims = nullptr;
  Counter* released = nullptr;
};

namespace {

void tick(const std::shared_ptr<NodeMonitor::State>& st);

// Under st->mu.
void scheduleNext(const std::shared_ptr<NodeMonitor::State>& st) {
  std::weak_ptr<NodeMonitor::State> weak = st;
  st->timer = st->clock->schedule(st->period, [weak] {
    if (auto s = weak.lock()) tick(s);
  });
}

void tick(const std::shared_ptr<NodeMonitor::State>& st) {
  std::lock_guard<std::mutex> lock(st->mu);
  if (st->stopped) return;
  Sample s = sampleFromMetrics(toUnixMillis(st->clock->now()), st->metrics->snapshot());
  notifyStatus(statusLine(s));
  st->ring->push(std::move(s));
  if (st->trims) {
    const HeapTrimmer::Outcome t = st->trimmer.maybeTrim();
    if (t.trimmed) {
      st->trims->inc();
      st->released->inc(t.released);
      spdlog::debug("heap trimmed: {} bytes free in the allocator, {} resident bytes released", t.free_before,
                    t.released);
    }
  }
  scheduleNext(st);
}

}  // namespace

NodeMonitor::NodeMonitor(Clock& clock, const Metrics& metrics, SampleRing& ring, Millis period)
    : state_(std::make_shared<State>()) {
  state_->clock = &clock;
  state_->metrics = &metrics;
  state_->ring = &ring;
  state_->period = period;
}

NodeMonitor::~NodeMonitor() { stop(); }

void NodeMonitor::trimHeapAbove(std::uint64_t threshold, Metrics& metrics) {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->trimmer = HeapTrimmer(threshold);
  state_->trims = &metrics.counter("lcc_heap_trims_total", "times the allocator's free memory was given back");
  state_->released =
      &metrics.counter("lcc_heap_released_bytes_total", "resident bytes given back to the kernel by heap trims");
}

void NodeMonitor::start() { tick(state_); }

void NodeMonitor::stop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->stopped = true;
  if (state_->timer != 0) state_->clock->cancel(state_->timer);
  state_->timer = 0;
}

}  // namespace lcc
