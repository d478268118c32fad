// delete_manager.h — the delete manager's state (design document §6): the file deletes
// out on each BOT-M link (at most qm.delete_window per link), the machines no link can
// reach (unknown-machine, until a link lists them), and each failed file's back-off
// (decideDeleteFailure(), result_policy.h). A policy class: it takes the events (a
// delete sent, an answer, a link up or down, a machine listed) and says what to send
// and what an answer does; the QueueManager reads the FSMDB, writes it and sends
// (queue_manager_deletes.cc). The back-off is kept in memory only.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lcc/clock.h"
#include "lcc/types.h"
#include "qm/botm_links.h"
#include "qm/result_policy.h"

namespace lcc::qm {

class DeleteManager {
 public:
  // window: qm.delete_window; rules: qm.delete_retry and qm.delete_retry_max.
  DeleteManager(std::size_t window, DeleteRetryRules rules) : window_(window), rules_(rules) {}

  // --- links ---
  void linkUp();  // every machine that waits for a link (unknown-machine) is tried again
  void machinesListed(const std::vector<std::string>& machines);  // these are tried again
  void linkDown(LinkId link);  // its deletes out are forgotten: their FSMDB rows are sent again

  // --- sending ---
  std::size_t room(LinkId link) const;  // deletes the link may still take
  bool blocked(const std::string& machine) const;  // waits for a link that lists it
  // The FSMDB row should go out now: it is not out already nor backing off.
  bool wanted(const DeleteRequest& d, MonoTime now) const;
  // It went out on `link`; returns the delete's id.
  std::uint64_t sent(LinkId link, const std::string& machine, const std::string& file);

  // --- answers ---
  struct Answer {
    bool known = false;  // false: no delete out has this id (its link went down): ignore it
    std::string machine, file;
    // Not ok: what the failure does (its count includes this one).
    bool wait_for_machine = false;
    std::uint32_t failures = 0;
    Millis retry_after{0};
  };
  // The answer to delete `id` on `link`. ok: the FSMDB row is to be dropped; else the
  // row stays and is sent again after its back-off (or when a link lists the machine).
  Answer answered(LinkId link, std::uint64_t id, bool ok, const std::string& reason, MonoTime now);

  // --- state ---
  std::size_t outCount() const { return out_.size(); }
  std::size_t outOn(LinkId link) const;
  // The files of `machine` out now (the orphan sweep must not take them for orphans).
  void outFiles(const std::string& machine, std::unordered_set<std::string>& into) const;
  bool backingOff(const std::string& machine, const std::string& file, MonoTime now) const;

 private:
  using FileKey = std::pair<std::string, std::string>;  // (machine, file)
  struct Out {
    LinkId link = 0;
    std::string machine;
    std::string file;
  };
  struct Backoff {
    std::uint32_t failures = 0;
    MonoTime retry_at{};
  };

  std::size_t window_;
  DeleteRetryRules rules_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, Out> out_;
  std::set<FileKey> out_keys_;
  std::map<LinkId, std::uint64_t> out_per_link_;
  std::set<std::string> blocked_;       // unknown-machine: until a link lists it
  std::map<FileKey, Backoff> backoff_;  // failed deletes of single files
};

}  // namespace lcc::qm
