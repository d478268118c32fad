// The in-process link (net/local_link.h) on real strands of a two-thread io_context:
// order each way, acknowledgements answered in order, the bound (a receiver that does
// not take its messages closes the link, kTooMuchQueued), close after flush, an end
// that goes away, and the listeners' registry. The tests wait for what they observe,
// and each ends with both closes seen (the handlers refer to the test's locals).
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/strand.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "net/local_listeners.h"
#include "support/wait.h"

namespace lcc::net {
namespace {

namespace asio = boost::asio;
using testing::waitFor;

// What one end received, and how it ended.
struct Seen {
  std::mutex mu;
  std::vector<int> got;
  std::size_t batches = 0;
  int closes = 0;
  CloseReason reason = CloseReason::kLocal;

  std::vector<int> values() {
    std::lock_guard<std::mutex> lk(mu);
    return got;
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lk(mu);
    return got.size();
  }
  int closed() {
    std::lock_guard<std::mutex> lk(mu);
    return closes;
  }
};

template <typename End>
void startRecording(End& end, Seen& seen, std::function<void(int)> also = {}) {
  typename End::Handlers h;
  h.on_messages = [&seen, also](std::vector<int>& batch) {
    {
      std::lock_guard<std::mutex> lk(seen.mu);
      ++seen.batches;
      seen.got.insert(seen.got.end(), batch.begin(), batch.end());
    }
    if (also) {
      for (int v : batch) also(v);
    }
  };
  h.on_close = [&seen](CloseReason r, const std::string&) {
    std::lock_guard<std::mutex> lk(seen.mu);
    ++seen.closes;
    seen.reason = r;
  };
  end.start(std::move(h));
}

class LocalLinkTest : public ::testing::Test {
 protected:
  LocalLinkTest() : guard_(io_.get_executor()) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~LocalLinkTest() override {
    guard_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
  }
  Strand strand() { return asio::make_strand(io_); }

  asio::io_context io_{2};
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

TEST_F(LocalLinkTest, EachDirectionDeliversInOrderInBatchesFromAnyThread) {
  auto [a, b] = makeLocalLink<int, int>(strand(), strand(), LocalLinkOptions{1u << 20});
  Seen at_a, at_b;
  startRecording(*a, at_a);
  startRecording(*b, at_b);
  constexpr int kN = 100000;
  // a sends from two threads in turn: the order is the order of the sends.
  std::thread other([&, a = a] {
    for (int i = 0; i < kN / 2; ++i) ASSERT_TRUE(a->send(i));
  });
  other.join();
  for (int i = kN / 2; i < kN; ++i) ASSERT_TRUE(a->send(i));
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(b->send(-i));
  ASSERT_TRUE(waitFor([&] { return at_b.count() == kN && at_a.count() == 1000; }));
  std::vector<int> want(kN);
  for (int i = 0; i < kN; ++i) want[i] = i;
  EXPECT_EQ(at_b.values(), want);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(at_a.values()[i], -i);
  EXPECT_LT(at_b.batches, static_cast<std::size_t>(kN)) << "messages cross in batches, not one post each";
  EXPECT_EQ(at_a.closed() + at_b.closed(), 0);
  b->close();
  ASSERT_TRUE(waitFor([&] { return at_a.closed() == 1 && at_b.closed() == 1; }));
}

TEST_F(LocalLinkTest, EveryRequestIsAnsweredOnceAndTheAnswersComeInOrder) {
  auto [src, botm] = makeLocalLink<int, int>(strand(), strand(), LocalLinkOptions{64});
  Seen acks, requests;
  startRecording(*src, acks);
  // The receiver answers each request with its ack on its own strand, as a BOT-M
  // answers a fetch with its result.
  std::weak_ptr<LocalEnd<int, int>> weak = botm;
  startRecording(*botm, requests, [weak](int v) {
    if (auto e = weak.lock()) e->send(v + 1000000);
  });
  // 5,000 requests, never more than 32 unanswered: the bound of 64 is never reached.
  constexpr int kN = 5000;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(waitFor([&] { return i - static_cast<int>(acks.count()) < 32; }));
    ASSERT_TRUE(src->send(i));
  }
  ASSERT_TRUE(waitFor([&] { return acks.count() == kN; }));
  auto got = acks.values();
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], i + 1000000);
  EXPECT_EQ(acks.closed() + requests.closed(), 0);
  src->close();
  ASSERT_TRUE(waitFor([&] { return acks.closed() == 1 && requests.closed() == 1; }));
}

