// The connection layer on real sockets on 127.0.0.1: the write bound, deadlines,
// connection limits, graceful close, and the client's back-off. Deadlines and
// back-off run on a SimClock; the tests wait for events they can observe.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "net/acceptor.h"
#include "net/connector.h"
#include "support/loopback.h"
#include "support/sim_clock.h"
#include "support/wait.h"

namespace lcc::net {
namespace {

namespace asio = boost::asio;

using testing::waitFor;

int connectTo(std::uint16_t port) { return testing::connectLoopback(port); }

std::string readAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

struct Closed {
  CloseReason reason;
  std::string detail;
};

// An io_context on one thread, and a listener whose connections the test drives.
class NetTest : public ::testing::Test {
 protected:
  NetTest() : guard_(io_.get_executor()) {
    thread_ = std::thread([this] { io_.run(); });
  }
  ~NetTest() override {
    if (acceptor_) acceptor_->stop();
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  // Listens; each admitted connection is started with `handlers(conn)`.
  void listen(AcceptorOptions o,
              std::function<Connection::Handlers(const std::shared_ptr<Connection>&)> handlers) {
    o.listen = "127.0.0.1:0";
    o.connection.clock = &clock_;
    acceptor_ = std::make_shared<Acceptor>(io_, o, [this, handlers](std::shared_ptr<Connection> c, Admission a) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        admissions_.push_back(a);
        conns_.push_back(c);
      }
      if (a != Admission::kAdmitted) {
        c->start({});
        c->closeAfterFlush("refused\n", CloseReason::kRefused);
        return;
      }
      c->start(handlers(c));
    });
    ASSERT_TRUE(acceptor_->start().isOk());
  }
  // Handlers that record the close reason.
  Connection::Handlers recording() {
    Connection::Handlers h;
    h.on_bytes = [](std::string_view) {};
    h.on_close = [this](CloseReason r, const std::string& d) { closed_.set_value({r, d}); };
    return h;
  }
  std::size_t admitted() {
    std::lock_guard<std::mutex> lock(mu_);
    return conns_.size();
  }
  std::shared_ptr<Connection> conn(std::size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return conns_.at(i);
  }
  Closed waitClosed() {
    auto f = closed_.get_future();
    EXPECT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    return f.get();
  }

  testing::SimClock clock_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
  std::shared_ptr<Acceptor> acceptor_;
  std::mutex mu_;
  std::vector<Admission> admissions_;
  std::vector<std::shared_ptr<Connection>> conns_;
  std::promise<Closed> closed_;
};

TEST_F(NetTest, APeerThatDoesNotReadIsClosedPastTheByteBound) {
  AcceptorOptions o;
  o.connection.max_queued = 1u << 20;
  listen(o, [this](const std::shared_ptr<Connection>&) { return recording(); });
  int fd = connectTo(acceptor_->port());  // never reads
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(waitFor([&] { return admitted() == 1; }));
  auto c = conn(0);
  const std::string chunk(64 * 1024, 'x');
  // 32 MB from another thread: far more than the loopback socket buffers and the
  // bound together. The kernel takes some; once 1 MB waits, the connection ends.
  for (int i = 0; i < 512 && !c->closed(); ++i) c->send(chunk);
  Closed r = waitClosed();
  EXPECT_EQ(r.reason, CloseReason::kTooMuchQueued);
  EXPECT_NE(r.detail.find("bytes queued"), std::string::npos) << r.detail;
  ::close(fd);
}

TEST_F(NetTest, BackPressureStopsReadingInsteadOfClosing) {
  AcceptorOptions o;
  o.connection.pause_reading_above = 1;
  std::atomic<std::uint64_t> got{0};
  listen(o, [&](const std::shared_ptr<Connection>& c) {
    Connection::Handlers h = recording();
    std::weak_ptr<Connection> weak = c;
    h.on_bytes = [&got, weak](std::string_view b) {
      got += b.size();
      if (auto c = weak.lock()) c->send(std::string(b));  // echo
    };
    return h;
  });
  int fd = connectTo(acceptor_->port());
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "ping", 4), 4);
  char buf[4];
  ASSERT_EQ(::read(fd, buf, 4), 4);  // echoed once the write drained
  EXPECT_EQ(std::string(buf, 4), "ping");
  EXPECT_EQ(got.load(), 4u);
  EXPECT_FALSE(conn(0)->closed());
  ::close(fd);
  EXPECT_EQ(waitClosed().reason, CloseReason::kPeerClosed);
}

