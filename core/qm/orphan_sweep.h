// orphan_sweep.h — the orphan sweep's state (issue 15): the sweep now running (its id,
// the links and machines whose <swept> has not come, the names each machine's records
// reference, built at its first <file>), its counts for /status, the machines swept
// since open(), and the orphans whose delete is pending (for the bytes reclaimed).
// No stores, no sockets: the QueueManager builds the referenced names, writes the FSMDB
// deletes and sends the <sweep> requests (queue_manager_sweep.cc).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "qm/botm_links.h"

namespace lcc::qm {

class OrphanSweep {
 public:
  // A new sweep (the last one's counts go); returns its id.
  std::uint64_t start();
  // The sweep is asked of `link` for `machines` (a sweep is started if none ran since
  // open()); returns the sweep id to send.
  std::uint64_t ask(LinkId link, const std::vector<std::string>& machines);
  // Whether `machine` was asked since open() (its first link asks it).
  bool asked(const std::string& machine) const { return asked_.count(machine) > 0; }
  // A <file> of sweep `sweep` on `link` counts (not an older sweep's, the link still waits).
  bool accepts(LinkId link, std::uint64_t sweep) const;

  // --- a listed file (after accepts()) ---
  void countListed() { ++cur_.listed; }
  // The names `machine`'s records reference; null until addReferenced().
  std::unordered_set<std::string>* referenced(const std::string& machine);
  std::unordered_set<std::string>& addReferenced(const std::string& machine);
  // An orphan found: its delete is written (its size is reclaimed when confirmed).
  void orphanFound(const std::string& machine, const std::string& file, std::uint64_t size);

  // A <swept> for `machine` on `link`.
  enum class Swept {
    kIgnored,     // an older sweep's, or a link not waited for
    kMachine,     // that machine's list ended; the link still lists others
    kLink,        // the link's lists ended; other links still list
    kSweepDone,   // every link's lists ended
  };
  Swept swept(LinkId link, std::uint64_t sweep, const std::string& machine);
  void linkDown(LinkId link);  // counted in links_lost when it still had lists to send
  // A delete confirmed: the orphan's size when it was one, counted as reclaimed.
  std::optional<std::uint64_t> deleted(const std::string& machine, const std::string& file);

  std::uint64_t id() const { return cur_.id; }
  std::size_t linksWaiting() const { return cur_.waiting.size(); }
  std::uint64_t listed() const { return cur_.listed; }
  std::uint64_t orphans() const { return cur_.orphans; }
  std::uint64_t orphanBytes() const { return cur_.orphan_bytes; }
  nlohmann::json status() const;

 private:
  struct Current {
    std::uint64_t id = 0;
    std::map<LinkId, std::set<std::string>> waiting;  // link -> machines whose <swept> has not come
    std::map<std::string, std::unordered_set<std::string>> referenced;  // machine -> names
    std::uint64_t listed = 0, orphans = 0, orphan_bytes = 0, reclaimed_files = 0, reclaimed_bytes = 0;
    std::uint64_t links_lost = 0;  // links that went down before their <swept>
  };
  Current cur_;
  std::uint64_t next_id_ = 1;
  std::set<std::string> asked_;  // machines swept once since open()
  std::map<std::pair<std::string, std::string>, std::uint64_t> pending_;  // (machine, file) -> size
};

}  // namespace lcc::qm
