#include "net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "net/host_port.h"

namespace lcc::net {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

std::optional<TlsVersion> parseTlsVersion(std::string_view text) {
  if (text == "1.2") return TlsVersion::k12;
  if (text == "1.3") return TlsVersion::k13;
  return std::nullopt;
}

namespace {

// The reason of the last OpenSSL error (and the queue cleared), or `fallback`.
std::string opensslError(const std::string& fallback) {
  unsigned long e = ERR_get_error();
  std::string why;
  while (e != 0) {
    const char* r = ERR_reason_error_string(e);
    why = r != nullptr ? r : "error " + std::to_string(e);
    e = ERR_get_error();
  }
  return why.empty() ? fallback : why;
}

Status fileProblem(const char* field, const std::string& path, const std::string& why) {
  return Status::invalidArgument(std::string(field) + ": " + path + ": " + why);
}

// A readable file, or why not (so that a missing key file is said as such, not as
// an OpenSSL parse error).
Status readable(const char* field, const std::string& path) {
  if (path.empty()) return Status::invalidArgument(std::string(field) + ": not set");
  if (::access(path.c_str(), R_OK) != 0) return fileProblem(field, path, std::strerror(errno));
  return Status::ok();
}

Status setCommon(SSL_CTX* ctx, TlsVersion min_version) {
  const int v = min_version == TlsVersion::k13 ? TLS1_3_VERSION : TLS1_2_VERSION;
  if (SSL_CTX_set_min_proto_version(ctx, v) != 1) {
    return Status::invalidArgument("min_version: " + opensslError("not supported"));
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return Status::ok();
}

Status loadCertAndKey(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file) {
  LCC_RETURN_IF_ERROR(readable("cert_file", cert_file));
  LCC_RETURN_IF_ERROR(readable("key_file", key_file));
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return fileProblem("cert_file", cert_file, "not a PEM certificate: " + opensslError("unreadable"));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return fileProblem("key_file", key_file, "does not match the certificate in " + cert_file);
    }
    return fileProblem("key_file", key_file, "not a PEM private key: " + opensslError("unreadable"));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fileProblem("key_file", key_file, "does not match the certificate in " + cert_file);
  }
  return Status::ok();
}

Status loadCa(SSL_CTX* ctx, const char* field, const std::string& ca_file) {
  LCC_RETURN_IF_ERROR(readable(field, ca_file));
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return fileProblem(field, ca_file, "no PEM CA certificate: " + opensslError("unreadable"));
  }
  return Status::ok();
}

bool isIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// Why the peer's certificate was refused, when that is what failed.
std::string verifyFailure(SSL* ssl) {
  const long v = SSL_get_verify_result(ssl);
  if (v == X509_V_OK) return {};
  return X509_verify_cert_error_string(v);
}

}  // namespace

bool setServerName(SSL* ssl, const std::string& name) {
  if (name.empty()) return true;
  if (isIpAddress(name)) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str()) == 1;
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set_tlsext_host_name(ssl, name.c_str()) == 1 && SSL_set1_host(ssl, name.c_str()) == 1;
}

std::string describeTlsError(SSL* ssl, const boost::system::error_code& ec) {
  std::string why = ec.message();
  const std::string refused = verifyFailure(ssl);
  if (!refused.empty()) why += " (" + refused + ")";
  return why;
}

Result<TlsContextPtr> makeServerContext(const TlsServerOptions& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* c = ctx->native_handle();
  LCC_RETURN_IF_ERROR(setCommon(c, o.min_version));
  LCC_RETURN_IF_ERROR(loadCertAndKey(c, o.cert_file, o.key_file));
  if (!o.client_ca_file.empty()) {
    LCC_RETURN_IF_ERROR(loadCa(c, "client_ca_file", o.client_ca_file));
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.client_ca_file.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(c, names);
    SSL_CTX_set_verify(c, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return ctx;
}

Result<TlsContextPtr> makeClientContext(const TlsClientOptions& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* c = ctx->native_handle();
  LCC_RETURN_IF_ERROR(setCommon(c, o.min_version));
  if (o.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(c) != 1) {
      return Status::invalidArgument("ca_file: the system's CA store: " + opensslError("unreadable"));
    }
  } else {
    LCC_RETURN_IF_ERROR(loadCa(c, "ca_file", o.ca_file));
  }
  if (!o.cert_file.empty() || !o.key_file.empty()) LCC_RETURN_IF_ERROR(loadCertAndKey(c, o.cert_file, o.key_file));
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER, nullptr);
  return ctx;
}

