// Robots: a RobotSession over a real socket with fetch-curl against a local HTTP
// server, and the lcc-bot program in --listen mode driven as a person would with nc.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <linux/magic.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "bot/bot_service.h"
#include "bot/robot.h"
#include "common/config/config.h"
#include "common/md5.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "common/response_head.h"
#include "lcc/support/cu_xml_format.h"
#include "fetch_curl/test_http_server.h"
#include "proto/robot.h"
#include "net/io_loop.h"
#include "support/loopback.h"
#include "support/sim_clock.h"
#include "support/stream_reader.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

using testing::SimClock;
using testing::TempDir;
using testing::TestHttpServer;
using namespace std::chrono_literals;
namespace asio = boost::asio;

// A BOT-M's <fetch> to a robot: the request with its file (FetchRequest::path).
FetchRequest robotFetch(std::uint64_t id, std::string url, std::string file, std::string mime,
                        std::optional<std::int64_t> since, std::uint64_t max_size) {
  FetchRequest f;
  f.id = id;
  f.url = std::move(url);
  f.path = std::move(file);
  f.expected_mime = std::move(mime);
  f.if_modified_since = since;
  f.max_size = max_size;
  return f;
}

// The BOT-M side of one robot connection, with blocking calls.
class BotmEnd {
 public:
  explicit BotmEnd(int fd) : fd_(fd) {}
  ~BotmEnd() {
    if (fd_ >= 0) ::close(fd_);
  }
  void send(const std::string& s) { ASSERT_EQ(::send(fd_, s.data(), s.size(), MSG_NOSIGNAL), (ssize_t)s.size()); }
  // Reads until `n` messages of the robot were seen (or the stream ended).
  std::vector<proto::FromRobotMessage> read(std::size_t n) {
    testing::readMessages(fd_, dec_, &msgs_, n);
    return msgs_;
  }
  FetchResult result(std::size_t index) {
    auto m = read(index + 1);
    EXPECT_GT(m.size(), index);
    if (m.size() <= index) return {};
    const auto* r = std::get_if<FetchResult>(&m[index]);
    EXPECT_NE(r, nullptr);
    return r ? *r : FetchResult{};
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  proto::RobotStreamDecoder dec_;
  std::vector<proto::FromRobotMessage> msgs_;
};

int connectTo(std::uint16_t port) {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(s);
    return -1;
  }
  struct timeval tv{20, 0};  // a hung robot fails the test instead of hanging it
  ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return s;
}

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The head a reader finds for `file` (as the CU does): the attribute, else the side file.
std::string headOf(const std::string& file, const std::string& md5) {
  auto attribute = posixEnv()->getAttribute(file, kResponseHeadAttribute);
  if (attribute.isOk() && attribute->has_value()) return decodeResponseHead(**attribute, md5);
  auto side = posixEnv()->readFile(file + ".http");
  return side.isOk() ? decodeResponseHead(*side, md5) : std::string();
}

long fileSystemOf(const std::string& path) {
  struct statfs fs;
  return ::statfs(path.c_str(), &fs) == 0 ? static_cast<long>(fs.f_type) : 0;
}

// A file system without attributes.
class RefusingEnv final : public EnvWrapper {
 public:
  RefusingEnv() : EnvWrapper(posixEnv()) {}
  Status setAttribute(const std::string& path, const std::string& name, std::string_view) override {
    refused++;
    return Status::notSupported(path + ": no attribute " + name + " here");
  }
  std::atomic<int> refused{0};
};

class RobotSessionTest : public ::testing::Test {
 protected:
  RobotSessionTest()
      : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}),
        acceptor_(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    auto opts = registry_.defaultOptions("fetch-curl", {{"allow_private", "true"}});
    fetcher_ = std::move(registry_.makeFetcher("fetch-curl", opts.value())).value();
    content_ = dir_.path() + "/content";
  }
  ~RobotSessionTest() override {
    if (session_) session_->stop();
    end_.reset();
    guard_.reset();
    if (thread_.joinable()) thread_.join();
    fetcher_->stop();
  }

  // Starts a robot session on an accepted connection; returns the BOT-M end.
  void startRobot(bot::RobotOptions o, Env* env = posixEnv(), bot::RobotCounters* counters = nullptr) {
    int fd = -1;
    std::thread connector([&] { fd = connectTo(acceptor_.local_endpoint().port()); });
    asio::ip::tcp::socket sock = acceptor_.accept();
    connector.join();
    ASSERT_GE(fd, 0);
    auto stream = net::Connection::overTcp(io_, std::move(sock));
    session_ = std::make_shared<bot::RobotSession>(stream, *fetcher_, *env, o, counters);
    session_->start([](const std::string&) {});
    guard_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
    end_ = std::make_unique<BotmEnd>(fd);
    auto hello = end_->read(1);
    ASSERT_EQ(hello.size(), 1u);
    ASSERT_TRUE(std::holds_alternative<proto::RobotHello>(hello[0]));
    EXPECT_EQ(std::get<proto::RobotHello>(hello[0]).slots, o.slots);
    end_->send(proto::encodeBotmRobotOpen({"m1"}));
  }

  SimClock clock_;
  TempDir dir_;
  PluginRegistry registry_;
  PluginPtr<Fetcher> fetcher_;
  TestHttpServer server_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard_;
  std::thread thread_;
  std::shared_ptr<bot::RobotSession> session_;
  std::unique_ptr<BotmEnd> end_;
  std::string content_;
  RefusingEnv refusing_env_;  // outlive the session: the destructor above stops it
  bot::RobotCounters counters_;
};

