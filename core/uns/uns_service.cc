// uns_service.cc — the Asio side of the UNS: accepts CPs on listen.uns, one strand
// per connection, carries bytes between the socket and a SessionPolicy, runs the
// idle/session timers, and hands sets to the Forwarder. Decisions live in
// session_policy.cc, uns_core.cc and forwarder.cc.
#include "uns/uns_service.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <utility>
#include <spdlog/spdlog.h>

#include "common/tls_config.h"
#include "net/acceptor.h"
#include "proto/proxy_header.h"
#include "uns/forwarder.h"
#include "indexnow/indexnow_routes.h"
#include "sitemap/sitemap_poll.h"
#include "uns/submit_wait.h"
#include "common/cache_crash.h"
#include "uns/uns_core.h"

namespace lcc::uns {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxPendingOutput = 1u << 20;  // stop reading while this much waits to be written
constexpr std::size_t kMaxPendingInput = 1u << 20;
// Reading from the CP stops while this many parts of a streamed set (issue 13; their
// size: SessionConfig::stream_part_bytes, uns_options.cc) wait in the forwarder.
constexpr int kMaxPartsWaiting = 4;

struct Shared {
  UnsOptions opt;
  UnsCore* core = nullptr;
  Forwarder* fwd = nullptr;
  asio::thread_pool* auth_pool = nullptr;
  Counter* c_sessions = nullptr;
  Counter* c_rejected = nullptr;
  Counter* c_accepted = nullptr;
  Counter* c_timeouts = nullptr;
  Counter* c_auth_throttled = nullptr;
  Counter* c_over_limit = nullptr;
  Counter* c_proxy_refused = nullptr;
  // The CPs the trusted proxies carry, counted by the address their header names
  // (uns.max_connections_per_ip; the acceptor does not count the proxies per address).
  std::shared_ptr<net::AddressSlots> proxied;
};

// One CP session: carries bytes between its net::Connection and a SessionPolicy.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(std::shared_ptr<net::Connection> conn, const Shared& shared, bool admitted)
      : sh_(shared), conn_(std::move(conn)), policy_(shared.opt.session), ip_(conn_->peerAddress()),
        admitted_(admitted) {}

  void start() {
    auto self = shared_from_this();
    net::Connection::Handlers h;
    h.on_bytes = [self](std::string_view b) { self->onBytes(b); };
    h.on_eof = [self] {
      self->eof_ = true;  // delivered to the policy once it waits for the CP (drive)
      self->drive();
      return true;
    };
    h.on_deadline = [self](net::Deadline d) { return self->onDeadline(d); };
    h.on_written = [self](std::uint64_t written) { self->onWritten(written); };
    h.on_close = [self](net::CloseReason, const std::string&) { self->onClosed(); };
    conn_->setReading(false);  // drive() reads when the policy wants bytes
    conn_->start(std::move(h));
    asio::post(conn_->strand(), [self] { self->begin(); });
  }

  void shutdownNow() { conn_->close(net::CloseReason::kShutdown); }

 private:
  void begin() {
    if (closed_) return;
    if (sh_.c_sessions) sh_.c_sessions->inc();
    if (!admitted_) {
      policy_.refuse(ErrorCode::kTooManyConnections, "too many connections");
    } else if (sh_.fwd->refusesSets()) {
      policy_.refuse(ErrorCode::kOffline, "system temporarily off-line, try again later");
    }
    drive();
  }

  void onBytes(std::string_view b) {
    if (policy_.finished() || proxy_refused_) return;
    pending_in_.append(b.data(), b.size());
    if (!proxy_read_ && !readProxyHeader()) return;
    consume();
    drive();
  }

