#include "http/status_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "http/http_server.h"
#include "http/url_codec.h"
#include "lcc/error_codes.h"

namespace lcc::http {
namespace {

using nlohmann::json;
constexpr std::int64_t kHourMs = 3600 * 1000;

// The value at `path` ("qm/queued_urls") of `j`, or null.
const json& at(const json& j, const std::string& path) {
  static const json kNull;
  const json* cur = &j;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string key = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!cur->is_object() || !cur->contains(key)) return kNull;
    cur = &(*cur)[key];
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return *cur;
}

std::string text(const json& v) {
  if (v.is_null()) return "–";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string humanBytes(double b) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, kUnits[u]);
  return buf;
}

// "10:20" (UTC) of a unix time in ms.
std::string clockTime(std::int64_t unix_ms) {
  const std::int64_t minutes = (unix_ms / 60000) % (24 * 60);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d", static_cast<int>(minutes / 60), static_cast<int>(minutes % 60));
  return buf;
}

std::string number(double v) {
  char buf[32];
  if (std::fabs(v) >= 100 || v == std::floor(v)) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  }
  return buf;
}

// <div class="fig"><span class="v" data-key=...>value</span><span class="l">label</span></div>
std::string figure(const json& status, const std::string& key, const std::string& label, const std::string& tip,
                   bool bytes = false) {
  const json& v = at(status, key);
  std::string shown = bytes && v.is_number() ? humanBytes(v.get<double>()) : text(v);
  return "<div class=\"fig\" title=\"" + htmlEscape(tip) + "\"><span class=\"v\" data-key=\"" + htmlEscape(key) + "\" data-value=\"" +
         htmlEscape(text(v)) + "\">" + htmlEscape(shown) + "</span><span class=\"l\">" + htmlEscape(label) +
         "</span></div>\n";
}

std::string card(const std::string& title, const std::string& body) {
  return "<section class=\"card\"><h2>" + htmlEscape(title) + "</h2>\n<div class=\"figs\">\n" + body +
         "</div></section>\n";
}

bool has(const std::vector<std::string>& roles, const char* r) {
  return std::find(roles.begin(), roles.end(), r) != roles.end();
}

std::string errorsByCode(const json& s) {
  std::string rows;
  for (const auto& [code, count] : fetchErrorsByCode(s)) {
    rows += "<tr><td>" + std::to_string(code) + "</td><td>" +
            htmlEscape(std::string(errorCodeMessage(static_cast<ErrorCode>(code)))) +
            "</td><td class=\"num\" data-code=\"" + std::to_string(code) + "\">" + std::to_string(count) +
            "</td></tr>\n";
  }
  return rows;
}

std::string tables(const StatusPageInput& in) {
  std::string out = "<div class=\"tables\">\n";
  if (!in.queued_by_priority.empty() || has(in.roles, "qm")) {
    out += "<section class=\"card\"><h2>Queue by priority</h2><table><tr><th>priority</th><th>queued URLs</th></tr>\n";
    for (auto it = in.queued_by_priority.rbegin(); it != in.queued_by_priority.rend(); ++it) {
      out += "<tr><td>" + std::to_string(it->first) + "</td><td class=\"num\" data-priority=\"" +
             std::to_string(it->first) + "\">" + std::to_string(it->second) + "</td></tr>\n";
    }
    if (in.queued_by_priority.empty()) out += "<tr><td colspan=\"2\" class=\"none\">nothing queued</td></tr>\n";
    out += "</table></section>\n";
  }
  const std::string errors = errorsByCode(in.status);
  out += "<section class=\"card\"><h2>Fetch errors by code</h2><table><tr><th>code</th><th>meaning</th>"
         "<th>count</th></tr>\n" +
         (errors.empty() ? std::string("<tr><td colspan=\"3\" class=\"none\">none</td></tr>\n") : errors) +
         "</table></section>\n</div>\n";
  return out;
}

