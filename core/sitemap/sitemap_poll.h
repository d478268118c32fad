// sitemap_poll.h — the LCC reads the sitemaps providers registered (`lcc provider set
// ID --sitemap URL --sitemap-interval 6h`, docs/protocol.md §11) and sends what changed
// as a partial set, as if the site had pushed it: for sites that cannot push.
//
// One poll of a provider: its sitemap and every sitemap an index lists are fetched
// through the node's Fetcher (its policy; redirects only under the provider's prefixes),
// read with the rules of `lcc cp sitemap` (SitemapWalk); a listed sitemap or page
// outside the provider's prefixes is skipped, counted and logged. The pages are
// compared with the last poll's (diffSitemaps, the state of `cp sitemap
// --state`): new or changed pages are checked as a CP's <url> would be, their type
// guessed from the path (proto::validateUrl against accept_mime: a page refused, e.g.
// 203, is never sent or fetched and goes to the provider's error list with its code);
// the others go out with op="check" (a 404 or 410 removes the URL, as for IndexNow),
// pages no longer listed with op="delete", in sets of at most
// uns.max_set_urls, each through the UNS's forwarder and waited for (durable, as a CP's set).
// Only then is the state file <state_dir>/<pid>.state replaced: a restart does not
// resend everything, and a failed poll (a sitemap that cannot be read, a refused set)
// changes nothing. A failed poll is tried again after retry_min, doubled at each further
// failure up to the provider's interval; the failure (the HTTP status when there was
// one) is kept in <state_dir>/<pid>.failed until a poll succeeds, so the status page,
// `lcc provider show` and the back-off survive a restart. pollSoon() (the admin API's
// `set --sitemap`, even with the same URL) polls a provider at the next wake.
// THREADS: one thread (lcc-sitemap) polls, one provider after the other; it wakes every
// check_interval, or sooner for a retry due (a Clock timer). pollDue() and
// pollProvider() may be called directly (tests) when the thread is not running.
// pollSoon(), providerStatus() and status() may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "common/mime_map.h"
#include "common/service.h"
#include "lcc/clock.h"
#include "lcc/env.h"
#include "lcc/provider_store.h"
#include "sitemap/sitemap.h"

namespace lcc::sitemap {

// How a poll hands a partial set to the uns role (uns/submit_wait.h,
// partialSetSubmitter): `count` <url/> elements for `pid`, OK once durable.
using SubmitSet = std::function<Status(ProviderId pid, std::uint64_t count, std::string urls_xml)>;

// Members with a config key carry no default: fromConfig() (sitemap_poll.cc) reads the
// schema's. Tests start from SitemapPollOptions::fromConfig(Config::defaults(), dir).
struct SitemapPollOptions {
  Millis default_interval{};                    // sitemap.default_interval
  Millis check_interval{};                      // sitemap.check_interval
  Millis retry_min{};                           // sitemap.retry_min: first retry of a failed poll
  Millis fetch_timeout{};                       // sitemap.fetch_timeout: one fetch of a sitemap file
  std::uint64_t max_pages = 0;                  // sitemap.max_pages
  std::uint64_t max_set_urls = 0;               // uns.max_set_urls
  // What a page must pass, as a CP's <url>, its type guessed from its path; a page
  // refused goes to the provider's errors.
  std::vector<std::string> accept_mime;         // accept_mime
  std::size_t max_url_length = 0;               // uns.max_url_length
  std::size_t max_errors_kept = 0;              // qm.max_errors_kept
  std::string state_dir;                        // no config key: <data_dir>/sitemap

