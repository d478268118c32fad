#include "bot/stream_socket.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

namespace lcc::bot {

namespace asio = boost::asio;

bool splitHostPort(const std::string& hp, std::string* host, std::string* port) {
  auto colon = hp.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == hp.size()) return false;
  *host = hp.substr(0, colon);
  *port = hp.substr(colon + 1);
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  return true;
}

StreamSocket::StreamSocket(asio::io_context& io, asio::ip::tcp::socket socket, std::size_t max_queued)
    : io_(io), strand_(asio::make_strand(io)), socket_(std::move(socket)), max_queued_(max_queued) {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

StreamSocket::~StreamSocket() = default;

Result<asio::ip::tcp::resolver::results_type> StreamSocket::resolve(asio::io_context& io, const std::string& hp) {
  std::string host, port;
  if (!splitHostPort(hp, &host, &port)) return Status::invalidArgument("not host:port: " + hp);
  asio::ip::tcp::resolver r(io);
  boost::system::error_code ec;
  auto res = r.resolve(host, port, ec);
  if (ec) return Status::ioError(hp + ": " + ec.message());
  return res;
}

void StreamSocket::start(OnData on_data, OnClose on_close) {
  asio::post(strand_, [self = shared_from_this(), d = std::move(on_data), c = std::move(on_close)]() mutable {
    self->on_data_ = std::move(d);
    self->on_close_ = std::move(c);
    if (self->closed_) return;
    self->doRead();
  });
}

void StreamSocket::doRead() {
  socket_.async_read_some(asio::buffer(buf_),
                          asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec,
                                                                                   std::size_t n) {
                            if (self->closed_) return;
                            if (ec) {
                              self->shutdownNow(ec == asio::error::eof ? "peer closed the connection"
                                                                       : ec.message());
                              return;
                            }
                            if (self->on_data_) self->on_data_(std::string_view(self->buf_, n));
                            if (!self->closed_) self->doRead();
                          }));
}

void StreamSocket::send(std::string bytes) {
  // dispatch: inline when the caller already runs on the strand (most senders do).
  asio::dispatch(strand_, [self = shared_from_this(), b = std::move(bytes)]() mutable {
    if (self->closed_ || self->close_after_flush_) return;
    self->queued_bytes_ += b.size();
    self->queue_.push_back(std::move(b));
    if (self->queued_bytes_ > self->max_queued_) {
      self->shutdownNow("peer does not read (" + std::to_string(self->queued_bytes_) + " bytes queued)");
      return;
    }
    self->scheduleFlush();
  });
}

void StreamSocket::scheduleFlush() {
  // The write starts from a handler posted behind whatever the strand already holds, so
  // the messages of a burst (many results, many fetches) leave in one send(2).
  if (write_active_ || flush_posted_) return;
  flush_posted_ = true;
  asio::post(strand_, [self = shared_from_this()] {
    self->flush_posted_ = false;
    self->doWrite();
  });
}

void StreamSocket::doWrite() {
  if (write_active_ || closed_) return;
  if (queue_.empty()) {
    if (close_after_flush_) shutdownNow("closed");
    return;
  }
  writing_.clear();
  while (!queue_.empty()) {  // coalesce everything queued into one write
    writing_ += queue_.front();
    queue_.pop_front();
  }
  queued_bytes_ = 0;
  write_active_ = true;
  asio::async_write(socket_, asio::buffer(writing_),
                    asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      self->write_active_ = false;
                      if (self->closed_) return;
                      if (ec) {
                        self->shutdownNow(ec.message());
                        return;
                      }
                      self->doWrite();
                    }));
}

void StreamSocket::close(std::string why) {
  asio::post(strand_, [self = shared_from_this(), w = std::move(why)] { self->shutdownNow(w); });
}

void StreamSocket::closeAfterFlush(std::string last) {
  asio::post(strand_, [self = shared_from_this(), l = std::move(last)]() mutable {
    if (self->closed_ || self->close_after_flush_) return;
    if (!l.empty()) self->queue_.push_back(std::move(l));
    self->close_after_flush_ = true;
    self->doWrite();
  });
}

void StreamSocket::shutdownNow(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  queue_.clear();
  auto cb = std::move(on_close_);
  on_close_ = nullptr;
  on_data_ = nullptr;
  if (cb) cb(why);
}

}  // namespace lcc::bot