TEST_F(NetTest, IdleDeadlineClosesWithItsReason) {
  AcceptorOptions o;
  o.connection.idle = Millis(5000);
  listen(o, [this](const std::shared_ptr<Connection>&) { return recording(); });
  int fd = connectTo(acceptor_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() == 1; }));  // armed at start
  clock_.advance(Millis(4999));
  EXPECT_FALSE(conn(0)->closed());
  clock_.advance(Millis(1));
  Closed r = waitClosed();
  EXPECT_EQ(r.reason, CloseReason::kIdleTimeout);
  EXPECT_EQ(readAll(fd), "");  // closed, nothing sent
  ::close(fd);
}

TEST_F(NetTest, ReadDeadlineIsRearmedByBytesAndMayBeHandled) {
  std::atomic<int> deadlines{0};
  listen(AcceptorOptions{}, [&](const std::shared_ptr<Connection>& c) {
    Connection::Handlers h = recording();
    std::weak_ptr<Connection> weak = c;
    h.on_bytes = [weak](std::string_view) {
      if (auto c = weak.lock()) c->send("ok\n");
    };
    h.on_deadline = [&deadlines, weak](Deadline d) {
      EXPECT_EQ(d, Deadline::kRead);
      if (++deadlines > 1) return false;  // the second time: close
      if (auto c = weak.lock()) c->armDeadline(Deadline::kRead, Millis(1000));
      return true;
    };
    asio::post(c->strand(), [weak] {
      if (auto c = weak.lock()) c->armDeadline(Deadline::kRead, Millis(1000));
    });
    return h;
  });
  int fd = connectTo(acceptor_->port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() == 1; }));
  clock_.advance(Millis(600));
  ASSERT_EQ(::write(fd, "x", 1), 1);
  char buf[3];
  ASSERT_EQ(::read(fd, buf, 3), 3);  // the byte was handled: the deadline moved to 1600
  clock_.advance(Millis(600));
  EXPECT_EQ(deadlines.load(), 0);
  ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() == 1; }));
  clock_.advance(Millis(400));  // 1600: handled, re-armed
  ASSERT_TRUE(waitFor([&] { return deadlines.load() == 1; }));
  ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() == 1; }));
  clock_.advance(Millis(1000));
  EXPECT_EQ(waitClosed().reason, CloseReason::kReadTimeout);
  EXPECT_EQ(deadlines.load(), 2);
  ::close(fd);
}

TEST_F(NetTest, PerAddressLimitRefusesAndCountsThenFreesTheSlot) {
  AcceptorOptions o;
  o.max_per_address = 2;
  o.max_connections = 10;
  listen(o, [this](const std::shared_ptr<Connection>&) {
    Connection::Handlers h;
    h.on_close = [](CloseReason, const std::string&) {};
    return h;
  });
  int a = connectTo(acceptor_->port()), b = connectTo(acceptor_->port());
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 2; }));
  int c = connectTo(acceptor_->port());
  EXPECT_EQ(readAll(c), "refused\n");  // the owner answered, then closed
  EXPECT_EQ(acceptor_->refused(), 1u);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_EQ(admissions_.size(), 3u);
    EXPECT_EQ(admissions_[2], Admission::kTooManyFromAddress);
  }
  ::close(a);
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 1; }));
  int d = connectTo(acceptor_->port());
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 2; }));
  EXPECT_EQ(acceptor_->refused(), 1u);
  // The slot is taken (active()) a moment before the admission is counted.
  EXPECT_TRUE(waitFor([&] { return acceptor_->accepted() == 3u; }));
  for (int fd : {b, c, d}) ::close(fd);
}

TEST_F(NetTest, TotalLimitRefusesWithItsOwnReason) {
  AcceptorOptions o;
  o.max_connections = 1;
  listen(o, [this](const std::shared_ptr<Connection>&) { return recording(); });
  int a = connectTo(acceptor_->port());
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 1; }));
  int b = connectTo(acceptor_->port());
  EXPECT_EQ(readAll(b), "refused\n");
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_EQ(admissions_.back(), Admission::kTooManyConnections);
  ::close(a);
  ::close(b);
}

