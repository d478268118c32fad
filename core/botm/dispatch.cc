#include "botm/dispatch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "common/response_head.h"

namespace lcc::botm {

namespace {
FetchResult failed(std::uint64_t id, ErrorCode code, std::string message) {
  FetchResult r;
  r.id = id;
  r.code = code;
  r.message = std::move(message);
  return r;
}

// Whether a fetch from the source can wait for a slot (robots and children alike); when
// not, its refusal goes up and it counts as rejected.
bool admit(const FetchRequest& f, bool id_in_flight, std::size_t queued, std::size_t max_queued,
           DispatchCounters* counters, std::vector<Upstream>* upstream) {
  counters->fetches++;
  if (id_in_flight) {
    upstream->push_back(failed(f.id, ErrorCode::kInternal, "fetch id already in flight on this connection"));
  } else if (queued >= max_queued) {
    upstream->push_back(failed(f.id, ErrorCode::kOffline, "BOT-M queue full (botm.max_queued)"));
  } else {
    return true;
  }
  counters->rejected++;
  return false;
}
}  // namespace

// ============================ Dispatcher (robots) ============================

Dispatcher::Dispatcher(std::string machine_id, std::string content_dir, FilenameStore* names, Env* env,
                       std::size_t max_queued)
    : machine_(std::move(machine_id)),
      content_dir_(std::move(content_dir)),
      names_(names),
      env_(env),
      max_queued_(max_queued) {}

void Dispatcher::sourceUp() {
  source_up_ = true;
  ++session_;
  by_source_id_.clear();
}

void Dispatcher::sourceDown(Actions* out) {
  if (!source_up_) return;
  source_up_ = false;
  ++session_;  // results of the old session are now stale
  by_source_id_.clear();
  // Queued jobs are forgotten (the source hands the URLs out again). A job that was
  // re-queued after its robot died still holds a name: free it.
  std::deque<std::uint64_t> keep;
  for (auto id : queue_) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    if (it->second.name) {
      names_in_use_.erase(*it->second.name);
      dropName(*it->second.name, true, out);
    }
    jobs_.erase(it);
  }
  queue_.swap(keep);
}

void Dispatcher::fetch(const FetchRequest& f, Actions* out) {
  if (!source_up_) return;
  if (!admit(f, by_source_id_.count(f.id) != 0, queue_.size(), max_queued_, &counters_, &out->upstream)) return;
  const std::uint64_t id = next_job_++;
  Job j;
  j.session = session_;
  j.fetch = f;
  if (clock_ != nullptr && f.lease.count() > 0) j.lease_until = clock_->monoNow() + f.lease;
  jobs_.emplace(id, std::move(j));
  by_source_id_.emplace(f.id, id);
  queue_.push_back(id);
  pump(out);
}

void Dispatcher::pump(Actions* out) {
  while (!queue_.empty()) {
    // The robot with the most free slots (spreads the load over robots).
    Robot* best = nullptr;
    RobotId best_id = 0;
    std::size_t best_free = 0;
    for (auto& [rid, r] : robots_) {
      std::size_t free = r.slots > r.jobs.size() ? r.slots - r.jobs.size() : 0;
      if (free > best_free) {
        best = &r;
        best_id = rid;
        best_free = free;
      }
    }
    if (best == nullptr) return;
    const std::uint64_t id = queue_.front();
    queue_.pop_front();
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    Job& j = it->second;
    if (abandonExpired(id, j, out)) continue;
    if (!j.name) {
      auto n = allocateName();
      if (!n.isOk()) {
        spdlog::error("botm: cannot hand out a filename: {}", n.status().message());
        out->upstream.push_back(failed(j.fetch.id, ErrorCode::kInternal, "BOT-M filename state failed"));
        by_source_id_.erase(j.fetch.id);
        jobs_.erase(it);
        continue;
      }
      j.name = n.value();
    }
    names_in_use_.insert(*j.name);
    j.robot = best_id;
    best->jobs.insert(id);
    FetchRequest rf = j.fetch;  // the robot codec carries what the robot protocol has
    rf.id = id;
    rf.path = pathOf(*j.name);
    if (j.lease_until) rf.lease = std::max(Millis(1), std::chrono::duration_cast<Millis>(*j.lease_until - clock_->monoNow()));
    out->to_robots.emplace_back(best_id, std::move(rf));
  }
}

