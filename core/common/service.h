// service.h — what lccd runs: one Service per role, wired by core/app/daemon.cc.
//
// A role's folder exports `Result<std::unique_ptr<Service>> makeXxxService(NodeContext&)`.
// start() runs on the main thread before the io threads start (bind listeners, open
// connections, post work); stop() runs on the main thread after SIGTERM while the io
// threads still run: stop accepting, finish or hand back in-flight work, sync, and
// return when done. Services stop in the reverse order they started.
#pragma once

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/config/config.h"
#include "common/metrics.h"
#include "common/password.h"
#include "common/plugin/plugin_registry.h"
#include "lcc/clock.h"
#include "lcc/content_store.h"
#include "lcc/env.h"
#include "lcc/exporter.h"
#include "lcc/fetcher.h"
#include "lcc/provider_store.h"
#include "lcc/queue_store.h"

namespace lcc {

class ContentLocator;
class NodeTls;

namespace net {
class LocalListeners;
}

namespace http {
class Router;
}

// Everything a role may use. Pointers the role does not need may be null: the daemon
// opens only the stores and plugins that the configured roles need.
// A provider's fetches as the QM counts them (NodeContext::provider_fetches).
struct ProviderFetchRate {
  std::uint64_t fetched = 0;   // results since lccd started: stored or unchanged
  std::uint64_t failed = 0;    // results since lccd started: failed (with an error code)
  double per_minute = 0;       // results per minute over about the last 10 minutes
};

struct NodeContext {
  const Config* config = nullptr;
  PluginRegistry* plugins = nullptr;
  boost::asio::io_context* io = nullptr;
  Clock* clock = nullptr;
  Env* env = nullptr;
  Metrics* metrics = nullptr;
  std::string data_dir;    // absolute
  std::string machine_id;
  QueueStore* queue = nullptr;        // qm
  ContentStore* content = nullptr;    // qm, cu
  ProviderStore* providers = nullptr; // uns, qm, rs, admin
  // Hashes and checks provider passwords under the server key <data_dir>/auth.key
  // (uns, rs, admin).
  std::shared_ptr<const PasswordHasher> passwords;
  Fetcher* fetcher = nullptr;         // bot, rs
  std::vector<Exporter*> exporters;   // cu
  http::Router* http = nullptr;       // routes for the HTTP port
  // Set by the QM when it runs in this process: URLs of a provider still queued
  // (init_accepted "processing"). Empty when there is no QM here.
  std::function<std::uint64_t(ProviderId)> queued_urls;
  // Set by the QM when it runs in this process: a provider's fetches since the start and
  // its recent rate (the status page's provider page). Empty when there is no QM here.
  std::function<ProviderFetchRate(ProviderId)> provider_fetches;
  // Set by the uns role when it polls sitemaps (sitemap/sitemap_poll.h): a provider's
  // poll state as JSON (null: never polled), and "poll it now" (the admin API's `set
  // --sitemap`). Empty on a node without the uns role.
  std::function<nlohmann::json(ProviderId)> sitemap_poll_state;
  std::function<void(ProviderId)> sitemap_poll_now;
  // Where each machine's content can be read over HTTP (common/content_locator.h):
  // static cu.content_urls entries, plus what the QM here learns from its BOT-Ms.
  ContentLocator* content_locator = nullptr;
  // The TLS contexts (common/tls_config.h); null when no key asks for TLS.
  std::shared_ptr<NodeTls> tls;
  // Where roles of this process link to each other in process (net/local_listeners.h:
  // the QM listens there, a BOT-M of the same lccd connects there). Null when
  // node.in_process_links is off: every link goes over TCP.
  net::LocalListeners* local_listeners = nullptr;
};

class Service {
 public:
  virtual ~Service() = default;
  virtual std::string_view name() const = 0;
  virtual Status start() = 0;
  virtual void stop() = 0;
  // Adds this role's part of GET /status (queues, connections, state).
  virtual void status(nlohmann::json& out) const { (void)out; }
};

using ServicePtr = std::unique_ptr<Service>;

}  // namespace lcc