std::string cards(const StatusPageInput& in) {
  const json& s = in.status;
  std::string out = "<div class=\"cards\">\n";
  if (has(in.roles, "qm")) {
    out += card("Queue", figure(s, "qm/queued_urls", "queued URLs", "URLs waiting in the queue for a fetch, all providers") + figure(s, "qm/in_flight", "fetching now", "fetches handed to robots and not yet answered") +
                             figure(s, "qm/in_flight_limit", "in-flight limit", "most fetches out at once (the robots' slots, qm.max_in_flight)") +
                             figure(s, "qm/ready_sets", "sets ready", "accepted sets of URLs whose fetches can start") + figure(s, "qm/overloaded", "overloaded", "yes: the queue passed qm.queue_high and new sets are refused with 130") +
                             figure(s, "qm/cache_crash", "cache-crash", "yes: the queue was lost and every provider is asked for a full set"));
    out += card("Fetches", figure(s, "qm/fetched", "stored", "fetches whose new content was stored, since lccd started") + figure(s, "qm/unchanged", "unchanged (304)", "fetches the site answered 304 Not Modified: the stored copy is current") +
                               figure(s, "qm/fetch_errors", "errors", "fetches that failed for good (by code below), since lccd started") + figure(s, "qm/retries", "retries", "fetches that failed for now and wait to be tried again") +
                               figure(s, "qm/fetches_skipped", "skipped", "updates not fetched because the provider declared the same mtime, size or MD5 as the stored copy"));
  }
  if (s.contains("providers")) {
    out += card("Providers", figure(s, "providers/active", "active", "providers whose URLs are fetched") + figure(s, "providers/pending", "pending", "registrations not verified yet (the secret file is not found yet)") +
                                 figure(s, "providers/suspended", "suspended", "providers an administrator or the RS suspended: sessions refused, queue held") +
                                 figure(s, "qm/providers_queued", "with queued URLs", "providers with at least one URL in the queue") +
                                 figure(s, "qm/providers_eligible", "ready to fetch", "providers whose next fetch may start now (not held back by bandwidth or errors)") +
                                 figure(s, "qm/providers_delayed", "delayed", "providers waiting: bandwidth limit, time slot or a back-off after errors"));
  }
  if (has(in.roles, "botm") || has(in.roles, "bot")) {
    out += card("Robots", figure(s, "bot/connected", "robots connected", "robots connected to the BOT-M now") + figure(s, "bot/robots", "robots", "robots this node knows") +
                              figure(s, "bot/slots_per_robot", "slots per robot", "fetches each robot runs at once") +
                              figure(s, "bot/in_flight", "slots busy", "robot slots running a fetch now") + figure(s, "botm/capacity", "BOT-M capacity", "fetches the BOT-M can hand out at once (all robots' slots)") +
                              figure(s, "botm/queued", "waiting for a slot", "fetches the BOT-M holds until a robot slot is free"));
  }
  if (has(in.roles, "uns")) {
    out += card("Spool", figure(s, "uns/connections", "CP connections", "content providers connected to the UNS now") +
                             figure(s, "uns/forwarder/spool_sets", "sets in the spool", "sets the UNS accepted and keeps on disk until the QM acknowledges them") +
                             figure(s, "uns/forwarder/spool_bytes", "spool size", "bytes of those sets on disk (uns.spool_limit)", true));
  }
  return out + "</div>\n";
}

