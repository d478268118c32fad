// hostile_peer.h — a raw client of the HTTP server for the hostile-client tests
// (issue 25): it binds its socket to a chosen loopback source address (127.0.0.2,
// 127.0.0.3, … so the server sees different addresses), sends any bytes, and reads an
// answer or the end of the connection, every read bounded (20 s), so a server that
// never answers fails the test instead of hanging it.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <limits>
#include <optional>
#include <string>

namespace lcc::http::testing {

namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using Answer = bhttp::response<bhttp::string_body>;

constexpr std::chrono::seconds kReadBound{20};

// A connected socket from `source` to 127.0.0.1:port.
inline tcp::socket connectFrom(boost::asio::io_context& io, const std::string& source, std::uint16_t port) {
  tcp::socket s(io);
  s.open(tcp::v4());
  s.bind(tcp::endpoint(boost::asio::ip::make_address(source), 0));
  s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port));
  return s;
}

// Runs `read` (a blocking read on `s`) for at most kReadBound; past it the socket is
// shut down so that the read returns.
template <class Socket, class Read>
auto boundedRead(Socket& s, Read read) {
  auto fut = std::async(std::launch::async, read);
  if (fut.wait_for(kReadBound) != std::future_status::ready) {
    boost::system::error_code ec;
    boost::beast::get_lowest_layer(s).shutdown(tcp::socket::shutdown_both, ec);
  }
  return fut.get();
}

// The next answer on `s`, or nothing (the connection ended, or no answer in time).
template <class Socket>
std::optional<Answer> readAnswer(Socket& s, boost::beast::flat_buffer& buffer) {
  return boundedRead(s, [&]() -> std::optional<Answer> {
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(std::numeric_limits<std::uint64_t>::max());
    boost::system::error_code ec;
    bhttp::read(s, buffer, p, ec);
    if (ec) return std::nullopt;
    return p.release();
  });
}

// True when the server ends the connection (EOF, reset or a TLS stream that just
// stops) before sending anything more.
template <class Socket>
bool endsWithoutMore(Socket& s) {
  return boundedRead(s, [&] {
    char c;
    boost::system::error_code ec;
    s.read_some(boost::asio::buffer(&c, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
           ec == boost::asio::ssl::error::stream_truncated;
  });
}

class Peer {
 public:
  Peer(std::uint16_t port, const std::string& source) : socket_(connectFrom(io_, source, port)) {}

  // Writes all of `bytes`; false when the server closed first.
  bool write(const std::string& bytes) {
    boost::system::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes), ec);
    return !ec;
  }
  bool get(const std::string& target) {
    return write("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  }
  std::optional<Answer> answer() { return readAnswer(socket_, buffer_); }
  bool closedByServer() { return endsWithoutMore(socket_); }
  tcp::socket& socket() { return socket_; }
  boost::beast::flat_buffer& buffer() { return buffer_; }

 private:
  boost::asio::io_context io_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace lcc::http::testing
