#include "cu/remote_content.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include "common/response_head.h"
#include "http/url_codec.h"
#include "lcc/support/cu_xml_format.h"
#include "net/host_port.h"
#include "net/tls.h"

namespace lcc::cu {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

namespace {

struct Target {
  bool tls = false;       // https://
  std::string host;       // for resolving (IPv6 without brackets), and the name the certificate must carry
  std::string port;
  std::string authority;  // Host header
  std::string prefix;     // path prefix, no trailing '/'
};

bool parseBase(const std::string& url, Target* t) {
  constexpr std::string_view kHttp = "http://", kHttps = "https://";
  t->tls = url.compare(0, kHttps.size(), kHttps) == 0;
  if (!t->tls && url.compare(0, kHttp.size(), kHttp) != 0) return false;
  std::string rest = url.substr(t->tls ? kHttps.size() : kHttp.size());
  auto slash = rest.find('/');
  t->authority = rest.substr(0, slash);
  t->prefix = slash == std::string::npos ? std::string() : rest.substr(slash);
  while (!t->prefix.empty() && t->prefix.back() == '/') t->prefix.pop_back();
  auto hp = net::HostPort::parseAuthority(t->authority, t->tls ? 443 : 80);
  if (!hp.isOk() || hp->port == 0) return false;
  t->host = hp->host;
  t->port = hp->portString();
  return true;
}

bool staleConnectionError(const beast::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == bhttp::error::partial_message ||
         ec == asio::ssl::error::stream_truncated;
}

std::string describe(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  return ec.message();
}

// Answers come as several small writes (header, chunks, last chunk); a delayed ACK
// here would hold each next write of a server without TCP_NODELAY for ~40 ms (Nagle).
// Linux resets quick-ack mode by itself, so it is asked for before every read.
void quickAck(tcp::socket& s) {
#ifdef TCP_QUICKACK
  int one = 1;
  ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
#else
  (void)s;
#endif
}

// One connection to a machine's HTTP port: plain TCP, or TLS over it (https://).
struct Conn {
  Conn(asio::io_context& io, net::TlsContextPtr tls_context) : context(std::move(tls_context)) {
    if (context) {
      tls.emplace(beast::tcp_stream(io), *context);
    } else {
      plain.emplace(io);
    }
  }
  // The TCP stream under it all (timeouts, the socket).
  beast::tcp_stream& tcp() { return tls ? tls->next_layer() : *plain; }
  // Runs op(stream) on the stream HTTP goes through.
  template <typename Op>
  void io(Op&& op) {
    if (tls) {
      op(*tls);
    } else {
      op(*plain);
    }
  }

  std::optional<beast::tcp_stream> plain;
  net::TlsContextPtr context;  // outlives the TLS stream made from it
  std::optional<asio::ssl::stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  bool busy = false;
  std::deque<std::string> ahead;  // files asked for by prefetch(), answers not read yet, in order
};

using Parser = bhttp::response_parser<bhttp::buffer_body>;

}  // namespace

struct RemoteContentReader::Impl {
  Impl(RemoteOptions o, Counter* b) : options(o), bytes(b) {}

  RemoteOptions options;
  Counter* bytes;
  asio::io_context io;
  std::map<std::string, std::shared_ptr<Conn>> conns;  // base URL -> its keep-alive connection
  std::set<std::string> down;
  std::size_t opened = 0;

  // Runs what was started on `io` until it is done (each operation has its timeout).
  void runAll() {
    io.restart();
    io.run();
  }

  void markDown(const std::string& base, const std::string& why) {
    if (down.insert(base).second) {
      spdlog::warn("cu: content at {} is not reachable ({}); its records are unreadable for the rest of this answer",
                   base, why);
    }
  }

  void drop(const std::string& base, const std::shared_ptr<Conn>& c) {
    beast::error_code ec;
    c->tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    c->tcp().close();
    auto it = conns.find(base);
    if (it != conns.end() && it->second == c) conns.erase(it);
  }

