#include "front/front_service.h"

#include <pthread.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <spdlog/spdlog.h>
#include <thread>

#include "common/tls_config.h"
#include "front/front_core.h"
#include "front/relay.h"
#include "http/admin_api.h"

namespace lcc::front {
namespace {

using http::Request;
using http::Response;

class FrontService final : public Service {
 public:
  FrontService(NodeContext& node, std::unique_ptr<FrontCore> core)
      : node_(node), core_(std::move(core)), relay_(*node.io, *core_, node.clock, node.metrics) {
    addRoutes();
  }
  ~FrontService() override { stop(); }

  std::string_view name() const override { return "front"; }

  Status start() override {
    core_->refreshLoads();  // bounded: front.request_timeout per sub-LCC
    LCC_RETURN_IF_ERROR(relay_.start());
    refresher_ = std::thread([this] {
      periodic("lcc-front-load", [this] {
        core_->refreshLoads();
        core_->cleanPending();
      });
    });
    // Moves on their own thread: a drain may wait front.move_wait, longer than loads may go unread.
    mover_ = std::thread([this] { periodic("lcc-front-move", [this] { core_->resumeMoves(); }); });
    return Status::ok();
  }

  void stop() override {
    {
      std::lock_guard<std::mutex> lock(wake_->mu);
      if (wake_->stopping) return;
      wake_->stopping = true;
    }
    wake_->cv.notify_all();
    if (refresher_.joinable()) refresher_.join();
    if (mover_.joinable()) mover_.join();
    relay_.stop();
  }

  void status(nlohmann::json& out) const override {
    core_->status(out);
    relay_.status(out["cp_port"]);
  }

 private:
  // Registered before the node's own /admin/ routes (core/http/admin_api.h): for the
  // same path the router takes the first, so provider calls here are the front end's.
  void addRoutes() {
    if (node_.http == nullptr) return;
    auto guarded = [this](auto fn) {
      return [this, fn](const Request& req) -> Response {
        const std::string token = http::readAdminToken(*node_.env, node_.data_dir + "/admin.token");
        if (auto refused = http::checkAdminAccess(req, token, node_.config->getBool("http.admin_remote"))) {
          return *refused;
        }
        return fn(req);
      };
    };
    FrontCore* core = core_.get();
    node_.http->add("POST", "/admin/providers", guarded([core](const Request& r) { return core->addProvider(r); }));
    node_.http->add("GET", "/admin/providers", guarded([core](const Request&) { return core->listProviders(); }));
    for (const char* method : {"GET", "POST", "PATCH", "DELETE"}) {
      node_.http->add(method, "/admin/providers/", guarded([core](const Request& r) { return core->forward(r); }));
    }
    node_.http->add("GET", "/admin/slots", guarded([core](const Request&) { return core->listSlots(); }));
    node_.http->add("POST", "/admin/slots/", guarded([core](const Request& r) { return core->moveSlot(r); }));
  }

  // Runs `fn` every front.refresh_interval on the node's Clock until stop().
  void periodic(const char* thread_name, const std::function<void()>& fn) {
    ::pthread_setname_np(::pthread_self(), thread_name);
    auto ticks = std::make_shared<std::uint64_t>(0);  // this loop's timer ticks (under wake_->mu)
    std::unique_lock<std::mutex> lock(wake_->mu);
    while (!wake_->stopping) {
      const std::uint64_t seen = *ticks;
      // The wait is timed on the node's Clock; the timer holds the Wake, not the service.
      node_.clock->schedule(core_->options().refresh_interval, [w = wake_, ticks] {
        std::lock_guard<std::mutex> l(w->mu);
        ++*ticks;
        w->cv.notify_all();
      });
      wake_->cv.wait(lock, [this, seen, &ticks] { return *ticks != seen || wake_->stopping; });
      if (wake_->stopping) break;
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  struct Wake {
    std::mutex mu;
    std::condition_variable cv;
    bool stopping = false;
  };

  NodeContext& node_;
  std::unique_ptr<FrontCore> core_;
  FrontRelay relay_;
  std::thread refresher_;
  std::thread mover_;
  std::shared_ptr<Wake> wake_ = std::make_shared<Wake>();
};

}  // namespace

Result<ServicePtr> makeFrontService(NodeContext& node) {
  auto opt = FrontOptions::fromConfig(*node.config);
  if (!opt.isOk()) return opt.status();
  FrontOptions o = std::move(opt).value();
  if (node.tls) {
    o.tls = node.tls->server();
    o.handshake_timeout = node.tls->handshakeTimeout();
  }
  // uns=tls:// and admin=https:// without ca=: the node's client context
  // (tls.peer_ca_file, else the system's CAs; reloaded on SIGHUP).
  for (auto& l : o.lccs) {
    if (l.wantsTls() && !l.tls) l.tls = node.tls ? node.tls->contentClient() : nullptr;
    if (l.wantsTls() && !l.tls) return Status::invalidArgument("front.lccs: " + l.name + ": no TLS client context");
  }
  auto db = FrontDb::open(o);
  if (!db.isOk() && db.status().message().rfind("front.slots:", 0) == 0) {  // front.slots against the directory
    return Status::invalidArgument(node.config->sourceOf("front.slots") + ": " + db.status().message());
  }
  if (!db.isOk()) return db.status();
  auto core = std::make_unique<FrontCore>(std::move(o), std::move(db).value(), node.env, node.clock);
  return ServicePtr(std::make_unique<FrontService>(node, std::move(core)));
}

}  // namespace lcc::front
