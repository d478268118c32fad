// botm_service_fixture.h — the BOT-M role over real sockets, for tests: a fake url
// source (what the QM is to a BOT-M), a node running only the botm role, and the test
// fixture with fetch-stub robots on simulated time. Shared by botm_service_test and
// botm_object_store_test.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bot/robot.h"
#include "botm/botm_service.h"
#include "common/config/config.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "http/http_server.h"
#include "net/io_loop.h"
#include "net/local_listeners.h"
#include "proto/botm_link.h"
#include "proto/link_frames.h"
#include "support/loopback.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

// A source's <fetch> (no size cap, no md5, redirects under the prefix rule).
FetchRequest linkFetch(std::uint64_t id, std::string url, std::string mime, std::optional<std::int64_t> since) {
  FetchRequest f;
  f.id = id;
  f.url = std::move(url);
  f.expected_mime = std::move(mime);
  f.if_modified_since = since;
  return f;
}

using testing::SimClock;
using testing::TempDir;
using namespace std::chrono_literals;

std::uint16_t freePort() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 20s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// A url source (what the QM is to a BOT-M): accepts one BOT-M, records what it says.
class FakeSource {
 public:
  // frames: answers the BOT-M's offer of compact frames (link_frames.h) and writes them.
  explicit FakeSource(bool frames = false) : form_(frames ? proto::LinkForm::kFrames : proto::LinkForm::kXml) {
    fd_ = testing::listenLoopback(&port_);
    EXPECT_GE(fd_, 0);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeSource() {
    ::shutdown(fd_, SHUT_RDWR);
    {
      std::lock_guard<std::mutex> l(mu_);
      if (conn_ >= 0) ::shutdown(conn_, SHUT_RDWR);
    }
    thread_.join();
    ::close(fd_);
    if (conn_ >= 0) ::close(conn_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  void send(const std::string& bytes) {
    std::lock_guard<std::mutex> l(mu_);
    ASSERT_GE(conn_, 0);
    ASSERT_EQ(::send(conn_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  }
  void sendMessages(const std::vector<proto::SourceMessage>& ms) { send(proto::encodeMessages(ms, form_)); }
  bool framed() {  // the BOT-M switched to frames
    std::lock_guard<std::mutex> l(mu_);
    return framed_;
  }
  template <typename Pred>
  bool waitFor(Pred pred, std::chrono::milliseconds limit = 20s) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, limit, [&] { return pred(msgs_); });
  }
  template <typename T>
  std::vector<T> all() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<T> out;
    for (const auto& m : msgs_) {
      if (const T* t = std::get_if<T>(&m)) out.push_back(*t);
    }
    return out;
  }
  template <typename T>
  static std::size_t count(const std::vector<proto::BotmMessage>& ms) {
    std::size_t n = 0;
    for (const auto& m : ms) n += std::holds_alternative<T>(m) ? 1 : 0;
    return n;
  }
  template <typename T>
  static std::optional<T> last(const std::vector<proto::BotmMessage>& ms) {
    for (auto it = ms.rbegin(); it != ms.rend(); ++it) {
      if (const T* t = std::get_if<T>(&*it)) return *t;
    }
    return std::nullopt;
  }
  // Round trip: everything the BOT-M sent before the pong has arrived.
  void sync() {
    std::size_t pongs = all<proto::LinkPong>().size();
    sendMessages({proto::LinkPing{}});
    ASSERT_TRUE(waitFor([&](const auto& ms) { return count<proto::LinkPong>(ms) > pongs; }));
  }

 private:
  void run() {
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;
    {
      std::lock_guard<std::mutex> l(mu_);
      conn_ = c;
    }
    const bool frames = form_ == proto::LinkForm::kFrames;
    std::string open = proto::encodeSourceOpen({"qm", frames ? 1u : 0u}) + (frames ? proto::encodeFramesSwitch() : "");
    ::send(c, open.data(), open.size(), MSG_NOSIGNAL);
    proto::BotmStreamDecoder dec;
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      std::vector<proto::BotmMessage> got;
      bool ok = dec.feed(std::string_view(buf, static_cast<std::size_t>(n)), &got);
      std::lock_guard<std::mutex> l(mu_);
      framed_ = dec.framed();
      for (auto& m : got) msgs_.push_back(std::move(m));
      if (!ok) msgs_.push_back(proto::LinkEnd{});
      cv_.notify_all();
      if (!ok) return;
    }
  }

  int fd_ = -1;
  int conn_ = -1;
  std::uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<proto::BotmMessage> msgs_;
  const proto::LinkForm form_;
  bool framed_ = false;
  std::thread thread_;
};

// One lccd-like node running only the botm role (and its HTTP port when `with_http`).
class BotmNode {
 public:
  // `local`: the process's in-process listeners (a QM port listening there links in process).
  BotmNode(SimClock& clock, const std::string& yaml, bool with_http = false, net::LocalListeners* local = nullptr) {
    std::vector<ConfigProblem> problems;
    auto cfg = Config::loadText(yaml, "test.yaml", {}, &problems);
    for (const auto& p : problems) ADD_FAILURE() << p.toString();
    cfg_ = std::make_unique<Config>(std::move(cfg).value());
    node_.config = cfg_.get();
    node_.io = &io_;
    node_.clock = &clock;
    node_.env = posixEnv();
    node_.metrics = &metrics_;
    node_.data_dir = dir_.path();
    node_.machine_id = cfg_->getString("node.machine_id");
    if (with_http) node_.http = &router_;
    node_.local_listeners = local;
    auto made = botm::makeBotmService(node_);
    EXPECT_TRUE(made.isOk()) << made.status().toString();
    service_ = std::move(made).value();
    Status s = service_->start();
    EXPECT_TRUE(s.isOk()) << s.toString();
    if (with_http) {
      http::ServerOptions so = http::ServerOptions::fromConfig(Config::defaults());
      so.listen = cfg_->getString("listen.http");
      http_ = std::make_unique<http::Server>(io_, router_, so);
      Status hs = http_->start();
      EXPECT_TRUE(hs.isOk()) << hs.toString();
    }
    guard_.emplace(io_.get_executor());
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~BotmNode() {
    if (http_) http_->stop();
    service_->stop();
    guard_.reset();
    net::stopWhenDry(io_, std::chrono::seconds(5));
    for (auto& t : threads_) t.join();
    service_.reset();
  }
  std::int64_t gauge(const std::string& name) { return metrics_.snapshot()[name]; }
  nlohmann::json status() const {
    nlohmann::json j;
    service_->status(j);
    return j;
  }
  std::string content() const { return dir_.path() + "/content"; }
  const std::string& dataDir() const { return dir_.path(); }
  boost::asio::io_context& io() { return io_; }

 private:
  TempDir dir_;
  boost::asio::io_context io_;
  Metrics metrics_;
  std::unique_ptr<Config> cfg_;
  http::Router router_;
  std::unique_ptr<http::Server> http_;
  NodeContext node_;
  ServicePtr service_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::vector<std::thread> threads_;
};

// `listen_extra` / `botm_extra`: more "  key: value\n" lines for those sections.
std::string leafYaml(const std::string& machine, const std::string& source, std::uint16_t robots,
                     const std::string& listen_extra = "", const std::string& botm_extra = "") {
  return "node:\n  machine_id: " + machine + "\nlisten:\n  robots: 127.0.0.1:" + std::to_string(robots) + "\n" +
         listen_extra + "botm:\n  source: " + source + "\n  reconnect_min: 20ms\n  reconnect_max: 50ms\n" +
         botm_extra;
}

class BotmServiceTest : public ::testing::Test {
 protected:
  BotmServiceTest() : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), nullptr, tmp_.path(), "m1"}) {}

  PluginPtr<Fetcher> stub() {
    auto opts = registry_.defaultOptions("fetch-stub");
    EXPECT_TRUE(opts.isOk()) << opts.status().toString();
    auto f = registry_.makeFetcher("fetch-stub", opts.value());
    EXPECT_TRUE(f.isOk()) << f.status().toString();
    return std::move(f).value();
  }

  std::shared_ptr<bot::RobotClient> robot(BotmNode& node, Fetcher& f, std::uint16_t port, std::uint32_t slots,
                                          net::LocalListeners* local = nullptr, bool frames = true) {
    bot::RobotOptions o = bot::RobotOptions::fromConfig(Config::defaults());
    o.frames = frames;
    o.slots = slots;
    o.name = "test-robot";
    auto c = std::make_shared<bot::RobotClient>(node.io(), clock_, f, *posixEnv(), "127.0.0.1:" + std::to_string(port),
                                                o, Millis(20), Millis(50), nullptr, local);
    c->start();
    return c;
  }

  SimClock clock_;
  TempDir tmp_;
  PluginRegistry registry_;
};

}  // namespace
}  // namespace lcc