  Result<std::shared_ptr<Conn>> connect(const Target& t) {
    net::TlsContextPtr context;
    if (t.tls) {
      if (!options.tls || !(context = options.tls->current())) {
        return Status::ioError(t.authority + ": https:// content URL, and no TLS client context (tls.* keys)");
      }
    }
    auto c = std::make_shared<Conn>(io, std::move(context));
    std::vector<tcp::endpoint> eps;
    beast::error_code ec;
    std::uint16_t port = 0;
    auto [p, perr] = std::from_chars(t.port.data(), t.port.data() + t.port.size(), port);
    if (perr != std::errc() || p != t.port.data() + t.port.size() || port == 0) {
      return Status::invalidArgument("bad port " + t.port);
    }
    auto addr = asio::ip::make_address(t.host, ec);
    if (!ec) {
      eps.emplace_back(addr, port);
    } else {
      tcp::resolver resolver(io);
      asio::steady_timer timer(io);
      beast::error_code rec = asio::error::would_block;
      resolver.async_resolve(t.host, t.port, [&](const beast::error_code& e, tcp::resolver::results_type res) {
        rec = e;
        for (const auto& r : res) eps.push_back(r.endpoint());
        timer.cancel();
      });
      timer.expires_after(options.remote_connect_timeout);
      timer.async_wait([&](const beast::error_code& e) {
        if (!e) resolver.cancel();
      });
      runAll();
      if (rec) return Status::ioError("resolving " + t.host + ": " + describe(rec));
      if (eps.empty()) return Status::ioError("resolving " + t.host + ": no address");
    }
    beast::error_code cec = asio::error::would_block;
    c->tcp().expires_after(options.remote_connect_timeout);
    c->tcp().async_connect(eps, [&](const beast::error_code& e, const tcp::endpoint&) { cec = e; });
    runAll();
    if (cec) return Status::ioError("connecting to " + t.authority + ": " + describe(cec));
    c->tcp().socket().set_option(tcp::no_delay(true), ec);
    if (c->tls) LCC_RETURN_IF_ERROR(handshake(*c, t));
    ++opened;
    return c;
  }

  // The TLS handshake of an https:// connection, within cu.remote_connect_timeout: the
  // server's certificate must chain to the context's CAs and name the URL's host.
  Status handshake(Conn& c, const Target& t) {
    if (!net::setServerName(c.tls->native_handle(), t.host)) {
      return Status::ioError("TLS with " + t.authority + ": " + t.host + " is not a name a certificate can carry");
    }
    beast::error_code ec = asio::error::would_block;
    c.tcp().expires_after(options.remote_connect_timeout);
    c.tls->async_handshake(asio::ssl::stream_base::client, [&](const beast::error_code& e) { ec = e; });
    runAll();
    if (!ec) return Status::ok();
    const std::string why = ec == beast::error::timeout ? describe(ec) : net::describeTlsError(c.tls->native_handle(), ec);
    return Status::ioError("TLS handshake with " + t.authority + ": " + why);
  }

  // Sends the request for `file` on `c`.
  beast::error_code request(Conn& c, const Target& t, const std::string& file) {
    bhttp::request<bhttp::empty_body> req{bhttp::verb::get, t.prefix + "/content/" + http::percentEncode(file, "/"), 11};
    req.set(bhttp::field::host, t.authority);
    req.set(bhttp::field::user_agent, "lccd-cu");
    req.keep_alive(true);
    beast::error_code ec = asio::error::would_block;
    c.tcp().expires_after(options.remote_read_timeout);
    c.io([&](auto& s) { bhttp::async_write(s, req, [&](const beast::error_code& e, std::size_t) { ec = e; }); });
    runAll();
    return ec;
  }

