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
// changes nothing and is tried again an interval later.
// THREADS: one thread (lcc-sitemap) polls, one provider after the other; it wakes every
// check_interval (a Clock timer). pollDue() and pollProvider() may be called directly
// (tests) when the thread is not running.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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

struct SitemapPollOptions {
  std::string state_dir;                        // <data_dir>/sitemap
  Millis default_interval{6 * 3600 * 1000};     // sitemap.default_interval
  Millis check_interval{60 * 1000};             // sitemap.check_interval
  std::uint64_t max_pages = 1'000'000;          // sitemap.max_pages
  std::uint64_t max_set_urls = 1'000'000;       // uns.max_set_urls
  // What a page must pass, as a CP's <url> (accept_mime, uns.max_url_length), its type
  // guessed from its path; a page refused goes to the provider's errors (qm.max_errors_kept).
  std::vector<std::string> accept_mime = {"text/*", "application/pdf", "application/xml"};
  std::size_t max_url_length = 2048;
  std::size_t max_errors_kept = 100;
};

struct SitemapPollDeps {
  ProviderStore* providers = nullptr;
  Clock* clock = nullptr;
  Env* env = nullptr;
  Metrics* metrics = nullptr;
  // Feeds the body of `url` to `reader` and finishes it; "" on success, else why not.
  // Redirects must stay under `prefixes`.
  std::function<std::string(const std::string& url, const std::vector<std::string>& prefixes,
                            SitemapReader& reader)>
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

 private:
  struct Track {
    bool loaded = false;
    WallTime last{};     // the last attempt (from the state file at first)
    std::string url;     // the sitemap URL of the last attempt
  };
  struct Wake;
  void run();
  Track& track(ProviderId pid);
  std::string statePath(ProviderId pid) const;
  Status submitChanges(const ProviderRecord& p, const std::vector<std::string>& lines, SitemapPollReport& report);
  // The refused pages into the provider's error list, as the QM records a fetch error.
  void recordRefusals(ProviderId pid, const std::vector<FetchErrorEntry>& refused);

  SitemapPollOptions options_;
  SitemapPollDeps deps_;
  MimeMap mime_;
  std::map<ProviderId, Track> tracks_;  // the polling thread's (or the test's) only
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