std::string charts(const StatusPageInput& in) {
  std::vector<std::pair<std::int64_t, double>> queued, spool;
  for (const auto& smp : in.samples) {
    if (auto it = smp.values.find("queued"); it != smp.values.end()) queued.emplace_back(smp.unix_ms, it->second);
    if (auto it = smp.values.find("spool_bytes"); it != smp.values.end()) spool.emplace_back(smp.unix_ms, it->second);
  }
  std::string out = "<h2 class=\"sect\">The last hour</h2>\n<p class=\"note\" id=\"charts-note\">One sample every "
                    "10 s, kept in memory: the charts start again at each restart of lccd";
  if (in.started_unix_ms > 0) out += " (this one at " + clockTime(in.started_unix_ms) + " UTC)";
  out += ". Times are UTC.</p>\n<div class=\"charts\">\n";
  if (has(in.roles, "qm")) {
    out += renderChartSvg("Queued URLs", "URLs", queued, in.now_unix_ms, "URLs waiting in the queue, every 10 s");
  }
  out += renderChartSvg("Fetches per minute", "/min", ratePerMinute(in.samples, "fetches"), in.now_unix_ms,
                        "fetch results (stored, unchanged, failed) per minute between two samples");
  out += renderChartSvg("Fetch errors per minute", "/min", ratePerMinute(in.samples, "errors"), in.now_unix_ms,
                        "failed fetches per minute between two samples");
  if (has(in.roles, "uns")) {
    out += renderChartSvg("UNS spool", "bytes", spool, in.now_unix_ms,
                          "bytes of sets the UNS keeps on disk until the QM acknowledges them");
  }
  return out + "</div>\n";
}

std::string links(const std::vector<std::string>& roles) {
  std::string out = "<h2 class=\"sect\">Links</h2>\n<ul class=\"links\">\n";
  if (has(roles, "rs")) out += "<li><a href=\"/register\">/register</a> — register as a content provider</li>\n";
  out += "<li><a href=\"/status\">/status</a> — queues, providers, robots, spool, overload state (JSON)</li>\n";
  out += "<li><a href=\"/metrics\">/metrics</a> — counters (Prometheus text)</li>\n";
  if (has(roles, "cu")) {
    out += "<li><a href=\"/cu/query?limit=10\">/cu/query</a> — what changed: parameters provider, since_seq or "
           "since (RFC 3339), mime, prefix, deleted, limit, format=xml|tar.gz|warc.gz, content</li>\n";
  }
  return out + "</ul>\n<p class=\"note\">Administrators: <code>lcc provider ...</code> and <code>lcc status</code> "
               "(token in data_dir/admin.token).</p>\n";
}

const char* const kStyle =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;background:#f4f5f7;color:#1d2733}"
    "header{background:#1d2733;color:#fff;padding:14px 24px}header h1{margin:0;font-size:20px}"
    "header p{margin:4px 0 0;color:#aab4c0}main{padding:16px 24px;max-width:1200px}"
    ".problems{background:#fdecea;border-left:4px solid #c62828;padding:8px 16px;margin-bottom:16px}"
    ".problems li{color:#8e1b1b}.ok{background:#e8f5e9;border-left:4px solid #2e7d32;padding:8px 16px;"
    "margin-bottom:16px;color:#1b5e20}"
    ".cards,.tables,.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:12px}"
    ".charts{grid-template-columns:repeat(auto-fill,minmax(360px,1fr))}"
    ".card{background:#fff;border-radius:6px;padding:10px 14px;box-shadow:0 1px 2px rgba(0,0,0,.08)}"
    ".card h2{font-size:13px;text-transform:uppercase;letter-spacing:.05em;color:#5b6776;margin:0 0 8px}"
    ".figs{display:grid;grid-template-columns:1fr 1fr 1fr;gap:8px}.fig{display:flex;flex-direction:column}"
    ".fig .v{font-size:20px;font-weight:600}.fig .l{font-size:11px;color:#6b7785}"
    "h2.sect{font-size:15px;margin:20px 0 8px}table{border-collapse:collapse;width:100%}"
    "td,th{text-align:left;padding:3px 6px;border-bottom:1px solid #eceff3}td.num{text-align:right}"
    "td.none{color:#8a96a3}.chart{display:block;width:100%;height:auto;background:#fff;border-radius:6px;"
    "box-shadow:0 1px 2px rgba(0,0,0,.08)}"
    ".links li{margin:4px 0}.note{color:#5b6776}a{color:#1565c0}.bad{color:#8e1b1b}"
    ".wide{margin-top:12px}.back{color:#aab4c0}.fig[title],th[title]{cursor:help}";