TEST_F(RobotSessionTest, WritesThroughATemporaryNameAndRenamesOnSuccess) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  o.slots = 4;
  o.content_root = content_;
  startRobot(o);
  const std::string file = content_ + "/00/00/2a";
  end_->send(proto::encodeRobotFetch(robotFetch(42, server_.url("/ok/a.htm"), file, "text/html", std::nullopt, 0)));
  auto r = end_->result(1);
  EXPECT_EQ(r.id, 42u);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.mime, "text/html");
  EXPECT_EQ(r.size, 10240u);
  EXPECT_EQ(r.md5, Md5::of(TestHttpServer::body(10240)));
  EXPECT_EQ(*r.last_modified, 1714564680);
  EXPECT_EQ(posixEnv()->readFile(file).value(), TestHttpServer::body(10240));
  EXPECT_EQ(filesIn(content_), std::vector<std::string>{"2a"});  // no temporary, no side file
  // The response head on the file, tied to this body's MD5 (common/response_head.h).
  const std::string head = headOf(file, r.md5);
  EXPECT_EQ(head.compare(0, 13, "HTTP/1.1 200 "), 0) << head;
  EXPECT_NE(head.find("\r\nContent-Length: 10240\r\n"), std::string::npos) << head;
  EXPECT_TRUE(r.response_head.empty());  // the link does not carry it
}

// Without a head nothing is removed or written: an older side file names its own
// body's MD5, so no reader pairs it with these bytes.
// A slot move's copy is an LCC's GET /cu/content/ answer: the head kept is the site's
// head it carries for those bytes, not the answer's own; a carried head of other bytes,
// or an answer of a site without one, keeps the head as fetched.
TEST(RobotHeads, ACopyKeepsTheHeadItCarriesForItsBytes) {
  const std::string md5 = "0123456789abcdef0123456789abcdef";
  const std::string site_head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nETag: \"x\"\r\n\r\n";
  auto b64 = [](const std::string& in) {
    std::string out;
    proto::Base64Encoder enc;
    enc.update(in.data(), in.size(), out);
    enc.finish(out);
    return out;
  };
  auto answer = [&](const std::string& lcc_md5, const std::string& head_md5) {
    FetchResult r;
    r.md5 = md5;
    r.response_head = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nx-lcc-md5: " + lcc_md5 +
                      "\r\nX-LCC-Response-Head: " + b64(encodeResponseHead(head_md5, site_head)) + "\r\n\r\n";
    return r;
  };
  FetchResult copy = answer(md5, md5);
  bot::adoptCarriedHead(copy);
  EXPECT_EQ(copy.response_head, site_head);
  FetchResult other = answer(md5, std::string(32, 'e'));  // the carried head is of other bytes
  const std::string own = other.response_head;
  bot::adoptCarriedHead(other);
  EXPECT_EQ(other.response_head, own);
  FetchResult unsure = answer(std::string(32, 'e'), md5);  // the answer says it is other bytes
  bot::adoptCarriedHead(unsure);
  EXPECT_NE(unsure.response_head, site_head);
  FetchResult plain;
  plain.md5 = md5;
  plain.response_head = site_head;
  bot::adoptCarriedHead(plain);
  EXPECT_EQ(plain.response_head, site_head);
}

