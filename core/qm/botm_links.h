// botm_links.h — the QM's BOT-M links (docs/internal-protocols.md §2): each link's
// machine, capacity, fetches out and the machines it can delete files on, and
// pick(): the link a fetch goes out on. Pure state, no sockets, no stores, no clock;
// the QueueManager feeds it the link events and asks it (queue_manager_dispatch.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lcc::qm {

using LinkId = std::uint64_t;

class BotmLinks {
 public:
  struct Link {
    std::string machine;                // the machine it said hello from
    std::uint64_t capacity = 0;         // fetches it takes at once
    std::uint64_t in_flight = 0;        // fetches out on it now
    std::vector<std::string> machines;  // <machines>: those it deletes files on
  };

  // overload_pct: qm.botm_overload_pct, a link takes capacity × pct / 100 fetches.
  explicit BotmLinks(std::uint32_t overload_pct) : overload_pct_(overload_pct) {}

  // A link came up (or said hello again): its machine and capacity. Until it lists
  // machines it deletes files on its own machine.
  void up(LinkId link, const std::string& machine, std::uint64_t capacity);
  // false: no such link (nothing changed).
  bool setCapacity(LinkId link, std::uint64_t capacity);
  bool setMachines(LinkId link, std::vector<std::string> machines);
  void down(LinkId link);

  // The link with the most free room (its limit less its fetches out, at least one
  // fetch); nullopt when none has room.
  std::optional<LinkId> pick() const;
  void fetchSent(LinkId link);
  void fetchEnded(LinkId link);  // a result came, whatever it says

  std::uint64_t totalCapacity() const;
  const Link* find(LinkId link) const;
  const std::map<LinkId, Link>& all() const { return links_; }
  std::size_t size() const { return links_.size(); }

 private:
  std::uint32_t overload_pct_;
  std::map<LinkId, Link> links_;
};

}  // namespace lcc::qm
