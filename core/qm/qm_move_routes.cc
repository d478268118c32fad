#include "qm/qm_move_routes.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <future>

#include "http/admin_api.h"
#include "http/url_codec.h"
#include "qm/intake_set.h"
#include "qm/move_copy.h"

namespace lcc::qm {
namespace {

using nlohmann::json;
using http::Response;

// URLs of one provider one export carries: about 30 MB of JSON at 300 B a URL, within
// the front end's answer limit (64 MiB), read on the engine strand in one go.
constexpr std::size_t kMaxExport = 100'000;
constexpr std::size_t kMaxImport = 10'000;     // URLs of one import
constexpr auto kEngineWait = std::chrono::seconds(10);

Response jsonError(int status, const std::string& why) {
  return Response::json(status, json{{"error", why}}.dump() + "\n");
}

bool validText(const std::string& s, std::size_t max) {
  if (s.size() > max) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

struct Routes {
  NodeContext& node;
  QueueManager* qm;
  std::function<void(std::function<void()>)> post;
  std::function<bool()> stopping;

  // /admin/qm/providers/<id>/<action>: the id, or 0.
  static ProviderId idOf(const http::Request& req, const std::string& action) {
    static const std::string kBase = "/admin/qm/providers/";
    std::string tail = req.path.substr(kBase.size());
    const auto slash = tail.find('/');
    if (slash == std::string::npos || tail.substr(slash + 1) != action) return 0;
    auto id = http::parseUnsigned(tail.substr(0, slash), 0xffffffffull);
    return id ? static_cast<ProviderId>(*id) : 0;
  }

  Response exportUrls(const http::Request& req) const {
    const ProviderId pid = idOf(req, "export");
    if (pid == 0) return jsonError(404, "no such admin resource");
    std::size_t limit = kMaxExport;
    if (std::string v = req.param("limit"); !v.empty()) {
      auto n = http::parseUnsigned(v, kMaxExport);
      if (!n) return jsonError(400, "limit must be 0 to " + std::to_string(kMaxExport) + " (got " + v + ")");
      limit = static_cast<std::size_t>(*n);
    }
    auto after = http::percentDecode(req.param("after"), false);
    if (!after) return jsonError(400, "after must be a cursor an export gave");
    const bool copies = req.param("copies") == "1";
    auto rec = node.providers ? node.providers->get(pid) : Result<std::optional<ProviderRecord>>(std::nullopt);
    if (!rec.isOk()) return jsonError(503, "provider store: " + rec.status().message());
    if (!rec.value()) return jsonError(404, "no provider " + std::to_string(pid));
    auto done = std::make_shared<std::promise<std::optional<Result<QueueManager::ProviderExport>>>>();
    auto fut = done->get_future();
    post([this, done, pid, limit, after = *after, copies] {
      if (stopping()) return done->set_value(std::nullopt);
      done->set_value(qm->exportProvider(pid, limit, after, copies));
    });
    if (fut.wait_for(kEngineWait) != std::future_status::ready) return jsonError(503, "the QM did not answer in 10 s");
    auto got = fut.get();
    if (!got) return jsonError(503, "the QM is stopping");
    if (!got->isOk()) return jsonError(503, got->status().message());
    const QueueManager::ProviderExport& e = got->value();
    json urls = json::array();
    for (const auto& u : e.urls) {
      json j = moveUrlToJson(u.notice);
      if (u.seq != 0 && !e.store_id.empty()) {
        // Without the key: its bytes (the pid, a NUL) are no URL a fetcher takes (url_norm.h).
        j["at"] = json{{"path", "/cu/content/" + e.store_id + "/" + std::to_string(u.seq)}, {"md5", u.md5},
                       {"sz", u.size}};
      }
      urls.push_back(std::move(j));
    }
    json out{{"id", pid},          {"held", e.held},         {"in_flight", e.in_flight}, {"unapplied", e.unapplied},
             {"copies", e.copies}, {"store", e.store_id},    {"truncated", e.truncated},
             {"next", http::percentEncode(e.next)}, {"urls", urls}};
    return Response::json(200, out.dump() + "\n");
  }

  Response importUrls(const http::Request& req) const {
    const ProviderId pid = idOf(req, "import");
    if (pid == 0) return jsonError(404, "no such admin resource");
    IntakeSet set;
    set.pid = pid;
    set.uns = req.param("name");
    if (set.uns.empty() || !validText(set.uns, 200)) return jsonError(400, "name must be 1 to 200 printable characters");
    auto chunk = http::parseUnsigned(req.param("chunk"), 1ull << 40);
    if (!chunk || *chunk == 0) return jsonError(400, "chunk must be a positive number");
    set.id = *chunk;
    auto rec = node.providers ? node.providers->get(pid) : Result<std::optional<ProviderRecord>>(std::nullopt);
    if (!rec.isOk()) return jsonError(503, "provider store: " + rec.status().message());
    if (!rec.value()) return jsonError(404, "no provider " + std::to_string(pid));
    auto urls = parseMoveUrls(req.param("urls"), pid);
    if (!urls.isOk()) return jsonError(400, urls.status().message());
    set.urls = std::move(urls).value();
    const std::size_t n = set.urls.size();
    struct Ack {
      bool ok = false;
      std::string why;
    };
    auto done = std::make_shared<std::promise<Ack>>();
    auto fut = done->get_future();
    post([this, done, set = std::move(set)]() mutable {
      if (stopping()) return done->set_value(Ack{false, "the QM is stopping"});
      qm->submit(std::move(set), [done](bool ok, ErrorCode code, const std::string& reason) {
        done->set_value(Ack{ok, ok ? "" : "refused " + std::to_string(static_cast<int>(code)) + ": " + reason});
      });
    });
    if (fut.wait_for(kEngineWait) != std::future_status::ready) return jsonError(503, "the QM did not ack in 10 s");
    Ack a = fut.get();
    if (!a.ok) return jsonError(503, a.why);
    spdlog::info("qm: provider {}: {} URL(s) taken in from {} ({} chunk {})", pid, n, req.remote_ip, req.param("name"),
                 *chunk);
    return Response::json(200, json{{"id", pid}, {"accepted", n}}.dump() + "\n");
  }
};

}  // namespace

namespace {

// A URL's "cp" (its bytes at another QM), or nullopt when absent or not usable (then
// its site is fetched, as for any queued URL).
std::optional<CopyFetch> copyOf(const json& u, const std::string& fetch) {
  if (!u.contains("cp") || !u["cp"].is_object()) return std::nullopt;
  const json& cp = u["cp"];
  CopyFetch c;
  c.content_url = cp.value("u", "");
  c.md5 = cp.value("md5", "");
  c.size = cp.value("sz", std::uint64_t{0});
  c.original = fetch;
  std::string why;
  if (!http::isHttpUrl(c.content_url, &why, 16384) || c.md5.size() != 32) return std::nullopt;
  auto back = parseCopyFetch(makeCopyFetch(c));
  if (!back || back->content_url != c.content_url || back->md5 != c.md5) return std::nullopt;
  return c;
}

}  // namespace

json moveUrlToJson(const UrlNotice& n) {
  json u{{"c", n.key.url}, {"m", n.key.mime}, {"md5", n.md5}, {"f", n.fetch}, {"st", n.view_tag}, {"tod", n.tod}};
  if (n.mtime) u["mt"] = *n.mtime;
  if (n.size) u["sz"] = *n.size;
  if (n.browse) u["b"] = *n.browse;
  return u;
}

Result<std::vector<UrlNotice>> parseMoveUrls(const std::string& json_text, ProviderId pid) {
  json arr = json::parse(json_text, nullptr, false);
  if (arr.is_discarded() || !arr.is_array()) return Status::invalidArgument("urls must be a JSON array");
  if (arr.size() > kMaxImport) return Status::invalidArgument("at most " + std::to_string(kMaxImport) + " urls at once");
  std::vector<UrlNotice> out;
  for (const auto& u : arr) {
    if (!u.is_object() || !u.contains("c") || !u["c"].is_string() || !u.contains("m") || !u["m"].is_string()) {
      return Status::invalidArgument("each url needs \"c\" and \"m\" strings");
    }
    UrlNotice n;
    n.key = UrlKey{pid, u["c"].get<std::string>(), u["m"].get<std::string>()};
    n.md5 = u.value("md5", "");
    n.fetch = u.value("f", "");
    n.view_tag = u.value("st", "");
    n.tod = u.value("tod", "");
    if (u.contains("mt") && u["mt"].is_number_integer()) n.mtime = u["mt"].get<std::int64_t>();
    if (u.contains("sz") && u["sz"].is_number_unsigned()) n.size = u["sz"].get<std::uint64_t>();
    if (u.contains("b") && u["b"].is_string()) n.browse = u["b"].get<std::string>();
    if (auto copy = copyOf(u, n.fetch)) n.fetch = makeCopyFetch(*copy);
    const bool ok = !n.key.url.empty() && validText(n.key.url, 8192) && n.key.mime.find('/') != std::string::npos &&
                    validText(n.key.mime, 255) && (n.md5.empty() || n.md5.size() == 32) && validText(n.fetch, 32768) &&
                    validText(n.view_tag, 255) && validText(n.tod, 255) && (!n.browse || validText(*n.browse, 8192));
    if (!ok) return Status::invalidArgument("a url has a bad field: " + u.dump().substr(0, 200));
    out.push_back(std::move(n));
  }
  return out;
}

void registerMoveRoutes(NodeContext& node, QueueManager* qm, std::function<void(std::function<void()>)> post,
                        std::function<bool()> stopping) {
  auto routes = std::make_shared<Routes>(Routes{node, qm, std::move(post), std::move(stopping)});
  const std::string token_file = node.data_dir + "/admin.token";
  const bool remote = node.config->getBool("http.admin_remote");
  auto guarded = [routes, token_file, remote, env = node.env](Response (Routes::*fn)(const http::Request&) const) {
    return [routes, token_file, remote, env, fn](const http::Request& req) -> Response {
      if (auto refused = http::checkAdminAccess(req, http::readAdminToken(*env, token_file), remote)) return *refused;
      return ((*routes).*fn)(req);
    };
  };
  node.http->add("GET", "/admin/qm/providers/", guarded(&Routes::exportUrls));
  node.http->add("POST", "/admin/qm/providers/", guarded(&Routes::importUrls));
}

}  // namespace lcc::qm
