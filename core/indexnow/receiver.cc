#include "indexnow/receiver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "lcc/support/url_norm.h"
#include "http/url_codec.h"
#include "proto/cp_uns.h"

namespace lcc::indexnow {
namespace {

http::Response answer(int status, const std::string& message) {
  return http::Response::text(status, message + "\n");
}

// Active providers' prefixes, longest first: the first that covers a URL owns it.
struct Owners {
  std::multimap<std::size_t, std::pair<std::string, ProviderId>, std::greater<>> by_length;
  std::vector<std::pair<std::string, ProviderId>> inactive;  // prefixes of providers not active

  ProviderId owner(const std::string& url, bool* inactive_owner, std::string* prefix) const {
    for (const auto& [len, entry] : by_length) {
      if (url::underPrefix(url, entry.first)) {
        *prefix = entry.first;
        return entry.second;
      }
    }
    for (const auto& [prefix, pid] : inactive) {
      if (url::underPrefix(url, prefix)) *inactive_owner = true;
    }
    return 0;
  }
};

Result<Owners> loadOwners(ProviderStore& providers) {
  Owners o;
  Status s = providers.scan([&](const ProviderRecord& p) {
    for (const auto& prefix : p.prefixes) {
      if (p.state == ProviderState::kActive) o.by_length.emplace(prefix.size(), std::make_pair(prefix, p.id));
      else o.inactive.emplace_back(prefix, p.id);
    }
    return true;
  });
  if (!s.isOk()) return s;
  return o;
}

}  // namespace

Receiver::Receiver(ReceiverOptions options, ReceiverDeps deps)
    : options_(options),
      deps_(std::move(deps)),
      per_host_(AddressLimiterOptions{.max_events = options.requests_per_minute,
                                      .window = Millis(60000),
                                      .cooldown = Millis(0),
                                      .max_addresses = 10000},
                deps_.clock),
      submissions_(deps_.metrics->counter("lcc_indexnow_submissions_total", "IndexNow URL lists accepted (durable)")),
      urls_(deps_.metrics->counter("lcc_indexnow_urls_total", "URLs of accepted IndexNow lists")),
      refused_(deps_.metrics->counter("lcc_indexnow_refused_total", "IndexNow requests answered 400, 403 or 422")),
      urls_refused_(deps_.metrics->counter("lcc_indexnow_urls_refused_total",
                                           "URLs of IndexNow requests refused one by one (203: type not accepted, ...)")),
      throttled_(deps_.metrics->counter("lcc_indexnow_throttled_total",
                                        "IndexNow requests answered 429 (indexnow.requests_per_minute)")),
      key_fetches_(deps_.metrics->counter("lcc_indexnow_key_fetches_total", "IndexNow key files fetched")),
      registered_(deps_.metrics->counter("lcc_indexnow_providers_registered_total",
                                         "providers made for verified sites (indexnow.register: auto)")) {}

// What one request will do: the sets to submit and the URLs refused, with why.
struct Receiver::Plan {
  struct Url {
    ProviderId pid = 0;  // 0: the provider indexnow.register: auto makes for the key's folder
    std::string element;  // the <url/> for the set
  };
  std::vector<Url> urls;
  std::vector<std::string> refused;  // "CODE URL: why", in the request's order
  bool needs_provider = false;
};

http::Response Receiver::handle(const http::Request& req) {
  const Parsed parsed = req.method == "POST" ? parsePost(req.body) : parseGet(req);
  if (const auto* no = std::get_if<Refusal>(&parsed)) {
    refused_.inc();
    return answer(no->status, no->message);
  }
  const Submission& s = std::get<Submission>(parsed);
  const std::string host = url::originOf(s.urls.front());
  if (auto d = per_host_.check(host); !d.allowed) {
    throttled_.inc();
    http::Response r = answer(429, "too many IndexNow requests for " + host);
    r.headers.emplace_back("Retry-After", std::to_string((d.retry_after.count() + 999) / 1000));
    return r;
  }
  per_host_.record(host);
  Plan plan;
  if (auto no = planUrls(s, plan)) return *no;
  if (plan.urls.empty()) {
    refused_.inc();
    urls_refused_.inc(plan.refused.size());
    return answer(422, "no URL accepted; refused " + std::to_string(plan.refused.size()) + ":\n" + refusedLines(plan));
  }
  if (!keyHolds(s)) {
    refused_.inc();
    // One answer whatever the fetch saw (no answer, an error status, another key): the
    // LCC must not tell an anonymous client what lies at an address (the log says).
    return answer(403, "the key could not be verified at " + s.key_url);
  }
  return submit(s, plan);
}

std::optional<http::Response> Receiver::planUrls(const Submission& s, Plan& out) {
  auto owners = loadOwners(*deps_.providers);
  if (!owners.isOk()) {
    spdlog::warn("indexnow: reading the providers: {}", owners.status().toString());
    return answer(500, "the provider database could not be read");
  }
  proto::UrlRules rules;
  rules.accept_mime = options_.accept_mime;
  rules.max_url_length = options_.max_url_length;
  for (const auto& u : s.urls) {
    bool inactive = false;
    std::string prefix;
    const ProviderId pid = owners.value().owner(u, &inactive, &prefix);
    if (pid == 0 && (inactive || !options_.auto_register)) {
      refused_.inc();
      return answer(403, inactive ? "URL " + u + " belongs to a provider that is not active"
                                  : "URL " + u + " belongs to no provider of this LCC (indexnow.register is off)");
    }
    rules.prefixes = {pid == 0 ? s.key_scope : prefix};
    const std::string mime = mime_.forUrl(u);
    const proto::UrlVerdict v = proto::validateUrl({{"c", u}, {"m", mime}}, "", pid, rules);
    if (v.code != ErrorCode::kNone) {
      out.refused.push_back(std::to_string(static_cast<int>(v.code)) + " " + u + ": " + v.message + " (" + mime + ")");
      continue;
    }
    // op=check: IndexNow's "added, updated or deleted" is settled by the fetch (a 404
    // or 410 removes the URL, qm/result_policy.h).
    out.urls.push_back({pid, proto::encodeUrlElement({{"c", v.notice.key.url}, {"m", mime}, {"op", "check"}})});
    out.needs_provider = out.needs_provider || pid == 0;
  }
  if (out.needs_provider && !out.urls.empty()) {
    ProviderId found = 0;
    if (std::string why = overlapWith(s.key_scope, &found); !why.empty()) {
      refused_.inc();
      return answer(403, "the URLs belong to no provider, and none can be made: " + why);
    }
  }
  return std::nullopt;
}

bool Receiver::keyHolds(const Submission& s) {
  const std::string id = s.key_url + "\n" + s.key;
  const MonoTime now = deps_.clock->monoNow();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = keys_.find(id); it != keys_.end() && now < it->second.until) return it->second.holds;
  }
  key_fetches_.inc();
  auto body = deps_.fetch_key(s.key_url, s.key_scope);
  const bool holds = body.isOk() && http::trimSpace(body.value()) == s.key;
  if (!holds) {
    spdlog::warn("indexnow: the key file {} {} (answered 403; not fetched again for {} s)", s.key_url,
                 body.isOk() ? "does not hold the key" : "could not be read: " + body.status().message(),
                 options_.key_retry.count() / 1000);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_.size() >= options_.key_cache_entries) {
    for (auto it = keys_.begin(); it != keys_.end();) it = now >= it->second.until ? keys_.erase(it) : std::next(it);
    if (keys_.size() >= options_.key_cache_entries) keys_.erase(keys_.begin());
  }
  keys_[id] = KeyEntry{holds, now + (holds ? options_.key_ttl : options_.key_retry)};
  return holds;
}

