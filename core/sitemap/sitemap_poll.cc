#include "sitemap/sitemap_poll.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>

#include "common/config/config.h"
#include "common/fetch_wait.h"
#include "lcc/support/time_util.h"
#include "lcc/support/url_norm.h"
#include "proto/cp_uns.h"
#include "sitemap/sitemap_state.h"
#include "sitemap/sitemap_walk.h"

namespace lcc::sitemap {
namespace {

// The state file's first line: "# lcc sitemap poll state: polled <unix ms> <sitemap URL>".
constexpr std::string_view kHeader = "lcc sitemap poll state: polled ";

// The polled time and sitemap URL of a state file's first line; false when it has none.
bool parseHeader(std::string_view text, WallTime* polled, std::string* sitemap) {
  const std::string_view line = text.substr(0, text.find('\n'));
  if (line.substr(0, 2) != "# " || line.substr(2, kHeader.size()) != kHeader) return false;
  const std::string_view rest = line.substr(2 + kHeader.size());
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos) return false;
  std::int64_t ms = 0;
  for (char c : rest.substr(0, space)) {
    if (c < '0' || c > '9' || ms > (INT64_MAX - 9) / 10) return false;
    ms = ms * 10 + (c - '0');
  }
  *polled = fromUnixMillis(ms);
  *sitemap = std::string(rest.substr(space + 1));
  return true;
}

SitemapWalkOptions walkOptions(std::uint64_t max_pages) {
  SitemapWalkOptions o;
  o.max_pages = max_pages;
  return o;
}

}  // namespace

struct SitemapPoller::Wake {
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;
  bool stopping = false;
  TimerId timer = 0;
};

SitemapPoller::SitemapPoller(SitemapPollOptions options, SitemapPollDeps deps)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      wake_(std::make_shared<Wake>()),
      polls_(deps_.metrics->counter("lcc_sitemap_polls_total", "provider sitemaps read (sitemap polling)")),
      failures_(deps_.metrics->counter("lcc_sitemap_poll_failures_total",
                                       "sitemap polls that failed (a sitemap unreadable, a set refused)")),
      sent_(deps_.metrics->counter("lcc_sitemap_urls_sent_total", "changed and deleted pages sent by sitemap polls")),
      skipped_(deps_.metrics->counter("lcc_sitemap_urls_skipped_total",
                                      "listed sitemaps and pages skipped: outside the provider's prefixes, or not http(s)")),
      refused_(deps_.metrics->counter("lcc_sitemap_urls_refused_total",
                                      "new or changed sitemap pages refused as a CP's URL (203: type not accepted, ...)")) {}

SitemapPoller::~SitemapPoller() { stop(); }

Status SitemapPoller::start() {
  LCC_RETURN_IF_ERROR(deps_.env->createDirs(options_.state_dir, DirOptions{.private_dir = true}));
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void SitemapPoller::stop() {
  TimerId timer = 0;
  {
    std::lock_guard<std::mutex> lock(wake_->mu);
    // Once only: the destructor may run after the node's fetcher is gone.
    if (wake_->stopping) return;
    wake_->stopping = true;
    timer = std::exchange(wake_->timer, 0);
    wake_->cv.notify_all();
  }
  if (timer != 0) deps_.clock->cancel(timer);
  if (!thread_.joinable()) return;  // never started: no fetch of ours in flight
  if (deps_.cancel_fetch) deps_.cancel_fetch();
  thread_.join();
}

void SitemapPoller::run() {
  pthread_setname_np(pthread_self(), "lcc-sitemap");
  const std::shared_ptr<Wake> wake = wake_;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(wake->mu);
      if (wake->stopping) return;
      wake->woken = false;  // a pollSoon() from now on wakes the wait below
    }
    pollDue();
    TimerId timer = 0;
    bool stopping = false;
    {
      std::unique_lock<std::mutex> lock(wake->mu);
      if (!wake->woken && !wake->stopping) {
        wake->timer = deps_.clock->schedule(nextWake(), [wake] {
          std::lock_guard<std::mutex> l(wake->mu);
          wake->woken = true;
          wake->cv.notify_all();
        });
        wake->cv.wait(lock, [&] { return wake->woken || wake->stopping; });
      }
      timer = std::exchange(wake->timer, 0);
      stopping = wake->stopping;
    }
    if (timer != 0) deps_.clock->cancel(timer);  // woken early: the timer is not needed
    if (stopping) return;
  }
}

