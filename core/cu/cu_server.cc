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
#include <set>
#include <thread>

#include "cu/bounded_pipe.h"
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

Result<tcp::endpoint> parseEndpoint(const std::string& host_port) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos) return Status::invalidArgument("listen address must be host:port: " + host_port);
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = 0;
  try {
    port = std::stoi(host_port.substr(colon + 1));
  } catch (...) {
    return Status::invalidArgument("bad port in " + host_port);
  }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) return Status::invalidArgument("listen address must be a numeric IP: " + host_port);
  return tcp::endpoint(addr, static_cast<std::uint16_t>(port));
}

}  // namespace

class CuConnection;

struct CuServer::Impl : std::enable_shared_from_this<CuServer::Impl> {
  Impl(asio::io_context& io_, QueryEngine& engine_, Clock& clock_, CuServerOptions options_)
      : io(io_), engine(engine_), clock(clock_), options(std::move(options_)), acceptor(io_) {}

  void accept();
  void forget(CuConnection* c);

  asio::io_context& io;
  QueryEngine& engine;
  Clock& clock;
  const CuServerOptions options;
  tcp::acceptor acceptor;
  Workers workers;
  std::atomic<bool> stopping{false};
  std::uint16_t port = 0;
  mutable std::mutex mu;
  std::map<CuConnection*, std::weak_ptr<CuConnection>> conns;  // counted connections
};

class CuConnection : public std::enable_shared_from_this<CuConnection> {
 public:
  CuConnection(std::shared_ptr<CuServer::Impl> server, tcp::socket socket, bool counted)
      : server_(std::move(server)),
        socket_(std::move(socket)),
        strand_(asio::make_strand(server_->io)),
        parser_(server_->options.max_query_bytes),
        counted_(counted) {}

  ~CuConnection() {
    if (pipe_) pipe_->close();
  }

  void start() {
    asio::post(strand_, [self = shared_from_this()] {
      self->armTimer(self->server_->options.idle_timeout_ms, &CuConnection::onIdle);
      self->read();
    });
  }

  // Starts with a rejection (too many connections).
  void startRejected(ErrorCode code, std::string message) {
    asio::post(strand_, [self = shared_from_this(), code, message = std::move(message)] {
      self->reject(code, message);
    });
  }

  // From any thread (server stop).
  void shutdownFromOutside() {
    if (auto p = pipe()) p->close();
    asio::post(strand_, [self = shared_from_this()] { self->closeNow(); });
  }

 private:
  std::shared_ptr<BoundedPipe> pipe() {
    std::lock_guard<std::mutex> lock(pipe_mu_);
    return pipe_;
  }

  void read() {
    read_pending_ = true;
    socket_.async_read_some(asio::buffer(buf_), asio::bind_executor(strand_, [self = shared_from_this()](
                                                                                 boost::system::error_code ec, std::size_t n) {
                              self->onRead(ec, n);
                            }));
  }

  void onRead(boost::system::error_code ec, std::size_t n) {
    read_pending_ = false;
    if (closed_) return;
    if (phase_ == Phase::kDrain) return ec ? closeNow() : drain();
    if (phase_ == Phase::kAnswer) {
      // A read still pending when the query was refused (timeout): keep discarding.
      if (ec) {
        read_eof_ = true;
        return;
      }
      return read();
    }
    auto st = ec ? parser_.endOfInput() : parser_.feed(std::string_view(buf_.data(), n));
    if (ec && ec != asio::error::eof) return closeNow();  // reset: nobody to answer
    switch (st) {
      case proto::CuQueryParser::State::kNeedMore:
        return read();
      case proto::CuQueryParser::State::kFailed:
        return reject(parser_.error().code, parser_.error().message);
      case proto::CuQueryParser::State::kDone:
        return startExport();
    }
  }

  void onIdle() {
    if (closed_ || phase_ != Phase::kQuery) return;
    reject(ErrorCode::kTimeout, "timed out waiting for the query");
  }