  // The first bytes may be a PROXY v2 header (a front end's, core/front): from a peer
  // of uns.trusted_proxies it names the CP, whose address then stands for the peer's
  // (limits, failed inits, lastConnectIP, logs); from any other peer, or malformed,
  // the connection is closed without an answer, counted. False: not ready for the policy.
  bool readProxyHeader() {
    using State = proto::ProxyDecode::State;
    const proto::ProxyDecode d = proto::decodeProxyV2(pending_in_);
    if (d.state == State::kNeedMore) return false;
    proxy_read_ = true;
    const bool trusted = sh_.opt.trusted_proxies && sh_.opt.trusted_proxies->contains(ip_);
    if (d.state == State::kNotProxy) return !trusted || admitProxied();  // a session of the peer's own
    if (d.state == State::kRefused || !trusted) {
      spdlog::warn("uns: {}: PROXY header refused ({}); connection closed", conn_->peer(),
                   trusted ? d.why : "not a peer of uns.trusted_proxies");
      if (sh_.c_proxy_refused) sh_.c_proxy_refused->inc();
      proxy_refused_ = true;
      conn_->close(net::CloseReason::kRefused);
      return false;
    }
    pending_in_.erase(0, d.size);
    if (!d.header.local) {
      spdlog::debug("uns: {}: PROXY header: CP {} port {}", conn_->peer(), d.header.address, d.header.port);
      ip_ = d.header.address;
    }
    return admitProxied();
  }

  // A trusted proxy's session, counted in uns.max_connections_per_ip by ip_ (the CP's,
  // or the proxy's own without a header): the acceptor does not count these peers.
  bool admitProxied() {
    if (!admitted_) return true;  // refused already (120)
    const net::Admission a = sh_.proxied->admit(ip_, 0, sh_.opt.core.max_connections_per_ip, &proxied_slot_);
    if (a != net::Admission::kAdmitted) {
      if (sh_.c_over_limit) sh_.c_over_limit->inc();
      spdlog::info("uns: {} (via {}): {}", ip_, conn_->peer(), net::admissionName(a));
      policy_.refuse(ErrorCode::kTooManyConnections, "too many connections");
    }
    return true;
  }

  bool onDeadline(net::Deadline d) {
    if (d == net::Deadline::kSession) {
      // While we keep the CP waiting (password check, QM ack) the deadline is not its
      // fault; it applies as soon as we wait for the CP again (see drive()).
      deadline_passed_ = true;
      drive();
    } else if (d == net::Deadline::kRead && policy_.waitingForCp()) {
      if (sh_.c_timeouts) sh_.c_timeouts->inc();
      policy_.onTimeout(false);
      drive();
    }
    return true;
  }

  void onWritten(std::uint64_t written) {
    while (!written_actions_.empty() && written_actions_.front().first <= written) {
      auto a = std::move(written_actions_.front().second);
      written_actions_.pop_front();
      // Nothing waits for it: if it is lost, the errors are reported once more.
      sh_.core->clearReportedErrors(a, [pid = a.pid](const Status& s) {
        if (!s.isOk()) spdlog::warn("uns: provider {}: clearing reported errors failed: {}", pid, s.toString());
      });
    }
    drive();
  }

  void consume() {
    if (pending_in_.empty()) return;
    std::size_t used = policy_.onData(pending_in_.data(), pending_in_.size());
    pending_in_.erase(0, used);
  }

  void authenticate(AuthRequest req) {
    // A generated token is checked here, on the strand (a microsecond); an Argon2id
    // check (100 ms) on the auth pool.
    auto self = shared_from_this();
    sh_.core->authenticate(
        req, ip_, [self](AuthResult r) { self->authenticated(std::move(r)); },
        [pool = sh_.auth_pool](std::function<void()> slow) { asio::post(*pool, std::move(slow)); });
  }

  // On the strand, the auth pool or the PIDB committer's thread.
  void authenticated(AuthResult r) {
    asio::post(conn_->strand(), [self = shared_from_this(), r = std::move(r)]() mutable {
      self->onAuthenticated(std::move(r));
    });
  }

  void onAuthenticated(AuthResult r) {
    if (r.code == ErrorCode::kNone) provider_slot_ = r.pid;
    if (closed_) return releaseProvider();
    if (r.throttled && sh_.c_auth_throttled) sh_.c_auth_throttled->inc();
    if (r.code != ErrorCode::kNone && !r.throttled) {  // a cool-down is logged once, by UnsCore
      spdlog::info("uns: {}: init refused: {} {}", ip_, static_cast<int>(r.code), r.message);
    }
    policy_.onAuthenticated(std::move(r));
    consume();
    drive();
  }

