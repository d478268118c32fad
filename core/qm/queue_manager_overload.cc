// queue_manager_overload.cc — overload (rule 6: sets refused above qm.queue_high, taken
// again below qm.queue_low). Store failures and cache-crash: queue_manager_store_failure.cc.
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

}  // namespace lcc::qm
