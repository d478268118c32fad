#include "http/admin_api.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "http/status_page.h"
#include "lcc/support/time_util.h"
#include "lcc/provider_states.h"
#include "http/url_codec.h"
#include "lcc/support/url_norm.h"

namespace lcc::http {
namespace {

using nlohmann::json;

Response jsonError(int status, const std::string& why) {
  return Response::json(status, json{{"error", why}}.dump() + "\n");
}

std::optional<std::int64_t> parseSigned(const std::string& s, std::int64_t min, std::int64_t max) {
  if (s.empty()) return std::nullopt;
  bool neg = s[0] == '-';
  auto mag = parseUnsigned(neg ? s.substr(1) : s, static_cast<std::uint64_t>(neg ? -min : max));
  if (!mag) return std::nullopt;
  std::int64_t v = neg ? -static_cast<std::int64_t>(*mag) : static_cast<std::int64_t>(*mag);
  if (v < min || v > max) return std::nullopt;
  return v;
}

json timeOrNull(WallTime t) { return t == WallTime{} ? json(nullptr) : json(formatRfc3339(t)); }

// The admin context shared by the handlers.
struct Admin {
  AdminContext ctx;

  std::optional<Response> guard(const Request& req) const {
    std::string token = ctx.env ? readAdminToken(*ctx.env, ctx.options.token_file) : std::string();
    if (auto refused = checkAdminAccess(req, token, ctx.options.admin_remote)) {
      spdlog::warn("admin: refused {} {} from {}: HTTP {}", req.method, req.path, req.remote_ip, refused->status);
      return refused;
    }
    if (ctx.providers == nullptr) return jsonError(503, "no provider store on this node");
    return std::nullopt;
  }

  Response add(const Request& req) const {
    std::vector<std::string> prefixes = req.params("prefix");
    if (prefixes.empty()) return jsonError(400, "at least one prefix is required (prefix=URL)");
    if (prefixes.size() > 64) return jsonError(400, "at most 64 prefixes");
    ProviderRecord rec;
    for (const auto& p : prefixes) {
      // Stored in the URL normal form, ending at a segment boundary (url/url_norm.h).
      auto n = url::normalizePrefix(p, 2048);
      if (!n.isOk()) return jsonError(400, "prefix " + p + ": " + n.status().message());
      if (std::find(rec.prefixes.begin(), rec.prefixes.end(), n.value()) == rec.prefixes.end()) {
        rec.prefixes.push_back(std::move(n).value());
      }
    }
    rec.state = ProviderState::kActive;
    ctx.options.provider_defaults.applyTo(rec);
    if (std::string v = req.param("priority"); !v.empty()) {
      auto n = parseSigned(v, -1000, 1000);
      if (!n) return jsonError(400, "priority must be an integer from -1000 to 1000 (got " + v + ")");
      rec.priority = static_cast<std::int32_t>(*n);
    }
    if (std::string v = req.param("bandwidth"); !v.empty()) {
      auto n = parseUnsigned(v, 1ull << 40);
      if (!n) return jsonError(400, "bandwidth must be bytes per second, 0 to 2^40 (got " + v + ")");
      rec.bandwidth = *n;
    }
    // Optional: who to reach (the front end puts its placement marker here, core/front).
    if (std::string v = req.param("contact"); !v.empty()) {
      if (v.size() > 256) return jsonError(400, "contact longer than 256 characters");
      for (unsigned char c : v) {
        if (c < 0x20 || c == 0x7f) return jsonError(400, "contact contains a control character");
      }
      rec.contact = std::move(v);
    }
    if (auto refused = stateOf(req, rec)) return *refused;
    std::string password;
    if (auto refused = passwordOf(req, rec, password)) return *refused;
    if (ctx.clock) rec.created = ctx.clock->now();
    auto id = ctx.providers->create(rec);
    if (!id.isOk()) {
      spdlog::error("admin: provider create failed: {}", id.status().toString());
      return jsonError(503, "provider store: " + id.status().message());
    }
    spdlog::info("admin: provider {} added from {} ({} prefixes{})", id.value(), req.remote_ip, prefixes.size(),
                 password.empty() ? ", with a stored password hash" : "");
    json out{{"id", id.value()}};
    if (!password.empty()) out["password"] = password;
    return Response::json(201, out.dump() + "\n");
  }

  // state=active|suspended and state_reason (a front end's move makes it suspended).
  static std::optional<Response> stateOf(const Request& req, ProviderRecord& rec) {
    const std::string state = req.param("state", "active");
    if (state != "active" && state != "suspended") return jsonError(400, "state must be active or suspended (got " + state + ")");
    if (state == "suspended") rec.state = ProviderState::kSuspended;
    std::string reason = req.param("state_reason");
    if (reason.size() > 256) return jsonError(400, "state_reason longer than 256 characters");
    for (unsigned char c : reason) {
      if (c < 0x20 || c == 0x7f) return jsonError(400, "state_reason contains a control character");
    }
    rec.state_reason = std::move(reason);
    return std::nullopt;
  }

