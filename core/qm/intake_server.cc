#include "qm/intake_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <mutex>

#include "proto/uns_qm.h"
#include "qm/stream_conn.h"

namespace lcc::qm {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

class IntakeConn final : public StreamConn, private proto::UnsStreamHandler {
 public:
  IntakeConn(tcp::socket s, const IntakeServerOptions& o, IntakeServer::SubmitFn submit, std::function<void()> on_closed)
      : StreamConn(std::move(s)),
        decoder_(*this, proto::UnsQmLimits{o.max_attribute_length, o.max_set_urls}),
        submit_(std::move(submit)),
        on_closed_(std::move(on_closed)) {}

  // Called from any thread: close once every set sent so far is acknowledged.
  void closeWhenAcked() {
    asio::post(strand(), [self = std::static_pointer_cast<IntakeConn>(shared_from_this())] {
      self->closing_ = true;
      self->maybeClose();
    });
  }

 private:
  bool onBytes(std::string_view bytes) override {
    if (!decoder_.feed(bytes.data(), bytes.size())) {
      if (decoder_.failed()) {
        spdlog::warn("qm intake: {} ({}): {}; disconnecting", peer(), uns_.empty() ? "?" : uns_,
                     decoder_.errorMessage());
        return false;
      }
      // Closed by the UNS: answer what is outstanding, then close (maybeClose). Reading
      // goes on only to notice the peer going away; the decoder ignores the bytes.
      closing_ = true;
      maybeClose();
      return true;
    }
    return true;
  }
  void onClosed() override {
    if (on_closed_) on_closed_();
  }
  void onUnsOpen(std::string_view name) override {
    uns_ = std::string(name);
    send(proto::encodeQmOpen());
    spdlog::info("qm intake: UNS {} connected from {}", uns_, peer());
  }
  void onSet(proto::UnsQmSet&& set) override {
    IntakeSet s;
    s.uns = uns_;
    s.id = set.header.id;
    s.pid = set.header.pid;
    s.kind = set.header.kind;
    s.urls = std::move(set.urls);
    for (auto& u : s.urls) u.key.pid = s.pid;
    const std::uint64_t id = s.id;
    ++outstanding_;
    auto self = std::static_pointer_cast<IntakeConn>(shared_from_this());
    submit_(std::move(s), [self, id](bool ok, ErrorCode code, const std::string& reason) {
      proto::UnsQmAck ack;
      ack.id = id;
      ack.ok = ok;
      if (!ok) {
        ack.code = code == ErrorCode::kNone ? ErrorCode::kOffline : code;
        ack.reason = reason;
      }
      self->send(proto::encodeAck(ack));
      asio::post(self->strand(), [self] {
        --self->outstanding_;
        self->maybeClose();
      });
    });
  }
  void onPing() override { send(proto::encodePong()); }

  void maybeClose() {
    if (closing_ && outstanding_ == 0 && !close_sent_) {
      close_sent_ = true;
      send(proto::encodeQmClose());
      close(true);
    }
  }

  proto::UnsStreamDecoder decoder_;
  IntakeServer::SubmitFn submit_;
  std::function<void()> on_closed_;
  std::string uns_;
  std::uint64_t outstanding_ = 0;
  bool closing_ = false;
  bool close_sent_ = false;
};

}  // namespace

struct IntakeServer::Impl : std::enable_shared_from_this<IntakeServer::Impl> {
  Impl(asio::io_context& io_, IntakeServerOptions o, SubmitFn s)
      : io(io_), strand(asio::make_strand(io_)), options(std::move(o)), submit(std::move(s)) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  IntakeServerOptions options;
  SubmitFn submit;
  std::unique_ptr<tcp::acceptor> acceptor;  // on `strand`
  tcp::endpoint endpoint;
  std::atomic<std::uint16_t> port{0};
  std::atomic<bool> listening{false};
  bool accepting = true;
  bool stopped = false;
  ConnSet<IntakeConn> conns;

  Status listen() {
    auto a = std::make_unique<tcp::acceptor>(strand);
    boost::system::error_code ec;
    a->open(endpoint.protocol(), ec);
    if (!ec) a->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a->bind(endpoint, ec);
    if (!ec) a->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Status::ioError("listen.qm " + options.listen + ": " + ec.message());
    port = a->local_endpoint(ec).port();
    endpoint.port(port);  // a restart after overload reuses the same port
    acceptor = std::move(a);
    listening = true;
    accept();
    return Status::ok();
  }
  void accept() {
    if (!acceptor) return;
    acceptor->async_accept(asio::make_strand(io), [self = shared_from_this(), a = acceptor.get()](
                                                      const boost::system::error_code& ec, tcp::socket sock) {
      asio::post(self->strand, [self, a, ec, sock = std::move(sock)]() mutable {
        if (self->acceptor.get() != a) return;  // listener was closed meanwhile
        if (!ec) {
          self->conns.add([&](std::uint64_t, std::function<void()> on_closed) {
            return std::make_shared<IntakeConn>(std::move(sock), self->options, self->submit, std::move(on_closed));
          })->start();
        } else if (ec == asio::error::operation_aborted) {
          return;
        } else {
          spdlog::warn("qm intake: accept: {}", ec.message());
        }
        self->accept();
      });
    });
  }
  void closeListener() {
    if (acceptor) {
      boost::system::error_code ec;
      acceptor->close(ec);
      acceptor.reset();
    }
    listening = false;
  }
  std::vector<std::shared_ptr<IntakeConn>> connections() { return conns.all(); }
};

IntakeServer::IntakeServer(asio::io_context& io, IntakeServerOptions options, SubmitFn submit)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(submit))) {}

IntakeServer::~IntakeServer() { stop(); }

Status IntakeServer::start() {
  auto ep = parseListen(impl_->io, impl_->options.listen);
  if (!ep.isOk()) return ep.status();
  impl_->endpoint = ep.value();
  // Bound here, synchronously, so the caller learns about a port in use; nothing else
  // touches the acceptor before start() returns.
  return impl_->listen();
}

void IntakeServer::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->strand, [self = impl_] { self->closeListener(); });
  for (auto& c : impl_->connections()) c->close(false);
}

void IntakeServer::setAccepting(bool accepting) {
  asio::post(impl_->strand, [self = impl_, accepting] {
    if (self->stopped || self->accepting == accepting) return;
    self->accepting = accepting;
    if (!accepting) {
      self->closeListener();
      for (auto& c : self->connections()) c->closeWhenAcked();
      spdlog::warn("qm intake: not taking sets: listener closed");
    } else {
      Status s = self->listen();
      if (!s.isOk()) {
        spdlog::error("qm intake: listening again: {}", s.toString());
      } else {
        spdlog::info("qm intake: listening again on {}", self->options.listen);
      }
    }
  });
}

std::uint16_t IntakeServer::port() const { return impl_->port; }

std::size_t IntakeServer::connections() const { return impl_->conns.size(); }

bool IntakeServer::listening() const { return impl_->listening; }

}  // namespace lcc::qm
