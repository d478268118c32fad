#include "front/relay.h"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <mutex>
#include <spdlog/spdlog.h>

#include "common/address_limiter.h"
#include "front/init_sniffer.h"
#include "net/acceptor.h"
#include "net/connector.h"
#include "proto/cp_uns.h"
#include "proto/proxy_header.h"

namespace lcc::front {
namespace {

namespace asio = boost::asio;

struct Shared {
  asio::io_context* io = nullptr;
  FrontCore* core = nullptr;
  Clock* clock = nullptr;
  asio::thread_pool* pool = nullptr;
  const FrontOptions* opt = nullptr;  // the core's
  // Failed inits (110) per CP address, as a UNS counts them (uns.auth_failures_per_minute,
  // uns.auth_cooldown): the sub-LCCs see only the front end's address.
  AddressLimiter* auth_limiter = nullptr;
  Counter* c_sessions = nullptr;
  Counter* c_refused = nullptr;
  Counter* c_relayed = nullptr;
};

// The sub-LCC's first reply is read (not changed) up to this many bytes, to count a 110.
constexpr std::size_t kMaxFirstReplyPeek = 1u << 20;
// Both connections read this much at a time. A side stops being read once more than
// front.relay_buffer waits for the other, so a queue holds at most that plus a read or
// two (the one under way ends after setReading(false)); past maxQueued() it is closed.
constexpr std::size_t kReadBuffer = 16 * 1024;
std::size_t maxQueued(std::size_t relay_buffer) { return 2 * relay_buffer + 4 * kReadBuffer; }

std::string offline() { return std::string(errorCodeMessage(ErrorCode::kOffline)); }

// One CP session: sniff the init, route, connect, relay (relay.h).
class RelaySession : public std::enable_shared_from_this<RelaySession> {
 public:
  RelaySession(std::shared_ptr<net::Connection> cp, const Shared& sh, bool admitted)
      : sh_(sh), cp_(std::move(cp)), sniffer_(sh.opt->init_max_bytes), ip_(cp_->peerAddress()), admitted_(admitted) {}

  void start() {
    auto self = shared_from_this();
    net::Connection::Handlers h;
    h.on_bytes = [self](std::string_view b) { self->onCpBytes(b); };
    h.on_eof = [self] { return self->onCpEof(); };
    h.on_deadline = [self](net::Deadline d) { return self->onDeadline(d); };
    h.on_written = [self](std::uint64_t) { self->cpWritten(); };
    h.on_close = [self](net::CloseReason, const std::string&) { self->cpClosed(); };
    cp_->start(std::move(h));
    asio::post(cp_->strand(), [self] {
      if (self->sh_.c_sessions) self->sh_.c_sessions->inc();
      if (!self->admitted_) return self->refuse(ErrorCode::kTooManyConnections, "too many connections");
      self->cp_->armDeadline(net::Deadline::kSession, self->sh_.opt->init_timeout);
    });
  }

  void shutdownNow() {
    asio::post(cp_->strand(), [self = shared_from_this()] {
      self->cp_->close(net::CloseReason::kShutdown);
      if (self->up_) self->up_->close(net::CloseReason::kShutdown);
    });
  }

 private:
  enum class Phase { kSniffing, kRouting, kConnecting, kRelaying, kDone };

  void onCpBytes(std::string_view b) {
    if (phase_ == Phase::kRelaying) return toUp(b);
    if (phase_ == Phase::kDone) return;
    if (phase_ != Phase::kSniffing) {  // routing or connecting: held for the sub-LCC
      held_.append(b);
      if (held_.size() > sh_.opt->relay_buffer) cp_->setReading(false);
      return;
    }
    switch (sniffer_.feed(b)) {
      case InitSniffer::State::kNeedMore:
        return;
      case InitSniffer::State::kRefused:
        return refuse(sniffer_.code(), sniffer_.message());
      case InitSniffer::State::kInit:
        held_ = sniffer_.rest();
        if (const AddressLimiter::Decision d = sh_.auth_limiter->check(ip_); !d.allowed) {
          const std::int64_t seconds = (d.retry_after.count() + 999) / 1000;
          return refuse(ErrorCode::kTooManyConnections, "too many failed authentications from this address; try again in " +
                                                            std::to_string(seconds) + " s");
        }
        return route();
    }
  }

  bool onCpEof() {
    cp_eof_ = true;
    if (phase_ == Phase::kSniffing) {
      sniffer_.onEof();
      refuse(sniffer_.code(), sniffer_.message());
    }
    return true;  // relaying: the sub-LCC answers what it got, then both close
  }

