// uns_service.cc — the Asio side of the UNS: accepts CPs on listen.uns, one strand
// per connection, carries bytes between the socket and a SessionPolicy, runs the
// idle/session timers, and hands sets to the Forwarder. Decisions live in
// session_policy.cc, uns_core.cc and forwarder.cc.
#include "uns/uns_service.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <future>
#include <mutex>
#include <set>
#include <spdlog/spdlog.h>

#include "uns/forwarder.h"
#include "uns/uns_core.h"

namespace lcc::uns {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxPendingOutput = 1u << 20;  // stop reading while this much waits to be written
constexpr std::size_t kMaxPendingInput = 1u << 20;

struct Shared {
  UnsOptions opt;
  UnsCore* core = nullptr;
  Forwarder* fwd = nullptr;
  asio::thread_pool* auth_pool = nullptr;
  Counter* c_sessions = nullptr;
  Counter* c_rejected = nullptr;
  Counter* c_accepted = nullptr;
  Counter* c_timeouts = nullptr;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket sock, const Shared& shared)
      : sh_(shared),
        strand_(asio::make_strand(sock.get_executor())),
        sock_(std::move(sock)),
        policy_(shared.opt.session),
        idle_(strand_),
        deadline_(strand_) {
    boost::system::error_code ec;
    auto ep = sock_.remote_endpoint(ec);
    ip_ = ec ? std::string("?") : ep.address().to_string();
  }

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->begin(); });
  }

  void shutdownNow() {
    asio::post(strand_, [self = shared_from_this()] { self->closeNow(); });
  }

 private:
  void begin() {
    if (sh_.c_sessions) sh_.c_sessions->inc();
    ErrorCode admit = sh_.core->admit(ip_);
    if (admit != ErrorCode::kNone) {
      policy_.refuse(admit, "too many connections");
    } else {
      admitted_ = true;
      if (sh_.fwd->spoolFull()) policy_.refuse(ErrorCode::kOffline, "system temporarily off-line, try again later");
    }
    deadline_.expires_after(std::chrono::milliseconds(sh_.opt.session_timeout_ms));
    deadline_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      // While we keep the CP waiting (password check, QM ack) the deadline is not its
      // fault; it applies as soon as we wait for the CP again (see drive()).
      self->deadline_passed_ = true;
      self->drive();
    });
    drive();
  }

  void consume() {
    if (pending_in_.empty()) return;
    std::size_t used = policy_.onData(pending_in_.data(), pending_in_.size());
    pending_in_.erase(0, used);
  }

  // Carries out whatever the policy asks for; called after every event.
  void drive() {
    if (closed_) return;
    if (auto out = policy_.takeOutput(); !out.empty()) {
      out_bytes_ += out.size();
      wq_.push_back(std::move(out));
      if (!writing_) writeNext();
    }
    if (auto wa = policy_.takeWrittenAction()) written_actions_.push_back(std::move(*wa));
    if (auto req = policy_.takeAuthRequest()) {
      asio::post(*sh_.auth_pool, [self = shared_from_this(), req = std::move(*req)] {
        AuthResult r = self->sh_.core->authenticate(req, self->ip_);
        asio::post(self->strand_, [self, r = std::move(r)]() mutable {
          if (r.code == ErrorCode::kNone) self->provider_slot_ = r.pid;
          if (self->closed_) {
            self->releaseProvider();
            return;
          }
          if (r.code != ErrorCode::kNone) spdlog::info("uns: {}: init refused: {} {}", self->ip_, static_cast<int>(r.code), r.message);
          self->policy_.onAuthenticated(std::move(r));
          self->consume();
          self->drive();
        });
      });
    }
    if (auto sub = policy_.takeSubmission()) {
      const ProviderId pid = sub->pid;
      const SetKind kind = sub->kind;
      const bool wanted = sub->fullset_wanted;
      sh_.fwd->submit(std::move(*sub), [self = shared_from_this(), pid, kind, wanted](const SetOutcome& o) {
        asio::post(self->strand_, [self, o, pid, kind, wanted] {
          SetOutcome outcome = o;
          if (outcome.accepted) {
            if (Status s = self->sh_.core->setAccepted(pid, kind, wanted); !s.isOk()) {
              spdlog::warn("uns: provider {}: recording the full set failed: {}", pid, s.toString());
            }
          }
          self->policy_.onSetOutcome(outcome);
          self->drive();
        });
      });
    }
    if (eof_ && !eof_delivered_ && policy_.waitingForCp()) {
      eof_delivered_ = true;
      policy_.onEof();
      return drive();
    }
    if (policy_.finished()) {
      idle_.cancel();
      deadline_.cancel();
      if (!ended_) {
        ended_ = true;
        if (policy_.endCode() != ErrorCode::kNone && sh_.c_rejected) sh_.c_rejected->inc();
        if (policy_.endCode() == ErrorCode::kNone && policy_.received() > 0 && sh_.c_accepted) sh_.c_accepted->inc();
      }
      if (!writing_ && wq_.empty()) lingerClose();
      return;
    }
    if (deadline_passed_ && policy_.waitingForCp()) {
      if (sh_.c_timeouts) sh_.c_timeouts->inc();
      policy_.onTimeout(true);
      return drive();
    }
    // Idle timer: only while the CP owes us bytes. Reading goes on while the password
    // is checked, so that what a CP sent right behind its init is here when it is needed.
    const bool backlog = out_bytes_ - written_ > kMaxPendingOutput || pending_in_.size() > kMaxPendingInput;
    const bool want_bytes =
        policy_.waitingForCp() || policy_.state() == SessionPolicy::State::kAuthenticating;
    if (want_bytes && !reading_ && !backlog && !eof_) readSome();
    if (policy_.waitingForCp()) {
      if (!idle_armed_) armIdle();
    } else {
      idle_.cancel();
      idle_armed_ = false;
    }
  }

  void armIdle() {
    idle_armed_ = true;
    idle_.expires_after(std::chrono::milliseconds(sh_.opt.idle_timeout_ms));
    idle_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->closed_) return;
      self->idle_armed_ = false;
      if (!self->policy_.waitingForCp()) return;
      if (self->sh_.c_timeouts) self->sh_.c_timeouts->inc();
      self->policy_.onTimeout(false);
      self->drive();
    });
  }

  void readSome() {
    reading_ = true;
    sock_.async_read_some(asio::buffer(rbuf_), asio::bind_executor(strand_, [self = shared_from_this()](
                                                                               const boost::system::error_code& ec,
                                                                               std::size_t n) {
      self->reading_ = false;
      if (self->closed_) return;
      if (ec) {
        if (self->lingering_) return self->closeNow();
        self->eof_ = true;  // delivered to the policy once it waits for the CP (drive)
        if (ec != asio::error::eof) self->peer_gone_ = true;
        self->drive();
        return;
      }
      if (self->lingering_) return self->lingerRead();  // discard
      // Data resets the idle timer.
      self->idle_armed_ = false;
      self->idle_.cancel();
      self->pending_in_.append(self->rbuf_.data(), n);
      self->consume();
      self->drive();
    }));
  }

  void writeNext() {
    if (wq_.empty() || closed_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    asio::async_write(sock_, asio::buffer(wq_.front()),
                      asio::bind_executor(strand_, [self = shared_from_this()](const boost::system::error_code& ec,
                                                                               std::size_t n) {
                        self->writing_ = false;
                        if (self->closed_) return;
                        if (ec) return self->closeNow();
                        self->written_ += n;
                        self->wq_.pop_front();
                        while (!self->written_actions_.empty() && self->written_actions_.front().first <= self->written_) {
                          auto a = std::move(self->written_actions_.front().second);
                          self->written_actions_.pop_front();
                          if (Status s = self->sh_.core->clearReportedErrors(a); !s.isOk()) {
                            spdlog::warn("uns: provider {}: clearing reported errors failed: {}", a.pid, s.toString());
                          }
                        }
                        if (!self->wq_.empty()) return self->writeNext();
                        self->drive();
                      }));
  }

  // The reply is written: stop sending, then read and drop what the CP still sends
  // until it closes (or a short while passes), so that closing does not reset the
  // connection before the CP has read our reply.
  void lingerClose() {
    if (lingering_ || closed_) return;
    lingering_ = true;
    boost::system::error_code ignored;
    sock_.shutdown(tcp::socket::shutdown_send, ignored);
    if (peer_gone_ || eof_) return closeNow();  // nothing unread can be left behind
    idle_.cancel();
    idle_.expires_after(std::chrono::milliseconds(std::min<std::int64_t>(sh_.opt.idle_timeout_ms, 2000)));
    idle_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) self->closeNow();
    });
    lingerRead();
  }

  void lingerRead() {
    if (reading_) return;
    readSome();
  }

  void releaseProvider() {
    if (provider_slot_ != 0) {
      sh_.core->releaseProvider(provider_slot_);
      provider_slot_ = 0;
    }
  }

  void closeNow() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    sock_.close(ignored);
    idle_.cancel();
    deadline_.cancel();
    if (admitted_) sh_.core->release(ip_);
    admitted_ = false;
    releaseProvider();
  }

  Shared sh_;
  asio::strand<asio::any_io_executor> strand_;
  tcp::socket sock_;
  SessionPolicy policy_;
  asio::steady_timer idle_, deadline_;
  std::string ip_;
  std::array<char, 16384> rbuf_{};
  std::string pending_in_;
  std::deque<std::string> wq_;
  std::deque<std::pair<std::uint64_t, WrittenAction>> written_actions_;
  std::uint64_t out_bytes_ = 0, written_ = 0;
  ProviderId provider_slot_ = 0;
  bool admitted_ = false, reading_ = false, writing_ = false, idle_armed_ = false;
  bool lingering_ = false, closed_ = false, ended_ = false, peer_gone_ = false, deadline_passed_ = false;
  bool eof_ = false, eof_delivered_ = false;
};

}  // namespace

