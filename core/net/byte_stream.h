// byte_stream.h — what a Connection reads from and writes to: plain TCP (TcpStream)
// or TLS (TlsStream, tls.h).
//
// Every completion handler runs on the executor the stream was made with: the
// connection's strand. A stream does no buffering and no policy of its own.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <functional>
#include <string>

namespace lcc::net {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using IoHandler = std::function<void(const boost::system::error_code&, std::size_t)>;

class ByteStream {
 public:
  virtual ~ByteStream() = default;

  // Runs once before the first read or write: a TLS stream does its handshake here.
  virtual void handshake(std::function<void(const boost::system::error_code&)> done) = 0;
  // Words for an error of this stream (TLS adds why a certificate was refused).
  virtual std::string describeError(const boost::system::error_code& ec) const { return ec.message(); }
  virtual void readSome(boost::asio::mutable_buffer buffer, IoHandler handler) = 0;
  // Writes all of `buffer` (or fails).
  virtual void writeAll(boost::asio::const_buffer buffer, IoHandler handler) = 0;
  // No more bytes from us (FIN; TLS: close_notify). Reading goes on.
  virtual void shutdownSend() = 0;
  virtual void close() = 0;
  // "address:port" of the peer ("?" when unknown) and the address alone.
  virtual std::string peer() const = 0;
  virtual std::string peerAddress() const = 0;
};

class TcpStream final : public ByteStream {
 public:
  // `socket` must have been opened (accepted or connected) on `strand`'s io_context;
  // its handlers are bound to `strand`.
  TcpStream(Strand strand, boost::asio::ip::tcp::socket socket);

  void handshake(std::function<void(const boost::system::error_code&)> done) override;
  void readSome(boost::asio::mutable_buffer buffer, IoHandler handler) override;
  void writeAll(boost::asio::const_buffer buffer, IoHandler handler) override;
  void shutdownSend() override;
  void close() override;
  std::string peer() const override { return peer_; }
  std::string peerAddress() const override { return address_; }

 private:
  Strand strand_;
  boost::asio::ip::tcp::socket socket_;
  std::string peer_ = "?", address_ = "?";
};

}  // namespace lcc::net
