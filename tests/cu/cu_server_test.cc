// The CU port (real sockets on 127.0.0.1, port 0) and GET /cu/query (the handler
// directly, and end to end through the HTTP server): answers, refusals with their
// codes, timeouts on simulated time, connection limits, clients that go away.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "capi/cu_client.h"
#include "common/config/config.h"
#include "common/content_meta.h"
#include "cu/cu_http.h"
#include "cu/cu_server.h"
#include "cu_test_util.h"
#include "http/http_server.h"
#include "support/loopback.h"

namespace lcc {
namespace {

using cutest::CuWorld;
using proto::CuQuery;

// Polls `cond` until it holds or 10 s pass.
template <typename F>
bool eventually(F cond) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return cond();
}

class CuServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 1; i <= 30; ++i) {
      w_.put(1 + i % 2, "http://h" + std::to_string(1 + i % 2) + ".org/p" + std::to_string(i) + ".html", "text/html",
             "content of page " + std::to_string(i));
    }
    engine_ = w_.makeEngine();
  }
  void TearDown() override {
    if (server_) server_->stop();
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }

  void startServer(cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults())) {
    o.listen = "127.0.0.1:0";
    server_ = std::make_unique<cu::CuServer>(io_, *engine_, w_.clock(), o);
    ASSERT_TRUE(server_->start().isOk());
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  capi::Endpoint ep() const { return capi::Endpoint{"127.0.0.1", server_->port()}; }

  std::unique_ptr<capi::Socket> connect() {
    auto s = capi::Socket::connect(ep(), 10000);
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return std::move(s).value();
  }

  // Sends raw bytes and reads until the server closes.
  std::string exchange(const std::string& request) {
    auto s = connect();
    EXPECT_TRUE(s->writeAll(request).isOk());
    return readAll(*s);
  }

  // A raw client bound to `source` (127.0.0.2, ...); -1 on failure.
  int connectFrom(const char* source) { return testing::connectLoopbackFrom(server_->port(), source); }
  static std::string readFd(int fd) {
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  // Sends `request` from `source`, reads until the server closes.
  std::string exchangeFrom(const char* source, const std::string& request) {
    int fd = connectFrom(source);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    std::string out = readFd(fd);
    ::close(fd);
    return out;
  }

  static std::string readAll(capi::Socket& s) {
    std::string out;
    char buf[65536];
    for (;;) {
      auto n = s.read(buf, sizeof buf);
      if (!n.isOk() || *n == 0) return out;
      out.append(buf, *n);
    }
  }

  CuWorld w_;
  std::unique_ptr<cu::QueryEngine> engine_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ = boost::asio::make_work_guard(io_);
  std::vector<std::thread> threads_;
  std::unique_ptr<cu::CuServer> server_;
};

TEST_F(CuServerTest, XmlAnswerOverTcp) {
  startServer();
  CuQuery q;
  q.providers = {1};
  q.content = true;
  auto a = cutest::parseXmlAnswer(exchange(proto::formatCuQueryXml(q)));
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.root, "result");
  EXPECT_EQ(a.count, 15u);
  ASSERT_EQ(a.urls.size(), 15u);
  EXPECT_EQ(a.urls[0].attr("c"), "http://h1.org/p2.html");
  EXPECT_EQ(a.urls[0].content, "content of page 2");
  EXPECT_EQ(a.last_seq, 30u);
}

TEST_F(CuServerTest, TarAnswerOverTcp) {
  startServer();
  CuQuery q;
  q.format = "tar.gz";
  auto t = cutest::parseTarAnswer(exchange(proto::formatCuQueryXml(q)));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.members.size(), 31u);
  EXPECT_EQ(t.manifest.count, 30u);
  EXPECT_EQ(t.members[0].name, "1/h1.org/p10.html");  // URL order: p10, p12, ..., p2, p20, ...
  EXPECT_EQ(t.members[0].data, "content of page 10");
}