  bool onDeadline(net::Deadline d) {
    if (d != net::Deadline::kSession) return false;
    if (phase_ == Phase::kSniffing || phase_ == Phase::kRouting) {
      refuse(ErrorCode::kTimeout, "no init within " + std::to_string(sh_.opt->init_timeout.count()) + " ms");
    }
    return true;
  }

  // The PMDB lookup may block: on the pool, the answer back on the strand.
  void route() {
    phase_ = Phase::kRouting;
    cp_->setReading(held_.size() <= sh_.opt->relay_buffer);
    auto self = shared_from_this();
    asio::post(*sh_.pool, [self] {
      auto r = self->sh_.core->route(self->sniffer_.id());
      asio::post(self->cp_->strand(), [self, r = std::move(r)] { self->routed(r); });
    });
  }

  void routed(const Result<std::optional<FrontCore::Target>>& r) {
    if (phase_ != Phase::kRouting) return;
    if (!r.isOk()) {
      spdlog::warn("front: {}: provider {}: {}", cp_->peer(), sniffer_.id(), r.status().message());
      return refuse(ErrorCode::kOffline, offline());
    }
    if (!r.value()) {
      spdlog::info("front: {}: init refused: no provider {}", cp_->peer(), sniffer_.id());
      authFailed();
      return refuse(ErrorCode::kAuthFailed, std::string(errorCodeMessage(ErrorCode::kAuthFailed)));
    }
    connect(*r.value());
  }

  void connect(const FrontCore::Target& t) {
    phase_ = Phase::kConnecting;
    local_id_ = t.local_id;
    uns_ = t.uns;
    proxy_v2_ = t.proxy_v2;
    net::ConnectorOptions co;
    co.what = "sub-LCC UNS " + t.uns;
    co.target = t.uns;
    co.strand = cp_->strand();
    co.tls = t.tls;  // TLS: the handshake (tls.handshake_timeout) and the certificate check are the connector's
    co.server_name = t.tls_name;
    co.connection.handshake = sh_.opt->handshake_timeout;
    co.connection.clock = sh_.clock;
    co.connection.idle = sh_.opt->idle_timeout;
    co.connection.max_queued = maxQueued(sh_.opt->relay_buffer);
    co.connection.read_buffer = kReadBuffer;
    // The connector keeps its callbacks after stop(): they hold the session weakly, so
    // the session (which holds the connector) is freed once its connections are.
    std::weak_ptr<RelaySession> weak = shared_from_this();
    connector_ = std::make_shared<net::Connector>(*sh_.io, *sh_.clock, co);
    Status s = connector_->start(
        [weak](std::shared_ptr<net::Connection> c) {
          if (auto me = weak.lock()) return me->connected(std::move(c));
          c->close(net::CloseReason::kShutdown);
        },
        [weak](const std::string& why, Millis) {
          if (auto me = weak.lock()) me->connectFailed(why);
        });
    if (!s.isOk()) return connectFailed(s.message());
    // The timer holds nothing of the io_context (the clock may outlive it) and is
    // cancelled once the connect ended either way.
    connect_timer_ = sh_.clock->schedule(sh_.opt->connect_timeout, [weak] {
      if (auto me = weak.lock()) {
        asio::post(me->cp_->strand(), [me] { me->connectFailed("not connected within the front.connect_timeout"); });
      }
    });
  }

  void stopConnecting() {
    if (connector_) connector_->stop();
    if (connect_timer_ != 0) sh_.clock->cancel(connect_timer_);
    connect_timer_ = 0;
  }

  void connectFailed(const std::string& why) {
    if (phase_ != Phase::kConnecting) return;
    stopConnecting();
    spdlog::warn("front: {}: provider {}: sub-LCC UNS {}: {}; answered 130", cp_->peer(), sniffer_.id(), uns_, why);
    refuse(ErrorCode::kOffline, offline());
  }

  void connected(std::shared_ptr<net::Connection> c) {
    if (phase_ != Phase::kConnecting) return c->close(net::CloseReason::kShutdown);
    stopConnecting();
    up_ = std::move(c);
    phase_ = Phase::kRelaying;
    cp_->disarmDeadline(net::Deadline::kSession);
    auto self = shared_from_this();
    net::Connection::Handlers h;
    h.on_bytes = [self](std::string_view b) { self->toCp(b); };
    h.on_written = [self](std::uint64_t) { self->upWritten(); };
    h.on_close = [self](net::CloseReason r, const std::string& d) { self->upClosed(r, d); };
    up_->start(std::move(h));
    if (sh_.c_relayed) sh_.c_relayed->inc();
    // The CP's address (proxy=v2), the init again with the sub-LCC's id of the provider;
    // then what followed it, as sent.
    std::string head;
    if (proxy_v2_) head = proto::encodeProxyV2(ip_, cpPort());
    up_->send(head + proto::encodeInit(std::to_string(local_id_), sniffer_.password()) + held_);
    held_.clear();
    upWritten();
  }

