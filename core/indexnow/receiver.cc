#include "indexnow/receiver.h"

#include <spdlog/spdlog.h>

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

  ProviderId owner(const std::string& url, bool* inactive_owner) const {
    for (const auto& [len, entry] : by_length) {
      if (url::underPrefix(url, entry.first)) return entry.second;
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
      throttled_(deps_.metrics->counter("lcc_indexnow_throttled_total",
                                        "IndexNow requests answered 429 (indexnow.requests_per_minute)")),
      key_fetches_(deps_.metrics->counter("lcc_indexnow_key_fetches_total", "IndexNow key files fetched")),
      registered_(deps_.metrics->counter("lcc_indexnow_providers_registered_total",
                                         "providers made for verified sites (indexnow.register: auto)")) {}

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
  if (std::string why = checkKey(s); !why.empty()) {
    refused_.inc();
    return answer(403, why);
  }
  return accept(s);
}

std::string Receiver::checkKey(const Submission& s) {
  const std::string id = s.key_url + "\n" + s.key;
  const MonoTime now = deps_.clock->monoNow();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = keys_.find(id); it != keys_.end() && now < it->second.until) return it->second.why;
  }
  key_fetches_.inc();
  auto body = deps_.fetch_key(s.key_url, s.key_scope);
  std::string why;
  if (!body.isOk()) why = "the key file " + s.key_url + " could not be read: " + body.status().message();
  else if (http::trimSpace(body.value()) != s.key) why = "the key file " + s.key_url + " does not hold this key";
  std::lock_guard<std::mutex> lock(mu_);
  if (keys_.size() >= options_.key_cache_entries) {
    for (auto it = keys_.begin(); it != keys_.end();) it = now >= it->second.until ? keys_.erase(it) : std::next(it);
    if (keys_.size() >= options_.key_cache_entries) keys_.erase(keys_.begin());
  }
  keys_[id] = KeyEntry{why, now + (why.empty() ? options_.key_ttl : options_.key_retry)};
  return why;
}

http::Response Receiver::accept(const Submission& s) {
  auto owners = loadOwners(*deps_.providers);
  if (!owners.isOk()) {
    spdlog::warn("indexnow: reading the providers: {}", owners.status().toString());
    return answer(500, "the provider database could not be read");
  }
  std::map<ProviderId, std::pair<std::uint64_t, std::string>> sets;  // pid -> count, <url/> lines
  for (const auto& u : s.urls) {
    bool inactive = false;
    ProviderId pid = owners.value().owner(u, &inactive);
    if (pid == 0 && !inactive && options_.auto_register) {
      std::string why;
      pid = registerSite(s, &why);
      if (pid == 0) {
        refused_.inc();
        return answer(403, "URL " + u + " belongs to no provider, and none can be made: " + why);
      }
      owners.value().by_length.emplace(s.key_scope.size(), std::make_pair(s.key_scope, pid));
    }
    if (pid == 0) {
      refused_.inc();
      return answer(403, inactive ? "URL " + u + " belongs to a provider that is not active"
                                  : "URL " + u + " belongs to no provider of this LCC (indexnow.register is off)");
    }
    auto parts = url::splitNormalUrl(u);
    auto& [count, xml] = sets[pid];
    // op=check: IndexNow's "added, updated or deleted" is settled by the fetch (a 404
    // or 410 removes the URL, qm/result_policy.h).
    xml += proto::encodeUrlElement(
        {{"c", u}, {"m", mime_.forUrlPath(parts.isOk() ? parts.value().path : "/")}, {"op", "check"}});
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
  urls_.inc(s.urls.size());
  return answer(202, "accepted " + std::to_string(s.urls.size()) + " URLs");
}

ProviderId Receiver::registerSite(const Submission& s, std::string* why) {
  std::lock_guard<std::mutex> lock(register_mu_);
  ProviderId found = 0;
  Status scanned = deps_.providers->scan([&](const ProviderRecord& p) {
    for (const auto& prefix : p.prefixes) {
      if (prefix == s.key_scope && p.state == ProviderState::kActive) found = p.id;  // made meanwhile
      else if (url::underPrefix(prefix, s.key_scope) || url::underPrefix(s.key_scope, prefix)) {
        *why = "provider " + std::to_string(p.id) + " has the overlapping prefix " + prefix;
        return false;
      }
    }
    return true;
  });
  if (!scanned.isOk()) *why = "the provider database could not be read";
  if (!why->empty() || found != 0) return why->empty() ? found : 0;
  ProviderRecord rec;
  rec.state = ProviderState::kActive;
  rec.prefixes = {s.key_scope};
  rec.priority = options_.default_priority;
  rec.bandwidth = options_.default_bandwidth;
  rec.quota_files = options_.default_quota_files;
  rec.quota_bytes = options_.default_quota_bytes;
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
