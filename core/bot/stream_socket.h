// stream_socket.h — one TCP connection carrying an XML stream, on its own strand.
//
// WHO: the robot's connection to its BOT-M, and the BOT-M's connections (robots,
// url source, child BOT-Ms). Only carries bytes: the policy lives elsewhere.
// THREADS: every callback runs on the socket's strand; send(), close() and
// closeAfterFlush() may be called from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lcc/status.h"

namespace lcc::bot {

class StreamSocket : public std::enable_shared_from_this<StreamSocket> {
 public:
  using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
  using OnData = std::function<void(std::string_view)>;
  using OnClose = std::function<void(const std::string& why)>;

  StreamSocket(boost::asio::io_context& io, boost::asio::ip::tcp::socket socket,
               std::size_t max_queued = 64u << 20);
  ~StreamSocket();

  // Starts reading. on_data gets every chunk received; on_close runs once when the
  // connection ends for any reason (peer closed, error, close()).
  void start(OnData on_data, OnClose on_close);
  // Queues bytes; a peer that leaves more than max_queued unread is disconnected.
  // Bytes queued in one turn of the strand leave together, in one write.
  void send(std::string bytes);
  // Ends now (queued bytes may be lost).
  void close(std::string why);
  // Sends what is queued (and `last`), then closes.
  void closeAfterFlush(std::string last = {});

  Strand& strand() { return strand_; }
  const std::string& peer() const { return peer_; }
  bool closed() const { return closed_; }

  // "host:port" -> endpoint list; a blocking resolve, for start-up code.
  static Result<boost::asio::ip::tcp::resolver::results_type> resolve(boost::asio::io_context& io,
                                                                      const std::string& host_port);

 private:
  void doRead();
  void scheduleFlush();
  void doWrite();
  void shutdownNow(const std::string& why);

  boost::asio::io_context& io_;
  Strand strand_;
  boost::asio::ip::tcp::socket socket_;
  std::size_t max_queued_;
  std::string peer_;
  OnData on_data_;
  OnClose on_close_;
  std::deque<std::string> queue_;
  std::size_t queued_bytes_ = 0;
  std::string writing_;
  bool write_active_ = false;
  bool flush_posted_ = false;
  bool close_after_flush_ = false;
  bool closed_ = false;
  char buf_[64 * 1024];
};

// Splits "host:port"; false when malformed.
bool splitHostPort(const std::string& host_port, std::string* host, std::string* port);

}  // namespace lcc::bot
