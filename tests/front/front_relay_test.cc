// The front end's CP port on real sockets (127.0.0.1) with a stand-in sub-LCC UNS: the
// init passed on with the sub-LCC's id, the rest and the answers unchanged both ways
// (over 1 MiB one way, 2 MiB the other, through a 16 KiB relay buffer), 110 for an
// unknown provider, 130 for a sub-LCC that refuses connections, and a CP that leaves
// mid-set: both sides closed at front.idle_timeout (SimClock, advanced by the test).
// The PMDB is on the fixture's PostgreSQL (front_db.h).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>

#include "common/posix_env.h"
#include "contract/server_store_options.h"
#include "front/relay.h"
#include "proto/cp_uns.h"
#include "support/loopback.h"
#include "support/sim_clock.h"
#include "support/wait.h"

namespace lcc::front {
namespace {

std::string readAll(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

bool sendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A sub-LCC's UNS in one thread: takes one connection, reads until `until` has come
// (or EOF), answers `reply` and closes.
class FakeUns {
 public:
  FakeUns(std::string until, std::string reply) : until_(std::move(until)), reply_(std::move(reply)) {
    fd_ = testing::listenLoopback(&port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeUns() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  std::string got() {
    thread_.join();
    thread_ = std::thread([] {});
    return got_;
  }
  bool sawEof() const { return eof_; }
  std::size_t received() const { return received_; }

 private:
  void serve() {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    char buf[65536];
    while (got_.find(until_) == std::string::npos) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = n == 0;
        break;
      }
      got_.append(buf, static_cast<std::size_t>(n));
      received_ += static_cast<std::size_t>(n);
    }
    if (!eof_) sendAll(c, reply_);
    ::close(c);
  }
  std::string until_, reply_, got_;
  std::atomic<bool> eof_{false};
  std::atomic<std::size_t> received_{0};
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

class FrontRelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::serverStoreSkipReason("storage-postgres"); !why.empty()) GTEST_SKIP() << why;
    refusing_ = testing::listenLoopback(&refusing_port_);
    ::close(refusing_);  // nothing listens there now: a connect is refused
  }
  void TearDown() override {
    if (relay_) relay_->stop();
    work_.reset();
    if (io_thread_.joinable()) io_thread_.join();
  }
  // The front end with sub-LCC east at `uns_port` (provider 7 there is our `id_`) and
  // west at a port where nothing listens (our `west_id_`).
  void startFront(std::uint16_t uns_port) {
    FrontOptions o;
    o.conninfo = std::getenv("LCC_TEST_PG_CONNINFO");
    o.schema = testing::freshSchemaName();
    o.lccs = {{"east", "127.0.0.1:" + std::to_string(uns_port), "127.0.0.1:1", "/none", ""},
              {"west", "127.0.0.1:" + std::to_string(refusing_port_), "127.0.0.1:1", "/none", ""}};
    o.request_timeout = o.cache_ttl = o.init_timeout = o.connect_timeout = o.idle_timeout = Millis(60000);
    o.cache_entries = 100;
    o.init_max_bytes = 4096;
    o.relay_buffer = 16 * 1024;
    o.listen = "127.0.0.1:0";
    o.max_connections = o.max_connections_per_ip = 16;
    auto db = FrontDb::open(o);
    ASSERT_TRUE(db.isOk()) << db.status().message();
    id_ = db.value()->reserve("east").value();
    ASSERT_TRUE(db.value()->markPlaced(id_, 7).isOk());
    west_id_ = db.value()->reserve("west").value();
    ASSERT_TRUE(db.value()->markPlaced(west_id_, 1).isOk());
    moving_id_ = db.value()->reserve("east").value();  // a provider whose slot is being moved
    ASSERT_TRUE(db.value()->markPlaced(moving_id_, 8).isOk());
    ASSERT_TRUE(db.value()->setMoving(moving_id_).isOk());
    core_ = std::make_unique<FrontCore>(o, std::move(db).value(), posixEnv(), &clock_);
    relay_ = std::make_unique<FrontRelay>(io_, *core_, &clock_, nullptr);
    ASSERT_TRUE(relay_->start().isOk());
    io_thread_ = std::thread([this] { io_.run(); });
  }
  // One CP session: sends `bytes`, then reads the answer to the end.
  std::string session(const std::string& bytes) {
    const int fd = testing::connectLoopback(relay_->port());
    EXPECT_GE(fd, 0);
    std::thread writer([fd, &bytes] { sendAll(fd, bytes); });
    std::string answer = readAll(fd);
    writer.join();
    ::close(fd);
    return answer;
  }

