#include "net/byte_stream.h"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/write.hpp>

namespace lcc::net {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

TcpStream::TcpStream(Strand strand, tcp::socket socket) : strand_(std::move(strand)), socket_(std::move(socket)) {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (!ec) {
    address_ = ep.address().to_string();
    peer_ = (ep.address().is_v6() ? "[" + address_ + "]" : address_) + ":" + std::to_string(ep.port());
  }
  socket_.set_option(tcp::no_delay(true), ec);
}

void TcpStream::handshake(std::function<void(const boost::system::error_code&)> done) {
  done(boost::system::error_code());  // nothing to negotiate on plain TCP
}

void TcpStream::readSome(asio::mutable_buffer buffer, IoHandler handler) {
  socket_.async_read_some(buffer, asio::bind_executor(strand_, std::move(handler)));
}

void TcpStream::writeAll(asio::const_buffer buffer, IoHandler handler) {
  asio::async_write(socket_, buffer, asio::bind_executor(strand_, std::move(handler)));
}

void TcpStream::shutdownSend() {
  boost::system::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
}

void TcpStream::close() {
  boost::system::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_both, ec);
  socket_.close(ec);
}

}  // namespace lcc::net
