// admin_api_lifecycle.cc — a provider's life after `add`: suspend, resume, set, remove
// (docs/protocol.md, admin API). The handlers change the PIDB only; the UNS reads the
// record at each session start, and the QM applies state, priority, bandwidth and
// removals at its next provider refresh (qm.provider_refresh, core/qm/README.md).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "http/admin_api.h"
#include "http/url_codec.h"
#include "lcc/provider_states.h"
#include "lcc/support/time_util.h"
#include "lcc/support/url_norm.h"

namespace lcc::http {
namespace {

using nlohmann::json;

Response lifecycleError(int status, const std::string& why) {
  return Response::json(status, json{{"error", why}}.dump() + "\n");
}

// What `set` asks for, checked before the record is touched.
struct ProviderChange {
  std::optional<std::int32_t> priority;
  std::optional<std::uint64_t> bandwidth, quota_files, quota_bytes;
  std::vector<std::string> add_prefixes, remove_prefixes;
  std::optional<std::string> password_hash;
  std::optional<std::string> sitemap_url;  // "": no sitemap any more
  std::optional<Millis> sitemap_interval;
};

constexpr Millis kMaxSitemapInterval{365ll * 24 * 3600 * 1000};

// sitemap=URL (empty: none) and sitemap_interval=DURATION (0: sitemap.default_interval).
std::optional<std::string> parseSitemap(const AdminContext& ctx, const Request& req, ProviderChange& c) {
  if (req.query.count("sitemap")) {
    const std::string v = req.param("sitemap");
    if (v.empty()) {
      c.sitemap_url = "";
    } else {
      auto n = url::normalizeUrl(v);
      if (!n.isOk()) return "sitemap " + v + ": " + n.status().message();
      c.sitemap_url = std::move(n).value();
    }
  }
  if (std::string v = req.param("sitemap_interval"); !v.empty()) {
    auto ms = parseDurationMs(v);
    if (!ms || (*ms != 0 && (Millis(*ms) < ctx.options.sitemap_min_interval || Millis(*ms) > kMaxSitemapInterval))) {
      return "sitemap_interval must be 0 (the default) or a duration from " +
             std::to_string(ctx.options.sitemap_min_interval.count() / 1000) + "s (sitemap.min_interval) to 365d (got " +
             v + ")";
    }
    c.sitemap_interval = Millis(*ms);
  }
  return std::nullopt;
}

// The sitemap must lie under one of the provider's prefixes (it is fetched confined to them).
bool sitemapCovered(const std::string& sitemap, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(), [&](const std::string& prefix) {
    auto n = url::normalizePrefix(prefix, 2048);
    return n.isOk() && url::underPrefix(sitemap, n.value());
  });
}

std::optional<std::string> parseNumbers(const Request& req, ProviderChange& c) {
  if (std::string v = req.param("priority"); !v.empty()) {
    bool neg = v[0] == '-';
    auto mag = parseUnsigned(neg ? v.substr(1) : v, 1000);
    if (!mag) return "priority must be an integer from -1000 to 1000 (got " + v + ")";
    c.priority = static_cast<std::int32_t>(neg ? -static_cast<std::int64_t>(*mag) : static_cast<std::int64_t>(*mag));
  }
  struct Limit {
    const char* name;
    std::optional<std::uint64_t>* out;
    const char* what;
  };
  for (const Limit& l : {Limit{"bandwidth", &c.bandwidth, "bytes per second"},
                         Limit{"quota_files", &c.quota_files, "a number of files"},
                         Limit{"quota_bytes", &c.quota_bytes, "a number of bytes"}}) {
    std::string v = req.param(l.name);
    if (v.empty()) continue;
    auto n = parseUnsigned(v, 1ull << 50);
    if (!n) return std::string(l.name) + " must be " + l.what + ", 0 (unlimited) to 2^50 (got " + v + ")";
    *l.out = *n;
  }
  return std::nullopt;
}

std::optional<std::string> parseChange(const AdminContext& ctx, const Request& req, ProviderChange& c) {
  if (auto why = parseNumbers(req, c)) return why;
  if (auto why = parseSitemap(ctx, req, c)) return why;
  c.add_prefixes = req.params("add_prefix");
  c.remove_prefixes = req.params("remove_prefix");
  if (c.add_prefixes.size() > 64) return std::string("at most 64 prefixes");
  for (const auto& p : c.add_prefixes) {
    std::string why;
    if (!isHttpUrl(p, &why)) return "prefix " + p + ": " + why;
  }
  if (!req.query.count("password")) return std::nullopt;
  std::string password = req.param("password");
  if (password.empty()) return std::string("password must not be empty");
  if (password.size() > 256) return std::string("password longer than 256 characters");
  for (unsigned char ch : password) {
    if (ch < 0x20 || ch == 0x7f) return std::string("password contains a control character");
  }
  if (!ctx.options.passwords) return std::string("no password key on this node");
  auto hash = ctx.options.passwords->hashChosen(password);  // slow: outside the store's lock
  if (!hash.isOk()) return hash.status().message();
  c.password_hash = std::move(hash).value();
  return std::nullopt;
}

// Applies `c` to `p`; an error leaves the store unchanged (modify() keeps the old record).
Status applyChange(const ProviderChange& c, ProviderRecord& p) {
  if (isProviderRemoving(p.state)) return Status::aborted("the provider is being removed");
  for (const auto& x : c.remove_prefixes) {
    auto it = std::find(p.prefixes.begin(), p.prefixes.end(), x);
    if (it == p.prefixes.end()) return Status::invalidArgument("the provider has no prefix " + x);
    p.prefixes.erase(it);
  }
  for (const auto& x : c.add_prefixes) {
    if (std::find(p.prefixes.begin(), p.prefixes.end(), x) == p.prefixes.end()) p.prefixes.push_back(x);
  }
  if (p.prefixes.empty()) return Status::invalidArgument("a provider keeps at least one prefix");
  if (p.prefixes.size() > 64) return Status::invalidArgument("at most 64 prefixes");
  if (c.priority) p.priority = *c.priority;
  if (c.bandwidth) p.bandwidth = *c.bandwidth;
  if (c.quota_files) p.quota_files = *c.quota_files;
  if (c.quota_bytes) p.quota_bytes = *c.quota_bytes;
  if (c.password_hash) p.password_hash = *c.password_hash;
  if (c.sitemap_url) p.sitemap_url = *c.sitemap_url;
  if (c.sitemap_interval) p.sitemap_interval = *c.sitemap_interval;
  if (!p.sitemap_url.empty() && !sitemapCovered(p.sitemap_url, p.prefixes)) {
    return Status::invalidArgument("the sitemap " + p.sitemap_url + " is not under one of the provider's prefixes");
  }
  return Status::ok();
}

Response storeRefusal(const Status& s, ProviderId pid) {
  if (s.code() == StatusCode::kNotFound) return lifecycleError(404, "no provider " + std::to_string(pid));
  if (s.code() == StatusCode::kInvalidArgument) return lifecycleError(400, s.message());
  if (s.code() == StatusCode::kAborted) return lifecycleError(409, s.message());
  return lifecycleError(503, "provider store: " + s.message());
}

}  // namespace

