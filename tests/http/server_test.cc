// The Beast HTTP server over real sockets on 127.0.0.1.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <limits>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "common/config/config.h"
#include "common/metrics.h"
#include "http/http_server.h"
#include "http/url_codec.h"
#include "http_test_client.h"

namespace lcc::http {
namespace {

using testing::Client;
using testing::ServerFixture;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// Polls `pred` until it holds or `limit` passes.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

TEST(UrlCodec, DecodesPathsQueriesAndForms) {
  EXPECT_EQ(percentDecode("/a%20b+c", false).value(), "/a b+c");
  EXPECT_EQ(percentDecode("a+b%2Bc", true).value(), "a b+c");
  EXPECT_FALSE(percentDecode("%4", false).has_value());
  EXPECT_FALSE(percentDecode("%zz", false).has_value());
  std::multimap<std::string, std::string> q;
  ASSERT_TRUE(parseQuery("a=1&b=x+y&a=2&flag&&c=%26", &q));
  EXPECT_EQ(q.count("a"), 2u);
  EXPECT_EQ(q.find("b")->second, "x y");
  EXPECT_EQ(q.find("flag")->second, "");
  EXPECT_EQ(q.find("c")->second, "&");
  EXPECT_EQ(percentEncode("http://a b/?x=1&y"), "http%3A%2F%2Fa%20b%2F%3Fx%3D1%26y");
}

TEST(HttpServer, RoutesRequestsWithDecodedPathQueryFormAndHeaders) {
  Router router;
  Request seen;
  std::mutex mu;
  router.add("GET", "/hello world", [&](const Request& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen = r;
    return Response::text(200, "hi " + r.param("name") + "\n");
  });
  router.add("POST", "/form", [&](const Request& r) {
    std::string out;
    for (const auto& v : r.params("k")) out += v + ";";
    return Response::text(201, out + r.param("q"));
  });
  ServerFixture fx(router);
  ASSERT_TRUE(fx.startStatus().isOk()) << fx.startStatus().toString();
  ASSERT_NE(fx.port(), 0);
  Client c(fx.port());
  auto res = c.request("GET", "/hello%20world?name=J%C3%B6rg+X&empty", "", {{"X-Custom-Thing", "Value"}});
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "hi Jörg X\n");
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen.path, "/hello world");
    EXPECT_EQ(seen.target, "/hello%20world?name=J%C3%B6rg+X&empty");
    EXPECT_EQ(seen.header("x-custom-thing"), "Value");
    EXPECT_EQ(seen.remote_ip, "127.0.0.1");
    EXPECT_TRUE(seen.remote_loopback);
    EXPECT_EQ(seen.query.count("empty"), 1u);
  }
  res = c.request("POST", "/form?q=fromquery", "k=1&k=two+words&z=%2F",
                  {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(res.result_int(), 201);
  EXPECT_EQ(res.body(), "1;two words;fromquery");
}

TEST(HttpServer, UnknownPathIs404AndWrongMethodIs405) {
  Router router;
  router.add("GET", "/only-get", [](const Request&) { return Response::text(200, "ok"); });
  router.add("GET", "/tree/", [](const Request& r) { return Response::text(200, r.path); });
  ServerFixture fx(router);
  Client c(fx.port());
  EXPECT_EQ(c.request("GET", "/nothing-here").result_int(), 404);
  EXPECT_EQ(c.request("POST", "/only-get", "x").result_int(), 405);
  auto res = c.request("GET", "/tree/a/b");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "/tree/a/b");
}

TEST(HttpServer, MalformedTargetIs400) {
  Router router;
  router.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  ServerFixture fx(router);
  Client c(fx.port());
  auto res = c.request("GET", "/bad%zzescape");
  EXPECT_EQ(res.result_int(), 400);
  EXPECT_TRUE(c.readsEof());
}

