#include "capi/cu_client.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <limits>

#include "lcc/support/time_util.h"
#include "net/host_port.h"

namespace lcc::capi {
namespace {

constexpr std::size_t kFeed = 16 * 1024;

template <typename T>
std::optional<T> number(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

Result<Endpoint> parseEndpoint(std::string_view text) {
  const net::LinkAddress link = net::splitLinkAddress(text);
  LCC_ASSIGN_OR_RETURN(net::HostPort hp, net::HostPort::parseTarget(link.host_port));
  return Endpoint{hp.host, hp.port, link.tls};
}

Result<std::unique_ptr<Socket>> Socket::connect(const Endpoint& ep, int timeout_ms, const net::TlsContextPtr& tls) {
  if (ep.tls && !tls) return Status::invalidArgument(ep.text() + ": no TLS context");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(ep.port);
  int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Status::ioError(ep.text() + ": " + ::gai_strerror(rc));
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    Status w = net::waitFd(fd, POLLOUT, timeout_ms, "connecting");
    int err = 0;
    socklen_t len = sizeof err;
    if (w.isOk()) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (!w.isOk() || err != 0) {
      last_error = w.isOk() ? std::strerror(err) : w.message();
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::freeaddrinfo(res);
    std::unique_ptr<Socket> sock(new Socket(fd, timeout_ms));
    if (ep.tls) {
      LCC_ASSIGN_OR_RETURN(sock->tls_, net::FdTls::connect(fd, tls, ep.host, timeout_ms));
    }
    return sock;
  }
  ::freeaddrinfo(res);
  return Status::ioError("cannot connect to " + ep.text() + ": " + last_error);
}

Socket::~Socket() {
  tls_.reset();
  ::close(fd_);
}

Result<net::FdTls::Io> Socket::sendSome(const char* data, std::size_t n) {
  if (tls_) return tls_->write(data, n);
  net::FdTls::Io io;
  ssize_t got = ::send(fd_, data, n, MSG_NOSIGNAL);
  if (got >= 0) {
    io.n = static_cast<std::size_t>(got);
  } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
    io.wants = POLLOUT;
  } else {
    return Status::ioError(std::strerror(errno));
  }
  return io;
}

Result<net::FdTls::Io> Socket::recvSome(char* buf, std::size_t n) {
  if (tls_) return tls_->read(buf, n);
  net::FdTls::Io io;
  ssize_t got = ::recv(fd_, buf, n, 0);
  if (got > 0) {
    io.n = static_cast<std::size_t>(got);
  } else if (got == 0) {
    io.eof = true;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
    io.wants = POLLIN;
  } else {
    return Status::ioError(std::strerror(errno));
  }
  return io;
}

Status Socket::writeAll(std::string_view bytes) {
  while (!bytes.empty()) {
    auto r = sendSome(bytes.data(), bytes.size());
    if (!r.isOk()) return r.status().withContext("sending the query");
    bytes.remove_prefix(r->n);
    if (r->wants != 0) LCC_RETURN_IF_ERROR(net::waitFd(fd_, r->wants, timeout_ms_, "sending the query"));
  }
  return Status::ok();
}

Status Socket::shutdownSend() {
  if (tls_) {
    tls_->closeNotify();
    return Status::ok();
  }
  if (::shutdown(fd_, SHUT_WR) != 0) return Status::ioError(std::string("shutdown: ") + std::strerror(errno));
  return Status::ok();
}

Result<std::size_t> Socket::read(char* buf, std::size_t n) {
  for (;;) {
    auto r = recvSome(buf, n);
    if (!r.isOk()) return r.status().withContext("reading the answer");
    if (r->n > 0 || r->eof) return r->n;
    LCC_RETURN_IF_ERROR(net::waitFd(fd_, r->wants, timeout_ms_, "waiting for the answer"));
  }
}

Status rawQuery(const Endpoint& ep, const proto::CuQuery& query, int timeout_ms,
                const std::function<Status(std::string_view)>& fn, const net::TlsContextPtr& tls) {
  LCC_ASSIGN_OR_RETURN(auto sock, Socket::connect(ep, timeout_ms, tls));
  LCC_RETURN_IF_ERROR(sock->writeAll(proto::formatCuQueryXml(query)));
  std::string buf(64 * 1024, '\0');
  for (;;) {
    LCC_ASSIGN_OR_RETURN(std::size_t n, sock->read(buf.data(), buf.size()));
    if (n == 0) return Status::ok();
    LCC_RETURN_IF_ERROR(fn(std::string_view(buf.data(), n)));
  }
}

// ---------------------------------------------------------------------------

AnswerReader::AnswerReader(std::unique_ptr<Socket> socket)
    : socket_(std::move(socket)),
      reader_(*this,
              proto::XmlLimits{std::numeric_limits<std::size_t>::max() / 4, 8,
                               std::numeric_limits<std::uint64_t>::max(), 64},
              proto::XmlFraming::kDocuments) {}

AnswerReader::~AnswerReader() = default;

Status AnswerReader::feedMore() {
  if (done_) return Status::ok();
  char buf[kFeed];
  LCC_ASSIGN_OR_RETURN(std::size_t n, socket_->read(buf, sizeof buf));
  if (n == 0) return Status::ioError("the answer ended before its end tag (server gone?)");
  reader_.feed(buf, n);
  if (reader_.failed()) {
    return Status::corruption("malformed answer: " + (parse_error_.empty() ? reader_.errorMessage() : parse_error_));
  }
  return Status::ok();
}

Status AnswerReader::start() {
  while (!root_seen_ && !done_) LCC_RETURN_IF_ERROR(feedMore());
  if (rejected_) {
    while (!done_) LCC_RETURN_IF_ERROR(feedMore());
  }
  return Status::ok();
}

Result<const AnswerRecord*> AnswerReader::next() {
  if (current_) {
    if (!recs_.front().complete) skipping_ = true;
    recs_.pop_front();
    current_ = false;
  }
  while ((recs_.empty() || !recs_.front().head_known) && !done_) LCC_RETURN_IF_ERROR(feedMore());
  if (recs_.empty()) return static_cast<const AnswerRecord*>(nullptr);
  current_ = true;
  return static_cast<const AnswerRecord*>(&recs_.front().rec);
}

Result<std::size_t> AnswerReader::readContent(char* buf, std::size_t n) {
  if (!current_) return Status::invalidArgument("no current record");
  for (;;) {
    Rec& r = recs_.front();
    if (!r.content.empty()) {
      const std::size_t k = std::min(n, r.content.size());
      std::memcpy(buf, r.content.data(), k);
      r.content.erase(0, k);
      return k;
    }
    if (r.complete || done_) return std::size_t{0};
    LCC_RETURN_IF_ERROR(feedMore());
  }
}

void AnswerReader::onStart(int depth, const proto::XmlName& name, const proto::XmlAttrs& attrs) {
  if (depth == 1) {
    root_seen_ = true;
    if (name.ns != proto::kLococaNs) {
      parse_error_ = "the answer's root is not in the lococa namespace";
      return reader_.fail(ErrorCode::kMalformed, parse_error_);
    }
    if (name.local == "query_rejected") {
      rejected_ = true;
    } else if (name.local == "result") {
      count_ = number<std::uint64_t>(attrs.getOr("count", "")).value_or(0);
      last_seq_ = number<std::uint64_t>(attrs.getOr("last_seq", "")).value_or(0);
    } else {
      parse_error_ = "unexpected answer <" + std::string(name.local) + ">";
      reader_.fail(ErrorCode::kMalformed, parse_error_);
    }
    return;
  }
  if (rejected_) {
    if (depth == 2 && name.local == "reason") reject_code_ = number<int>(attrs.getOr("code", "")).value_or(0);
    return;
  }
  if (depth == 2 && name.local == "url") {
    Rec r;
    AnswerRecord& a = r.rec;
    a.seq = number<std::uint64_t>(attrs.getOr("seq", "")).value_or(0);
    a.pid = number<std::uint32_t>(attrs.getOr("pid", "")).value_or(0);
    a.url = attrs.getOr("c", "");
    a.mime = attrs.getOr("m", "");
    a.browse = attrs.getOr("b", a.url);
    a.fetch = attrs.getOr("f", a.url);
    a.view_tag = attrs.getOr("st", "");
    a.md5 = attrs.getOr("md5", "");
    a.size = number<std::uint64_t>(attrs.getOr("sz", "")).value_or(0);
    a.deleted = attrs.getOr("deleted", "no") == "yes";
    a.mtime_text = attrs.getOr("mt", "");
    a.stored_text = attrs.getOr("stored", "");
    if (!a.mtime_text.empty()) a.mtime = parseTime(a.mtime_text);
    if (!a.stored_text.empty()) a.stored = parseTime(a.stored_text);
    recs_.push_back(std::move(r));
  } else if (depth == 3 && name.local == "content" && !skipping_ && !recs_.empty()) {
    recs_.back().head_known = true;
    AnswerRecord& a = recs_.back().rec;
    if (auto m = attrs.get("missing")) {
      a.content_missing = *m;
    } else {
      a.has_content = true;
      in_content_ = true;
      decoder_ = proto::Base64Decoder();
    }
  } else if (depth == 3 && name.local == "content" && skipping_) {
    in_content_ = true;
    decoder_ = proto::Base64Decoder();
  }
}

void AnswerReader::onText(int depth, std::string_view text) {
  if (rejected_) {
    if (depth == 2) reject_message_.append(text);
    return;
  }
  if (depth != 3 || !in_content_) return;
  if (skipping_) return;  // not decoded: nobody reads it
  if (!decoder_.update(text, recs_.back().content)) {
    parse_error_ = "content is not base64";
    reader_.fail(ErrorCode::kMalformed, parse_error_);
  }
}

void AnswerReader::onEnd(int depth, const proto::XmlName& name) {
  if (depth == 1) {
    done_ = true;
    return;
  }
  if (rejected_) return;
  if (depth == 3 && in_content_) {
    in_content_ = false;
    if (!skipping_ && !decoder_.finish()) {
      parse_error_ = "content ends inside a base64 group";
      reader_.fail(ErrorCode::kMalformed, parse_error_);
    }
  } else if (depth == 2 && name.local == "url") {
    if (skipping_) {
      skipping_ = false;
    } else if (!recs_.empty()) {
      recs_.back().complete = true;
      recs_.back().head_known = true;
    }
  }
}

}  // namespace lcc::capi
