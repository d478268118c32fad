#include "qm/botm_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <map>
#include <mutex>
#include <vector>

#include "common/content_locator.h"
#include "net/acceptor.h"
#include "net/conn_set.h"
#include "net/local_listeners.h"
#include "proto/botm_link.h"
#include "proto/link_frames.h"

namespace lcc::qm {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

class BotmConn final : public std::enable_shared_from_this<BotmConn> {
 public:
  // Over TCP: bytes through the link codec.
  BotmConn(std::shared_ptr<net::Connection> conn, LinkId id, const BotmServerOptions& o, BotmLinkHandler& h)
      : conn_(std::move(conn)),
        id_(id),
        options_(o),
        handler_(h),
        decoder_(proto::linkLimits(o.max_attribute_length), o.frames) {}
  // In process: the messages themselves (net/local_link.h).
  BotmConn(std::shared_ptr<proto::LocalSourceEnd> local, LinkId id, const BotmServerOptions& o, BotmLinkHandler& h)
      : local_(std::move(local)), id_(id), options_(o), handler_(h), decoder_(proto::linkLimits(o.max_attribute_length)) {}

  void start(std::function<void()> on_closed) {
    auto self = shared_from_this();
    if (local_) {
      proto::LocalSourceEnd::Handlers h;
      h.on_messages = [self](std::vector<proto::BotmMessage>& batch) { self->onMessages(batch); };
      h.on_close = [self, on_closed = std::move(on_closed)](net::CloseReason, const std::string&) {
        self->onClosed();
        if (on_closed) on_closed();
      };
      return local_->start(std::move(h));
    }
    net::Connection::Handlers h;
    h.on_bytes = [self](std::string_view bytes) { self->onBytes(bytes); };
    h.on_close = [self, on_closed = std::move(on_closed)](net::CloseReason, const std::string&) {
      self->onClosed();
      if (on_closed) on_closed();
    };
    conn_->start(std::move(h));
  }
  // Over TCP the messages of a burst (the engine's fetches of one dispatch turn) wait
  // here and leave in one hand-off to the connection's strand, encoded together (one
  // batch frame of fetches on a framed link), in the order they were sent.
  void send(proto::SourceMessage m) {
    if (local_) {
      proto::asOnWire(m);
      local_->send(std::move(m));
      return;
    }
    bool first = false;
    {
      std::lock_guard<std::mutex> l(out_mu_);
      first = out_.empty();
      out_.push_back(std::move(m));
    }
    if (first) asio::post(conn_->strand(), [self = shared_from_this()] { self->flushOut(); });
  }
  // Ends the link after what was sent, with the close of the stream.
  void close() {
    if (local_) {
      local_->send(proto::LinkEnd{});
      return local_->close(net::CloseReason::kShutdown);
    }
    std::vector<proto::SourceMessage> rest = takeOut();
    rest.push_back(proto::LinkEnd{});
    conn_->closeAfterFlush(proto::encodeMessages(rest, form_), net::CloseReason::kShutdown);
  }
  bool local() const { return local_ != nullptr; }

 private:
  std::vector<proto::SourceMessage> takeOut() {
    std::vector<proto::SourceMessage> batch;
    std::lock_guard<std::mutex> l(out_mu_);
    batch.swap(out_);
    return batch;
  }
  void flushOut() {  // on the connection's strand: its send() queues at once, in order
    std::vector<proto::SourceMessage> batch = takeOut();
    if (!batch.empty()) conn_->send(proto::encodeMessages(batch, form_));
  }
  const std::string& peer() const {
    static const std::string kInProcess = "in process";
    return local_ ? kInProcess : conn_->peer();
  }
  void onBytes(std::string_view bytes) {
    if (done_) return;
    msgs_.clear();
    bool ok = decoder_.feed(bytes, &msgs_);
    if (!onMessages(msgs_)) return;
    if (!ok) {
      spdlog::warn("qm botm link {} ({}): {}; disconnecting", id_, peer(), decoder_.errorMessage());
      return finish(net::CloseReason::kProtocolError);
    }
    if (decoder_.ended()) finish(net::CloseReason::kLocal);
  }
  // False when the link ends here.
  bool onMessages(std::vector<proto::BotmMessage>& msgs) {
    if (done_) return false;
    for (auto& m : msgs) {
      if (!handle(m)) {
        finish(net::CloseReason::kLocal);
        return false;
      }
    }
    return true;
  }
  void finish(net::CloseReason reason) {
    done_ = true;
    if (local_) return local_->close(reason);
    conn_->closeAfterFlush({}, reason);
  }
  void onClosed() {
    if (up_) {
      spdlog::info("qm: BOT-M {} (link {}{}) disconnected", machine_, id_, local_ ? ", in process" : "");
      handler_.linkDown(id_);
    }
  }

