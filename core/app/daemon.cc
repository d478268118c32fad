#include "app/daemon.h"
#include "app/check_env.h"
#include "app/data_dir_lock.h"
#include "app/node_monitor.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/signal_set.hpp>
#include <condition_variable>
#include <mutex>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <thread>

#include "bot/bot_service.h"
#include "botm/botm_service.h"
#include "common/content_locator.h"
#include "common/logging.h"
#include "common/posix_env.h"
#include "common/service.h"
#include "common/system_clock.h"
#include "common/tls_config.h"
#include "lcc/support/time_util.h"
#include "cu/cu_service.h"
#include "cu/peer_source.h"
#include "http/admin_api.h"
#include "http/http_server.h"
#include "net/address_ranges.h"
#include "net/descriptor_budget.h"
#include "net/io_loop.h"
#include "net/local_listeners.h"
#include "qm/qm_service.h"
#include "rs/rs_service.h"
#include "uns/uns_service.h"
#ifdef LCC_HAVE_FRONT
#include "front/front_options.h"
#include "front/front_service.h"
#endif

namespace lcc {
namespace {

const std::vector<std::string> kKnownRoles = {"uns", "qm", "botm", "bot", "cu", "rs", "front"};

// At a stop, how long the roles' last connections may take to close and free their
// sessions before the event loop is stopped anyway.
constexpr std::chrono::milliseconds kStopDrainBound{5000};

struct Needs {
  bool queue = false, content = false, providers = false, fetcher = false, exporters = false;
};

// `threads: 0` (the default): one io thread for a node that only fetches — two io
// threads wake each other at every hand-off of the fetch path (docs/benchmarks.md,
// fetch_bench) — and two otherwise, so that a journal or spool sync on one strand does
// not hold up the other connections.
int ioThreads(const Config& cfg, const std::set<std::string>& roles) {
  const int configured = static_cast<int>(cfg.getInt("threads"));
  if (configured > 0) return configured;
  for (const auto& r : roles) {
    if (r != "botm" && r != "bot") return 2;
  }
  return 1;
}

Needs needsFor(const std::set<std::string>& roles) {
  Needs n;
  n.queue = roles.count("qm");
  n.content = roles.count("qm") || roles.count("cu");
  n.providers = roles.count("uns") || roles.count("qm") || roles.count("rs") || !roles.empty();
  n.fetcher = roles.count("bot") || roles.count("rs") || roles.count("uns");  // uns: IndexNow key files
  n.exporters = roles.count("cu");
  return n;
}

void printProblems(const std::vector<ConfigProblem>& problems) {
  for (const auto& p : problems) std::cerr << p.toString() << "\n";
}

// The stores and plugins of one node, opened in dependency order and closed in reverse.
struct OpenedPlugins {
  PluginPtr<QueueStore> queue;
  PluginPtr<ContentStore> content;
  PluginPtr<ProviderStore> providers;
  PluginPtr<Fetcher> fetcher;
  std::vector<PluginPtr<Exporter>> exporters;