// The failing sitemaps of GET /status → uns.sitemap, as problems.
void sitemapProblems(const json& s, std::vector<std::string>& out) {
  const json& failures = at(s, "uns/sitemap/failures");
  if (!failures.is_array()) return;
  for (const auto& f : failures) {
    out.push_back("Provider " + text(f.value("id", json())) + ": its sitemap cannot be read: " +
                  text(f.value("error", json())) + " (" + text(f.value("failures", json())) +
                  " failed poll(s) in a row since " + text(f.value("failing_since", json())) + "; next try " +
                  text(f.value("next_poll", json())) + ").");
  }
  const json& failing = at(s, "uns/sitemap/failing");
  if (failing.is_number() && failing.get<std::size_t>() > failures.size()) {
    out.push_back("... and " + std::to_string(failing.get<std::size_t>() - failures.size()) +
                  " more providers whose sitemap cannot be read.");
  }
}

}  // namespace

std::string_view statusPageStyle() { return kStyle; }

std::map<int, std::uint64_t> fetchErrorsByCode(const json& s) {
  std::map<int, std::uint64_t> out;
  const json& counters = at(s, "counters");
  if (!counters.is_object()) return out;
  const std::string family = "lcc_qm_fetch_errors_total{code=\"";
  for (auto it = counters.begin(); it != counters.end(); ++it) {
    const std::string& k = it.key();
    if (k.rfind(family, 0) != 0 || k.size() < family.size() + 2 || !it.value().is_number()) continue;
    out[std::atoi(k.c_str() + family.size())] += it.value().get<std::uint64_t>();
  }
  return out;
}

std::vector<std::string> statusProblems(const json& s) {
  std::vector<std::string> out;
  if (at(s, "qm/failed") == json(true)) {
    out.push_back("The queue manager stopped on a store failure: " + text(at(s, "qm/failure")));
  }
  if (at(s, "qm/cache_crash") == json(true)) {
    out.push_back("cache-crash: the queue was lost and providers are asked for full sets.");
  }
  if (at(s, "qm/overloaded") == json(true)) {
    out.push_back("Overloaded: the queue is above qm.queue_high; new sets are refused (130).");
  }
  if (at(s, "botm/source_connected") == json(false)) {
    out.push_back("The BOT-M has no connection to its url source " + text(at(s, "botm/source")) + ".");
  }
  if (at(s, "uns/forwarder/spool_full") == json(true)) {
    out.push_back("The UNS spool is full (uns.spool_limit): sets are refused with 130.");
  }
  if (at(s, "uns/forwarder/qm_connected") == json(false)) {
    out.push_back("The UNS has no connection to the QM " + text(at(s, "uns/forwarder/qm")) + "; sets go to the spool.");
  }
  const json& spool = at(s, "uns/forwarder/spool_sets");
  if (spool.is_number() && spool.get<double>() > 0) {
    out.push_back(text(spool) + " sets wait in the UNS spool for the QM.");
  }
  if (at(s, "providers").contains("error")) out.push_back("Provider store: " + text(at(s, "providers/error")));
  sitemapProblems(s, out);
  return out;
}

std::vector<std::pair<std::int64_t, double>> ratePerMinute(const std::vector<Sample>& samples,
                                                           const std::string& series) {
  std::vector<std::pair<std::int64_t, double>> out;
  const Sample* prev = nullptr;
  for (const auto& s : samples) {
    auto it = s.values.find(series);
    if (it == s.values.end()) continue;
    if (prev != nullptr && s.unix_ms > prev->unix_ms) {
      const double delta = static_cast<double>(std::max<std::int64_t>(0, it->second - prev->values.at(series)));
      out.emplace_back(s.unix_ms, delta * 60000.0 / static_cast<double>(s.unix_ms - prev->unix_ms));
    }
    prev = &s;
  }
  return out;
}

