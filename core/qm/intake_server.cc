#include "qm/intake_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <utility>
#include <mutex>

#include "net/acceptor.h"
#include "net/conn_set.h"
#include "net/local_listeners.h"
#include "proto/link_frames.h"
#include "proto/uns_qm.h"
#include "proto/uns_qm_frames.h"
#include "proto/uns_qm_local.h"

namespace lcc::qm {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

class IntakeConn final : public std::enable_shared_from_this<IntakeConn>, private proto::UnsStreamHandler {
 public:
  // Over TCP: the XML stream, or the compact frames it switches to (proto/uns_qm_frames.h),
  // decoded here. In process (`local`): the UNS's records (proto/uns_qm_local.h), its
  // parsed notices handed over as they are.
  IntakeConn(std::shared_ptr<net::Connection> conn, std::shared_ptr<proto::LocalQmEnd> local,
             const IntakeServerOptions& o, std::shared_ptr<const IntakeSink> sink,
             std::shared_ptr<std::atomic<std::uint64_t>> streams)
      : conn_(std::move(conn)),
        local_(std::move(local)),
        decoder_(*this, proto::UnsQmLimits{o.max_attribute_length, o.max_set_urls}, o.frames && !local_),
        frames_offer_(o.frames),
        sink_(std::move(sink)),
        streams_(std::move(streams)),
        part_urls_(std::max<std::size_t>(1, o.part_urls)),
        parts_in_flight_(std::max<std::size_t>(1, o.parts_in_flight)) {}

  void start(std::function<void()> on_closed) {
    auto self = shared_from_this();
    // Either form: a set cut off by the close is dropped, then the server forgets us.
    auto closed = [self, on_closed = std::move(on_closed)](net::CloseReason, const std::string&) {
      self->abortSet();
      if (on_closed) on_closed();
    };
    if (local_) {
      return local_->start({[self](std::vector<proto::UnsLocalRecord>& batch) { self->onRecords(batch); },
                            std::move(closed)});
    }
    net::Connection::Handlers h;
    h.on_bytes = [self](std::string_view bytes) { self->onBytes(bytes); };
    h.on_close = std::move(closed);
    conn_->start(std::move(h));
  }
  // Called from any thread: close once every set sent so far is acknowledged.
  void closeWhenAcked() {
    asio::post(strand(), [self = shared_from_this()] {
      self->closing_ = true;
      self->maybeClose();
    });
  }
  void closeNow() { local_ ? local_->close(net::CloseReason::kShutdown) : conn_->close(net::CloseReason::kShutdown); }
  bool local() const { return local_ != nullptr; }

 private:
  const std::string& peer() const {
    static const std::string kInProcess = "in process";
    return local_ ? kInProcess : conn_->peer();
  }
  net::Strand& strand() { return local_ ? local_->strand() : conn_->strand(); }

  // In process: the same steps as the decoder's, without the XML. A part is handed to
  // the sink as it came (the UNS sends at most its window before the QM took some).
  void onRecords(std::vector<proto::UnsLocalRecord>& batch) {
    for (auto& r : batch) {
      if (close_sent_) return;
      if (const auto* o = std::get_if<proto::UnsLocalOpen>(&r)) {
        onUnsOpen(o->uns_name, 0);
      } else if (const auto* h = std::get_if<proto::UnsQmSetHeader>(&r)) {
        onSetBegin(*h);
      } else if (auto* u = std::get_if<proto::UnsLocalUrls>(&r)) {
        onLocalUrls(std::move(*u));
      } else if (const auto* e = std::get_if<proto::UnsLocalEnd>(&r)) {
        if (stream_ != 0) onSetEnd();
        (void)e;
      } else if (std::holds_alternative<proto::UnsLocalAbort>(r)) {
        abortSet();
      } else if (std::holds_alternative<proto::UnsLocalClose>(r)) {
        closing_ = true;
        maybeClose();
      }
    }
  }
  void onLocalUrls(proto::UnsLocalUrls&& u) {
    if (stream_ == 0) return (void)local_->send(proto::QmLocalTaken{u.bytes});  // no set open: dropped
    for (auto& n : u.urls) n.key.pid = pid_;
    urls_ += u.urls.size();
    sink_->part(stream_, std::move(u.urls), [self = shared_from_this(), bytes = u.bytes] {
      self->local_->send(proto::QmLocalTaken{bytes});
    });
  }
  // Over TCP the QM takes a UNS's offer of frames (node.link_frames) and switches its own
  // direction at once, behind its opening.
  void sendOpen(std::uint32_t offered) {
    if (local_) return (void)local_->send(proto::QmLocalOpen{});
    framed_ = proto::agreedFrames(offered, frames_offer_) != 0;
    conn_->send(framed_ ? proto::encodeQmOpen(proto::kFramesVersion) + proto::encodeFramesSwitch() : proto::encodeQmOpen());
  }
  void sendAck(proto::UnsQmAck ack) {
    if (local_) return (void)local_->send(std::move(ack));
    if (!framed_) return conn_->send(proto::encodeAck(ack));
    std::string frame;
    proto::appendAckFrame(frame, ack);
    conn_->send(std::move(frame));
  }
  std::string signal(proto::FrameType type, std::string xml) const {
    if (!framed_) return xml;
    std::string frame;
    proto::appendSignalFrame(frame, type);
    return frame;
  }

