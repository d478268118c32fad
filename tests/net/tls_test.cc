// TLS in the connection layer, on 127.0.0.1 with certificates made by the `openssl`
// command in the test: a TLS acceptor and connector exchange bytes; a certificate from
// another CA, an expired one, a wrong host name and a missing client certificate fail
// the handshake with kIoError and the reason; plain text sent to a TLS port ends in a
// close; a silent client meets the handshake deadline; FdTls talks to the same port;
// the context factory names the option and the file it could not use.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <thread>

#include "net/acceptor.h"
#include "net/connector.h"
#include "net/tls.h"
#include "support/loopback.h"
#include "support/sim_clock.h"
#include "support/test_pki.h"

namespace lcc::net {
namespace {

namespace asio = boost::asio;
using testing::TestPki;

struct Closed {
  CloseReason reason;
  std::string detail;
};

int connectTo(std::uint16_t port) { return testing::connectLoopback(port); }

std::shared_ptr<TlsContextSlot> slotOf(Result<TlsContextPtr> made) {
  EXPECT_TRUE(made.isOk()) << made.status().toString();
  return std::make_shared<TlsContextSlot>(made.isOk() ? made.value() : nullptr);
}

// A TLS echo server (each connection sends back what it reads, upper-cased) on one
// io thread; the server's close reasons are recorded.
class TlsTest : public ::testing::Test {
 protected:
  TlsTest() : guard_(io_.get_executor()) {
    EXPECT_TRUE(pki_.ok()) << "openssl could not make a CA";
    EXPECT_TRUE(pki_.issue("server", "DNS:localhost,IP:127.0.0.1"));
    EXPECT_TRUE(pki_.issue("client", "DNS:robot.test"));
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TlsTest() override {
    if (acceptor_) acceptor_->stop();
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  void listen(TlsServerOptions so, Millis handshake = Millis(0)) {
    AcceptorOptions o;
    o.listen = "127.0.0.1:0";
    o.tls = slotOf(makeServerContext(so));
    o.connection.clock = &clock_;
    o.connection.handshake = handshake;
    acceptor_ = std::make_shared<Acceptor>(io_, o, [this](std::shared_ptr<Connection> c, Admission) {
      Connection::Handlers h;
      std::weak_ptr<Connection> weak = c;
      h.on_bytes = [weak](std::string_view b) {
        std::string up(b);
        for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        if (auto self = weak.lock()) self->send(up);
      };
      h.on_close = [this](CloseReason r, const std::string& d) {
        std::lock_guard<std::mutex> lock(mu_);
        server_closed_.push_back({r, d});
      };
      c->start(std::move(h));
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(std::move(c));
    });
    ASSERT_TRUE(acceptor_->start().isOk());
  }
  TlsServerOptions serverOptions() const { return {pki_.cert("server"), pki_.key("server"), "", TlsVersion::k12}; }

  // Connects with `co`, sends "ping" and returns what came back, or the close reason.
  Closed roundTrip(TlsClientOptions client, const std::string& server_name = "localhost") {
    ConnectorOptions co;
    co.target = "127.0.0.1:" + std::to_string(acceptor_->port());
    co.tls = slotOf(makeClientContext(client));
    co.server_name = server_name;
    auto connector = std::make_shared<Connector>(io_, clock_, co);
    auto done = std::make_shared<std::promise<Closed>>();
    auto got = std::make_shared<std::string>();
    EXPECT_TRUE(connector
                    ->start([done, got](std::shared_ptr<Connection> c) {
                      Connection::Handlers h;
                      std::weak_ptr<Connection> weak = c;
                      h.on_bytes = [got, weak](std::string_view b) {
                        got->append(b);
                        if (*got == "PING") {
                          if (auto self = weak.lock()) self->close(CloseReason::kLocal, "PING");
                        }
                      };
                      h.on_close = [done](CloseReason r, const std::string& d) { done->set_value({r, d}); };
                      c->start(std::move(h));
                      c->send("ping");
                    })
                    .isOk());
    auto f = done->get_future();
    EXPECT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    connector->stop();
    return f.get();
  }
  // The next connection the server saw end.
  Closed serverClosed() {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (server_closed_.size() > seen_) return server_closed_[seen_++];
      }
      if (std::chrono::steady_clock::now() > until) {
        ADD_FAILURE() << "the server saw no connection end";
        return {CloseReason::kLocal, "none"};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  TestPki pki_;
  testing::SimClock clock_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
  std::shared_ptr<Acceptor> acceptor_;
  std::mutex mu_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::vector<Closed> server_closed_;
  std::size_t seen_ = 0;
};

TEST_F(TlsTest, BytesCrossATlsConnectionBothWays) {
  listen(serverOptions());
  Closed c = roundTrip({pki_.ca(), "", "", TlsVersion::k12});
  EXPECT_EQ(c.reason, CloseReason::kLocal);
  EXPECT_EQ(c.detail, "PING");
  // By IP address too: the certificate carries IP:127.0.0.1.
  EXPECT_EQ(roundTrip({pki_.ca(), "", "", TlsVersion::k13}, "127.0.0.1").detail, "PING");
}

TEST_F(TlsTest, AServerFromAnotherCaIsRefusedWithTheReason) {
  listen(serverOptions());
  ASSERT_TRUE(pki_.otherCa("other"));
  Closed c = roundTrip({pki_.cert("other"), "", "", TlsVersion::k12});
  EXPECT_EQ(c.reason, CloseReason::kIoError);
  EXPECT_NE(c.detail.find("handshake: certificate verify failed"), std::string::npos) << c.detail;
  EXPECT_NE(c.detail.find("unable to get local issuer certificate"), std::string::npos) << c.detail;
}

TEST_F(TlsTest, AWrongHostNameIsRefused) {
  listen(serverOptions());
  Closed c = roundTrip({pki_.ca(), "", "", TlsVersion::k12}, "lcc.example.org");
  EXPECT_EQ(c.reason, CloseReason::kIoError);
  EXPECT_NE(c.detail.find("hostname mismatch"), std::string::npos) << c.detail;
}

TEST_F(TlsTest, AnExpiredServerCertificateIsRefused) {
  ASSERT_TRUE(pki_.issue("old", "DNS:localhost", -1));
  listen({pki_.cert("old"), pki_.key("old"), "", TlsVersion::k12});
  Closed c = roundTrip({pki_.ca(), "", "", TlsVersion::k12});
  EXPECT_EQ(c.reason, CloseReason::kIoError);
  EXPECT_NE(c.detail.find("certificate has expired"), std::string::npos) << c.detail;
}

TEST_F(TlsTest, MutualTlsWantsAClientCertificateFromTheCa) {
  TlsServerOptions so = serverOptions();
  so.client_ca_file = pki_.ca();
  listen(so);
  Closed without = roundTrip({pki_.ca(), "", "", TlsVersion::k12});
  EXPECT_EQ(without.reason, CloseReason::kIoError) << without.detail;
  EXPECT_EQ(serverClosed().reason, CloseReason::kIoError);
  Closed with = roundTrip({pki_.ca(), pki_.cert("client"), pki_.key("client"), TlsVersion::k12});
  EXPECT_EQ(with.detail, "PING");
}

TEST_F(TlsTest, PlainTextToATlsPortEndsInACloseAndAHandshakeError) {
  listen(serverOptions());
  int fd = connectTo(acceptor_->port());
  ASSERT_GE(fd, 0);
  const std::string hello = "<lococa:init id=\"1\" password=\"x\"/>\r\n";
  ASSERT_EQ(::write(fd, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  char buf[4096];
  ssize_t n;
  std::size_t total = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) total += static_cast<std::size_t>(n);
  EXPECT_EQ(n, 0) << "no clean end (timeout or reset)";
  EXPECT_LT(total, 64u);  // at most a TLS alert, never an answer in clear
  ::close(fd);
  Closed c = serverClosed();
  EXPECT_EQ(c.reason, CloseReason::kIoError);
  EXPECT_NE(c.detail.find("handshake: "), std::string::npos) << c.detail;
}

TEST_F(TlsTest, AClientThatNeverSpeaksMeetsTheHandshakeDeadline) {
  listen(serverOptions(), Millis(5000));
  int fd = connectTo(acceptor_->port());
  ASSERT_GE(fd, 0);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (clock_.pendingTimers() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  clock_.advance(Millis(5000));
  Closed c = serverClosed();
  EXPECT_EQ(c.reason, CloseReason::kIoError);
  EXPECT_EQ(c.detail, "handshake: not done within 5000 ms");
  char b;
  EXPECT_EQ(::read(fd, &b, 1), 0);
  ::close(fd);
}

TEST_F(TlsTest, FdTlsTalksToATlsAcceptor) {
  listen(serverOptions());
  auto ctx = makeClientContext({pki_.ca(), "", "", TlsVersion::k12});
  ASSERT_TRUE(ctx.isOk());
  int fd = connectTo(acceptor_->port());
  ASSERT_GE(fd, 0);
  auto tls = FdTls::connect(fd, ctx.value(), "localhost", 20000);
  ASSERT_TRUE(tls.isOk()) << tls.status().toString();
  auto w = (*tls)->write("abc", 3);
  ASSERT_TRUE(w.isOk());
  EXPECT_EQ(w->n, 3u);
  std::string got;
  char buf[16];
  while (got.size() < 3) {
    auto r = (*tls)->read(buf, sizeof buf);
    ASSERT_TRUE(r.isOk());
    ASSERT_FALSE(r->eof);
    got.append(buf, r->n);
  }
  EXPECT_EQ(got, "ABC");
  (*tls)->closeNotify();
  EXPECT_EQ(serverClosed().reason, CloseReason::kPeerClosed);
  ::close(fd);
  // The wrong name: refused with the reason.
  int fd2 = connectTo(acceptor_->port());
  auto bad = FdTls::connect(fd2, ctx.value(), "other.test", 20000);
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("hostname mismatch"), std::string::npos) << bad.status().toString();
  ::close(fd2);
}

TEST_F(TlsTest, TheFactoryNamesTheOptionAndTheFile) {
  auto missing = makeServerContext({pki_.cert("server"), pki_.dir().file("nope.key"), "", TlsVersion::k12});
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(), "key_file: " + pki_.dir().file("nope.key") + ": No such file or directory");
  auto swapped = makeServerContext({pki_.cert("server"), pki_.key("client"), "", TlsVersion::k12});
  ASSERT_FALSE(swapped.isOk());
  EXPECT_NE(swapped.status().message().find("does not match the certificate"), std::string::npos);
  std::ofstream(pki_.dir().file("junk.pem")) << "not a certificate\n";
  auto junk = makeServerContext({pki_.dir().file("junk.pem"), pki_.key("server"), "", TlsVersion::k12});
  ASSERT_FALSE(junk.isOk());
  EXPECT_NE(junk.status().message().find("cert_file: " + pki_.dir().file("junk.pem") + ": not a PEM certificate"),
            std::string::npos)
      << junk.status().message();
  EXPECT_FALSE(makeServerContext({"", "", "", TlsVersion::k12}).isOk());
  EXPECT_EQ(parseTlsVersion("1.3"), TlsVersion::k13);
  EXPECT_FALSE(parseTlsVersion("1.0").has_value());
}

// One short session as a CP makes them: "x", then the answer, then gone (every other
// one with a reset).
void shortSession(std::uint16_t port, const TlsContextPtr& ctx, bool reset) {
  int fd = connectTo(port);
  ASSERT_GE(fd, 0);
  auto tls = FdTls::connect(fd, ctx, "localhost", 20000);
  ASSERT_TRUE(tls.isOk()) << tls.status().toString();
  ASSERT_TRUE((*tls)->write("x", 1).isOk());
  char buf[16];
  auto r = (*tls)->read(buf, sizeof buf);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(std::string(buf, r->n), "bye");
  if (reset) {
    linger l{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  tls->reset();
  ::close(fd);
}

// The UNS's way to end: answer, close_notify, linger; clients that leave at once, on
// two io threads: every connection ends once and the answer arrives whole.
TEST_F(TlsTest, ManyShortSessionsEndingWithCloseNotifyAndLinger) {
  asio::io_context io;
  auto guard = asio::make_work_guard(io);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&io] { io.run(); });
  AcceptorOptions o;
  o.listen = "127.0.0.1:0";
  o.tls = slotOf(makeServerContext(serverOptions()));
  o.connection.clock = &clock_;
  o.connection.linger = Millis(2000);
  std::atomic<int> ended{0};
  auto acceptor = std::make_shared<Acceptor>(io, o, [&ended](std::shared_ptr<Connection> c, Admission) {
    Connection::Handlers h;
    std::weak_ptr<Connection> weak = c;
    h.on_bytes = [weak](std::string_view) {
      if (auto self = weak.lock()) self->closeAfterFlush("bye");
    };
    h.on_close = [&ended](CloseReason, const std::string&) { ++ended; };
    c->start(std::move(h));  // held by its own handlers only, as in the roles
  });
  ASSERT_TRUE(acceptor->start().isOk());
  auto ctx = makeClientContext({pki_.ca(), "", "", TlsVersion::k12});
  ASSERT_TRUE(ctx.isOk());
  constexpr int kClients = 8, kEach = 40;
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kEach; ++i) shortSession(acceptor->port(), ctx.value(), (c + i) % 2 == 0);
    });
  }
  for (auto& t : clients) t.join();
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ended.load() < kClients * kEach && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_EQ(ended.load(), kClients * kEach);
  acceptor->stop();
  guard.reset();
  io.stop();
  for (auto& t : threads) t.join();
}

TEST_F(TlsTest, ALinkAddressChoosesPlainOrTls) {
  TlsLink link{slotOf(makeClientContext({pki_.ca(), "", "", TlsVersion::k12})), &clock_, Millis(3000)};
  ConnectorOptions co;
  co.what = "uns.qm";
  ASSERT_TRUE(setTargetAddress(co, "qm.lan:7701", link).isOk());
  EXPECT_EQ(co.target, "qm.lan:7701");
  EXPECT_EQ(co.tls, nullptr);
  ASSERT_TRUE(setTargetAddress(co, "tls://qm.lan:7701", link).isOk());
  EXPECT_EQ(co.target, "qm.lan:7701");
  EXPECT_EQ(co.tls, link.slot);
  EXPECT_EQ(co.connection.handshake, Millis(3000));
  AcceptorOptions ao;
  ao.what = "listen.qm";
  Status s = setListenAddress(ao, "tls://0.0.0.0:7701", TlsLink{});
  EXPECT_EQ(s.message(), "listen.qm tls://0.0.0.0:7701: no TLS context (tls.* keys)");
}

TEST_F(TlsTest, AReplacedContextServesNewConnectionsOnly) {
  listen(serverOptions());
  Closed before = roundTrip({pki_.ca(), "", "", TlsVersion::k12});
  EXPECT_EQ(before.detail, "PING");
  // The new certificate is from another CA: a client trusting only the old CA is
  // refused from now on, which shows that new connections take the new context.
  ASSERT_TRUE(pki_.otherCa("ca2"));
  std::ofstream(pki_.dir().file("s2.ext")) << "subjectAltName=DNS:localhost\n";
  ASSERT_EQ(std::system(("cd '" + pki_.dir().path() +
                         "' && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=s2 -keyout "
                         "s2.key -out s2.csr 2>/dev/null && openssl x509 -req -in s2.csr -CA ca2.pem -CAkey ca2.key "
                         "-CAcreateserial -days 3 -extfile s2.ext -out s2.pem 2>/dev/null")
                            .c_str()),
            0);
  auto fresh = makeServerContext({pki_.cert("s2"), pki_.key("s2"), "", TlsVersion::k12});
  ASSERT_TRUE(fresh.isOk());
  acceptor_->tlsSlot()->replace(fresh.value());
  EXPECT_EQ(roundTrip({pki_.ca(), "", "", TlsVersion::k12}).reason, CloseReason::kIoError);
  EXPECT_EQ(roundTrip({pki_.cert("ca2"), "", "", TlsVersion::k12}).detail, "PING");
}

}  // namespace
}  // namespace lcc::net