TEST(HttpServer, BodyOverTheLimitIs413) {
  Router router;
  std::atomic<int> calls{0};
  router.add("POST", "/upload", [&](const Request& r) {
    calls++;
    return Response::text(200, std::to_string(r.body.size()));
  });
  auto opts = ServerFixture::defaultOptions();
  opts.max_body = 1024;
  ServerFixture fx(router, opts);
  {
    Client c(fx.port());
    auto ok = c.request("POST", "/upload", std::string(1024, 'a'));
    EXPECT_EQ(ok.result_int(), 200);
    EXPECT_EQ(ok.body(), "1024");
  }
  Client c(fx.port());
  auto res = c.request("POST", "/upload", std::string(5000, 'a'));
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_EQ(calls.load(), 1);
}

TEST(HttpServer, ExpectContinueGetsA100ThenTheAnswer) {
  Router router;
  router.add("POST", "/up", [](const Request& r) { return Response::text(200, std::to_string(r.body.size())); });
  ServerFixture fx(router);
  Client c(fx.port());
  std::string head = "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n";
  boost::asio::write(c.socket(), boost::asio::buffer(head));
  std::string got;
  char buf[256];
  while (got.find("\r\n\r\n") == std::string::npos) {
    std::size_t n = c.socket().read_some(boost::asio::buffer(buf));
    got.append(buf, n);
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u);
  // Whatever came after the interim answer belongs to the final one.
  boost::asio::write(c.socket(), boost::asio::buffer(std::string("hello")));
  auto res = c.read();
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res.body(), "5");
}

TEST(HttpServer, KeepAliveServesSeveralRequestsOnOneConnectionAndCloseIsHonoured) {
  Router router;
  router.add("GET", "/n", [](const Request& r) { return Response::text(200, r.param("i")); });
  ServerFixture fx(router);
  Client c(fx.port());
  for (int i = 0; i < 5; ++i) {
    auto res = c.request("GET", "/n?i=" + std::to_string(i));
    EXPECT_EQ(res.body(), std::to_string(i));
    EXPECT_TRUE(res.keep_alive());
  }
  // Pipelined: two requests sent before reading either.
  c.send("GET", "/n?i=a");
  c.send("GET", "/n?i=b");
  EXPECT_EQ(c.read().body(), "a");
  EXPECT_EQ(c.read().body(), "b");
  auto last = c.request("GET", "/n?i=z", "", {{"Connection", "close"}});
  EXPECT_EQ(last.body(), "z");
  EXPECT_FALSE(last.keep_alive());
  EXPECT_TRUE(c.readsEof());
}

TEST(HttpServer, HeadAnswersHeadersOnly) {
  Router router;
  router.add("GET", "/page", [](const Request&) { return Response::html(200, "<p>twelve ch</p>"); });
  ServerFixture fx(router);
  Client c(fx.port());
  auto res = c.request("HEAD", "/page");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[bhttp::field::content_length], "16");
  EXPECT_EQ(res.body(), "");
  // The connection is still in sync: the next answer parses.
  auto get = c.request("GET", "/page");
  EXPECT_EQ(get.body(), "<p>twelve ch</p>");
}

TEST(HttpServer, IdleConnectionIsClosedAfterTheTimeout) {
  Router router;
  router.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  auto opts = ServerFixture::defaultOptions();
  opts.idle_timeout = Millis(200);
  ServerFixture fx(router, opts);
  Client c(fx.port());
  EXPECT_EQ(c.request("GET", "/").result_int(), 200);
  EXPECT_TRUE(c.readsEof());  // nothing more sent: the server hangs up
  Client half(fx.port());
  boost::asio::write(half.socket(), boost::asio::buffer(std::string("GET / HTTP/1.1\r\nHo")));
  EXPECT_TRUE(half.readsEof());  // a request that never completes is dropped
}