  // The CP's port: the digits after the last ':' of "a.b.c.d:p" / "[v6]:p" (0 if none).
  std::uint16_t cpPort() const {
    const std::string& peer = cp_->peer();
    const auto colon = peer.rfind(':');
    unsigned port = 0;
    for (std::size_t i = colon == std::string::npos ? peer.size() : colon + 1; i < peer.size() && port <= 65535; ++i) {
      if (peer[i] < '0' || peer[i] > '9') return 0;
      port = port * 10 + static_cast<unsigned>(peer[i] - '0');
    }
    return port <= 65535 ? static_cast<std::uint16_t>(port) : 0;
  }

  void toUp(std::string_view b) {
    up_->send(std::string(b));
    if (up_->queuedBytes() > sh_.opt->relay_buffer) cp_->setReading(false);
  }
  void toCp(std::string_view b) {
    answered_ = true;
    peekFirstReply(b);
    cp_->send(std::string(b));
    if (cp_->queuedBytes() > sh_.opt->relay_buffer) up_->setReading(false);
  }
  // The sub-LCC's answer to the init, read as it passes: a 110 counts against the CP's address.
  void peekFirstReply(std::string_view b) {
    if (!reply_) return;
    peeked_ += b.size();
    for (const auto& r : reply_->feed(b)) {
      if (r.kind == proto::CpReply::Kind::kInitRejected && r.code == ErrorCode::kAuthFailed) authFailed();
      reply_.reset();
      return;
    }
    if (reply_->failed() || peeked_ > kMaxFirstReplyPeek) reply_.reset();
  }

  void authFailed() {
    if (!sh_.auth_limiter->record(ip_).allowed) {
      spdlog::warn("front: {}: {} failed inits within a minute; its inits get 120 for {} s", ip_,
                   sh_.opt->auth_failures_per_minute, sh_.opt->auth_cooldown.count() / 1000);
    }
  }

  // Back-pressure: a side is read again once the other side's queue is half empty.
  void upWritten() {
    if (phase_ == Phase::kRelaying && !cp_eof_ && up_->queuedBytes() <= sh_.opt->relay_buffer / 2) cp_->setReading(true);
  }
  void cpWritten() {
    if (up_ && cp_->queuedBytes() <= sh_.opt->relay_buffer / 2) up_->setReading(true);
  }

  void upClosed(net::CloseReason reason, const std::string& detail) {
    if (phase_ != Phase::kRelaying) return;
    phase_ = Phase::kDone;
    if (answered_) return cp_->closeAfterFlush({}, net::CloseReason::kLocal);
    // Nothing came back: the sub-LCC went away before answering the init.
    spdlog::warn("front: {}: sub-LCC UNS {} closed before answering ({} {}); answered 130", cp_->peer(), uns_,
                 net::closeReasonName(reason), detail);
    refuseNow(ErrorCode::kOffline, offline());
  }

  void cpClosed() {
    phase_ = Phase::kDone;
    stopConnecting();
    if (up_) up_->close(net::CloseReason::kShutdown);
  }

  void refuse(ErrorCode code, const std::string& message) {
    if (phase_ == Phase::kDone) return;
    phase_ = Phase::kDone;
    refuseNow(code, message);
  }
  void refuseNow(ErrorCode code, const std::string& message) {
    if (sh_.c_refused) sh_.c_refused->inc();
    cp_->disarmDeadline(net::Deadline::kSession);
    cp_->closeAfterFlush(proto::encodeInitRejected(code, message),
                         admitted_ ? net::CloseReason::kLocal : net::CloseReason::kRefused);
  }

  Shared sh_;
  std::shared_ptr<net::Connection> cp_;
  std::shared_ptr<net::Connection> up_;
  std::shared_ptr<net::Connector> connector_;
  TimerId connect_timer_ = 0;  // strand
  InitSniffer sniffer_;
  const std::string ip_;
  std::unique_ptr<proto::ReplyDecoder> reply_ = std::make_unique<proto::ReplyDecoder>();  // until the first reply
  std::size_t peeked_ = 0;
  std::string held_;  // the CP's bytes after its init, until the sub-LCC is connected
  std::string uns_;
  std::uint64_t local_id_ = 0;
  bool proxy_v2_ = false;
  Phase phase_ = Phase::kSniffing;
  const bool admitted_;
  bool cp_eof_ = false, answered_ = false;
};

}  // namespace

struct FrontRelay::Impl {
  explicit Impl(const FrontOptions& o, Clock* clock)
      : limiter(AddressLimiterOptions{.max_events = o.auth_failures_per_minute, .cooldown = o.auth_cooldown}, clock) {}
  Shared sh;
  AddressLimiter limiter;
  asio::thread_pool pool{2};
  std::shared_ptr<net::Acceptor> acceptor, tls_acceptor;
  std::mutex mu;
  std::vector<std::weak_ptr<RelaySession>> sessions;
  bool stopping = false;