void SitemapPoller::pollSoon(ProviderId pid) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    track(pid).soon = true;
  }
  std::lock_guard<std::mutex> lock(wake_->mu);
  wake_->woken = true;
  wake_->cv.notify_all();
}

Millis SitemapPoller::nextWake() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (earliest_retry_ == WallTime{}) return options_.check_interval;
  const auto until = std::chrono::duration_cast<Millis>(earliest_retry_ - deps_.clock->now());
  return std::clamp(until, Millis(100), options_.check_interval);
}

std::string SitemapPoller::statePath(ProviderId pid) const {
  return options_.state_dir + "/" + std::to_string(pid) + ".state";
}

std::string SitemapPoller::failedPath(ProviderId pid) const {
  return options_.state_dir + "/" + std::to_string(pid) + ".failed";
}

SitemapPoller::Track& SitemapPoller::track(ProviderId pid) {
  Track& t = tracks_[pid];
  if (t.loaded) return t;
  t.loaded = true;
  loadFailure(pid, t.state);
  if (deps_.env->exists(statePath(pid))) {
    auto text = deps_.env->readFile(statePath(pid));
    if (!text.isOk() || !parseHeader(text.value(), &t.last, &t.url)) {
      spdlog::warn("sitemap: provider {}: {} has no poll time; polling now", pid, statePath(pid));
    }
    t.state.last_success = t.last;
    if (t.state.sitemap.empty()) t.state.sitemap = t.url;
  }
  if (t.state.failures > 0) {  // the back-off goes on from the last failed attempt
    t.last = t.state.last_attempt;
    t.url = t.state.sitemap;
  }
  return t;
}

void SitemapPoller::pollDue() {
  std::vector<ProviderRecord> candidates;
  Status s = deps_.providers->scan([&](const ProviderRecord& p) {
    if (p.state == ProviderState::kActive && !p.sitemap_url.empty()) candidates.push_back(p);
    return true;
  });
  if (!s.isOk()) {
    spdlog::warn("sitemap: reading the providers: {}", s.toString());
    return;
  }
  forgetOthers(candidates);
  for (const auto& p : candidates) {
    {
      std::lock_guard<std::mutex> lock(wake_->mu);
      if (wake_->stopping) return;
    }
    const WallTime now = deps_.clock->now();
    const Millis interval = p.sitemap_interval.count() > 0 ? p.sitemap_interval : options_.default_interval;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Track& t = track(p.id);
      // Failing: the back-off's time; else an interval after the last attempt.
      const WallTime due = t.state.failures > 0 ? t.state.next_poll : t.last + interval;
      if (!t.soon && t.url == p.sitemap_url && t.last != WallTime{} && now < due) continue;
      t.soon = false;
      t.last = now;
      t.url = p.sitemap_url;
    }
    (void)pollProvider(p);
  }
  std::lock_guard<std::mutex> lock(mu_);
  earliest_retry_ = WallTime{};
  for (const auto& p : candidates) {
    const Track& t = tracks_[p.id];
    if (t.state.failures > 0 && (earliest_retry_ == WallTime{} || t.state.next_poll < earliest_retry_)) {
      earliest_retry_ = t.state.next_poll;
    }
  }
}

Result<SitemapPollReport> SitemapPoller::pollProvider(const ProviderRecord& p) {
  const WallTime started = deps_.clock->now();
  int http_status = 0;
  Result<SitemapPollReport> r = pollOnce(p, &http_status);
  recordOutcome(p, started, r, http_status);
  return r;
}

