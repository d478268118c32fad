// scheduler.h — who fetches next (design document §6 "Fetching of URLs", "Bandwidth Delay").
//
// A pure policy class: it takes events (a set became ready, a fetch was handed out,
// finished or failed, the BOT-M capacity changed, time passed) and answers "which
// provider next". No sockets, no store access, no timers of its own: time comes from
// the injected Clock and the owner calls tick() every qm.bandwidth_tick.
//
// Memory is per provider (docs/architecture.md rule 4): for each provider its priority,
// bandwidth, in-flight count, delay and the ids of its ready sets (the QPSDB rows
// with slot -1, 8 bytes each — sets, never URLs). The design's three tables are:
//  - being-fetched: providers with fetches in flight (inFlight(pid) > 0);
//  - fetch-now: providers eligible for another fetch, ordered by priority (higher
//    first), then by their oldest ready set id (submission order);
//  - bandwidth-delay wheel: qm.bandwidth_horizon / qm.bandwidth_tick buckets;
//    a provider in it is not eligible until its bucket comes round.
// A provider is eligible when it has ready sets, is not delayed, blocked or held, and has
// fewer than qm.provider_inflight fetches out (1: serial fetching). The total in
// flight is capped at capacity × qm.botm_overload_pct / 100. Because every free
// fetch slot goes to the best eligible provider, a provider being fetched is "put
// back" as soon as a higher-priority one is waiting.
// Hosts: providers on one host share its politeness. At most qm.host_inflight
// fetches are out per host (politenessHost(): the fetch URL's host and port), whatever
// the number of providers fetching from it. The owner asks hostHasRoom() for the row it
// would send; when the host is full the provider waits for it (waitForHost()) and is
// eligible again when a fetch on that host ends (hostDone()). Memory: one record per
// host with fetches out or providers waiting.
// THREADS: one owner thread (the QM strand).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "lcc/clock.h"
#include "lcc/types.h"

namespace lcc::qm {

// The QueueManager copies these from its QmOptions (qm_options.h), so they carry no
// default here: the schema's. Tests copy QmOptions::fromConfig(Config::defaults()).
struct SchedulerOptions {
  std::uint32_t provider_inflight = 0;  // qm.provider_inflight
  std::uint32_t botm_overload_pct = 0;  // qm.botm_overload_pct
  Millis bandwidth_tick{};              // qm.bandwidth_tick
  Millis bandwidth_horizon{};           // qm.bandwidth_horizon
  std::uint32_t host_inflight = 0;      // qm.host_inflight
};

// The host whose politeness a fetch of `url` uses: "host:port" of the URL in normal
// form (url_norm.h), with the scheme's default port written out, so http://a/ and
// http://a:80/ are one host and https://a/ (443) another. A URL that is not in normal
// form is its own host. Not the resolved address: the QM resolves nothing (the robots
// do, on other machines), and a lookup per dispatch would block the QM's thread.
std::string politenessHost(std::string_view url);

class Scheduler {
 public:
  Scheduler(Clock& clock, SchedulerOptions options);

  // --- providers and sets ---
  // Priority (higher first) and bandwidth (bytes/s, 0 = unlimited) of a provider.
  void setProvider(ProviderId pid, std::int32_t priority, std::uint64_t bandwidth);
  void addReadySet(ProviderId pid, PSetId pset);
  void removeReadySet(ProviderId pid, PSetId pset);
  // The provider's ready sets, oldest first.
  std::vector<PSetId> readySets(ProviderId pid) const;
  bool hasProvider(ProviderId pid) const { return providers_.count(pid) != 0; }
  // A held provider (suspended or being removed by an administrator) is never eligible;
  // its ready sets stay and it is eligible again when released.
  void setHeld(ProviderId pid, bool held);
  bool isHeld(ProviderId pid) const;
  std::size_t heldCount() const;

  // --- capacity ---
  void setCapacity(std::uint64_t slots);  // the BOT-Ms' total capacity
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t limit() const;            // capacity × botm_overload_pct / 100
  std::uint64_t inFlight() const { return in_flight_; }
  std::uint32_t inFlight(ProviderId pid) const;