  // password=, or none (a token is made and answered), or password_hash= with key_id=
  // (a hash another node stored: a front end moving the provider; docs/security.md).
  std::optional<Response> passwordOf(const Request& req, ProviderRecord& rec, std::string& password) const {
    if (!ctx.options.passwords) return jsonError(503, "no password key on this node");
    if (req.query.count("password_hash")) {
      const std::string hash = req.param("password_hash");
      if (req.query.count("password")) return jsonError(400, "give password or password_hash, not both");
      if (!PasswordHasher::looksLikeHash(hash)) return jsonError(400, "password_hash is not a password hash of the LCC");
      if (PasswordHasher::isKeyed(hash) && req.param("key_id") != ctx.options.passwords->keyId()) {
        return jsonError(409, "password_hash was made under another server key (auth.key; key_id " + req.param("key_id") +
                                  ", this node's " + ctx.options.passwords->keyId() + "): it would never verify here");
      }
      rec.password_hash = hash;
      return std::nullopt;
    }
    password = req.param("password");
    if (req.query.count("password") && password.empty()) return jsonError(400, "password must not be empty");
    if (password.size() > 256) return jsonError(400, "password longer than 256 characters");
    for (unsigned char c : password) {
      if (c < 0x20 || c == 0x7f) return jsonError(400, "password contains a control character");
    }
    if (password.empty()) {
      // A token we generate cannot be guessed: it gets the fast keyed hash.
      password = PasswordHasher::generateToken();
      rec.password_hash = ctx.options.passwords->hashToken(password);
    } else {
      auto hash = ctx.options.passwords->hashChosen(password);
      if (!hash.isOk()) return jsonError(500, hash.status().message());
      rec.password_hash = std::move(hash).value();
    }
    return std::nullopt;
  }

  // GET /admin/providers/<id>/credentials: the stored hash and the key's id, for a
  // front end moving the provider to another sub-LCC (admin token only).
  Response credentials(ProviderId pid, const Request& req) const {
    auto rec = ctx.providers->get(pid);
    if (!rec.isOk()) return jsonError(503, "provider store: " + rec.status().message());
    if (!rec.value()) return jsonError(404, "no provider " + std::to_string(pid));
    spdlog::info("admin: provider {}: password hash read from {}", pid, req.remote_ip);
    json out{{"id", pid}, {"password_hash", rec.value()->password_hash}};
    out["key_id"] = ctx.options.passwords ? ctx.options.passwords->keyId() : std::string();
    return Response::json(200, out.dump() + "\n");
  }

  Response list() const {
    json arr = json::array();
    Status s = ctx.providers->scan([&](const ProviderRecord& p) {
      arr.push_back(providerToJson(p));
      return true;
    });
    if (!s.isOk()) return jsonError(503, "provider store: " + s.message());
    return Response::json(200, json{{"providers", arr}}.dump(2) + "\n");
  }

  // /admin/providers/<id>[/<action>]
  Response one(const Request& req) const {
    static const std::string kBase = "/admin/providers/";
    std::string tail = req.path.substr(kBase.size());
    std::string action;
    if (auto slash = tail.find('/'); slash != std::string::npos) {
      action = tail.substr(slash + 1);
      tail = tail.substr(0, slash);
    }
    auto id = parseUnsigned(tail, 0xffffffffull);
    if (!id || *id == 0) return jsonError(400, "provider id must be a positive integer (got " + tail + ")");
    const auto pid = static_cast<ProviderId>(*id);
    if (req.method == "GET" && action == "credentials") return credentials(pid, req);
    if (req.method == "GET" || req.method == "HEAD") {
      if (!action.empty()) return jsonError(404, "no such admin resource");
      auto rec = ctx.providers->get(pid);
      if (!rec.isOk()) return jsonError(503, "provider store: " + rec.status().message());
      if (!rec.value()) return jsonError(404, "no provider " + tail);
      json out = providerToJson(*rec.value());
      // How its sitemap polls go (the uns role on this node): the last failure with its HTTP status.
      if (ctx.sitemap_poll_state && !rec.value()->sitemap_url.empty()) out["sitemap_poll"] = ctx.sitemap_poll_state(pid);
      return Response::json(200, out.dump(2) + "\n");
    }
    if (req.method == "DELETE") {
      if (!action.empty()) return jsonError(404, "no such admin resource");
      return adminRemoveProvider(ctx, pid, req);
    }
    if (req.method == "POST" && (action == "suspend" || action == "resume")) {
      return adminSuspendProvider(ctx, pid, action == "suspend", req);
    }
    if ((req.method == "POST" || req.method == "PATCH") && action.empty()) return adminSetProvider(ctx, pid, req);
    if (req.method == "POST" && action == "want-full-set") {
      Status s = ctx.providers->modify(pid, [](ProviderRecord& p) {
        p.fullset_wanted = true;
        p.fullset_reason = FullSetReason::kAdmin;
        return Status::ok();
      });
      if (s.code() == StatusCode::kNotFound) return jsonError(404, "no provider " + tail);
      if (!s.isOk()) return jsonError(503, "provider store: " + s.message());
      spdlog::info("admin: provider {}: full set wanted (admin) from {}", pid, req.remote_ip);
      return Response::json(200, json{{"id", pid}, {"fullset_wanted", true}, {"reason", "admin"}}.dump() + "\n");
    }
    return jsonError(404, "no such admin resource");
  }