  // A provider suspended (or removed) since its init gets no set past this point: the
  // answer is what its init would get now. A slot move (core/front) suspends the
  // provider before it reads what the QM holds, so no set of an older session can
  // reach the QM behind that read and be lost with the provider's removal.
  std::optional<SetOutcome> refusedNow(ProviderId pid) {
    std::string why;
    const ErrorCode code = sh_.core->stillActive(pid, &why);
    if (code == ErrorCode::kNone) return std::nullopt;
    spdlog::info("uns: {}: set of provider {} refused: {} {}", ip_, pid, static_cast<int>(code), why);
    return SetOutcome{false, code, std::move(why)};
  }

  void submit(SetSubmission sub) {
    if (auto refused = refusedNow(sub.pid)) return policy_.onSetOutcome(*refused);  // drive() writes it
    Forwarder::Done done = outcomeHandler(sub.pid, sub.kind, sub.fullset_wanted);
    sh_.fwd->submit(std::move(sub), std::move(done));
  }

  // A streamed set: its start, parts and end go to the forwarder as they are read.
  void stream() {
    if (auto b = policy_.takeSetBegin()) {
      set_begin_ = *b;
      refused_ = refusedNow(b->pid);
      if (!refused_) stream_ = sh_.fwd->beginSet(b->pid, b->kind, b->fullset_wanted);
    }
    if (refused_) {  // read to its end and dropped, as a set the QM refuses; answered then
      while (policy_.takePart()) consume();
      if (policy_.takeSetEnd()) policy_.onSetOutcome(*std::exchange(refused_, std::nullopt));
      return;
    }
    while (stream_ && parts_waiting_ < kMaxPartsWaiting) {
      auto part = policy_.takePart();
      if (!part) break;
      ++parts_waiting_;
      stream_->add(std::move(*part), [self = shared_from_this()] {
        asio::post(self->conn_->strand(), [self] {
          --self->parts_waiting_;
          self->consume();
          self->drive();
        });
      });
      consume();
    }
    if (stream_ && policy_.takeSetEnd()) {
      stream_->end(outcomeHandler(set_begin_.pid, set_begin_.kind, set_begin_.fullset_wanted));
    }
  }

  Forwarder::Done outcomeHandler(ProviderId pid, SetKind kind, bool wanted) {
    return [self = shared_from_this(), pid, kind, wanted](const SetOutcome& o) {
      asio::post(self->conn_->strand(), [self, o, pid, kind, wanted] {
        if (!o.accepted) return self->setOutcome(o);
        // A full set is counted (synced) before set_accepted; a partial one answers at once.
        self->sh_.core->setAccepted(pid, kind, wanted, [self, o, pid](const Status& s) {
          if (!s.isOk()) spdlog::warn("uns: provider {}: recording the full set failed: {}", pid, s.toString());
          asio::dispatch(self->conn_->strand(), [self, o] { self->setOutcome(o); });
        });
      });
    };
  }

  void setOutcome(const SetOutcome& o) {
    policy_.onSetOutcome(o);
    drive();
  }

  // Carries out whatever the policy asks for; called after every event.
  void drive() {
    if (closed_ || closing_) return;
    if (auto out = policy_.takeOutput(); !out.empty()) {
      out_bytes_ += out.size();
      conn_->send(std::move(out));
    }
    if (auto wa = policy_.takeWrittenAction()) written_actions_.push_back(std::move(*wa));
    if (auto req = policy_.takeAuthRequest()) authenticate(std::move(*req));
    if (auto sub = policy_.takeSubmission()) submit(std::move(*sub));
    stream();
    if (auto out = policy_.takeOutput(); !out.empty()) {  // per-URL errors found by stream()
      out_bytes_ += out.size();
      conn_->send(std::move(out));
    }
    if (eof_ && !eof_delivered_ && policy_.waitingForCp()) {
      eof_delivered_ = true;
      policy_.onEof();
      return drive();
    }
    if (policy_.finished()) {
      stream_.reset();  // ended, or aborted when the set was not finished
      return finish();
    }
    if (deadline_passed_ && policy_.waitingForCp()) {
      if (sh_.c_timeouts) sh_.c_timeouts->inc();
      policy_.onTimeout(true);
      return drive();
    }
    // Reading goes on while the password is checked, so that what a CP sent right
    // behind its init is here when it is needed. The idle deadline runs only while the
    // CP owes us bytes; each byte re-arms it.
    const bool want_bytes = policy_.waitingForCp() || policy_.state() == SessionPolicy::State::kAuthenticating;
    const bool held = parts_waiting_ >= kMaxPartsWaiting;  // the QM link is the slow side, not the CP
    conn_->setReading(want_bytes && pending_in_.size() <= kMaxPendingInput && !eof_ && !held);
    if (!policy_.waitingForCp() || held) {
      conn_->disarmDeadline(net::Deadline::kRead);
    } else if (!conn_->deadlineArmed(net::Deadline::kRead)) {
      conn_->armDeadline(net::Deadline::kRead, sh_.opt.idle_timeout);
    }
  }

