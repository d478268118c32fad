// status_page.h — GET /: the node's status page for a person (docs/protocol.md §7, the HTTP port).
//
// One HTML page, no JavaScript needed (a short script reloads it every 10 s): what is
// wrong first (overload, cache-crash, a failed QM, a lost url source, a growing spool),
// then the figures an operator acts on — queue depth by provider priority, fetch rate,
// fetch errors by code, providers, robots and slots, spool — then charts of the last
// hour drawn as inline SVG from lccd's SampleRing (common/sample_ring.h), then the links
// the page always had (/register, /status, /metrics, /cu/query).
// Every figure carries `data-key="<path in /admin/status>"` so that a test (or a
// scraper) can match it with the JSON.
// THREADS: renderStatusPage is pure; the route runs on the HTTP worker threads.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/sample_ring.h"
#include "common/service.h"
#include "lcc/provider_store.h"

namespace lcc::http {

class Router;

// One provider the status page names (status_providers.cc).
struct ProviderRow {
  ProviderId id = 0;
  std::string name;           // its first prefix
  std::string state;          // active, suspended, ...
  std::uint64_t queued = 0;   // URLs queued (the backlog)
  std::uint64_t errors = 0;   // fetch errors not yet reported to it (error_total)
  bool fullset_wanted = false;
  std::string sitemap_error;  // its sitemap's last poll failed: why; "" otherwise
  ProviderFetchRate fetches;
  std::vector<std::string> why;  // "largest backlog", "most errors", "suspended", ...
};

struct StatusPageInput {
  std::string machine_id;
  std::vector<std::string> roles;
  // The /admin/status document: GET /status (roles' sections, "counters") plus
  // "providers" (the provider summary).
  nlohmann::json status;
  // Queued URLs by provider priority (highest first when drawn); empty without a QM.
  std::map<std::int32_t, std::uint64_t> queued_by_priority;
  // Oldest first; the last one is taken now. Charts need two or more.
  std::vector<Sample> samples;
  std::int64_t now_unix_ms = 0;
  std::int64_t started_unix_ms = 0;  // when lccd started: the charts begin there (0: unknown)
  // The providers named in the table (at most 5 lists of http.status_providers each),
  // out of `providers_total`; `listed_per_kind` is that bound.
  std::vector<ProviderRow> providers;
  std::uint64_t providers_total = 0;
  std::size_t listed_per_kind = 10;
};

std::string renderStatusPage(const StatusPageInput& in);
// The pages' CSS (inline: the page loads nothing else).
std::string_view statusPageStyle();

// What an operator must act on, worst first, from the /admin/status document: a failed
// QM, cache-crash, overload, a full spool, lost QM or url source links, sets waiting in
// the spool, a provider store error. Empty when all is well (`lcc status` prints these
// first too).
std::vector<std::string> statusProblems(const nlohmann::json& status);
// Failed fetches by error code, from "counters" (lcc_qm_fetch_errors_total{code="N"}).
std::map<int, std::uint64_t> fetchErrorsByCode(const nlohmann::json& status);

// One line chart as inline SVG: `points` (unix ms, value) oldest first, the x axis the
// hour before `now_unix_ms`. With fewer than two points, an empty frame that says so.
// `tip`: what the chart shows (its tooltip). Time ticks every 10 minutes (UTC).
std::string renderChartSvg(const std::string& title, const std::string& unit,
                           const std::vector<std::pair<std::int64_t, double>>& points, std::int64_t now_unix_ms,
                           const std::string& tip = "");

// A counter series as a rate per minute between consecutive samples.
std::vector<std::pair<std::int64_t, double>> ratePerMinute(const std::vector<Sample>& samples,
                                                           const std::string& series);

// What the route reads from the daemon.
struct StatusPageSources {
  std::string machine_id;
  std::vector<std::string> roles;
  std::function<nlohmann::json()> admin_status;        // the /admin/status document
  ProviderStore* providers = nullptr;                  // for the priorities
  std::function<std::uint64_t(ProviderId)> queued_urls;  // empty without a QM
  const SampleRing* ring = nullptr;                    // may be null: no charts
  std::function<Sample()> sample_now;                  // the current figures
  std::function<std::int64_t()> now_unix_ms;
  std::int64_t started_unix_ms = 0;
  std::function<ProviderFetchRate(ProviderId)> provider_fetches;  // empty without a QM
  std::function<nlohmann::json(ProviderId)> sitemap_state;        // empty without the uns role
  std::size_t status_providers = 0;  // http.status_providers: providers listed per kind (no default here: the schema's)
};

// The providers worth naming, from one scan of the store: the `per_kind` largest
// backlogs, most errors, suspended, full set wanted and failing sitemaps (`sitemap_failing`,
// id -> why). Memory and the rows kept are bounded by 5 * per_kind. *total: providers seen.
std::vector<ProviderRow> selectProviders(ProviderStore& store, const std::function<std::uint64_t(ProviderId)>& queued,
                                         const std::map<ProviderId, std::string>& sitemap_failing,
                                         std::size_t per_kind, std::uint64_t* total);
// The table of those providers, each linking to /provider/<id>.
std::string renderProviderTable(const StatusPageInput& in);
// GET /provider/<id>: one provider for a person (no secrets: no contact, address,
// secret or password hash): state, prefixes, backlog, fetch rate, recent errors, sitemap.
std::string renderProviderPage(const std::string& machine_id, const ProviderRecord& p, std::uint64_t queued,
                               const ProviderFetchRate& fetches, const nlohmann::json& sitemap);

// Registers GET / (exact) and GET /provider/<id>.
void registerStatusPage(Router& router, StatusPageSources sources);

}  // namespace lcc::http
