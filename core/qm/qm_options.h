// qm_options.h — the QM engine's settings (QueueManager, queue_manager.h).
//
// Every member with a config key is named after its key (qm.apply_batch_ops ->
// apply_batch_ops) and has no default of its own: the default is the schema's
// (core/common/config/schema.cc), and fromConfig() is the only way to get it. Tests and
// benchmarks start from QmOptions::fromConfig(Config::defaults()) and change what they
// need. Members without a key keep a default here and say so.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lcc/types.h"

namespace lcc {
class Config;
}

namespace lcc::qm {

struct QmOptions {
  std::uint64_t queue_high = 0;           // qm.queue_high
  std::uint64_t queue_low = 0;            // qm.queue_low
  std::int32_t slots = 0;                 // qm.slots
  Millis slot_period{};                   // qm.slot_period
  Millis merge_interval{};                // qm.merge_interval
  Millis bandwidth_tick{};                // qm.bandwidth_tick
  Millis bandwidth_horizon{};             // qm.bandwidth_horizon
  std::uint32_t provider_inflight = 0;    // qm.provider_inflight
  std::uint32_t host_inflight = 0;        // qm.host_inflight
  std::uint32_t botm_overload_pct = 0;    // qm.botm_overload_pct
  std::uint32_t max_retries = 0;          // qm.max_retries
  Millis retry_delay{};                   // qm.retry_delay
  Millis provider_error_delay{};          // qm.provider_error_delay
  std::uint32_t max_errors_kept = 0;      // qm.max_errors_kept
  Millis age_warn{};                      // qm.age_warn
  Millis age_expire{};                    // qm.age_expire
  Millis age_check_interval{};            // qm.age_check_interval
  Millis tombstone_keep{};                // qm.tombstone_keep
  Millis checkpoint_interval{};           // qm.checkpoint_interval
  Millis provider_refresh{};              // qm.provider_refresh: administrator changes read from the PIDB
  std::uint64_t checkpoint_bytes = 0;     // qm.checkpoint_bytes
  Millis group_commit_delay{};            // qm.group_commit_delay
  std::uint64_t max_fetch_size = 0;       // qm.max_fetch_size
  std::size_t apply_batch_ops = 0;        // qm.apply_batch_ops: a large set or a group is applied in batches of this many ops
  std::size_t delete_window = 0;          // qm.delete_window: deletes outstanding per BOT-M link
  Millis delete_retry{};                  // qm.delete_retry: periodic retry and first back-off of a failed delete
  Millis delete_retry_max{};              // qm.delete_retry_max: the back-off's ceiling (at least delete_retry)
  Millis store_retry_max{};               // qm.store_retry_max: ceiling of the Busy store's retry delay (at least kStoreRetry)
  bool ack_after_store = false;           // qm.ack_after_store: acks wait for the stores (queue_manager_acks.cc)
  Millis fetch_lease{};                   // qm.fetch_lease: how long a fetch handed out may start (fetch_lease.h)
  RedirectPolicy redirects{};             // fetch.redirects, sent with each fetch
  // No config key (internal sizes; their defaults live here):
  std::size_t intake_hold_urls = 4096;            // a set past this many URLs is journaled in parts as it comes
  std::uint64_t intake_sync_bytes = 16ull << 20;  // parts journaled past this many bytes are synced (not acked)

  static QmOptions fromConfig(const Config& config);
};

}  // namespace lcc::qm
