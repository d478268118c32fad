#include "net/acceptor.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <future>

namespace lcc::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Result<tcp::endpoint> resolveListen(asio::io_context& io, const HostPort& listen) {
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(listen.resolverHost(), listen.portString(), tcp::resolver::passive, ec);
  if (ec || results.empty()) {
    return Status::invalidArgument("cannot resolve " + listen.toString() + ": " + ec.message());
  }
  return results.begin()->endpoint();
}

Status setListenAddress(AcceptorOptions& ao, const std::string& address, const TlsLink& link) {
  return applyLinkAddress(ao.what, address, link, &ao.listen, &ao.tls, &ao.connection);
}

Acceptor::Acceptor(asio::io_context& io, AcceptorOptions options, OnAccept on_accept)
    : io_(io),
      strand_(asio::make_strand(io)),
      options_(std::move(options)),
      on_accept_(std::move(on_accept)) {}

Acceptor::~Acceptor() {
  if (acceptor_) {
    boost::system::error_code ec;
    acceptor_->close(ec);
  }
}

Status Acceptor::start() {
  auto hp = HostPort::parse(options_.listen);
  if (!hp.isOk()) return hp.status().withContext(options_.what);
  LCC_ASSIGN_OR_RETURN(endpoint_, resolveListen(io_, hp.value()));
  // Bound here, synchronously, so the caller learns about a port in use; nothing else
  // touches the acceptor before start() returns.
  return listen();
}

Status Acceptor::listen() {
  auto a = std::make_unique<tcp::acceptor>(strand_);
  boost::system::error_code ec;
  a->open(endpoint_.protocol(), ec);
  if (!ec) a->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a->bind(endpoint_, ec);
  if (!ec) a->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::ioError(options_.what + " " + options_.listen + ": " + ec.message());
  endpoint_.port(a->local_endpoint(ec).port());  // listening again reuses the same port
  port_ = endpoint_.port();
  acceptor_ = std::move(a);
  listening_ = true;
  accept();
  return Status::ok();
}

void Acceptor::resume() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->acceptor_) return;
    Status s = self->listen();
    if (!s.isOk()) {
      spdlog::error("{}: listening again: {}", self->options_.what, s.toString());
    } else {
      spdlog::info("{}: listening again on {}", self->options_.what, self->options_.listen);
    }
  });
}

void Acceptor::stop() {
  listening_ = false;
  asio::post(strand_, [self = shared_from_this()] {
    if (!self->acceptor_) return;
    boost::system::error_code ec;
    self->acceptor_->close(ec);
    self->acceptor_.reset();
    self->listening_ = false;
  });
}

std::size_t Acceptor::active() const {
  return slots_->total();
}

void Acceptor::accept() {
  Strand conn_strand = asio::make_strand(io_);
  acceptor_->async_accept(conn_strand, [self = shared_from_this(), a = acceptor_.get(), conn_strand](
                                           const boost::system::error_code& ec, tcp::socket socket) mutable {
    // Completes on the acceptor's executor (strand_).
    if (self->acceptor_.get() != a) return;  // the listener was closed meanwhile
    self->onAccepted(ec, std::move(socket), conn_strand);
  });
}

