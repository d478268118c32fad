// GET /content/<file> (core/botm/content_route.h) on the real HTTP server over
// 127.0.0.1: content and headers, a large file streamed, HEAD, and every way of
// naming something that is not one of this BOT-M's content files refused with 404.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "botm/content_route.h"
#include "common/config/config.h"
#include "common/posix_env.h"
#include "common/response_head.h"
#include "lcc/support/cu_xml_format.h"
#include "botm/filename_store.h"
#include "http/http_server.h"
#include "support/http_test_server.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

using testing::httpTestRequest;
using testing::TempDir;

void writeFile(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
}

class ContentRouteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    content_ = dir_.path() + "/content";
    outside_ = dir_.path() + "/outside";
    std::filesystem::create_directories(content_);
    writeFile(outside_ + "/secret", "secret bytes");
    botm::addContentRoute(router_, {content_, "m2", 256}, metrics_);
    http::ServerOptions so = http::ServerOptions::fromConfig(Config::defaults());
    so.listen = "127.0.0.1:0";
    so.workers = 2;
    so.stream_workers = 2;
    so.stream_buffer = 64 * 1024;
    server_ = std::make_unique<http::Server>(io_, router_, so);
    ASSERT_TRUE(server_->start().isOk());
    guard_.emplace(io_.get_executor());
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  void TearDown() override {
    server_->stop();
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }
  std::string write(std::uint64_t n, const std::string& data) {
    std::string name = botm::FilenameStore::formatName(n, 256);
    writeFile(content_ + "/" + name, data);
    return name;
  }
  testing::HttpTestReply get(const std::string& target, const std::string& method = "GET") {
    return httpTestRequest(server_->port(), method, target);
  }
  std::uint64_t counter(const std::string& name) { return metrics_.counter(name, "").value(); }

  TempDir dir_;
  std::string content_, outside_;
  Metrics metrics_;
  http::Router router_;
  boost::asio::io_context io_;
  std::unique_ptr<http::Server> server_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::vector<std::thread> threads_;
};

TEST_F(ContentRouteTest, ServesAContentFileWithItsSizeAndMachine) {
  const std::string name = write(0x7b, "hello, other machine");
  EXPECT_EQ(name, "00/00/7b");
  auto r = get("/content/00/00/7b");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-lcc-machine"], "m2");
  EXPECT_EQ(r.headers["x-lcc-size"], "20");
  EXPECT_EQ(r.headers["content-type"], "application/octet-stream");
  EXPECT_EQ(r.headers["content-length"], "20") << "a small file is one whole body";
  EXPECT_EQ(r.body, "hello, other machine");

  auto head = get("/content/00/00/7b", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers["x-lcc-size"], "20");
  EXPECT_EQ(head.body, "");

  write(0x80, "");
  auto empty = get("/content/00/00/80");
  ASSERT_EQ(empty.status, 200);
  EXPECT_EQ(empty.headers["x-lcc-size"], "0");
  EXPECT_EQ(empty.headers["content-length"], "0");
  EXPECT_EQ(empty.body, "");
  EXPECT_EQ(counter("lcc_botm_content_reads_total"), 3u);

  // Just above the whole-body limit: streamed, its length announced, not chunked.
  const std::string edge(64 * 1024 + 1, 'x');
  write(0x81, edge);
  auto streamed = get("/content/00/00/81");
  ASSERT_EQ(streamed.status, 200);
  EXPECT_EQ(streamed.headers["x-lcc-size"], std::to_string(edge.size()));
  EXPECT_EQ(streamed.headers["content-length"], std::to_string(edge.size()));
  EXPECT_EQ(streamed.headers.count("transfer-encoding"), 0u);
  EXPECT_EQ(streamed.body, edge);
  auto streamed_head = get("/content/00/00/81", "HEAD");
  EXPECT_EQ(streamed_head.headers["content-length"], std::to_string(edge.size()));
  EXPECT_EQ(streamed_head.body, "");
}

// The robot's response head beside a file goes along as X-LCC-Response-Head (base64 of
// the side file), for the WARC answer of a CU on another machine.
TEST_F(ContentRouteTest, TheResponseHeadSideFileGoesAlongInAHeader) {
  const std::string name = write(0x7d, "body");
  EXPECT_EQ(get("/content/" + name).headers.count("x-lcc-response-head"), 0u);
  const std::string side = encodeResponseHead("00112233445566778899aabbccddeeff", "HTTP/1.1 200 OK\r\n\r\n");
  writeFile(content_ + "/" + responseHeadPath(name), side);
  auto r = get("/content/" + name);
  ASSERT_EQ(r.status, 200);
  std::string decoded;
  proto::Base64Decoder dec;
  ASSERT_TRUE(dec.update(r.headers["x-lcc-response-head"], decoded) && dec.finish());
  EXPECT_EQ(decoded, side);
  EXPECT_EQ(r.body, "body");
  EXPECT_EQ(get("/content/" + name + ".http").status, 404) << "side files are not content names";
  writeFile(content_ + "/" + responseHeadPath(name), std::string(kMaxHeadHeaderFile + 1, 'h'));
  EXPECT_EQ(get("/content/" + name).headers.count("x-lcc-response-head"), 0u) << "over the bound: left out";
}