struct UnsServer::Impl {
  Impl(asio::io_context& io_, UnsOptions o, ProviderStore* providers, Clock* clock, Env* env, Metrics* metrics_,
       std::function<std::uint64_t(ProviderId)> queued)
      : io(io_), opt(std::move(o)), metrics(metrics_), acceptor(asio::make_strand(io_)), auth_pool(2) {
    std::function<std::uint64_t()> free_space;
    if (env && !opt.forwarder.spool_dir.empty()) {
      free_space = [env, dir = opt.forwarder.spool_dir]() -> std::uint64_t {
        auto r = env->freeSpace(dir);
        return r.isOk() ? r.value() : UINT64_MAX;
      };
    }
    core = std::make_unique<UnsCore>(opt.core, providers, clock, std::move(queued), std::move(free_space));
    fwd = std::make_unique<Forwarder>(io, env, opt.forwarder, metrics);
    shared.opt = opt;
    shared.core = core.get();
    shared.fwd = fwd.get();
    shared.auth_pool = &auth_pool;
    if (metrics) {
      shared.c_sessions = &metrics->counter("lcc_uns_connections_total", "CP connections accepted");
      shared.c_rejected = &metrics->counter("lcc_uns_sessions_refused_total", "CP sessions ended with an error code");
      shared.c_accepted = &metrics->counter("lcc_uns_sets_accepted_total", "sets answered set_accepted");
      shared.c_timeouts = &metrics->counter("lcc_uns_timeouts_total", "CP sessions timed out (133)");
    }
  }

