// Runs the C test program (capi_test.c) and the example (core/capi/example.c) against
// two real CU servers — a split LCC seen as one — started here on port 0 over
// storage-memory with real content files.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <fstream>
#include <thread>

#include "common/config/config.h"
#include "cu/cu_server.h"
#include "cu_test_util.h"
#include "support/test_pki.h"

namespace lcc {
namespace {

using cutest::CuWorld;

std::string fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

struct Node {
  CuWorld world;
  std::unique_ptr<cu::QueryEngine> engine;
  std::unique_ptr<cu::CuServer> server;
  std::map<std::string, std::pair<ContentRecord, std::string>> live;  // url -> latest record and content
};

class CapiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 0; n < 2; ++n) {
      auto node = std::make_unique<Node>();
      node->engine = node->world.makeEngine();
      cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
      o.listen = "127.0.0.1:0";
      if (n == 0) {  // endpoint 0 also runs TLS; its certificate names localhost only
        ASSERT_TRUE(pki_.ok() && pki_.issue("server", "DNS:localhost"));
        auto ctx = net::makeServerContext({pki_.cert("server"), pki_.key("server"), "", net::TlsVersion::k12});
        ASSERT_TRUE(ctx.isOk()) << ctx.status().toString();
        o.listen_tls = "127.0.0.1:0";
        o.tls = std::make_shared<net::TlsContextSlot>(ctx.value());
      }
      node->server = std::make_unique<cu::CuServer>(io_, *node->engine, node->world.clock(), o);
      ASSERT_TRUE(node->server->start().isOk());
      nodes_.push_back(std::move(node));
    }
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
    // Endpoint 0 holds providers 1 and 2, endpoint 1 holds provider 3.
    for (int i = 0; i < 12; ++i) put(0, 1 + i % 2, "http://a.org/" + std::to_string(i) + ".html", std::string(i * 37 + 1, 'a' + i));
    for (int i = 0; i < 5; ++i) put(1, 3, "http://c.org/" + std::to_string(i) + ".txt", "text " + std::to_string(i));
    remove(0, 1, "http://a.org/4.html");
  }

  void TearDown() override {
    for (auto& n : nodes_) n->server->stop();
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }

  void put(int node, ProviderId pid, const std::string& url, const std::string& content) {
    auto mime = url.substr(url.size() - 4) == ".txt" ? "text/plain" : "text/html";
    auto r = nodes_[node]->world.put(pid, url, mime, content);
    nodes_[node]->live[url] = {r, content};
  }
  void remove(int node, ProviderId pid, const std::string& url) {
    auto r = nodes_[node]->world.remove(pid, url, url.substr(url.size() - 4) == ".txt" ? "text/plain" : "text/html");
    nodes_[node]->live[url] = {r, ""};
  }

  std::string endpoints() const {
    return "127.0.0.1:" + std::to_string(nodes_[0]->server->port()) + ",127.0.0.1:" +
           std::to_string(nodes_[1]->server->port());
  }

  // What the C program must see: per endpoint, in seq order, records after since[i].
  std::string script(const std::vector<ChangeSeq>& since, bool content, bool deleted) {
    std::string s = "endpoints " + endpoints() + "\n";
    if (content) s += "content\n";
    if (deleted) s += "deleted\n";
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      s += "since " + std::to_string(i) + " " + std::to_string(since[i]) + "\n";
      std::map<ChangeSeq, std::pair<ContentRecord, std::string>> by_seq;
      for (const auto& [url, rc] : nodes_[i]->live) {
        if (rc.first.seq > since[i] && (deleted || !rc.first.deleted)) by_seq[rc.first.seq] = rc;
      }
      for (const auto& [seq, rc] : by_seq) {
        const ContentRecord& r = rc.first;
        s += "rec " + std::to_string(i) + " " + std::to_string(seq) + " " + std::to_string(r.key.pid) + " " +
             (r.deleted ? "1" : "0") + " " + std::to_string(r.size) + " " +
             (content && !r.deleted ? fnv(rc.second) : std::string("-")) + " " + r.key.url + "\n";
      }
      s += "last " + std::to_string(i) + " " + std::to_string(maxSeq(i)) + "\n";
      s += "count " + std::to_string(i) + " " + std::to_string(by_seq.size()) + "\n";
    }
    return s;
  }

  ChangeSeq maxSeq(std::size_t i) { return nodes_[i]->world.store().maxSeq().value(); }

  int runC(const std::string& text) {
    const std::string path = nodes_[0]->world.dataDir() + "/script.txt";
    std::ofstream(path) << text;
    return std::system((std::string(LCC_CAPI_TEST_BIN) + " " + path).c_str());
  }

  testing::TestPki pki_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ = boost::asio::make_work_guard(io_);
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

