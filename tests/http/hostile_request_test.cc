// Requests built to hurt the HTTP server (issue 25), over real sockets on 127.0.0.1:
// a trailer field Beast cannot store, a chunk line that never ends, Transfer-Encoding
// games that would smuggle a second request past the first. Each is refused with its
// 4xx and the connection closed; the server serves the next client as before.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "hostile_peer.h"
#include "http/http_server.h"
#include "http_test_client.h"

namespace lcc::http {
namespace {

using testing::Peer;
using testing::ServerFixture;

// POST /echo answers the body's size; GET /secret counts its calls.
struct EchoRouter {
  Router router;
  std::atomic<int> secret_calls{0};
  EchoRouter() {
    router.add("POST", "/echo", [](const Request& r) { return Response::text(200, std::to_string(r.body.size())); });
    router.add("GET", "/secret", [this](const Request&) {
      ++secret_calls;
      return Response::text(200, "secret");
    });
    router.add("GET", "/", [](const Request&) { return Response::text(200, "ok"); });
  }
};

std::string chunkedPost(const std::string& trailer) {
  return "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n" + trailer + "\r\n";
}

// The request: one trailer field of 65,600 bytes. Beast's basic_fields throws
// std::length_error for a value that large, on an io thread: lccd aborted. Now the
// trailer counts against http.max_header (431/400), and where max_header allows it
// (up to 1 MiB) the exception is caught and answered 431. The server stays up.
TEST(HostileRequest, AHugeTrailerFieldIsRefusedAndTheServerStaysUp) {
  for (std::size_t max_header : {std::size_t{16 * 1024}, std::size_t{1024 * 1024}}) {
    SCOPED_TRACE(max_header);
    EchoRouter er;
    auto opts = ServerFixture::defaultOptions();
    opts.max_header = max_header;
    ServerFixture fx(er.router, opts);
    Peer p(fx.port(), "127.0.0.2");
    p.write(chunkedPost("X-Big: " + std::string(65600, 'a') + "\r\n"));
    auto a = p.answer();
    ASSERT_TRUE(a.has_value()) << "no answer";
    EXPECT_TRUE(a->result_int() == 431 || a->result_int() == 400) << a->result_int();
    EXPECT_TRUE(p.closedByServer());
    // A header field of that size, where max_header lets it through, the same.
    Peer h(fx.port(), "127.0.0.2");
    h.write("GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + std::string(65600, 'a') + "\r\n\r\n");
    auto b = h.answer();
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(b->result_int(), 431);
    // A small trailer is fine, and the server still serves.
    Peer ok(fx.port(), "127.0.0.3");
    ok.write(chunkedPost("X-Small: yes\r\n"));
    auto c = ok.answer();
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->result_int(), 200);
    EXPECT_EQ(c->body(), "5");
  }
}

// A chunk-size line `1;ext=` followed by megabytes: Beast waits for the line's end and
// the connection's buffer grew with every byte (252 MB for 200 MB sent). Now a chunk
// line longer than http.max_header is refused with 400 once that much is in, and the
// rest is never read.
TEST(HostileRequest, AChunkExtensionThatNeverEndsIsRefusedWithinTheHeaderLimit) {
  EchoRouter er;
  auto opts = ServerFixture::defaultOptions();
  opts.idle_timeout = Millis(3000);  // the old server read on until this, and never answered
  ServerFixture fx(er.router, opts);
  Peer p(fx.port(), "127.0.0.2");
  ASSERT_TRUE(p.write("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;ext="));
  const std::string filler(64 * 1024, 'x');
  for (int i = 0; i < 128; ++i) {  // up to 8 MiB; the server stops reading long before
    if (!p.write(filler)) break;
  }
  auto a = p.answer();
  ASSERT_TRUE(a.has_value()) << "no answer: the server read the extension on";
  EXPECT_EQ(a->result_int(), 400);
  // So is a trailer section longer than max_header made of many small fields.
  Peer t(fx.port(), "127.0.0.2");
  std::string fields;
  for (int i = 0; i < 2000; ++i) fields += "X-F" + std::to_string(i) + ": v\r\n";
  t.write(chunkedPost(fields));
  auto b = t.answer();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->result_int(), 400);
}

// The bound is on unparsed lines only: a chunked body up to http.max_body arrives whole,
// however large its chunks, and one byte more is 413.
TEST(HostileRequest, ALargeChunkedBodyUpToMaxBodyIsRead) {
  EchoRouter er;
  auto opts = ServerFixture::defaultOptions();
  opts.max_body = 4 << 20;
  ServerFixture fx(er.router, opts);
  auto send = [&](std::size_t total) {
    Peer p(fx.port(), "127.0.0.2");
    std::string req = "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::size_t chunk = 1 << 20;
    for (std::size_t sent = 0; sent < total; sent += chunk) {
      const std::size_t n = std::min(chunk, total - sent);
      char head[32];
      std::snprintf(head, sizeof head, "%zx;n=%zu\r\n", n, sent);
      req += head + std::string(n, 'b') + "\r\n";
    }
    req += "0\r\nX-Done: 1\r\n\r\n";
    p.write(req);
    return p.answer();
  };
  auto whole = send(4 << 20);
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->result_int(), 200);
  EXPECT_EQ(whole->body(), std::to_string(4 << 20));
  auto over = send((4 << 20) + 1);
  ASSERT_TRUE(over.has_value());
  EXPECT_EQ(over->result_int(), 413);
}

// RFC 9112 §6.3: a Transfer-Encoding other than a single final `chunked`, or one with
// Content-Length, cannot frame the body. The old server read these by their
// Content-Length and kept the connection: the GET hidden in the body ran.
TEST(HostileRequest, TransferEncodingOtherThanChunkedOrWithContentLengthIs400AndCloses) {
  const std::string hidden = "GET /secret HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::vector<std::string> framings = {
      "Transfer-Encoding: chunked, identity\r\n", "Transfer-Encoding: xchunked\r\n",
      "Transfer-Encoding: chunk\r\n",            "Transfer-Encoding: identity\r\n",
      "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n",
      "Transfer-Encoding: gzip, chunked\r\n",
  };
  EchoRouter er;
  ServerFixture fx(er.router);
  for (const auto& te : framings) {
    SCOPED_TRACE(te);
    Peer p(fx.port(), "127.0.0.2");
    const bool chunked_last = te.find("chunked\r\n") != std::string::npos;
    // With chunked last the body is a chunk holding the hidden request; otherwise the
    // Content-Length covers it.
    const std::string body = chunked_last ? "21\r\n" + hidden + "\r\n0\r\n\r\n" : hidden;
    p.write("POST /echo HTTP/1.1\r\nHost: a\r\n" + te + "Content-Length: " + std::to_string(body.size()) +
            "\r\n\r\n" + body);
    auto a = p.answer();
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->result_int(), 400);
    EXPECT_TRUE(p.closedByServer());
  }
  // Without Content-Length, an unknown coding is refused too.
  Peer q(fx.port(), "127.0.0.2");
  q.write("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n" + hidden);
  auto b = q.answer();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->result_int(), 400);
  EXPECT_TRUE(q.closedByServer());
  EXPECT_EQ(er.secret_calls.load(), 0);
}

}  // namespace
}  // namespace lcc::http