// The robot's usual place for the head is the content file's attribute: it goes along
// as stored, ahead of a side file, read from the descriptor the body is served from.
TEST_F(ContentRouteTest, TheResponseHeadAttributeGoesAlongFirst) {
  const std::string name = write(0x7e, "body");
  const std::string path = content_ + "/" + name;
  const std::string stored = encodeResponseHead("00112233445566778899aabbccddeeff", "HTTP/1.1 200 OK\r\n\r\n");
  Status probe = posixEnv()->setAttribute(path, kResponseHeadAttribute, stored);
  if (probe.code() == StatusCode::kNotSupported) GTEST_SKIP() << "no attributes here: " << probe.message();
  ASSERT_TRUE(probe.isOk()) << probe.toString();
  writeFile(content_ + "/" + responseHeadPath(name), encodeResponseHead("ffff", "HTTP/1.1 404 Old\r\n\r\n"));
  auto r = get("/content/" + name);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "body");
  std::string decoded;
  proto::Base64Decoder dec;
  ASSERT_TRUE(dec.update(r.headers["x-lcc-response-head"], decoded) && dec.finish());
  EXPECT_EQ(decoded, stored);
  // An attribute over the header's bound is left out (where the file system takes one
  // that large: tmpfs), not replaced by the side file.
  if (posixEnv()->setAttribute(path, kResponseHeadAttribute, std::string(kMaxHeadHeaderFile + 1, 'h')).isOk()) {
    EXPECT_EQ(get("/content/" + name).headers.count("x-lcc-response-head"), 0u);
  }
}

TEST_F(ContentRouteTest, ALargeFileIsStreamedWhole) {
  std::mt19937 rng(3);
  std::string big(12 * 1024 * 1024 + 5, '\0');
  for (auto& c : big) c = static_cast<char>(rng() & 0xff);
  write(0x10203, big);
  auto r = get("/content/01/02/10203");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["x-lcc-size"], std::to_string(big.size()));
  EXPECT_EQ(r.headers["content-length"], std::to_string(big.size()));
  EXPECT_EQ(r.body.size(), big.size());
  EXPECT_TRUE(r.body == big);
  EXPECT_EQ(counter("lcc_botm_content_bytes_total"), big.size());
}

TEST_F(ContentRouteTest, AnythingButOneOfItsNamesIs404) {
  write(0x7b, "real");
  writeFile(content_ + "/00/00/notes.txt", "not a content name");
  writeFile(dir_.path() + "/state.txt", "above the content folder");
  for (const std::string target : {
           "/content/",
           "/content/00/00",
           "/content/00/00/",
           "/content/7b",
           "/content/00/00/7B",              // another spelling of the number
           "/content/00/00/07b",
           "/content/0/0/7b",
           "/content/00/01/7b",              // the number lives in 00/00
           "/content//00/00/7b",
           "/content/00//00/7b",
           "/content/./00/00/7b",
           "/content/00/00/./7b",
           "/content/00/00/notes.txt",
           "/content/../state.txt",
           "/content/00/../../state.txt",
           "/content/%2e%2e/state.txt",
           "/content/%2e%2e%2fstate.txt",
           "/content/00%2f00%2f7b%00",
           "/content/00/00/7b%00",
           "/content//etc/passwd",
           "/content/%2fetc%2fpasswd",
           "/content/00/00/7b/..",
           "/content/00/00/99",              // a good name, no file: absent
       }) {
    auto r = get(target);
    EXPECT_TRUE(r.status == 404 || r.status == 400) << target << " -> " << r.status;
    EXPECT_EQ(r.body.find("real"), std::string::npos) << target;
    EXPECT_EQ(r.body.find("above"), std::string::npos) << target;
  }
  EXPECT_EQ(counter("lcc_botm_content_reads_total"), 0u);
  EXPECT_EQ(get("/content/00/00/7b").status, 200) << "the good name still works";
}

TEST_F(ContentRouteTest, SymbolicLinksAreRefusedNotFollowed) {
  write(0x7b, "real");
  // A file name that is a link to a file outside the content folder.
  ASSERT_EQ(::symlink((outside_ + "/secret").c_str(), (content_ + "/00/00/7c").c_str()), 0);
  // A folder that is a link to a folder outside: 00/01/100 would resolve to outside/100.
  writeFile(outside_ + "/100", "outside file");
  ASSERT_EQ(::symlink(outside_.c_str(), (content_ + "/00/01").c_str()), 0);
  // A link inside the folder to a real content file is refused as well.
  ASSERT_EQ(::symlink((content_ + "/00/00/7b").c_str(), (content_ + "/00/00/7d").c_str()), 0);
  // Not a regular file.
  std::filesystem::create_directories(content_ + "/00/00/7e");
  for (const std::string target : {"/content/00/00/7c", "/content/00/01/100", "/content/00/00/7d",
                                   "/content/00/00/7e"}) {
    auto r = get(target);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(r.body.find("secret"), std::string::npos) << target;
    EXPECT_EQ(r.body.find("outside"), std::string::npos) << target;
  }
  EXPECT_EQ(counter("lcc_botm_content_refused_total"), 4u);
}

TEST(FilenameStoreNames, ParseNameIsTheInverseOfFormatOnly) {
  for (std::uint32_t fanout : {2u, 16u, 256u, 1000u, 65536u}) {
    for (std::uint64_t n : {0ull, 1ull, 123ull, 65535ull, 1ull << 40}) {
      const std::string name = botm::FilenameStore::formatName(n, fanout);
      EXPECT_EQ(botm::FilenameStore::parseName(name, fanout), n) << name;
    }
  }
  EXPECT_EQ(botm::FilenameStore::parseName("00/00/7b", 16), std::nullopt) << "fanout 16 spells one digit";
  EXPECT_EQ(botm::FilenameStore::parseName("0/0/7b", 256), std::nullopt);
}

}  // namespace
}  // namespace lcc
