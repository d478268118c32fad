// A merged answer with content of a peer, over real HTTP on 127.0.0.1: node A (this
// engine) merges with peer B (another storage-memory store served by the real HTTP
// server with the cu routes). B's content comes through GET /cu/content/<store>/<seq>
// into the same exporters; a record B replaced after the list, or a peer that answers
// another record's bytes, gives missing="unreadable", never those bytes.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <thread>

#include "common/config/config.h"
#include "common/content_meta.h"
#include "cu/cu_http.h"
#include "cu/merged_export.h"
#include "cu/merged_query.h"
#include "cu_test_util.h"
#include "http/admin_client.h"
#include "http/http_server.h"
#include "http/url_codec.h"

namespace lcc {
namespace {

using cutest::CuWorld;

void nameStore(CuWorld& w, const std::string& id) {
  ContentBatch b;
  b.putMeta(kContentMetaStoreId, id);
  ASSERT_TRUE(w.store().apply(b).isOk());
}

// An io_context run by threads until the test ends (after B's server stopped).
struct IoThreads {
  boost::asio::io_context io;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work{io.get_executor()};
  std::vector<std::thread> threads;

  void start(int n) {
    while (n-- > 0) threads.emplace_back([this] { io.run(); });
  }
  ~IoThreads() {
    work.reset();
    io.stop();
    for (auto& t : threads) t.join();
  }
};

class MergedPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_.put(1, "http://a.org/1", "text/html", "a one");
    a_.put(1, "http://a.org/2", "text/html", "a two");
    for (int i = 0; i < 20; ++i) b_.put(2, "http://b.org/" + std::to_string(i), "text/html", "b " + std::to_string(i));
    nameStore(a_, "sa");
    nameStore(b_, "sb");
    engine_a_ = a_.makeEngine();
    engine_b_ = b_.makeEngine();
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  // B's cu routes on a real HTTP server; `content` replaces its /cu/content/ handler.
  void serveB(http::Handler content = nullptr) {
    if (content) {
      router_.add("GET", "/cu/query",
                  [this](const http::Request& r) { return cu::handleCuQuery(*engine_b_, no_peers_, r); });
      router_.add("GET", "/cu/content/", std::move(content));
    } else {
      cu::addCuRoutes(router_, *engine_b_, no_peers_);
    }
    http::ServerOptions ho = http::ServerOptions::fromConfig(Config::defaults());
    ho.listen = "127.0.0.1:0";
    server_ = std::make_unique<http::Server>(io_.io, router_, ho);
    ASSERT_TRUE(server_->start().isOk());
    io_.start(2);
    peers_ = cu::PeerOptions::fromConfig(Config::defaults());
    peers_.peers = {"http://127.0.0.1:" + std::to_string(server_->port())};
  }

  cu::MergedResult list(const proto::CuQuery& q) {
    auto r = cu::runMergedQuery(q, engine_a_.get(), peers_, 0);
    EXPECT_TRUE(r.isOk()) << r.status().message();
    EXPECT_TRUE(r->answer.unreachable.empty());
    return std::move(r).value();
  }

  std::string exported(const cu::MergedResult& r, const proto::CuQuery& q) {
    Status s;
    std::string out = cutest::exportMerged(a_, *engine_a_, r, q, &s);
    EXPECT_TRUE(s.isOk()) << s.message();
    return out;
  }