Result<SitemapPollReport> SitemapPoller::pollOnce(const ProviderRecord& p, int* http_status) {
  polls_.inc();
  auto failed = [&](const std::string& why) {
    failures_.inc();
    spdlog::warn("sitemap: provider {}: {} (tried again with back-off)", p.id, why);
    return Status::busy(why);
  };
  const std::vector<std::string> prefixes = url::normalPrefixes(p.prefixes, 2048);
  if (!url::underAnyPrefix(p.sitemap_url, prefixes)) return failed(p.sitemap_url + ": not under the provider's prefixes; not read");
  SitemapWalk walk(
      [&](const std::string& source, bool, SitemapReader& reader) {
        int status = 0;
        std::string why = deps_.fetch(source, prefixes, reader, &status);
        if (!why.empty()) *http_status = status;
        return why;
      },
      walkOptions(options_.max_pages));
  walk.setAdmit([&](const std::string& u) { return url::underAnyPrefix(u, prefixes); });
  if (!walk.read(p.sitemap_url)) return failed(walk.error());
  SitemapPollReport report;
  report.pages = walk.pages().size();
  report.skipped = walk.refused() + walk.invalid();
  if (report.skipped > 0) {
    skipped_.inc(report.skipped);
    spdlog::warn("sitemap: provider {}: {} listed URLs skipped (outside its prefixes, or not http(s) URLs), first: {}",
                 p.id, report.skipped, walk.skippedSamples().empty() ? "-" : walk.skippedSamples().front());
  }
  SitemapPages before;
  bool have_before = deps_.env->exists(statePath(p.id));
  if (have_before) {
    auto text = deps_.env->readFile(statePath(p.id));
    std::string err = text.isOk() ? "" : text.status().message();
    if (!text.isOk() || !parseSitemapState(text.value(), before, &err)) {
      spdlog::warn("sitemap: provider {}: {}: {}; read as a first poll (nothing deleted)", p.id, statePath(p.id), err);
      before.clear();
      have_before = false;
    }
  }
  std::vector<std::string> lines;
  std::vector<FetchErrorEntry> refused;
  proto::UrlRules rules;
  rules.accept_mime = options_.accept_mime;
  rules.prefixes = prefixes;
  rules.max_url_length = options_.max_url_length;
  for (const auto& c : diffSitemaps(before, have_before, walk.pages())) {
    std::vector<std::pair<std::string, std::string>> attrs = {{"c", c.url}, {"m", mime_.forUrl(c.url)}};
    if (!c.deleted) {  // a delete goes out whatever its type: what was stored before goes
      proto::UrlVerdict v = proto::validateUrl(attrs, "", p.id, rules);
      if (v.code != ErrorCode::kNone) {
        FetchErrorEntry& e = refused.emplace_back();
        e.notice.key = {p.id, c.url, attrs[1].second};
        e.notice.op = UrlOp::kCheck;
        e.code = v.code;
        e.message = v.message + " (" + attrs[1].second + ", from the sitemap " + p.sitemap_url + ")";
        e.when = deps_.clock->now();
        continue;
      }
    }
    if (!c.deleted && c.lastmod) attrs.emplace_back("mt", formatRfc3339(*c.lastmod));
    attrs.emplace_back("op", c.deleted ? "delete" : "check");  // check: a 404/410 removes the page
    ++(c.deleted ? report.deleted : report.changed);
    lines.push_back(proto::encodeUrlElement(attrs));
  }
  if (Status s = submitChanges(p, lines, report); !s.isOk()) return failed(s.message());
  const std::string header = std::string(kHeader) + std::to_string(toUnixMillis(deps_.clock->now())) + " " + p.sitemap_url;
  if (Status s = deps_.env->writeFileAtomic(statePath(p.id), formatSitemapState(walk.pages(), header)); !s.isOk()) {
    return failed("the changes were sent, but the state could not be written (they are sent again): " + s.message());
  }
  sent_.inc(lines.size());
  report.refused = refused.size();
  recordRefusals(p.id, refused);
  spdlog::info("sitemap: provider {}: {} pages, {} changed, {} deleted, {} skipped, {} refused, in {} set(s)", p.id,
               report.pages, report.changed, report.deleted, report.skipped, report.refused, report.sets);
  return report;
}

void SitemapPoller::recordRefusals(ProviderId pid, const std::vector<FetchErrorEntry>& refused) {
  if (refused.empty()) return;
  refused_.inc(refused.size());
  spdlog::warn("sitemap: provider {}: {} new or changed pages refused, first: {}: {} {}", pid, refused.size(),
               refused.front().notice.key.url, static_cast<int>(refused.front().code), refused.front().message);
  Status s = deps_.providers->modify(
      pid,
      [&](ProviderRecord& r) {
        r.error_total += refused.size();
        for (const auto& e : refused) {
          if (r.errors.size() >= options_.max_errors_kept) break;
          r.errors.push_back(e);
        }
        return Status::ok();
      },
      WriteOptions{.durable = false});
  if (!s.isOk() && !s.isNotFound()) spdlog::warn("sitemap: provider {}: recording the refused pages: {}", pid, s.toString());
}

