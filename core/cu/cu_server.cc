#include "cu/cu_server.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "cu/bounded_pipe.h"
#include "net/acceptor.h"
#include "proto/cu_query.h"

namespace lcc::cu {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// The export workers: a fixed pool, so exports never run on the io threads.
class Workers {
 public:
  void start(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      threads_.emplace_back([this] {
        ::pthread_setname_np(::pthread_self(), "lcc-cu-export");
        loop();
      });
    }
  }
  void post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and nothing left (queued jobs still run: their pipes are closed)
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace

class CuConnection;

struct CuServer::Impl : std::enable_shared_from_this<CuServer::Impl> {
  Impl(asio::io_context& io_, QueryEngine& engine_, Clock& clock_, CuServerOptions options_)
      : io(io_), engine(engine_), clock(clock_), options(std::move(options_)) {}

  void accepted(std::shared_ptr<net::Connection> conn, net::Admission admission);
  void forget(CuConnection* c);
  // A place for one export of `address` (cu.max_exports_per_ip), or null.
  std::shared_ptr<void> exportPlace(const std::string& address);
  std::size_t exportCap() const {
    const std::size_t cap = options.export_threads > 1 ? options.export_threads - 1 : 1;
    return std::max<std::size_t>(1, std::min(options.max_exports_per_ip, cap));
  }

  asio::io_context& io;
  QueryEngine& engine;
  Clock& clock;
  const CuServerOptions options;
  std::shared_ptr<net::Acceptor> acceptor, tls_acceptor;  // either may be absent
  Workers workers;
  std::atomic<bool> stopping{false};
  mutable std::mutex mu;
  std::map<CuConnection*, std::weak_ptr<CuConnection>> conns;  // admitted connections
  std::map<std::string, std::size_t> exports_per_address;       // under mu
};

// One CU connection: the query is read through the connection's codec hook (the
// CuQueryParser); the answer moves from the export's BoundedPipe to the connection one
// chunk at a time. The query must arrive whole within cu.idle_timeout (the session
// deadline, disarmed once the query is complete); cu.write_timeout is the write
// deadline; after the answer the connection lingers up to cu.idle_timeout.
class CuConnection : public std::enable_shared_from_this<CuConnection> {
 public:
  CuConnection(std::shared_ptr<CuServer::Impl> server, std::shared_ptr<net::Connection> conn, bool counted)
      : server_(std::move(server)), conn_(std::move(conn)), parser_(server_->options.max_query_bytes),
        counted_(counted) {}

  ~CuConnection() {
    if (pipe_) pipe_->close();
  }

  // Starts reading the query, or (`refusal` set) answers with that code at once.
  void start(std::optional<std::pair<ErrorCode, std::string>> refusal = std::nullopt) {
    auto self = shared_from_this();
    net::Connection::Handlers h;
    h.on_bytes = [self](std::string_view b) {
      if (self->phase_ == Phase::kQuery) self->onParsed(self->parser_.feed(b));
    };
    h.on_eof = [self] {
      if (self->phase_ == Phase::kQuery) self->onParsed(self->parser_.endOfInput());
      return true;  // the answer is still to be written
    };
    h.on_deadline = [self](net::Deadline d) {
      if (d != net::Deadline::kSession) return false;  // the write deadline: drop the client
      if (self->phase_ == Phase::kQuery) self->reject(ErrorCode::kTimeout, "timed out waiting for the query");
      return true;
    };
    h.on_written = [self](std::uint64_t) {
      self->writing_ = false;
      self->pump();
    };
    h.on_close = [self](net::CloseReason reason, const std::string&) { self->onClosed(reason); };
    // No byte is read before the first handler below has decided what this connection does.
    conn_->setReading(false);
    conn_->start(std::move(h));
    asio::post(conn_->strand(), [self, refusal = std::move(refusal)] {
      if (refusal) return self->reject(refusal->first, refusal->second);
      self->conn_->armDeadline(net::Deadline::kSession, self->server_->options.idle_timeout);
      self->conn_->setReading(true);
    });
  }

  // From any thread (server stop).
  void shutdownFromOutside() {
    if (auto p = pipe()) p->close();
    conn_->close(net::CloseReason::kShutdown);
  }