TEST(HttpServer, ASlowHeaderIsCutAtTheHeaderTimeoutNotTheIdleTimeout) {
  Router router;
  router.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  auto opts = ServerFixture::defaultOptions();
  opts.idle_timeout = Millis(600000);  // ten minutes: far beyond this test's patience
  opts.header_timeout = Millis(200);
  ServerFixture fx(router, opts);
  Client slow(fx.port());
  boost::asio::write(slow.socket(), boost::asio::buffer(std::string("GET / HTTP/1.1\r\nHo")));
  auto eof = std::async(std::launch::async, [&] { return slow.readsEof(); });
  ASSERT_EQ(eof.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(eof.get());
  // A client that is idle between requests keeps its connection meanwhile.
  Client idle(fx.port());
  EXPECT_EQ(idle.request("GET", "/").result_int(), 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the client idles (its behaviour, not a wait)
  EXPECT_EQ(idle.request("GET", "/").result_int(), 200);
}

// At the limit a new client takes the place of the connection that has waited longest
// for its next request (tests/http/address_limits_test.cc: refused when none waits).
TEST(HttpServer, MaxConnectionsMakesRoomByClosingTheLongestIdle) {
  Router router;
  router.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  auto opts = ServerFixture::defaultOptions();
  opts.max_connections = 2;
  ServerFixture fx(router, opts);
  Client a(fx.port()), b(fx.port());
  EXPECT_EQ(a.request("GET", "/").result_int(), 200);
  EXPECT_EQ(b.request("GET", "/").result_int(), 200);
  Client extra(fx.port());
  EXPECT_EQ(extra.request("GET", "/").result_int(), 200);
  EXPECT_TRUE(a.readsEof());
}

TEST(HttpServer, HandlersRunOnWorkerThreadsAndExceptionsBecome500) {
  Router router;
  std::mutex mu;
  std::thread::id handler_thread;
  router.add("GET", "/where", [&](const Request&) {
    std::lock_guard<std::mutex> lock(mu);
    handler_thread = std::this_thread::get_id();
    return Response::text(200, "ok");
  });
  router.add("GET", "/throw", [](const Request&) -> Response { throw std::runtime_error("boom"); });
  ServerFixture fx(router);
  Client c(fx.port());
  EXPECT_EQ(c.request("GET", "/where").result_int(), 200);
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto id : fx.ioThreadIds()) EXPECT_NE(handler_thread, id);
  }
  EXPECT_EQ(c.request("GET", "/throw").result_int(), 500);
  EXPECT_EQ(c.request("GET", "/where").result_int(), 200);  // still served
}

TEST(HttpServer, StreamsAChunkedBodyAndKeepsTheConnection) {
  Router router;
  router.add("GET", "/s", [](const Request&) {
    Response r;
    r.content_type = "application/xml";
    r.stream = [](ByteSink& sink) -> Status {
      for (int i = 0; i < 1000; ++i) LCC_RETURN_IF_ERROR(sink.write("line " + std::to_string(i) + "\n"));
      return Status::ok();
    };
    return r;
  });
  router.add("GET", "/after", [](const Request&) { return Response::text(200, "after"); });
  ServerFixture fx(router);
  Client c(fx.port());
  auto res = c.request("GET", "/s");
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_TRUE(res.chunked());
  EXPECT_EQ(res[bhttp::field::content_type], "application/xml");
  EXPECT_EQ(res.body().rfind("line 0\nline 1\n", 0), 0u);
  EXPECT_NE(res.body().find("line 999\n"), std::string::npos);
  EXPECT_EQ(c.request("GET", "/after").body(), "after");
  auto head = c.request("HEAD", "/s");
  EXPECT_EQ(head.result_int(), 200);
  EXPECT_EQ(c.request("GET", "/after").body(), "after");
}

