// queue_manager_deletes.cc — the delete manager: FSMDB rows sent to a BOT-M link that
// lists their machine, at most qm.delete_window outstanding per link.
#include "qm/queue_manager.h"

#include <spdlog/spdlog.h>

namespace lcc::qm {

void QueueManager::pumpDeletes() {
  if (!deps_.botm || !failed_.isOk()) return;
  for (auto& [id, l] : links_) {
    if (l.deletes_out >= options_.delete_window) continue;
    for (const auto& m : l.machines) {
      if (machines_blocked_.count(m)) continue;
      std::vector<DeleteRequest> todo;
      std::size_t room = options_.delete_window - l.deletes_out;
      Status s = deps_.queue->scanDeletes(m, [&](const DeleteRequest& d) {
        if (!deletes_out_keys_.count({d.machine, d.filename})) todo.push_back(d);
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
    QueueBatch b;
    b.removeDelete(d.machine, d.file);
    Status s = deps_.queue->apply(b);
    if (!s.isOk()) {
      storeFailed(s.withContext("queue store"));
      return;
    }
  } else {
    // Kept in the FSMDB; sent again when a link lists the machine (again).
    machines_blocked_.insert(d.machine);
    if (reason != "unknown-machine") spdlog::warn("qm: delete of {}:{} failed: {}", d.machine, d.file, reason);
  }
  pumpDeletes();
}

}  // namespace lcc::qm