 private:
  std::shared_ptr<BoundedPipe> pipe() {
    std::lock_guard<std::mutex> lock(pipe_mu_);
    return pipe_;
  }
  const std::string& peer() const { return conn_->peer(); }

  void onParsed(proto::CuQueryParser::State st) {
    switch (st) {
      case proto::CuQueryParser::State::kNeedMore:
        return;
      case proto::CuQueryParser::State::kFailed:
        return reject(parser_.error().code, parser_.error().message);
      case proto::CuQueryParser::State::kDone:
        return startExport();
    }
  }

  void onClosed(net::CloseReason reason) {
    if (reason == net::CloseReason::kWriteTimeout) {
      spdlog::warn("cu: {}: took no answer bytes for {} ms; dropping it", peer(), server_->options.write_timeout.count());
    }
    closed_ = true;
    if (auto p = pipe()) p->close();
    if (counted_) server_->forget(this);
  }

  void reject(ErrorCode code, const std::string& message) {
    server_->engine.stats().rejected.inc();
    spdlog::info("cu: {}: query rejected ({}): {}", peer(), static_cast<int>(code), message);
    auto p = std::make_shared<BoundedPipe>(1 << 20);
    setPipe(p);
    (void)p->write(proto::formatQueryRejected(code, message));
    p->finish(Status::ok());
    phase_ = Phase::kAnswer;
    conn_->disarmDeadline(net::Deadline::kSession);
    pump();
  }

  void setPipe(std::shared_ptr<BoundedPipe> p) {
    std::lock_guard<std::mutex> lock(pipe_mu_);
    pipe_ = std::move(p);
  }

  void startExport() {
    auto place = server_->exportPlace(conn_->peerAddress());
    if (!place) {
      return reject(ErrorCode::kTooManyConnections, "too many exports at once from " + conn_->peerAddress() +
                                                        " (cu.max_exports_per_ip " +
                                                        std::to_string(server_->exportCap()) + ")");
    }
    phase_ = Phase::kAnswer;
    conn_->disarmDeadline(net::Deadline::kSession);
    auto p = std::make_shared<BoundedPipe>(server_->options.pipe_buffer);
    setPipe(p);
    const proto::CuQuery q = parser_.query();
    QueryEngine& engine = server_->engine;
    std::string who = peer();
    // The job keeps the connection alive while the answer is produced: the strand
    // holds no handler while it waits for the worker's next bytes.
    // `place` is given back when the worker is done with the export (or skips it).
    server_->workers.post([self = shared_from_this(), p, q, &engine, who, place = std::move(place)] {
      if (p->closed()) {  // the client left (or the server stopped) while the job waited
        p->finish(Status::aborted("the client went away before the answer started"));
        return;
      }
      auto prepared = engine.prepare(q);
      if (!prepared.isOk()) {
        const Status& s = prepared.status();
        const QueryRefusal why = refusalFor(s);
        if (why.code == ErrorCode::kInternal) {
          spdlog::error("cu: {}: query failed: {}", who, s.toString());
          engine.stats().rejected.inc();
        }
        (void)p->write(proto::formatQueryRejected(why.code, s.message()));
        p->finish(Status::ok());
        return;
      }
      Status s = (*prepared)->stream(*p);
      if (!s.isOk()) spdlog::warn("cu: {}: answer ended early: {}", who, s.toString());
      p->finish(s);
    });
    pump();
  }

  // Moves the pipe's chunks to the connection, one write at a time; at the end of the
  // answer: FIN, then linger (net::Connection::closeAfterFlush).
  void pump() {
    if (closed_ || writing_ || finished_) return;
    auto p = pipe();
    if (!p) return;
    std::weak_ptr<CuConnection> weak = weak_from_this();
    auto waiter = [weak, strand = conn_->strand()] {
      if (auto self = weak.lock()) asio::post(strand, [self] { self->pump(); });
    };
    std::string out;
    switch (p->take(out, waiter)) {
      case BoundedPipe::Take::kEmpty:
        return;
      case BoundedPipe::Take::kEnd:
        finished_ = true;
        return conn_->closeAfterFlush();
      case BoundedPipe::Take::kData:
        break;
    }
    writing_ = true;
    conn_->send(std::move(out));
  }

  enum class Phase : std::uint8_t { kQuery, kAnswer };