// A streamed body whose length is known goes with Content-Length (no chunks) and the
// connection serves the next request; one that writes fewer or more bytes than it
// announced is cut, so the client sees a short body, never a wrong one.
TEST(HttpServer, AStreamOfKnownLengthIsSentWithContentLength) {
  Router router;
  auto lengthed = [](std::uint64_t announced, std::string body) {
    return [announced, body](const Request&) {
      Response r;
      r.stream_length = announced;
      r.stream = [body](ByteSink& sink) -> Status {
        for (std::size_t i = 0; i < body.size(); i += 1000) {
          LCC_RETURN_IF_ERROR(sink.write(std::string_view(body).substr(i, 1000)));
        }
        return Status::ok();
      };
      return r;
    };
  };
  const std::string body(200 * 1000, 'b');
  router.add("GET", "/exact", lengthed(body.size(), body));
  router.add("GET", "/short", lengthed(body.size() + 1, body));
  router.add("GET", "/long", lengthed(body.size() - 1, body));
  router.add("GET", "/after", [](const Request&) { return Response::text(200, "after"); });
  ServerFixture fx(router);
  {
    Client c(fx.port());
    auto res = c.request("GET", "/exact");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_FALSE(res.chunked());
    EXPECT_EQ(res[bhttp::field::content_length], std::to_string(body.size()));
    EXPECT_TRUE(res.body() == body);
    EXPECT_EQ(c.request("GET", "/after").body(), "after") << "the connection is reused";
    auto head = c.request("HEAD", "/exact");
    EXPECT_EQ(head[bhttp::field::content_length], std::to_string(body.size()));
    EXPECT_EQ(c.request("GET", "/after").body(), "after");
  }
  for (const char* target : {"/short", "/long"}) {
    Client c(fx.port());
    c.send("GET", target);
    boost::system::error_code ec;
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(std::numeric_limits<std::uint64_t>::max());
    bhttp::read(c.socket(), c.buffer(), p, ec);
    EXPECT_TRUE(ec) << target << ": the body must not look complete";
    EXPECT_FALSE(p.is_done()) << target;
  }
}

TEST(HttpServer, Http10ClientGetsAStreamedBodyWithoutChunksEndedByClose) {
  Router router;
  router.add("GET", "/s", [](const Request&) {
    Response r;
    r.stream = [](ByteSink& sink) -> Status {
      LCC_RETURN_IF_ERROR(sink.write("first,"));
      return sink.write("second");
    };
    return r;
  });
  ServerFixture fx(router);
  Client c(fx.port());
  boost::asio::write(c.socket(), boost::asio::buffer(std::string("GET /s HTTP/1.0\r\n\r\n")));
  std::string all;
  char buf[4096];
  boost::system::error_code ec;
  for (;;) {
    std::size_t n = c.socket().read_some(boost::asio::buffer(buf), ec);
    all.append(buf, n);
    if (ec) break;
  }
  EXPECT_EQ(ec, boost::asio::error::eof);
  auto split = all.find("\r\n\r\n");
  ASSERT_NE(split, std::string::npos) << all;
  std::string head = all.substr(0, split);
  EXPECT_EQ(head.find("chunked"), std::string::npos) << head;
  EXPECT_EQ(all.substr(split + 4), "first,second");
}

