// delete_manager.cc — the delete manager's state: window per link, machines waiting for
// a link, per-file back-off (delete_manager.h).
#include "qm/delete_manager.h"

namespace lcc::qm {

void DeleteManager::linkUp() { blocked_.clear(); }

void DeleteManager::machinesListed(const std::vector<std::string>& machines) {
  for (const auto& m : machines) blocked_.erase(m);
}

void DeleteManager::linkDown(LinkId link) {
  for (auto it = out_.begin(); it != out_.end();) {
    if (it->second.link == link) {
      out_keys_.erase({it->second.machine, it->second.file});
      it = out_.erase(it);
    } else {
      ++it;
    }
  }
  out_per_link_.erase(link);
}

std::size_t DeleteManager::outOn(LinkId link) const {
  auto it = out_per_link_.find(link);
  return it == out_per_link_.end() ? 0 : it->second;
}

std::size_t DeleteManager::room(LinkId link) const {
  const std::size_t out = outOn(link);
  return out >= window_ ? 0 : window_ - out;
}

bool DeleteManager::blocked(const std::string& machine) const { return blocked_.count(machine) > 0; }

bool DeleteManager::backingOff(const std::string& machine, const std::string& file, MonoTime now) const {
  auto it = backoff_.find({machine, file});
  return it != backoff_.end() && it->second.retry_at > now;
}

bool DeleteManager::wanted(const DeleteRequest& d, MonoTime now) const {
  return !out_keys_.count({d.machine, d.filename}) && !backingOff(d.machine, d.filename, now);
}

std::uint64_t DeleteManager::sent(LinkId link, const std::string& machine, const std::string& file) {
  const std::uint64_t id = next_id_++;
  out_[id] = Out{link, machine, file};
  out_keys_.insert({machine, file});
  out_per_link_[link] += 1;
  return id;
}

DeleteManager::Answer DeleteManager::answered(LinkId link, std::uint64_t id, bool ok, const std::string& reason,
                                              MonoTime now) {
  Answer a;
  auto it = out_.find(id);
  if (it == out_.end()) return a;
  a.known = true;
  a.machine = std::move(it->second.machine);
  a.file = std::move(it->second.file);
  out_.erase(it);
  out_keys_.erase({a.machine, a.file});
  if (auto l = out_per_link_.find(link); l != out_per_link_.end() && l->second > 0) l->second -= 1;
  if (ok) {
    backoff_.erase({a.machine, a.file});
    return a;
  }
  auto& b = backoff_[{a.machine, a.file}];
  b.failures += 1;
  a.failures = b.failures;
  const DeleteFailureAction f = decideDeleteFailure(reason, b.failures, rules_);
  a.wait_for_machine = f.wait_for_machine;
  a.retry_after = f.retry_after;
  if (f.wait_for_machine) {
    backoff_.erase({a.machine, a.file});
    blocked_.insert(a.machine);
  } else {
    b.retry_at = now + f.retry_after;
  }
  return a;
}

void DeleteManager::outFiles(const std::string& machine, std::unordered_set<std::string>& into) const {
  for (const auto& [m, f] : out_keys_) {
    if (m == machine) into.insert(f);
  }
}

}  // namespace lcc::qm
