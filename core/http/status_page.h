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
#include "lcc/provider_store.h"

namespace lcc::http {

class Router;

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
};

std::string renderStatusPage(const StatusPageInput& in);

// What an operator must act on, worst first, from the /admin/status document: a failed
// QM, cache-crash, overload, a full spool, lost QM or url source links, sets waiting in
// the spool, a provider store error. Empty when all is well (`lcc status` prints these
// first too).
std::vector<std::string> statusProblems(const nlohmann::json& status);
// Failed fetches by error code, from "counters" (lcc_qm_fetch_errors_total{code="N"}).
std::map<int, std::uint64_t> fetchErrorsByCode(const nlohmann::json& status);

// One line chart as inline SVG: `points` (unix ms, value) oldest first, the x axis the
// hour before `now_unix_ms`. With fewer than two points, an empty frame that says so.
std::string renderChartSvg(const std::string& title, const std::string& unit,
                           const std::vector<std::pair<std::int64_t, double>>& points, std::int64_t now_unix_ms);

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
};

// Registers GET / (exact).
void registerStatusPage(Router& router, StatusPageSources sources);

}  // namespace lcc::http