TEST(HttpServer, CountsRequestsErrorsAndRefusalsInMetrics) {
  Metrics metrics;
  Router router;
  router.addExact("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  router.add("GET", "/boom", [](const Request&) { return Response::text(503, "busy"); });
  auto opts = ServerFixture::defaultOptions();
  opts.metrics = &metrics;
  opts.max_connections_per_ip = 1;  // (at max_connections the idle `c` would make room)
  ServerFixture fx(router, opts);
  {
    Client c(fx.port());
    EXPECT_EQ(c.request("GET", "/").result_int(), 200);
    EXPECT_EQ(c.request("GET", "/missing").result_int(), 404);
    EXPECT_EQ(c.request("GET", "/boom").result_int(), 503);
    Client extra(fx.port());
    EXPECT_EQ(extra.read().result_int(), 503);
  }
  auto snap = metrics.snapshot();
  EXPECT_EQ(snap["lcc_http_requests_total"], 3);
  EXPECT_EQ(snap["lcc_http_client_errors_total"], 1);
  EXPECT_EQ(snap["lcc_http_server_errors_total"], 1);
  EXPECT_EQ(snap["lcc_http_connections_refused_total"], 1);
  EXPECT_EQ(snap["lcc_http_connections_refused_per_ip_total"], 1);
  EXPECT_TRUE(eventually([&] { return metrics.snapshot()["lcc_http_connections_open"] == 0; }));
  EXPECT_NE(metrics.prometheusText().find("lcc_http_requests_total 3"), std::string::npos);
}

TEST(HttpServer, StreamThatFailsMidwayCutsTheConnection) {
  Router router;
  router.add("GET", "/s", [](const Request&) {
    Response r;
    r.stream = [](ByteSink& sink) -> Status {
      LCC_RETURN_IF_ERROR(sink.write("partial"));
      return Status::ioError("disk went away");
    };
    return r;
  });
  ServerFixture fx(router);
  Client c(fx.port());
  c.send("GET", "/s");
  boost::system::error_code ec;
  bhttp::response_parser<bhttp::string_body> p;
  bhttp::read(c.socket(), c.buffer(), p, ec);
  EXPECT_TRUE(ec);  // the body never completes: a client can tell it is truncated
  EXPECT_FALSE(p.is_done());
}

// A 50 MB stream to a client that stops reading: the producer blocks after a bounded
// amount (the server's queue plus socket buffers), then the whole body arrives intact.
TEST(HttpServer, SlowClientBackPressureKeepsServerMemoryBounded) {
  constexpr std::uint64_t kTotal = 50ull << 20;
  std::atomic<std::uint64_t> produced{0};
  std::atomic<bool> in_write{false};
  std::atomic<bool> done{false};
  Router router;
  router.add("GET", "/big", [&](const Request&) {
    Response r;
    r.content_type = "application/octet-stream";
    r.stream = [&](ByteSink& sink) -> Status {
      std::string block(64 * 1024, '\0');
      for (std::uint64_t off = 0; off < kTotal; off += block.size()) {
        for (std::size_t i = 0; i < block.size(); i += 4096) block[i] = static_cast<char>((off + i) / 4096 % 251);
        in_write = true;
        Status s = sink.write(block);
        in_write = false;
        if (!s.isOk()) return s;
        produced += block.size();
      }
      done = true;
      return Status::ok();
    };
    return r;
  });
  ServerFixture fx(router);
  Client c(fx.port());
  c.socket().set_option(boost::asio::socket_base::receive_buffer_size(64 * 1024));
  c.send("GET", "/big");
  bhttp::response_parser<bhttp::buffer_body> p;
  p.body_limit(boost::none);
  bhttp::read_header(c.socket(), c.buffer(), p);
  ASSERT_EQ(p.get().result_int(), 200);

  // The client reads nothing now. The producer must come to a standstill inside write().
  std::uint64_t last = 0;
  int stable = 0;
  bool stalled = eventually([&] {
    std::uint64_t now = produced.load();
    stable = (in_write && now == last) ? stable + 1 : 0;
    last = now;
    return stable >= 40;  // 40 polls (~200 ms) without progress while blocked in write()
  });
  ASSERT_TRUE(stalled) << "the producer never blocked; produced " << produced.load();
  EXPECT_FALSE(done.load());
  EXPECT_LT(produced.load(), 16ull << 20) << "the server buffered far more than its bounded queue";
  std::cout << "producer stalled after " << produced.load() << " bytes\n";

  // Now read everything and check every byte.
  std::uint64_t got = 0;
  bool intact = true;
  std::vector<char> buf(128 * 1024);
  while (!p.is_done()) {
    p.get().body().data = buf.data();
    p.get().body().size = buf.size();
    boost::system::error_code ec;
    bhttp::read(c.socket(), c.buffer(), p, ec);
    if (ec == bhttp::error::need_buffer) ec = {};
    ASSERT_FALSE(ec) << ec.message();
    std::size_t n = buf.size() - p.get().body().size;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t pos = got + i;
      if (pos % 4096 == 0 && buf[i] != static_cast<char>(pos / 4096 % 251)) intact = false;
    }
    got += n;
  }
  EXPECT_EQ(got, kTotal);
  EXPECT_TRUE(intact);
  EXPECT_TRUE(eventually([&] { return done.load(); }));
}

