// dispatch.h — the BOT-M's policy, without sockets (docs/architecture.md rule 8).
//
// Dispatcher: a BOT-M with robots (design document §7). Takes the events of its url source
// and its robots, returns what to send where. It owns the jobs (fetches taken from
// the source), the robots' slots and the filename management (FilenameStore); it
// unlinks content files itself, through the Env.
//
// Forwarder: a parent BOT-M (botm.parent, design document §7 "When Talking to Other
// BOT-Ms"). No filename management: it forwards fetches to child BOT-Ms (each
// loaded up to capacity x botm.child_overload_pct), routes deletes by machine id and
// passes results up unchanged.
//
// Guarantees (both): exactly one result goes upstream per fetch taken in the
// current source session; a robot or child that goes away has its fetches handed
// to another one (a robot's with the same filenames); results for a source session
// that ended are dropped (and their files unlinked, their names freed).
// Content in an object store (useObjectStore): the Dispatcher makes no object-store
// call itself; it returns them (Actions::object_calls, at most s3.botm_calls out at
// once, the rest waiting here in order) and takes their answers (objectAnswer()). A
// name is never handed out while a DELETE of its object is under way, and a delete
// from the source is answered only when the store has answered its DELETE.
// Fetch leases (issue 27 §3, FetchRequest::lease): with a clock (useClock()), a fetch
// that carries a lease may be handed to a robot or child only until that long after it
// came, or after the source's last renewal (renew(): <ping lease>); past it, it is
// abandoned: answered 130 ("fetch lease expired"), nothing started, its name freed. A
// robot or child gets what is left of the lease with the fetch, and every renewal.
// THREADS: one thread at a time (the BOT-M's dispatch strand).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "botm/filename_store.h"
#include "lcc/clock.h"
#include "lcc/env.h"
#include "proto/botm_link.h"
#include "proto/robot.h"
#include "s3/call_worker.h"

namespace lcc::botm {

using Upstream = std::variant<FetchResult, proto::LinkDeleted, proto::LinkCapacity, proto::LinkMachines,
                              proto::LinkFile, proto::LinkSwept>;
using RobotId = std::uint64_t;
using ChildId = std::uint64_t;

struct DispatchCounters {
  std::uint64_t fetches = 0, results_ok = 0, results_failed = 0, unchanged = 0, rehanded = 0, stale = 0,
                deletes = 0, deletes_unknown_machine = 0, rejected = 0, lease_expired = 0;
};

struct Actions {
  std::vector<std::pair<RobotId, FetchRequest>> to_robots;  // our id, path: the file
  std::vector<Upstream> upstream;
  std::vector<std::pair<RobotId, Millis>> renewals;  // <ping lease> to a robot holding fetches
  std::vector<s3::Call> object_calls;  // for the object-store worker (Dispatcher::useObjectStore)
  bool empty() const { return to_robots.empty() && upstream.empty() && renewals.empty() && object_calls.empty(); }
};

class Dispatcher {
 public:
  Dispatcher(std::string machine_id, std::string content_dir, FilenameStore* names, Env* env,
             std::size_t max_queued = 100000);

  // The url source connected (a new session) or went away.
  void sourceUp();
  void sourceDown(Actions* out);
  void fetch(const FetchRequest& f, Actions* out);
  // A <delete> from the source. With content in files it is answered at once; with an
  // object store, when its DELETE is answered (objectAnswer()). Past botm.max_queued
  // calls waiting for the store, it is answered "io-error: object store busy" at once
  // (the QM retries a failed delete later).
  void remove(const proto::LinkDelete& d, Actions* out);
  // The orphan sweep (issue 15): one <file> per content file of this machine whose
  // name no job holds (running, or waiting for another robot with its name), then
  // <swept>. Results already produced went upstream before, on the same link, so the
  // source has applied them when it reads the list. Temporary files are not listed.
  // With an object store the bucket is listed page by page through object calls, each
  // page's names checked against the jobs when it comes; <swept> follows the last.
  void sweep(const proto::LinkSweep& s, Actions* out);
  // The source renewed the lease of every fetch it handed us (<ping lease>): `lease`
  // from now for each job of the current session; each robot holding one is told.
  void renew(Millis lease, Actions* out);
  // The monotonic clock fetch leases are measured on (null: leases are not kept).
  void useClock(const Clock* clock) { clock_ = clock; }

  void robotUp(RobotId robot, std::uint32_t slots, Actions* out);
  void robotDown(RobotId robot, Actions* out);
  void robotResult(RobotId robot, const FetchResult& r, Actions* out);

