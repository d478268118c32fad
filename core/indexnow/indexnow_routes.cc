#include "indexnow/indexnow_routes.h"

#include <spdlog/spdlog.h>

#include <atomic>

#include "common/config/config.h"
#include "common/fetch_wait.h"
#include "indexnow/receiver.h"

namespace lcc::indexnow {
namespace {

constexpr std::uint64_t kMaxKeyFile = 1024;  // a key is at most 128 characters

}  // namespace

ReceiverOptions ReceiverOptions::fromConfig(const Config& cfg) {
  ReceiverOptions o;
  o.key_ttl = Millis(cfg.getInt("indexnow.key_ttl"));
  o.key_timeout = Millis(cfg.getInt("indexnow.key_timeout"));
  o.requests_per_minute = static_cast<std::uint64_t>(cfg.getInt("indexnow.requests_per_minute"));
  o.auto_register = cfg.getString("indexnow.register") == "auto";  // a kEnum key: off or auto
  o.provider_defaults = ProviderDefaults::fromConfig(cfg);
  o.accept_mime = cfg.getList("accept_mime");
  o.max_url_length = static_cast<std::size_t>(cfg.getInt("uns.max_url_length"));
  o.max_listed_refusals = static_cast<std::size_t>(cfg.getInt("indexnow.max_listed_refusals"));
  return o;
}

void addIndexNowRoutes(NodeContext& node, SubmitSet submit) {
  if (node.http == nullptr || node.fetcher == nullptr) return;
  const Config& cfg = *node.config;
  ReceiverOptions o = ReceiverOptions::fromConfig(cfg);
  const Millis timeout = o.key_timeout;
  const std::string work_dir = node.data_dir + "/indexnow";
  if (Status s = node.env->createDirs(work_dir, DirOptions{.private_dir = true}); !s.isOk()) {
    spdlog::error("indexnow: {}: {} (the IndexNow endpoints are off)", work_dir, s.toString());
    return;
  }
  auto next_id = std::make_shared<std::atomic<std::uint64_t>>((3ull << 61) + 1);  // apart from robots and the RS
  ReceiverDeps deps;
  deps.providers = node.providers;
  deps.clock = node.clock;
  deps.metrics = node.metrics;
  deps.fetch_key = [&node, work_dir, timeout, next_id](const std::string& key_url,
                                                       const std::string& scope) -> Result<std::string> {
    FetchRequest req;
    req.id = (*next_id)++;
    req.url = key_url;
    req.path = work_dir + "/key-" + std::to_string(req.id) + ".tmp";
    req.max_size = kMaxKeyFile;
    req.redirects = RedirectPolicy::kPrefix;  // never off the key file's folder
    req.redirect_prefixes = {scope};
    LCC_ASSIGN_OR_RETURN(auto got, fetchAndWait(*node.fetcher, *node.env, req, timeout));
    if (!got.result.ok()) {
      return Status::ioError("fetch code " + std::to_string(static_cast<int>(got.result.code)) +
                                 (got.result.http_status != 0 ? ", HTTP " + std::to_string(got.result.http_status) : "") +
                                 (got.result.message.empty() ? "" : ": " + got.result.message));
    }
    return got.body;
  };
  deps.submit = [submit = std::move(submit)](ProviderId pid, std::uint64_t count, std::string xml) -> Durable {
    const Status s = submit(pid, count, std::move(xml));
    if (s.isOk()) return {true, ""};
    return {false, s.message()};
  };
  addRoutes(*node.http, std::make_shared<Receiver>(o, std::move(deps)));
}

}  // namespace lcc::indexnow