TEST_F(NetTest, EndOfInputCanBeAnsweredThenClosedAfterFlush) {
  AcceptorOptions o;
  o.connection.linger = Millis(2000);
  listen(o, [this](const std::shared_ptr<Connection>& c) {
    Connection::Handlers h = recording();
    auto got = std::make_shared<std::string>();
    std::weak_ptr<Connection> weak = c;
    h.on_bytes = [got](std::string_view b) { got->append(b); };
    h.on_eof = [got, weak] {
      if (auto c = weak.lock()) c->closeAfterFlush("you said " + *got);
      return true;
    };
    return h;
  });
  int fd = connectTo(acceptor_->port());
  ASSERT_EQ(::write(fd, "hello", 5), 5);
  ::shutdown(fd, SHUT_WR);
  EXPECT_EQ(readAll(fd), "you said hello");
  Closed r = waitClosed();
  EXPECT_EQ(r.reason, CloseReason::kLocal);
  ::close(fd);
}

TEST(BackOffTest, DoublesUpToTheCapWithInjectedJitter) {
  double next_random = 0.5;
  BackOff b({Millis(100), Millis(1000), 0.5}, [&] { return next_random; });
  std::vector<long> got;
  for (int i = 0; i < 6; ++i) got.push_back(static_cast<long>(b.next().count()));
  EXPECT_EQ(got, (std::vector<long>{75, 150, 300, 600, 750, 750}));
  b.reset();
  next_random = 0.0;
  EXPECT_EQ(b.next(), Millis(100));
  next_random = 0.999;
  EXPECT_EQ(b.next(), Millis(101));  // 200 cut by 49.95%
  BackOff fixed({Millis(1000), Millis(1000), 0.0});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fixed.next(), Millis(1000));
}

TEST_F(NetTest, ConnectorRetriesWithBackOffOnTheClockUntilThePeerListens) {
  // A port nobody listens on yet.
  std::uint16_t port;
  {
    asio::ip::tcp::acceptor probe(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = probe.local_endpoint().port();
  }
  ConnectorOptions co;
  co.what = "test link";
  co.target = "127.0.0.1:" + std::to_string(port);
  co.back_off = {Millis(100), Millis(400), 0.5};
  co.random = [] { return 0.0; };
  auto connector = std::make_shared<Connector>(io_, clock_, co);
  std::mutex m;
  std::vector<long> delays;
  std::promise<std::shared_ptr<Connection>> up;
  ASSERT_TRUE(connector
                  ->start([&](std::shared_ptr<Connection> c) { up.set_value(c); },
                          [&](const std::string&, Millis d) {
                            std::lock_guard<std::mutex> lock(m);
                            delays.push_back(static_cast<long>(d.count()));
                          })
                  .isOk());
  auto failures = [&] {
    std::lock_guard<std::mutex> lock(m);
    return delays.size();
  };
  ASSERT_TRUE(waitFor([&] { return failures() == 1; }));
  // Each step moves the clock by exactly the pending delay, so one attempt runs.
  const long steps[] = {100, 200, 400};
  for (std::size_t n = 1; n <= 3; ++n) {
    ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() == 1; }));
    clock_.advance(Millis(steps[n - 1]));
    ASSERT_TRUE(waitFor([&] { return failures() == n + 1; }));
  }
  {
    std::lock_guard<std::mutex> lock(m);
    EXPECT_EQ(delays, (std::vector<long>{100, 200, 400, 400}));
  }
  // The peer appears: the next attempt connects.
  asio::ip::tcp::acceptor server(io_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() == 1; }));
  clock_.advance(Millis(400));
  auto f = up.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto c = f.get();
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->peer().find(std::to_string(port)), std::string::npos);
  EXPECT_FALSE(HostPort::parseTarget("127.0.0.1:0").isOk());
  ConnectorOptions bad_options;
  bad_options.target = "nowhere";
  auto bad = std::make_shared<Connector>(io_, clock_, bad_options);
  EXPECT_FALSE(bad->start([](std::shared_ptr<Connection>) {}).isOk());
  connector->stop();
}

}  // namespace
}  // namespace lcc::net