TEST_F(RobotSessionTest, WithoutAHeadNothingIsWrittenAndAnOldSideFileStaysUnpaired) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  o.content_root = content_;
  o.max_response_head = 0;
  startRobot(o);
  const std::string file = content_ + "/00/00/2b";
  ASSERT_TRUE(posixEnv()->createDirs(content_ + "/00/00").isOk());
  const std::string old_head = encodeResponseHead("00000000000000000000000000000000", "HTTP/1.1 200 OK\r\n\r\n");
  ASSERT_TRUE(posixEnv()->writeFileAtomic(file + ".http", old_head).isOk());
  end_->send(proto::encodeRobotFetch(robotFetch(43, server_.url("/ok/a.htm"), file, "text/html", std::nullopt, 0)));
  auto r = end_->result(1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(filesIn(content_), (std::vector<std::string>{"2b", "2b.http"}));
  EXPECT_EQ(posixEnv()->getAttribute(file, kResponseHeadAttribute).value(), std::nullopt);
  EXPECT_EQ(decodeResponseHead(posixEnv()->readFile(file + ".http").value(), r.md5), "");
}

// A file system that refuses the attribute (none there, or the head over its bound)
// gets the side file <file>.http after the rename, as before attributes.
TEST_F(RobotSessionTest, ARefusedAttributeFallsBackToTheSideFile) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  o.content_root = content_;
  startRobot(o, &refusing_env_, &counters_);
  const std::string file = content_ + "/00/00/2c";
  end_->send(proto::encodeRobotFetch(robotFetch(44, server_.url("/ok/c.htm"), file, "text/html", std::nullopt, 0)));
  auto r = end_->result(1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(refusing_env_.refused.load(), 1);
  EXPECT_EQ(filesIn(content_), (std::vector<std::string>{"2c", "2c.http"}));
  EXPECT_EQ(posixEnv()->getAttribute(file, kResponseHeadAttribute).value(), std::nullopt);
  const std::string head = decodeResponseHead(posixEnv()->readFile(file + ".http").value(), r.md5);
  EXPECT_EQ(head.compare(0, 13, "HTTP/1.1 200 "), 0) << head;
  EXPECT_EQ(counters_.head_files.load(), 1u);
  EXPECT_EQ(counters_.heads_failed.load(), 0u);
}

// The real file systems: a head of about 5 KB is over ext4's attribute block and goes to
// the side file there; tmpfs (/dev/shm) keeps it on the file. Readers find it either way.
TEST_F(RobotSessionTest, ALargeHeadOnTheRealFileSystems) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  startRobot(o, posixEnv(), &counters_);
  const std::string type = "text/x-" + std::string(5000, 'l');
  std::vector<std::string> places{dir_.path()};
  std::unique_ptr<TempDir> shm;
  if (std::filesystem::is_directory("/dev/shm")) {
    shm = std::make_unique<TempDir>("/dev/shm");
    places.push_back(shm->path());
  }
  std::uint64_t id = 50;
  for (const std::string& place : places) {
    const std::string file = place + "/00/00/" + std::to_string(id);
    end_->send(proto::encodeRobotFetch(robotFetch(id, server_.url("/type/" + type), file, "", std::nullopt, 0)));
    auto r = end_->result(id - 49);
    ++id;
    ASSERT_TRUE(r.ok()) << place << ": " << r.message;
    EXPECT_NE(headOf(file, r.md5).find("Content-Type: " + type + "\r\n"), std::string::npos) << place;
    const bool on_file = posixEnv()->getAttribute(file, kResponseHeadAttribute).value().has_value();
    EXPECT_NE(on_file, posixEnv()->exists(file + ".http")) << place << ": the head is in exactly one place";
    if (fileSystemOf(place) == EXT4_SUPER_MAGIC) {
      EXPECT_FALSE(on_file) << place;
    }
    if (fileSystemOf(place) == TMPFS_MAGIC) {
      EXPECT_TRUE(on_file) << place;
    }
  }
  EXPECT_EQ(counters_.heads_failed.load(), 0u);
}

TEST_F(RobotSessionTest, FailuresLeaveNoFileAndUnchangedLeavesTheOldOneAlone) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  o.content_root = content_;
  startRobot(o);
  ASSERT_TRUE(posixEnv()->createDirs(content_ + "/00/00").isOk());
  ASSERT_TRUE(posixEnv()->writeFileAtomic(content_ + "/00/00/2", "old content").isOk());
  end_->send(proto::encodeRobotFetch(robotFetch(1, server_.url("/status/404"), content_ + "/00/00/1", "text/html", std::nullopt, 0)) +
             proto::encodeRobotFetch(robotFetch(2, server_.url("/cond/x"), content_ + "/00/00/2", "text/html", 1714564680, 0)) +
             proto::encodeRobotFetch(robotFetch(3, server_.url("/chunked/200000"), content_ + "/00/00/3", "", std::nullopt, 1000)));
  std::map<std::uint64_t, FetchResult> by_id;
  for (std::size_t i = 1; i <= 3; ++i) {
    auto r = end_->result(i);
    by_id[r.id] = r;
  }
  EXPECT_FALSE(by_id[1].ok());
  EXPECT_EQ(by_id[1].code, ErrorCode::kNotFound);
  EXPECT_EQ(by_id[1].http_status, 404);
  EXPECT_TRUE(by_id[2].ok());
  EXPECT_TRUE(by_id[2].unchanged);
  EXPECT_EQ(by_id[3].code, ErrorCode::kTooLarge);
  EXPECT_EQ(posixEnv()->readFile(content_ + "/00/00/2").value(), "old content");
  EXPECT_EQ(filesIn(content_), std::vector<std::string>{"2"});
}