  Response status() const { return Response::json(200, adminStatus(ctx.router, ctx.providers).dump(2) + "\n"); }
};

}  // namespace

nlohmann::json adminStatus(const Router* router, ProviderStore* providers) {
  json out = json::object();
  if (router) {
    Request inner;
    inner.method = "GET";
    inner.path = inner.target = "/status";
    inner.remote_loopback = true;
    inner.remote_ip = "127.0.0.1";
    Response r = router->dispatch(inner);
    if (r.status == 200 && !r.stream) {
      auto parsed = json::parse(r.body, nullptr, false);
      if (!parsed.is_discarded() && parsed.is_object()) out = std::move(parsed);
    }
  }
  if (providers == nullptr) return out;
  json summary{{"total", 0}, {"active", 0}, {"pending", 0}, {"suspended", 0}, {"fullset_wanted", 0},
               {"errors_unreported", 0}};
  json wanted = json::array();
  Status s = providers->scan([&](const ProviderRecord& p) {
    summary["total"] = summary["total"].get<int>() + 1;
    std::string state(providerStateName(p.state));
    summary[state] = summary.value(state, 0) + 1;
    if (p.fullset_wanted) {
      summary["fullset_wanted"] = summary["fullset_wanted"].get<int>() + 1;
      wanted.push_back(p.id);
    }
    summary["errors_unreported"] = summary["errors_unreported"].get<std::uint64_t>() + p.errors.size();
    return true;
  });
  if (!s.isOk()) summary["error"] = s.message();
  summary["fullset_wanted_ids"] = wanted;
  out["providers"] = summary;
  return out;
}

json providerToJson(const ProviderRecord& p) {
  json errors = json::array();
  for (const auto& e : p.errors) {
    errors.push_back({{"url", e.notice.key.url},
                      {"mime", e.notice.key.mime},
                      {"code", static_cast<int>(e.code)},
                      {"http", e.http_status},
                      {"message", e.message},
                      {"when", timeOrNull(e.when)}});
  }
  return json{
      {"id", p.id},
      {"state", providerStateName(p.state)},
      {"state_reason", p.state_reason},
      {"prefixes", p.prefixes},
      {"priority", p.priority},
      {"bandwidth", p.bandwidth},
      {"quota_files", p.quota_files},
      {"quota_bytes", p.quota_bytes},
      {"used_files", p.used_files},
      {"used_bytes", p.used_bytes},
      {"secret", p.secret},
      {"secret_url", p.secret_url},
      {"contact", p.contact},
      {"reg_expires", timeOrNull(p.reg_expires)},
      {"conn_seq", p.conn_seq},
      {"last_ip", p.last_ip},
      {"last_connect", p.last_connect ? timeOrNull(*p.last_connect) : json(nullptr)},
      {"fullsets_used", p.fullsets_used},
      {"fullset_period_start", timeOrNull(p.fullset_period_start)},
      {"fullset_wanted", p.fullset_wanted},
      {"fullset_reason", std::string(fullSetReasonName(p.fullset_reason))},
      {"error_total", p.error_total},
      {"errors", errors},
      {"created", timeOrNull(p.created)},
      {"sitemap", p.sitemap_url.empty() ? json(nullptr) : json(p.sitemap_url)},
      {"sitemap_interval_ms", p.sitemap_interval.count()},
  };
}

bool constantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  // Always walk the expected length so the time depends on lengths only.
  const std::size_t n = b.size();
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

std::optional<Response> checkAdminAccess(const Request& req, std::string_view expected_token, bool allow_remote) {
  if (!req.remote_loopback && !allow_remote) {
    return jsonError(403, "the admin API only answers loopback peers (http.admin_remote is false)");
  }
  if (expected_token.empty()) return jsonError(503, "the admin token is not available on this node");
  std::string auth = req.header("authorization");
  static constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() <= kBearer.size() || !std::equal(kBearer.begin(), kBearer.end(), auth.begin(), [](char x, char y) {
        return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
      })) {
    Response r = jsonError(401, "missing admin token (Authorization: Bearer <token from data_dir/admin.token>)");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"lcc-admin\"");
    return r;
  }
  std::string given = trimSpace(std::string_view(auth).substr(kBearer.size()));
  if (!constantTimeEquals(given, expected_token)) {
    Response r = jsonError(401, "wrong admin token");
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"lcc-admin\", error=\"invalid_token\"");
    return r;
  }
  return std::nullopt;
}