  bool handle(proto::BotmMessage& m) {
    if (auto* h = std::get_if<proto::LinkBotmHello>(&m)) {
      if (up_) return true;
      up_ = true;
      machine_ = h->machine;
      const std::uint32_t frames = local_ ? 0 : proto::agreedFrames(h->frames, options_.frames);
      if (local_) {
        send(proto::LinkSourceHello{options_.source_name, 0});
      } else {  // nothing waits in out_ yet: the engine sends only after linkUp() below
        conn_->send(proto::encodeSourceOpen({options_.source_name, frames}) +
                    (frames != 0 ? proto::encodeFramesSwitch() : ""));  // frames follow from us
        if (frames != 0) form_ = proto::LinkForm::kFrames;
      }
      spdlog::info("qm: BOT-M {} connected from {} (capacity {}, link {}{})", machine_, peer(), h->capacity, id_,
                   frames != 0 ? ", compact frames" : "");
      handler_.linkUp(id_, h->machine, h->capacity);
      if (!h->content_url.empty()) noteContentUrl(h->machine, h->content_url);
      return true;
    }
    if (!up_) {
      spdlog::warn("qm botm link {} ({}): message before the opening; disconnecting", id_, peer());
      return false;  // (a protocol error, logged here)
    }
    if (auto* r = std::get_if<FetchResult>(&m)) {
      FetchResult o = *r;
      if (o.machine.empty()) o.machine = machine_;
      handler_.result(id_, o);
    } else if (auto* d = std::get_if<proto::LinkDeleted>(&m)) {
      handler_.deleted(id_, d->id, d->ok, d->reason);
    } else if (auto* c = std::get_if<proto::LinkCapacity>(&m)) {
      handler_.linkCapacity(id_, c->slots);
    } else if (auto* ms = std::get_if<proto::LinkMachines>(&m)) {
      handler_.linkMachines(id_, ms->ids);
      for (const auto& [machine, url] : ms->content_urls) noteContentUrl(machine, url);
    } else if (auto* f = std::get_if<proto::LinkFile>(&m)) {
      handler_.sweepFile(id_, f->sweep, f->machine, f->name, f->size);
    } else if (auto* sw = std::get_if<proto::LinkSwept>(&m)) {
      handler_.swept(id_, sw->sweep, sw->machine, sw->files);
    } else if (std::get_if<proto::LinkPing>(&m)) {
      send(proto::LinkPong{});
    } else if (std::get_if<proto::LinkEnd>(&m)) {
      send(proto::LinkEnd{});
      return false;
    }
    return true;
  }

  void noteContentUrl(const std::string& machine, const std::string& url) {
    ContentLocator* loc = options_.content_locator;
    if (loc == nullptr) return;
    auto u = loc->discovered(machine, url);
    if (u == ContentLocator::Update::kChanged) {
      spdlog::info("qm: content of machine {} is read from {} (announced by BOT-M {})", machine, url, machine_);
    } else if (u == ContentLocator::Update::kInvalid) {
      spdlog::warn("qm botm link {} ({}): ignoring content URL '{}' for machine '{}': not http://host:port", id_,
                   peer(), url.substr(0, 200), machine.substr(0, 64));
    }
  }

  std::shared_ptr<net::Connection> conn_;      // TCP, or
  std::shared_ptr<proto::LocalSourceEnd> local_;  // in process
  LinkId id_;
  const BotmServerOptions& options_;
  BotmLinkHandler& handler_;
  proto::BotmStreamDecoder decoder_;
  // What we write: frames once the BOT-M offered them. Set on the connection's strand
  // before linkUp(); send() may run on the engine's thread.
  std::atomic<proto::LinkForm> form_{proto::LinkForm::kXml};
  std::mutex out_mu_;
  std::vector<proto::SourceMessage> out_;  // sent, not yet handed to the connection (TCP)
  std::vector<proto::BotmMessage> msgs_;
  bool up_ = false;
  bool done_ = false;
  std::string machine_;
};

}  // namespace