bool Dispatcher::abandonExpired(std::uint64_t id, Job& j, Actions* out) {
  if (!j.lease_until || clock_->monoNow() < *j.lease_until) return false;
  // Its source stopped renewing (gone, paused, cut off): another host may have the
  // URL by now. Nothing is started; the source, if it still lives, queues it again.
  spdlog::warn("botm: fetch lease of {} expired before a robot took it; abandoned", j.fetch.url);
  counters_.lease_expired++;
  if (j.session == session_) {
    out->upstream.push_back(failed(j.fetch.id, ErrorCode::kOffline, "fetch lease expired; not started"));
    by_source_id_.erase(j.fetch.id);
  }
  if (j.name) dropName(*j.name, true, out);
  jobs_.erase(id);
  return true;
}

void Dispatcher::renew(Millis lease, Actions* out) {
  if (clock_ == nullptr || lease.count() <= 0) return;
  const MonoTime until = clock_->monoNow() + lease;
  std::set<RobotId> told;
  for (auto& [id, j] : jobs_) {
    if (j.session != session_ || !j.lease_until) continue;
    j.lease_until = until;
    if (j.robot != 0 && told.insert(j.robot).second) out->renewals.emplace_back(j.robot, lease);
  }
}

void Dispatcher::capacityChanged(Actions* out) {
  std::uint64_t cap = 0;
  for (const auto& [rid, r] : robots_) cap += r.slots;
  if (cap == capacity_) return;
  capacity_ = cap;
  if (source_up_) out->upstream.push_back(proto::LinkCapacity{cap});
}

void Dispatcher::robotUp(RobotId robot, std::uint32_t slots, Actions* out) {
  Robot r;
  r.slots = std::max<std::uint32_t>(1, slots);
  robots_[robot] = std::move(r);
  capacityChanged(out);
  pump(out);
}

void Dispatcher::robotDown(RobotId robot, Actions* out) {
  auto it = robots_.find(robot);
  if (it == robots_.end()) return;
  // Its unanswered fetches go first to another robot, with the same filenames.
  std::vector<std::uint64_t> ids(it->second.jobs.begin(), it->second.jobs.end());
  robots_.erase(it);
  for (auto rit = ids.rbegin(); rit != ids.rend(); ++rit) {
    auto jt = jobs_.find(*rit);
    if (jt == jobs_.end()) continue;
    jt->second.robot = 0;
    if (jt->second.name) names_in_use_.erase(*jt->second.name);
    if (jt->second.session != session_) {  // nobody waits for it any more
      if (jt->second.name) dropName(*jt->second.name, true, out);
      jobs_.erase(jt);
      continue;
    }
    counters_.rehanded++;
    queue_.push_front(*rit);
  }
  capacityChanged(out);
  pump(out);
}

void Dispatcher::robotResult(RobotId robot, const FetchResult& r, Actions* out) {
  auto jt = jobs_.find(r.id);
  if (jt == jobs_.end() || jt->second.robot != robot) {
    spdlog::warn("botm: robot {} answered fetch {} it does not hold; ignored", robot, r.id);
    return;
  }
  Job j = std::move(jt->second);
  jobs_.erase(jt);
  if (auto rit = robots_.find(robot); rit != robots_.end()) rit->second.jobs.erase(r.id);
  const std::uint64_t name = *j.name;
  names_in_use_.erase(name);
  const bool stale = !source_up_ || j.session != session_;
  if (!stale) by_source_id_.erase(j.fetch.id);
  FetchResult up;
  up.id = j.fetch.id;
  up.http_status = r.http_status;
  up.retry_after = r.retry_after;
  if (r.ok()) up.etag = r.etag;
  if (r.ok() && !r.unchanged) {
    if (stale) {
      counters_.stale++;
      dropName(name, true, out);
    } else {
      counters_.results_ok++;
      up.machine = machine_;
      up.filename = names_->format(name);
      up.mime = r.mime;
      up.size = r.size;
      up.md5 = r.md5;
      up.last_modified = r.last_modified;
    }
  } else {
    // Unchanged or failed: no file is referenced, the name is free again. A failed
    // robot removed its temporary file; the final name was never written.
    dropName(name, false, out);
    if (r.ok()) {
      counters_.unchanged++;
      up.unchanged = true;
    } else {
      counters_.results_failed++;
      up.code = r.code;
      up.message = r.message;
    }
    if (stale) counters_.stale++;
  }
  if (!stale) out->upstream.push_back(std::move(up));
  pump(out);
}

// ============================ Forwarder (children) ============================

Forwarder::Forwarder(int child_overload_pct, std::size_t max_queued)
    : overload_pct_(std::max(100, child_overload_pct)), max_queued_(max_queued) {}

