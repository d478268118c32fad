// node_monitor.h — what lccd tells systemd, and the samples behind the status page.
//
// notifyReady / notifyStatus / notifyStopping wrap libsystemd's sd_notify: READY=1 once
// every role listens, STATUS=<one line> with the queue depth, STOPPING=1 on SIGTERM.
// Without NOTIFY_SOCKET in the environment (not started by systemd as Type=notify)
// sd_notify sends nothing, and so do these.
//
// NodeMonitor takes a Sample of the Metrics every `period` (a Clock timer, no thread of
// its own) into a SampleRing for the charts of GET /, and sends the STATUS= line. With
// trimHeapAbove() it also gives the allocator's free memory back to the kernel on each
// tick once it passes a threshold (common/heap_trim.h, `node.heap_trim_threshold`).
// THREADS: start/stop on the main thread; the timer callback runs on the Clock's timer
// thread and only reads the (thread-safe) Metrics and pushes to the (thread-safe) ring.
#pragma once

#include <memory>
#include <string>

#include "common/heap_trim.h"
#include "common/metrics.h"
#include "common/sample_ring.h"
#include "lcc/clock.h"

namespace lcc {

void notifyReady(const std::string& status);
void notifyStatus(const std::string& status);
void notifyStopping();

// "queue 120 URLs, 4 fetching, spool 0 B" — the parts this node has.
std::string statusLine(const Sample& s);

class NodeMonitor {
 public:
  NodeMonitor(Clock& clock, const Metrics& metrics, SampleRing& ring, Millis period);
  ~NodeMonitor();  // stop()
  // Before start(): trim the heap on each tick when it holds >= threshold free bytes
  // (0: never), counted in lcc_heap_trims_total and lcc_heap_released_bytes_total.
  void trimHeapAbove(std::uint64_t threshold, Metrics& metrics);
  // Takes the first sample now, then one every period.
  void start();
  // No sample after it returns.
  void stop();

  struct State;  // shared with the timer callbacks (node_monitor.cc)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace lcc