  CuWorld a_, b_;
  std::unique_ptr<cu::QueryEngine> engine_a_, engine_b_;
  IoThreads io_;
  http::Router router_;
  const cu::PeerOptions no_peers_;
  std::unique_ptr<http::Server> server_;
  cu::PeerOptions peers_;
};

TEST_F(MergedPeerTest, APeersContentComesIntoTheSameTarAsOneLccs) {
  serveB();
  proto::CuQuery q;
  q.format = "tar.gz";
  const cu::MergedResult r = list(q);
  ASSERT_EQ(r.answer.records.size(), 22u);
  auto tar = cutest::parseTarAnswer(exported(r, q));
  ASSERT_TRUE(tar.ok) << tar.error;
  ASSERT_EQ(tar.members.size(), 23u) << "22 files and MANIFEST.xml";
  std::map<std::string, std::string> by_url;
  for (const auto& u : tar.manifest.urls) {
    ASSERT_FALSE(u.attr("path").empty()) << u.attr("c") << " missing=" << u.missing;
    for (const auto& m : tar.members) {
      if (m.name == u.attr("path")) by_url[u.attr("c")] = m.data;
    }
  }
  EXPECT_EQ(by_url["http://a.org/2"], "a two");
  EXPECT_EQ(by_url["http://b.org/0"], "b 0");
  EXPECT_EQ(by_url["http://b.org/19"], "b 19");
  EXPECT_EQ(tar.manifest.urls.back().attr("source"), "sb");
  EXPECT_NE(tar.members.back().data.find("last_seq=\"" + r.token + "\""), std::string::npos);
}

TEST_F(MergedPeerTest, ARecordThePeerReplacedAfterTheListIsMissingNeverItsNewBody) {
  serveB();
  proto::CuQuery q;
  q.content = true;
  const cu::MergedResult r = list(q);
  b_.put(2, "http://b.org/5", "text/html", "b 5 but newer");  // seq 6 at B is now seq 21
  auto xml = cutest::parseXmlAnswer(exported(r, q));
  ASSERT_TRUE(xml.ok) << xml.error;
  ASSERT_EQ(xml.urls.size(), 22u);
  for (const auto& u : xml.urls) {
    if (u.attr("c") == "http://b.org/5") {
      EXPECT_FALSE(u.content.has_value()) << *u.content;
      EXPECT_EQ(u.missing, "unreadable");
    } else {
      EXPECT_TRUE(u.content.has_value()) << u.attr("c");
    }
  }
  EXPECT_EQ(xml.urls[3].content, std::optional<std::string>("b 1"));
}

TEST_F(MergedPeerTest, APeerAnsweringAnotherRecordsBytesIsRefused) {
  // Same size, other bytes, its own MD5 named: what a confused or hostile peer sends.
  serveB([this](const http::Request& req) {
    http::Response r = cu::handleRecordContent(*engine_b_, req);
    for (auto& [k, v] : r.headers) {
      if (k == "X-LCC-MD5") v = "00000000000000000000000000000000";
    }
    return r;
  });
  proto::CuQuery q;
  q.content = true;
  auto xml = cutest::parseXmlAnswer(exported(list(q), q));
  ASSERT_TRUE(xml.ok) << xml.error;
  ASSERT_EQ(xml.urls.size(), 22u);
  EXPECT_EQ(xml.urls[0].content, std::optional<std::string>("a one")) << "this node's own content";
  for (std::size_t i = 2; i < xml.urls.size(); ++i) {
    EXPECT_FALSE(xml.urls[i].content.has_value()) << xml.urls[i].attr("c");
    EXPECT_EQ(xml.urls[i].missing, "unreadable");
  }
}

TEST_F(MergedPeerTest, ANodeWithPeersStreamsTheMergedTarGzOverHttp) {
  const std::string big(200 * 1024, 'z');  // over 64 KiB: B's route streams it
  b_.put(2, "http://b.org/big", "text/html", big);
  serveB();
  http::Router router_a;  // node A: this engine, cu.peers = [B]
  cu::addCuRoutes(router_a, *engine_a_, peers_);
  http::ServerOptions ho = http::ServerOptions::fromConfig(Config::defaults());
  ho.listen = "127.0.0.1:0";
  http::Server a(io_.io, router_a, ho);
  ASSERT_TRUE(a.start().isOk());
  http::AdminTarget target;
  target.host = "127.0.0.1";
  target.port = std::to_string(a.port());
  auto got = http::adminRequest(target, "GET", "/cu/query?format=tar.gz", "", 20000);
  a.stop();
  ASSERT_TRUE(got.isOk()) << got.status().message();
  ASSERT_EQ(got->status, 200) << got->body.substr(0, 300);
  EXPECT_EQ(got->header("Content-Type"), "application/gzip");
  EXPECT_EQ(got->header("X-LCC-Count"), "23");
  EXPECT_EQ(got->header("X-LCC-Last-Seq").rfind("c1.", 0), 0u);
  auto tar = cutest::parseTarAnswer(got->body);
  ASSERT_TRUE(tar.ok) << tar.error;
  ASSERT_EQ(tar.members.size(), 24u);
  EXPECT_EQ(tar.manifest.urls.back().attr("c"), "http://b.org/big");
  EXPECT_EQ(tar.members[tar.members.size() - 2].data, big);
}

TEST_F(MergedPeerTest, TheRouteServesOnlyItsOwnStoreAndLiveSeqs) {
  auto status = [this](const std::string& path) {
    http::Request req;
    req.method = "GET";
    req.path = path;
    return cu::handleRecordContent(*engine_b_, req).status;
  };
  EXPECT_EQ(status("/cu/content/sb/3"), 200);
  const std::string key = http::percentEncode(encodeUrlKey(UrlKey{2, "http://b.org/2", "text/html"}));
  EXPECT_EQ(status("/cu/content/sb/3/" + key), 200) << "seq 3 with its key: one point read";
  EXPECT_EQ(status("/cu/content/sb/4/" + key), 404) << "another record's key";
  EXPECT_EQ(status("/cu/content/sb/3/%zz"), 404);
  EXPECT_EQ(status("/cu/content/sa/3"), 404) << "another store's seq";
  EXPECT_EQ(status("/cu/content/sb/99"), 404);
  EXPECT_EQ(status("/cu/content/sb/x"), 404);
  EXPECT_EQ(status("/cu/content/sb"), 404);
  b_.put(2, "http://b.org/2", "text/html", "newer");
  EXPECT_EQ(status("/cu/content/sb/3"), 404) << "replaced since: its seq is another now";
  b_.remove(2, "http://b.org/3", "text/html");
  EXPECT_EQ(status("/cu/content/sb/4"), 404);
}

}  // namespace
}  // namespace lcc