struct BotmServer::Impl : std::enable_shared_from_this<BotmServer::Impl> {
  Impl(asio::io_context& io_, BotmServerOptions o, BotmLinkHandler& h) : io(io_), options(std::move(o)), handler(h) {}

  asio::io_context& io;
  BotmServerOptions options;
  BotmLinkHandler& handler;
  std::shared_ptr<net::Acceptor> acceptor;
  std::atomic<bool> stopped{false};
  net::ConnSet<BotmConn> conns;

  void accepted(std::shared_ptr<net::Connection> c, net::Admission) {
    if (stopped) return c->close(net::CloseReason::kShutdown);
    conns.add([&](LinkId id) { return std::make_shared<BotmConn>(std::move(c), id, options, handler); },
              [](BotmConn& bc, std::function<void()> on_closed) { bc.start(std::move(on_closed)); });
  }
  void acceptedLocal(std::shared_ptr<proto::LocalSourceEnd> end) {
    if (stopped) return end->close(net::CloseReason::kShutdown);
    conns.add([&](LinkId id) { return std::make_shared<BotmConn>(std::move(end), id, options, handler); },
              [](BotmConn& bc, std::function<void()> on_closed) { bc.start(std::move(on_closed)); });
  }
  std::shared_ptr<BotmConn> find(LinkId id) { return conns.find(id); }
};

BotmServer::BotmServer(asio::io_context& io, BotmServerOptions options, BotmLinkHandler& handler)
    : impl_(std::make_shared<Impl>(io, std::move(options), handler)) {}

BotmServer::~BotmServer() { stop(); }

Status BotmServer::start() {
  net::AcceptorOptions ao;
  ao.what = "listen.botm";
  LCC_RETURN_IF_ERROR(net::setListenAddress(ao, impl_->options.listen, impl_->options.tls));
  impl_->acceptor = net::makeAcceptor(impl_->io, ao, impl_);
  LCC_RETURN_IF_ERROR(impl_->acceptor->start());
  if (net::LocalListeners* local = impl_->options.local_listeners) {
    std::weak_ptr<Impl> weak = impl_;
    local->listen<proto::SourceMessage, proto::BotmMessage>(
        impl_->options.listen, [weak](std::shared_ptr<proto::LocalSourceEnd> end) {
          if (auto impl = weak.lock()) {
            impl->acceptedLocal(std::move(end));
          } else {
            end->close(net::CloseReason::kShutdown);
          }
        });
  }
  return Status::ok();
}

void BotmServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  if (impl_->options.local_listeners) impl_->options.local_listeners->unlisten(impl_->options.listen);
  if (impl_->acceptor) impl_->acceptor->stop();
  for (auto& c : impl_->conns.all()) c->close();
}

std::uint16_t BotmServer::port() const { return impl_->acceptor ? impl_->acceptor->port() : 0; }

std::size_t BotmServer::connections() const { return impl_->conns.size(); }

std::size_t BotmServer::localLinks() const {
  std::size_t n = 0;
  for (const auto& c : impl_->conns.all()) n += c->local() ? 1 : 0;
  return n;
}

void BotmServer::sendFetch(LinkId link, const FetchRequest& order) {
  auto c = impl_->find(link);
  if (!c) return;
  c->send(order);
}

void BotmServer::sendDelete(LinkId link, std::uint64_t id, const std::string& machine, const std::string& file) {
  auto c = impl_->find(link);
  if (!c) return;
  c->send(proto::LinkDelete{id, machine, file});
}

void BotmServer::sendSweep(LinkId link, std::uint64_t sweep) {
  auto c = impl_->find(link);
  if (!c) return;
  c->send(proto::LinkSweep{sweep});
}

void BotmServer::sendLease(LinkId link, Millis lease) {
  auto c = impl_->find(link);
  if (!c) return;
  c->send(proto::LinkPing{lease});
}

}  // namespace lcc::qm