  asio::io_context& io;
  UnsOptions opt;
  Metrics* metrics;
  std::unique_ptr<UnsCore> core;
  std::unique_ptr<Forwarder> fwd;
  tcp::acceptor acceptor;
  asio::thread_pool auth_pool;
  Shared shared;
  std::mutex mu;
  std::vector<std::weak_ptr<Session>> sessions;
  std::atomic<bool> stopping{false};
  std::uint16_t port = 0;

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this](const boost::system::error_code& ec, tcp::socket sock) {
      if (stopping) return;
      if (!ec) {
        auto s = std::make_shared<Session>(std::move(sock), shared);
        {
          std::lock_guard<std::mutex> lock(mu);
          if (sessions.size() > 256) {
            sessions.erase(std::remove_if(sessions.begin(), sessions.end(), [](auto& w) { return w.expired(); }),
                           sessions.end());
          }
          sessions.push_back(s);
        }
        s->start();
      } else if (ec == asio::error::operation_aborted) {
        return;
      } else {
        spdlog::warn("uns: accept: {}", ec.message());
      }
      accept();
    });
  }
};

UnsServer::UnsServer(asio::io_context& io, UnsOptions options, ProviderStore* providers, Clock* clock, Env* env,
                     Metrics* metrics, std::function<std::uint64_t(ProviderId)> queued_urls)
    : impl_(std::make_unique<Impl>(io, std::move(options), providers, clock, env, metrics, std::move(queued_urls))) {}

UnsServer::~UnsServer() {
  if (!impl_->stopping) stop();
}

Status UnsServer::start() {
  LCC_RETURN_IF_ERROR(impl_->fwd->open());
  std::string host, port;
  if (!splitHostPort(impl_->opt.listen, host, port)) return Status::invalidArgument("bad listen address " + impl_->opt.listen);
  boost::system::error_code ec;
  tcp::resolver resolver(impl_->io);
  auto results = resolver.resolve(host, port, ec);
  if (ec || results.empty()) return Status::invalidArgument("cannot resolve " + impl_->opt.listen + ": " + ec.message());
  tcp::endpoint ep = results.begin()->endpoint();
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::ioError("uns: cannot listen on " + impl_->opt.listen + ": " + ec.message());
  impl_->port = a.local_endpoint().port();
  impl_->fwd->start();
  impl_->accept();
  spdlog::info("uns: listening on {} (port {}), forwarding to {}", impl_->opt.listen, impl_->port,
               impl_->opt.forwarder.qm_address);
  return Status::ok();
}

