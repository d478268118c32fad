// sitemap_poll_status.cc — what the poller remembers of each provider's polls: the
// back-off after a failure, the failure kept in <state_dir>/<pid>.failed across a
// restart, and the state shown by GET /status (uns.sitemap), the status page and
// `lcc provider show` (sitemap_poll.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "lcc/error_codes.h"
#include "lcc/support/time_util.h"
#include "sitemap/sitemap_poll.h"

namespace lcc::sitemap {
namespace {

using nlohmann::json;

json timeOrNull(WallTime t) { return t == WallTime{} ? json(nullptr) : json(formatRfc3339(t)); }

std::int64_t msOf(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

WallTime timeOf(const json& j, const char* key) {
  const std::int64_t ms = msOf(j, key);
  return ms > 0 ? fromUnixMillis(ms) : WallTime{};
}

// retry_min doubled at each failure after the first, never past the interval.
Millis backoff(Millis retry_min, std::uint64_t failures, Millis interval) {
  Millis wait = std::min(retry_min, interval);
  for (std::uint64_t i = 1; i < failures && wait < interval; ++i) wait = std::min(wait * 2, interval);
  return wait;
}

}  // namespace

std::string fetchFailureText(int code, int http_status, const std::string& message) {
  if (http_status != 0) {
    std::string t = "HTTP " + std::to_string(http_status);
    if (!message.empty() && message.find(t) == std::string::npos) t += " (" + message + ")";
    return t;
  }
  std::string t = std::string(errorCodeMessage(static_cast<ErrorCode>(code))) + " (" + std::to_string(code) + ")";
  return message.empty() ? t : t + ": " + message;
}

json sitemapPollStateJson(const SitemapPollState& s) {
  json last = nullptr;
  if (s.last_report) {
    const SitemapPollReport& r = *s.last_report;
    last = {{"pages", r.pages},     {"changed", r.changed}, {"deleted", r.deleted},
            {"skipped", r.skipped}, {"refused", r.refused}, {"sets", r.sets}};
  }
  return json{{"sitemap", s.sitemap},
              {"ok", s.failures == 0},
              {"failures", s.failures},
              {"failing_since", timeOrNull(s.failing_since)},
              {"error", s.failures == 0 ? json(nullptr) : json(s.error)},
              {"http_status", s.http_status == 0 ? json(nullptr) : json(s.http_status)},
              {"last_attempt", timeOrNull(s.last_attempt)},
              {"last_success", timeOrNull(s.last_success)},
              {"next_poll", timeOrNull(s.next_poll)},
              {"last", last}};
}

void SitemapPoller::recordOutcome(const ProviderRecord& p, WallTime started, const Result<SitemapPollReport>& r,
                                  int http_status) {
  const Millis interval = p.sitemap_interval.count() > 0 ? p.sitemap_interval : options_.default_interval;
  std::string kept;  // the .failed file's text; empty: none
  {
    std::lock_guard<std::mutex> lock(mu_);
    Track& t = track(p.id);
    SitemapPollState& s = t.state;
    if (s.sitemap != p.sitemap_url) s.failures = 0;  // another sitemap: its own back-off
    s.sitemap = p.sitemap_url;
    s.last_attempt = started;
    t.last = started;
    t.url = p.sitemap_url;
    if (r.isOk()) {
      s.failures = 0;
      s.failing_since = WallTime{};
      s.error.clear();
      s.http_status = 0;
      s.last_success = started;
      s.last_report = r.value();
      s.next_poll = started + interval;
    } else {
      if (s.failures == 0) s.failing_since = started;
      ++s.failures;
      s.error = boundedError(r.status().message());
      s.http_status = http_status;
      const Millis wait = backoff(options_.retry_min, s.failures, interval);
      s.next_poll = started + wait;
      spdlog::info("sitemap: provider {}: failure {} in a row; next try in {} s", p.id, s.failures, wait.count() / 1000);
      kept = json{{"sitemap", s.sitemap},
                  {"failures", s.failures},
                  {"failing_since_ms", toUnixMillis(s.failing_since)},
                  {"last_attempt_ms", toUnixMillis(s.last_attempt)},
                  {"next_poll_ms", toUnixMillis(s.next_poll)},
                  {"error", s.error},
                  {"http_status", s.http_status}}
                 .dump() +
             "\n";
    }
  }
  // Outside the lock: status readers never wait for the disk.
  Status w = Status::ok();
  if (!kept.empty()) {
    w = deps_.env->writeFileAtomic(failedPath(p.id), kept);
  } else if (deps_.env->exists(failedPath(p.id))) {
    w = deps_.env->removeFile(failedPath(p.id));
  }
  if (!w.isOk()) spdlog::warn("sitemap: provider {}: {}: {}", p.id, failedPath(p.id), w.toString());
}

void SitemapPoller::loadFailure(ProviderId pid, SitemapPollState& s) {
  if (!deps_.env->exists(failedPath(pid))) return;
  auto text = deps_.env->readFile(failedPath(pid));
  const json j = text.isOk() ? json::parse(text.value(), nullptr, false) : json();
  if (!j.is_object() || msOf(j, "failures") <= 0 || !j.value("sitemap", json()).is_string() ||
      !j.value("error", json()).is_string()) {
    spdlog::warn("sitemap: provider {}: {} is not a kept failure; ignored", pid, failedPath(pid));
    return;
  }
  s.sitemap = j["sitemap"].get<std::string>();
  s.failures = static_cast<std::uint64_t>(msOf(j, "failures"));
  s.failing_since = timeOf(j, "failing_since_ms");
  s.last_attempt = timeOf(j, "last_attempt_ms");
  s.next_poll = timeOf(j, "next_poll_ms");
  s.error = j["error"].get<std::string>();
  s.http_status = static_cast<int>(std::clamp<std::int64_t>(msOf(j, "http_status"), 0, 999));
}

void SitemapPoller::forgetOthers(const std::vector<ProviderRecord>& candidates) {
  std::set<ProviderId> polled;
  for (const auto& p : candidates) polled.insert(p.id);
  std::vector<ProviderId> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = tracks_.begin(); it != tracks_.end();) {
      if (polled.count(it->first) != 0 || it->second.soon) {
        ++it;
        continue;
      }
      if (it->second.state.failures > 0) gone.push_back(it->first);
      it = tracks_.erase(it);
    }
  }
  // Suspended, removed, or no sitemap any more: its failure is no longer a problem.
  for (ProviderId pid : gone) {
    if (deps_.env->exists(failedPath(pid))) (void)deps_.env->removeFile(failedPath(pid));
  }
}

