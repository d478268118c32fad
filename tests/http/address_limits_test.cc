// What one source address may hold of the HTTP server (issue 25), over real sockets:
// clients bind 127.0.0.2, 127.0.0.3, 127.0.0.4 so the server tells them apart.
// Connections (refused at once past http.max_connections_per_ip, over HTTP and before
// any TLS handshake over HTTPS), idle connections making room at http.max_connections,
// requests in the handler pool and streamed answers per address (503 + Retry-After),
// and the write timeout that frees the stream worker of a client that stops reading.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "hostile_peer.h"
#include "http/http_server.h"
#include "http_test_client.h"
#include "net/tls.h"
#include "support/test_pki.h"

namespace lcc::http {
namespace {

using testing::Peer;
using testing::ServerFixture;
namespace ssl = boost::asio::ssl;

Router okRouter() {
  Router r;
  r.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  return r;
}

// Four idle sockets from 127.0.0.2 are its limit: its fifth gets 503 at once (the old
// server took it and waited for a request), while 127.0.0.3 is served.
TEST(AddressLimits, ConnectionsPastThePerAddressLimitAreRefusedAtOnce) {
  Router router = okRouter();
  auto opts = ServerFixture::defaultOptions();
  opts.max_connections_per_ip = 4;
  ServerFixture fx(router, opts);
  std::vector<std::unique_ptr<Peer>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<Peer>(fx.port(), "127.0.0.2"));
  Peer extra(fx.port(), "127.0.0.2");
  auto a = extra.answer();  // nothing sent: the refusal comes by itself
  ASSERT_TRUE(a.has_value()) << "the fifth connection was not refused";
  EXPECT_EQ(a->result_int(), 503);
  EXPECT_EQ((*a)[boost::beast::http::field::retry_after], "5");
  Peer other(fx.port(), "127.0.0.3");
  other.get("/");
  auto b = other.answer();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->result_int(), 200);
  // One of 127.0.0.2's leaves: it gets a connection again.
  idle.pop_back();
  bool served = false;
  for (int i = 0; i < 200 && !served; ++i) {  // the server sees the close a moment later
    Peer again(fx.port(), "127.0.0.2");
    again.get("/");
    auto c = again.answer();
    served = c && c->result_int() == 200;
  }
  EXPECT_TRUE(served);
}

// Over HTTPS the refusal is a close before any handshake: no TLS session is spent on it.
TEST(AddressLimits, HttpsConnectionsPastThePerAddressLimitAreClosedBeforeTheHandshake) {
  lcc::testing::TestPki pki;
  ASSERT_TRUE(pki.ok() && pki.issue("server", "DNS:localhost,IP:127.0.0.1"));
  net::TlsServerOptions server_tls;
  server_tls.cert_file = pki.cert("server");
  server_tls.key_file = pki.key("server");
  auto ctx = net::makeServerContext(server_tls);
  ASSERT_TRUE(ctx.isOk()) << ctx.status().toString();
  Router router = okRouter();
  auto opts = ServerFixture::defaultOptions();
  opts.max_connections_per_ip = 2;
  opts.header_timeout = Millis(600000);  // the idle sockets below never start a handshake
  opts.tls = std::make_shared<net::TlsContextSlot>(ctx.value());
  ServerFixture fx(router, opts);
  Peer idle1(fx.port(), "127.0.0.2"), idle2(fx.port(), "127.0.0.2");
  ssl::context client(ssl::context::tls_client);
  client.set_verify_mode(ssl::verify_none);
  auto handshake = [&](const std::string& source) {
    boost::asio::io_context io;
    ssl::stream<testing::tcp::socket> s(testing::connectFrom(io, source, fx.port()), client);
    return testing::boundedRead(s, [&] {
      boost::system::error_code ec;
      s.handshake(ssl::stream_base::client, ec);
      if (ec) return std::string("refused: ") + ec.message();
      boost::beast::http::request<boost::beast::http::empty_body> req(boost::beast::http::verb::get, "/", 11);
      req.set(boost::beast::http::field::host, "localhost");
      boost::beast::http::write(s, req, ec);
      boost::beast::flat_buffer buf;
      testing::Answer res;
      if (!ec) boost::beast::http::read(s, buf, res, ec);
      return ec ? "failed: " + ec.message() : std::to_string(res.result_int());
    });
  };
  EXPECT_EQ(handshake("127.0.0.2").rfind("refused", 0), 0u);
  EXPECT_EQ(handshake("127.0.0.3"), "200");
}