  std::uint64_t capacity() const { return capacity_; }
  std::vector<std::string> machines() const { return {machine_}; }
  std::size_t queued() const { return queue_.size(); }
  std::size_t inFlight() const { return jobs_.size() - queue_.size(); }
  std::size_t robots() const { return robots_.size(); }
  const DispatchCounters& counters() const { return counters_; }
  std::string pathOf(std::uint64_t name) const { return content_dir_ + "/" + names_->format(name); }
  // Content in an object store (issue 31 §1): deletes remove objects and the orphan
  // sweep lists the bucket under this machine's prefix, by calls returned as actions,
  // at most `max_calls` (s3.botm_calls) out at once.
  void useObjectStore(s3::S3Options options, std::size_t max_calls);
  // The store answered a call of Actions::object_calls (an unknown ticket is ignored).
  void objectAnswer(const s3::CallAnswer& a, Actions* out);
  // Object-store calls out (given to the worker, not answered) and waiting here.
  std::size_t objectCallsOut() const { return calls_out_; }
  std::size_t objectCallsWaiting() const { return calls_waiting_.size(); }

 private:
  struct Job {
    std::uint64_t session = 0;
    FetchRequest fetch;                 // fetch.id is the source's id
    std::optional<std::uint64_t> name;  // kept when the job is handed to another robot
    RobotId robot = 0;                  // 0: waiting in the queue
    std::optional<MonoTime> lease_until;  // nothing starts after it (none: no lease)
  };
  struct Robot {
    std::uint32_t slots = 1;
    std::set<std::uint64_t> jobs;
  };

  void pump(Actions* out);
  // A queued job whose lease has run out: answered 130, forgotten; true when it was.
  bool abandonExpired(std::uint64_t id, Job& j, Actions* out);
  void capacityChanged(Actions* out);
  // A free name (allocate()) that no DELETE is under way for; one that is is kept
  // aside (Removal::parked) and freed again when its DELETE is answered.
  Result<std::uint64_t> allocateName();
  // `name` is no longer referenced: freed, its content first removed when `unlink_file`
  // (with an object store: freed when the DELETE is answered).
  void dropName(std::uint64_t name, bool unlink_file, Actions* out);
  void removeHead(std::uint64_t name);
  // Removes the file of `name` and its head; an absent one is OK.
  Status removeFile(std::uint64_t name);
  // Queues the DELETE of `name`'s object (one per name at a time); `release`: free the
  // name once it is gone; `answer`: a source delete answered when the store answers.
  void removeObject(std::uint64_t name, bool release, std::optional<std::uint64_t> answer, Actions* out);
  void removed(std::uint64_t name, const Status& s, Actions* out);
  // Hands waiting calls to the worker while fewer than max_calls_ are out.
  void issueCalls(Actions* out);
  std::uint64_t queueCall(s3::Call::Kind kind, std::string key, std::string token);
  // Names no <file> of a sweep may list: held by a job, or with a DELETE under way.
  std::unordered_set<std::uint64_t> heldNames() const;
  // The sweep's <file>s of the content folder; returns how many.
  std::uint64_t listFiles(const proto::LinkSweep& s, const std::unordered_set<std::uint64_t>& held, Actions* out);
  // One page of the bucket's listing came: its <file>s, then the next page or <swept>.
  void listed(std::uint64_t ticket, const s3::CallAnswer& a, Actions* out);