void Forwarder::sourceUp() {
  source_up_ = true;
  ++session_;
  by_source_id_.clear();
}

void Forwarder::sourceDown() {
  if (!source_up_) return;
  source_up_ = false;
  ++session_;
  by_source_id_.clear();
  for (auto id : queue_) jobs_.erase(id);
  queue_.clear();
}

std::uint64_t Forwarder::limitOf(const Child& c) const {
  return c.capacity * static_cast<std::uint64_t>(overload_pct_) / 100;
}

std::uint64_t Forwarder::capacity() const {
  std::uint64_t cap = 0;
  for (const auto& [id, c] : children_) cap += c.capacity;
  return cap;
}

std::vector<std::string> Forwarder::machines() const {
  std::set<std::string> all;
  for (const auto& [id, c] : children_) {
    all.insert(c.machine);
    all.insert(c.machines.begin(), c.machines.end());
  }
  all.erase("");
  return {all.begin(), all.end()};
}

std::map<std::string, std::string> Forwarder::contentUrls() const {
  std::map<std::string, std::string> all;
  for (const auto& [id, c] : children_) {
    for (const auto& [m, url] : c.content_urls) all[m] = url;
    if (!c.content_url.empty() && !c.machine.empty()) all[c.machine] = c.content_url;
  }
  return all;
}

void Forwarder::announce(ForwardActions* out, std::uint64_t old_capacity, const std::vector<std::string>& old_machines,
                         const std::map<std::string, std::string>& old_urls) {
  if (!source_up_) return;
  if (capacity() != old_capacity) out->upstream.push_back(proto::LinkCapacity{capacity()});
  auto now = machines();
  auto urls = contentUrls();
  if (now != old_machines || urls != old_urls) out->upstream.push_back(proto::LinkMachines{now, urls});
}

void Forwarder::fetch(const FetchRequest& f, ForwardActions* out) {
  if (!source_up_) return;
  if (!admit(f, by_source_id_.count(f.id) != 0, queue_.size(), max_queued_, &counters_, &out->upstream)) return;
  const std::uint64_t id = next_id_++;
  jobs_.emplace(id, Job{session_, f, 0});
  by_source_id_.emplace(f.id, id);
  queue_.push_back(id);
  pump(out);
}

void Forwarder::pump(ForwardActions* out) {
  while (!queue_.empty()) {
    Child* best = nullptr;
    ChildId best_id = 0;
    std::uint64_t best_room = 0;
    for (auto& [cid, c] : children_) {
      std::uint64_t limit = limitOf(c);
      std::uint64_t room = limit > c.jobs.size() ? limit - c.jobs.size() : 0;
      if (room > best_room) {
        best = &c;
        best_id = cid;
        best_room = room;
      }
    }
    if (best == nullptr) return;
    const std::uint64_t id = queue_.front();
    queue_.pop_front();
    auto it = jobs_.find(id);
    if (it == jobs_.end()) continue;
    it->second.child = best_id;
    best->jobs.insert(id);
    FetchRequest f = it->second.fetch;
    f.id = id;  // our id on the child's connection
    out->fetches.emplace_back(best_id, std::move(f));
  }
}

void Forwarder::remove(const proto::LinkDelete& d, ForwardActions* out) {
  if (!source_up_) return;
  counters_.deletes++;
  for (auto& [cid, c] : children_) {
    bool has = c.machine == d.machine || std::find(c.machines.begin(), c.machines.end(), d.machine) != c.machines.end();
    if (!has) continue;
    const std::uint64_t id = next_id_++;
    deletes_.emplace(id, PendingDelete{session_, d.id, cid});
    proto::LinkDelete fwd = d;
    fwd.id = id;
    out->deletes.emplace_back(cid, std::move(fwd));
    return;
  }
  counters_.deletes_unknown_machine++;
  out->upstream.push_back(proto::LinkDeleted{d.id, false, std::string(proto::kReasonUnknownMachine)});
}

void Forwarder::sweep(const proto::LinkSweep& s, ForwardActions* out) {
  if (!source_up_) return;
  for (const auto& [cid, c] : children_) out->sweeps.emplace_back(cid, s);
}

void Forwarder::childSwept(const Upstream& file_or_swept, ForwardActions* out) {
  if (source_up_) out->upstream.push_back(file_or_swept);
}

void Forwarder::childUp(ChildId child, const std::string& machine, std::uint64_t capacity, ForwardActions* out,
                        const std::string& content_url) {
  const auto old_cap = this->capacity();
  const auto old_machines = machines();
  const auto old_urls = contentUrls();
  Child c;
  c.machine = machine;
  c.machines = {machine};
  c.capacity = capacity;
  c.content_url = content_url;
  children_[child] = std::move(c);
  announce(out, old_cap, old_machines, old_urls);
  pump(out);
}