  void onWriteTimeout() {
    if (closed_) return;
    spdlog::warn("cu: {}: took no answer bytes for {} ms; dropping it", peer(), server_->options.write_timeout_ms);
    closeNow();
  }

  void onDrainTimeout() { closeNow(); }

  std::string peer() const {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void reject(ErrorCode code, const std::string& message) {
    server_->engine.stats().rejected.inc();
    spdlog::info("cu: {}: query rejected ({}): {}", peer(), static_cast<int>(code), message);
    auto p = std::make_shared<BoundedPipe>(1 << 20);
    setPipe(p);
    (void)p->write(proto::formatQueryRejected(code, message));
    p->finish(Status::ok());
    phase_ = Phase::kAnswer;
    pump();
  }

  void setPipe(std::shared_ptr<BoundedPipe> p) {
    std::lock_guard<std::mutex> lock(pipe_mu_);
    pipe_ = std::move(p);
  }

  void startExport() {
    phase_ = Phase::kAnswer;
    cancelTimer();
    auto p = std::make_shared<BoundedPipe>(server_->options.pipe_buffer);
    setPipe(p);
    const proto::CuQuery q = parser_.query();
    QueryEngine& engine = server_->engine;
    std::string who = peer();
    // The job keeps the connection alive while the answer is produced: the strand
    // holds no handler while it waits for the worker's next bytes.
    server_->workers.post([self = shared_from_this(), p, q, &engine, who] {
      if (p->closed()) {  // the client left (or the server stopped) while the job waited
        p->finish(Status::aborted("the client went away before the answer started"));
        return;
      }
      auto prepared = engine.prepare(q);
      if (!prepared.isOk()) {
        const Status& s = prepared.status();
        const bool bad = s.code() == StatusCode::kInvalidArgument;
        if (!bad) {
          spdlog::error("cu: {}: query failed: {}", who, s.toString());
          engine.stats().rejected.inc();
        }
        (void)p->write(proto::formatQueryRejected(bad ? ErrorCode::kMalformed : ErrorCode::kInternal, s.message()));
        p->finish(Status::ok());
        return;
      }
      Status s = (*prepared)->stream(*p);
      if (!s.isOk()) spdlog::warn("cu: {}: answer ended early: {}", who, s.toString());
      p->finish(s);
    });
    pump();
  }

  // Moves the pipe's chunks to the socket, one async_write at a time.
  void pump() {
    if (closed_ || writing_) return;
    auto p = pipe();
    if (!p) return;
    std::weak_ptr<CuConnection> weak = weak_from_this();
    auto waiter = [weak, strand = strand_] {
      if (auto self = weak.lock()) asio::post(strand, [self] { self->pump(); });
    };
    switch (p->take(out_, waiter)) {
      case BoundedPipe::Take::kEmpty:
        return;
      case BoundedPipe::Take::kEnd:
        return finishGracefully();
      case BoundedPipe::Take::kData:
        break;
    }
    writing_ = true;
    armTimer(server_->options.write_timeout_ms, &CuConnection::onWriteTimeout);
    asio::async_write(socket_, asio::buffer(out_),
                      asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        self->writing_ = false;
                        self->cancelTimer();
                        if (ec) return self->closeNow();
                        self->pump();
                      }));
  }

  // The answer is complete: send FIN, then read and drop whatever the client still
  // sends until it closes (closing with unread input would reset the connection and
  // could destroy the answer's tail on the client's side).
  void finishGracefully() {
    if (closed_) return;
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (ec || read_eof_) return closeNow();
    phase_ = Phase::kDrain;
    armTimer(server_->options.idle_timeout_ms, &CuConnection::onDrainTimeout);
    if (!read_pending_) drain();  // else the pending read drains
  }

  void drain() {
    read_pending_ = true;
    socket_.async_read_some(asio::buffer(buf_), asio::bind_executor(strand_, [self = shared_from_this()](
                                                                                 boost::system::error_code ec, std::size_t) {
                              self->read_pending_ = false;
                              if (ec || self->closed_) return self->closeNow();
                              self->drain();
                            }));
  }

  void closeNow() {
    if (closed_) return;
    closed_ = true;
    cancelTimer();
    if (auto p = pipe()) p->close();
    boost::system::error_code ec;
    socket_.close(ec);
    if (counted_) server_->forget(this);
  }

  using Handler = void (CuConnection::*)();
  void armTimer(std::int64_t ms, Handler h) {
    cancelTimer();
    const std::uint64_t gen = ++timer_gen_;
    std::weak_ptr<CuConnection> weak = weak_from_this();
    timer_ = server_->clock.schedule(Millis(ms), [weak, gen, h] {
      auto self = weak.lock();
      if (!self) return;
      asio::post(self->strand_, [self, gen, h] {
        if (gen == self->timer_gen_) (self.get()->*h)();
      });
    });
  }

  void cancelTimer() {
    ++timer_gen_;
    if (timer_ != 0) server_->clock.cancel(timer_);
    timer_ = 0;
  }

  enum class Phase : std::uint8_t { kQuery, kAnswer, kDrain };

  std::shared_ptr<CuServer::Impl> server_;
  tcp::socket socket_;
  asio::strand<asio::io_context::executor_type> strand_;
  std::array<char, 16 * 1024> buf_{};
  proto::CuQueryParser parser_;
  const bool counted_;
  Phase phase_ = Phase::kQuery;
  std::mutex pipe_mu_;
  std::shared_ptr<BoundedPipe> pipe_;
  std::string out_;
  bool writing_ = false;
  bool read_pending_ = false;
  bool read_eof_ = false;
  bool closed_ = false;
  TimerId timer_ = 0;
  std::uint64_t timer_gen_ = 0;
};