TEST_F(CuServerTest, BadQueriesGetQueryRejected) {
  startServer();
  struct Case {
    std::string doc;
    int code;
  };
  std::string big = "<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\">";
  while (big.size() < 70 * 1024) big += "<mime>text/html</mime>";
  for (const auto& c : std::vector<Case>{
           {"<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\" format=\"zip\"/>", 100},
           {"<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\"><since seq=\"x\"/></lococa:query>", 100},
           {"<!DOCTYPE q><lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\"/>", 100},
           {"this is not xml", 100},
           {big, 101},
       }) {
    auto a = cutest::parseXmlAnswer(exchange(c.doc));
    ASSERT_TRUE(a.ok) << a.error;
    EXPECT_EQ(a.root, "query_rejected") << c.doc.substr(0, 80);
    EXPECT_EQ(a.reject_code, c.code) << c.doc.substr(0, 80) << ": " << a.reject_text;
  }
  // A half-sent query, then the client closes its sending side: 100, and the answer arrives.
  auto s = connect();
  ASSERT_TRUE(s->writeAll("<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\">").isOk());
  ASSERT_TRUE(s->shutdownSend().isOk());
  auto a = cutest::parseXmlAnswer(readAll(*s));
  EXPECT_EQ(a.reject_code, 100);
}

TEST_F(CuServerTest, IdleClientGets133OnSimulatedTime) {
  cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
  o.idle_timeout = Millis(30000);
  startServer(o);
  auto s = connect();
  ASSERT_TRUE(s->writeAll("<lococa:query xmlns:lococa=\"http://www.lococa.org/1.0\">").isOk());
  ASSERT_TRUE(eventually([&] { return w_.clock().pendingTimers() >= 1; }));
  w_.clock().advance(Millis(29000));
  EXPECT_EQ(server_->connections(), 1u);
  w_.clock().advance(Millis(1001));
  auto a = cutest::parseXmlAnswer(readAll(*s));
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.reject_code, 133);
  s.reset();  // the server keeps reading until the client closes (no reset of the answer)
  EXPECT_TRUE(eventually([&] { return server_->connections() == 0; }));
}

TEST_F(CuServerTest, TooManyConnectionsGet120) {
  cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
  o.max_connections = 1;
  startServer(o);
  auto first = connect();
  ASSERT_TRUE(eventually([&] { return server_->connections() == 1; }));
  auto a = cutest::parseXmlAnswer(exchange(proto::formatCuQueryXml(CuQuery{})));
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.reject_code, 120);
  // The first one is still served.
  ASSERT_TRUE(first->writeAll(proto::formatCuQueryXml(CuQuery{})).isOk());
  auto b = cutest::parseXmlAnswer(readAll(*first));
  EXPECT_EQ(b.count, 30u);
}

TEST_F(CuServerTest, AClientThatLeavesMidAnswerDoesNotHurtTheServer) {
  std::string big(200 * 1024, 'x');
  for (int i = 0; i < 100; ++i) w_.put(5, "http://big.org/" + std::to_string(i), "application/octet-stream", big);
  cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
  o.pipe_buffer = 64 * 1024;
  o.export_threads = 1;  // the next query needs the same worker back
  startServer(o);
  {
    auto s = connect();
    CuQuery q;
    q.providers = {5};
    q.content = true;
    ASSERT_TRUE(s->writeAll(proto::formatCuQueryXml(q)).isOk());
    char buf[1000];
    ASSERT_TRUE(s->read(buf, sizeof buf).isOk());
  }  // closed after 1000 bytes of ~27 MB
  EXPECT_TRUE(eventually([&] { return engine_->stats().failed.value() >= 1; }));
  EXPECT_TRUE(eventually([&] { return server_->connections() == 0; }));
  auto a = cutest::parseXmlAnswer(exchange(proto::formatCuQueryXml(CuQuery{})));
  EXPECT_EQ(a.count, 130u);
}

