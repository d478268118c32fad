// server.cc — the Boost.Beast HTTP/1.1 server behind http_server.h.
//
// io threads (the daemon's io_context) only carry bytes and timers: one strand per
// connection, reads with a deadline (idle/read timeout), writes with a deadline.
// Handlers run on `workers` threads; streaming bodies run on `stream_workers`
// threads, so a slow download never starves ordinary requests. A streaming body is
// written through a bounded per-connection queue: ByteSink::write() blocks while the
// queue is full (back-pressure) and fails once the client is gone or stop() ran.
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <spdlog/spdlog.h>
#include <unordered_map>

#include "common/metrics.h"
#include "http/http_server.h"
#include "http/stream_sink.h"
#include "http/url_codec.h"
#include "net/host_port.h"
#include "net/tls.h"

namespace lcc::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string lowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool isLoopback(const asio::ip::address& a) {
  if (a.is_loopback()) return true;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()).is_loopback();
  }
  return false;
}

Result<tcp::endpoint> parseListen(const std::string& listen) {
  LCC_ASSIGN_OR_RETURN(net::HostPort hp, net::HostPort::parse(listen));
  std::string host = hp.resolverHost();
  if (host == "localhost") host = "127.0.0.1";
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return Status::invalidArgument("bad address in " + listen + ": " + ec.message());
  return tcp::endpoint(addr, hp.port);
}

}  // namespace

struct ConnBase;

// What connections share with the server; outlives the Server object while any
// connection or queued task still refers to it.
struct Shared {
  const Router* router = nullptr;
  ServerOptions options;
  asio::thread_pool workers;
  asio::thread_pool stream_workers;
  std::atomic<bool> stopped{false};
  std::atomic<bool> io_seen_running{false};  // an io thread ran one of our handlers
  std::atomic<std::size_t> open{0};
  std::mutex mu;  // guards conns
  std::unordered_map<std::uint64_t, std::weak_ptr<ConnBase>> conns;
  std::uint64_t next_id = 1;
  std::vector<std::weak_ptr<StreamSink>> sinks;  // guarded by mu

  // Counters (null without options.metrics).
  Counter* requests = nullptr;
  Counter* client_errors = nullptr;
  Counter* server_errors = nullptr;
  Counter* refused = nullptr;
  Counter* streams_cut = nullptr;
  Gauge* open_gauge = nullptr;

  Shared(const Router* r, ServerOptions o)
      : router(r), options(std::move(o)), workers(std::max<std::size_t>(1, options.workers)),
        stream_workers(std::max<std::size_t>(1, options.stream_workers)) {
    if (Metrics* m = options.metrics) {
      requests = &m->counter("lcc_http_requests_total", "HTTP requests handled");
      client_errors = &m->counter("lcc_http_client_errors_total", "HTTP answers 4xx (including 413/431 and 400)");
      server_errors = &m->counter("lcc_http_server_errors_total", "HTTP answers 5xx");
      refused = &m->counter("lcc_http_connections_refused_total", "connections refused beyond http.max_connections");
      streams_cut = &m->counter("lcc_http_streams_cut_total", "streamed answers ended early (client gone or error)");
      open_gauge = &m->gauge("lcc_http_connections_open", "HTTP connections open");
    }
  }
  void countStatus(int status) {
    if (requests) requests->inc();
    if (status >= 400 && status < 500 && client_errors) client_errors->inc();
    if (status >= 500 && server_errors) server_errors->inc();
  }
};

// Remembers a sink so that stop() can unblock its stream thread; fails it at once
// when the server is already stopping.
void registerSink(Shared& sh, const std::shared_ptr<StreamSink>& sink) {
  std::lock_guard<std::mutex> lock(sh.mu);
  std::erase_if(sh.sinks, [](const std::weak_ptr<StreamSink>& w) { return w.expired(); });
  sh.sinks.push_back(sink);
  if (sh.stopped) sink->fail();
}

