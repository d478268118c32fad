// Refusals before any work (issue 25), on real sockets on 127.0.0.1 with clients bound
// to 127.0.0.2 and 127.0.0.3 so the listener tells them apart: a TLS listener closes a
// connection past its per-address limit at once, before the handshake; a refused plain
// connection handed to its owner is closed after kRefusalLifetime whatever the owner
// does, and past kMaxAnsweredRefusals of them a refused connection is closed at once;
// the descriptor budget refuses past its limit on every listener, and a place
// given back is taken again. Deadlines run on a SimClock.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <thread>

#include "net/acceptor.h"
#include "net/descriptor_budget.h"
#include "support/loopback.h"
#include "support/sim_clock.h"
#include "support/wait.h"
#include "support/test_pki.h"

namespace lcc::net {
namespace {

namespace asio = boost::asio;

using testing::waitFor;

int connectFrom(std::uint16_t port, const char* source) {
  int fd = testing::connectLoopbackFrom(port, source);
  EXPECT_GE(fd, 0) << "connect from " << source;
  timeval tv{5, 0};  // the old code kept a refused connection open: the read times out
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// True when the server closed the connection (EOF or reset); false when the read timed
// out (the connection is still open) or bytes came.
bool closedByServer(int fd) {
  char buf[256];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
    // Bytes (a plain refusal's answer): read on to the end.
  }
}

class AcceptorLimitsTest : public ::testing::Test {
 protected:
  AcceptorLimitsTest() : guard_(io_.get_executor()) {
    thread_ = std::thread([this] { io_.run(); });
  }
  ~AcceptorLimitsTest() override {
    if (acceptor_) acceptor_->stop();
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  // Listens; the owner records what it is handed and starts it without answering.
  void listen(AcceptorOptions o) {
    o.listen = "127.0.0.1:0";
    o.connection.clock = &clock_;
    o.on_refused = [this](Admission a) {
      std::lock_guard<std::mutex> lock(mu_);
      refused_here_.push_back(a);
    };
    acceptor_ = std::make_shared<Acceptor>(io_, o, [this](std::shared_ptr<Connection> c, Admission a) {
      Connection::Handlers h;
      h.on_bytes = [](std::string_view) {};
      h.on_close = [](CloseReason, const std::string&) {};
      c->start(std::move(h));
      std::lock_guard<std::mutex> lock(mu_);
      handed_.push_back(a);
      conns_.push_back(std::move(c));
    });
    ASSERT_TRUE(acceptor_->start().isOk());
  }
  std::vector<Admission> handed() {
    std::lock_guard<std::mutex> lock(mu_);
    return handed_;
  }
  std::vector<Admission> refusedHere() {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_here_;
  }

  testing::SimClock clock_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
  std::shared_ptr<Acceptor> acceptor_;
  std::mutex mu_;
  std::vector<Admission> handed_, refused_here_;
  std::vector<std::shared_ptr<Connection>> conns_;
};

TEST_F(AcceptorLimitsTest, ATlsConnectionPastTheAddressLimitIsClosedBeforeTheHandshake) {
  testing::TestPki pki;
  ASSERT_TRUE(pki.ok());
  ASSERT_TRUE(pki.issue("server", "DNS:localhost,IP:127.0.0.1"));
  auto ctx = makeServerContext({pki.cert("server"), pki.key("server"), "", TlsVersion::k12});
  ASSERT_TRUE(ctx.isOk()) << ctx.status().toString();
  AcceptorOptions o;
  o.max_per_address = 1;
  o.tls = std::make_shared<TlsContextSlot>(ctx.value());
  o.connection.handshake = Millis(10000);  // on the SimClock: never passes here
  listen(o);
  const int a = connectFrom(acceptor_->port(), "127.0.0.2");  // admitted, never shakes hands
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 1; }));
  const int b = connectFrom(acceptor_->port(), "127.0.0.2");
  EXPECT_TRUE(closedByServer(b)) << "the refused TLS connection waited for its handshake";
  EXPECT_EQ(acceptor_->refused(), 1u);
  const int c = connectFrom(acceptor_->port(), "127.0.0.3");  // another address: its own limit
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 2; }));
  for (Admission h : handed()) EXPECT_EQ(h, Admission::kAdmitted);  // the refusal never reached the owner
  ASSERT_EQ(refusedHere().size(), 1u);
  EXPECT_EQ(refusedHere()[0], Admission::kTooManyFromAddress);
  for (int fd : {a, b, c}) ::close(fd);
}

TEST_F(AcceptorLimitsTest, ARefusedPlainConnectionLivesAtMostTheRefusalLifetime) {
  AcceptorOptions o;
  o.max_per_address = 1;
  listen(o);  // an owner that never answers nor closes
  const int a = connectFrom(acceptor_->port(), "127.0.0.2");
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 1; }));
  const int b = connectFrom(acceptor_->port(), "127.0.0.2");
  ASSERT_TRUE(waitFor([&] { return handed().size() == 2; }));
  EXPECT_EQ(handed()[1], Admission::kTooManyFromAddress);  // plain: the owner may answer
  ASSERT_TRUE(waitFor([&] { return clock_.pendingTimers() >= 1; })) << "no lifetime for a refused connection";
  clock_.advance(kRefusalLifetime);
  EXPECT_TRUE(closedByServer(b));
  EXPECT_EQ(acceptor_->active(), 1u);
  ::close(a);
  ::close(b);
}

