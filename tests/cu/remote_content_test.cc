// Content of another machine: records whose `machine` is m2 are read from m2's HTTP
// port — a real lcc::http::Server with the BOT-M's GET /content/ route over its own
// content folder — through the CU query engine, as XML and tar.gz. Also: size
// mismatch, 404, a server that is down or stalls, an unknown machine, keep-alive;
// https:// URLs over TLS (certificates made with openssl, support/test_pki.h).
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "botm/content_route.h"
#include "botm/filename_store.h"
#include "common/config/config.h"
#include "common/content_locator.h"
#include "common/response_head.h"
#include "warc_reader.h"
#include "cu/remote_content.h"
#include "cu_test_util.h"
#include "http/http_server.h"
#include "net/tls.h"
#include "support/http_test_server.h"
#include "support/test_pki.h"

namespace lcc {
namespace {

using cutest::CuWorld;
using cutest::parseTarAnswer;
using cutest::parseXmlAnswer;
using proto::CuQuery;
using namespace std::chrono_literals;

void writeFile(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

std::string randomBytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

std::uint16_t closedPort() {
  // A port nobody listens on: bind, read the port, close.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  auto p = a.local_endpoint().port();
  a.close();
  return p;
}

// Machine m2: a content folder served by the real route on a real HTTP server.
class Machine {
 public:
  // With `tls`: HTTPS only, url() is https://localhost:<port>.
  explicit Machine(std::int64_t idle_timeout_ms = 30000, std::shared_ptr<net::TlsContextSlot> tls = nullptr)
      : tls_(tls != nullptr) {
    content_ = dir_.path() + "/content";
    std::filesystem::create_directories(content_);
    botm::addContentRoute(router_, {content_, "m2", 256}, metrics_);
    http::ServerOptions so = http::ServerOptions::fromConfig(Config::defaults());
    so.listen = "127.0.0.1:0";
    so.workers = 2;
    so.stream_workers = 2;
    so.idle_timeout = Millis(idle_timeout_ms);
    so.metrics = &metrics_;
    so.tls = std::move(tls);
    server_ = std::make_unique<http::Server>(io_, router_, so);
    Status s = server_->start();
    EXPECT_TRUE(s.isOk()) << s.toString();
    guard_.emplace(io_.get_executor());
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~Machine() { stop(); }
  void stop() {
    if (!server_) return;
    server_->stop();
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    server_.reset();
  }
  const std::string& contentDir() const { return content_; }
  std::string url() const {
    return (tls_ ? "https://localhost:" : "http://127.0.0.1:") + std::to_string(port_ ? port_ : server_->port());
  }
  void rememberPort() { port_ = server_->port(); }
  // Writes content file number n; returns its name ("00/00/7b").
  std::string write(std::uint64_t n, const std::string& data) {
    std::string name = botm::FilenameStore::formatName(n, 256);
    writeFile(content_ + "/" + name, data);
    return name;
  }
  std::int64_t gauge(const std::string& name) { return metrics_.gauge(name, "").value(); }
  std::uint64_t counter(const std::string& name) { return metrics_.counter(name, "").value(); }

 private:
  bool tls_;
  testing::TempDir dir_;
  std::string content_;
  Metrics metrics_;
  http::Router router_;
  boost::asio::io_context io_;
  std::unique_ptr<http::Server> server_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
};

class RemoteContentTest : public ::testing::Test {
 protected:
  // A record of machine `machine` whose content file is `name` and whose size is
  // `size` (default: data's size).
  ContentRecord putRecord(ProviderId pid, const std::string& url, const std::string& machine, const std::string& name,
                          std::uint64_t size) {
    ContentRecord r;
    r.key = {pid, url, "text/html"};
    r.seq = w_.store().maxSeq().value() + 1;
    r.size = size;
    r.machine = machine;
    r.filename = name;
    r.stored = w_.clock().now();
    r.refreshed = r.stored;
    w_.putMany({r});
    return r;
  }
  ContentRecord putRemote(ProviderId pid, const std::string& url, std::uint64_t n, const std::string& data) {
    return putRecord(pid, url, "m2", m2_.write(n, data), data.size());
  }

  std::unique_ptr<cu::QueryEngine> engine(std::map<std::string, std::string> urls, Millis read_timeout = 30s,
                                          std::shared_ptr<net::TlsContextSlot> tls = nullptr) {
    locator_.setStatic(std::move(urls));
    auto o = w_.engineOptions();
    o.locator = &locator_;
    o.remote.remote_connect_timeout = 5s;
    o.remote.remote_read_timeout = read_timeout;
    o.remote.tls = std::move(tls);
    return w_.makeEngine(o);
  }

  cutest::TarAnswer tar(cu::QueryEngine& e) {
    CuQuery q;
    q.format = "tar.gz";
    Status s;
    auto t = parseTarAnswer(cutest::runQuery(e, q, &s));
    EXPECT_TRUE(s.isOk()) << s.toString();
    EXPECT_TRUE(t.ok) << t.error;
    return t;
  }

  cutest::XmlAnswer xml(cu::QueryEngine& e) {
    CuQuery q;
    q.content = true;
    Status s;
    std::string out = cutest::runQuery(e, q, &s);
    EXPECT_TRUE(s.isOk()) << s.toString();
    auto a = parseXmlAnswer(out);
    EXPECT_TRUE(a.ok) << a.error;
    return a;
  }

  CuWorld w_;
  Machine m2_;
  ContentLocator locator_;
};

TEST_F(RemoteContentTest, ContentOfAnotherMachineIsReadFromItsHttpPort) {
  const std::string big = randomBytes(3 * 1024 * 1024 + 17, 7);
  w_.put(1, "http://a.org/local.html", "text/html", "local bytes");
  putRemote(1, "http://a.org/r1.html", 0x7b, "remote one");
  putRemote(1, "http://a.org/big.bin", 0x1234, big);
  putRemote(1, "http://a.org/empty.html", 0x7c, "");
  auto e = engine({{"m2", m2_.url()}});

  auto a = xml(*e);
  ASSERT_EQ(a.urls.size(), 4u);
  EXPECT_EQ(a.urls[0].content, "local bytes");
  EXPECT_EQ(a.urls[1].content, "remote one");
  EXPECT_TRUE(a.urls[2].content == big) << "the 3 MiB file differs";
  EXPECT_EQ(a.urls[3].content, "");
  EXPECT_EQ(e->stats().content_missing.value(), 0u);

  auto t = tar(*e);
  std::map<std::string, std::string> members;
  for (const auto& m : t.members) members[m.name] = m.data;
  ASSERT_EQ(members.count("1/a.org/r1.html"), 1u);
  EXPECT_EQ(members["1/a.org/r1.html"], "remote one");
  bool found_big = false;
  for (const auto& [name, data] : members) {
    if (name.find("big.bin") != std::string::npos) {
      found_big = true;
      EXPECT_TRUE(data == big) << name << " differs";
    }
  }
  EXPECT_TRUE(found_big);
  for (const auto& u : t.manifest.urls) EXPECT_EQ(u.attr("missing"), "") << u.attr("c");
  EXPECT_EQ(m2_.counter("lcc_botm_content_reads_total"), 6u);
}

// The head the other machine's robot kept comes along (X-LCC-Response-Head) when it
// names the record's MD5, so its WARC record is a response record too.
TEST_F(RemoteContentTest, TheRobotsResponseHeadComesAlongWhenItNamesTheBody) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
  const std::string md5 = "0123456789abcdef0123456789abcdef";
  const std::string name = m2_.write(0x7e, "remote body");
  writeFile(m2_.contentDir() + "/" + responseHeadPath(name), encodeResponseHead(md5, head));
  cu::RemoteContentReader reader(cu::RemoteOptions::fromConfig(Config::defaults()));
  {
    auto src = reader.open(m2_.url(), name, 11, "m2", md5);
    ASSERT_TRUE(src.isOk()) << src.status().toString();
    EXPECT_EQ((*src)->responseHead(), head);
  }
  {
    auto other = reader.open(m2_.url(), name, 11, "m2", "ffffffffffffffffffffffffffffffff");
    ASSERT_TRUE(other.isOk());
    EXPECT_EQ((*other)->responseHead(), "") << "a head of another body";
  }

  ContentRecord r;
  r.key = {1, "http://a.org/head.html", "text/html"};
  r.seq = w_.store().maxSeq().value() + 1;
  r.size = 11;
  r.md5 = md5;
  r.machine = "m2";
  r.filename = name;
  r.stored = w_.clock().now();
  w_.putMany({r});
  auto e = engine({{"m2", m2_.url()}});
  CuQuery q;
  q.format = "warc.gz";
  Status s;
  auto w = cutest::parseWarcAnswer(cutest::runQuery(*e, q, &s));
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_TRUE(w.ok) << w.error;
  ASSERT_EQ(w.records.size(), 3u);
  EXPECT_EQ(w.records[1].field("WARC-Type"), "response");
  EXPECT_EQ(w.records[1].block, head + "remote body");
}

TEST_F(RemoteContentTest, OneKeptConnectionPerMachineForManyRecords) {
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back(m2_.write(100 + i, "file " + std::to_string(i)));
  cu::RemoteContentReader reader(cu::RemoteOptions::fromConfig(Config::defaults()));
  for (int i = 0; i < 20; ++i) {
    const std::string want = "file " + std::to_string(i);
    auto src = reader.open(m2_.url(), names[i], want.size());
    ASSERT_TRUE(src.isOk()) << src.status().toString();
    std::string got(want.size(), '\0');
    auto n = (*src)->read(got.data(), got.size());
    ASSERT_TRUE(n.isOk());
    EXPECT_EQ(got, want);
  }
  EXPECT_EQ(reader.connectionsOpened(), 1u);
}

// Requests announced with prefetch() go out ahead on the one connection; open()s in the
// same order read their answers. An open() out of that order, or an answer that is not
// 200, costs the pipelined answers (a new connection), never a wrong body.
TEST_F(RemoteContentTest, PrefetchedRequestsAreAnsweredInOrderOnOneConnection) {
  std::vector<std::string> names, bodies;
  for (int i = 0; i < 12; ++i) {
    bodies.push_back(randomBytes(1000 + static_cast<std::size_t>(i) * 9000, 100 + static_cast<unsigned>(i)));
    names.push_back(m2_.write(200 + static_cast<std::uint64_t>(i), bodies.back()));
  }
  cu::RemoteOptions o = cu::RemoteOptions::fromConfig(Config::defaults());
  o.remote_pipeline = 4;
  cu::RemoteContentReader reader(o);
  auto readOne = [&](int i) {
    auto src = reader.open(m2_.url(), names[i], bodies[i].size());
    EXPECT_TRUE(src.isOk()) << i << ": " << src.status().toString();
    if (!src.isOk()) return std::string("<error>");
    std::string got(bodies[i].size(), '\0');
    auto n = (*src)->read(got.data(), got.size());
    EXPECT_TRUE(n.isOk());
    return got;
  };
  // A window of 4, as the engine keeps it: read the oldest, announce the next.
  for (int i = 0; i < 4; ++i) reader.prefetch(m2_.url(), names[i]);
  reader.prefetch(m2_.url(), names[3]);  // announced twice: asked for once
  // The four requests went out before any open(): the server answers them already.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (m2_.counter("lcc_botm_content_reads_total") < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(m2_.counter("lcc_botm_content_reads_total"), 4u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(readOne(i) == bodies[i]) << i;
    if (i + 4 < 8) reader.prefetch(m2_.url(), names[i + 4]);
  }
  EXPECT_EQ(reader.connectionsOpened(), 1u);
  EXPECT_EQ(m2_.counter("lcc_botm_content_reads_total"), 8u) << "every file asked for once";

  // Out of order: 9 and 10 are asked for, 10 is opened first.
  reader.prefetch(m2_.url(), names[9]);
  reader.prefetch(m2_.url(), names[10]);
  EXPECT_TRUE(readOne(10) == bodies[10]);
  EXPECT_TRUE(readOne(9) == bodies[9]);
  EXPECT_EQ(reader.connectionsOpened(), 2u);

  // An absent file between two present ones: 404 for it, the others read.
  const std::string absent = botm::FilenameStore::formatName(999, 256);
  reader.prefetch(m2_.url(), names[8]);
  reader.prefetch(m2_.url(), absent);
  reader.prefetch(m2_.url(), names[11]);
  EXPECT_TRUE(readOne(8) == bodies[8]);
  auto gone = reader.open(m2_.url(), absent, 3);
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound) << gone.status().toString();
  EXPECT_TRUE(readOne(11) == bodies[11]);
  EXPECT_FALSE(reader.isDown(m2_.url()));
  EXPECT_EQ(reader.connectionsOpened(), 2u) << "a 404 keeps the connection and the requests behind it";
}

// Through the engine: more records than one scan chunk (256), in seq order (xml) and
// URL order (tar.gz), every content byte equal with requests sent ahead or not.
TEST_F(RemoteContentTest, ManyRecordsExportTheSameWithAndWithoutPipelining) {
  std::map<std::string, std::string> want;
  for (int i = 0; i < 300; ++i) {
    const std::string url = "http://a.org/p" + std::to_string(i) + ".html";
    std::string body = "page " + std::to_string(i) + " " + std::string(static_cast<std::size_t>(i % 50), 'x');
    if (i % 7 == 0) {
      w_.put(1, url, "text/html", body);  // some local ones in between
    } else {
      putRemote(1, url, 1000 + static_cast<std::uint64_t>(i), body);
    }
    want[url] = body;
  }
  for (std::size_t depth : {std::size_t{1}, std::size_t{8}}) {
    locator_.setStatic({{"m2", m2_.url()}});
    auto o = w_.engineOptions();
    o.locator = &locator_;
    o.remote.remote_pipeline = depth;
    auto e = w_.makeEngine(o);
    auto a = xml(*e);
    ASSERT_EQ(a.urls.size(), want.size()) << "depth " << depth;
    for (const auto& u : a.urls) EXPECT_EQ(u.content.value_or("<none>"), want[u.attr("c")]) << u.attr("c") << " depth " << depth;
    auto t = tar(*e);
    EXPECT_EQ(t.members.size(), want.size() + 1) << "every page and MANIFEST.xml, depth " << depth;
    for (const auto& m : t.members) {
      if (m.name == "MANIFEST.xml") continue;
      EXPECT_EQ(m.data, want["http://" + m.name.substr(m.name.find('/') + 1)]) << m.name;
    }
    EXPECT_EQ(e->stats().content_missing.value(), 0u);
  }
}

TEST_F(RemoteContentTest, AConnectionTheServerClosedWhileIdleIsReopened) {
  Machine quick(/*idle_timeout_ms=*/50);
  const std::string a = quick.write(1, "first"), b = quick.write(2, "second");
  cu::RemoteContentReader reader(cu::RemoteOptions::fromConfig(Config::defaults()));
  auto readAll = [&](const std::string& name, std::size_t size) {
    auto src = reader.open(quick.url(), name, size);
    EXPECT_TRUE(src.isOk()) << src.status().toString();
    if (!src.isOk()) return std::string();
    std::string got(size, '\0');
    (void)(*src)->read(got.data(), size);
    return got;
  };
  EXPECT_EQ(readAll(a, 5), "first");
  // Wait until the server closed the idle keep-alive connection.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (quick.gauge("lcc_http_connections_open") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(quick.gauge("lcc_http_connections_open"), 0);
  EXPECT_EQ(readAll(b, 6), "second");
  EXPECT_EQ(reader.connectionsOpened(), 2u);
  EXPECT_FALSE(reader.isDown(quick.url()));
}

TEST_F(RemoteContentTest, SizeMismatchAndAbsentFilesAreUnreadable) {
  putRecord(1, "http://a.org/short.html", "m2", m2_.write(5, "12345"), 10);    // the file is shorter
  putRecord(1, "http://a.org/long.html", "m2", m2_.write(6, "1234567890"), 4);  // or longer
  putRecord(1, "http://a.org/gone.html", "m2", "00/00/99", 3);                  // absent: 404
  putRecord(1, "http://a.org/evil.html", "m2", "../../etc/passwd", 3);          // never requested
  putRemote(1, "http://a.org/fine.html", 7, "fine");
  auto e = engine({{"m2", m2_.url()}});
  auto a = xml(*e);
  ASSERT_EQ(a.urls.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.urls[i].missing, "unreadable") << a.urls[i].attr("c");
  EXPECT_EQ(a.urls[4].content, "fine") << "one bad answer does not spoil the machine";
  EXPECT_EQ(e->stats().content_missing.value(), 4u);

  CuQuery q;
  q.format = "tar.gz";
  auto t = parseTarAnswer(cutest::runQuery(*e, q));
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(t.manifest.urls.size(), 5u);  // URL order
  for (const auto& u : t.manifest.urls) {
    EXPECT_EQ(u.attr("missing"), u.attr("c") == "http://a.org/fine.html" ? "" : "unreadable") << u.attr("c");
  }
}

TEST_F(RemoteContentTest, AUrlThatLeadsToAnotherMachineGivesNothing) {
  // m3's URL wrongly points at m2's node, which has a file of the same name.
  const std::string name = m2_.write(9, "m2's own file");
  putRecord(1, "http://a.org/m3.html", "m3", name, 13);
  auto e = engine({{"m3", m2_.url()}});
  auto a = xml(*e);
  ASSERT_EQ(a.urls.size(), 1u);
  EXPECT_EQ(a.urls[0].missing, "unreadable");
  EXPECT_FALSE(a.urls[0].content.has_value());
}

TEST_F(RemoteContentTest, AMachineThatIsDownIsUnreadableAndAnUnknownOneIsOtherMachine) {
  putRemote(1, "http://a.org/1.html", 1, "one");
  putRemote(1, "http://a.org/2.html", 2, "two");
  putRecord(1, "http://a.org/3.html", "m9", "00/00/3", 5);  // nobody said where m9 is
  m2_.rememberPort();
  const std::string down_url = m2_.url();
  m2_.stop();
  auto e = engine({{"m2", down_url}});
  auto a = xml(*e);
  ASSERT_EQ(a.urls.size(), 3u);
  EXPECT_EQ(a.urls[0].missing, "unreadable");
  EXPECT_EQ(a.urls[1].missing, "unreadable");
  EXPECT_EQ(a.urls[2].missing, "other-machine");
  EXPECT_EQ(e->stats().content_missing.value(), 3u);

  // Connection refused: the URL is down for the rest of the answer after one try.
  cu::RemoteContentReader reader(cu::RemoteOptions::fromConfig(Config::defaults()));
  auto first = reader.open("http://127.0.0.1:" + std::to_string(closedPort()), "00/00/1", 3);
  EXPECT_EQ(first.status().code(), StatusCode::kIOError);
}

TEST_F(RemoteContentTest, AStalledAnswerIsZeroFilledAndTheMachineTakenDown) {
  testing::HttpTestServer stall;
  ASSERT_TRUE(stall.start().isOk());
  testing::HttpTestResponse r;
  r.headers = {{"X-LCC-Size", "8"}};
  r.body = "abcdefgh";
  r.stall = testing::HttpTestResponse::Stall::kMidBody;
  stall.serve("/content/00/00/1", r);
  stall.serve("/content/00/00/2", {.status = 200, .headers = {}, .body = "xyz"});
  putRecord(1, "http://a.org/1.html", "m2", "00/00/1", 8);
  putRecord(1, "http://a.org/2.html", "m2", "00/00/2", 3);
  auto e = engine({{"m2", stall.url("")}}, /*read_timeout=*/200ms);
  CuQuery q;
  q.format = "tar.gz";
  Status s;
  auto t = parseTarAnswer(cutest::runQuery(*e, q, &s));
  stall.releaseStalls();
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(t.manifest.urls.size(), 2u);
  // The first member was announced with 8 bytes: what came, then zeros.
  ASSERT_EQ(t.members.size(), 2u);  // the member and MANIFEST.xml
  EXPECT_EQ(t.members[0].data.size(), 8u);
  EXPECT_EQ(t.members[0].data.substr(0, 4), "abcd");
  EXPECT_EQ(t.members[0].data.substr(4), std::string(4, '\0'));
  EXPECT_EQ(t.manifest.urls[1].attr("c"), "http://a.org/2.html");
  EXPECT_EQ(t.manifest.urls[1].attr("missing"), "unreadable") << "the stalled machine is down for this answer";
  EXPECT_EQ(stall.requestCount("/content/00/00/2"), 0u);
}

std::shared_ptr<net::TlsContextSlot> clientSlot(const std::string& ca) {
  auto c = net::makeClientContext({ca, "", "", net::TlsVersion::k12});
  EXPECT_TRUE(c.isOk()) << c.status().toString();
  return std::make_shared<net::TlsContextSlot>(c.isOk() ? c.value() : nullptr);
}

// https://: the bytes arrive over TLS when the server's certificate chains to the
// context's CA; a certificate of another CA, or no context at all, makes the records
// unreadable at once (a handshake failure, not a timeout).
TEST_F(RemoteContentTest, HttpsContentIsReadOverTlsAndAnUntrustedServerIsUnreadable) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.ok() && pki.issue("m2", "DNS:localhost") && pki.otherCa("other"));
  auto server = net::makeServerContext({pki.cert("m2"), pki.key("m2"), "", net::TlsVersion::k12});
  ASSERT_TRUE(server.isOk()) << server.status().toString();
  Machine secure(30000, std::make_shared<net::TlsContextSlot>(server.value()));
  const std::string big = randomBytes(1024 * 1024 + 3, 11);
  putRecord(1, "http://a.org/s1.html", "m2", secure.write(0x7b, "secure one"), 10);
  putRecord(1, "http://a.org/s2.bin", "m2", secure.write(0x7c, big), big.size());
  auto slot = clientSlot(pki.ca());
  auto e = engine({{"m2", secure.url()}}, 30s, slot);
  auto a = xml(*e);
  ASSERT_EQ(a.urls.size(), 2u);
  EXPECT_EQ(a.urls[0].content, "secure one");
  EXPECT_TRUE(a.urls[1].content == big) << "the 1 MiB file differs";
  EXPECT_EQ(e->stats().content_missing.value(), 0u);
  EXPECT_EQ(secure.counter("lcc_botm_content_reads_total"), 2u);

  // The slot's context is taken for each new connection: another CA now.
  slot->replace(clientSlot(pki.cert("other"))->current());
  const auto start = std::chrono::steady_clock::now();
  auto b = xml(*e);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s) << "a refused certificate must not wait for a timeout";
  ASSERT_EQ(b.urls.size(), 2u);
  for (const auto& u : b.urls) EXPECT_EQ(u.missing, "unreadable") << u.attr("c");
  EXPECT_EQ(secure.counter("lcc_botm_content_reads_total"), 2u) << "nothing was served to the untrusting client";

  auto none = engine({{"m2", secure.url()}}, 30s, nullptr);
  auto c = xml(*none);
  ASSERT_EQ(c.urls.size(), 2u);
  EXPECT_EQ(c.urls[0].missing, "unreadable");
}