void failAllSinks(Shared& sh) {
  std::vector<std::shared_ptr<StreamSink>> live;
  {
    std::lock_guard<std::mutex> lock(sh.mu);
    for (auto& w : sh.sinks) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->fail();
}

// What stop() needs of a connection, plain or TLS.
struct ConnBase {
  virtual ~ConnBase() = default;
  // Closes on the connection's strand (from any thread).
  virtual void closeFromOutside() = 0;
};

using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One connection: `Stream` is beast::tcp_stream (listen.http) or TlsStream
// (listen.https, after the TLS handshake).
template <class Stream>
struct Connection final : ConnBase, std::enable_shared_from_this<Connection<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using std::enable_shared_from_this<Connection<Stream>>::shared_from_this;
  using std::enable_shared_from_this<Connection<Stream>>::weak_from_this;

  std::shared_ptr<Shared> shared;
  std::uint64_t id = 0;
  Stream stream;
  beast::flat_buffer buffer;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser;
  std::string remote_ip;
  bool remote_loopback = false;
  std::shared_ptr<StreamSink> sink;  // while a streamed body is being sent
  bool closed = false;
  net::TlsContextPtr tls_context;  // TLS: outlives the session made from it

  template <class... TlsContext>
  Connection(std::shared_ptr<Shared> s, tcp::socket socket, TlsContext&... ctx)
      : shared(std::move(s)), stream(std::move(socket), ctx...) {
    boost::system::error_code ec;
    auto ep = lowest().socket().remote_endpoint(ec);
    if (!ec) {
      remote_ip = ep.address().is_v6() && ep.address().to_v6().is_v4_mapped()
                      ? asio::ip::make_address_v4(asio::ip::v4_mapped, ep.address().to_v6()).to_string()
                      : ep.address().to_string();
      remote_loopback = isLoopback(ep.address());
    }
  }

  ~Connection() override {
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->conns.erase(id);
    }
    shared->open.fetch_sub(1);
    if (shared->open_gauge) shared->open_gauge->add(-1);
  }

  std::chrono::milliseconds timeout() const { return std::chrono::milliseconds(shared->options.idle_timeout_ms); }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream); }

  void start() {
    asio::dispatch(stream.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        // The handshake within the header timeout; a failed one (plain text, a client
        // that refuses our certificate) just closes.
        self->lowest().expires_after(std::chrono::milliseconds(self->shared->options.header_timeout_ms));
        self->stream.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) {
            spdlog::debug("http: TLS handshake with {}: {}", self->remote_ip, ec.message());
            return self->close();
          }
          self->readHeader();
        });
      } else {
        self->readHeader();
      }
    });
  }

  void closeFromOutside() override {
    asio::post(stream.get_executor(), [self = shared_from_this()] { self->close(); });
  }

  void close() {
    if (closed) return;
    closed = true;
    if (sink) sink->fail();
    boost::system::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }

  void readHeader() {
    if (shared->stopped) return close();
    parser.emplace();
    parser->header_limit(static_cast<std::uint32_t>(shared->options.max_header));
    parser->body_limit(shared->options.max_body);
    if (buffer.size() > 0) return readHeaderRest();  // a pipelined request is already here
    // Waiting for a request: the idle timeout. Once its first bytes are in, the whole
    // header must follow within the header timeout (slow-header clients).
    lowest().expires_after(timeout());
    stream.async_read_some(buffer.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
      if (ec) return self->onReadError(ec);
      self->buffer.commit(n);
      self->readHeaderRest();
    });
  }

  void readHeaderRest() {
    lowest().expires_after(std::min(timeout(), std::chrono::milliseconds(shared->options.header_timeout_ms)));
    bhttp::async_read_header(stream, buffer, *parser,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) { self->onHeader(ec); });
  }

  void onHeader(beast::error_code ec) {
    if (ec) return onReadError(ec);
    auto& req = parser->get();
    if (auto len = parser->content_length(); len && *len > shared->options.max_body) {
      return sendError(413, "request body too large\n");
    }
    if (beast::iequals(req[bhttp::field::expect], "100-continue")) {
      auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      lowest().expires_after(timeout());
      asio::async_write(stream, asio::buffer(*cont), [self = shared_from_this(), cont](beast::error_code wec, std::size_t) {
        if (wec) return self->close();
        self->readBody();
      });
      return;
    }
    readBody();
  }

  void readBody() {
    if (parser->is_done()) return onRequest();
    lowest().expires_after(timeout());
    bhttp::async_read(stream, buffer, *parser, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->onReadError(ec);
      self->onRequest();
    });
  }

  void onReadError(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) return sendError(413, "request body too large\n");
    if (ec == bhttp::error::header_limit) return sendError(431, "request header fields too large\n");
    if (ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::ssl::error::stream_truncated) {
      return close();
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::bad_field).category()) {
      return sendError(400, "bad request\n");
    }
    close();
  }

  // A response to a request we could not read: always closes the connection.
  void sendError(int status, std::string body) {
    shared->countStatus(status);
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(status), 11);
    res->set(bhttp::field::content_type, "text/plain; charset=utf-8");
    res->set(bhttp::field::server, "lccd");
    res->keep_alive(false);
    res->body() = std::move(body);
    res->prepare_payload();
    lowest().expires_after(timeout());
    bhttp::async_write(stream, *res, [self = shared_from_this(), res](beast::error_code, std::size_t) { self->close(); });
  }

  void onRequest() {
    auto msg = parser->release();
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.remote_ip = remote_ip;
    req.remote_loopback = remote_loopback;
    for (const auto& f : msg) {
      std::string name = lowerAscii(std::string_view(f.name_string().data(), f.name_string().size()));
      auto [it, inserted] = req.headers.emplace(name, std::string(f.value()));
      if (!inserted) {
        it->second += ", ";
        it->second += std::string(f.value());
      }
    }
    req.body = std::move(msg.body());
    std::string_view target(req.target);
    auto q = target.find('?');
    auto decoded = percentDecode(target.substr(0, q), false);
    if (!decoded || decoded->empty() || decoded->front() != '/' || decoded->find('\0') != std::string::npos) {
      return sendError(400, "bad request target\n");
    }
    req.path = std::move(*decoded);
    if (q != std::string_view::npos && !parseQuery(target.substr(q + 1), &req.query)) {
      return sendError(400, "bad query string\n");
    }
    if ((req.method == "POST" || req.method == "PATCH") && req.header("content-type").rfind("application/x-www-form-urlencoded", 0) == 0 &&
        !parseQuery(req.body, &req.query)) {
      return sendError(400, "bad form body\n");
    }
    const bool keep_alive = msg.keep_alive();
    const bool http10 = msg.version() < 11;
    const bool head = req.method == "HEAD";
    auto self = shared_from_this();
    asio::post(shared->workers, [self, req = std::move(req), keep_alive, head, http10]() mutable {
      Response res;
      try {
        res = self->shared->router->dispatch(req);
      } catch (const std::exception& e) {
        spdlog::error("http: handler for {} {} threw: {}", req.method, req.path, e.what());
        res = Response::text(500, "internal error\n");
      } catch (...) {
        spdlog::error("http: handler for {} {} threw", req.method, req.path);
        res = Response::text(500, "internal error\n");
      }
      asio::post(self->stream.get_executor(), [self, res = std::move(res), keep_alive, head, http10]() mutable {
        self->respond(std::move(res), keep_alive, head, http10);
      });
    });
  }

  template <class Msg>
  void setCommon(Msg& m, const Response& res, bool keep_alive) {
    m.set(bhttp::field::server, "lccd");
    m.set(bhttp::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers) m.insert(k, v);
    m.keep_alive(keep_alive && !shared->stopped);
  }

  void respond(Response res, bool keep_alive, bool head, bool http10) {
    if (closed) return;
    shared->countStatus(res.status);
    if (res.stream && !head) return respondStream(std::move(res), keep_alive, http10);
    auto m = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(res.status), 11);
    setCommon(*m, res, keep_alive);
    if (res.stream) {  // HEAD of a streamed resource: headers only
      if (res.stream_length) {
        m->content_length(*res.stream_length);
      } else if (!http10) {
        m->chunked(true);
      }
      m->body().clear();
    } else {
      m->body() = std::move(res.body);
      m->prepare_payload();
      if (head) m->body().clear();  // Content-Length stays that of the GET
    }
    std::shared_ptr<bhttp::response_serializer<bhttp::string_body>> sr;
    lowest().expires_after(timeout());
    if (head && res.stream) {
      sr = std::make_shared<bhttp::response_serializer<bhttp::string_body>>(*m);
      bhttp::async_write_header(stream, *sr, [self = shared_from_this(), m, sr](beast::error_code ec, std::size_t) {
        self->afterResponse(ec, m->keep_alive());
      });
      return;
    }
    bhttp::async_write(stream, *m, [self = shared_from_this(), m](beast::error_code ec, std::size_t) {
      self->afterResponse(ec, m->keep_alive());
    });
  }

  void afterResponse(beast::error_code ec, bool keep_alive) {
    if (ec || !keep_alive || shared->stopped) return close();
    readHeader();
  }

  void respondStream(Response res, bool keep_alive, bool http10) {
    auto m = std::make_shared<bhttp::response<bhttp::empty_body>>(static_cast<bhttp::status>(res.status), 11);
    setCommon(*m, res, keep_alive);
    // A known length goes as Content-Length; otherwise chunked, and HTTP/1.0 (no chunked
    // encoding) gets the body until the connection closes.
    const bool chunked = !res.stream_length && !http10;
    if (res.stream_length) {
      m->content_length(*res.stream_length);
    } else if (http10) {
      m->keep_alive(false);
    } else {
      m->chunked(true);
    }
    auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*m);
    std::weak_ptr<Connection> weak = weak_from_this();  // the injected class name: Connection<Stream>
    auto executor = stream.get_executor();
    sink = std::make_shared<StreamSink>(shared->options.stream_buffer, chunked, res.stream_length, [weak, executor] {
      asio::post(executor, [weak] {
        if (auto c = weak.lock()) c->pump();
      });
    });
    registerSink(*shared, sink);
    lowest().expires_after(timeout());
    bhttp::async_write_header(
        stream, *sr,
        [self = shared_from_this(), m, sr, fn = std::move(res.stream), keep_alive = m->keep_alive()](
            beast::error_code ec, std::size_t) mutable {
          if (ec) return self->close();
          auto sk = self->sink;
          asio::post(self->shared->stream_workers, [self, sk, fn = std::move(fn), keep_alive]() mutable {
            Status st;
            try {
              st = fn(*sk);
            } catch (const std::exception& e) {
              st = Status::internal(std::string("stream threw: ") + e.what());
            } catch (...) {
              st = Status::internal("stream threw");
            }
            if (!st.isOk() && !sk->failed()) {
              spdlog::warn("http: streamed body for {} ended early: {}", self->remote_ip, st.toString());
            }
            bool clean = st.isOk() && sk->finish().isOk();
            if (!clean && self->shared->streams_cut) self->shared->streams_cut->inc();
            asio::post(self->stream.get_executor(), [self, clean, keep_alive] {
              self->sink.reset();
              // An unfinished body (chunked, or short of its length) can only be ended by
              // closing the connection.
              self->afterResponse(clean ? beast::error_code() : beast::error_code(asio::error::broken_pipe),
                                  keep_alive);
            });
          });
        });
  }

  void pump() {
    if (!sink || closed) return;
    auto next = sink->takeNext();
    if (!next) return;
    auto buf = std::make_shared<std::string>(std::move(*next));
    lowest().expires_after(timeout());
    asio::async_write(stream, asio::buffer(*buf), [self = shared_from_this(), buf](beast::error_code ec, std::size_t) {
      if (!self->sink) return;
      if (ec) {
        self->sink->fail();
        self->close();
        return;
      }
      self->sink->written(buf->size());
      self->pump();
    });
  }
};