  static SitemapPollOptions fromConfig(const Config& config, const std::string& data_dir);
};

struct SitemapPollDeps {
  ProviderStore* providers = nullptr;
  Clock* clock = nullptr;
  Env* env = nullptr;
  Metrics* metrics = nullptr;
  // Feeds the body of `url` to `reader` and finishes it; "" on success, else why not
  // ("HTTP 404", "connection refused (306)": fetchFailureText), with *http_status set
  // when the site answered with an HTTP status. Redirects must stay under `prefixes`.
  std::function<std::string(const std::string& url, const std::vector<std::string>& prefixes,
                            SitemapReader& reader, int* http_status)>
      fetch;
  // Ends a fetch in flight early (stop()); may be empty.
  std::function<void()> cancel_fetch;
  // A partial set of `count` <url/> elements for `pid`; returns once durable (OK) or
  // refused (the message says why: "CODE text").
  SubmitSet submit;
};

// What one poll did (also logged).
struct SitemapPollReport {
  std::uint64_t pages = 0;     // pages listed (within the prefixes)
  std::uint64_t changed = 0;   // sent with op="check"
  std::uint64_t deleted = 0;   // sent with op="delete"
  std::uint64_t skipped = 0;   // listed sitemaps and pages outside the prefixes, or not http(s) URLs
  std::uint64_t refused = 0;   // new or changed pages refused as a CP's URL would be (203: type not accepted)
  std::uint64_t sets = 0;      // partial sets submitted
};

// How a provider's polls go, for the status page and `lcc provider show`.
struct SitemapPollState {
  std::string sitemap;            // the URL of the last attempt
  WallTime last_attempt{};        // {}: none since the start (and no failure kept)
  WallTime last_success{};        // from the state file at first
  std::uint64_t failures = 0;     // failed polls in a row (0: the last one succeeded)
  WallTime failing_since{};       // the first of them
  std::string error;              // the last failure: "<sitemap URL>: HTTP 404"
  int http_status = 0;            // its HTTP status, 0 when there was no HTTP answer
  WallTime next_poll{};           // when it is due again
  std::optional<SitemapPollReport> last_report;  // the last successful poll (since the start)
};

// The JSON of a poll state: {"sitemap", "ok", "failures", "failing_since", "error",
// "http_status", "last_attempt", "last_success", "next_poll", "last"}; times RFC 3339.
nlohmann::json sitemapPollStateJson(const SitemapPollState& s);
// What a failed fetch says: "HTTP 404" (with the fetcher's detail when it adds one),
// else "connection refused (306)"; never the internal code with the HTTP status.
std::string fetchFailureText(int code, int http_status, const std::string& message);

class SitemapPoller {
 public:
  SitemapPoller(SitemapPollOptions options, SitemapPollDeps deps);
  ~SitemapPoller();

  // Makes state_dir and starts the thread.
  Status start();
  // Stops the thread (a fetch in flight is cancelled). Idempotent.
  void stop();

  // Polls every active provider whose sitemap is due: never polled (no state), its
  // interval passed since the last attempt, or its sitemap URL changed.
  void pollDue();
  // Polls `p` now. OK once its changes are durable and its state is written.
  Result<SitemapPollReport> pollProvider(const ProviderRecord& p);
  // Polls `pid` at the next wake (now, when the thread waits), due or not.
  void pollSoon(ProviderId pid);
  // The state of `pid`'s polls; nullopt when it was never polled nor failed.
  std::optional<SitemapPollState> providerStatus(ProviderId pid);
  // GET /status → uns.sitemap: {"providers": polled, "failing": N, "failures": [the
  // `max_listed` failing longest, each {"id", ...sitemapPollStateJson}]}.
  void status(nlohmann::json& out, std::size_t max_listed = 20);
  // When pollDue() wants the next wake: the earliest retry due, at most check_interval.
  Millis nextWake() const;

 private:
  struct Track {
    bool loaded = false;
    bool soon = false;   // pollSoon()
    WallTime last{};     // the last attempt (from the state file at first)
    std::string url;     // the sitemap URL of the last attempt
    SitemapPollState state;
  };
  struct Wake;
  void run();
  Track& track(ProviderId pid);  // under mu_
  std::string statePath(ProviderId pid) const;
  std::string failedPath(ProviderId pid) const;
  // Records the outcome of a poll of `p` begun at `started` (the back-off, the .failed file).
  void recordOutcome(const ProviderRecord& p, WallTime started, const Result<SitemapPollReport>& r, int http_status);
  // The failure kept in failedPath(pid), if any, into `s` (under mu_).
  void loadFailure(ProviderId pid, SitemapPollState& s);
  // Drops the tracks (and the kept failures) of providers no longer polled (under no lock).
  void forgetOthers(const std::vector<ProviderRecord>& candidates);
  // One poll; *http_status: the HTTP status of a failed fetch.
  Result<SitemapPollReport> pollOnce(const ProviderRecord& p, int* http_status);
  Status submitChanges(const ProviderRecord& p, const std::vector<std::string>& lines, SitemapPollReport& report);
  // The refused pages into the provider's error list, as the QM records a fetch error.
  void recordRefusals(ProviderId pid, const std::vector<FetchErrorEntry>& refused);

  SitemapPollOptions options_;
  SitemapPollDeps deps_;
  MimeMap mime_;
  mutable std::mutex mu_;               // guards tracks_ (held briefly, never during a poll)
  std::map<ProviderId, Track> tracks_;
  WallTime earliest_retry_{};           // under mu_: the earliest next_poll of a failing provider
  std::shared_ptr<Wake> wake_;
  std::thread thread_;
  Counter& polls_;
  Counter& failures_;
  Counter& sent_;
  Counter& skipped_;
  Counter& refused_;
};

// The poller of a node that runs the uns role: sitemaps through the node's fetcher,
// sets through `submit` (the UNS's forwarder). Null when the node has no fetcher.
std::unique_ptr<SitemapPoller> makeSitemapPoller(NodeContext& node, SubmitSet submit);

}  // namespace lcc::sitemap