  // The reply is queued: the connection writes it, sends FIN, and reads and drops what
  // the CP still sends until it closes or the linger time passes, so that closing does
  // not reset the connection before the CP has read the reply.
  void finish() {
    closing_ = true;
    conn_->disarmDeadline(net::Deadline::kRead);
    conn_->disarmDeadline(net::Deadline::kSession);
    if (policy_.endCode() != ErrorCode::kNone && sh_.c_rejected) sh_.c_rejected->inc();
    if (policy_.endCode() == ErrorCode::kNone && policy_.received() > 0 && sh_.c_accepted) sh_.c_accepted->inc();
    conn_->closeAfterFlush({}, admitted_ ? net::CloseReason::kLocal : net::CloseReason::kRefused);
  }

  void releaseProvider() {
    if (provider_slot_ != 0) {
      sh_.core->releaseProvider(provider_slot_);
      provider_slot_ = 0;
    }
  }

  void onClosed() {
    closed_ = true;
    proxied_slot_.reset();
    stream_.reset();
    releaseProvider();
  }

  Shared sh_;
  std::shared_ptr<net::Connection> conn_;
  SessionPolicy policy_;
  std::string ip_;
  std::string pending_in_;
  std::deque<std::pair<std::uint64_t, WrittenAction>> written_actions_;
  std::uint64_t out_bytes_ = 0;
  ProviderId provider_slot_ = 0;
  const bool admitted_;
  bool closed_ = false, closing_ = false, deadline_passed_ = false;
  bool eof_ = false, eof_delivered_ = false;
  bool proxy_read_ = false, proxy_refused_ = false;  // the first bytes looked at for a PROXY header
  std::shared_ptr<void> proxied_slot_;  // this CP's place among the proxied ones (Shared::proxied)
  std::unique_ptr<Forwarder::SetStream> stream_;  // the set being streamed
  SetBegin set_begin_;
  std::optional<SetOutcome> refused_;  // the streamed set is refused (refusedNow)
  int parts_waiting_ = 0;  // in the forwarder, not yet taken
};

}  // namespace