  // --- dispatch ---
  // The provider that should get the next free fetch slot, or nullopt when the cap is
  // reached or nobody is eligible.
  std::optional<ProviderId> pick() const;
  // The first `n` eligible providers in pick() order (what the next picks are likely to
  // be, with no fetch ending meanwhile): their rows are read in one batch (dispatch).
  std::vector<ProviderId> candidates(std::size_t n) const;
  void dispatched(ProviderId pid, const std::string& host);
  // The provider had nothing to hand out (every ready URL already in flight): not
  // eligible again until one of its fetches ends or a set arrives.
  void blocked(ProviderId pid);

  // --- hosts ---
  // Whether a fetch on `host` may go out now (fewer than host_inflight out on it).
  bool hostHasRoom(const std::string& host) const;
  // The provider's next row is on `host`, which is full: not eligible until a fetch on
  // that host ends (or, as for blocked(), a set arrives).
  void waitForHost(ProviderId pid, const std::string& host);
  // A fetch on `host` ended (a result came, or its link went down): every provider
  // waiting for the host is eligible again.
  void hostDone(const std::string& host);
  std::uint32_t hostInFlight(const std::string& host) const;
  std::size_t hostCount() const { return hosts_.size(); }  // hosts with fetches out or waiters

  // --- outcomes ---
  enum class After { kReady, kDelayed, kBeyondHorizon };
  // A fetch ended with `bytes` stored (0 for failures). Bandwidth is enforced here:
  // when the provider is over its rate it goes into the wheel (kDelayed) or, if the
  // needed delay exceeds the horizon, kBeyondHorizon (the owner then moves its ready
  // sets to a time slot and calls removeReadySet for each).
  After finished(ProviderId pid, std::uint64_t bytes);
  // A fetch that will not come back (connection lost): in-flight only.
  void lost(ProviderId pid);
  // Holds the provider back for `d` (Retry-After, provider-wide errors, a bad URL at
  // the head waiting for qm.retry_delay). kBeyondHorizon: as for finished().
  After delay(ProviderId pid, Millis d);
  bool isDelayed(ProviderId pid) const;
  // The delay that last came back kBeyondHorizon for this provider.
  Millis lastBeyond(ProviderId pid) const;

  // A retryable failure of one URL: the provider's next bad URL waits until then.
  void setRetryAt(ProviderId pid, MonoTime t);
  std::optional<MonoTime> retryAt(ProviderId pid) const;

  // Advances the wheel to now; returns providers whose delay ended.
  std::vector<ProviderId> tick();

  // --- status ---
  std::size_t providerCount() const { return providers_.size(); }
  std::size_t eligibleCount() const { return eligible_.size(); }
  std::size_t delayedCount() const;
  std::size_t readySetCount() const;

 private:
  using IndexKey = std::tuple<std::int64_t, PSetId, ProviderId>;  // (-priority, oldest set, pid)
  struct Provider {
    std::int32_t priority = 0;
    std::uint64_t bandwidth = 0;
    std::set<PSetId> ready;
    std::uint32_t in_flight = 0;
    bool blocked = false;
    bool held = false;
    std::optional<MonoTime> delayed_until;
    std::uint64_t delay_gen = 0;
    MonoTime allowed_at{};  // bandwidth: next byte may go at this time
    std::optional<MonoTime> retry_at;
    Millis beyond{0};
    std::optional<IndexKey> indexed;
    std::string waiting_host;  // non-empty: waits for that host (waitForHost)
  };
  struct Host {
    std::uint32_t in_flight = 0;
    std::vector<ProviderId> waiting;  // each at most once (Provider::waiting_host)
  };

  Provider& get(ProviderId pid);
  void reindex(ProviderId pid, Provider& p);
  void stopWaiting(ProviderId pid, Provider& p);  // leaves its host's waiting list

  Clock& clock_;
  SchedulerOptions options_;
  std::uint64_t capacity_ = 0;
  std::uint64_t in_flight_ = 0;
  std::unordered_map<ProviderId, Provider> providers_;
  std::set<IndexKey> eligible_;
  std::unordered_map<std::string, Host> hosts_;
  // The wheel: bucket i holds (pid, generation) due at wheel_base_ + i × tick.
  std::vector<std::vector<std::pair<ProviderId, std::uint64_t>>> wheel_;
  std::size_t wheel_pos_ = 0;
  MonoTime wheel_time_;  // start time of bucket wheel_pos_
};

}  // namespace lcc::qm
