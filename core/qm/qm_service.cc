#include "qm/qm_service.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <cstdlib>
#include <future>
#include <mutex>

#include "common/tls_config.h"
#include "lcc/support/journal.h"
#include "qm/botm_server.h"
#include "qm/intake_server.h"
#include "http/admin_api.h"
#include "qm/qm_move_routes.h"
#include "qm/queue_manager.h"

namespace lcc::qm {

namespace asio = boost::asio;

namespace {

// The qm role: the engine on one strand (the store writer), the intake server on
// listen.qm and the BOT-M server on listen.botm. Everything that reaches the engine
// is posted to its strand; /status reads a snapshot refreshed there.
class QmService final : public Service, public BotmLinkHandler {
 public:
  explicit QmService(NodeContext& node) : node_(node), strand_(asio::make_strand(*node.io)) {}

  ~QmService() override {
    if (timer_) node_.clock->cancel(timer_);
  }

  std::string_view name() const override { return "qm"; }

  Status start() override {
    const Config& cfg = *node_.config;
    QmOptions options = QmOptions::fromConfig(cfg);
    const std::string dir = node_.data_dir + "/qm";
    LCC_RETURN_IF_ERROR(node_.env->createDirs(dir, DirOptions{.private_dir = true}));
    auto j = Journal::open(node_.env, dir + "/journal");
    if (!j.isOk()) return j.status().withContext("qm intake journal");
    journal_ = std::move(j).value();

    BotmServerOptions bo = BotmServerOptions::fromConfig(cfg);
    bo.tls = linkListening(node_.tls, node_.clock);
    bo.content_locator = node_.content_locator;  // content URLs the BOT-Ms announce, for the CU
    bo.local_listeners = node_.local_listeners;   // a BOT-M of this lccd links in process
    botm_ = std::make_unique<BotmServer>(*node_.io, bo, *this);

    QmDeps deps;
    deps.queue = node_.queue;
    deps.content = node_.content;
    deps.providers = node_.providers;
    deps.journal = journal_.get();
    deps.clock = node_.clock;
    deps.metrics = node_.metrics;
    deps.botm = botm_.get();
    deps.post = [this](std::function<void()> fn) { asio::post(strand_, std::move(fn)); };
    deps.on_fenced = [](const Status&) {
      // Nothing more may be written, not even at a clean stop (its stores refuse it
      // anyway): exit now, with the code a supervisor can tell apart.
      spdlog::default_logger()->flush();
      std::_Exit(kExitFenced);
    };
    qm_ = std::make_unique<QueueManager>(deps, options);

    IntakeServerOptions io = IntakeServerOptions::fromConfig(cfg);
    io.tls = linkListening(node_.tls, node_.clock);
    io.local_listeners = node_.local_listeners;  // a UNS of this lccd links in process
    intake_ = std::make_unique<IntakeServer>(*node_.io, io, intakeSink());
    qm_->setIntakeListener([this](bool accepting) {
      if (intake_) intake_->setAccepting(accepting);
    });

    // Replay and table rebuild run here, before the io threads start.
    LCC_RETURN_IF_ERROR(qm_->open().withContext("qm"));
    LCC_RETURN_IF_ERROR(intake_->start());
    LCC_RETURN_IF_ERROR(botm_->start());
    if (qm_->overloaded() || qm_->failed()) intake_->setAccepting(false);
    qm_->startTimers();
    refresh(true);
    scheduleRefresh();
    if (node_.http) {
      registerSweepRoute();
      registerMoveRoutes(
          node_, qm_.get(), [this](std::function<void()> fn) { asio::post(strand_, std::move(fn)); },
          [this]() -> bool { return stopping_.load(); });
    }
    spdlog::info("qm: {} URLs queued; UNSes on {} (port {}), BOT-Ms on {} (port {})", qm_->queued(), io.listen,
                 intake_->port(), bo.listen, botm_->port());
    return Status::ok();
  }