  void onBytes(std::string_view bytes) {
    if (broken_ || decoder_.feed(bytes.data(), bytes.size())) return;
    if (decoder_.failed()) {
      broken_ = true;
      abortSet();
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
  void onUnsOpen(std::string_view name, std::uint32_t frames) override {
    uns_ = std::string(name);
    sendOpen(frames);
    spdlog::info("qm intake: UNS {} connected ({})", uns_,
                 local_ ? "in process" : "from " + peer() + (framed_ ? ", compact frames" : ""));
  }
  void onSetBegin(const proto::UnsQmSetHeader& h) override {
    stream_ = ++*streams_;
    set_id_ = h.id;
    pid_ = h.pid;
    urls_ = 0;
    part_.clear();
    sink_->begin(stream_, IntakeHeader{uns_, h.id, h.pid, h.kind});
  }
  void onSetUrl(UrlNotice&& u) override {
    u.key.pid = pid_;
    part_.push_back(std::move(u));
    ++urls_;
    if (part_.size() >= part_urls_) handPart();
  }
  void onSetEnd() override {
    if (!part_.empty()) handPart();
    const std::uint64_t id = set_id_;
    const std::uint64_t stream = std::exchange(stream_, 0);
    ++outstanding_;
    auto self = shared_from_this();
    sink_->end(stream, urls_, [self, id](bool ok, ErrorCode code, const std::string& reason) {
      proto::UnsQmAck ack;
      ack.id = id;
      ack.ok = ok;
      if (!ok) {
        ack.code = code == ErrorCode::kNone ? ErrorCode::kOffline : code;
        ack.reason = reason;
      }
      self->sendAck(std::move(ack));
      asio::post(self->strand(), [self] {
        --self->outstanding_;
        self->maybeClose();
      });
    });
  }
  void onPing() override {
    if (conn_) conn_->send(signal(proto::FrameType::kPong, proto::encodePong()));
  }
  // The UNS's CP stopped mid-set (issue 13): nothing of it is applied, no ack.
  void onSetAbort() override { abortSet(); }

  // Hands the URLs read so far over; stops reading while too many wait to be taken.
  void handPart() {
    std::vector<UrlNotice> urls;
    urls.swap(part_);
    part_.reserve(part_urls_);
    ++in_flight_;
    if (in_flight_ >= parts_in_flight_ && reading_) {
      reading_ = false;
      conn_->setReading(false);
    }
    sink_->part(stream_, std::move(urls), [self = shared_from_this()] {
      asio::post(self->conn_->strand(), [self] {
        --self->in_flight_;
        if (!self->reading_ && self->in_flight_ < self->parts_in_flight_) {
          self->reading_ = true;
          self->conn_->setReading(true);
        }
      });
    });
  }
  // The connection ended (or broke) inside a set: nothing of it is taken.
  void abortSet() {
    if (stream_ == 0) return;
    part_.clear();
    sink_->abort(std::exchange(stream_, 0));
  }

  void maybeClose() {
    if (closing_ && outstanding_ == 0 && !close_sent_) {
      close_sent_ = true;
      if (local_) {
        local_->send(proto::QmLocalClose{});
        return local_->close(net::CloseReason::kShutdown);  // after what was sent
      }
      conn_->closeAfterFlush(signal(proto::FrameType::kEnd, proto::encodeQmClose()));
    }
  }

  std::shared_ptr<net::Connection> conn_;     // TCP, or
  std::shared_ptr<proto::LocalQmEnd> local_;  // in process
  proto::UnsStreamDecoder decoder_;
  const bool frames_offer_;  // node.link_frames
  bool framed_ = false;      // this side writes frames (the UNS offered them, TCP)
  std::shared_ptr<const IntakeSink> sink_;
  std::shared_ptr<std::atomic<std::uint64_t>> streams_;
  const std::size_t part_urls_;
  const std::size_t parts_in_flight_;
  std::string uns_;
  // The set being read (stream_ 0: none).
  std::uint64_t stream_ = 0, set_id_ = 0, urls_ = 0;
  ProviderId pid_ = 0;
  std::vector<UrlNotice> part_;
  std::size_t in_flight_ = 0;
  bool reading_ = true;
  std::uint64_t outstanding_ = 0;
  bool closing_ = false;
  bool close_sent_ = false;
  bool broken_ = false;
};

}  // namespace

struct IntakeServer::Impl : std::enable_shared_from_this<IntakeServer::Impl> {
  Impl(asio::io_context& io_, IntakeServerOptions o, IntakeSink s)
      : io(io_), strand(asio::make_strand(io_)), options(std::move(o)),
        sink(std::make_shared<const IntakeSink>(std::move(s))),
        streams(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  IntakeServerOptions options;
  std::shared_ptr<const IntakeSink> sink;
  std::shared_ptr<std::atomic<std::uint64_t>> streams;  // stream numbers handed out
  std::shared_ptr<net::Acceptor> acceptor;
  bool accepting = true;  // strand
  std::atomic<bool> stopped{false};
  net::ConnSet<IntakeConn> conns;

  void accepted(std::shared_ptr<net::Connection> c, net::Admission) {
    if (stopped) return c->close(net::CloseReason::kShutdown);
    conns.add([&](std::uint64_t) { return std::make_shared<IntakeConn>(std::move(c), nullptr, options, sink, streams); },
              [](IntakeConn& ic, std::function<void()> on_closed) { ic.start(std::move(on_closed)); });
  }
  // A UNS of this lccd (issue 28). While the QM takes no sets (overload), the link is
  // closed at once: the UNS spools and tries again after uns.qm_retry, as when its
  // TCP connection is refused.
  void acceptedLocal(std::shared_ptr<proto::LocalQmEnd> end) {
    if (stopped || !accepting_local) return end->close(net::CloseReason::kShutdown, "the QM takes no sets now");
    conns.add([&](std::uint64_t) { return std::make_shared<IntakeConn>(nullptr, std::move(end), options, sink, streams); },
              [](IntakeConn& ic, std::function<void()> on_closed) { ic.start(std::move(on_closed)); });
  }
  std::atomic<bool> accepting_local{true};
};

IntakeServer::IntakeServer(asio::io_context& io, IntakeServerOptions options, IntakeSink sink)
    : impl_(std::make_shared<Impl>(io, std::move(options), std::move(sink))) {}

IntakeServer::~IntakeServer() { stop(); }

Status IntakeServer::start() {
  net::AcceptorOptions ao;
  ao.what = "listen.qm";
  LCC_RETURN_IF_ERROR(net::setListenAddress(ao, impl_->options.listen, impl_->options.tls));
  impl_->acceptor = net::makeAcceptor(impl_->io, ao, impl_);
  LCC_RETURN_IF_ERROR(impl_->acceptor->start());
  if (net::LocalListeners* local = impl_->options.local_listeners) {
    std::weak_ptr<Impl> weak = impl_;
    local->listen<proto::QmLocalRecord, proto::UnsLocalRecord>(
        impl_->options.listen, [weak](std::shared_ptr<proto::LocalQmEnd> end) {
          if (auto impl = weak.lock()) return impl->acceptedLocal(std::move(end));
          end->close(net::CloseReason::kShutdown);
        });
  }
  return Status::ok();
}

void IntakeServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  if (impl_->options.local_listeners) impl_->options.local_listeners->unlisten(impl_->options.listen);
  if (impl_->acceptor) impl_->acceptor->stop();
  for (auto& c : impl_->conns.all()) c->closeNow();
}

void IntakeServer::setAccepting(bool accepting) {
  asio::post(impl_->strand, [self = impl_, accepting] {
    if (self->stopped || self->accepting == accepting) return;
    self->accepting = accepting;
    self->accepting_local = accepting;
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

std::size_t IntakeServer::localLinks() const {
  std::size_t n = 0;
  for (const auto& c : impl_->conns.all()) n += c->local() ? 1 : 0;
  return n;
}

bool IntakeServer::listening() const { return impl_->acceptor && impl_->acceptor->listening(); }

}  // namespace lcc::qm
