// qm_options.cc — QmOptions from the config: each qm.* key (and fetch.redirects) into
// the member of the same name.
#include "qm/qm_options.h"

#include <algorithm>

#include "common/config/config.h"

namespace lcc::qm {

QmOptions QmOptions::fromConfig(const Config& c) {
  QmOptions o;
  o.queue_high = static_cast<std::uint64_t>(c.getInt("qm.queue_high"));
  o.queue_low = static_cast<std::uint64_t>(c.getInt("qm.queue_low"));
  o.slots = static_cast<std::int32_t>(c.getInt("qm.slots"));
  o.slot_period = Millis(c.getInt("qm.slot_period"));
  o.merge_interval = Millis(c.getInt("qm.merge_interval"));
  o.bandwidth_tick = Millis(c.getInt("qm.bandwidth_tick"));
  o.bandwidth_horizon = Millis(c.getInt("qm.bandwidth_horizon"));
  o.provider_inflight = static_cast<std::uint32_t>(c.getInt("qm.provider_inflight"));
  o.host_inflight = static_cast<std::uint32_t>(c.getInt("qm.host_inflight"));
  o.botm_overload_pct = static_cast<std::uint32_t>(c.getInt("qm.botm_overload_pct"));
  o.max_retries = static_cast<std::uint32_t>(c.getInt("qm.max_retries"));
  o.retry_delay = Millis(c.getInt("qm.retry_delay"));
  o.provider_error_delay = Millis(c.getInt("qm.provider_error_delay"));
  o.max_errors_kept = static_cast<std::uint32_t>(c.getInt("qm.max_errors_kept"));
  o.age_warn = Millis(c.getInt("qm.age_warn"));
  o.age_expire = Millis(c.getInt("qm.age_expire"));
  o.age_check_interval = Millis(c.getInt("qm.age_check_interval"));
  o.tombstone_keep = Millis(c.getInt("qm.tombstone_keep"));
  o.checkpoint_interval = Millis(c.getInt("qm.checkpoint_interval"));
  o.provider_refresh = Millis(c.getInt("qm.provider_refresh"));
  o.checkpoint_bytes = static_cast<std::uint64_t>(c.getInt("qm.checkpoint_bytes"));
  o.group_commit_delay = Millis(c.getInt("qm.group_commit_delay"));
  o.max_fetch_size = static_cast<std::uint64_t>(c.getInt("qm.max_fetch_size"));
  o.apply_batch_ops = static_cast<std::size_t>(c.getInt("qm.apply_batch_ops"));
  o.delete_window = static_cast<std::size_t>(c.getInt("qm.delete_window"));
  o.delete_retry = Millis(c.getInt("qm.delete_retry"));
  o.delete_retry_max = std::max(o.delete_retry, Millis(c.getInt("qm.delete_retry_max")));
  o.store_retry_max = Millis(c.getInt("qm.store_retry_max"));
  o.ack_after_store = c.getBool("qm.ack_after_store");
  o.fetch_lease = Millis(c.getInt("qm.fetch_lease"));
  // A kEnum key: the schema admits only the names parseRedirectPolicy knows.
  o.redirects = parseRedirectPolicy(c.getString("fetch.redirects")).value_or(RedirectPolicy::kPrefix);
  return o;
}

}  // namespace lcc::qm
