// status_providers.cc — the providers the status page names, and the page of one
// provider (GET /provider/<id>): status_page.h.
#include <algorithm>
#include <cstdio>
#include <queue>
#include <set>

#include "http/admin_api.h"
#include "http/http_server.h"
#include "http/status_page.h"
#include "http/url_codec.h"
#include "lcc/error_codes.h"
#include "lcc/support/time_util.h"

namespace lcc::http {
namespace {

using nlohmann::json;

ProviderRow rowOf(const ProviderRecord& p, std::uint64_t queued) {
  ProviderRow r;
  r.id = p.id;
  r.name = p.prefixes.empty() ? std::string("-") : p.prefixes.front();
  r.state = std::string(providerStateName(p.state));
  r.queued = queued;
  r.errors = p.error_total;
  r.fullset_wanted = p.fullset_wanted;
  return r;
}

// The `n` rows with the largest key (ties: the smaller id), in a heap of at most n.
class TopN {
 public:
  explicit TopN(std::size_t n) : n_(n) {}
  void offer(std::uint64_t key, const ProviderRow& row) {
    if (key == 0) return;
    heap_.push({key, row});
    if (heap_.size() > n_) heap_.pop();
  }
  std::vector<ProviderRow> take() {
    std::vector<ProviderRow> out;
    for (; !heap_.empty(); heap_.pop()) out.push_back(heap_.top().second);
    std::reverse(out.begin(), out.end());
    return out;
  }