  std::string machine_;
  std::string content_dir_;
  FilenameStore* names_;
  Env* env_;
  struct Removal {  // a name whose object is being deleted
    bool release = false;  // free the name once it is gone (it was referenced)
    bool parked = false;   // allocate() returned it meanwhile: free it again when done
    std::vector<std::pair<std::uint64_t, std::uint64_t>> answers;  // (session, source delete id)
  };
  struct Listing {  // a sweep listing the bucket, page by page
    std::uint64_t session = 0;
    std::uint64_t sweep = 0;  // the source's sweep id
    std::string token;        // of the page asked for
    std::uint64_t files = 0;  // <file>s sent so far
  };
  std::optional<s3::S3Options> objects_;  // set: content in an object store
  std::size_t max_calls_ = 1;
  std::size_t calls_out_ = 0;
  std::uint64_t next_ticket_ = 1;
  std::deque<s3::Call> calls_waiting_;
  std::unordered_map<std::uint64_t, std::uint64_t> delete_calls_;  // ticket -> name
  std::unordered_map<std::uint64_t, Removal> removing_;            // name -> its DELETE
  std::unordered_map<std::uint64_t, Listing> listings_;            // ticket -> sweep
  const Clock* clock_ = nullptr;
  std::size_t max_queued_;
  bool source_up_ = false;
  std::uint64_t session_ = 0;
  std::uint64_t next_job_ = 1;
  std::uint64_t capacity_ = 0;
  std::unordered_map<std::uint64_t, Job> jobs_;          // job id -> job (queued or running)
  std::unordered_map<std::uint64_t, std::uint64_t> by_source_id_;  // current session: source id -> job id
  std::deque<std::uint64_t> queue_;                      // job ids waiting for a slot
  std::map<RobotId, Robot> robots_;
  std::set<std::uint64_t> names_in_use_;                 // names of running jobs
  DispatchCounters counters_;
};

struct ForwardActions {
  std::vector<std::pair<ChildId, FetchRequest>> fetches;  // our id on the child's link
  std::vector<std::pair<ChildId, proto::LinkDelete>> deletes;
  std::vector<std::pair<ChildId, proto::LinkSweep>> sweeps;
  std::vector<std::pair<ChildId, Millis>> renewals;  // <ping lease> to a child holding fetches
  std::vector<Upstream> upstream;
};

class Forwarder {
 public:
  explicit Forwarder(int child_overload_pct = 150, std::size_t max_queued = 100000);

  void sourceUp();
  void sourceDown();
  void fetch(const FetchRequest& f, ForwardActions* out);
  void remove(const proto::LinkDelete& d, ForwardActions* out);
  // Passes the sweep to every child; their <file>s and <swept>s go up unchanged.
  void sweep(const proto::LinkSweep& s, ForwardActions* out);
  // The source renewed its fetch leases: passed on to every child holding a fetch of
  // the current session. A forwarded fetch keeps the lease it came with (the time it
  // waited here is not taken off: docs/reliability.md, "Fetch leases").
  void renew(Millis lease, ForwardActions* out);
  void childSwept(const Upstream& file_or_swept, ForwardActions* out);

  // `content_url`: where the child's own machine serves content (its opening's
  // content=, empty when not advertised).
  void childUp(ChildId child, const std::string& machine, std::uint64_t capacity, ForwardActions* out,
               const std::string& content_url = "");
  void childCapacity(ChildId child, std::uint64_t capacity, ForwardActions* out);
  // `content_urls`: machine -> content URL from the child's <machines> (may be empty).
  void childMachines(ChildId child, const std::vector<std::string>& ids, ForwardActions* out,
                     const std::map<std::string, std::string>& content_urls = {});
  void childResult(ChildId child, const FetchResult& r, ForwardActions* out);
  void childDeleted(ChildId child, const proto::LinkDeleted& d, ForwardActions* out);
  void childDown(ChildId child, ForwardActions* out);

  std::uint64_t capacity() const;
  std::vector<std::string> machines() const;
  // machine -> content URL over every child (what goes up in <machines content=>).
  std::map<std::string, std::string> contentUrls() const;
  std::size_t queued() const { return queue_.size(); }
  std::size_t children() const { return children_.size(); }
  const DispatchCounters& counters() const { return counters_; }

 private:
  struct Job {
    std::uint64_t session = 0;
    FetchRequest fetch;  // the source's id
    ChildId child = 0;
  };
  struct PendingDelete {
    std::uint64_t session = 0;
    std::uint64_t source_id = 0;
    ChildId child = 0;
  };
  struct Child {
    std::string machine;                  // from its opening
    std::vector<std::string> machines;    // from <machines> (includes its own)
    std::string content_url;              // from its opening
    std::map<std::string, std::string> content_urls;  // from <machines>
    std::uint64_t capacity = 0;
    std::set<std::uint64_t> jobs;
  };

  void pump(ForwardActions* out);
  void announce(ForwardActions* out, std::uint64_t old_capacity, const std::vector<std::string>& old_machines,
                const std::map<std::string, std::string>& old_urls);
  std::uint64_t limitOf(const Child& c) const;

  int overload_pct_;
  std::size_t max_queued_;
  bool source_up_ = false;
  std::uint64_t session_ = 0;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Job> jobs_;  // our id -> job
  std::unordered_map<std::uint64_t, std::uint64_t> by_source_id_;
  std::deque<std::uint64_t> queue_;
  std::unordered_map<std::uint64_t, PendingDelete> deletes_;  // our delete id -> where it came from
  std::map<ChildId, Child> children_;
  DispatchCounters counters_;
};

}  // namespace lcc::botm
