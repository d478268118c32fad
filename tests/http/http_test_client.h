// http_test_client.h — a small synchronous HTTP/1.1 client over a real socket
// (Boost.Beast), and a fixture that runs an lcc::http::Server on 127.0.0.1:0.
#pragma once

#include <cstdint>
#include <limits>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config/config.h"
#include "http/http_server.h"

namespace lcc::http::testing {

namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// One client connection; each call sends a request and reads the answer.
class Client {
 public:
  explicit Client(std::uint16_t port, const std::string& host = "127.0.0.1") : socket_(io_) {
    socket_.connect(tcp::endpoint(boost::asio::ip::make_address(host), port));
  }

  bhttp::response<bhttp::string_body> request(const std::string& method, const std::string& target,
                                              const std::string& body = "",
                                              const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    send(method, target, body, headers);
    return read(method == "HEAD");
  }

  void send(const std::string& method, const std::string& target, const std::string& body = "",
            const std::vector<std::pair<std::string, std::string>>& headers = {}) {
    bhttp::request<bhttp::string_body> req(bhttp::string_to_verb(method), target, 11);
    req.set(bhttp::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    bhttp::write(socket_, req);
  }

  bhttp::response<bhttp::string_body> read(bool head = false) {
    bhttp::response_parser<bhttp::string_body> p;
    // Not boost::none: Beast 1.74 then refuses every body that has a Content-Length.
    p.body_limit(std::numeric_limits<std::uint64_t>::max());
    p.skip(head);
    bhttp::read(socket_, buffer_, p);
    return p.release();
  }

  // True when the server closed the connection (EOF or reset) — blocks until it does.
  bool readsEof() {
    boost::system::error_code ec;
    char c;
    socket_.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  tcp::socket& socket() { return socket_; }
  boost::beast::flat_buffer& buffer() { return buffer_; }

 private:
  boost::asio::io_context io_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// Runs a Server on an io_context with two io threads.
class ServerFixture {
 public:
  explicit ServerFixture(Router& router, ServerOptions options = defaultOptions())
      : guard_(boost::asio::make_work_guard(io_)) {
    server_ = std::make_unique<Server>(io_, router, std::move(options));
    start_status_ = server_->start();
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~ServerFixture() {
    server_->stop();
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
    server_.reset();
  }
  static ServerOptions defaultOptions() {
    ServerOptions o = ServerOptions::fromConfig(Config::defaults());
    o.listen = "127.0.0.1:0";
    return o;
  }
  Server& server() { return *server_; }
  std::uint16_t port() const { return server_->port(); }
  const Status& startStatus() const { return start_status_; }
  std::vector<std::thread::id> ioThreadIds() const {
    std::vector<std::thread::id> ids;
    for (const auto& t : threads_) ids.push_back(t.get_id());
    return ids;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::unique_ptr<Server> server_;
  Status start_status_;
  std::vector<std::thread> threads_;
};

}  // namespace lcc::http::testing