TEST_F(CuServerTest, AClientThatReadsNothingIsDroppedAfterTheWriteTimeout) {
  std::string big(200 * 1024, 'y');
  for (int i = 0; i < 100; ++i) w_.put(6, "http://slow.org/" + std::to_string(i), "application/octet-stream", big);
  cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
  o.write_timeout = Millis(60000);
  o.pipe_buffer = 64 * 1024;
  startServer(o);
  auto s = connect();
  CuQuery q;
  q.providers = {6};
  q.content = true;
  ASSERT_TRUE(s->writeAll(proto::formatCuQueryXml(q)).isOk());
  // The socket buffers fill and a write stays pending with its timer armed; each
  // advance fires whichever write timer is armed, until one finds its write stuck.
  ASSERT_TRUE(eventually([&] { return engine_->stats().running.value() == 1; }));
  EXPECT_TRUE(eventually([&] {
    w_.clock().advance(Millis(60001));
    return server_->connections() == 0;
  }));
  EXPECT_TRUE(eventually([&] { return engine_->stats().running.value() == 0; }));
}

// Issue 25: idle sockets of one address take at most cu.max_connections_per_ip (8) of
// the port; another address is served.
TEST_F(CuServerTest, OneAddressHoldsAtMostItsConnectionsAndAnotherIsServed) {
  startServer();  // the defaults: 64 in all, 8 per address
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(connectFrom("127.0.0.2"));
  ASSERT_TRUE(eventually([&] { return server_->connections() == 8; }));
  CuQuery q;
  q.providers = {1};
  auto over = cutest::parseXmlAnswer(exchangeFrom("127.0.0.2", proto::formatCuQueryXml(q)));
  ASSERT_TRUE(over.ok) << over.error;
  EXPECT_EQ(over.root, "query_rejected");
  EXPECT_EQ(over.reject_code, 120) << over.reject_text;
  auto other = cutest::parseXmlAnswer(exchangeFrom("127.0.0.3", proto::formatCuQueryXml(q)));
  ASSERT_TRUE(other.ok) << other.error;
  EXPECT_EQ(other.count, 15u);
  for (int fd : idle) ::close(fd);
}

// Issue 25: exports whose client reads nothing hold at most cu.max_exports_per_ip (2) of
// the workers; a third query of that address is refused with 120, another address is
// served, and once the write timeout cuts the stalled ones the address is served again.
TEST_F(CuServerTest, StalledExportsOfOneAddressHoldAtMostTheirShareOfTheWorkers) {
  std::string big(200 * 1024, 'z');
  for (int i = 0; i < 100; ++i) w_.put(7, "http://stall.org/" + std::to_string(i), "application/octet-stream", big);
  cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
  o.export_threads = 3;
  o.write_timeout = Millis(60000);
  o.pipe_buffer = 64 * 1024;
  startServer(o);
  CuQuery stall;
  stall.providers = {7};
  stall.content = true;
  const std::string stall_doc = proto::formatCuQueryXml(stall);
  std::vector<int> stalled;
  for (int i = 0; i < 2; ++i) {
    stalled.push_back(connectFrom("127.0.0.2"));
    ASSERT_EQ(::write(stalled.back(), stall_doc.data(), stall_doc.size()), static_cast<ssize_t>(stall_doc.size()));
  }
  ASSERT_TRUE(eventually([&] { return engine_->stats().running.value() == 2; }));
  CuQuery small;
  small.providers = {1};
  auto third = cutest::parseXmlAnswer(exchangeFrom("127.0.0.2", proto::formatCuQueryXml(small)));
  ASSERT_TRUE(third.ok) << third.error;
  EXPECT_EQ(third.reject_code, 120) << "a third export of one address took a worker";
  auto other = cutest::parseXmlAnswer(exchangeFrom("127.0.0.3", proto::formatCuQueryXml(small)));
  ASSERT_TRUE(other.ok) << other.error;
  EXPECT_EQ(other.count, 15u);
  EXPECT_TRUE(eventually([&] {
    w_.clock().advance(Millis(60001));
    return engine_->stats().running.value() == 0;
  }));
  ASSERT_TRUE(eventually([&] { return server_->exportsFrom("127.0.0.2") == 0; }));  // the workers' places came back
  auto again = cutest::parseXmlAnswer(exchangeFrom("127.0.0.2", proto::formatCuQueryXml(small)));
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.count, 15u);
  for (int fd : stalled) ::close(fd);
}

