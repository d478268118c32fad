// server.cc — the Boost.Beast HTTP/1.1 server behind http_server.h: the listener, the
// admission of each accepted connection, start() and stop(). A connection's reading and
// answering is in server_connection.h, the request rules in request_reader.h.
//
// io threads (the daemon's io_context) only carry bytes and timers: one strand per
// connection. Handlers run on `workers` threads; streaming bodies run on
// `stream_workers` threads, so a slow download never starves ordinary requests.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <condition_variable>
#include <mutex>

#include "http/http_server.h"
#include "http/server_connection.h"
#include "http/server_shared.h"
#include "http/url_codec.h"
#include "net/descriptor_budget.h"
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

std::string toRequest(BeastRequest& msg, Request* req) {
  req->method = std::string(msg.method_string());
  req->target = std::string(msg.target());
  for (const auto& f : msg) {
    std::string name = lowerAscii(std::string_view(f.name_string().data(), f.name_string().size()));
    auto [it, inserted] = req->headers.emplace(name, std::string(f.value()));
    if (!inserted) {
      it->second += ", ";
      it->second += std::string(f.value());
    }
  }
  req->body = std::move(msg.body());
  std::string_view target(req->target);
  auto q = target.find('?');
  auto decoded = percentDecode(target.substr(0, q), false);
  if (!decoded || decoded->empty() || decoded->front() != '/' || decoded->find('\0') != std::string::npos) {
    return "bad request target\n";
  }
  req->path = std::move(*decoded);
  if (q != std::string_view::npos && !parseQuery(target.substr(q + 1), &req->query)) return "bad query string\n";
  if ((req->method == "POST" || req->method == "PATCH") &&
      req->header("content-type").rfind("application/x-www-form-urlencoded", 0) == 0 &&
      !parseQuery(req->body, &req->query)) {
    return "bad form body\n";
  }
  return "";
}

Response busyResponse(const char* what) {
  Response r = Response::text(503, std::string("too many ") + what + " from your address at once; try again\n");
  r.headers.emplace_back("Retry-After", "5");
  return r;
}

namespace {

enum class Admission { kAdmit, kTooMany, kTooManyFromAddress, kNoDescriptors };

// Whether an accepted connection from `ip` may stay: the one place every HTTP(S)
// connection passes before it costs anything (no TLS handshake, no read). On kAdmit
// `*slot` holds its place among its address's connections and `*place` its descriptor
// in the process's budget (net::DescriptorBudget: the stores' reserve is never spent).
Admission admit(Shared& sh, int fd, const std::string& ip, AddressSlots::Slot* slot, std::shared_ptr<void>* place) {
  *place = net::DescriptorBudget::process().admit(fd);
  if (!*place) return Admission::kNoDescriptors;
  *slot = sh.slots->tryAcquire(ip, AddressSlots::kConnection, sh.options.max_connections_per_ip);
  if (!*slot) return Admission::kTooManyFromAddress;
  // At the total limit an idle connection (waiting for a request) makes room: it is
  // closed, and the count drops once it is gone.
  if (sh.open.load() >= sh.options.max_connections && !sh.evictIdle()) {
    slot->reset();
    return Admission::kTooMany;
  }
  return Admission::kAdmit;
}

// Refuses a connection at once: plain HTTP gets a 503, HTTPS is just closed (no TLS
// session for a refusal).
void refuse(tcp::socket socket, bool tls) {
  boost::system::error_code ignored;
  if (tls) {
    socket.close(ignored);
    return;
  }
  static const std::string kBusy =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n"
      "Connection: close\r\nRetry-After: 5\r\n\r\ntoo many connections\n";
  // A few bytes into an empty socket buffer: the write completes at once.
  auto sock = std::make_shared<tcp::socket>(std::move(socket));
  asio::async_write(*sock, asio::buffer(kBusy), [sock](boost::system::error_code, std::size_t) {
    boost::system::error_code ec;
    sock->shutdown(tcp::socket::shutdown_both, ec);
    sock->close(ec);
  });
}

std::string peerAddress(const tcp::socket& socket, bool* loopback) {
  boost::system::error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "";
  *loopback = isLoopback(ep.address());
  return ep.address().is_v6() && ep.address().to_v6().is_v4_mapped()
             ? asio::ip::make_address_v4(asio::ip::v4_mapped, ep.address().to_v6()).to_string()
             : ep.address().to_string();
}

}  // namespace

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
    bool loopback = false;
    std::string ip = peerAddress(socket, &loopback);
    AddressSlots::Slot slot;
    std::shared_ptr<void> place;
    const Admission admission = admit(*shared, socket.native_handle(), ip, &slot, &place);
    if (admission != Admission::kAdmit) {
      if (shared->refused) shared->refused->inc();
      if (admission == Admission::kTooManyFromAddress && shared->refused_per_ip) shared->refused_per_ip->inc();
      spdlog::debug("http: refused a connection from {} ({})", ip,
                    admission == Admission::kTooMany              ? "http.max_connections"
                    : admission == Admission::kNoDescriptors ? "net.reserved_descriptors"
                                                             : "http.max_connections_per_ip");
      // Out of descriptors: closed at once, no answer (an answer would spend the reserve).
      return refuse(std::move(socket), tls != nullptr || admission == Admission::kNoDescriptors);
    }
    shared->open.fetch_add(1);
    if (shared->open_gauge) shared->open_gauge->add(1);
    if (tls) {
      // Each connection keeps the context it started with (a SIGHUP reload replaces
      // the slot's, not this one).
      net::TlsContextPtr ctx = tls->current();
      begin(std::make_shared<Connection<TlsStream>>(shared, std::move(socket), std::move(ip), loopback,
                                                    std::move(slot), *ctx),
            ctx, std::move(place));
    } else {
      begin(std::make_shared<Connection<beast::tcp_stream>>(shared, std::move(socket), std::move(ip), loopback,
                                                            std::move(slot)),
            nullptr, std::move(place));
    }
  }

  template <class Conn>
  void begin(std::shared_ptr<Conn> conn, net::TlsContextPtr ctx, std::shared_ptr<void> place) {
    conn->tls_context = std::move(ctx);
    conn->descriptor_place = std::move(place);
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
  sh->failAllSinks();
  sh->workers.join();
  sh->stream_workers.join();
}

std::uint16_t Server::port() const { return impl_->port; }

std::size_t Server::idleConnectionsForTest() const {
  std::lock_guard<std::mutex> lock(impl_->shared->mu);
  std::size_t n = 0;
  for (auto& [id, weak] : impl_->shared->conns) {
    if (auto c = weak.lock(); c && c->idle_since.load() != 0) ++n;
  }
  return n;
}

}  // namespace lcc::http