std::uint16_t UnsServer::port() const { return impl_->port; }

void UnsServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  std::promise<void> closed;
  asio::post(impl_->acceptor.get_executor(), [this, &closed] {
    boost::system::error_code ignored;
    impl_->acceptor.close(ignored);
    closed.set_value();
  });
  closed.get_future().wait();
  // Sets in flight are spooled and answered; then sessions are closed.
  impl_->fwd->stop();
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& w : impl_->sessions) {
      if (auto s = w.lock()) live.push_back(s);
    }
    impl_->sessions.clear();
  }
  for (auto& s : live) s->shutdownNow();
  impl_->auth_pool.join();
}

UnsCore& UnsServer::core() { return *impl_->core; }
Forwarder& UnsServer::forwarder() { return *impl_->fwd; }

void UnsServer::status(nlohmann::json& out) const {
  out["listen"] = impl_->opt.listen;
  out["connections"] = impl_->core->connections();
  impl_->fwd->status(out["forwarder"]);
}

UnsOptions unsOptionsFromConfig(const Config& cfg, const std::string& data_dir, const std::string& machine_id) {
  UnsOptions o;
  o.listen = cfg.getString("listen.uns");
  o.idle_timeout_ms = cfg.getInt("uns.idle_timeout");
  o.session_timeout_ms = cfg.getInt("uns.session_timeout");
  auto& s = o.session;
  s.xml.max_value_length = static_cast<std::size_t>(cfg.getInt("uns.max_attribute_length"));
  s.xml.max_depth = static_cast<int>(cfg.getInt("uns.max_depth"));
  s.max_set_urls = static_cast<std::uint64_t>(cfg.getInt("uns.max_set_urls"));
  s.xml.max_elements = s.max_set_urls + 16;
  s.max_url_length = static_cast<std::size_t>(cfg.getInt("uns.max_url_length"));
  s.tod_slots = static_cast<int>(cfg.getInt("qm.slots"));
  s.accept_mime = cfg.getList("accept_mime");
  auto& c = o.core;
  c.accept_mime = s.accept_mime;
  c.max_connections = static_cast<std::uint64_t>(cfg.getInt("uns.max_connections"));
  c.max_connections_per_ip = static_cast<std::uint64_t>(cfg.getInt("uns.max_connections_per_ip"));
  c.max_connections_per_provider = static_cast<std::uint64_t>(cfg.getInt("uns.max_connections_per_provider"));
  c.report_errors = static_cast<std::uint64_t>(cfg.getInt("uns.report_errors"));
  c.fullsets_per_period = static_cast<std::uint64_t>(cfg.getInt("uns.fullsets_per_period"));
  c.fullset_period_ms = cfg.getInt("uns.fullset_period");
  c.auth_cache_entries = static_cast<std::uint64_t>(cfg.getInt("uns.auth_cache_entries"));
  auto& f = o.forwarder;
  f.qm_address = cfg.getString("uns.qm").empty() ? cfg.getString("listen.qm") : cfg.getString("uns.qm");
  f.uns_name = machine_id + "/uns";
  f.spool_dir = data_dir + "/uns";
  f.retry_ms = cfg.getInt("uns.qm_retry");
  f.ack_timeout_ms = cfg.getInt("uns.qm_ack_timeout");
  f.spool_limit = static_cast<std::uint64_t>(cfg.getInt("uns.spool_limit"));
  f.max_attribute_length = s.xml.max_value_length;
  return o;
}

namespace {

class UnsService final : public Service {
 public:
  explicit UnsService(NodeContext& node)
      : server_(*node.io, optionsFor(node), node.providers,
                node.clock, node.env, node.metrics,
                [&node](ProviderId pid) -> std::uint64_t { return node.queued_urls ? node.queued_urls(pid) : 0; }) {}
  static UnsOptions optionsFor(const NodeContext& node) {
    UnsOptions o = unsOptionsFromConfig(*node.config, node.data_dir, node.machine_id);
    o.core.passwords = node.passwords;
    return o;
  }
  std::string_view name() const override { return "uns"; }
  Status start() override { return server_.start(); }
  void stop() override { server_.stop(); }
  void status(nlohmann::json& out) const override { server_.status(out); }

 private:
  UnsServer server_;
};

}  // namespace

Result<ServicePtr> makeUnsService(NodeContext& node) {
  if (!node.providers) return Status::invalidArgument("the uns role needs the provider store");
  return ServicePtr(std::make_unique<UnsService>(node));
}

}  // namespace lcc::uns