TEST_F(CapiTest, MergedViewWithContentThenIncrementalChanges) {
  ASSERT_EQ(runC(script({0, 0}, true, true)), 0);
  const std::vector<ChangeSeq> since = {maxSeq(0), maxSeq(1)};
  // Changes on both sub-LCCs: an update, a removal, a new URL.
  put(0, 2, "http://a.org/1.html", "changed content");
  remove(1, 3, "http://c.org/2.txt");
  put(1, 3, "http://c.org/new.txt", "new");
  ASSERT_EQ(runC(script(since, true, true)), 0);
  // Without removals and without content.
  ASSERT_EQ(runC(script(since, false, false)), 0);
}

TEST_F(CapiTest, ProgramsSeeFailuresAsErrors) {
  // The script expects records that do not exist: the C program must notice and fail.
  std::string wrong = script({0, 0}, true, true);
  wrong.replace(wrong.find("rec 0 1 "), 8, "rec 0 2 ");
  EXPECT_NE(runC(wrong), 0);
  // An endpoint nobody listens on.
  EXPECT_EQ(runC("endpoints 127.0.0.1:1\nexpect-error -2\n"), 0);
}

TEST_F(CapiTest, ATlsEndpointGivesTheSameRecordsAndRefusesABadServer) {
  const std::string plain0 = "127.0.0.1:" + std::to_string(nodes_[0]->server->port());
  const std::string port = std::to_string(nodes_[0]->server->tlsPort());
  std::string s = script({0, 0}, true, true);
  s.replace(s.find(plain0), plain0.size(), "tls://localhost:" + port);
  s.insert(s.find('\n') + 1, "tls " + pki_.ca() + "\n");
  ASSERT_EQ(runC(s), 0);
  // Another CA; the address where the certificate names localhost; no CA given (the
  // system's do not know ours).
  ASSERT_TRUE(pki_.otherCa("other"));
  EXPECT_EQ(runC("endpoints tls://localhost:" + port + "\ntls " + pki_.cert("other") +
                 "\nexpect-error -2\nexpect-text unable to get local issuer certificate\n"),
            0);
  EXPECT_EQ(runC("endpoints tls://127.0.0.1:" + port + "\ntls " + pki_.ca() +
                 "\nexpect-error -2\nexpect-text IP address mismatch\n"),
            0);
  EXPECT_EQ(runC("endpoints tls://localhost:" + port + "\nexpect-error -2\nexpect-text certificate verify failed\n"),
            0);
}

TEST_F(CapiTest, TheExampleMirrorsIncrementally) {
  const std::string state = nodes_[0]->world.dataDir() + "/state";
  const std::string out1 = nodes_[0]->world.dataDir() + "/out1", out2 = nodes_[0]->world.dataDir() + "/out2";
  const std::string cmd = std::string(LCC_CAPI_EXAMPLE_BIN) + " " + endpoints() + " " + state;
  ASSERT_EQ(std::system((cmd + " > " + out1).c_str()), 0);
  put(1, 3, "http://c.org/0.txt", "zero, again");
  ASSERT_EQ(std::system((cmd + " > " + out2).c_str()), 0);
  std::ifstream f1(out1), f2(out2), fs(state);
  std::string all((std::istreambuf_iterator<char>(f1)), {}), changes((std::istreambuf_iterator<char>(f2)), {});
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 17);  // 11 + 5 stored, 1 removal
  EXPECT_EQ(changes, "stored   http://c.org/0.txt (text/plain) seq 6, 11 bytes\n");
  ChangeSeq s0 = 0, s1 = 0;
  fs >> s0 >> s1;
  EXPECT_EQ(s0, maxSeq(0));
  EXPECT_EQ(s1, maxSeq(1));
}

}  // namespace
}  // namespace lcc