struct UnsServer::Impl {
  Impl(asio::io_context& io_, UnsOptions o, ProviderStore* providers, Clock* clock_, Env* env, Metrics* metrics_,
       std::function<std::uint64_t(ProviderId)> queued)
      : io(io_), opt(std::move(o)), metrics(metrics_), clock(clock_), auth_pool(2) {
    std::function<std::uint64_t()> free_space;
    if (env && !opt.forwarder.spool_dir.empty()) {
      free_space = [env, dir = opt.forwarder.spool_dir]() -> std::uint64_t {
        auto r = env->freeSpace(dir);
        return r.isOk() ? r.value() : UINT64_MAX;
      };
    }
    core = std::make_unique<UnsCore>(opt.core, providers, clock, std::move(queued), std::move(free_space));
    if (providers) {
      opt.forwarder.on_spool_corrupt = [providers](const std::string& why) {
        const CacheCrashRaised r = raiseCacheCrashFlags(*providers);
        spdlog::error("uns: cache-crash ({}): {} provider(s) asked for a full set{}", why, r.providers,
                      r.first_error.isOk() ? "" : "; " + r.first_error.toString());
      };
    }
    fwd = std::make_unique<Forwarder>(io, clock, env, opt.forwarder, metrics);
    shared.opt = opt;
    shared.core = core.get();
    shared.fwd = fwd.get();
    shared.auth_pool = &auth_pool;
    if (metrics) {
      shared.c_sessions = &metrics->counter("lcc_uns_connections_total", "CP connections accepted");
      shared.c_rejected = &metrics->counter("lcc_uns_sessions_refused_total", "CP sessions ended with an error code");
      shared.c_accepted = &metrics->counter("lcc_uns_sets_accepted_total", "sets answered set_accepted");
      shared.c_timeouts = &metrics->counter("lcc_uns_timeouts_total", "CP sessions timed out (133)");
      shared.c_auth_throttled =
          &metrics->counter("lcc_uns_auth_throttled_total",
                            "inits refused (120) unchecked: too many failed authentications from the address");
      c_over_limit = &metrics->counter("lcc_uns_connections_over_limit_total",
                                       "CP connections past uns.max_connections or uns.max_connections_per_ip (120)");
      shared.c_over_limit = c_over_limit;
      shared.c_proxy_refused =
          &metrics->counter("lcc_uns_proxy_refused_total",
                            "connections closed for a PROXY header from a peer not in uns.trusted_proxies, or a bad one");
    }
    shared.proxied = std::make_shared<net::AddressSlots>();
    net::AcceptorOptions ao;
    ao.what = "listen.uns";
    ao.listen = opt.listen;
    ao.max_connections = opt.core.max_connections;
    ao.max_per_address = opt.core.max_connections_per_ip;
    ao.per_address_exempt = opt.trusted_proxies;  // their CPs are counted by address after the header
    ao.connection.clock = clock;
    ao.connection.session = opt.session_timeout;
    ao.connection.linger = std::min(opt.idle_timeout, Millis(2000));
    ao.connection.pause_reading_above = kMaxPendingOutput;
    ao.connection.read_buffer = 16 * 1024;
    // Refused before any handshake (TLS port, or no descriptor to spare): counted too.
    ao.on_refused = [c = c_over_limit](net::Admission) {
      if (c) c->inc();
    };
    auto on_accept = [this](std::shared_ptr<net::Connection> c, net::Admission a) { accepted(std::move(c), a); };
    if (!opt.listen.empty()) acceptor = std::make_shared<net::Acceptor>(io, ao, on_accept);
    if (!opt.listen_tls.empty()) {
      ao.what = "listen.uns_tls";
      ao.listen = opt.listen_tls;
      ao.tls = opt.tls;
      ao.connection.handshake = opt.handshake_timeout;
      tls_acceptor = std::make_shared<net::Acceptor>(io, ao, on_accept);
    }
    core->countConnectionsWith([a = acceptor.get(), t = tls_acceptor.get()] {
      return static_cast<std::uint64_t>((a ? a->active() : 0) + (t ? t->active() : 0));
    });
  }

  asio::io_context& io;
  UnsOptions opt;
  Metrics* metrics;
  Clock* clock;
  Counter* c_over_limit = nullptr;
  std::unique_ptr<UnsCore> core;
  std::unique_ptr<Forwarder> fwd;
  std::shared_ptr<net::Acceptor> acceptor, tls_acceptor;  // either may be absent
  asio::thread_pool auth_pool;
  Shared shared;
  std::mutex mu;
  std::vector<std::weak_ptr<Session>> sessions;
  std::atomic<bool> stopping{false};