http::Response Receiver::submit(const Submission& s, Plan& plan) {
  ProviderId made = 0;
  if (plan.needs_provider) {
    std::string why;
    made = registerSite(s, &why);
    if (made == 0) {
      refused_.inc();
      return answer(403, "the URLs belong to no provider, and none can be made: " + why);
    }
  }
  std::map<ProviderId, std::pair<std::uint64_t, std::string>> sets;  // pid -> count, <url/> lines
  for (auto& u : plan.urls) {
    auto& [count, xml] = sets[u.pid == 0 ? made : u.pid];
    xml += u.element;
    ++count;
  }
  for (auto& [pid, set] : sets) {
    const Durable d = deps_.submit(pid, set.first, std::move(set.second));
    if (!d.accepted) {
      http::Response r = answer(503, "the URLs could not be made durable: " + d.why);
      r.headers.emplace_back("Retry-After", "60");
      return r;
    }
  }
  submissions_.inc();
  urls_.inc(plan.urls.size());
  if (plan.refused.empty()) return answer(202, "accepted " + std::to_string(plan.urls.size()) + " URLs");
  urls_refused_.inc(plan.refused.size());
  return answer(202, "accepted " + std::to_string(plan.urls.size()) + " of " + std::to_string(s.urls.size()) +
                         " URLs; refused " + std::to_string(plan.refused.size()) + ":\n" + refusedLines(plan));
}