TEST_F(AcceptorLimitsTest, PastTheAnsweredRefusalsARefusedConnectionIsClosedAtOnce) {
  AcceptorOptions o;
  o.max_per_address = 1;
  listen(o);  // an owner that never answers: every refusal it holds lives kRefusalLifetime
  std::vector<int> fds{connectFrom(acceptor_->port(), "127.0.0.2")};
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 1; }));
  for (std::size_t i = 0; i < kMaxAnsweredRefusals; ++i) fds.push_back(connectFrom(acceptor_->port(), "127.0.0.2"));
  ASSERT_TRUE(waitFor([&] { return handed().size() == 1 + kMaxAnsweredRefusals; }));
  const int over = connectFrom(acceptor_->port(), "127.0.0.2");
  EXPECT_TRUE(closedByServer(over));  // no clock advance: closed at once
  EXPECT_EQ(handed().size(), 1 + kMaxAnsweredRefusals);
  ASSERT_EQ(refusedHere().size(), 1u);
  EXPECT_EQ(refusedHere()[0], Admission::kTooManyFromAddress);
  ::close(over);
  for (int fd : fds) ::close(fd);
}

TEST(DescriptorBudgetTest, CountsPlacesAndDescriptorNumbersAgainstTheReserve) {
  DescriptorBudget budget(100, 25);  // 75 usable
  EXPECT_EQ(budget.limit(), 100u);
  EXPECT_EQ(budget.reserve(), 25u);
  EXPECT_EQ(budget.admit(75), nullptr);  // descriptor 75 open: 75 are, 25 left at most
  std::vector<std::shared_ptr<void>> held;
  for (int i = 0; i < 75; ++i) {
    held.push_back(budget.admit(3, ""));
    ASSERT_NE(held.back(), nullptr) << i;
  }
  EXPECT_EQ(budget.open(), 75u);
  EXPECT_EQ(budget.admit(3, ""), nullptr);
  EXPECT_EQ(budget.refused(), 2u);
  held.pop_back();
  EXPECT_NE(budget.admit(3, ""), nullptr);  // given back, taken again (and given back at once)
  EXPECT_EQ(budget.open(), 74u);
  EXPECT_EQ(budget.setReserve(1000), 25u);  // at most a quarter of the limit
  EXPECT_EQ(budget.setReserve(1), DescriptorBudget::kMinReserve);
}

TEST(DescriptorBudgetTest, OneAddressHoldsAtMostAQuarterOfTheUsableDescriptors) {
  DescriptorBudget budget(100, 20);  // 80 usable: 20 per address
  EXPECT_EQ(budget.addressShare(), 20u);
  const std::string a(std::string("\x7f\0\0\x8c", 4)), b(std::string("\x7f\0\0\x01", 4));
  std::vector<std::shared_ptr<void>> attacker;
  for (int i = 0; i < 20; ++i) attacker.push_back(budget.admit(3, a));
  for (const auto& p : attacker) EXPECT_NE(p, nullptr);
  EXPECT_EQ(budget.admit(3, a), nullptr);  // its 21st, on any port
  auto other = budget.admit(3, b);
  EXPECT_NE(other, nullptr);  // another address still gets in
  EXPECT_NE(budget.admit(3, ""), nullptr);  // no address (a unix socket): no share
  attacker.pop_back();
  EXPECT_NE(budget.admit(3, a), nullptr);  // one given back, one taken
  EXPECT_EQ(budget.refused(), 1u);
}

TEST_F(AcceptorLimitsTest, PastTheDescriptorBudgetAConnectionIsClosedAtOnceWithoutAnAnswer) {
  DescriptorBudget budget(1000, 16);  // 984 usable
  std::vector<std::shared_ptr<void>> others;  // what other listeners hold
  while (budget.open() < 983) others.push_back(budget.admit(3, ""));
  AcceptorOptions o;
  o.budget = &budget;
  listen(o);
  const int a = connectFrom(acceptor_->port(), "127.0.0.2");
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 1; }));
  const int b = connectFrom(acceptor_->port(), "127.0.0.3");
  EXPECT_TRUE(closedByServer(b));
  EXPECT_EQ(acceptor_->refusedForDescriptors(), 1u);
  ASSERT_EQ(refusedHere().size(), 1u);
  EXPECT_EQ(refusedHere()[0], Admission::kTooFewDescriptors);
  EXPECT_EQ(handed().size(), 1u);
  others.pop_back();  // another listener's connection closed
  const int c = connectFrom(acceptor_->port(), "127.0.0.3");
  ASSERT_TRUE(waitFor([&] { return acceptor_->active() == 2; }));
  EXPECT_EQ(budget.open(), 984u);
  ::close(c);
  ASSERT_TRUE(waitFor([&] { return budget.open() == 983u; }));  // the place comes back with the close
  for (int fd : {a, b}) ::close(fd);
}

}  // namespace
}  // namespace lcc::net
