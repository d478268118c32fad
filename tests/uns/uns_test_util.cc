#include "uns/uns_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>
#include <cstdio>
#include <cstdlib>

#include "common/config/config.h"
#include "common/password.h"
#include "common/posix_env.h"
#include "net/io_loop.h"
#include "proto/link_frames.h"
#include "proto/uns_qm_frames.h"

namespace lcc::uns::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {
const std::string& s3cretHash() {
  // A password an administrator chose: Argon2id, which any hasher reads.
  static const std::string h = PasswordHasher::ephemeral()->hashChosen("s3cret").value();
  return h;
}
}  // namespace

std::vector<ProviderRecord> goldenProviders(WallTime now) {
  std::vector<ProviderRecord> out;
  ProviderRecord p1;
  p1.id = 1;
  p1.state = ProviderState::kActive;
  p1.password_hash = s3cretHash();
  p1.prefixes = {"http://www.server.com/"};
  p1.quota_files = 100;
  p1.used_files = 10;
  p1.quota_bytes = 1000000;
  p1.used_bytes = 5000;
  p1.conn_seq = 41;
  p1.last_ip = "10.0.0.9";
  p1.last_connect = fromUnixMillis(1714561200000);  // 2024-05-01T11:00:00Z
  p1.fullsets_used = 1;
  p1.fullset_period_start = now - Millis(24LL * 3600 * 1000);
  FetchErrorEntry e;
  e.notice.key = {1, "http://www.server.com/gone.htm", "text/html"};
  e.code = ErrorCode::kNotFound;
  e.http_status = 404;
  e.message = "not found (HTTP 404)";
  e.when = now - Millis(60000);
  FetchErrorEntry e2 = e;
  e2.notice.key.url = "http://www.server.com/secret.htm";
  e2.code = ErrorCode::kAccessDenied;
  e2.message = "access denied (HTTP 403)";
  p1.errors = {e, e2};
  p1.error_total = 2;
  out.push_back(p1);

  ProviderRecord p2 = p1;
  p2.id = 2;
  p2.state = ProviderState::kPending;
  p2.errors.clear();
  p2.error_total = 0;
  out.push_back(p2);

  ProviderRecord p3;
  p3.id = 3;
  p3.state = ProviderState::kActive;
  p3.password_hash = s3cretHash();
  p3.prefixes = {"https://three.net/"};
  p3.conn_seq = 5;  // has connected before: not a first connect
  p3.fullsets_used = 3;
  p3.fullset_period_start = now - Millis(3600 * 1000);
  p3.fullset_wanted = true;
  p3.fullset_reason = FullSetReason::kCacheCrash;
  out.push_back(p3);

  ProviderRecord p4 = p3;
  p4.id = 4;
  p4.prefixes = {"http://www.four.org/"};
  p4.fullset_wanted = false;
  p4.fullset_reason = FullSetReason::kNone;
  out.push_back(p4);
  return out;
}

ProviderFixture::ProviderFixture(const std::vector<ProviderRecord>& records) {
  HostContext host{&clock_, posixEnv(), nullptr, "/tmp", "m1"};
  registry_ = std::make_unique<PluginRegistry>(LCC_PLUGIN_DIR, host);
  auto opts = registry_->defaultOptions("storage-memory");
  if (!opts.isOk()) throw std::runtime_error(opts.status().toString());
  auto store = registry_->makeProviderStore("storage-memory", opts.value());
  if (!store.isOk()) throw std::runtime_error(store.status().toString());
  store_ = std::move(store).value();
  ProviderId max_id = 0;
  for (const auto& r : records) max_id = std::max(max_id, r.id);
  for (ProviderId i = 1; i <= max_id; ++i) (void)store_->create(ProviderRecord{});
  for (const auto& r : records) {
    Status s = store_->put(r);
    if (!s.isOk()) throw std::runtime_error(s.toString());
  }
}

// ---------------------------------------------------------------------------
// FakeQm

