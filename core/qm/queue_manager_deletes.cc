// queue_manager_deletes.cc — the delete manager: FSMDB rows sent to a BOT-M link that
// lists their machine, at most qm.delete_window outstanding per link. A failed delete
// is retried per file with back-off (decideDeleteFailure(), result_policy.h) by the
// periodic retry (qm.delete_retry); only unknown-machine waits for the machine.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

namespace lcc::qm {

bool QueueManager::deleteBackingOff(const DeleteRequest& d, MonoTime now) const {
  auto it = delete_backoff_.find({d.machine, d.filename});
  return it != delete_backoff_.end() && it->second.retry_at > now;
}

void QueueManager::pumpDeletes() {
  if (!deps_.botm || !failed_.isOk()) return;
  const MonoTime now = deps_.clock->monoNow();
  for (auto& [id, l] : links_) {
    if (l.deletes_out >= options_.delete_window) continue;
    for (const auto& m : l.machines) {
      if (machines_blocked_.count(m)) continue;
      std::vector<DeleteRequest> todo;
      std::size_t room = options_.delete_window - l.deletes_out;
      Status s = deps_.queue->scanDeletes(m, [&](const DeleteRequest& d) {
        if (!deletes_out_keys_.count({d.machine, d.filename}) && !deleteBackingOff(d, now)) todo.push_back(d);
        return todo.size() < room;
      });
      if (!s.isOk()) {
        storeFailed(s);
        return;
      }
      for (const auto& d : todo) {
        std::uint64_t did = next_delete_id_++;
        deletes_out_[did] = OutDelete{id, d.machine, d.filename};
        deletes_out_keys_.insert({d.machine, d.filename});
        l.deletes_out += 1;
        ++stats_.deletes_sent;
        deps_.botm->sendDelete(id, did, d.machine, d.filename);
      }
      if (l.deletes_out >= options_.delete_window) break;
    }
  }
}

void QueueManager::onDeleted(LinkId link, std::uint64_t id, bool ok, const std::string& reason) {
  auto it = deletes_out_.find(id);
  if (it == deletes_out_.end()) return;
  OutDelete d = std::move(it->second);
  deletes_out_.erase(it);
  deletes_out_keys_.erase({d.machine, d.file});
  if (auto l = links_.find(link); l != links_.end() && l->second.deletes_out > 0) l->second.deletes_out -= 1;
  if (ok) {
    ++stats_.deletes_done;
    delete_backoff_.erase({d.machine, d.file});
    sweepDeleted(d.machine, d.file);
    QueueBatch b;
    b.removeDelete(d.machine, d.file);
    Status s = deps_.queue->apply(b);
    if (!s.isOk()) {
      storeFailed(s.withContext("queue store"));
      return;
    }
  } else {
    // Kept in the FSMDB, and sent again: when a link lists the machine (unknown-machine),
    // else by itself after its back-off.
    ++stats_.deletes_failed;
    auto& b = delete_backoff_[{d.machine, d.file}];
    b.failures += 1;
    const auto a = decideDeleteFailure(reason, b.failures, DeleteRetryRules{options_.delete_retry, options_.delete_retry_max});
    if (a.wait_for_machine) {
      delete_backoff_.erase({d.machine, d.file});
      machines_blocked_.insert(d.machine);
    } else {
      b.retry_at = deps_.clock->monoNow() + a.retry_after;
      spdlog::warn("qm: delete of {}:{} failed ({} time(s)): {}; retried in {} ms", d.machine, d.file, b.failures,
                   reason, a.retry_after.count());
    }
  }
  pumpDeletes();
}

}  // namespace lcc::qm