TEST_F(RobotSessionTest, RefusesFilesOutsideItsContentFolder) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  o.content_root = content_;
  startRobot(o);
  end_->send(proto::encodeRobotFetch(robotFetch(1, server_.url("/ok/a"), dir_.path() + "/elsewhere", "", std::nullopt, 0)) +
             proto::encodeRobotFetch(robotFetch(2, server_.url("/ok/a"), content_ + "/../escape", "", std::nullopt, 0)) +
             proto::encodeRobotFetch(robotFetch(3, server_.url("/ok/a"), "relative/path", "", std::nullopt, 0)));
  for (std::size_t i = 1; i <= 3; ++i) {
    auto r = end_->result(i);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.code, ErrorCode::kInternal);
  }
  EXPECT_EQ(server_.requests(), 0u);
  EXPECT_FALSE(posixEnv()->exists(dir_.path() + "/elsewhere"));
  EXPECT_FALSE(posixEnv()->exists(dir_.path() + "/escape"));
}

TEST_F(RobotSessionTest, SyncedFilesAreStoredToo) {
  bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
  o.sync_files = true;
  startRobot(o);
  const std::string file = content_ + "/01/02/10205";
  end_->send(proto::encodeRobotFetch(robotFetch(7, server_.url("/ok/b"), file, "text/html", std::nullopt, 0)));
  auto r = end_->result(1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(posixEnv()->fileSize(file).value(), 10240u);
}

// An lcc-bot --listen on a free port, and a BOT-M end connected to it.
struct ListeningBot {
  pid_t pid = -1;
  int fd = -1;
};

ListeningBot startListeningBot() {
  ListeningBot bot;
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(probe);
  const std::string port = std::to_string(ntohs(a.sin_port));
  bot.pid = ::fork();
  if (bot.pid == 0) {
    std::string bin = std::string(LCC_BIN_DIR) + "/lcc-bot";
    ::execl(bin.c_str(), bin.c_str(), "--listen", port.c_str(), "--slots", "3", "--fetcher", "fetch-stub",
            "--plugin-dir", LCC_PLUGIN_DIR, "--name", "by-hand", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (bot.pid > 0 && (bot.fd = connectTo(static_cast<std::uint16_t>(std::stoi(port)))) < 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  if (bot.fd >= 0) {  // a robot that never answers fails the test instead of hanging it
    timeval limit{20, 0};
    ::setsockopt(bot.fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  }
  return bot;
}

// lcc-bot's exit status, or -1 when it did not exit normally.
int exitStatusOf(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(LccBot, ListenModeCanBeDrivenByHandAndEndsWithTheStream) {
  TempDir dir;
  ListeningBot bot = startListeningBot();
  ASSERT_GE(bot.pid, 0);
  ASSERT_GE(bot.fd, 0) << "lcc-bot did not listen";
  BotmEnd end(bot.fd);
  auto hello = end.read(1);
  ASSERT_FALSE(hello.empty());
  // lcc-bot offers compact frames (node.link_frames, on by default); a person who does
  // not answer frames="1" keeps the stream in XML.
  EXPECT_EQ(std::get<proto::RobotHello>(hello[0]), (proto::RobotHello{3, "by-hand", proto::kFramesVersion}));
  // What a person types, with another prefix and line breaks.
  const std::string file = dir.path() + "/00/00/1";
  end.send("<x:botm xmlns:x=\"http://www.lococa.org/1.0/robot\" machine=\"m1\">\n"
           "<fetch id=\"1\" url=\"http://h.test/a?stub_size=33\" file=\"" + file + "\" mime=\"text/html\"/>\n");
  auto r = end.result(1);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.size, 33u);
  EXPECT_EQ(posixEnv()->fileSize(file).value(), 33u);
  end.send("</x:botm>\n");
  auto all = end.read(3);  // the robot closes its stream too
  EXPECT_TRUE(std::holds_alternative<proto::RobotEnd>(all.back()));
  // 0, and under a leak-checking build no leak report either (which makes it 1).
  EXPECT_EQ(exitStatusOf(bot.pid), 0);
}

TEST(LccBot, ListenModeEndsItsStreamAndExitsOnSigterm) {
  ListeningBot bot = startListeningBot();
  ASSERT_GE(bot.pid, 0);
  ASSERT_GE(bot.fd, 0) << "lcc-bot did not listen";
  BotmEnd end(bot.fd);
  ASSERT_FALSE(end.read(1).empty());
  end.send("<x:botm xmlns:x=\"http://www.lococa.org/1.0/robot\" machine=\"m1\">\n");
  ::kill(bot.pid, SIGTERM);
  auto all = end.read(2);  // the hello, then the robot's end of the stream
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(std::holds_alternative<proto::RobotEnd>(all.back()));
  EXPECT_EQ(exitStatusOf(bot.pid), 0);
}

}  // namespace
}  // namespace lcc

namespace lcc {
namespace {

// The bot role as lccd runs it: bot.robots robots sharing the node's fetcher.
TEST(BotService, RunsTheConfiguredRobotsAgainstTheRobotPort) {
  SimClock clock;
  TempDir dir;
  PluginRegistry registry(LCC_PLUGIN_DIR, HostContext{&clock, posixEnv(), nullptr, dir.path(), "m1"});
  auto fetcher = std::move(registry.makeFetcher("fetch-stub", registry.defaultOptions("fetch-stub").value())).value();
  // A BOT-M stand-in listening on the robot port.
  std::uint16_t robot_port = 0;
  int lfd = testing::listenLoopback(&robot_port);
  ASSERT_GE(lfd, 0);
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("node: {data_dir: " + dir.path() + ", machine_id: m1}\nlisten: {robots: 127.0.0.1:" +
                                  std::to_string(robot_port) + "}\nbot: {robots: 2, slots: 3}\n",
                              "t.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk());
  asio::io_context io;
  Metrics metrics;
  NodeContext node;
  node.config = &cfg.value();
  node.io = &io;
  node.clock = &clock;
  node.env = posixEnv();
  node.metrics = &metrics;
  node.data_dir = dir.path();
  node.machine_id = "m1";
  node.fetcher = fetcher.get();
  auto made = bot::makeBotService(node);
  ASSERT_TRUE(made.isOk()) << made.status().toString();
  ServicePtr service = std::move(made).value();
  ASSERT_TRUE(service->start().isOk());
  auto guard = asio::make_work_guard(io);
  std::thread t([&] { io.run(); });
  std::vector<std::unique_ptr<BotmEnd>> robots;
  for (int i = 0; i < 2; ++i) {
    int fd = ::accept(lfd, nullptr, nullptr);
    ASSERT_GE(fd, 0);
    struct timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    robots.push_back(std::make_unique<BotmEnd>(fd));
    auto hello = robots.back()->read(1);
    ASSERT_EQ(hello.size(), 1u);
    EXPECT_EQ(std::get<proto::RobotHello>(hello[0]).slots, 3u);
    robots.back()->send(proto::encodeBotmRobotOpen({"m1"}));
  }
  // Robots of the local BOT-M only write below its content folder.
  const std::string file = dir.path() + "/content/00/00/5";
  robots[1]->send(proto::encodeRobotFetch(robotFetch(5, "http://h.test/x?stub_size=12", file, "", std::nullopt, 0)) +
                  proto::encodeRobotFetch(robotFetch(6, "http://h.test/x", dir.path() + "/outside", "", std::nullopt, 0)));
  auto r5 = robots[1]->result(1);
  auto r6 = robots[1]->result(2);
  if (r5.id == 6) std::swap(r5, r6);
  ASSERT_TRUE(r5.ok()) << r5.message;
  EXPECT_EQ(posixEnv()->fileSize(file).value(), 12u);
  EXPECT_FALSE(r6.ok());
  nlohmann::json st;
  service->status(st);
  EXPECT_EQ(st["connected"], 2);
  EXPECT_EQ(st["fetched"], 1);
  service->stop();
  for (auto& r : robots) {
    auto all = r->read(100);  // until the robot closed its stream
    EXPECT_TRUE(std::holds_alternative<proto::RobotEnd>(all.back()));
  }
  robots.clear();  // the BOT-M end closes too: the robots' connections are done
  guard.reset();
  net::stopWhenDry(io, std::chrono::seconds(5));
  t.join();
  fetcher->stop();
  ::close(lfd);
}

}  // namespace
}  // namespace lcc