void Acceptor::acceptLater() {
  std::weak_ptr<Acceptor> weak = shared_from_this();
  const auto* a = acceptor_.get();
  auto again = [weak, a] {
    auto self = weak.lock();
    if (!self) return;
    asio::post(self->strand_, [self, a] {
      if (self->acceptor_ && self->acceptor_.get() == a) self->accept();  // not stopped or replaced meanwhile
    });
  };
  if (options_.connection.clock != nullptr) {
    options_.connection.clock->schedule(kAcceptRetry, std::move(again));
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(strand_, kAcceptRetry);
  timer->async_wait([timer, again = std::move(again)](const boost::system::error_code&) { again(); });
}

void Acceptor::onAccepted(const boost::system::error_code& ec, tcp::socket socket, Strand strand) {
  if (ec == asio::error::operation_aborted) return;
  if (ec) {
    if (accept_failures_++ == 0) {
      spdlog::warn("{}: accept: {}; trying again every {} ms", options_.what, ec.message(), kAcceptRetry.count());
    }
    return acceptLater();
  }
  if (accept_failures_ > 0) {
    spdlog::info("{}: accepting again after {} failed accepts", options_.what, accept_failures_);
    accept_failures_ = 0;
  }
  boost::system::error_code aec;
  const auto remote = socket.remote_endpoint(aec);
  const std::string address = aec ? std::string() : remote.address().to_string();
  DescriptorBudget& budget = options_.budget != nullptr ? *options_.budget : DescriptorBudget::process();
  std::shared_ptr<void> place = budget.admit(socket.native_handle());
  if (!place) {
    refuseNow(socket, Admission::kTooFewDescriptors, address);
    if (acceptor_) accept();
    return;
  }
  if (budget_refusals_run_ > 0) {
    spdlog::info("{}: descriptors free again after {} refused connections", options_.what, budget_refusals_run_);
    budget_refusals_run_ = 0;
  }
  const bool exempt = options_.per_address_exempt && options_.per_address_exempt->contains(address);
  std::shared_ptr<void> slot;
  const Admission admission =
      slots_->admit(address, options_.max_connections, exempt ? 0 : options_.max_per_address, &slot);
  if (admission == Admission::kAdmitted) ++accepted_;  // counted with its slot (active())
  if (admission != Admission::kAdmitted &&
      (options_.tls || !options_.answer_refusals || answering_->load() >= kMaxAnsweredRefusals)) {
    refuseNow(socket, admission, address);
    if (acceptor_) accept();
    return;
  }
  const ConnectionOptions copts = admission == Admission::kAdmitted ? options_.connection : refusalOptions();
  std::unique_ptr<ByteStream> stream;
  if (options_.tls) {
    stream = std::make_unique<TlsStream>(strand, std::move(socket), options_.tls->current(), TlsRole::kServer);
  } else {
    stream = std::make_unique<TcpStream>(strand, std::move(socket));
  }
  auto conn = std::make_shared<Connection>(strand, std::move(stream), copts);
  if (admission == Admission::kAdmitted) {
    conn->holdUntilClosed(std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
        std::move(place), std::move(slot)));
  } else {
    ++refused_;
    ++*answering_;
    auto answering = answering_;
    conn->holdUntilClosed(std::shared_ptr<void>(place.get(), [place, answering](void*) { --*answering; }));
  }
  on_accept_(std::move(conn), admission);
  if (acceptor_) accept();
}

void Acceptor::refuseNow(tcp::socket& socket, Admission why, const std::string& address) {
  ++refused_;
  if (why == Admission::kTooFewDescriptors) {
    ++refused_budget_;
    if (budget_refusals_run_++ == 0) {
      spdlog::warn("{}: refusing connections: fewer than {} descriptors would be left for the stores", options_.what,
                   (options_.budget != nullptr ? *options_.budget : DescriptorBudget::process()).reserve());
    }
  }
  spdlog::debug("{}: {} refused before any handshake: {}", options_.what, address, admissionName(why));
  if (options_.on_refused) options_.on_refused(why);  // counted before the peer can see the close
  boost::system::error_code ec;
  socket.set_option(asio::socket_base::linger(true, 0), ec);  // RST: nothing lingers in the kernel
  socket.close(ec);
}

ConnectionOptions Acceptor::refusalOptions() const {
  ConnectionOptions o = options_.connection;
  auto cut = [](Millis& m) {
    if (m.count() == 0 || m > kRefusalLifetime) m = kRefusalLifetime;
  };
  for (Millis* m : {&o.idle, &o.write, &o.session, &o.handshake}) cut(*m);
  if (o.linger > kRefusalLifetime) o.linger = kRefusalLifetime;
  o.lifetime = kRefusalLifetime;
  return o;
}

}  // namespace lcc::net