TEST_F(CuServerTest, TheClientLibraryReadsRecordsAndContent) {
  startServer();
  CuQuery q;
  q.content = true;
  q.providers = {2};
  auto sock = capi::Socket::connect(ep(), 10000);
  ASSERT_TRUE(sock.isOk());
  ASSERT_TRUE((*sock)->writeAll(proto::formatCuQueryXml(q)).isOk());
  capi::AnswerReader r(std::move(sock).value());
  ASSERT_TRUE(r.start().isOk());
  EXPECT_EQ(r.count(), 15u);
  int n = 0;
  for (;;) {
    auto rec = r.next();
    ASSERT_TRUE(rec.isOk()) << rec.status().toString();
    if (*rec == nullptr) break;
    ++n;
    if (n % 2 == 0) continue;  // skip the content of every other record
    std::string content;
    char buf[5];
    for (;;) {
      auto k = r.readContent(buf, sizeof buf);
      ASSERT_TRUE(k.isOk());
      if (*k == 0) break;
      content.append(buf, *k);
    }
    const std::string page = (*rec)->url.substr((*rec)->url.rfind("/p") + 2);
    EXPECT_EQ(content, "content of page " + page.substr(0, page.find('.')));
  }
  EXPECT_EQ(n, 15);
}

// --- lcc cu query -------------------------------------------------------------

TEST_F(CuServerTest, TheCommandWritesAnswersToFilesAndStdout) {
  startServer();
  const std::string lcc = std::string(LCC_BIN_DIR) + "/lcc --config /nonexistent cu query --cu 127.0.0.1:" +
                          std::to_string(server_->port());
  const std::string tgz = w_.dataDir() + "/out.tar.gz", xml = w_.dataDir() + "/out.xml";
  ASSERT_EQ(std::system((lcc + " --format tar.gz --provider 1 -o " + tgz).c_str()), 0);
  std::ifstream f(tgz, std::ios::binary);
  auto t = cutest::parseTarAnswer(std::string(std::istreambuf_iterator<char>(f), {}));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.members.size(), 16u);
  EXPECT_FALSE(std::filesystem::exists(tgz + ".part"));

  ASSERT_EQ(std::system((lcc + " --since-seq 25 --deleted --content --limit 3 > " + xml).c_str()), 0);
  std::ifstream g(xml, std::ios::binary);
  auto a = cutest::parseXmlAnswer(std::string(std::istreambuf_iterator<char>(g), {}));
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.count, 3u);
  EXPECT_EQ(a.last_seq, 28u);
  EXPECT_EQ(a.urls[0].content, "content of page 26");

  // Usage errors and an unreachable port: exit 2.
  EXPECT_EQ(WEXITSTATUS(std::system((lcc + " --mime nonsense 2>/dev/null >/dev/null").c_str())), 2);
  EXPECT_EQ(WEXITSTATUS(std::system((std::string(LCC_BIN_DIR) +
                                     "/lcc --config /nonexistent cu query --cu 127.0.0.1:1 2>/dev/null >/dev/null")
                                        .c_str())),
            2);
}

// Tombstones up to seq 20 were purged (the QM's ageing): a mirror asking for changes
// since an older seq would silently miss removals, so it is told to take a full export.
void markPurgedUpTo(ContentStore& store, ChangeSeq seq) {
  ContentBatch b;
  b.putMeta(kContentMetaPurgedSeq, std::to_string(seq));
  ASSERT_TRUE(store.apply(b).isOk());
}

TEST_F(CuServerTest, ChangesSinceBeforeThePurgeHorizonAreRefusedWith150) {
  markPurgedUpTo(w_.store(), 20);
  startServer();
  auto ask = [&](std::optional<ChangeSeq> since, bool deleted) {
    CuQuery q;
    q.since_seq = since;
    q.deleted = deleted;
    return cutest::parseXmlAnswer(exchange(proto::formatCuQueryXml(q)));
  };
  auto a = ask(10, true);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.root, "query_rejected");
  EXPECT_EQ(a.reject_code, 150);
  EXPECT_EQ(a.reject_text, "changes before seq 21 were purged; take a full export");
  EXPECT_EQ(ask(19, true).reject_code, 150);
  // From the horizon on, without since (a full export), or without removals: answered.
  for (auto [since, deleted] : std::vector<std::pair<std::optional<ChangeSeq>, bool>>{
           {20, true}, {25, true}, {std::nullopt, true}, {10, false}}) {
    auto ok = ask(since, deleted);
    ASSERT_TRUE(ok.ok) << ok.error;
    EXPECT_EQ(ok.root, "result") << since.value_or(0) << (deleted ? " deleted" : "");
  }
}