Status SitemapPoller::submitChanges(const ProviderRecord& p, const std::vector<std::string>& lines,
                                    SitemapPollReport& report) {
  const std::size_t per_set = static_cast<std::size_t>(std::max<std::uint64_t>(1, options_.max_set_urls));
  for (std::size_t from = 0; from < lines.size(); from += per_set) {
    const std::size_t to = std::min(lines.size(), from + per_set);
    std::string xml;
    for (std::size_t i = from; i < to; ++i) xml += lines[i];
    if (Status s = deps_.submit(p.id, to - from, std::move(xml)); !s.isOk()) {
      return Status::busy("a set was refused: " + s.message());
    }
    ++report.sets;
  }
  return Status::ok();
}

SitemapPollOptions SitemapPollOptions::fromConfig(const Config& cfg, const std::string& data_dir) {
  SitemapPollOptions o;
  o.default_interval = Millis(cfg.getInt("sitemap.default_interval"));
  o.check_interval = Millis(cfg.getInt("sitemap.check_interval"));
  o.retry_min = Millis(cfg.getInt("sitemap.retry_min"));
  o.fetch_timeout = Millis(cfg.getInt("sitemap.fetch_timeout"));
  o.max_pages = static_cast<std::uint64_t>(cfg.getInt("sitemap.max_pages"));
  o.max_set_urls = static_cast<std::uint64_t>(cfg.getInt("uns.max_set_urls"));
  o.accept_mime = cfg.getList("accept_mime");
  o.max_url_length = static_cast<std::size_t>(cfg.getInt("uns.max_url_length"));
  o.max_errors_kept = static_cast<std::size_t>(cfg.getInt("qm.max_errors_kept"));
  o.state_dir = data_dir + "/sitemap";
  return o;
}

std::unique_ptr<SitemapPoller> makeSitemapPoller(NodeContext& node, SubmitSet submit) {
  if (node.fetcher == nullptr) return nullptr;
  SitemapPollOptions o = SitemapPollOptions::fromConfig(*node.config, node.data_dir);
  const Millis timeout = o.fetch_timeout;
  struct Fetching {
    std::atomic<std::uint64_t> next_id{(7ull << 60) + 1};  // apart from robots, the RS and IndexNow
    std::atomic<std::uint64_t> current{0};
    std::atomic<bool> stopping{false};
  };
  auto fetching = std::make_shared<Fetching>();
  SitemapPollDeps deps;
  deps.providers = node.providers;
  deps.clock = node.clock;
  deps.env = node.env;
  deps.metrics = node.metrics;
  deps.fetch = [&node, fetching, dir = o.state_dir, timeout](const std::string& url,
                                                             const std::vector<std::string>& prefixes,
                                                             SitemapReader& reader, int* http_status) -> std::string {
    FetchRequest req;
    req.id = fetching->next_id++;
    req.url = url;
    req.path = dir + "/fetch-" + std::to_string(req.id) + ".tmp";
    req.max_size = SitemapLimits{}.max_bytes;  // compressed or not, never more than 50 MB
    req.redirects = RedirectPolicy::kPrefix;
    req.redirect_prefixes = prefixes;
    fetching->current = req.id;
    if (fetching->stopping) return "the LCC is stopping";
    auto got = fetchAndWait(*node.fetcher, *node.env, req, timeout);
    if (!got.isOk()) return got.status().message();
    const FetchResult& r = got.value().result;
    if (!r.ok()) {
      *http_status = r.http_status;
      return fetchFailureText(static_cast<int>(r.code), r.http_status, r.message);
    }
    if (!reader.feed(got.value().body)) return reader.error();
    return reader.finish() ? "" : reader.error();
  };
  deps.cancel_fetch = [&node, fetching] {
    fetching->stopping = true;
    node.fetcher->cancel(fetching->current);
  };
  deps.submit = std::move(submit);
  return std::make_unique<SitemapPoller>(std::move(o), std::move(deps));
}

}  // namespace lcc::sitemap
