#include "qm/intake_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <mutex>

#include "net/acceptor.h"
#include "net/conn_set.h"
#include "proto/uns_qm.h"

namespace lcc::qm {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

class IntakeConn final : public std::enable_shared_from_this<IntakeConn>, private proto::UnsStreamHandler {
 public:
  IntakeConn(std::shared_ptr<net::Connection> conn, const IntakeServerOptions& o, IntakeServer::SubmitFn submit)
      : conn_(std::move(conn)),
        decoder_(*this, proto::UnsQmLimits{o.max_attribute_length, o.max_set_urls}),
        submit_(std::move(submit)) {}

  void start(std::function<void()> on_closed) {
    net::Connection::Handlers h;
    auto self = shared_from_this();
    h.on_bytes = [self](std::string_view bytes) { self->onBytes(bytes); };
    h.on_close = [self, on_closed = std::move(on_closed)](net::CloseReason, const std::string&) {
      if (on_closed) on_closed();
    };
    conn_->start(std::move(h));
  }
  // Called from any thread: close once every set sent so far is acknowledged.
  void closeWhenAcked() {
    asio::post(conn_->strand(), [self = shared_from_this()] {
      self->closing_ = true;
      self->maybeClose();
    });
  }
  void closeNow() { conn_->close(net::CloseReason::kShutdown); }

 private:
  const std::string& peer() const { return conn_->peer(); }

  void onBytes(std::string_view bytes) {
    if (broken_ || decoder_.feed(bytes.data(), bytes.size())) return;
    if (decoder_.failed()) {
      broken_ = true;
      spdlog::warn("qm intake: {} ({}): {}; disconnecting", peer(), uns_.empty() ? "?" : uns_,
                   decoder_.errorMessage());
      conn_->closeAfterFlush({}, net::CloseReason::kProtocolError);
      return;
    }
    // Closed by the UNS: answer what is outstanding, then close (maybeClose). Reading
    // goes on only to notice the peer going away; the decoder ignores the bytes.
    closing_ = true;
    maybeClose();
  }
  void onUnsOpen(std::string_view name) override {
    uns_ = std::string(name);
    conn_->send(proto::encodeQmOpen());
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
    auto self = shared_from_this();
    submit_(std::move(s), [self, id](bool ok, ErrorCode code, const std::string& reason) {
      proto::UnsQmAck ack;
      ack.id = id;
      ack.ok = ok;
      if (!ok) {
        ack.code = code == ErrorCode::kNone ? ErrorCode::kOffline : code;
        ack.reason = reason;
      }
      self->conn_->send(proto::encodeAck(ack));
      asio::post(self->conn_->strand(), [self] {
        --self->outstanding_;
        self->maybeClose();
      });
    });
  }
  void onPing() override { conn_->send(proto::encodePong()); }

  void maybeClose() {
    if (closing_ && outstanding_ == 0 && !close_sent_) {
      close_sent_ = true;
      conn_->closeAfterFlush(proto::encodeQmClose());
    }
  }

  std::shared_ptr<net::Connection> conn_;
  proto::UnsStreamDecoder decoder_;
  IntakeServer::SubmitFn submit_;
  std::string uns_;
  std::uint64_t outstanding_ = 0;
  bool closing_ = false;
  bool close_sent_ = false;
  bool broken_ = false;
};

}  // namespace

struct IntakeServer::Impl : std::enable_shared_from_this<IntakeServer::Impl> {
  Impl(asio::io_context& io_, IntakeServerOptions o, SubmitFn s)
      : io(io_), strand(asio::make_strand(io_)), options(std::move(o)), submit(std::move(s)) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  IntakeServerOptions options;
  SubmitFn submit;
  std::shared_ptr<net::Acceptor> acceptor;
  bool accepting = true;  // strand
  std::atomic<bool> stopped{false};
  net::ConnSet<IntakeConn> conns;

  void accepted(std::shared_ptr<net::Connection> c, net::Admission) {
    if (stopped) return c->close(net::CloseReason::kShutdown);
    conns.add([&](std::uint64_t, std::function<void()> on_closed) {
      auto ic = std::make_shared<IntakeConn>(std::move(c), options, submit);
      ic->start(std::move(on_closed));
      return ic;
    });
  }
};

IntakeServer::IntakeServer(asio::io_context& io, IntakeServerOptions options, SubmitFn submit)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(submit))) {}

IntakeServer::~IntakeServer() { stop(); }

Status IntakeServer::start() {
  net::AcceptorOptions ao;
  ao.what = "listen.qm";
  LCC_RETURN_IF_ERROR(net::setListenAddress(ao, impl_->options.listen, impl_->options.tls));
  impl_->acceptor = net::makeAcceptor(impl_->io, ao, impl_);
  return impl_->acceptor->start();
}

void IntakeServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  if (impl_->acceptor) impl_->acceptor->stop();
  for (auto& c : impl_->conns.all()) c->closeNow();
}

void IntakeServer::setAccepting(bool accepting) {
  asio::post(impl_->strand, [self = impl_, accepting] {
    if (self->stopped || self->accepting == accepting) return;
    self->accepting = accepting;
    if (!self->acceptor) return;
    if (!accepting) {
      self->acceptor->stop();
      for (auto& c : self->conns.all()) c->closeWhenAcked();
      spdlog::warn("qm intake: not taking sets: listener closed");
    } else {
      self->acceptor->resume();
    }
  });
}

std::uint16_t IntakeServer::port() const { return impl_->acceptor ? impl_->acceptor->port() : 0; }

std::size_t IntakeServer::connections() const { return impl_->conns.size(); }

bool IntakeServer::listening() const { return impl_->acceptor && impl_->acceptor->listening(); }

}  // namespace lcc::qm
