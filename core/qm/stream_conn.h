// stream_conn.h — one TCP connection of the QM's servers: a strand, a read loop and
// a write queue. Subclasses parse bytes (onBytes) and queue replies (send). Asio
// only carries bytes here; what the bytes mean is decided elsewhere.
// THREADS: everything of one connection runs on its strand; send() and close() may
// be called from any thread.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"

namespace lcc::qm {

// "host:port" (or "[v6]:port") to an endpoint to bind.
inline Result<boost::asio::ip::tcp::endpoint> parseListen(boost::asio::io_context& io, const std::string& hostport) {
  using boost::asio::ip::tcp;
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return Status::invalidArgument("not host:port: " + hostport);
  std::string host = hostport.substr(0, colon);
  std::string port = hostport.substr(colon + 1);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec || results.empty()) return Status::invalidArgument("cannot resolve " + hostport + ": " + ec.message());
  return results.begin()->endpoint();
}

// The open connections of a server, each with an id: thread-safe. A connection leaves
// the set through the `on_closed` callback it was made with.
template <typename Conn>
class ConnSet {
 public:
  using Id = std::uint64_t;

  // `make(id, on_closed)` builds the connection; it is kept (weakly) under `id`.
  template <typename Make>
  std::shared_ptr<Conn> add(Make make) {
    Id id;
    {
      std::lock_guard<std::mutex> lk(state_->mu);
      id = state_->next_id++;
    }
    std::weak_ptr<State> weak = state_;
    std::shared_ptr<Conn> c = make(id, [weak, id] {
      if (auto s = weak.lock()) {
        std::lock_guard<std::mutex> lk(s->mu);
        s->conns.erase(id);
      }
    });
    std::lock_guard<std::mutex> lk(state_->mu);
    state_->conns[id] = c;
    return c;
  }
  std::shared_ptr<Conn> find(Id id) const {
    std::lock_guard<std::mutex> lk(state_->mu);
    auto it = state_->conns.find(id);
    return it == state_->conns.end() ? nullptr : it->second.lock();
  }
  std::vector<std::shared_ptr<Conn>> all() const {
    std::vector<std::shared_ptr<Conn>> out;
    std::lock_guard<std::mutex> lk(state_->mu);
    for (auto& [id, w] : state_->conns) {
      if (auto c = w.lock()) out.push_back(std::move(c));
    }
    return out;
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lk(state_->mu);
    return state_->conns.size();
  }

 private:
  struct State {
    std::mutex mu;
    std::map<Id, std::weak_ptr<Conn>> conns;
    Id next_id = 1;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

class StreamConn : public std::enable_shared_from_this<StreamConn> {
 public:
  using Strand = boost::asio::strand<boost::asio::any_io_executor>;

  explicit StreamConn(boost::asio::ip::tcp::socket socket)
      : strand_(boost::asio::make_strand(socket.get_executor())), socket_(std::move(socket)) {}
  virtual ~StreamConn() = default;

  void start() {
    boost::asio::post(strand_, [self = shared_from_this()] {
      self->onStart();
      self->readMore();
    });
  }
  // Queues bytes for the peer.
  void send(std::string bytes) {
    boost::asio::post(strand_, [self = shared_from_this(), b = std::move(bytes)]() mutable {
      if (self->closed_) return;
      self->wq_.push_back(std::move(b));
      if (self->wq_.size() == 1) self->writeNext();
    });
  }
  // Closes after the queued bytes are written (graceful) or at once.
  void close(bool graceful = true) {
    boost::asio::post(strand_, [self = shared_from_this(), graceful] {
      if (graceful && !self->wq_.empty()) {
        self->close_after_write_ = true;
      } else {
        self->shutdown();
      }
    });
  }
  Strand& strand() { return strand_; }
  std::string peer() const {
    boost::system::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    return ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

 protected:
  // On the strand. Return false to stop reading (then close()).
  virtual void onStart() {}
  virtual bool onBytes(std::string_view bytes) = 0;
  virtual void onClosed() {}

 private:
  void readMore() {
    socket_.async_read_some(boost::asio::buffer(rbuf_), boost::asio::bind_executor(
        strand_, [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
          if (self->closed_) return;
          if (ec) {
            self->shutdown();
            return;
          }
          if (!self->onBytes(std::string_view(self->rbuf_.data(), n))) {
            if (self->wq_.empty()) {
              self->shutdown();
            } else {
              self->close_after_write_ = true;
            }
            return;
          }
          self->readMore();
        }));
  }
  void writeNext() {
    boost::asio::async_write(socket_, boost::asio::buffer(wq_.front()), boost::asio::bind_executor(
        strand_, [self = shared_from_this()](const boost::system::error_code& ec, std::size_t) {
          if (self->closed_) return;
          if (ec) {
            self->shutdown();
            return;
          }
          self->wq_.pop_front();
          if (!self->wq_.empty()) {
            self->writeNext();
          } else if (self->close_after_write_) {
            self->shutdown();
          }
        }));
  }
  void shutdown() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ec;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    wq_.clear();
    onClosed();
  }

  Strand strand_;
  boost::asio::ip::tcp::socket socket_;
  std::array<char, 65536> rbuf_{};
  std::deque<std::string> wq_;
  bool closed_ = false;
  bool close_after_write_ = false;
};

}  // namespace lcc::qm