// A gate that handlers wait at until the test opens it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;
  bool open = false;
  void pass() {
    std::unique_lock<std::mutex> lock(mu);
    ++waiting;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  bool waitFor(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return waiting >= n; });
  }
  void openUp() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

// Opens the gate when a test ends early (a failed ASSERT), before the server's stop
// waits for the handlers held at it. Declare it after the ServerFixture.
struct OpenAtExit {
  Gate& gate;
  ~OpenAtExit() { gate.openUp(); }
};

// At http.max_connections the connection that has waited longest for a request is
// closed to make room (the old server answered 503); when every connection is in the
// middle of a request, the new one is refused.
TEST(AddressLimits, AtTheTotalLimitTheLongestIdleConnectionMakesRoom) {
  Gate gate;
  Router router = okRouter();
  router.add("GET", "/hold", [&](const Request&) {
    gate.pass();
    return Response::text(200, "held");
  });
  auto opts = ServerFixture::defaultOptions();
  opts.max_connections = 3;
  ServerFixture fx(router, opts);
  OpenAtExit open_at_exit{gate};
  Peer idle(fx.port(), "127.0.0.2");
  idle.get("/");
  ASSERT_TRUE(idle.answer().has_value());  // then it waits for its next request...
  // ...once the server has finished writing the answer (the client may read it first).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fx.server().idleConnectionsForTest() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(fx.server().idleConnectionsForTest(), 1u);
  Peer busy1(fx.port(), "127.0.0.3"), busy2(fx.port(), "127.0.0.3");
  busy1.get("/hold");
  busy2.get("/hold");
  ASSERT_TRUE(gate.waitFor(2));
  Peer late(fx.port(), "127.0.0.4");
  late.get("/hold");
  EXPECT_TRUE(gate.waitFor(3)) << "the new connection was refused instead of the idle one closed";
  EXPECT_TRUE(idle.closedByServer());
  Peer refused(fx.port(), "127.0.0.4");  // every connection is in a request now
  auto b = refused.answer();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->result_int(), 503);
  gate.openUp();
  for (Peer* p : {&busy1, &busy2}) {
    auto c = p->answer();
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->body(), "held");
  }
}

// Slow handlers (IndexNow pings that fetch) from one address hold at most
// http.max_handlers_per_ip workers; its next request gets 503 + Retry-After at once,
// and another address's requests run. The old server queued it behind the others.
TEST(AddressLimits, HandlersPerAddressAreBoundedWith503) {
  Gate gate;
  Router router = okRouter();
  router.add("GET", "/slow", [&](const Request&) {
    gate.pass();
    return Response::text(200, "slow");
  });
  auto opts = ServerFixture::defaultOptions();
  opts.workers = 3;
  opts.max_handlers_per_ip = 2;
  ServerFixture fx(router, opts);
  OpenAtExit open_at_exit{gate};
  Peer s1(fx.port(), "127.0.0.2"), s2(fx.port(), "127.0.0.2"), s3(fx.port(), "127.0.0.2");
  s1.get("/slow");
  s2.get("/slow");
  ASSERT_TRUE(gate.waitFor(2));
  s3.get("/slow");
  auto over = std::async(std::launch::async, [&] { return s3.answer(); });
  const bool answered = over.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(answered) << "the third request from one address waited for a worker";
  Peer other(fx.port(), "127.0.0.3");
  other.get("/");
  auto b = other.answer();
  gate.openUp();
  auto a = over.get();
  ASSERT_TRUE(a.has_value());
  if (answered) {
    EXPECT_EQ(a->result_int(), 503);
    EXPECT_EQ((*a)[boost::beast::http::field::retry_after], "5");
  }
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->result_int(), 200);
  auto first = s1.answer();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->body(), "slow");
}