 private:
  using Item = std::pair<std::uint64_t, ProviderRow>;
  struct Worse {  // the top of the heap is the row to drop first
    bool operator()(const Item& a, const Item& b) const {
      return a.first != b.first ? a.first > b.first : a.second.id < b.second.id;
    }
  };
  std::size_t n_;
  std::priority_queue<Item, std::vector<Item>, Worse> heap_;
};

std::string num(std::uint64_t v) { return std::to_string(v); }

std::string rate(double per_minute) {
  char buf[32];
  std::snprintf(buf, sizeof buf, per_minute >= 10 ? "%.0f" : "%.1f", per_minute);
  return buf;
}

std::string timeText(const json& v) { return v.is_string() ? v.get<std::string>() : std::string("–"); }

// <div class="fig" title=...>: a figure of the provider page.
std::string fig(const std::string& value, const std::string& label, const std::string& tip, const char* id = "") {
  return "<div class=\"fig\" title=\"" + htmlEscape(tip) + "\"><span class=\"v\"" +
         (*id ? std::string(" id=\"") + id + "\"" : std::string()) + ">" + htmlEscape(value) +
         "</span><span class=\"l\">" + htmlEscape(label) + "</span></div>\n";
}

std::string sitemapSection(const ProviderRecord& p, const json& s) {
  std::string out = "<section class=\"card\"><h2>Sitemap polling</h2>\n";
  if (p.sitemap_url.empty()) return out + "<p class=\"none\">No sitemap registered (lcc provider set ID --sitemap URL).</p></section>\n";
  out += "<p>Sitemap <code>" + htmlEscape(p.sitemap_url) + "</code>, read every " +
         (p.sitemap_interval.count() > 0 ? std::to_string(p.sitemap_interval.count() / 1000) + " s"
                                         : std::string("sitemap.default_interval")) + ".</p>\n";
  if (!s.is_object()) return out + "<p class=\"none\">Not polled since lccd started (or not on this node).</p></section>\n";
  if (s.value("ok", true)) {
    out += "<p id=\"sitemap-state\">The last poll worked (" + htmlEscape(timeText(s.value("last_success", json()))) +
           "); next poll " + htmlEscape(timeText(s.value("next_poll", json()))) + ".</p>\n";
  } else {
    out += "<p id=\"sitemap-state\" class=\"bad\">Failing: " + htmlEscape(s.value("error", std::string())) + " — " +
           num(s.value("failures", 0)) + " failure(s) in a row since " +
           htmlEscape(timeText(s.value("failing_since", json()))) + "; next try " +
           htmlEscape(timeText(s.value("next_poll", json()))) + " (the wait doubles up to the interval).</p>\n";
  }
  return out + "</section>\n";
}

std::string errorsSection(const ProviderRecord& p) {
  std::string out = "<section class=\"card\"><h2>Recent fetch errors</h2>\n<p class=\"note\">" + num(p.error_total) +
                    " error(s) since they were last reported to the provider (the UNS reports them at its next "
                    "session); the newest " + num(p.errors.size()) + " kept (qm.max_errors_kept):</p>\n"
                    "<table id=\"errors\"><tr><th>when</th><th title=\"the LCC error code (docs/protocol.md)\">code</th>"
                    "<th title=\"the site's HTTP status, when it answered\">HTTP</th><th>URL</th><th>why</th></tr>\n";
  for (auto it = p.errors.rbegin(); it != p.errors.rend(); ++it) {
    const FetchErrorEntry& e = *it;
    const int code = static_cast<int>(e.code);
    out += "<tr><td>" + htmlEscape(e.when == WallTime{} ? std::string("–") : formatRfc3339(e.when)) +
           "</td><td title=\"" + htmlEscape(std::string(errorCodeMessage(e.code))) + "\">" + std::to_string(code) +
           "</td><td>" + (e.http_status != 0 ? std::to_string(e.http_status) : std::string("–")) + "</td><td>" +
           htmlEscape(e.notice.key.url) + "</td><td>" + htmlEscape(e.message) + "</td></tr>\n";
  }
  if (p.errors.empty()) out += "<tr><td colspan=\"5\" class=\"none\">none</td></tr>\n";
  return out + "</table></section>\n";
}

}  // namespace

std::vector<ProviderRow> selectProviders(ProviderStore& store, const std::function<std::uint64_t(ProviderId)>& queued,
                                         const std::map<ProviderId, std::string>& sitemap_failing,
                                         std::size_t per_kind, std::uint64_t* total) {
  TopN backlog(per_kind), errors(per_kind);
  std::vector<ProviderRow> suspended, wanted, failing;
  std::uint64_t seen = 0;
  Status s = store.scan([&](const ProviderRecord& p) {
    ++seen;
    const ProviderRow row = rowOf(p, queued ? queued(p.id) : 0);
    backlog.offer(row.queued, row);
    errors.offer(row.errors, row);
    if (p.state == ProviderState::kSuspended && suspended.size() < per_kind) suspended.push_back(row);
    if (p.fullset_wanted && wanted.size() < per_kind) wanted.push_back(row);
    if (sitemap_failing.count(p.id) != 0 && failing.size() < per_kind) failing.push_back(row);
    return true;
  });
  (void)s;  // a store error shows in the providers summary (a problem of the page)
  if (total != nullptr) *total = seen;
  std::vector<ProviderRow> out;
  auto add = [&](std::vector<ProviderRow> rows, const char* why) {
    for (auto& r : rows) {
      auto it = std::find_if(out.begin(), out.end(), [&](const ProviderRow& o) { return o.id == r.id; });
      if (it == out.end()) it = out.insert(out.end(), std::move(r));
      it->why.push_back(why);
      if (auto f = sitemap_failing.find(it->id); f != sitemap_failing.end()) it->sitemap_error = f->second;
    }
  };
  add(backlog.take(), "largest backlog");
  add(errors.take(), "most errors");
  add(std::move(suspended), "suspended");
  add(std::move(wanted), "full set wanted");
  add(std::move(failing), "sitemap failing");
  return out;
}

std::string renderProviderTable(const StatusPageInput& in) {
  std::string out =
      "<section class=\"card wide\"><h2 title=\"At most " + std::to_string(in.listed_per_kind) +
      " per list (http.status_providers): the largest backlogs, the most errors, the suspended, those asked for a "
      "full set, those whose sitemap fails\">Providers to look at</h2>\n<table id=\"providers\"><tr>"
      "<th title=\"the provider's id and first prefix; the link opens its page\">provider</th>"
      "<th title=\"active: fetched; suspended: sessions refused, queue held; pending: registration not verified\">state</th>"
      "<th title=\"URLs waiting in the queue for a fetch (the backlog)\">queued</th>"
      "<th title=\"fetch errors since they were last reported to the provider\">errors</th>"
      "<th title=\"fetch results (stored, unchanged or failed) per minute over the last 5 to 10 minutes\">fetches/min</th>"
      "<th title=\"why the provider is in this table\">listed for</th></tr>\n";
  for (const ProviderRow& r : in.providers) {
    std::string why;
    for (const auto& w : r.why) why += (why.empty() ? "" : ", ") + w;
    if (!r.sitemap_error.empty()) why += ": " + r.sitemap_error;
    const std::string id = std::to_string(r.id);
    out += "<tr data-provider=\"" + id + "\"><td><a href=\"/provider/" + id + "\">#" + id + " " +
           htmlEscape(r.name) + "</a></td><td>" + htmlEscape(r.state) + "</td><td class=\"num\">" + num(r.queued) +
           "</td><td class=\"num\">" + num(r.errors) + "</td><td class=\"num\">" + rate(r.fetches.per_minute) +
           "</td><td>" + htmlEscape(why) + "</td></tr>\n";
  }
  if (in.providers.empty()) {
    out += "<tr><td colspan=\"6\" class=\"none\">none with a backlog, errors, a suspension, a full set wanted or a "
           "failing sitemap</td></tr>\n";
  }
  return out + "</table><p class=\"note\">" + std::to_string(in.providers.size()) + " of " +
         std::to_string(in.providers_total) + " providers; every one: <code>lcc provider list</code>.</p></section>\n";
}

std::string renderProviderPage(const std::string& machine_id, const ProviderRecord& p, std::uint64_t queued,
                               const ProviderFetchRate& fetches, const json& sitemap) {
  const std::string id = std::to_string(p.id);
  std::string prefixes;
  for (const auto& x : p.prefixes) prefixes += "<li><code>" + htmlEscape(x) + "</code></li>";
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>LCC " +
                    htmlEscape(machine_id) + " — provider " + id + "</title>\n<style>" +
                    std::string(statusPageStyle()) + "</style></head>\n<body>\n<header><h1>Provider " + id +
                    "</h1>\n<p><a class=\"back\" href=\"/\">← status of machine " + htmlEscape(machine_id) +
                    "</a></p></header>\n<main>\n<ul class=\"prefixes\">" + prefixes + "</ul>\n<div class=\"cards\">\n";
  std::string figs = fig(std::string(providerStateName(p.state)), "state", "active: fetched; suspended: sessions refused, queue held", "state") +
                     fig(std::to_string(p.priority), "priority", "higher is fetched first (-1000 to 1000)") +
                     fig(num(queued), "queued URLs", "URLs waiting in the queue for a fetch (the backlog)", "queued") +
                     fig(rate(fetches.per_minute), "fetches per minute",
                         "fetch results (stored, unchanged or failed) per minute over the last 5 to 10 minutes", "rate") +
                     fig(num(fetches.fetched), "fetched since start", "results stored or unchanged since lccd started") +
                     fig(num(fetches.failed), "failed since start", "results with an error code since lccd started") +
                     fig(num(p.error_total), "errors to report", "fetch errors not yet reported to the provider", "errors") +
                     fig(num(p.used_files), "files kept", "content files stored for it (quota_files: 0 is no limit)") +
                     fig(p.fullset_wanted ? "yes" : "no", "full set wanted", "the provider is asked to send a full set");
  out += "<section class=\"card\"><h2>Figures</h2><div class=\"figs\">\n" + figs + "</div></section>\n</div>\n";
  if (!p.state_reason.empty()) out += "<p class=\"bad\">Why suspended: " + htmlEscape(p.state_reason) + "</p>\n";
  out += "<div class=\"tables\">\n" + sitemapSection(p, sitemap) + "</div>\n" + errorsSection(p);
  out += "<p class=\"note\">Change it: <code>lcc provider set " + id + " ...</code>; everything: <code>lcc provider show " +
         id + "</code>.</p>\n</main>\n</body></html>\n";
  return out;
}

}  // namespace lcc::http