  // Reads the header (`header_only`) or body bytes (into the parser's buffer) of the
  // next answer on `c`, within cu.remote_read_timeout.
  beast::error_code read(Conn& c, Parser& parser, bool header_only) {
    beast::error_code ec = asio::error::would_block;
    c.tcp().expires_after(options.remote_read_timeout);
    quickAck(c.tcp().socket());
    auto done = [&](const beast::error_code& e, std::size_t) { ec = e; };
    c.io([&](auto& s) {
      if (header_only) {
        bhttp::async_read_header(s, c.buffer, parser, done);
      } else {
        bhttp::async_read(s, c.buffer, parser, done);
      }
    });
    runAll();
    return ec;
  }
  beast::error_code readHeader(Conn& c, Parser& parser) { return read(c, parser, true); }
  beast::error_code readBody(Conn& c, Parser& parser) { return read(c, parser, false); }

  // Reads and drops the body of an answer that is not used (a 404's short text), so
  // the connection, and the requests sent ahead on it, stay usable. False when the
  // body is over 64 KiB or broken, or the server closes after it.
  bool discardBody(Conn& c, Parser& parser) {
    char scratch[4096];
    std::size_t total = 0;
    while (!parser.is_done()) {
      auto& body = parser.get().body();
      body.data = scratch;
      body.size = sizeof scratch;
      beast::error_code ec = readBody(c, parser);
      if (ec == bhttp::error::need_buffer) ec = {};
      total += sizeof scratch - body.size;
      if (ec || total > 64 * 1024) return false;
    }
    return parser.keep_alive();
  }

  // A new connection to `base`, kept for the records that follow. A machine that cannot
  // be reached is taken as down, so it costs one timeout per answer.
  Result<std::shared_ptr<Conn>> connectKept(const std::string& base, const Target& t) {
    auto made = connect(t);
    if (!made.isOk()) {
      if (made.status().code() == StatusCode::kIOError) markDown(base, made.status().message());
      return made.status();
    }
    conns[base] = *made;
    return made;
  }

  // The kept connection to `base`, or null.
  std::shared_ptr<Conn> kept(const std::string& base) {
    auto it = conns.find(base);
    if (it == conns.end() || !it->second->tcp().socket().is_open()) return nullptr;
    return it->second;
  }
};

namespace {

// The robot's response head carried by a GET /content/ answer (X-LCC-Response-Head,
// base64 of the side file), if it belongs to content with MD5 `md5`; else empty.
template <typename Fields>
std::string responseHeadOf(const Fields& res, const std::string& md5) {
  auto it = res.find(beast::string_view(kResponseHeadHeader.data(), kResponseHeadHeader.size()));
  if (it == res.end() || md5.empty()) return {};
  std::string file;
  proto::Base64Decoder dec;
  if (!dec.update(std::string_view(it->value().data(), it->value().size()), file) || !dec.finish()) return {};
  return decodeResponseHead(file, md5);
}

// The body of one answer, read as exactly `size` bytes.
class RemoteSource final : public ContentSource {
 public:
  RemoteSource(std::shared_ptr<RemoteContentReader::Impl> impl, std::shared_ptr<Conn> conn,
               std::unique_ptr<Parser> parser, std::string base, std::string what, std::uint64_t size, std::string head)
      : impl_(std::move(impl)),
        conn_(std::move(conn)),
        parser_(std::move(parser)),
        base_(std::move(base)),
        what_(std::move(what)),
        size_(size),
        head_(std::move(head)) {}

  std::string responseHead() override { return head_; }

  ~RemoteSource() override {
    // The connection is kept for the next record only after a clean, complete answer.
    if (!failed_ && offset_ == size_ && parser_->is_done() && parser_->keep_alive()) {
      conn_->busy = false;
    } else {
      impl_->drop(base_, conn_);
    }
  }

  std::uint64_t size() const override { return size_; }

