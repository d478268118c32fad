#include "qm/botm_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <map>
#include <mutex>

#include "common/content_locator.h"
#include "proto/botm_link.h"
#include "qm/stream_conn.h"

namespace lcc::qm {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

class BotmConn final : public StreamConn {
 public:
  BotmConn(tcp::socket s, LinkId id, const BotmServerOptions& o, BotmLinkHandler& h, std::function<void()> on_closed)
      : StreamConn(std::move(s)),
        id_(id),
        options_(o),
        handler_(h),
        decoder_(proto::linkLimits(o.max_value_length)),
        on_closed_(std::move(on_closed)) {}

 private:
  bool onBytes(std::string_view bytes) override {
    msgs_.clear();
    bool ok = decoder_.feed(bytes, &msgs_);
    for (auto& m : msgs_) {
      if (!handle(m)) return false;
    }
    if (!ok) {
      spdlog::warn("qm botm link {} ({}): {}; disconnecting", id_, peer(), decoder_.errorMessage());
      return false;
    }
    return !decoder_.ended();
  }
  void onClosed() override {
    if (up_) {
      spdlog::info("qm: BOT-M {} (link {}) disconnected", machine_, id_);
      handler_.linkDown(id_);
    }
    if (on_closed_) on_closed_();
  }

  bool handle(proto::BotmMessage& m) {
    if (auto* h = std::get_if<proto::LinkBotmHello>(&m)) {
      if (up_) return true;
      up_ = true;
      machine_ = h->machine;
      send(proto::encodeSourceOpen({options_.source_name}));
      spdlog::info("qm: BOT-M {} connected from {} (capacity {}, link {})", machine_, peer(), h->capacity, id_);
      handler_.linkUp(id_, h->machine, h->capacity);
      if (!h->content_url.empty()) noteContentUrl(h->machine, h->content_url);
      return true;
    }
    if (!up_) {
      spdlog::warn("qm botm link {} ({}): message before the opening; disconnecting", id_, peer());
      return false;
    }
    if (auto* r = std::get_if<proto::LinkResult>(&m)) {
      FetchOutcome o;
      o.id = r->id;
      o.ok = r->ok;
      o.code = r->ok ? ErrorCode::kNone : (r->code == ErrorCode::kNone ? ErrorCode::kInternal : r->code);
      o.http = r->http;
      o.machine = r->machine.empty() ? machine_ : r->machine;
      o.file = r->file;
      o.mime = r->mime;
      o.size = r->size;
      o.md5 = r->md5;
      o.mtime = r->mtime;
      o.unchanged = r->unchanged;
      o.retry_after = r->retry_after;
      o.message = r->message;
      handler_.result(id_, o);
    } else if (auto* d = std::get_if<proto::LinkDeleted>(&m)) {
      handler_.deleted(id_, d->id, d->ok, d->reason);
    } else if (auto* c = std::get_if<proto::LinkCapacity>(&m)) {
      handler_.linkCapacity(id_, c->slots);
    } else if (auto* ms = std::get_if<proto::LinkMachines>(&m)) {
      handler_.linkMachines(id_, ms->ids);
      for (const auto& [machine, url] : ms->content_urls) noteContentUrl(machine, url);
    } else if (std::get_if<proto::LinkPing>(&m)) {
      send(proto::encodeLinkPong());
    } else if (std::get_if<proto::LinkEnd>(&m)) {
      send(proto::encodeSourceClose());
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

  LinkId id_;
  const BotmServerOptions& options_;
  BotmLinkHandler& handler_;
  proto::BotmStreamDecoder decoder_;
  std::vector<proto::BotmMessage> msgs_;
  std::function<void()> on_closed_;
  bool up_ = false;
  std::string machine_;
};

}  // namespace

struct BotmServer::Impl : std::enable_shared_from_this<BotmServer::Impl> {
  Impl(asio::io_context& io_, BotmServerOptions o, BotmLinkHandler& h)
      : io(io_), strand(asio::make_strand(io_)), options(std::move(o)), handler(h) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  BotmServerOptions options;
  BotmLinkHandler& handler;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::atomic<std::uint16_t> port{0};
  bool stopped = false;
  ConnSet<BotmConn> conns;

  void accept() {
    if (!acceptor) return;
    acceptor->async_accept(asio::make_strand(io), [self = shared_from_this()](const boost::system::error_code& ec,
                                                                               tcp::socket sock) {
      asio::post(self->strand, [self, ec, sock = std::move(sock)]() mutable {
        if (!self->acceptor) return;
        if (!ec) {
          self->conns.add([&](LinkId id, std::function<void()> on_closed) {
            return std::make_shared<BotmConn>(std::move(sock), id, self->options, self->handler, std::move(on_closed));
          })->start();
        } else if (ec == asio::error::operation_aborted) {
          return;
        } else {
          spdlog::warn("qm botm: accept: {}", ec.message());
        }
        self->accept();
      });
    });
  }
  std::shared_ptr<BotmConn> find(LinkId id) { return conns.find(id); }
};

BotmServer::BotmServer(asio::io_context& io, BotmServerOptions options, BotmLinkHandler& handler)
    : impl_(std::make_shared<Impl>(io, std::move(options), handler)) {}

BotmServer::~BotmServer() { stop(); }

Status BotmServer::start() {
  auto ep = parseListen(impl_->io, impl_->options.listen);
  if (!ep.isOk()) return ep.status();
  auto a = std::make_unique<tcp::acceptor>(impl_->strand);
  boost::system::error_code ec;
  a->open(ep.value().protocol(), ec);
  if (!ec) a->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a->bind(ep.value(), ec);
  if (!ec) a->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::ioError("listen.botm " + impl_->options.listen + ": " + ec.message());
  impl_->port = a->local_endpoint(ec).port();
  impl_->acceptor = std::move(a);
  impl_->accept();
  return Status::ok();
}

void BotmServer::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  asio::post(impl_->strand, [self = impl_] {
    if (self->acceptor) {
      boost::system::error_code ec;
      self->acceptor->close(ec);
      self->acceptor.reset();
    }
  });
  for (auto& c : impl_->conns.all()) {
    c->send(proto::encodeSourceClose());
    c->close(true);
  }
}

std::uint16_t BotmServer::port() const { return impl_->port; }

std::size_t BotmServer::connections() const { return impl_->conns.size(); }

void BotmServer::sendFetch(LinkId link, const FetchOrder& order) {
  auto c = impl_->find(link);
  if (!c) return;
  proto::LinkFetch f;
  f.id = order.id;
  f.url = order.url;
  f.mime = order.mime;
  f.since = order.since;
  f.max_size = order.max_size;
  f.scope = proto::FetchScope{order.redirects, order.scope};
  c->send(proto::encodeFetch(f));
}

void BotmServer::sendDelete(LinkId link, std::uint64_t id, const std::string& machine, const std::string& file) {
  auto c = impl_->find(link);
  if (!c) return;
  c->send(proto::encodeDelete(proto::LinkDelete{id, machine, file}));
}

}  // namespace lcc::qm