std::string renderChartSvg(const std::string& title, const std::string& unit,
                           const std::vector<std::pair<std::int64_t, double>>& points, std::int64_t now_unix_ms,
                           const std::string& tip) {
  constexpr double kW = 360, kH = 150, kLeft = 44, kRight = 10, kTop = 26, kBottom = 20;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  double max = 0;
  for (const auto& [t, v] : points) max = std::max(max, v);
  const double top = max <= 0 ? 1 : max * 1.1;
  std::string out = "<svg class=\"chart\" role=\"img\" viewBox=\"0 0 360 150\" preserveAspectRatio=\"xMidYMid meet\" "
                    "xmlns=\"http://www.w3.org/2000/svg\" data-points=\"" + std::to_string(points.size()) +
                    "\"><title>" + htmlEscape(tip.empty() ? title : title + ": " + tip) + "</title>\n";
  out += "<text x=\"10\" y=\"17\" font-size=\"13\" font-weight=\"600\" fill=\"#1d2733\">" + htmlEscape(title) +
         "</text>\n";
  char buf[256];
  for (int i = 0; i <= 2; ++i) {  // grid lines with their values
    const double y = kTop + ph - ph * i / 2.0;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e3e7ec\"/>"
                  "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\" fill=\"#6b7785\">",
                  kLeft, y, kW - kRight, y, kLeft - 4, y + 3);
    out += buf + htmlEscape(number(top * i / 2.0)) + "</text>\n";
  }
  // Time ticks every 10 minutes of the clock (UTC), with a light vertical line.
  constexpr std::int64_t kTickMs = 10 * 60 * 1000;
  for (std::int64_t t = (now_unix_ms - kHourMs + kTickMs - 1) / kTickMs * kTickMs; t <= now_unix_ms; t += kTickMs) {
    const double x = kLeft + pw * (1.0 - static_cast<double>(now_unix_ms - t) / kHourMs);
    std::snprintf(buf, sizeof buf,
                  "<line class=\"tick\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#eef1f4\"/>"
                  "<text x=\"%.1f\" y=\"%.0f\" font-size=\"9\" text-anchor=\"middle\" fill=\"#6b7785\">",
                  x, kTop, x, kTop + ph, x, kH - 6);
    out += buf + clockTime(t) + "</text>\n";
  }
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.0f\" y=\"17\" font-size=\"10\" text-anchor=\"end\" fill=\"#6b7785\">%s, UTC</text>\n",
                kW - kRight, htmlEscape(unit).c_str());
  out += buf;
  if (points.size() < 2) {
    return out + "<text x=\"180\" y=\"85\" font-size=\"12\" text-anchor=\"middle\" fill=\"#8a96a3\">collecting "
                 "samples (one every 10 s)</text></svg>\n";
  }
  std::string line;
  for (const auto& [t, v] : points) {
    const double x = kLeft + pw * std::clamp(1.0 - static_cast<double>(now_unix_ms - t) / kHourMs, 0.0, 1.0);
    std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x, kTop + ph - ph * v / top);
    line += buf;
  }
  line.pop_back();
  const std::string first_x = line.substr(0, line.find(','));
  const std::string last_x = line.substr(line.rfind(' ') + 1, line.rfind(',') - line.rfind(' ') - 1);
  std::snprintf(buf, sizeof buf, "%.1f", kTop + ph);
  out += "<polygon fill=\"#1565c0\" fill-opacity=\"0.12\" points=\"" + first_x + "," + buf + " " + line + " " +
         last_x + "," + buf + "\"/>\n";
  out += "<polyline class=\"series\" fill=\"none\" stroke=\"#1565c0\" stroke-width=\"2\" points=\"" + line +
         "\"/>\n</svg>\n";
  return out;
}