Status applyLinkAddress(const std::string& what, const std::string& address, const TlsLink& link,
                        std::string* host_port, std::shared_ptr<TlsContextSlot>* slot, ConnectionOptions* conn) {
  const LinkAddress a = splitLinkAddress(address);
  *host_port = a.host_port;
  if (!a.tls) return Status::ok();
  if (!link.slot) return Status::invalidArgument(what + " " + address + ": no TLS context (tls.* keys)");
  *slot = link.slot;
  conn->clock = link.clock;
  conn->handshake = link.handshake;
  return Status::ok();
}

// ---- TlsStream -------------------------------------------------------------------

TlsStream::TlsStream(Strand strand, tcp::socket socket, TlsContextPtr context, TlsRole role, std::string server_name)
    : strand_(std::move(strand)),
      context_(std::move(context)),
      stream_(std::make_shared<Ssl>(std::move(socket), *context_)),
      role_(role),
      server_name_(std::move(server_name)) {
  boost::system::error_code ec;
  auto ep = stream_->next_layer().remote_endpoint(ec);
  if (!ec) {
    address_ = ep.address().to_string();
    peer_ = (ep.address().is_v6() ? "[" + address_ + "]" : address_) + ":" + std::to_string(ep.port());
  }
  stream_->next_layer().set_option(tcp::no_delay(true), ec);
}

void TlsStream::handshake(std::function<void(const boost::system::error_code&)> done) {
  if (role_ == TlsRole::kClient && !setServerName(stream_->native_handle(), server_name_)) {
    return done(asio::error::invalid_argument);
  }
  const auto type = role_ == TlsRole::kServer ? ssl::stream_base::server : ssl::stream_base::client;
  stream_->async_handshake(type, asio::bind_executor(strand_, std::move(done)));
}

std::string TlsStream::describeError(const boost::system::error_code& ec) const {
  return describeTlsError(stream_->native_handle(), ec);
}

void TlsStream::readSome(asio::mutable_buffer buffer, IoHandler handler) {
  // A peer that closes TCP without close_notify has still ended the stream: an EOF
  // like any other (nothing here trusts a length the stream did not frame itself).
  auto on_read = [h = std::move(handler)](const boost::system::error_code& ec, std::size_t n) {
    boost::system::error_code e = ec;
    if (e == ssl::error::stream_truncated) e = asio::error::eof;
    h(e, n);
  };
  stream_->async_read_some(buffer, asio::bind_executor(strand_, std::move(on_read)));
}

void TlsStream::writeAll(asio::const_buffer buffer, IoHandler handler) {
  asio::async_write(*stream_, buffer, asio::bind_executor(strand_, std::move(handler)));
}

// close_notify without waiting for the peer's: marking the peer's as received makes
// SSL_shutdown complete at once (one write), and the mark is taken back at once, so
// the reads of the linger time still see the peer's bytes and its own close_notify.
void TlsStream::shutdownSend() {
  if (shut_) return;
  shut_ = true;
  SSL* s = stream_->native_handle();
  const int before = SSL_get_shutdown(s);
  SSL_set_shutdown(s, before | SSL_RECEIVED_SHUTDOWN);
  stream_->async_shutdown(
      asio::bind_executor(strand_, [keep = stream_, ctx = context_](const boost::system::error_code&) {}));
  SSL_set_shutdown(s, (before & SSL_RECEIVED_SHUTDOWN) | SSL_SENT_SHUTDOWN);
}

