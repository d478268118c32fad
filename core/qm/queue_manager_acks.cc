// queue_manager_acks.cc — qm.ack_after_store (issue 27 §2): with a standby QM on a
// shared store (storage-postgres, option qm_lease), a set acked by the intake journal
// alone would die with this host's disk. So the ack waits until the set is in the
// stores: its group committed, then one sync() of the content and queue stores (a
// no-op with storage-postgres `synchronous: full`, whose every commit waited for the
// sync standby). Answers go out in arrival order (the UNS takes acks in order): a
// refused set or a duplicate behind a set not yet stored waits for it. Off (the
// default, the single-host path): answered at the journal's commit, as before.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

namespace lcc::qm {

void QueueManager::answer(Pending& p, bool ok, ErrorCode code, const std::string& reason) {
  if (!p.ack) return;
  if (!options_.ack_after_store) return p.ack(ok, code, reason);
  auto h = std::make_shared<HeldAck>();
  h->ack = std::move(p.ack);
  p.ack = nullptr;
  h->ok = ok;
  h->code = code;
  h->reason = reason;
  h->stored = ok && p.kind == Pending::Kind::kApply;
  h->ready = !h->stored;
  if (h->stored) p.held = h;  // finishGroup() makes it ready
  held_acks_.push_back(std::move(h));
}

void QueueManager::flushAcks() {
  bool sync = false;
  for (const auto& h : held_acks_) {
    if (!h->ready) break;
    sync = sync || h->stored;
  }
  if (sync && failed_.isOk()) {
    Status s = deps_.content->sync();
    s = s.isOk() ? deps_.queue->sync().withContext("queue store") : s.withContext("content store");
    if (!s.isOk()) {
      storeFailed(s);
      if (failed_.isOk()) return;  // Busy: the answers wait for retryStore()
    }
  }
  while (!held_acks_.empty()) {
    std::shared_ptr<HeldAck> h = held_acks_.front();
    if (failed_.isOk() && !h->ready) break;
    held_acks_.pop_front();
    if (!failed_.isOk() && h->stored) {
      // Not known to be in the stores: refused, so the UNS keeps it and sends it again.
      h->ack(false, ErrorCode::kOffline, "queue manager failed: " + failed_.message());
    } else {
      h->ack(h->ok, h->code, h->reason);
    }
  }
}

}  // namespace lcc::qm
