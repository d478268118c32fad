#include "cu/cu_service.h"

#include "s3/s3_options.h"

#include <spdlog/spdlog.h>

#include "common/tls_config.h"
#include "cu/cu_http.h"
#include "cu/cu_server.h"
#include "cu/query_engine.h"
#include "http/http_server.h"
#include "resourcesync/resourcesync.h"

namespace lcc::cu {
namespace {

// A Resource Dump reads content the way a CU answer does (one remote reader per package).
class CuDumpContent final : public resourcesync::DumpContent {
 public:
  explicit CuDumpContent(QueryEngine& engine) : engine_(engine) {}
  std::unique_ptr<ContentSource> open(const ContentRecord& r, std::string* why) override {
    ContentMissing missing = ContentMissing::kNone;
    auto src = engine_.openContent(r, &remote_, &missing);
    if (!src) {
      *why = missing == ContentMissing::kOtherMachine
                 ? "it is on machine " + r.machine + ", whose content URL is not known (cu.content_urls)"
                 : "the file " + r.filename + " on machine " + r.machine + " is unreadable";
    }
    return src;
  }

 private:
  QueryEngine& engine_;
  std::unique_ptr<RemoteContentReader> remote_;
};

class CuService final : public Service {
 public:
  CuService(NodeContext& node, EngineOptions eopts, CuServerOptions sopts, PeerOptions peers,
            std::optional<resourcesync::Options> rs)
      : node_(node),
        engine_(*node.content, node.exporters, *node.env, std::move(eopts), node.metrics),
        server_(*node.io, engine_, *node.clock, std::move(sopts)),
        peers_(std::move(peers)) {
    if (node.http) addCuRoutes(*node.http, engine_, peers_);
    if (node.http && rs) {
      resourcesync::addRoutes(*node.http, *node.content, node.providers, *node.clock, std::move(*rs),
                              [this] { return std::make_unique<CuDumpContent>(engine_); });
    }
  }

  std::string_view name() const override { return "cu"; }

  Status start() override {
    const std::string& tmp = engine_.options().temp_dir;
    LCC_RETURN_IF_ERROR(node_.env->createDirs(tmp, DirOptions{.private_dir = true}).withContext("cu temp_dir"));
    // Exporters' files left by a crash.
    if (auto names = node_.env->listDir(tmp); names.isOk()) {
      for (const auto& n : *names) {
        if (n.rfind("cu-", 0) == 0) (void)node_.env->removeFile(tmp + "/" + n);
      }
    }
    LCC_RETURN_IF_ERROR(server_.start());
    spdlog::info("cu: listening on {}, TLS on {} (formats:{})", orOff("listen.cu"), orOff("listen.cu_tls"), formatList());
    return Status::ok();
  }

  void stop() override { server_.stop(); }

  void status(nlohmann::json& out) const override {
    out["listen"] = node_.config->getString("listen.cu");
    out["listen_tls"] = node_.config->getString("listen.cu_tls");
    out["connections"] = server_.connections();
    auto& st = const_cast<QueryEngine&>(engine_).stats();
    out["answers_running"] = st.running.value();
    out["answers_total"] = st.queries.value();
    out["rejected_total"] = st.rejected.value();
    out["records_total"] = st.records.value();
    out["content_missing_total"] = st.content_missing.value();
    out["formats"] = engine_.formats();
    out["peers"] = peers_.peers;
    out["peers_unreachable_total"] = st.peers_unreachable.value();
    if (const ContentLocator* loc = engine_.options().locator) {
      nlohmann::json urls = nlohmann::json::object();
      for (const auto& [machine, url] : loc->all()) urls[machine] = url;
      out["content_urls"] = std::move(urls);
    }
  }

 private:
  std::string orOff(const char* key) const {
    const std::string v = node_.config->getString(key);
    return v.empty() ? "-" : v;
  }
  std::string formatList() const {
    std::string s;
    for (const auto& f : engine_.formats()) s += " " + f;
    return s;
  }

  NodeContext& node_;
  QueryEngine engine_;
  CuServer server_;
  const PeerOptions peers_;  // cu.peers: GET /cu/query merges them (merged_query.h)
};

}  // namespace

Result<ServicePtr> makeCuService(NodeContext& node) {
  if (node.content == nullptr) return Status::invalidArgument("the cu role needs the content store");
  if (node.exporters.empty()) return Status::invalidArgument("the cu role needs at least one exporter (exporters:)");
  const Config& cfg = *node.config;
  EngineOptions e = EngineOptions::fromConfig(cfg, node.data_dir, node.machine_id);
  // Issue 31 §1: with s3.endpoint set, every record's bytes are read from the bucket.
  auto s3 = s3::S3Options::fromConfig(cfg, node.data_dir);
  if (!s3.isOk()) return s3.status();
  e.s3 = std::move(s3).value();
  e.locator = node.content_locator;
  CuServerOptions s = CuServerOptions::fromConfig(cfg);
  PeerOptions peers = PeerOptions::fromConfig(cfg);
  if (node.tls) {
    s.tls = node.tls->server();
    s.handshake_timeout = node.tls->handshakeTimeout();
    e.remote.tls = node.tls->contentClient();  // https:// content URLs
    peers.tls = node.tls->contentClient();     // https:// peers, the same way
  }
  std::optional<resourcesync::Options> rs_options;
  if (node.http != nullptr) {
    rs_options = resourcesync::Options::fromConfig(cfg);
  }
  return ServicePtr(new CuService(node, std::move(e), std::move(s), std::move(peers), std::move(rs_options)));
}

}  // namespace lcc::cu
