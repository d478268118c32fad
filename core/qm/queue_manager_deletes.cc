// queue_manager_deletes.cc — the delete manager at work: FSMDB rows sent to a BOT-M link
// that lists their machine, at most qm.delete_window outstanding per link. A failed
// delete is retried per file with back-off by the periodic retry (qm.delete_retry);
// only unknown-machine waits for the machine. What is out, each link's window, the
// machines waiting for a link and the back-off are DeleteManager's (delete_manager.h);
// this file reads and writes the FSMDB and sends.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

namespace lcc::qm {

void QueueManager::pumpDeletes() {
  if (!deps_.botm || !failed_.isOk()) return;
  const MonoTime now = deps_.clock->monoNow();
  for (const auto& [id, l] : links_.all()) {
    for (const auto& m : l.machines) {
      const std::size_t room = deletes_.room(id);
      if (room == 0) break;
      if (deletes_.blocked(m)) continue;
      std::vector<DeleteRequest> todo;
      Status s = deps_.queue->scanDeletes(m, [&](const DeleteRequest& d) {
        if (deletes_.wanted(d, now)) todo.push_back(d);
        return todo.size() < room;
      });
      if (!s.isOk()) {
        storeFailed(s);
        return;
      }
      for (const auto& d : todo) {
        const std::uint64_t did = deletes_.sent(id, d.machine, d.filename);
        ++stats_.deletes_sent;
        deps_.botm->sendDelete(id, did, d.machine, d.filename);
      }
    }
  }
}

void QueueManager::onDeleted(LinkId link, std::uint64_t id, bool ok, const std::string& reason) {
  const DeleteManager::Answer a = deletes_.answered(link, id, ok, reason, deps_.clock->monoNow());
  if (!a.known) return;
  if (ok) {
    ++stats_.deletes_done;
    sweepDeleted(a.machine, a.file);
    QueueBatch b;
    b.removeDelete(a.machine, a.file);
    Status s = deps_.queue->apply(b);
    if (!s.isOk()) {
      storeFailed(s.withContext("queue store"));
      return;
    }
  } else {
    // Kept in the FSMDB, and sent again: when a link lists the machine (unknown-machine),
    // else by itself after its back-off.
    ++stats_.deletes_failed;
    if (!a.wait_for_machine) {
      spdlog::warn("qm: delete of {}:{} failed ({} time(s)): {}; retried in {} ms", a.machine, a.file, a.failures,
                   reason, a.retry_after.count());
    }
  }
  pumpDeletes();
}

}  // namespace lcc::qm
