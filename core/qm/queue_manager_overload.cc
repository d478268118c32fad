// queue_manager_overload.cc — overload (rule 6: sets refused above qm.queue_high, taken
// again below qm.queue_low) and failures (a failed store write or sync, cache-crash).
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

namespace lcc::qm {

void QueueManager::updateOverload() {
  bool was = overloaded_;
  if (!overloaded_ && queued_total_ > options_.queue_high) overloaded_ = true;
  if (overloaded_ && queued_total_ < options_.queue_low) overloaded_ = false;
  if (was != overloaded_) {
    spdlog::warn("qm: {} ({} URLs queued)", overloaded_ ? "overloaded: refusing sets" : "taking sets again",
                 queued_total_);
    if (intake_listener_) intake_listener_(!overloaded_ && failed_.isOk());
  }
}

void QueueManager::storeFailed(const Status& s) {
  if (failed_.isOk()) {
    failed_ = s;
    spdlog::error("qm: store failure, refusing sets from now on: {}", s.toString());
    if (intake_listener_) intake_listener_(false);
  }
  raiseCacheCrash(s.toString());
}

void QueueManager::raiseCacheCrash(const std::string& why) {
  if (!cache_crash_) spdlog::error("qm: cache-crash: {}; every provider is asked for a full set", why);
  cache_crash_ = true;
  if (!deps_.providers) return;
  std::vector<ProviderId> ids;
  (void)deps_.providers->scan([&](const ProviderRecord& r) {
    if (!(r.fullset_wanted && r.fullset_reason == FullSetReason::kCacheCrash)) ids.push_back(r.id);
    return true;
  });
  for (ProviderId id : ids) {
    Status s = deps_.providers->modify(id, [](ProviderRecord& r) {
      r.fullset_wanted = true;
      r.fullset_reason = FullSetReason::kCacheCrash;
      return Status::ok();
    });
    if (!s.isOk()) spdlog::error("qm: raising cache-crash for provider {}: {}", id, s.toString());
  }
}

}  // namespace lcc::qm