TEST(HttpServer, ClientDisconnectMidStreamMakesWriteFail) {
  std::promise<std::pair<Status, std::uint64_t>> outcome;
  Router router;
  router.add("GET", "/endless", [&](const Request&) {
    Response r;
    r.stream = [&](ByteSink& sink) -> Status {
      std::string block(16 * 1024, 'x');
      std::uint64_t sent = 0;
      Status s;
      while (sent < (1ull << 30)) {  // 1 GiB: far more than any socket buffers
        s = sink.write(block);
        if (!s.isOk()) break;
        sent += block.size();
      }
      outcome.set_value({s, sent});
      return s;
    };
    return r;
  });
  ServerFixture fx(router);
  {
    Client c(fx.port());
    c.send("GET", "/endless");
    bhttp::response_parser<bhttp::buffer_body> p;
    bhttp::read_header(c.socket(), c.buffer(), p);
    char buf[4096];
    c.socket().read_some(boost::asio::buffer(buf));
    // leaves: the socket closes here
  }
  auto fut = outcome.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto [status, sent] = fut.get();
  EXPECT_FALSE(status.isOk());
  EXPECT_LT(sent, 1ull << 30);
}

TEST(HttpServer, StopClosesOpenConnectionsAndUnblocksStreams) {
  std::promise<Status> stream_end;
  std::atomic<bool> streaming{false};
  Router router;
  router.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  router.add("GET", "/stuck", [&](const Request&) {
    Response r;
    r.stream = [&](ByteSink& sink) -> Status {
      std::string block(64 * 1024, 'y');
      Status s;
      streaming = true;
      for (;;) {
        s = sink.write(block);
        if (!s.isOk()) break;
      }
      stream_end.set_value(s);
      return s;
    };
    return r;
  });
  ServerFixture fx(router);
  Client idle(fx.port());
  EXPECT_EQ(idle.request("GET", "/").result_int(), 200);
  Client stuck(fx.port());
  stuck.socket().set_option(boost::asio::socket_base::receive_buffer_size(32 * 1024));
  stuck.send("GET", "/stuck");
  ASSERT_TRUE(eventually([&] { return streaming.load(); }));

  auto stopped = std::async(std::launch::async, [&] { fx.server().stop(); });
  ASSERT_EQ(stopped.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto fut = stream_end.get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_FALSE(fut.get().isOk());
  EXPECT_TRUE(idle.readsEof());
  // The listener is closed: new connections are refused.
  boost::asio::io_context io;
  tcp::socket s(io);
  boost::system::error_code ec;
  s.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), fx.port()), ec);
  EXPECT_TRUE(ec);
}

TEST(HttpServer, StartFailsClearlyOnABadOrBusyAddress) {
  Router router;
  boost::asio::io_context io;
  ServerOptions bad = ServerOptions::fromConfig(Config::defaults());
  bad.listen = "not-an-address";
  Server s1(io, router, bad);
  EXPECT_FALSE(s1.start().isOk());
  ServerOptions any = ServerOptions::fromConfig(Config::defaults());
  any.listen = "127.0.0.1:0";
  Server s2(io, router, any);
  ASSERT_TRUE(s2.start().isOk());
  ServerOptions same = ServerOptions::fromConfig(Config::defaults());
  same.listen = "127.0.0.1:" + std::to_string(s2.port());
  Server s3(io, router, same);
  Status st = s3.start();
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("cannot listen"), std::string::npos) << st.toString();
  // The reason is the bind's, not what closing the socket afterwards said ("Success").
  EXPECT_NE(st.message().find("in use"), std::string::npos) << st.toString();
}

}  // namespace
}  // namespace lcc::http