  Result<std::size_t> read(char* buf, std::size_t n) override {
    const std::uint64_t left = size_ - offset_;
    if (n > left) n = static_cast<std::size_t>(left);
    if (n == 0) return std::size_t{0};
    std::size_t got = 0;
    if (!failed_) {
      while (got < n) {
        if (parser_->is_done()) {
          fail("the answer ended early", false, got);
          break;
        }
        auto& body = parser_->get().body();
        body.data = buf + got;
        body.size = n - got;
        beast::error_code ec = readBody();
        const std::size_t now = (n - got) - body.size;
        got += now;
        if (impl_->bytes) impl_->bytes->inc(now);
        if (ec == bhttp::error::need_buffer) ec = {};
        if (ec) {
          fail(describe(ec), true, got);
          break;
        }
      }
    }
    if (got < n) {  // zero-fill the announced size (see the header)
      std::memset(buf + got, 0, n - got);
      got = n;
    }
    offset_ += got;
    if (offset_ == size_ && !failed_) finishMessage();
    return got;
  }

 private:
  void fail(const std::string& why, bool transport, std::size_t got_now) {
    failed_ = true;
    spdlog::warn("cu: reading {}: {} after {} of {} bytes; the rest is zero-filled", what_, why, offset_ + got_now,
                 size_);
    if (transport) impl_->markDown(base_, why);
  }

  // Reads what is left of the message (a chunked answer's last chunk) so that the
  // connection can serve the next record; a longer body than announced ends its use.
  void finishMessage() {
    if (parser_->is_done()) return;
    char scratch[512];
    auto& body = parser_->get().body();
    body.data = scratch;
    body.size = sizeof scratch;
    const beast::error_code ec = readBody();
    if (ec || body.size != sizeof scratch) {
      spdlog::debug("cu: {}: the answer did not end cleanly after {} bytes; its connection is closed", what_, size_);
      impl_->drop(base_, conn_);
    }
  }

  beast::error_code readBody() { return impl_->readBody(*conn_, *parser_); }