struct FakeQm::Conn : proto::UnsStreamHandler, std::enable_shared_from_this<Conn> {
  FakeQm* qm;
  tcp::socket sock;
  std::string name;
  proto::UnsStreamDecoder decoder;
  std::array<char, 8192> buf{};
  const bool frames;
  bool framed = false;  // this side writes frames
  Conn(FakeQm* q, tcp::socket s)
      : qm(q), sock(std::move(s)), decoder(*this, {}, q->frames_.load()), frames(q->frames_.load()) {}

  void start() {
    boost::system::error_code ec;
    if (!frames) asio::write(sock, asio::buffer(proto::encodeQmOpen()), ec);  // an old QM: at once, in XML
    read();
  }
  void write(proto::FrameType type, const std::string& xml) {
    std::string bytes = xml;
    if (framed) {
      bytes.clear();
      proto::appendSignalFrame(bytes, type);
    }
    boost::system::error_code ignored;
    asio::write(sock, asio::buffer(bytes), ignored);
  }
  void read() {
    sock.async_read_some(asio::buffer(buf), [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
      if (ec) return;
      if (!self->decoder.feed(self->buf.data(), n)) {
        boost::system::error_code ignored;
        self->sock.close(ignored);
        return;
      }
      if (self->qm->pinging_) {
        self->write(proto::FrameType::kPing, proto::encodePing());
      }
      self->read();
    });
  }
  void onUnsOpen(std::string_view n, std::uint32_t offered) override {
    name = n;
    if (frames) {
      framed = offered == proto::kFramesVersion;
      boost::system::error_code ec;
      asio::write(sock, asio::buffer(framed ? proto::encodeQmOpen(1) + proto::encodeFramesSwitch() : proto::encodeQmOpen()), ec);
    }
    std::lock_guard<std::mutex> lock(qm->mu_);
    qm->names_.push_back(name);
    if (framed) ++qm->framed_;
  }
  void onSetBegin(const proto::UnsQmSetHeader& header) override {
    {
      std::lock_guard<std::mutex> lock(qm->mu_);
      ++qm->begun_;
    }
    proto::UnsStreamHandler::onSetBegin(header);
  }
  // Like a real QM: once it refused or hung on a connection, every later set on that
  // connection is refused or ignored too (acks never skip a set).
  Mode sticky = Mode::kAck;
  void onSet(proto::UnsQmSet&& set) override {
    Mode mode = sticky != Mode::kAck ? sticky : qm->mode_.load();
    sticky = mode;
    proto::UnsQmAck ack;
    ack.id = set.header.id;
    {
      std::lock_guard<std::mutex> lock(qm->mu_);
      ++qm->received_;
      if (mode == Mode::kAck) {
        auto& high = qm->highest_[name];
        if (set.header.id > high) {
          high = set.header.id;
          qm->applied_.push_back(std::move(set));
        }
      }
    }
    if (mode == Mode::kSilent) return;
    if (mode == Mode::kReject) {
      ack.ok = false;
      ack.code = ErrorCode::kOffline;
      ack.reason = "overloaded";
    }
    std::string bytes = proto::encodeAck(ack);
    if (framed) {
      bytes.clear();
      proto::appendAckFrame(bytes, ack);
    }
    boost::system::error_code ec;
    asio::write(sock, asio::buffer(bytes), ec);
  }
  void onPing() override { write(proto::FrameType::kPong, proto::encodePong()); }
};

FakeQm::FakeQm(std::uint16_t port, Mode mode, bool frames) : acceptor_(io_), mode_(mode), frames_(frames) {
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
  acceptor_.open(ep.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(ep);
  acceptor_.listen();
  port_ = acceptor_.local_endpoint().port();
  accept();
  thread_ = std::thread([this] { io_.run(); });
}

FakeQm::~FakeQm() {
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for (auto& c : conns_) c->sock.close(ignored);
    conns_.clear();
  });
  thread_.join();
}

void FakeQm::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket sock) {
    if (ec) return;
    auto c = std::make_shared<Conn>(this, std::move(sock));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++connections_;
    }
    conns_.push_back(c);
    c->start();
    accept();
  });
}

