// admin_api.h — the administrator's HTTP API under /admin/ (what `lcc provider` and
// `lcc status` use) and the node's home page GET / (docs/protocol.md §7).
//
// Every /admin/ request needs `Authorization: Bearer <token>`, the token being the
// content of <data_dir>/admin.token (read on each request, compared in constant
// time), and comes from a loopback peer unless http.admin_remote is true.
//
//   POST   /admin/providers                     prefix=URL (repeatable), priority, bandwidth,
//                                               password, contact (optional): 201 {"id","password"};
//                                               or password_hash + key_id (a front end's move: no
//                                               "password"); state=suspended, state_reason
//   GET    /admin/providers/<id>/credentials     {"id","password_hash","key_id"} (a front end's move)
//   GET    /admin/providers                     {"providers": [provider...]}
//   GET    /admin/providers/<id>                provider (everything but the hash), with
//                                               "sitemap_poll" when it has a sitemap
//   DELETE /admin/providers/<id>[?purge=1]      202 {"removed", "purge", "content", "state"}
//                                               (the QM drops the queued URLs, purge: content too)
//   POST   /admin/providers/<id>/suspend|resume {"id", "state"}; reason= kept as state_reason
//   POST|PATCH /admin/providers/<id>            priority, bandwidth, quota_files, quota_bytes,
//                                               add_prefix, remove_prefix (repeatable), password,
//                                               sitemap (URL under a prefix; empty: none),
//                                               sitemap_interval (duration; 0: the default):
//                                               200 provider (admin_api_lifecycle.cc)
//   POST   /admin/providers/<id>/want-full-set  {"id", "fullset_wanted": true, "reason": "admin"}
//   GET    /admin/status                        GET /status plus a "providers" summary
// Errors: {"error": "..."} with 400 (bad input), 401 (token), 403 (peer), 404, 503.
// THREADS: handlers run on the HTTP worker threads; the ProviderStore is thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/password.h"
#include "common/provider_defaults.h"
#include "common/provider_state_name.h"
#include "common/sample_ring.h"
#include "common/service.h"
#include "http/http_server.h"
#include "lcc/env.h"
#include "lcc/provider_store.h"

namespace lcc::http {

// Members with a config key carry no default: fromConfig() (server_config.cc) reads
// the schema's. Tests start from AdminOptions::fromConfig(Config::defaults()).
struct AdminOptions {
  bool admin_remote = false;               // http.admin_remote
  ProviderDefaults provider_defaults;      // rs.default_*: a provider made by POST /admin/providers
  Millis sitemap_min_interval{};           // sitemap.min_interval: the shortest poll interval `set` takes
  // A QM reads this PIDB (roles names qm): a removal marks the record and the QM
  // finishes it; otherwise the record is deleted at once and purge is refused.
  bool qm_reads_providers = false;         // roles
  // No config key (set by the caller):
  std::string token_file;                  // <data_dir>/admin.token
  std::shared_ptr<const PasswordHasher> passwords;  // <data_dir>/auth.key, uns.password_hash_ops

  static AdminOptions fromConfig(const Config& config);
};

// What the admin routes use. `providers` may be null (then they answer 503).
struct AdminContext {
  ProviderStore* providers = nullptr;
  Env* env = nullptr;
  Clock* clock = nullptr;
  const Router* router = nullptr;  // to answer /admin/status from GET /status
  AdminOptions options;
  // The uns role's sitemap poller (NodeContext): a provider's poll state for GET
  // /admin/providers/<id> ("sitemap_poll"), and "poll now" after a `set` with `sitemap`.
  std::function<nlohmann::json(ProviderId)> sitemap_poll_state;
  std::function<void(ProviderId)> sitemap_poll_now;
};

// Registers GET / (the status page, status_page.h, charts from `samples` when not
// null) and the /admin/ routes for the daemon (reads the keys above from node.config).
// Call once, after the roles registered their routes.
void registerNodeRoutes(NodeContext& node, const SampleRing* samples = nullptr);
// The /admin/status document: GET /status through `router`, plus "providers" (a
// summary of the provider store) when `providers` is not null.
nlohmann::json adminStatus(const Router* router, ProviderStore* providers);
// Registers the /admin/ routes on `router` (tests build the context themselves).
void registerAdminRoutes(Router& router, AdminContext ctx);

// Equal contents, in time that depends only on the lengths.
bool constantTimeEquals(std::string_view a, std::string_view b);
// nullopt when the request may use the admin API, else the refusal to send:
// 403 for a non-loopback peer without allow_remote, 401 for a missing or wrong token,
// 503 when there is no token to compare with (`expected_token` empty).
std::optional<Response> checkAdminAccess(const Request& req, std::string_view expected_token, bool allow_remote);
// The token in `path`, trimmed; empty when unreadable.
std::string readAdminToken(Env& env, const std::string& path);

// The life-cycle handlers (admin_api_lifecycle.cc); `ctx.providers` is not null.
Response adminSuspendProvider(const AdminContext& ctx, ProviderId pid, bool suspend, const Request& req);
Response adminSetProvider(const AdminContext& ctx, ProviderId pid, const Request& req);
Response adminRemoveProvider(const AdminContext& ctx, ProviderId pid, const Request& req);

// A provider as the admin API shows it: every field but password_hash.
nlohmann::json providerToJson(const ProviderRecord& p);
// The state's word: lcc::providerStateName() (common/provider_state_name.h, included above).

}  // namespace lcc::http