std::string Receiver::refusedLines(const Plan& plan) const {
  std::string out;
  const std::size_t listed = std::min(plan.refused.size(), options_.max_listed_refusals);
  for (std::size_t i = 0; i < listed; ++i) out += plan.refused[i] + "\n";
  if (listed < plan.refused.size()) out += "and " + std::to_string(plan.refused.size() - listed) + " more\n";
  if (!out.empty()) out.pop_back();  // answer() ends the body
  return out;
}

std::string Receiver::overlapWith(const std::string& scope, ProviderId* found) {
  std::string why;
  Status scanned = deps_.providers->scan([&](const ProviderRecord& p) {
    for (const auto& prefix : p.prefixes) {
      if (prefix == scope && p.state == ProviderState::kActive) {
        *found = p.id;  // made meanwhile
      } else if (url::underPrefix(prefix, scope) || url::underPrefix(scope, prefix)) {
        why = "provider " + std::to_string(p.id) + " has the overlapping prefix " + prefix;
        return false;
      }
    }
    return true;
  });
  if (!scanned.isOk()) why = "the provider database could not be read";
  return why;
}

ProviderId Receiver::registerSite(const Submission& s, std::string* why) {
  std::lock_guard<std::mutex> lock(register_mu_);
  ProviderId found = 0;
  *why = overlapWith(s.key_scope, &found);
  if (!why->empty() || found != 0) return why->empty() ? found : 0;
  ProviderRecord rec;
  rec.state = ProviderState::kActive;
  rec.prefixes = {s.key_scope};
  options_.provider_defaults.applyTo(rec);
  rec.contact = "indexnow key file " + s.key_url;  // no password: CP sessions need one set by the administrator
  rec.created = deps_.clock->now();
  auto id = deps_.providers->create(rec);
  if (!id.isOk()) {
    *why = "the provider database could not be written";
    spdlog::warn("indexnow: registering {}: {}", s.key_scope, id.status().toString());
    return 0;
  }
  registered_.inc();
  spdlog::info("indexnow: provider {} made for {} (key file {})", id.value(), s.key_scope, s.key_url);
  return id.value();
}

void addRoutes(http::Router& router, std::shared_ptr<Receiver> receiver) {
  for (const char* path : {"/indexnow", "/IndexNow"}) {
    for (const char* method : {"GET", "POST"}) {
      router.addExact(method, path, [receiver](const http::Request& req) { return receiver->handle(req); });
    }
  }
}

}  // namespace lcc::indexnow