void Forwarder::childCapacity(ChildId child, std::uint64_t capacity, ForwardActions* out) {
  auto it = children_.find(child);
  if (it == children_.end()) return;
  const auto old_cap = this->capacity();
  const auto old_machines = machines();
  const auto old_urls = contentUrls();
  it->second.capacity = capacity;
  announce(out, old_cap, old_machines, old_urls);
  pump(out);
}

void Forwarder::childMachines(ChildId child, const std::vector<std::string>& ids, ForwardActions* out,
                              const std::map<std::string, std::string>& content_urls) {
  auto it = children_.find(child);
  if (it == children_.end()) return;
  const auto old_cap = this->capacity();
  const auto old_machines = machines();
  const auto old_urls = contentUrls();
  it->second.machines = ids;
  // Only URLs of machines reachable through this child.
  it->second.content_urls.clear();
  for (const auto& [m, url] : content_urls) {
    if (std::find(ids.begin(), ids.end(), m) != ids.end()) it->second.content_urls[m] = url;
  }
  announce(out, old_cap, old_machines, old_urls);
}

void Forwarder::childResult(ChildId child, const FetchResult& r, ForwardActions* out) {
  auto jt = jobs_.find(r.id);
  if (jt == jobs_.end() || jt->second.child != child) {
    spdlog::warn("botm: child {} answered fetch {} it does not hold; ignored", child, r.id);
    return;
  }
  Job j = std::move(jt->second);
  jobs_.erase(jt);
  if (auto cit = children_.find(child); cit != children_.end()) cit->second.jobs.erase(r.id);
  if (source_up_ && j.session == session_) {
    by_source_id_.erase(j.fetch.id);
    FetchResult up = r;  // machine and file pass through unchanged
    up.id = j.fetch.id;
    if (r.ok() && !r.unchanged) {
      counters_.results_ok++;
    } else if (r.ok()) {
      counters_.unchanged++;
    } else {
      counters_.results_failed++;
    }
    out->upstream.push_back(std::move(up));
  } else {
    counters_.stale++;
  }
  pump(out);
}

void Forwarder::childDeleted(ChildId child, const proto::LinkDeleted& d, ForwardActions* out) {
  auto it = deletes_.find(d.id);
  if (it == deletes_.end() || it->second.child != child) return;
  PendingDelete p = it->second;
  deletes_.erase(it);
  if (!source_up_ || p.session != session_) return;
  proto::LinkDeleted up = d;
  up.id = p.source_id;
  out->upstream.push_back(std::move(up));
}

void Forwarder::renew(Millis lease, ForwardActions* out) {
  if (lease.count() <= 0) return;
  for (const auto& [cid, c] : children_) {
    const bool holds = std::any_of(c.jobs.begin(), c.jobs.end(), [&](std::uint64_t id) {
      auto it = jobs_.find(id);
      return it != jobs_.end() && it->second.session == session_;
    });
    if (holds) out->renewals.emplace_back(cid, lease);
  }
}

void Forwarder::childDown(ChildId child, ForwardActions* out) {
  auto it = children_.find(child);
  if (it == children_.end()) return;
  const auto old_cap = this->capacity();
  const auto old_machines = machines();
  const auto old_urls = contentUrls();
  std::vector<std::uint64_t> ids(it->second.jobs.begin(), it->second.jobs.end());
  children_.erase(it);
  for (auto rit = ids.rbegin(); rit != ids.rend(); ++rit) {
    auto jt = jobs_.find(*rit);
    if (jt == jobs_.end()) continue;
    if (jt->second.session != session_) {
      jobs_.erase(jt);
      continue;
    }
    jt->second.child = 0;
    counters_.rehanded++;
    queue_.push_front(*rit);
  }
  // Deletes it did not answer: the machine is unreachable now; the source keeps them.
  for (auto dit = deletes_.begin(); dit != deletes_.end();) {
    if (dit->second.child != child) {
      ++dit;
      continue;
    }
    if (source_up_ && dit->second.session == session_) {
      out->upstream.push_back(
          proto::LinkDeleted{dit->second.source_id, false, std::string(proto::kReasonUnknownMachine)});
    }
    dit = deletes_.erase(dit);
  }
  announce(out, old_cap, old_machines, old_urls);
  pump(out);
}

}  // namespace lcc::botm