// --- HTTP ---------------------------------------------------------------------

TEST_F(CuServerTest, HttpHandlerAnswersAndRefuses) {
  http::Request bad;
  bad.query = {{"since_seq", "soon"}};
  auto r = cu::handleCuQuery(*engine_, cu::PeerOptions{}, bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(cutest::parseXmlAnswer(r.body).reject_code, 100);
  http::Request unknown;
  unknown.query = {{"format", "rar"}};
  EXPECT_EQ(cu::handleCuQuery(*engine_, cu::PeerOptions{}, unknown).status, 400);

  markPurgedUpTo(w_.store(), 20);
  http::Request purged;
  purged.query = {{"since_seq", "3"}, {"deleted", "yes"}};
  auto gone = cu::handleCuQuery(*engine_, cu::PeerOptions{}, purged);
  EXPECT_EQ(gone.status, 410);
  auto ga = cutest::parseXmlAnswer(gone.body);
  EXPECT_EQ(ga.reject_code, 150);
  EXPECT_EQ(ga.reject_text, "changes before seq 21 were purged; take a full export");

  http::Request good;
  good.query = {{"format", "tar.gz"}, {"provider", "1"}};
  auto ok = cu::handleCuQuery(*engine_, cu::PeerOptions{}, good);
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.content_type, "application/gzip");
  ASSERT_TRUE(ok.stream);
  bool has_count = false;
  for (const auto& [k, v] : ok.headers) has_count = has_count || (k == "X-LCC-Count" && v == "15");
  EXPECT_TRUE(has_count);
  cutest::StringSink sink;
  ASSERT_TRUE(ok.stream(sink).isOk());
  auto t = cutest::parseTarAnswer(sink.data);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_EQ(t.members.size(), 16u);
}

// Decodes a chunked HTTP/1.1 body.
std::string dechunk(const std::string& body) {
  std::string out;
  std::size_t p = 0;
  while (p < body.size()) {
    std::size_t eol = body.find("\r\n", p);
    if (eol == std::string::npos) break;
    std::size_t n = std::stoul(body.substr(p, eol - p), nullptr, 16);
    if (n == 0) break;
    out += body.substr(eol + 2, n);
    p = eol + 2 + n + 2;
  }
  return out;
}

TEST_F(CuServerTest, HttpEndToEnd) {
  http::Router router;
  const cu::PeerOptions no_peers;
  cu::addCuRoutes(router, *engine_, no_peers);
  http::ServerOptions ho = http::ServerOptions::fromConfig(Config::defaults());
  ho.listen = "127.0.0.1:0";
  http::Server hs(io_, router, ho);
  ASSERT_TRUE(hs.start().isOk());
  startServer();
  capi::Endpoint hep{"127.0.0.1", hs.port()};
  auto get = [&](const std::string& target) {
    auto s = capi::Socket::connect(hep, 10000);
    EXPECT_TRUE(s.isOk());
    EXPECT_TRUE((*s)->writeAll("GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").isOk());
    return readAll(**s);
  };
  std::string resp = get("/cu/query?format=xml&provider=2&content=yes&mime=text/*");
  ASSERT_EQ(resp.rfind("HTTP/1.1 200", 0), 0u) << resp.substr(0, 200);
  EXPECT_NE(resp.find("application/xml"), std::string::npos);
  std::string body = resp.substr(resp.find("\r\n\r\n") + 4);
  if (resp.find("chunked") != std::string::npos) body = dechunk(body);
  auto a = cutest::parseXmlAnswer(body);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.count, 15u);
  EXPECT_EQ(a.urls[0].content, "content of page 1");

  std::string bad = get("/cu/query?limit=lots");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400", 0), 0u) << bad.substr(0, 200);
  hs.stop();
}

}  // namespace
}  // namespace lcc