  // Every step of a set runs on the QM's strand, in the order the connection made it.
  IntakeSink intakeSink() {
    IntakeSink sink;
    sink.begin = [this](std::uint64_t stream, IntakeHeader h) {
      asio::post(strand_, [this, stream, h = std::move(h)]() mutable { qm_->beginSet(stream, std::move(h)); });
    };
    sink.part = [this](std::uint64_t stream, std::vector<UrlNotice> urls, std::function<void()> taken) {
      asio::post(strand_, [this, stream, urls = std::move(urls), taken = std::move(taken)]() mutable {
        qm_->addSetPart(stream, std::move(urls));
        taken();
      });
    };
    sink.end = [this](std::uint64_t stream, std::uint64_t, IntakeServer::AckFn ack) {
      asio::post(strand_, [this, stream, ack = std::move(ack)]() mutable {
        qm_->endSet(stream, std::move(ack));
        refresh(false);
      });
    };
    sink.abort = [this](std::uint64_t stream) { asio::post(strand_, [this, stream] { qm_->abortSet(stream); }); };
    return sink;
  }

  void stop() override {
    if (!qm_) return;
    stopping_ = true;
    if (timer_) node_.clock->cancel(timer_);
    if (intake_) intake_->stop();
    if (botm_) botm_->stop();
    std::promise<Status> done;
    auto fut = done.get_future();
    asio::post(strand_, [this, &done] {
      qm_->stopTimers();
      done.set_value(qm_->close());
    });
    Status s = fut.wait_for(std::chrono::seconds(60)) == std::future_status::ready
                   ? fut.get()
                   : Status::aborted("the QM strand did not finish in 60 s");
    if (!s.isOk()) spdlog::error("qm: stopping: {}", s.toString());
  }

  void status(nlohmann::json& out) const override {
    std::lock_guard<std::mutex> lk(mu_);
    out = snapshot_;
    if (intake_) {
      out["uns_connections"] = intake_->connections();
      out["listening"] = intake_->listening();
      out["uns_port"] = intake_->port();
      out["uns_local_links"] = intake_->localLinks();
    }
    if (botm_) {
      out["botm_connections"] = botm_->connections();
      out["botm_local_links"] = botm_->localLinks();
      out["botm_port"] = botm_->port();
    }
  }

  std::uint64_t queuedUrls(ProviderId pid) const { return qm_ ? qm_->queued(pid) : 0; }
  ProviderFetchRate fetchRate(ProviderId pid) const {
    return qm_ ? qm_->fetchRate(pid, toUnixMillis(node_.clock->now())) : ProviderFetchRate{};
  }

 private:
  // POST /admin/botm/sweep (`lcc botm sweep`): starts an orphan sweep of every BOT-M
  // link; 202 with the sweep's status. Its progress and the bytes reclaimed are in
  // GET /status → qm.sweep. The admin token and peer rules of core/http/admin_api.h.
  void registerSweepRoute() {
    const std::string token_file = node_.data_dir + "/admin.token";
    const bool remote = node_.config->getBool("http.admin_remote");
    node_.http->add("POST", "/admin/botm/sweep", [this, token_file, remote](const http::Request& req) {
      if (auto refused = http::checkAdminAccess(req, http::readAdminToken(*node_.env, token_file), remote)) {
        return *refused;
      }
      auto done = std::make_shared<std::promise<nlohmann::json>>();
      auto fut = done->get_future();
      asio::post(strand_, [this, done] {
        if (stopping_) return done->set_value(nlohmann::json());
        qm_->sweepBotms();
        refresh(true);
        done->set_value(qm_->sweepStatus());
      });
      if (fut.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        return http::Response::json(503, "{\"error\": \"the QM did not answer in 10 s\"}\n");
      }
      nlohmann::json j = fut.get();
      if (j.is_null()) return http::Response::json(503, "{\"error\": \"the QM is stopping\"}\n");
      return http::Response::json(202, j.dump(2) + "\n");
    });
  }