  void close() {
    if (fetcher) fetcher->stop();
    auto report = [](const char* what, Status s) {
      if (!s.isOk()) spdlog::error("closing the {} store: {}", what, s.toString());
    };
    if (queue) report("queue", queue->close());
    if (content) report("content", content->close());
    if (providers) report("provider", providers->close());
  }
};

// Opens every plugin the roles need; problems are collected, not fatal one by one.
bool openPlugins(const Config& cfg, PluginRegistry& reg, const Needs& needs, OpenedPlugins* out,
                 std::vector<ConfigProblem>* problems) {
  const std::size_t before = problems->size();
  auto note = [&](const PluginRef& ref, const Status& s) {
    // Option problems were already added with their key paths.
    if (problems->size() == before || s.code() != StatusCode::kInvalidArgument ||
        s.message() != "plugin options have problems") {
      problems->push_back({cfg.sourceOf(ref.key), ref.key, s.message()});
    }
  };
  auto openOne = [&](auto&& make, const PluginRef& ref, auto* slot) {
    auto r = make(ref);
    if (r.isOk()) {
      *slot = std::move(r).value();
    } else {
      note(ref, r.status());
    }
  };
  if (needs.providers) {
    openOne([&](const PluginRef& r) { return reg.makeProviderStore(cfg, r, problems); },
            cfg.getPlugin("storage.providers"), &out->providers);
  }
  if (needs.content) {
    openOne([&](const PluginRef& r) { return reg.makeContentStore(cfg, r, problems); }, cfg.getPlugin("storage.content"),
            &out->content);
  }
  if (needs.queue) {
    openOne([&](const PluginRef& r) { return reg.makeQueueStore(cfg, r, problems); }, cfg.getPlugin("storage.queue"),
            &out->queue);
  }
  if (needs.fetcher) {
    openOne([&](const PluginRef& r) { return reg.makeFetcher(cfg, r, problems); }, cfg.getPlugin("fetcher"),
            &out->fetcher);
  }
  if (needs.exporters) {
    std::set<std::string> formats;
    for (const auto& ref : cfg.getPluginList("exporters")) {
      PluginPtr<Exporter> e;
      openOne([&](const PluginRef& r) { return reg.makeExporter(cfg, r, problems); }, ref, &e);
      if (e) {
        if (!formats.insert(std::string(e->format())).second) {
          problems->push_back({cfg.sourceOf(ref.key), ref.key, "a second exporter for format " + std::string(e->format())});
        }
        out->exporters.push_back(std::move(e));
      }
    }
  }
  return problems->size() == before;
}

Status ensureAdminToken(Env& env, const std::string& data_dir) {
  const std::string path = data_dir + "/admin.token";
  if (env.exists(path)) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      return Status::invalidArgument(path + ": refused: the admin token must be readable by its owner only (chmod 600)");
    }
    return Status::ok();
  }
  unsigned char raw[24];
  arc4random_buf(raw, sizeof raw);
  static const char* kHex = "0123456789abcdef";
  std::string token;
  for (unsigned char c : raw) {
    token.push_back(kHex[c >> 4]);
    token.push_back(kHex[c & 15]);
  }
  token.push_back('\n');
  mode_t old = ::umask(077);
  Status s = env.writeFileAtomic(path, token);
  ::umask(old);
  LCC_RETURN_IF_ERROR(s);
  ::chmod(path.c_str(), 0600);
  return Status::ok();
}

using ServiceFactory = Result<ServicePtr> (*)(NodeContext&);

ServiceFactory factoryFor(const std::string& role) {
  if (role == "qm") return &qm::makeQmService;
  if (role == "botm") return &botm::makeBotmService;
  if (role == "bot") return &bot::makeBotService;
  if (role == "uns") return &uns::makeUnsService;
  if (role == "cu") return &cu::makeCuService;
  if (role == "rs") return &rs::makeRsService;
#ifdef LCC_HAVE_FRONT
  if (role == "front") return &front::makeFrontService;
#else
  if (role == "front") {
    return [](NodeContext&) -> Result<ServicePtr> {
      return Status::notSupported("this lccd was built without libpq: no front role");
    };
  }
#endif
  return nullptr;
}

// Start order: the QM listens before BOT-Ms and UNSes connect; robots after BOT-M.
const std::vector<std::string> kStartOrder = {"qm", "botm", "bot", "uns", "cu", "rs", "front"};

// `environment`: also bind the listen addresses and test node.data_dir (not --config-only).
int checkOnly(const Config& cfg, const std::set<std::string>& roles, bool environment) {
  // Instantiate every plugin against a scratch data folder, so that a plugin whose
  // factory fails or throws is caught here and not at start.
  char tmpl[] = "/tmp/lccd-check-XXXXXX";
  const char* scratch = ::mkdtemp(tmpl);
  if (scratch == nullptr) {
    std::cerr << "lccd: cannot make a scratch folder for --check\n";
    return 1;
  }
  SystemClock clock;
  HostContext host{&clock, posixEnv(), pluginLogger("check"), scratch, cfg.getString("node.machine_id"), true};
  PluginRegistry reg(cfg.getString("storage.plugin_dir"), host);
  std::vector<ConfigProblem> problems;
  OpenedPlugins opened;
  Needs needs = needsFor(roles);
  needs.fetcher = needs.fetcher || roles.count("bot");
  openPlugins(cfg, reg, needs, &opened, &problems);
  opened.close();
  std::error_code ec;
  std::filesystem::remove_all(scratch, ec);
  std::vector<std::string> notes;
  checkObjectStore(cfg, roles, &problems);
  if (environment) checkEnvironment(cfg, roles, &problems, &notes);  // the ports free, node.data_dir writable
  if (!problems.empty()) {
    printProblems(problems);
    return 2;
  }
  std::cout << cfg.file() << ": configuration is valid\n";
  for (const auto& n : notes) std::cout << n << "\n";
  std::cout << "data_dir: " << Config::absolutePath(cfg.getString("node.data_dir"))
            << "  machine_id: " << cfg.getString("node.machine_id") << "\n";
  std::cout << "roles:";
  for (const auto& r : kStartOrder) {
    if (roles.count(r)) std::cout << " " << r;
  }
  std::cout << "\n";
  for (const auto& [key, name] : listenKeys()) {
    if (!key.empty() && !roles.count(key)) continue;
    const std::string v = cfg.getString(name);
    std::cout << "listen " << name.substr(7) << ": " << (v.empty() ? "off" : v) << "\n";
  }
  for (const auto* p : reg.loaded()) {
    std::cout << "plugin " << p->name << " " << (p->descriptor->version ? p->descriptor->version : "?") << ": "
              << p->path << "\n";
  }
  return 0;
}