std::string renderStatusPage(const StatusPageInput& in) {
  std::string role_list;
  for (const auto& r : in.roles) role_list += (role_list.empty() ? "" : ", ") + r;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                    "<title>LCC " + htmlEscape(in.machine_id) + " — status</title>\n<style>" + kStyle +
                    "</style></head>\n<body>\n<header><h1>Local Content Cache — machine " +
                    htmlEscape(in.machine_id) + "</h1>\n<p>Content providers tell it which of their URLs changed; "
                    "it fetches and stores that content, and content users (search engines, archives, mirrors) "
                    "take what changed as XML or tar.gz. Roles running here: <b>" +
                    htmlEscape(role_list.empty() ? std::string("none") : role_list) + "</b>.</p></header>\n<main>\n";
  const auto trouble = statusProblems(in.status);
  if (trouble.empty()) {
    out += "<div class=\"ok\" id=\"problems\">No problems.</div>\n";
  } else {
    out += "<div class=\"problems\" id=\"problems\"><b>Problems</b><ul>\n";
    for (const auto& p : trouble) out += "<li>" + htmlEscape(p) + "</li>\n";
    out += "</ul></div>\n";
  }
  out += cards(in) + tables(in) + (in.providers_total > 0 ? renderProviderTable(in) : std::string()) + charts(in) +
         links(in.roles);
  out += "</main>\n<script>setTimeout(function(){location.reload();},10000);</script>\n</body></html>\n";
  return out;
}

void registerStatusPage(Router& router, StatusPageSources src) {
  router.addExact("GET", "/", [src](const Request&) {
    StatusPageInput in;
    in.machine_id = src.machine_id;
    in.roles = src.roles;
    if (src.admin_status) in.status = src.admin_status();
    if (src.providers != nullptr && src.queued_urls) {
      Status s = src.providers->scan([&](const ProviderRecord& p) {
        if (std::uint64_t n = src.queued_urls(p.id); n > 0) in.queued_by_priority[p.priority] += n;
        return true;
      });
      (void)s;  // a store error shows in the providers summary
    }
    if (src.providers != nullptr) {
      std::map<ProviderId, std::string> failing;  // GET /status → uns.sitemap (bounded there)
      const json& list = at(in.status, "uns/sitemap/failures");
      for (std::size_t i = 0; list.is_array() && i < list.size(); ++i) {
        if (list[i].value("id", json()).is_number_unsigned()) {
          failing[list[i]["id"].get<ProviderId>()] = text(list[i].value("error", json()));
        }
      }
      in.listed_per_kind = src.status_providers;
      in.providers = selectProviders(*src.providers, src.queued_urls, failing, src.status_providers, &in.providers_total);
      if (src.provider_fetches) {
        for (auto& r : in.providers) r.fetches = src.provider_fetches(r.id);
      }
    }
    in.started_unix_ms = src.started_unix_ms;
    if (src.ring != nullptr) in.samples = src.ring->samples();
    if (src.sample_now) in.samples.push_back(src.sample_now());
    in.now_unix_ms = src.now_unix_ms ? src.now_unix_ms() : 0;
    Response r = Response::html(200, renderStatusPage(in));
    return r;
  });
  router.add("GET", "/provider/", [src](const Request& req) {
    const std::string tail = req.path.substr(std::string("/provider/").size());
    auto id = parseUnsigned(tail, 0xffffffffull);
    auto notFound = [&](const std::string& why) {
      return Response::html(404, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>LCC — "
                                 "no such provider</title><style>" + std::string(kStyle) + "</style></head><body><main>"
                                 "<p>" + htmlEscape(why) + "</p><p><a href=\"/\">← status</a></p></main></body></html>\n");
    };
    if (!id || *id == 0 || src.providers == nullptr) return notFound("No provider " + tail + ".");
    auto rec = src.providers->get(static_cast<ProviderId>(*id));
    if (!rec.isOk()) return Response::html(503, "<p>provider store: " + htmlEscape(rec.status().message()) + "</p>\n");
    if (!rec.value()) return notFound("No provider " + tail + ".");
    const ProviderRecord& p = *rec.value();
    return Response::html(200, renderProviderPage(src.machine_id, p, src.queued_urls ? src.queued_urls(p.id) : 0,
                                                  src.provider_fetches ? src.provider_fetches(p.id) : ProviderFetchRate{},
                                                  src.sitemap_state ? src.sitemap_state(p.id) : json()));
  });
}

}  // namespace lcc::http