  std::shared_ptr<CuServer::Impl> server_;
  std::shared_ptr<net::Connection> conn_;
  proto::CuQueryParser parser_;
  const bool counted_;
  Phase phase_ = Phase::kQuery;
  std::mutex pipe_mu_;
  std::shared_ptr<BoundedPipe> pipe_;
  bool writing_ = false;
  bool finished_ = false;
  bool closed_ = false;
};

void CuServer::Impl::accepted(std::shared_ptr<net::Connection> conn, net::Admission admission) {
  if (stopping) return conn->close(net::CloseReason::kShutdown);
  const bool over = admission != net::Admission::kAdmitted;
  auto c = std::make_shared<CuConnection>(shared_from_this(), std::move(conn), !over);
  if (over) {
    const bool per_ip = admission == net::Admission::kTooManyFromAddress;
    c->start(std::make_pair(ErrorCode::kTooManyConnections,
                            std::string(per_ip ? "too many connections from your address (" : "too many connections (") +
                                std::to_string(per_ip ? options.max_connections_per_ip : options.max_connections) +
                                ")"));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    conns[c.get()] = c;
  }
  c->start();
}

void CuServer::Impl::forget(CuConnection* c) {
  std::lock_guard<std::mutex> lock(mu);
  conns.erase(c);
}

std::shared_ptr<void> CuServer::Impl::exportPlace(const std::string& address) {
  std::lock_guard<std::mutex> lock(mu);
  std::size_t& n = exports_per_address[address];
  if (n >= exportCap()) return nullptr;
  ++n;
  auto self = shared_from_this();
  return std::shared_ptr<void>(self.get(), [self, address](void*) {
    std::lock_guard<std::mutex> lock(self->mu);
    auto it = self->exports_per_address.find(address);
    if (it != self->exports_per_address.end() && --it->second == 0) self->exports_per_address.erase(it);
  });
}

CuServer::CuServer(asio::io_context& io, QueryEngine& engine, Clock& clock, CuServerOptions options)
    : impl_(std::make_shared<Impl>(io, engine, clock, std::move(options))) {}

CuServer::~CuServer() { stop(); }

Status CuServer::start() {
  net::AcceptorOptions ao;
  ao.what = "listen.cu";
  ao.listen = impl_->options.listen;
  ao.max_connections = impl_->options.max_connections;
  ao.max_per_address = impl_->options.max_connections_per_ip;
  ao.connection.clock = &impl_->clock;
  ao.connection.write = impl_->options.write_timeout;
  ao.connection.linger = impl_->options.idle_timeout;
  ao.connection.read_buffer = 16 * 1024;
  if (!impl_->options.listen.empty()) {
    impl_->acceptor = net::makeAcceptor(impl_->io, ao, impl_);
    if (Status s = impl_->acceptor->start(); !s.isOk()) return s.withContext("cu");
  }
  if (!impl_->options.listen_tls.empty()) {
    ao.what = "listen.cu_tls";
    ao.listen = impl_->options.listen_tls;
    ao.tls = impl_->options.tls;
    ao.connection.handshake = impl_->options.handshake_timeout;
    impl_->tls_acceptor = net::makeAcceptor(impl_->io, ao, impl_);
    if (Status s = impl_->tls_acceptor->start(); !s.isOk()) return s.withContext("cu");
  }
  impl_->workers.start(impl_->options.export_threads);
  return Status::ok();
}

void CuServer::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  if (impl_->acceptor) impl_->acceptor->stop();
  if (impl_->tls_acceptor) impl_->tls_acceptor->stop();
  std::vector<std::shared_ptr<CuConnection>> live;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (auto& [raw, weak] : impl_->conns) {
      if (auto c = weak.lock()) live.push_back(std::move(c));
    }
  }
  for (auto& c : live) c->shutdownFromOutside();
  impl_->workers.stop();
}

std::uint16_t CuServer::port() const { return impl_->acceptor ? impl_->acceptor->port() : 0; }
std::uint16_t CuServer::tlsPort() const { return impl_->tls_acceptor ? impl_->tls_acceptor->port() : 0; }

std::size_t CuServer::exportsFrom(const std::string& address) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->exports_per_address.find(address);
  return it == impl_->exports_per_address.end() ? 0 : it->second;
}

std::size_t CuServer::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->conns.size();
}

}  // namespace lcc::cu