void TlsStream::close() {
  boost::system::error_code ec;
  stream_->next_layer().shutdown(tcp::socket::shutdown_both, ec);
  stream_->next_layer().close(ec);
}

// ---- FdTls -----------------------------------------------------------------------

namespace {

// OpenSSL writes to the descriptor with write(): a server gone would raise SIGPIPE in
// a program (or a library's caller) that did not ignore it. Blocked on this thread for
// the call, and a SIGPIPE it raised is taken off again.
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigpending(&pending_before_);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    sigset_t now;
    sigpending(&now);
    if (sigismember(&now, SIGPIPE) && !sigismember(&pending_before_, SIGPIPE)) {
      timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_, pending_before_;
};

}  // namespace

Status waitFd(int fd, short events, int timeout_ms, const std::string& what) {
  pollfd p{fd, events, 0};
  for (;;) {
    int rc = ::poll(&p, 1, timeout_ms <= 0 ? -1 : timeout_ms);
    if (rc > 0) return Status::ok();
    if (rc == 0) return Status::ioError("timed out " + what);
    if (errno != EINTR) return Status::ioError(what + ": " + std::strerror(errno));
  }
}

Result<std::unique_ptr<FdTls>> FdTls::connect(int fd, const TlsContextPtr& context, const std::string& server_name,
                                              int timeout_ms) {
  SSL* ssl = SSL_new(context->native_handle());
  if (ssl == nullptr) return Status::ioError("TLS: " + opensslError("cannot make a session"));
  std::unique_ptr<FdTls> t(new FdTls(context, ssl));
  if (SSL_set_fd(ssl, fd) != 1 || !setServerName(ssl, server_name)) {
    return Status::ioError("TLS: " + opensslError("cannot set up the session"));
  }
  for (;;) {
    ERR_clear_error();
    NoSigpipe no_sigpipe;
    const int rc = SSL_connect(ssl);
    if (rc == 1) return t;
    const int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      LCC_RETURN_IF_ERROR(waitFd(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, timeout_ms, "in the TLS handshake"));
      continue;
    }
    std::string why = opensslError(e == SSL_ERROR_SYSCALL ? "the server closed the connection" : "failed");
    if (std::string refused = verifyFailure(ssl); !refused.empty()) why += " (" + refused + ")";
    return Status::ioError("TLS handshake with " + server_name + ": " + why);
  }
}

FdTls::~FdTls() { SSL_free(static_cast<SSL*>(ssl_)); }

Result<FdTls::Io> FdTls::result(int rc, const char* what) {
  SSL* ssl = static_cast<SSL*>(ssl_);
  Io io;
  if (rc > 0) {
    io.n = static_cast<std::size_t>(rc);
    return io;
  }
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ: io.wants = POLLIN; return io;
    case SSL_ERROR_WANT_WRITE: io.wants = POLLOUT; return io;
    case SSL_ERROR_ZERO_RETURN: io.eof = true; return io;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {  // closed without close_notify, or reset
        io.eof = true;
        return io;
      }
      [[fallthrough]];
    default: return Status::ioError("TLS: " + opensslError(std::string(what) + " failed"));
  }
}

Result<FdTls::Io> FdTls::write(const char* data, std::size_t n) {
  ERR_clear_error();
  NoSigpipe no_sigpipe;
  const int rc = SSL_write(static_cast<SSL*>(ssl_), data, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
  return result(rc, "sending");
}

Result<FdTls::Io> FdTls::read(char* data, std::size_t n) {
  ERR_clear_error();
  const int rc = SSL_read(static_cast<SSL*>(ssl_), data, static_cast<int>(std::min<std::size_t>(n, 1 << 30)));
  return result(rc, "reading");
}

bool FdTls::pending() const { return SSL_pending(static_cast<SSL*>(ssl_)) > 0; }

void FdTls::closeNotify() {
  ERR_clear_error();
  NoSigpipe no_sigpipe;
  SSL_shutdown(static_cast<SSL*>(ssl_));
}

}  // namespace lcc::net
