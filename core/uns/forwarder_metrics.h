#pragma once
// The forwarder's counters and gauges (core/uns/README.md); every pointer is null
// without a Metrics registry, and each use checks it.
#include "common/metrics.h"

namespace lcc::uns {

struct ForwarderMetrics {
  explicit ForwarderMetrics(Metrics* m) {
    if (!m) return;
    forwarded = &m->counter("lcc_uns_sets_forwarded_total", "sets the QM acknowledged directly");
    spooled = &m->counter("lcc_uns_sets_spooled_total", "sets written to the UNS spool");
    replayed = &m->counter("lcc_uns_sets_replayed_total", "spooled sets the QM acknowledged");
    refused = &m->counter("lcc_uns_sets_refused_total", "sets refused with 130 (spool full or failed)");
    link_drops = &m->counter("lcc_uns_qm_link_drops_total", "QM connections dropped (error, timeout, refusal)");
    corrupt = &m->counter("lcc_uns_spool_corruptions_total", "times the UNS spool was found corrupt (cache-crash raised)");
    spool_bytes = &m->gauge("lcc_uns_spool_bytes", "bytes of sets waiting in the UNS spool");
    spool_sets = &m->gauge("lcc_uns_spool_sets", "sets waiting in the UNS spool");
  }
  Counter *forwarded = nullptr, *spooled = nullptr, *replayed = nullptr, *refused = nullptr, *link_drops = nullptr,
          *corrupt = nullptr;
  Gauge *spool_bytes = nullptr, *spool_sets = nullptr;
};

}  // namespace lcc::uns
