// receiver.h — the IndexNow endpoints (docs/protocol.md §10): a site that pings search
// engines with IndexNow pings the LCC the same way, and its URLs become a partial set
// of the provider whose prefix covers them.
//
// One request: parse (request.h) → per-host rate (429) → each URL to the active
// provider whose prefix covers it, the longest prefix first (403 when one has none
// and indexnow.register is off, or its provider is not active: decided before anything
// is fetched, so an anonymous ping cannot make the LCC connect anywhere) → each URL's
// type guessed from its path and checked as a CP's <url> (proto::validateUrl against
// accept_mime: a refused URL is named in the answer with its code, never fetched; 422
// when none is left) → the key file, read through the injected fetch and remembered
// for key_ttl (403 "could not be verified", whatever the fetch saw; the detail goes to
// the log) → indexnow.register: auto makes the provider → one partial set per
// provider, handed to the UNS's forwarder → 202 once every set is durable (spooled or
// acked by the QM), as a CP's set_accepted, naming the refused URLs.
// THREADS: handle() runs on HTTP workers, at once; it blocks while the key is fetched
// and while the sets are made durable.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/address_limiter.h"
#include "common/metrics.h"
#include "common/provider_defaults.h"
#include "common/mime_map.h"
#include "http/http_server.h"
#include "indexnow/request.h"
#include "lcc/clock.h"
#include "lcc/provider_store.h"

namespace lcc::indexnow {

// Members with a config key carry no default: fromConfig() (indexnow_routes.cc) reads
// the schema's. Tests start from ReceiverOptions::fromConfig(Config::defaults()).
struct ReceiverOptions {
  Millis key_ttl{};                        // indexnow.key_ttl: a verified key is trusted this long
  Millis key_timeout{};                    // indexnow.key_timeout: one fetch of a key file
  std::uint64_t requests_per_minute = 0;   // indexnow.requests_per_minute, per host (0: no limit)
  // indexnow.register (a kEnum key, off|auto; `register` is a C++ keyword): auto — a
  // verified site whose URLs no provider covers gets one, scoped to the key file's
  // folder, with provider_defaults. Off: 403.
  bool auto_register = false;
  ProviderDefaults provider_defaults;      // rs.default_*
  // What a URL must pass, as a CP's: its guessed type is its m.
  std::vector<std::string> accept_mime;    // accept_mime
  std::size_t max_url_length = 0;          // uns.max_url_length
  std::size_t max_listed_refusals = 0;     // indexnow.max_listed_refusals: refused URLs named in an answer
  // No config key:
  Millis key_retry{60 * 1000};             // a key file found wrong or missing is not fetched again sooner
  std::size_t key_cache_entries = 10000;

  static ReceiverOptions fromConfig(const Config& config);
};

// The outcome of handing a set to the UNS → QM path.
struct Durable {
  bool accepted = false;
  std::string why;  // when not accepted
};

struct ReceiverDeps {
  ProviderStore* providers = nullptr;
  Clock* clock = nullptr;
  Metrics* metrics = nullptr;
  // The body of a key file (at most a few hundred bytes), or why it could not be read.
  // Must not follow a redirect off the key file's folder.
  std::function<Result<std::string>(const std::string& key_url, const std::string& scope)> fetch_key;
  // A partial set of `count` <url/> elements for `pid`; returns once it is durable or refused.
  std::function<Durable(ProviderId pid, std::uint64_t count, std::string urls_xml)> submit;
};

class Receiver {
 public:
  Receiver(ReceiverOptions options, ReceiverDeps deps);
  http::Response handle(const http::Request& req);

 private:
  struct KeyEntry {
    bool holds = false;
    MonoTime until;
  };
  struct Plan;
  // Each URL's owner and verdict, from the provider store only (nothing is fetched);
  // a refusal of the whole request (403, 500) when a URL has no owner that may take it.
  std::optional<http::Response> planUrls(const Submission& s, Plan& out);
  // True when the key file holds the key (remembered for key_ttl; a miss for key_retry).
  bool keyHolds(const Submission& s);
  http::Response submit(const Submission& s, Plan& plan);
  std::string refusedLines(const Plan& plan) const;
  // "" when no provider's prefix overlaps `scope`; else why. *found: an active provider
  // whose prefix is exactly `scope` (made meanwhile).
  std::string overlapWith(const std::string& scope, ProviderId* found);
  // indexnow.register: auto: the provider for s.key_scope, made now; 0 with *why when
  // another provider's prefix overlaps the folder or the store fails.
  ProviderId registerSite(const Submission& s, std::string* why);

  ReceiverOptions options_;
  ReceiverDeps deps_;
  MimeMap mime_;
  AddressLimiter per_host_;
  std::mutex mu_;
  std::mutex register_mu_;  // one registration at a time: two pings of a new site make one provider
  std::unordered_map<std::string, KeyEntry> keys_;  // key_url + '\n' + key
  Counter& submissions_;
  Counter& urls_;
  Counter& refused_;
  Counter& urls_refused_;
  Counter& throttled_;
  Counter& key_fetches_;
  Counter& registered_;
};

// Registers GET and POST on /indexnow and /IndexNow.
void addRoutes(http::Router& router, std::shared_ptr<Receiver> receiver);

}  // namespace lcc::indexnow