TEST(ContentLocator, StaticEntriesWinAndBadUrlsAreRefused) {
  ContentLocator loc;
  EXPECT_EQ(loc.discovered("m2", "http://10.0.0.2:7780/"), ContentLocator::Update::kChanged);
  EXPECT_EQ(loc.discovered("m2", "http://10.0.0.2:7780"), ContentLocator::Update::kUnchanged);
  EXPECT_EQ(loc.urlOf("m2"), "http://10.0.0.2:7780");
  loc.setStatic({{"m2", "http://static:1"}});
  EXPECT_EQ(loc.urlOf("m2"), "http://static:1");
  EXPECT_EQ(loc.discovered("m3", "ftp://x:1"), ContentLocator::Update::kInvalid);
  EXPECT_EQ(loc.discovered("m4", "https://x:1/"), ContentLocator::Update::kChanged);
  EXPECT_EQ(loc.urlOf("m4"), "https://x:1");
  EXPECT_EQ(loc.discovered("m4", "https://u@x:1"), ContentLocator::Update::kInvalid);
  EXPECT_EQ(loc.discovered("m3", "http://x:1 y"), ContentLocator::Update::kInvalid);
  EXPECT_EQ(loc.discovered("bad id", "http://x:1"), ContentLocator::Update::kInvalid);
  EXPECT_EQ(loc.urlOf("m3"), std::nullopt);

  std::vector<std::string> problems;
  auto m = parseContentUrls({"m2=http://h:7780", "m3", "m4=ftp://h", "m5=http://h:99999", "m2=http://other:1",
                             "m6=https://h:7443/lcc/"},
                            &problems);
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"m2", "http://h:7780"}, {"m6", "https://h:7443/lcc"}}));
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_NE(problems[0].find("(got m3)"), std::string::npos);
  EXPECT_NE(problems[1].find("http://"), std::string::npos);
  EXPECT_NE(problems[2].find("port"), std::string::npos);
  EXPECT_NE(problems[3].find("twice"), std::string::npos);
}

}  // namespace
}  // namespace lcc