TEST_F(LocalLinkTest, AReceiverThatDoesNotTakeItsMessagesClosesTheLinkPastTheBound) {
  auto [a, b] = makeLocalLink<int, int>(strand(), strand(), LocalLinkOptions{4});
  Seen at_a, at_b;
  startRecording(*a, at_a);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(a->send(i));  // b has not started: they wait
  EXPECT_EQ(b->queued(), 4u);
  EXPECT_FALSE(a->send(4)) << "the fifth is one too many";
  EXPECT_TRUE(a->closed());
  EXPECT_FALSE(a->send(5));
  EXPECT_FALSE(b->send(6)) << "closed both ways";
  ASSERT_TRUE(waitFor([&] { return at_a.closed() == 1; }));
  EXPECT_EQ(at_a.reason, CloseReason::kTooMuchQueued);
  // What was queued before the close is still handed over, then the close.
  startRecording(*b, at_b);
  ASSERT_TRUE(waitFor([&] { return at_b.closed() == 1; }));
  EXPECT_EQ(at_b.values(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(at_b.reason, CloseReason::kTooMuchQueued);
  EXPECT_EQ(at_a.closed(), 1) << "on_close runs once";
}

TEST_F(LocalLinkTest, ACloseComesAfterWhatWasSentBeforeIt) {
  auto [a, b] = makeLocalLink<int, int>(strand(), strand());
  Seen at_a, at_b;
  startRecording(*a, at_a);
  startRecording(*b, at_b);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->send(i));
  a->close(CloseReason::kShutdown, "stopping");
  a->close(CloseReason::kLocal);  // a second close changes nothing
  ASSERT_TRUE(waitFor([&] { return at_a.closed() == 1 && at_b.closed() == 1; }));
  EXPECT_EQ(at_b.values(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(at_b.reason, CloseReason::kShutdown);
  EXPECT_EQ(at_a.reason, CloseReason::kShutdown);
}

TEST_F(LocalLinkTest, AnEndThatGoesAwayClosesTheLink) {
  auto [a, b] = makeLocalLink<int, int>(strand(), strand());
  Seen at_a;
  startRecording(*a, at_a);
  b.reset();  // never started, never closed
  ASSERT_TRUE(waitFor([&] { return at_a.closed() == 1; }));
  EXPECT_EQ(at_a.reason, CloseReason::kPeerClosed);
  EXPECT_FALSE(a->send(1));
}

TEST_F(LocalLinkTest, ListenersHandTheFarEndToTheRoleListeningOnTheAddress) {
  LocalListeners listeners(io_, LocalLinkOptions{16});
  EXPECT_EQ((listeners.connect<int, int>("127.0.0.1:7702", strand())), nullptr) << "nobody listens yet";
  std::shared_ptr<LocalEnd<int, int>> accepted;
  Seen at_listener, at_caller;
  listeners.listen<int, int>("127.0.0.1:7702", [&](std::shared_ptr<LocalEnd<int, int>> end) {
    accepted = end;
    startRecording(*end, at_listener);
  });
  EXPECT_TRUE(listeners.listening("tls://127.0.0.1:7702")) << "tls:// is the same address in process";
  EXPECT_FALSE(listeners.listening("127.0.0.1:7703"));
  EXPECT_EQ((listeners.connect<std::string, int>("127.0.0.1:7702", strand())), nullptr) << "other message types";
  auto end = listeners.connect<int, int>("127.0.0.1:7702", strand());
  ASSERT_NE(end, nullptr);
  ASSERT_NE(accepted, nullptr);
  startRecording(*end, at_caller);
  ASSERT_TRUE(end->send(7));
  ASSERT_TRUE(accepted->send(8));
  ASSERT_TRUE(waitFor([&] { return at_listener.count() == 1 && at_caller.count() == 1; }));
  EXPECT_EQ(at_listener.values(), std::vector<int>{7});
  EXPECT_EQ(at_caller.values(), std::vector<int>{8});
  listeners.unlisten("127.0.0.1:7702");
  EXPECT_EQ((listeners.connect<int, int>("127.0.0.1:7702", strand())), nullptr);
  end->close();
  ASSERT_TRUE(waitFor([&] { return at_listener.closed() == 1 && at_caller.closed() == 1; }));
}

}  // namespace
}  // namespace lcc::net