  void accepted(std::shared_ptr<net::Connection> c, net::Admission admission) {
    if (stopping) return c->close(net::CloseReason::kShutdown);
    if (admission != net::Admission::kAdmitted && c_over_limit) c_over_limit->inc();
    auto s = std::make_shared<Session>(std::move(c), shared, admission == net::Admission::kAdmitted);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (sessions.size() > 256) {
        sessions.erase(std::remove_if(sessions.begin(), sessions.end(), [](auto& w) { return w.expired(); }),
                       sessions.end());
      }
      sessions.push_back(s);
    }
    s->start();
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
  for (auto* a : {impl_->acceptor.get(), impl_->tls_acceptor.get()}) {
    if (a == nullptr) continue;
    if (Status s = a->start(); !s.isOk()) return s.withContext("uns");
  }
  LCC_RETURN_IF_ERROR(impl_->fwd->start());
  spdlog::info("uns: listening on {} (port {}), TLS on {} (port {}), forwarding to {}",
               impl_->opt.listen.empty() ? "-" : impl_->opt.listen, port(),
               impl_->opt.listen_tls.empty() ? "-" : impl_->opt.listen_tls, tlsPort(), impl_->opt.forwarder.qm_address);
  return Status::ok();
}

std::uint16_t UnsServer::port() const { return impl_->acceptor ? impl_->acceptor->port() : 0; }
std::uint16_t UnsServer::tlsPort() const { return impl_->tls_acceptor ? impl_->tls_acceptor->port() : 0; }

void UnsServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  if (impl_->acceptor) impl_->acceptor->stop();
  if (impl_->tls_acceptor) impl_->tls_acceptor->stop();
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
  out["listen_tls"] = impl_->opt.listen_tls;
  out["connections"] = impl_->core->connections();
  const ProviderCommitter::Stats c = impl_->core->commitStats();
  out["pidb_commit"] = {{"changes", c.changes}, {"syncs", c.syncs}, {"largest_batch", c.largest_batch}};
  impl_->fwd->status(out["forwarder"]);
}

namespace {

class UnsService final : public Service {
 public:
  explicit UnsService(NodeContext& node)
      : server_(*node.io, optionsFor(node), node.providers,
                node.clock, node.env, node.metrics,
                [&node](ProviderId pid) -> std::uint64_t {
                  // The QM of this lccd, else the queue the QM of another host writes into
                  // a shared PIDB (storage-postgres), else 0.
                  return node.queued_urls ? node.queued_urls(pid) : queuedUrlsInStore(node.providers, pid);
                }) {
    indexnow::addIndexNowRoutes(node, partialSetSubmitter(server_.forwarder()));
    sitemaps_ = sitemap::makeSitemapPoller(node, partialSetSubmitter(server_.forwarder()));
    if (sitemap::SitemapPoller* poller = sitemaps_.get()) {  // the admin API and the status page
      node.sitemap_poll_state = [poller](ProviderId pid) {
        auto s = poller->providerStatus(pid);
        return s ? sitemap::sitemapPollStateJson(*s) : nlohmann::json();
      };
      node.sitemap_poll_now = [poller](ProviderId pid) { poller->pollSoon(pid); };
    }
  }
  static UnsOptions optionsFor(const NodeContext& node) {
    UnsOptions o = UnsOptions::fromConfig(*node.config, node.data_dir, node.machine_id);
    o.core.passwords = node.passwords;
    if (node.tls) {
      o.tls = node.tls->server();
      o.handshake_timeout = node.tls->handshakeTimeout();
    }
    o.forwarder.tls = linkConnecting(node.tls, node.clock);
    o.forwarder.local_listeners = node.local_listeners;  // the QM of this lccd links in process
    return o;
  }
  std::string_view name() const override { return "uns"; }
  Status start() override {
    LCC_RETURN_IF_ERROR(server_.start());
    return sitemaps_ ? sitemaps_->start() : Status::ok();
  }
  void stop() override {
    if (sitemaps_) sitemaps_->stop();  // first: a poll waits for the forwarder's answers
    server_.stop();
  }
  void status(nlohmann::json& out) const override {
    server_.status(out);
    if (sitemaps_) sitemaps_->status(out["sitemap"]);
  }

 private:
  UnsServer server_;
  std::unique_ptr<sitemap::SitemapPoller> sitemaps_;  // providers' sitemaps (sitemap/sitemap_poll.h)
};

}  // namespace

Result<ServicePtr> makeUnsService(NodeContext& node) {
  if (!node.providers) return Status::invalidArgument("the uns role needs the provider store");
  return ServicePtr(std::make_unique<UnsService>(node));
}

}  // namespace lcc::uns