  void accepted(std::shared_ptr<net::Connection> c, net::Admission a) {
    auto s = std::make_shared<RelaySession>(std::move(c), sh, a == net::Admission::kAdmitted);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stopping) return;
      if (sessions.size() > 256) std::erase_if(sessions, [](auto& w) { return w.expired(); });
      sessions.push_back(s);
    }
    s->start();
  }
};

FrontRelay::FrontRelay(asio::io_context& io, FrontCore& core, Clock* clock, Metrics* metrics)
    : impl_(std::make_shared<Impl>(core.options(), clock)) {
  Shared& sh = impl_->sh;
  sh.auth_limiter = &impl_->limiter;
  sh.io = &io;
  sh.core = &core;
  sh.clock = clock;
  sh.pool = &impl_->pool;
  sh.opt = &core.options();
  if (metrics) {
    sh.c_sessions = &metrics->counter("lcc_front_cp_connections_total", "CP connections to the front end's port");
    sh.c_refused = &metrics->counter("lcc_front_cp_refused_total", "CP sessions the front end answered itself (init_rejected)");
    sh.c_relayed = &metrics->counter("lcc_front_cp_relayed_total", "CP sessions relayed to a sub-LCC");
  }
  net::AcceptorOptions ao;
  ao.what = "listen.uns";
  ao.listen = sh.opt->listen;
  ao.max_connections = sh.opt->max_connections;
  ao.max_per_address = sh.opt->max_connections_per_ip;
  ao.connection.clock = clock;
  ao.connection.idle = sh.opt->idle_timeout;
  ao.connection.linger = std::min(sh.opt->idle_timeout, Millis(2000));
  ao.connection.max_queued = maxQueued(sh.opt->relay_buffer);
  ao.connection.read_buffer = kReadBuffer;
  std::weak_ptr<Impl> weak = impl_;
  auto on_accept = [weak](std::shared_ptr<net::Connection> c, net::Admission a) {
    if (auto me = weak.lock()) me->accepted(std::move(c), a);
  };
  if (!sh.opt->listen.empty()) impl_->acceptor = std::make_shared<net::Acceptor>(io, ao, on_accept);
  if (!sh.opt->listen_tls.empty()) {
    ao.what = "listen.uns_tls";
    ao.listen = sh.opt->listen_tls;
    ao.tls = sh.opt->tls;
    ao.connection.handshake = sh.opt->handshake_timeout;
    impl_->tls_acceptor = std::make_shared<net::Acceptor>(io, ao, on_accept);
  }
}

FrontRelay::~FrontRelay() { stop(); }

Status FrontRelay::start() {
  for (auto* a : {impl_->acceptor.get(), impl_->tls_acceptor.get()}) {
    if (a == nullptr) continue;
    if (Status s = a->start(); !s.isOk()) return s.withContext("front");
  }
  spdlog::info("front: CP port {} (port {}), TLS {} (port {})", impl_->sh.opt->listen.empty() ? "-" : impl_->sh.opt->listen,
               port(), impl_->sh.opt->listen_tls.empty() ? "-" : impl_->sh.opt->listen_tls, tlsPort());
  return Status::ok();
}

void FrontRelay::stop() {
  std::vector<std::shared_ptr<RelaySession>> live;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    for (auto& w : impl_->sessions) {
      if (auto s = w.lock()) live.push_back(s);
    }
    impl_->sessions.clear();
  }
  if (impl_->acceptor) impl_->acceptor->stop();
  if (impl_->tls_acceptor) impl_->tls_acceptor->stop();
  for (auto& s : live) s->shutdownNow();
  impl_->pool.join();
}

std::uint16_t FrontRelay::port() const { return impl_->acceptor ? impl_->acceptor->port() : 0; }
std::uint16_t FrontRelay::tlsPort() const { return impl_->tls_acceptor ? impl_->tls_acceptor->port() : 0; }

void FrontRelay::status(nlohmann::json& out) const {
  out["listen"] = impl_->sh.opt->listen;
  out["listen_tls"] = impl_->sh.opt->listen_tls;
  out["port"] = port();
}

}  // namespace lcc::front