std::optional<SitemapPollState> SitemapPoller::providerStatus(ProviderId pid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracks_.find(pid);
  if (it == tracks_.end() || !it->second.loaded) return std::nullopt;
  const SitemapPollState& s = it->second.state;
  if (s.last_attempt == WallTime{} && s.last_success == WallTime{} && s.failures == 0) return std::nullopt;
  return s;
}

void SitemapPoller::status(json& out, std::size_t max_listed) {
  std::vector<std::pair<ProviderId, SitemapPollState>> failing;
  std::size_t polled = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [pid, t] : tracks_) {
      if (t.state.last_attempt != WallTime{} || t.state.last_success != WallTime{}) ++polled;
      if (t.state.failures > 0) failing.emplace_back(pid, t.state);
    }
  }
  // The longest failing first (then by id): a table that does not reorder every poll.
  std::sort(failing.begin(), failing.end(), [](const auto& a, const auto& b) {
    return a.second.failing_since != b.second.failing_since ? a.second.failing_since < b.second.failing_since
                                                            : a.first < b.first;
  });
  json list = json::array();
  for (std::size_t i = 0; i < failing.size() && i < max_listed; ++i) {
    json e = sitemapPollStateJson(failing[i].second);
    e["id"] = failing[i].first;
    list.push_back(std::move(e));
  }
  out["providers"] = polled;
  out["failing"] = failing.size();
  out["failures"] = std::move(list);
}

}  // namespace lcc::sitemap