  testing::SimClock clock_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_ =
      std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(io_.get_executor());
  std::thread io_thread_;
  std::unique_ptr<FrontCore> core_;
  std::unique_ptr<FrontRelay> relay_;
  std::uint64_t id_ = 0, west_id_ = 0, moving_id_ = 0;
  int refusing_ = -1;
  std::uint16_t refusing_port_ = 0;
};

std::string bigSet(std::size_t urls) {
  std::string s = proto::encodeSetBegin(false, "http://x.org/");
  for (std::size_t i = 0; i < urls; ++i) s += proto::encodeUrlElement({{"c", "p" + std::to_string(i)}, {"m", "text/html"}});
  return s + proto::encodeSetEnd();
}

TEST_F(FrontRelayTest, TheInitGoesOnWithTheSubLccsIdAndEverythingElseUnchangedBothWays) {
  const std::string set = bigSet(40000);  // more than 1 MiB
  ASSERT_GT(set.size(), 1u << 20);
  const std::string reply = proto::encodeInitRejected(ErrorCode::kNone, std::string(2u << 20, 'r'));
  FakeUns uns("</lococa:set>", reply);
  startFront(uns.port());
  const std::string answer = session(proto::encodeInit(std::to_string(id_), "pw<&") + set);
  EXPECT_EQ(answer.size(), reply.size());
  EXPECT_TRUE(answer == reply) << "the sub-LCC's answer reaches the CP unchanged";
  const std::string got = uns.got();
  const std::string init = proto::encodeInit("7", "pw<&");
  ASSERT_EQ(got.substr(0, init.size()), init);
  EXPECT_EQ(got.substr(init.size()).find(set), 1u) << "the init's newline, then the set as sent";
}

TEST_F(FrontRelayTest, AnUnknownProviderIs110AndNoSubLccIsAsked) {
  FakeUns uns("</lococa:set>", "x");
  startFront(uns.port());
  const std::string answer = session(proto::encodeInit(std::to_string(id_ + 1000), "pw"));
  EXPECT_NE(answer.find("init_rejected"), std::string::npos) << answer;
  EXPECT_NE(answer.find("code=\"110\""), std::string::npos) << answer;
  EXPECT_EQ(uns.received(), 0u);
}

TEST_F(FrontRelayTest, ASubLccThatRefusesConnectionsIs130) {
  FakeUns uns("</lococa:set>", "x");
  startFront(uns.port());
  const std::string answer = session(proto::encodeInit(std::to_string(west_id_), "pw") + bigSet(3));
  EXPECT_NE(answer.find("code=\"130\""), std::string::npos) << answer;
}

TEST_F(FrontRelayTest, AProviderBeingMovedIs130AndNoSubLccIsAsked) {
  FakeUns uns("</lococa:set>", "x");
  startFront(uns.port());
  const std::string answer = session(proto::encodeInit(std::to_string(moving_id_), "pw") + bigSet(3));
  EXPECT_NE(answer.find("code=\"130\""), std::string::npos) << answer;
  EXPECT_EQ(uns.received(), 0u) << "frozen: not relayed to the sub-LCC it is leaving";
}

TEST_F(FrontRelayTest, ACpLeavingMidSetEndsBothSidesAtTheIdleTimeout) {
  FakeUns uns("never comes", "x");
  startFront(uns.port());
  const int fd = testing::connectLoopback(relay_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(sendAll(fd, proto::encodeInit(std::to_string(id_), "pw") + proto::encodeSetBegin(false, "")));
  ::close(fd);
  ASSERT_TRUE(testing::waitFor([&] { return uns.received() > 0; }));
  clock_.advance(Millis(60001));      // front.idle_timeout: no byte either way since
  const std::string got = uns.got();  // returns once the fake saw the end of the stream
  EXPECT_TRUE(uns.sawEof());
  EXPECT_NE(got.find("<lococa:set"), std::string::npos);
}

}  // namespace
}  // namespace lcc::front