// A body of `total` bytes streamed in 64 KiB writes; `ended` gets the stream's status.
Handler bigStream(std::uint64_t total, std::shared_ptr<std::promise<Status>> ended = nullptr) {
  return [total, ended](const Request&) {
    Response r;
    r.content_type = "application/octet-stream";
    r.stream = [total, ended](ByteSink& sink) -> Status {
      const std::string block(64 * 1024, 'z');
      Status st;
      for (std::uint64_t sent = 0; sent < total && st.isOk(); sent += block.size()) st = sink.write(block);
      if (ended) ended->set_value(st);
      return st;
    };
    return r;
  };
}

// Two downloads that 127.0.0.2 never reads hold its two stream slots; its third is
// 503 + Retry-After at once (the old server queued it for a stream worker), and
// 127.0.0.3 downloads in full.
TEST(AddressLimits, StreamsPerAddressAreBoundedWith503) {
  Router router;
  router.add("GET", "/big", bigStream(64ull << 20));
  router.add("GET", "/small", bigStream(4ull << 20));
  auto opts = ServerFixture::defaultOptions();
  opts.stream_workers = 3;
  opts.max_streams_per_ip = 2;
  ServerFixture fx(router, opts);
  std::vector<std::unique_ptr<Peer>> stuck;
  for (int i = 0; i < 2; ++i) {
    stuck.push_back(std::make_unique<Peer>(fx.port(), "127.0.0.2"));
    Peer& p = *stuck.back();
    p.socket().set_option(boost::asio::socket_base::receive_buffer_size(16 * 1024));
    p.get("/big");
    // Its stream has begun once its header is here; then it reads no more.
    const int status = testing::boundedRead(p.socket(), [&] {
      boost::beast::http::response_parser<boost::beast::http::buffer_body> head;
      boost::system::error_code ec;
      boost::beast::http::read_header(p.socket(), p.buffer(), head, ec);
      return ec ? 0 : static_cast<int>(head.get().result_int());
    });
    ASSERT_EQ(status, 200);
  }
  Peer third(fx.port(), "127.0.0.2");
  Peer other(fx.port(), "127.0.0.3");
  third.get("/small");
  auto a = third.answer();
  ASSERT_TRUE(a.has_value()) << "no answer to the third stream from one address";
  EXPECT_EQ(a->result_int(), 503);
  EXPECT_EQ((*a)[boost::beast::http::field::retry_after], "5");
  const bool refused = a->body().find("streamed answers") != std::string::npos;
  EXPECT_TRUE(refused);
  other.get("/small");
  auto b = other.answer();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->result_int(), 200);
  EXPECT_EQ(b->body().size(), 4u << 20);
}

// A client that stops reading a download is cut after http.write_timeout: the stream's
// write() fails and its worker is free (the old server waited http.idle_timeout).
TEST(AddressLimits, AStreamWhoseClientStopsReadingIsCutAfterTheWriteTimeout) {
  auto ended = std::make_shared<std::promise<Status>>();
  Router router;
  router.add("GET", "/big", bigStream(1ull << 30, ended));
  auto opts = ServerFixture::defaultOptions();
  opts.idle_timeout = Millis(600000);  // ten minutes: far beyond this test's patience
  opts.write_timeout = Millis(300);
  ServerFixture fx(router, opts);
  Peer p(fx.port(), "127.0.0.2");
  p.socket().set_option(boost::asio::socket_base::receive_buffer_size(16 * 1024));
  p.get("/big");  // and never reads
  auto fut = ended->get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "the stream was never cut";
  EXPECT_FALSE(fut.get().isOk());
}

}  // namespace
}  // namespace lcc::http