Response adminSuspendProvider(const AdminContext& ctx, ProviderId pid, bool suspend, const Request& req) {
  // reason=: why, kept in state_reason (a front end marks the suspensions of its moves).
  std::string reason = req.param("reason");
  if (reason.size() > 256) return lifecycleError(400, "reason longer than 256 characters");
  for (unsigned char c : reason) {
    if (c < 0x20 || c == 0x7f) return lifecycleError(400, "reason contains a control character");
  }
  ProviderRecord after;
  Status s = ctx.providers->modify(pid, [&](ProviderRecord& p) {
    if (isProviderRemoving(p.state)) return Status::aborted("the provider is being removed");
    if (p.state == ProviderState::kPending) return Status::aborted("the provider's registration is not verified yet");
    p.state = suspend ? ProviderState::kSuspended : ProviderState::kActive;
    // An administrator's decision replaces a reason the RS gave (re-verification);
    // a resumed provider whose re-verification failed is checked again at the RS's
    // next sweep (its due time has passed).
    p.state_reason = reason;
    after = p;
    return Status::ok();
  });
  if (!s.isOk()) return storeRefusal(s, pid);
  spdlog::info("admin: provider {} {} from {}", pid, suspend ? "suspended" : "resumed", req.remote_ip);
  return Response::json(200, json{{"id", pid}, {"state", providerStateName(after.state)}}.dump() + "\n");
}

Response adminSetProvider(const AdminContext& ctx, ProviderId pid, const Request& req) {
  ProviderChange change;
  if (auto why = parseChange(ctx, req, change)) {
    return lifecycleError(*why == "no password key on this node" ? 503 : 400, *why);
  }
  ProviderRecord after;
  Status s = ctx.providers->modify(pid, [&](ProviderRecord& p) {
    LCC_RETURN_IF_ERROR(applyChange(change, p));
    after = p;
    return Status::ok();
  });
  if (!s.isOk()) return storeRefusal(s, pid);
  spdlog::info("admin: provider {} changed from {}{}", pid, req.remote_ip,
               change.password_hash ? " (new password)" : "");
  // A sitemap set, even the same URL again, is read now (not at its next interval).
  if (change.sitemap_url && !after.sitemap_url.empty() && ctx.sitemap_poll_now) ctx.sitemap_poll_now(pid);
  return Response::json(200, providerToJson(after).dump(2) + "\n");
}

Response adminRemoveProvider(const AdminContext& ctx, ProviderId pid, const Request& req) {
  std::string purge_arg = req.param("purge");
  if (!purge_arg.empty() && purge_arg != "0" && purge_arg != "1") {
    return lifecycleError(400, "purge must be 0 or 1 (got " + purge_arg + ")");
  }
  const bool purge = purge_arg == "1";
  if (!ctx.options.qm_reads_providers) {
    // No QM reads this PIDB: nothing is queued here, the record simply goes.
    if (purge) return lifecycleError(409, "purge needs the QM role on this node (it removes the content)");
    Status s = ctx.providers->remove(pid);
    if (!s.isOk()) return storeRefusal(s, pid);
    spdlog::info("admin: provider {} removed from {}", pid, req.remote_ip);
    return Response::json(200, json{{"removed", pid}, {"purge", false}, {"content", "kept"}}.dump() + "\n");
  }
  Status s = ctx.providers->modify(pid, [&](ProviderRecord& p) {
    // A plain remove after a purge does not undo the purge.
    if (p.state != kProviderPurging) p.state = purge ? kProviderPurging : kProviderRemoving;
    return Status::ok();
  });
  if (!s.isOk()) return storeRefusal(s, pid);
  spdlog::info("admin: provider {} marked for removal{} from {}", pid, purge ? " with its content" : "", req.remote_ip);
  json body{{"removed", pid}, {"purge", purge}, {"content", purge ? "purged" : "kept"},
            {"state", purge ? "purging" : "removing"}};
  return Response::json(202, body.dump() + "\n");
}

}  // namespace lcc::http