std::string readAdminToken(Env& env, const std::string& path) {
  auto text = env.readFile(path);
  if (!text.isOk()) return {};
  return trimSpace(text.value());
}

void registerAdminRoutes(Router& router, AdminContext ctx) {
  auto admin = std::make_shared<Admin>();
  admin->ctx = std::move(ctx);
  auto guarded = [admin](Response (*fn)(const Admin&, const Request&)) {
    return [admin, fn](const Request& req) -> Response {
      if (auto refused = admin->guard(req)) return *refused;
      return fn(*admin, req);
    };
  };
  router.add("POST", "/admin/providers", guarded([](const Admin& a, const Request& r) { return a.add(r); }));
  router.add("GET", "/admin/providers", guarded([](const Admin& a, const Request&) { return a.list(); }));
  router.add("GET", "/admin/providers/", guarded([](const Admin& a, const Request& r) { return a.one(r); }));
  router.add("DELETE", "/admin/providers/", guarded([](const Admin& a, const Request& r) { return a.one(r); }));
  router.add("POST", "/admin/providers/", guarded([](const Admin& a, const Request& r) { return a.one(r); }));
  router.add("PATCH", "/admin/providers/", guarded([](const Admin& a, const Request& r) { return a.one(r); }));
  router.add("GET", "/admin/status", guarded([](const Admin& a, const Request&) { return a.status(); }));
  // Anything else under /admin/ is refused the same way before it is "not found".
  for (const char* m : {"GET", "POST", "DELETE", "PUT"}) {
    router.add(m, "/admin/", guarded([](const Admin&, const Request&) { return jsonError(404, "no such admin resource"); }));
  }
}

void registerNodeRoutes(NodeContext& node, const SampleRing* samples) {
  if (node.http == nullptr) return;
  const Config& cfg = *node.config;
  AdminContext ctx;
  ctx.providers = node.providers;
  ctx.env = node.env;
  ctx.clock = node.clock;
  ctx.router = node.http;
  ctx.options = AdminOptions::fromConfig(cfg);
  ctx.options.token_file = node.data_dir + "/admin.token";
  ctx.options.passwords = node.passwords;
  ctx.sitemap_poll_state = [&node](ProviderId pid) {
    return node.sitemap_poll_state ? node.sitemap_poll_state(pid) : nlohmann::json();
  };
  ctx.sitemap_poll_now = [&node](ProviderId pid) {
    if (node.sitemap_poll_now) node.sitemap_poll_now(pid);
  };
  registerAdminRoutes(*node.http, std::move(ctx));
  StatusPageSources page;  // GET / (status_page.h)
  page.machine_id = node.machine_id;
  page.roles = cfg.getList("roles");
  page.admin_status = [router = node.http, providers = node.providers] { return adminStatus(router, providers); };
  page.providers = node.providers;
  page.queued_urls = node.queued_urls;
  page.ring = samples;
  page.status_providers = static_cast<std::size_t>(cfg.getInt("http.status_providers"));
  // The QM and the uns role set these before (the roles are made first); read at each request.
  page.provider_fetches = [&node](ProviderId pid) {
    return node.provider_fetches ? node.provider_fetches(pid) : ProviderFetchRate{};
  };
  page.sitemap_state = [&node](ProviderId pid) {
    return node.sitemap_poll_state ? node.sitemap_poll_state(pid) : nlohmann::json();
  };
  if (node.clock != nullptr && node.metrics != nullptr) {
    page.sample_now = [clock = node.clock, metrics = node.metrics] {
      return sampleFromMetrics(toUnixMillis(clock->now()), metrics->snapshot());
    };
    page.now_unix_ms = [clock = node.clock] { return toUnixMillis(clock->now()); };
    page.started_unix_ms = toUnixMillis(node.clock->now());  // lccd registers its routes at its start
  }
  registerStatusPage(*node.http, std::move(page));
}

}  // namespace lcc::http