// What the config says beyond each key's own checks (the schema's): the roles, the
// cross-key rules, the content URLs, the ports that may not be off, and TLS.
struct NodePlan {
  std::set<std::string> roles;
  std::map<std::string, std::string> static_content_urls;  // cu.content_urls
  std::shared_ptr<NodeTls> tls;
};

// The front role (core/front): its own keys, and the CP port it takes from the uns role.
void checkFrontRole(const Config& cfg, const std::set<std::string>& roles, std::vector<ConfigProblem>* problems) {
  if (!roles.count("front")) return;
  if (roles.count("uns")) {
    problems->push_back({cfg.sourceOf("roles"), "roles", "front and uns both take listen.uns: run one of them"});
  }
#ifdef LCC_HAVE_FRONT
  auto o = front::FrontOptions::fromConfig(cfg);
  if (o.isOk()) return;
  std::istringstream lines(o.status().message());
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(": ");
    const std::string key = line.substr(0, colon);
    problems->push_back({cfg.sourceOf(key), key, line.substr(colon + 2)});
  }
#else
  problems->push_back({cfg.sourceOf("roles"), "roles", "this lccd was built without libpq: no front role"});
#endif
}

NodePlan planNode(const Config& cfg, std::vector<ConfigProblem>* problems) {
  NodePlan plan;
  for (const auto& r : cfg.getList("roles")) {
    if (std::find(kKnownRoles.begin(), kKnownRoles.end(), r) == kKnownRoles.end()) {
      problems->push_back({cfg.sourceOf("roles"), "roles", "unknown role " + r + " (known: uns, qm, botm, bot, cu, rs, front)"});
    }
    plan.roles.insert(r);
  }
  if (cfg.getInt("qm.queue_low") >= cfg.getInt("qm.queue_high")) {
    problems->push_back({cfg.sourceOf("qm.queue_low"), "qm.queue_low", "must be below qm.queue_high (got " +
                                                         std::to_string(cfg.getInt("qm.queue_low")) + ")"});
  }
  // Content reads across machines (docs/configuration.md): cu.content_urls, botm.content_url.
  std::vector<std::string> url_problems;
  plan.static_content_urls = parseContentUrls(cfg.getList("cu.content_urls"), &url_problems);
  for (const auto& why : url_problems) problems->push_back({cfg.sourceOf("cu.content_urls"), "cu.content_urls", why});
  std::vector<std::string> peer_problems;  // cu.peers: URLs, at most cu::kMaxCuPeers (merged_query.h)
  (void)cu::parsePeerUrls(cfg.getList("cu.peers"), &peer_problems);
  for (const auto& why : peer_problems) problems->push_back({cfg.sourceOf("cu.peers"), "cu.peers", why});
  if (auto u = botm::contentUrlFromConfig(cfg, true); !u.isOk()) {
    problems->push_back({cfg.sourceOf("botm.content_url"), "botm.content_url", u.status().message()});
  }
  // Only the ports for people's clients may be off ("").
  for (const char* key : {"listen.qm", "listen.botm", "listen.robots"}) {
    if (cfg.getString(key).empty()) problems->push_back({cfg.sourceOf(key), key, "cannot be off (empty): other roles connect here"});
  }
  plan.tls = NodeTls::fromConfig(cfg, problems);  // tls.*, listen.*_tls, tls:// links
  checkFrontRole(cfg, plan.roles, problems);
  if (auto r = net::AddressRanges::parse(cfg.getList("uns.trusted_proxies")); !r.isOk()) {
    problems->push_back({cfg.sourceOf("uns.trusted_proxies"), "uns.trusted_proxies", r.status().message()});
  }
  return plan;
}

