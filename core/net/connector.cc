#include "net/connector.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <random>

namespace lcc::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

BackOff::BackOff(BackOffOptions options, std::function<double()> random)
    : options_(options), random_(std::move(random)) {
  if (options_.max < options_.min) options_.max = options_.min;
  if (!random_) {
    auto gen = std::make_shared<std::mt19937_64>(std::random_device{}());
    random_ = [gen] { return std::uniform_real_distribution<double>(0.0, 1.0)(*gen); };
  }
}

Millis BackOff::next() {
  Millis d = options_.min;
  for (std::uint32_t i = 0; i < attempt_ && d < options_.max; ++i) d *= 2;
  d = std::min(d, options_.max);
  if (attempt_ < 64) ++attempt_;
  if (options_.jitter > 0) {
    const double cut = std::clamp(options_.jitter, 0.0, 1.0) * std::clamp(random_(), 0.0, 1.0);
    d -= Millis(static_cast<Millis::rep>(static_cast<double>(d.count()) * cut));
  }
  return d;
}

Status setTargetAddress(ConnectorOptions& co, const std::string& address, const TlsLink& link) {
  return applyLinkAddress(co.what, address, link, &co.target, &co.tls, &co.connection);
}

Connector::Connector(asio::io_context& io, Clock& clock, ConnectorOptions options)
    : io_(io),
      clock_(clock),
      strand_(asio::make_strand(io)),
      options_(std::move(options)),
      back_off_(options_.back_off, options_.random) {}

Connector::~Connector() {
  std::lock_guard<std::mutex> lock(timer_mu_);
  if (timer_ != 0) clock_.cancel(timer_);
}

Status Connector::start(OnConnected on_connected, OnFailed on_failed) {
  targets_.clear();
  std::string_view rest = options_.target;
  for (;;) {
    const auto comma = rest.find(',');
    auto hp = HostPort::parse(rest.substr(0, comma));
    if (!hp.isOk()) return hp.status().withContext(options_.what);
    targets_.push_back(std::move(hp).value());
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  target_ = targets_.front();
  on_connected_ = std::move(on_connected);
  on_failed_ = std::move(on_failed);
  asio::post(strand_, [self = shared_from_this()] { self->connect(); });
  return Status::ok();
}

void Connector::retry() {
  asio::post(strand_, [self = shared_from_this()] {
    if (self->stopped_ || self->attempting_) return;
    self->schedule(self->back_off_.next());
  });
}

void Connector::stop() {
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    if (timer_ != 0) clock_.cancel(timer_);
    timer_ = 0;
  }
  asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    ++self->generation_;
  });
}

void Connector::schedule(Millis delay) {
  attempting_ = true;  // a timer counts as an attempt under way
  std::weak_ptr<Connector> weak = shared_from_this();
  std::lock_guard<std::mutex> lock(timer_mu_);
  timer_ = clock_.schedule(delay, [weak] {
    if (auto self = weak.lock()) {
      asio::post(self->strand_, [self] {
        {
          std::lock_guard<std::mutex> l(self->timer_mu_);
          self->timer_ = 0;
        }
        self->attempting_ = false;
        self->connect();
      });
    }
  });
}

void Connector::connect() {
  if (stopped_ || attempting_) return;
  attempting_ = true;
  const std::uint64_t gen = ++generation_;
  target_ = targets_[next_target_++ % targets_.size()];  // several addresses: in turn
  auto resolver = std::make_shared<tcp::resolver>(strand_);
  resolver->async_resolve(target_.host, target_.portString(), [self = shared_from_this(), resolver, gen](
                                                                  const boost::system::error_code& ec,
                                                                  tcp::resolver::results_type results) {
    if (gen != self->generation_) return;
    if (ec) return self->failed("resolve: " + ec.message());
    Strand conn_strand = self->options_.strand ? *self->options_.strand : asio::make_strand(self->io_);
    auto socket = std::make_shared<tcp::socket>(conn_strand);
    asio::async_connect(*socket, results,
                        asio::bind_executor(self->strand_, [self, socket, conn_strand, gen](
                                                               const boost::system::error_code& ec2, const tcp::endpoint&) {
                          if (gen != self->generation_) return;
                          if (ec2) return self->failed(ec2.message());
                          self->attempting_ = false;
                          self->back_off_.reset();
                          auto stream = self->makeStream(conn_strand, std::move(*socket));
                          self->on_connected_(
                              std::make_shared<Connection>(conn_strand, std::move(stream), self->options_.connection));
                        }));
  });
}

std::unique_ptr<ByteStream> Connector::makeStream(Strand strand, tcp::socket socket) {
  if (!options_.tls) return std::make_unique<TcpStream>(std::move(strand), std::move(socket));
  const std::string& name = options_.server_name.empty() ? target_.host : options_.server_name;
  return std::make_unique<TlsStream>(std::move(strand), std::move(socket), options_.tls->current(), TlsRole::kClient,
                                     name);
}

void Connector::failed(const std::string& why) {
  attempting_ = false;
  if (stopped_) return;
  const Millis delay = back_off_.next();
  if (on_failed_) on_failed_(why, delay);
  schedule(delay);
}

}  // namespace lcc::net