void CuServer::Impl::accept() {
  acceptor.async_accept(asio::make_strand(io), [self = shared_from_this()](boost::system::error_code ec, tcp::socket s) {
    if (self->stopping) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      spdlog::warn("cu: accept: {}", ec.message());
      return self->accept();
    }
    bool over = false;
    std::shared_ptr<CuConnection> c;
    {
      std::lock_guard<std::mutex> lock(self->mu);
      over = self->conns.size() >= self->options.max_connections;
      c = std::make_shared<CuConnection>(self, std::move(s), !over);
      if (!over) self->conns[c.get()] = c;
    }
    if (over) {
      c->startRejected(ErrorCode::kTooManyConnections,
                       "too many connections (" + std::to_string(self->options.max_connections) + ")");
    } else {
      c->start();
    }
    self->accept();
  });
}

void CuServer::Impl::forget(CuConnection* c) {
  std::lock_guard<std::mutex> lock(mu);
  conns.erase(c);
}

CuServer::CuServer(asio::io_context& io, QueryEngine& engine, Clock& clock, CuServerOptions options)
    : impl_(std::make_shared<Impl>(io, engine, clock, std::move(options))) {}

CuServer::~CuServer() { stop(); }

Status CuServer::start() {
  LCC_ASSIGN_OR_RETURN(tcp::endpoint ep, parseEndpoint(impl_->options.listen));
  boost::system::error_code ec;
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::ioError("cu: cannot listen on " + impl_->options.listen + ": " + ec.message());
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->workers.start(impl_->options.export_threads);
  impl_->accept();
  return Status::ok();
}

void CuServer::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  // The acceptor belongs to the io threads: close it there (or here, if none run).
  auto done = std::make_shared<std::promise<void>>();
  auto fut = done->get_future();
  asio::post(impl_->io, [impl = impl_, done] {
    boost::system::error_code ec;
    impl->acceptor.close(ec);
    done->set_value();
  });
  if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
  }
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

std::uint16_t CuServer::port() const { return impl_->port; }

std::size_t CuServer::connections() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->conns.size();
}

}  // namespace lcc::cu