  // BotmLinkHandler: from connection strands to the engine's.
  void linkUp(LinkId link, const std::string& machine, std::uint64_t capacity) override {
    asio::post(strand_, [this, link, machine, capacity] { qm_->linkUp(link, machine, capacity); });
  }
  void linkCapacity(LinkId link, std::uint64_t capacity) override {
    asio::post(strand_, [this, link, capacity] { qm_->linkCapacity(link, capacity); });
  }
  void linkMachines(LinkId link, const std::vector<std::string>& machines) override {
    asio::post(strand_, [this, link, machines] { qm_->linkMachines(link, machines); });
  }
  void linkDown(LinkId link) override {
    asio::post(strand_, [this, link] { qm_->linkDown(link); });
  }
  // Results that arrive while the engine is busy (a store call a round trip away) wait
  // here and reach it together: one StoreTxn for all of them (group commit).
  void result(LinkId link, const FetchResult& outcome) override {
    {
      std::lock_guard<std::mutex> lk(results_mu_);
      results_.emplace_back(link, outcome);
      if (results_posted_) return;
      results_posted_ = true;
    }
    asio::post(strand_, [this] {
      std::vector<std::pair<LinkId, FetchResult>> batch;
      {
        std::lock_guard<std::mutex> lk(results_mu_);
        batch.swap(results_);
        results_posted_ = false;
      }
      qm_->onResults(batch);
      refresh(false);
    });
  }
  void deleted(LinkId link, std::uint64_t id, bool ok, const std::string& reason) override {
    asio::post(strand_, [this, link, id, ok, reason] { qm_->onDeleted(link, id, ok, reason); });
  }
  void sweepFile(LinkId link, std::uint64_t sweep, const std::string& machine, const std::string& file,
                 std::uint64_t size) override {
    asio::post(strand_, [this, link, sweep, machine, file, size] { qm_->onSweepFile(link, sweep, machine, file, size); });
  }
  void swept(LinkId link, std::uint64_t sweep, const std::string& machine, std::uint64_t files) override {
    asio::post(strand_, [this, link, sweep, machine, files] {
      qm_->onSwept(link, sweep, machine, files);
      refresh(true);
    });
  }

  // On the strand.
  void refresh(bool force) {
    auto now = node_.clock->monoNow();
    if (!force && now - last_refresh_ < Millis(250)) return;
    last_refresh_ = now;
    nlohmann::json j = qm_->status();
    std::lock_guard<std::mutex> lk(mu_);
    snapshot_ = std::move(j);
  }
  void scheduleRefresh() {
    timer_ = node_.clock->schedule(Millis(1000), [this] {
      if (stopping_) return;
      asio::post(strand_, [this] {
        if (stopping_) return;
        refresh(true);
        scheduleRefresh();
      });
    });
  }

  NodeContext& node_;
  asio::strand<asio::io_context::executor_type> strand_;
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<BotmServer> botm_;
  std::unique_ptr<QueueManager> qm_;
  std::unique_ptr<IntakeServer> intake_;
  mutable std::mutex mu_;
  std::mutex results_mu_;  // results_ and results_posted_, from the connection strands
  std::vector<std::pair<LinkId, FetchResult>> results_;
  bool results_posted_ = false;
  nlohmann::json snapshot_ = nlohmann::json::object();
  MonoTime last_refresh_{};
  TimerId timer_ = 0;
  std::atomic<bool> stopping_{false};
};

}  // namespace

Result<ServicePtr> makeQmService(NodeContext& node) {
  if (!node.queue || !node.content || !node.providers) {
    return Status::invalidArgument("the qm role needs the queue, content and provider stores");
  }
  if (!node.io || !node.clock || !node.env || !node.config) return Status::invalidArgument("qm: incomplete node context");
  auto svc = std::make_unique<QmService>(node);
  QmService* raw = svc.get();
  node.queued_urls = [raw](ProviderId pid) { return raw->queuedUrls(pid); };
  node.provider_fetches = [raw](ProviderId pid) { return raw->fetchRate(pid); };
  return ServicePtr(std::move(svc));
}

}  // namespace lcc::qm