std::vector<proto::UnsQmSet> FakeQm::applied() {
  std::lock_guard<std::mutex> lock(mu_);
  return applied_;
}
std::size_t FakeQm::received() {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

std::size_t FakeQm::begun() {
  std::lock_guard<std::mutex> lock(mu_);
  return begun_;
}
std::size_t FakeQm::connections() {
  std::lock_guard<std::mutex> lock(mu_);
  return connections_;
}
std::size_t FakeQm::framedConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  return framed_;
}
std::vector<std::string> FakeQm::unsNames() {
  std::lock_guard<std::mutex> lock(mu_);
  return names_;
}
bool FakeQm::waitApplied(std::size_t n) {
  return eventually([&] { return applied().size() >= n; });
}
bool FakeQm::waitReceived(std::size_t n) {
  return eventually([&] { return received() >= n; });
}

bool eventually(const std::function<bool()>& cond) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

// ---------------------------------------------------------------------------
// CP client

std::string cpExchange(std::uint16_t port, const std::string& request, std::size_t chunk) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "socket failed";
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  if (chunk == 0) chunk = request.size() ? request.size() : 1;
  for (std::size_t off = 0; off < request.size(); off += chunk) {
    std::size_t n = std::min(chunk, request.size() - off);
    if (::send(fd, request.data() + off, n, MSG_NOSIGNAL) < 0) break;
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::vector<proto::CpReply> parseReplies(const std::string& bytes) {
  proto::ReplyDecoder d;
  auto replies = d.feed(bytes);
  EXPECT_FALSE(d.failed()) << d.errorMessage() << " in: " << bytes;
  return replies;
}

std::string initXml(ProviderId id, const std::string& password) {
  return proto::encodeInit(std::to_string(id), password);
}

std::string setXml(const std::vector<std::string>& urls, bool full, const std::string& urlprefix) {
  std::string out = proto::encodeSetBegin(full, urlprefix);
  for (const auto& u : urls) out += proto::encodeUrlElement({{"c", u}, {"m", "text/html"}});
  out += proto::encodeSetEnd();
  return out;
}

std::uint16_t unusedPort() {
  // Bind port 0, read the port, close: nothing listens there afterwards.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::vector<std::string> urls(const std::string& tag, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("http://www.server.com/" + tag + "/" + std::to_string(i) + ".htm");
  return out;
}

UnsOptions testOptions(const std::string& data_dir, std::uint16_t qm_port) {
  UnsOptions o = UnsOptions::fromConfig(Config::defaults(), data_dir, "m1");
  o.listen = "127.0.0.1:0";
  o.session.stream_part_bytes = 0;  // sets are collected whole unless a test streams them
  o.idle_timeout = Millis(30000);
  o.session_timeout = Millis(60000);
  o.session.xml.max_value_length = 8192;
  o.session.xml.max_depth = 8;
  o.session.max_set_urls = 100000;
  o.session.xml.max_elements = o.session.max_set_urls + 16;
  o.session.accept_mime = {"text/*", "application/pdf"};
  o.core.accept_mime = o.session.accept_mime;
  o.core.max_connections = 1000;
  o.core.max_connections_per_ip = 1000;
  o.core.max_connections_per_provider = 1000;
  o.forwarder.qm_address = "127.0.0.1:" + std::to_string(qm_port);
  o.forwarder.uns_name = "m1/uns";
  o.forwarder.spool_dir = data_dir + "/uns";
  o.forwarder.qm_retry = Millis(50);
  o.forwarder.qm_ack_timeout = Millis(2000);
  return o;
}

Harness::Harness(UnsOptions opt, ProviderStore* store, Env* env)
    : guard_(boost::asio::make_work_guard(io_)),
      server_(io_, std::move(opt), store, &clock_, env ? env : posixEnv(), &metrics_) {}
Harness::~Harness() { stop(); }
Status Harness::start() {
  Status s = server_.start();
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  return s;
}
void Harness::stop() {
  if (stopped_) return;
  stopped_ = true;
  server_.stop();
  guard_.reset();
  net::stopWhenDry(io_, std::chrono::seconds(5));
  for (auto& t : threads_) t.join();
}

}  // namespace lcc::uns::testing