struct Server::Impl {
  asio::io_context& io;
  std::shared_ptr<Shared> shared;
  tcp::acceptor acceptor;
  asio::steady_timer retry_timer;
  std::uint16_t port = 0;
  bool started = false;
  bool stopped = false;

  Impl(asio::io_context& i, const Router& router, ServerOptions options)
      : io(i), shared(std::make_shared<Shared>(&router, std::move(options))), acceptor(asio::make_strand(i)), retry_timer(acceptor.get_executor()) {}

  void accept() {
    acceptor.async_accept(asio::make_strand(io), [this, sh = shared](beast::error_code ec, tcp::socket socket) {
      if (sh->stopped) return;
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        // Out of file descriptors and the like: breathe before trying again.
        spdlog::warn("http: accept failed: {}; retrying in 100 ms", ec.message());
        retry_timer.expires_after(std::chrono::milliseconds(100));
        retry_timer.async_wait([this, sh](beast::error_code tec) {
          if (!tec && !sh->stopped) accept();
        });
        return;
      }
      onAccepted(std::move(socket));
      accept();
    });
  }

  void onAccepted(tcp::socket socket) {
    const std::shared_ptr<net::TlsContextSlot>& tls = shared->options.tls;
    // Answers leave in whole writes; Nagle would hold the tail of one until the peer's
    // delayed ACK (~40 ms per request on a keep-alive connection).
    boost::system::error_code nodelay_ec;
    socket.set_option(tcp::no_delay(true), nodelay_ec);
    if (shared->open.load() >= shared->options.max_connections) {
      if (shared->refused) shared->refused->inc();
      if (tls) {  // no TLS session for a refusal: the client sees the connection close
        boost::system::error_code ignored;
        socket.close(ignored);
        return;
      }
      // Refuse politely and close.
      static const std::string kBusy =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n"
          "Connection: close\r\nRetry-After: 5\r\n\r\ntoo many connections\n";
      auto sock = std::make_shared<tcp::socket>(std::move(socket));
      asio::async_write(*sock, asio::buffer(kBusy), [sock](beast::error_code, std::size_t) {
        boost::system::error_code ignored;
        sock->shutdown(tcp::socket::shutdown_both, ignored);
        sock->close(ignored);
      });
      return;
    }
    shared->open.fetch_add(1);
    if (shared->open_gauge) shared->open_gauge->add(1);
    if (tls) {
      // Each connection keeps the context it started with (a SIGHUP reload replaces
      // the slot's, not this one).
      net::TlsContextPtr ctx = tls->current();
      begin(std::make_shared<Connection<TlsStream>>(shared, std::move(socket), *ctx), ctx);
    } else {
      begin(std::make_shared<Connection<beast::tcp_stream>>(shared, std::move(socket)), nullptr);
    }
  }

  template <class Conn>
  void begin(std::shared_ptr<Conn> conn, net::TlsContextPtr ctx) {
    conn->tls_context = std::move(ctx);
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      conn->id = shared->next_id++;
      shared->conns.emplace(conn->id, conn);
    }
    conn->start();
  }
};

