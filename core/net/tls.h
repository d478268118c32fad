// tls.h — TLS for the connection layer (README.md, "TLS"): the contexts made from
// certificate files, a slot that holds the current context of a listener or a link
// (replaced on SIGHUP; connections already open keep the one they started with),
// TlsStream (the ByteStream over asio::ssl), and FdTls (the same TLS over a plain
// socket descriptor, for the blocking command-line and C API clients).
//
// No policy here: which files, which version and whether the peer must show a
// certificate are the caller's choices (core/common/tls_config.h reads them from the
// configuration).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "lcc/clock.h"
#include "lcc/status.h"
#include "net/byte_stream.h"
#include "net/connection.h"

namespace lcc::net {

enum class TlsVersion : std::uint8_t { k12, k13 };
// "1.2" or "1.3"; nullopt otherwise.
std::optional<TlsVersion> parseTlsVersion(std::string_view text);

using TlsContextPtr = std::shared_ptr<boost::asio::ssl::context>;

// A server: its certificate chain and key; with `client_ca_file`, every client must
// show a certificate signed by one of its CAs (mutual TLS).
struct TlsServerOptions {
  std::string cert_file, key_file;
  std::string client_ca_file;  // empty: no client certificate asked for
  TlsVersion min_version = TlsVersion::k12;
};

// A client: the CAs the server's certificate must chain to (empty: the system's
// store), and optionally a certificate of its own for servers that ask for one.
struct TlsClientOptions {
  std::string ca_file;
  std::string cert_file, key_file;  // both or neither
  TlsVersion min_version = TlsVersion::k12;
};

// Errors name the option and the file: "key_file /etc/lcc/key.pem: no such file".
Result<TlsContextPtr> makeServerContext(const TlsServerOptions& options);
Result<TlsContextPtr> makeClientContext(const TlsClientOptions& options);

// The context new connections take. THREADS: thread-safe.
class TlsContextSlot {
 public:
  explicit TlsContextSlot(TlsContextPtr context) : context_(std::move(context)) {}
  TlsContextPtr current() const {
    std::lock_guard<std::mutex> lock(mu_);
    return context_;
  }
  void replace(TlsContextPtr context) {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = std::move(context);
  }

 private:
  mutable std::mutex mu_;
  TlsContextPtr context_;
};

// How one side of a connection uses TLS. A client verifies the server's certificate
// against `server_name` (a DNS name, sent as SNI too, or an IP address).
struct TlsEndpoint {
  std::shared_ptr<TlsContextSlot> slot;
  std::string server_name;  // clients only
};

// The TLS of one end of a link between machines: the context (null: plain TCP) and
// the handshake deadline on `clock` (common/tls_config.h makes it from the config).
struct TlsLink {
  std::shared_ptr<TlsContextSlot> slot;
  Clock* clock = nullptr;
  Millis handshake{10000};
};

// A link address, "host:port" or "tls://host:port": the host:port into *host_port; for
// tls:// also the link's context into *slot and its handshake deadline (and clock) into
// *conn. Error (naming `what`): tls:// and no context. (net::setListenAddress,
// net::setTargetAddress.)
Status applyLinkAddress(const std::string& what, const std::string& address, const TlsLink& link,
                        std::string* host_port, std::shared_ptr<TlsContextSlot>* slot, ConnectionOptions* conn);

// For a client that drives an asio::ssl::stream itself (the CU's remote content reads,
// the admin client of `lcc`): SNI for a DNS name, and the name or address the server's
// certificate must carry (empty: not checked). False when OpenSSL refuses the name.
bool setServerName(SSL* ssl, const std::string& name);
// The text of a TLS failure `ec` on `ssl`, with the certificate check's reason when
// that is what failed: "certificate verify failed (unable to get local issuer certificate)".
std::string describeTlsError(SSL* ssl, const boost::system::error_code& ec);

enum class TlsRole : std::uint8_t { kServer, kClient };

class TlsStream final : public ByteStream {
 public:
  // As TcpStream; the handshake runs in handshake(). `server_name`: clients only.
  TlsStream(Strand strand, boost::asio::ip::tcp::socket socket, TlsContextPtr context, TlsRole role,
            std::string server_name = {});

  void handshake(std::function<void(const boost::system::error_code&)> done) override;
  std::string describeError(const boost::system::error_code& ec) const override;
  void readSome(boost::asio::mutable_buffer buffer, IoHandler handler) override;
  void writeAll(boost::asio::const_buffer buffer, IoHandler handler) override;
  void shutdownSend() override;
  void close() override;
  std::string peer() const override { return peer_; }
  std::string peerAddress() const override { return address_; }

 private:
  Strand strand_;
  using Ssl = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;
  TlsContextPtr context_;  // outlives the SSL object made from it
  // Shared with the close_notify write, which nobody else waits for: the stream must
  // outlive it even when the connection is gone first.
  std::shared_ptr<Ssl> stream_;
  TlsRole role_;
  std::string server_name_;
  std::string peer_ = "?", address_ = "?";
  bool shut_ = false;
};

// TLS over a connected socket descriptor the caller owns (blocking or not). The
// descriptor must stay open while this lives; reads and writes go through it.
class FdTls {
 public:
  // What a read or a write did: `n` bytes; or nothing yet and `wants` (POLLIN or
  // POLLOUT) says what to wait for; or `eof` (the server closed).
  struct Io {
    std::size_t n = 0;
    short wants = 0;
    bool eof = false;
  };
  // The client handshake, waiting (poll) at most `timeout_ms` per step (<= 0: no limit).
  static Result<std::unique_ptr<FdTls>> connect(int fd, const TlsContextPtr& context, const std::string& server_name,
                                               int timeout_ms);
  ~FdTls();
  Result<Io> write(const char* data, std::size_t n);
  Result<Io> read(char* data, std::size_t n);
  // Decrypted bytes already buffered: read them before waiting on the descriptor.
  bool pending() const;
  // Sends close_notify (best effort; the server may already be gone).
  void closeNotify();

 private:
  FdTls(TlsContextPtr context, void* ssl) : context_(std::move(context)), ssl_(ssl) {}
  Result<Io> result(int rc, const char* what);
  TlsContextPtr context_;
  void* ssl_;  // SSL*
};

// Blocks until `fd` is ready for `events` or `timeout_ms` passes (<= 0: no limit).
Status waitFd(int fd, short events, int timeout_ms, const std::string& what);

}  // namespace lcc::net