  std::shared_ptr<RemoteContentReader::Impl> impl_;
  std::shared_ptr<Conn> conn_;
  std::unique_ptr<Parser> parser_;
  const std::string base_;
  const std::string what_;
  const std::uint64_t size_;
  const std::string head_;  // the response head the answer carried, checked against the record's MD5
  std::uint64_t offset_ = 0;
  bool failed_ = false;
};

}  // namespace

RemoteContentReader::RemoteContentReader(RemoteOptions options, Counter* bytes)
    : impl_(std::make_shared<Impl>(options, bytes)) {}

RemoteContentReader::~RemoteContentReader() {
  // Idle connections end here; one a source still reads is closed when the source goes.
  for (auto& [base, c] : impl_->conns) {
    if (c->busy) continue;
    beast::error_code ec;
    c->tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    c->tcp().close();
  }
  impl_->conns.clear();
}

void RemoteContentReader::prefetch(const std::string& base_url, const std::string& file) {
  Impl& im = *impl_;
  if (im.options.remote_pipeline <= 1 || im.down.count(base_url)) return;
  Target t;
  if (!parseBase(base_url, &t)) return;
  std::shared_ptr<Conn> conn = im.kept(base_url);
  if (!conn) {
    auto made = im.connectKept(base_url, t);
    if (!made.isOk()) return;  // open() reports it
    conn = std::move(made).value();
  }
  if (conn->ahead.size() >= im.options.remote_pipeline) return;
  for (const auto& f : conn->ahead) {
    if (f == file) return;
  }
  if (im.request(*conn, t, file)) {
    im.drop(base_url, conn);  // open() asks again on a new connection
    return;
  }
  conn->ahead.push_back(file);
}

bool RemoteContentReader::isDown(const std::string& base_url) const { return impl_->down.count(base_url) != 0; }
std::size_t RemoteContentReader::connectionsOpened() const { return impl_->opened; }

Result<std::unique_ptr<ContentSource>> RemoteContentReader::open(const std::string& base_url, const std::string& file,
                                                                  std::uint64_t size, const std::string& machine,
                                                                  const std::string& md5) {
  Impl& im = *impl_;
  if (im.down.count(base_url)) return Status::ioError(base_url + " is not reachable (earlier in this answer)");
  Target t;
  if (!parseBase(base_url, &t)) return Status::invalidArgument("not a content URL: " + base_url);
  const std::string what = base_url + "/content/" + file;

  std::shared_ptr<Conn> conn;
  std::unique_ptr<Parser> parser;
  for (int attempt = 0;; ++attempt) {
    bool fresh = false;
    bool asked = false;  // the request went out ahead (prefetch)
    conn = im.kept(base_url);
    if (conn && !conn->busy && !conn->ahead.empty() && conn->ahead.front() != file) {
      // Not the answer that comes next on it: start over on a new connection.
      im.drop(base_url, conn);
      conn = nullptr;
    }
    if (conn && !conn->busy) {
      if (!conn->ahead.empty()) {
        conn->ahead.pop_front();
        asked = true;
      }
    } else {
      auto made = im.connectKept(base_url, t);
      if (!made.isOk()) return made.status();
      conn = std::move(made).value();
      fresh = true;
    }
    parser = std::make_unique<Parser>();
    parser->header_limit(static_cast<std::uint32_t>(im.options.max_header));
    // Only `size` bytes are read; a longer body ends the connection's use. (Not boost::none:
    // Beast 1.74 then refuses every body with a Content-Length.)
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::error_code ec = asked ? beast::error_code() : im.request(*conn, t, file);
    if (!ec) ec = im.readHeader(*conn, *parser);
    if (!ec) break;
    im.drop(base_url, conn);
    // A kept connection the server closed while idle: once more on a new one.
    if (!fresh && attempt == 0 && staleConnectionError(ec)) continue;
    im.markDown(base_url, describe(ec));
    return Status::ioError(what + ": " + describe(ec));
  }

  const auto& res = parser->get();
  const int status = static_cast<int>(res.result_int());
  if (status != 200) {
    // A whole short 404 keeps the connection and what was asked behind it (a record
    // after it is not refused as the next request on a new connection could be: 503).
    if (status != 404 || !im.discardBody(*conn, *parser)) im.drop(base_url, conn);
    if (status == 404) return Status::notFound(what + ": 404 not found");
    return Status::corruption(what + ": HTTP " + std::to_string(status));
  }
  if (auto m = res.find("X-LCC-Machine"); !machine.empty() && m != res.end() && m->value() != machine) {
    im.drop(base_url, conn);
    return Status::corruption(what + ": served by machine " + std::string(m->value().substr(0, 64)) +
                              ", the record is on " + machine);
  }
  if (auto h = res.find("X-LCC-MD5"); !md5.empty() && h != res.end() && h->value() != md5) {
    // A merging node's peer (GET /cu/content/) names the MD5 of the record it serves.
    im.drop(base_url, conn);
    return Status::corruption(what + ": the answer is content with MD5 " + std::string(h->value().substr(0, 64)) +
                              ", the record's is " + md5);
  }
  std::optional<std::uint64_t> announced;
  if (auto f = res.find("X-LCC-Size"); f != res.end()) {
    std::uint64_t v = 0;
    auto sv = f->value();
    auto [p, e] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
    if (e == std::errc() && p == sv.data() + sv.size()) announced = v;
  } else if (auto cl = parser->content_length()) {
    announced = *cl;
  }
  if (!announced || *announced != size) {
    im.drop(base_url, conn);
    return Status::corruption(what + ": the answer holds " + (announced ? std::to_string(*announced) : "an unknown number of") +
                              " bytes, its record says " + std::to_string(size));
  }
  conn->busy = true;
  std::string head = responseHeadOf(res, md5);
  return std::unique_ptr<ContentSource>(
      std::make_unique<RemoteSource>(impl_, std::move(conn), std::move(parser), base_url, what, size, std::move(head)));
}

}  // namespace lcc::cu