// Logging, the descriptor reserve, node.data_dir (writable, and locked for this process
// in `*lock`) and its admin token. 0, or the exit code (logged): 1, or kExitDataDirInUse.
int prepareNode(const Config& cfg, Env& env, const std::string& data_dir, DataDirLock* lock) {
  if (Status s = initLogging(cfg.getString("log.level"), cfg.getString("log.file")); !s.isOk()) {
    std::cerr << "lccd: " << s.message() << "\n";
    return 1;
  }
  // Every port refuses a connection when fewer than this would be left (issue 25).
  auto& budget = net::DescriptorBudget::process();
  const std::size_t reserve = budget.setReserve(static_cast<std::size_t>(cfg.getInt("net.reserved_descriptors")));
  spdlog::info("net: {} descriptors (RLIMIT_NOFILE), {} kept for the stores", budget.limit(), reserve);
  if (Status s = checkDataDirWritable(data_dir); !s.isOk()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  if (Status s = env.createDirs(data_dir, DirOptions{.private_dir = true}); !s.isOk()) {
    spdlog::error("node.data_dir: {}", s.message());
    return 1;
  }
  // Before any store opens its files: a second lccd here is told who holds the folder.
  SystemClock clock;
  auto locked = DataDirLock::acquire(data_dir, formatRfc3339(clock.now()), Config::absolutePath(cfg.file()));
  if (!locked.isOk()) {
    spdlog::error("{}", locked.status().message());
    return locked.status().isBusy() ? kExitDataDirInUse : 1;
  }
  *lock = std::move(locked).value();
  if (Status s = ensureAdminToken(env, data_dir); !s.isOk()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  return 0;
}

void warnUncleanStores(const OpenedPlugins& opened) {
  for (const auto* s : std::initializer_list<const StoreOpenInfo*>{
           opened.queue ? &opened.queue->openInfo() : nullptr, opened.content ? &opened.content->openInfo() : nullptr,
           opened.providers ? &opened.providers->openInfo() : nullptr}) {
    if (s && !s->clean_shutdown) spdlog::warn("{} store was not closed cleanly; recovering", s->engine);
  }
}

// The stores, plugins and password hasher into `node` (its io, clock, metrics, ... are set).
Status fillNode(NodeContext& node, const Config& cfg, const NodePlan& plan, OpenedPlugins& opened) {
  if (plan.roles.count("uns") || plan.roles.count("rs") || opened.providers) {
    auto cost = parseHashCost(cfg.getString("uns.password_hash_ops"));  // a kEnum key: checked at load
    auto hasher = cost.isOk() ? PasswordHasher::open(*node.env, node.data_dir + "/auth.key", cost.value())
                              : Result<std::unique_ptr<PasswordHasher>>(cost.status());
    if (!hasher.isOk()) return hasher.status();
    node.passwords = std::move(hasher).value();
  }
  node.queue = opened.queue.get();
  node.content = opened.content.get();
  node.providers = opened.providers.get();
  node.fetcher = opened.fetcher.get();
  for (auto& e : opened.exporters) node.exporters.push_back(e.get());
  if (plan.tls && plan.tls->any()) node.tls = plan.tls;
  return Status::ok();
}

// Makes the roles' services in start order; on a failure stops the ones made and returns false.
bool makeServices(NodeContext& node, const std::set<std::string>& roles, std::vector<ServicePtr>* services) {
  for (const auto& role : kStartOrder) {
    if (!roles.count(role)) continue;
    auto made = factoryFor(role)(node);
    if (!made.isOk()) {
      spdlog::error("role {}: {}", role, made.status().message());
      for (auto it = services->rbegin(); it != services->rend(); ++it) (*it)->stop();
      return false;
    }
    services->push_back(std::move(made).value());
  }
  return true;
}

// GET /status and GET /metrics.
void addStatusRoutes(http::Router& router, const Config& cfg, const NodeContext& node,
                     const std::vector<ServicePtr>& services, Metrics& metrics) {
  router.add("GET", "/status", [&](const http::Request&) {
    nlohmann::json j;
    j["machine_id"] = node.machine_id;
    j["roles"] = cfg.getList("roles");
    for (const auto& s : services) s->status(j[std::string(s->name())]);
    j["counters"] = metrics.snapshot();
    return http::Response::json(200, j.dump(2) + "\n");
  });
  router.add("GET", "/metrics", [&](const http::Request&) {
    http::Response r = http::Response::text(200, metrics.prometheusText());
    r.content_type = "text/plain; version=0.0.4";
    return r;
  });
}

// Starts the roles, then the HTTP and HTTPS ports ("" listen: off); 0 or 1.
int startAll(const std::vector<ServicePtr>& services, http::Server& http_server, const std::string& http_listen,
             http::Server& https_server, const std::string& https_listen) {
  for (auto& s : services) {
    if (Status st = s->start(); !st.isOk()) {
      spdlog::error("role {}: cannot start: {}", s->name(), st.message());
      return 1;
    }
    spdlog::info("role {} started", s->name());
  }
  int rc = 0;
  for (auto [server, what, listen] : {std::tuple{&http_server, "http", http_listen},
                                      std::tuple{&https_server, "https", https_listen}}) {
    if (rc != 0 || listen.empty()) continue;  // "": that port is off
    if (Status st = server->start(); !st.isOk()) {
      spdlog::error("{}: cannot start on {}: {}", what, listen, st.message());
      rc = 1;
    } else {
      spdlog::info("{} listening on {}", what, listen);
    }
  }
  return rc;
}

// Runs `io` on `nthreads` threads. When `serve`, calls `on_ready` and waits for SIGINT or
// SIGTERM (SIGHUP reopens the log and reloads the TLS certificates); then calls `stop`
// (the ports and roles), lets the loop drain and joins the threads.
void runIo(boost::asio::io_context& io, int nthreads, const std::shared_ptr<NodeTls>& tls, bool serve,
           const std::function<void()>& on_ready, const std::function<void()>& stop) {
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  auto guard = boost::asio::make_work_guard(io);
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stop_requested = false;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& ec, int sig) {
        if (ec) return;
        if (sig == SIGHUP) {
          reopenLogs();
          spdlog::info("SIGHUP: log reopened");
          if (tls) {
            // New connections take the new certificates; open ones keep theirs.
            if (Status st = tls->reload(); st.isOk()) {
              spdlog::info("SIGHUP: TLS certificates reloaded");
            } else {
              spdlog::error("SIGHUP: TLS certificates not reloaded, the old ones stay: {}", st.message());
            }
          }
          signals.async_wait(on_signal);
          return;
        }
        spdlog::info("{}: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        notifyStopping();
        std::lock_guard<std::mutex> lock(stop_mu);
        stop_requested = true;
        stop_cv.notify_all();
      };
  signals.async_wait(on_signal);

  std::vector<std::thread> threads;
  for (int i = 0; i < nthreads; ++i) {
    threads.emplace_back([&io] {
      ::pthread_setname_np(::pthread_self(), "lccd-io");  // top -H, perf, gdb
      io.run();
    });
  }
  if (serve) {
    on_ready();
    std::unique_lock<std::mutex> lock(stop_mu);
    stop_cv.wait(lock, [&] { return stop_requested; });
  }
  stop();
  signals.cancel();
  guard.reset();
  if (!net::stopWhenDry(io, kStopDrainBound)) {
    spdlog::warn("stop: the event loop still had work {} s after the roles stopped; stopped it",
                 std::chrono::duration_cast<std::chrono::seconds>(kStopDrainBound).count());
  }
  for (auto& t : threads) t.join();
}

// The roles and the HTTP ports on `io`, until a signal stops them; the exit code.
// `*ran` is false when a role could not even be made (nothing was started).
// Destruction order matters: what this function makes (io, router, node, services,
// servers) goes before the caller's registry and stores (docs/architecture.md, "The plugin boundary").
int serveNode(const Config& cfg, const NodePlan& plan, NodeContext& node, Metrics& metrics, bool* ran) {
  // The hint is the number of threads that run it (`threads`): with one, Asio queues
  // what a handler posts without locking or waking anyone.
  const int nthreads = ioThreads(cfg, plan.roles);
  boost::asio::io_context io(nthreads);
  http::Router router;
  ContentLocator content_locator;
  content_locator.setStatic(plan.static_content_urls);
  node.io = &io;
  node.http = &router;
  node.content_locator = &content_locator;
  // Roles of this lccd that link to each other do so in process (issue 28), unless
  // node.in_process_links is off: then over loopback TCP, as a split deployment does.
  std::optional<net::LocalListeners> local_listeners;
  if (cfg.getBool("node.in_process_links")) {
    local_listeners.emplace(io, net::LocalLinkOptions{static_cast<std::size_t>(cfg.getInt("node.in_process_queue"))});
    node.local_listeners = &*local_listeners;
  }
  std::vector<ServicePtr> services;
  if (!makeServices(node, plan.roles, &services)) return 1;
  *ran = true;
  addStatusRoutes(router, cfg, node, services, metrics);
  // The last hour of samples, one every 10 s, for the charts of GET / (node_monitor.h).
  SampleRing samples(360);
  NodeMonitor monitor(*node.clock, metrics, samples, Millis(10000));
  monitor.trimHeapAbove(static_cast<std::uint64_t>(cfg.getInt("node.heap_trim_threshold")), metrics);
  http::registerNodeRoutes(node, &samples);  // GET / and the /admin/ API (core/http/admin_api.h)

  http::ServerOptions hopts = http::ServerOptions::fromConfig(cfg, &metrics);  // listen.http, http.*
  http::Server http_server(io, router, hopts);
  http::ServerOptions sopts = hopts;  // listen.https: the same pages over TLS
  sopts.listen = cfg.getString("listen.https");
  if (node.tls) sopts.tls = node.tls->server();
  http::Server https_server(io, router, sopts);

  const int rc = startAll(services, http_server, hopts.listen, https_server, sopts.listen);
  auto on_ready = [&] {
    spdlog::info("lccd ready: roles {}, data in {}", fmt::join(cfg.getList("roles"), ","), node.data_dir);
    monitor.start();  // the first sample, then one every 10 s with STATUS= to systemd
    notifyReady(statusLine(sampleFromMetrics(toUnixMillis(node.clock->now()), metrics.snapshot())));
  };
  auto stop = [&] {
    monitor.stop();
    http_server.stop();
    https_server.stop();
    for (auto it = services.rbegin(); it != services.rend(); ++it) {
      (*it)->stop();
      spdlog::info("role {} stopped", (*it)->name());
    }
  };
  runIo(io, nthreads, node.tls, rc == 0, on_ready, stop);
  services.clear();
  return rc;
}

// Opens the node's stores and plugins, serves, and closes them; the exit code.
int runNode(const Config& cfg, const NodePlan& plan) {
  Env* env = posixEnv();
  const std::string data_dir = Config::absolutePath(cfg.getString("node.data_dir"));
  DataDirLock data_dir_lock;  // held until lccd returns, after every store is closed
  if (const int rc = prepareNode(cfg, *env, data_dir, &data_dir_lock); rc != 0) return rc;
  // The registry (and so every plugin library) outlives every plugin object, and the
  // io_context and its threads (serveNode).
  SystemClock clock;
  HostContext host{&clock, env, nullptr, data_dir, cfg.getString("node.machine_id")};
  host.logger = pluginLogger("plugin");
  PluginRegistry registry(cfg.getString("storage.plugin_dir"), host);
  OpenedPlugins opened;
  std::vector<ConfigProblem> problems;
  if (!openPlugins(cfg, registry, needsFor(plan.roles), &opened, &problems)) {
    for (const auto& p : problems) spdlog::error("{}", p.toString());
    opened.close();
    return 2;
  }
  warnUncleanStores(opened);
  Metrics metrics;
  NodeContext node;
  node.config = &cfg;
  node.plugins = &registry;
  node.clock = &clock;
  node.env = env;
  node.metrics = &metrics;
  node.data_dir = data_dir;
  node.machine_id = cfg.getString("node.machine_id");
  if (Status s = fillNode(node, cfg, plan, opened); !s.isOk()) {
    spdlog::error("{}", s.message());
    opened.close();
    return 2;
  }
  bool ran = false;
  const int rc = serveNode(cfg, plan, node, metrics, &ran);
  opened.close();
  if (ran) spdlog::info("lccd stopped");
  return rc;
}

}  // namespace

int runDaemon(const DaemonArgs& args) {
  if (args.print_defaults) {
    std::cout << Config::describeDefaults();
    return 0;
  }
  // Each key is checked by the schema as the file loads (enum keys too: log.level,
  // fetch.redirects, ...); planNode() checks what spans keys.
  std::vector<ConfigProblem> problems;
  auto loaded = Config::load(args.config_file, args.overrides, &problems);
  if (!loaded.isOk()) {
    printProblems(problems);
    return 2;
  }
  const Config& cfg = loaded.value();
  const NodePlan plan = planNode(cfg, &problems);
  if (!problems.empty()) {
    printProblems(problems);
    return 2;
  }
  if (args.print_config) {
    std::cout << cfg.dump();
    return 0;
  }
  if (args.check) return checkOnly(cfg, plan.roles, !args.config_only);
  return runNode(cfg, plan);
}

}  // namespace lcc