Server::Server(boost::asio::io_context& io, const Router& router, ServerOptions options)
    : impl_(new Impl(io, router, std::move(options))) {}

Server::~Server() { stop(); }

Status Server::start() {
  if (impl_->started) return Status::invalidArgument("the HTTP server was already started");
  LCC_ASSIGN_OR_RETURN(tcp::endpoint ep, parseListen(impl_->shared->options.listen));
  boost::system::error_code ec;
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    boost::system::error_code ignored;  // keep the reason: close() would overwrite ec
    a.close(ignored);
    return Status::ioError("cannot listen on " + impl_->shared->options.listen + ": " + ec.message());
  }
  impl_->port = a.local_endpoint(ec).port();
  impl_->started = true;
  asio::post(impl_->acceptor.get_executor(), [sh = impl_->shared] { sh->io_seen_running = true; });
  impl_->accept();
  return Status::ok();
}

void Server::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  auto sh = impl_->shared;
  sh->stopped = true;
  // Close the listener on its strand (the acceptor is not thread-safe), and wait
  // for that when io threads run; when none ever ran, nobody else touches it.
  if (sh->io_seen_running) {
    struct Done {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
    };
    auto d = std::make_shared<Done>();
    asio::dispatch(impl_->acceptor.get_executor(), [d, acc = &impl_->acceptor, timer = &impl_->retry_timer, sh] {
      boost::system::error_code ec;
      acc->close(ec);
      timer->cancel();
      std::lock_guard<std::mutex> lock(d->mu);
      d->done = true;
      d->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(d->mu);
    if (!d->cv.wait_for(lock, std::chrono::seconds(5), [&] { return d->done; })) {
      spdlog::warn("http: the io threads did not close the listener within 5 s");
    }
  } else {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
  }
  std::vector<std::shared_ptr<ConnBase>> conns;
  {
    std::lock_guard<std::mutex> lock(sh->mu);
    for (auto& [id, weak] : sh->conns) {
      if (auto c = weak.lock()) conns.push_back(std::move(c));
    }
  }
  // Unblock a stream thread now, from here: the io threads may be gone already.
  for (auto& c : conns) c->closeFromOutside();
  conns.clear();
  failAllSinks(*sh);
  sh->workers.join();
  sh->stream_workers.join();
}

std::uint16_t Server::port() const { return impl_->port; }

}  // namespace lcc::http
