// Issue 28: the UNS → QM link in process. A real Forwarder and a real qm::IntakeServer
// of one process, linked through net::LocalListeners (as lccd does with
// node.in_process_links), the QM's engine replaced by a sink the test holds: the
// notices arrive as the UNS parsed them, sets are accepted only after the QM's ack and
// in order, the window bounds what waits for the QM, a refusal (130) is answered as
// over TCP, and a QM that takes no sets gets them from the spool once it does.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "common/config/config.h"
#include "common/posix_env.h"
#include "common/system_clock.h"
#include "lcc/env.h"
#include "net/io_loop.h"
#include "net/local_listeners.h"
#include "proto/uns_qm_local.h"
#include "qm/intake_server.h"
#include "support/temp_dir.h"
#include "uns/forwarder.h"
#include "uns/uns_service.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using lcc::testing::TempDir;
using lcc::uns::testing::eventually;
namespace asio = boost::asio;

constexpr char kQmAddress[] = "127.0.0.1:0";  // the TCP port is any; the link is in process

// The QM's engine for the test: records every step; acks and `taken` wait while held.
struct HeldSink {
  std::mutex mu;
  std::vector<qm::IntakeHeader> begun;
  std::vector<UrlNotice> urls;  // every part, in order
  std::size_t parts = 0, ended = 0, aborted = 0;
  std::uint64_t untaken_bytes = 0, max_untaken_bytes = 0;
  bool hold_acks = false, hold_taken = false, refuse = false;
  std::vector<std::function<void()>> held;  // acks and `taken`s not given yet, in order (mu)

  qm::IntakeSink sink() {
    qm::IntakeSink s;
    s.begin = [this](std::uint64_t, qm::IntakeHeader h) {
      std::lock_guard<std::mutex> lk(mu);
      begun.push_back(std::move(h));
    };
    s.part = [this](std::uint64_t, std::vector<UrlNotice> part, std::function<void()> taken) {
      std::lock_guard<std::mutex> lk(mu);
      std::uint64_t bytes = 0;
      for (auto& u : part) {
        bytes += proto::urlSizeHint(u);
        urls.push_back(std::move(u));
      }
      ++parts;
      untaken_bytes += bytes;
      max_untaken_bytes = std::max(max_untaken_bytes, untaken_bytes);
      if (hold_taken) return held.push_back(std::move(taken));
      untaken_bytes -= bytes;
      taken();
    };
    s.end = [this](std::uint64_t, std::uint64_t, qm::IntakeSink::AckFn ack) {
      std::lock_guard<std::mutex> lk(mu);
      ++ended;
      auto give = [ack = std::move(ack), refuse = refuse] {
        refuse ? ack(false, ErrorCode::kOffline, "queue full") : ack(true, ErrorCode::kNone, {});
      };
      hold_acks ? held.push_back(std::move(give)) : give();
    };
    s.abort = [this](std::uint64_t) {
      std::lock_guard<std::mutex> lk(mu);
      ++aborted;
    };
    return s;
  }
  void release() {
    std::vector<std::function<void()>> h;
    {
      std::lock_guard<std::mutex> lk(mu);
      h.swap(held);
      hold_acks = hold_taken = false;
      untaken_bytes = 0;  // every part held is taken now
    }
    for (auto& f : h) f();
  }
  template <typename F>
  auto with(F f) {
    std::lock_guard<std::mutex> lk(mu);
    return f();
  }
};

std::vector<UrlNotice> notices(const std::string& tag, int n) {
  std::vector<UrlNotice> out;
  for (int i = 0; i < n; ++i) {
    UrlNotice u;
    u.key.pid = 1;
    u.key.url = "http://www.server.com/" + tag + "/" + std::to_string(i) + ".htm";
    u.key.mime = "text/html";
    u.size = 100 + i;
    out.push_back(std::move(u));
  }
  return out;
}

class UnsLocalLinkTest : public ::testing::Test {
 protected:
  UnsLocalLinkTest() : guard_(io_.get_executor()) {
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  ~UnsLocalLinkTest() override {
    if (fwd_) fwd_->stop();
    if (intake_) intake_->stop();
    fwd_.reset();
    intake_.reset();
    guard_.reset();
    // Not io_.stop() at once: the last turn of each closed link's strand drops the
    // handlers that hold its ends (LeakSanitizer reported the QM's IntakeConn at exit).
    net::stopWhenDry(io_, std::chrono::seconds(5));
    for (auto& t : threads_) t.join();
  }
  void startQm(bool accepting = true) {
    qm::IntakeServerOptions o;
    o.listen = kQmAddress;
    o.max_attribute_length = 8192;
    o.local_listeners = &listeners_;
    intake_ = std::make_unique<qm::IntakeServer>(io_, o, sink_.sink());
    ASSERT_TRUE(intake_->start().isOk());
    if (!accepting) {
      intake_->setAccepting(false);
      ASSERT_TRUE(eventually([&] { return !intake_->listening(); }));
    }
  }
  void startUns(std::size_t buffer_bytes = 4u << 20) {
    ForwarderOptions o = UnsOptions::fromConfig(Config::defaults(), dir_.path(), "m1").forwarder;
    o.qm_address = kQmAddress;
    o.qm_retry = Millis(50);
    o.qm_ack_timeout = Millis(60000);
    o.buffer_bytes = buffer_bytes;
    o.local_listeners = &listeners_;
    fwd_ = std::make_unique<Forwarder>(io_, &clock_, posixEnv(), o, nullptr);
    ASSERT_TRUE(fwd_->open().isOk());
    ASSERT_TRUE(fwd_->start().isOk());
  }
  std::future<SetOutcome> submit(std::vector<UrlNotice> urls) {
    auto p = std::make_shared<std::promise<SetOutcome>>();
    SetSubmission s;
    s.pid = 1;
    s.count = urls.size();
    s.urls = std::move(urls);
    fwd_->submit(std::move(s), [p](const SetOutcome& o) { p->set_value(o); });
    return p->get_future();
  }
  static bool ready(std::future<SetOutcome>& f) { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
  std::string linkForm() {
    nlohmann::json j;
    fwd_->status(j);
    return j.value("qm_link", "");
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
  SystemClock clock_;
  net::LocalListeners listeners_{io_, net::LocalLinkOptions{1024}};
  TempDir dir_;
  HeldSink sink_;
  std::unique_ptr<qm::IntakeServer> intake_;
  std::unique_ptr<Forwarder> fwd_;
};

TEST_F(UnsLocalLinkTest, SetsReachTheQmAsParsedAndAreAcceptedInOrderOnlyAfterItsAcks) {
  startQm();
  startUns();
  ASSERT_TRUE(eventually([&] { return fwd_->connected(); }));
  EXPECT_EQ(linkForm(), "in process");
  EXPECT_EQ(intake_->localLinks(), 1u) << "not a TCP connection";
  sink_.with([&] { return sink_.hold_acks = true; });
  std::vector<std::future<SetOutcome>> out;
  for (int i = 0; i < 3; ++i) out.push_back(submit(notices("s" + std::to_string(i), 10)));
  ASSERT_TRUE(eventually([&] { return sink_.with([&] { return sink_.ended == 3; }); }));
  for (auto& f : out) EXPECT_FALSE(ready(f)) << "no set_accepted before the QM's ack";
  sink_.release();
  for (auto& f : out) ASSERT_TRUE(f.get().accepted);
  sink_.with([&] {
    ASSERT_EQ(sink_.begun.size(), 3u);
    for (std::uint64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(sink_.begun[i].uns, "m1/uns");
      EXPECT_EQ(sink_.begun[i].id, sink_.begun[0].id + i) << "ids in order";
    }
    ASSERT_EQ(sink_.urls.size(), 30u);
    EXPECT_EQ(sink_.urls[0], notices("s0", 10)[0]) << "the notice itself, every field";
    EXPECT_EQ(sink_.urls[29].key.url, "http://www.server.com/s2/9.htm");
  });
  EXPECT_EQ(fwd_->spooledSets(), 0u);
}

TEST_F(UnsLocalLinkTest, AStreamedSetWaitsForTheQmPastItsWindowAndThenArrivesWhole) {
  constexpr std::size_t kWindow = 64 * 1024;
  startQm();
  startUns(kWindow);
  ASSERT_TRUE(eventually([&] { return fwd_->connected(); }));
  sink_.with([&] { return sink_.hold_taken = true; });
  auto stream = fwd_->beginSet(1, SetKind::kPartial, false);
  // A session's loop: a part while fewer than 4 wait in the forwarder.
  constexpr int kParts = 200, kPerPart = 100;
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0, taken = 0;
  std::uint64_t part_bytes = 0;
  for (const auto& u : notices("p0", kPerPart)) part_bytes += proto::urlSizeHint(u);
  std::thread driver([&] {
    for (int i = 0; i < kParts; ++i) {
      std::unique_lock<std::mutex> lk(mu);
      if (!cv.wait_for(lk, std::chrono::seconds(30), [&] { return waiting < 4; })) return;
      ++waiting;
      lk.unlock();
      SetPart part{notices("p" + std::to_string(i), kPerPart), {}, kPerPart};
      stream->add(std::move(part), [&] {
        std::lock_guard<std::mutex> g(mu);
        --waiting;
        ++taken;
        cv.notify_all();
      });
    }
  });
  // The QM takes nothing: what it was handed stops at about the window.
  const std::size_t bound_parts = kWindow / part_bytes + 1;
  ASSERT_TRUE(eventually([&] { return sink_.with([&] { return sink_.parts >= bound_parts; }); }));
  {
    std::lock_guard<std::mutex> g(mu);
    EXPECT_LT(taken, kParts) << "the forwarder took every part although the QM took none";
  }
  sink_.release();
  driver.join();
  auto done = std::make_shared<std::promise<SetOutcome>>();
  auto f = done->get_future();
  stream->end([done](const SetOutcome& o) { done->set_value(o); });
  ASSERT_TRUE(f.get().accepted);
  sink_.with([&] {
    EXPECT_LE(sink_.max_untaken_bytes, kWindow + part_bytes) << "the QM was handed more than the window";
    ASSERT_EQ(sink_.urls.size(), static_cast<std::size_t>(kParts * kPerPart));
    EXPECT_EQ(sink_.urls.back().key.url, "http://www.server.com/p199/99.htm");
  });
  // Held by the forwarder: the window on the link, its own window, and the 4 parts a
  // session may have handed over meanwhile (as over TCP).
  EXPECT_LE(fwd_->heldBytesMax(), 2 * kWindow + 6 * part_bytes);
}

TEST_F(UnsLocalLinkTest, ARefusedSetIsSpooledAndReplayedAndARefusedStreamedSetGets130) {
  startQm();
  startUns();
  ASSERT_TRUE(eventually([&] { return fwd_->connected(); }));
  sink_.with([&] { return sink_.refuse = true; });
  auto whole = submit(notices("w", 5));
  // Refused (130): the link drops, the set goes to the spool and is accepted from there.
  ASSERT_TRUE(whole.get().accepted);
  auto stream = fwd_->beginSet(1, SetKind::kPartial, false);
  auto done = std::make_shared<std::promise<SetOutcome>>();
  auto f = done->get_future();
  stream->end([done](const SetOutcome& o) { done->set_value(o); });
  sink_.with([&] { return sink_.refuse = false; });
  // The spool was not empty or the link down: the streamed set was spooled; either way
  // it is answered. Once the QM acks, the spool is replayed (as records) and empties.
  const SetOutcome streamed = f.get();
  if (!streamed.accepted) EXPECT_EQ(streamed.code, ErrorCode::kOffline);
  ASSERT_TRUE(eventually([&] { return fwd_->spooledSets() == 0 && fwd_->connected(); }));
  sink_.with([&] {
    ASSERT_GE(sink_.begun.size(), 2u) << "refused once, then replayed";
    EXPECT_EQ(sink_.urls.back().key.url, "http://www.server.com/w/4.htm");
  });

  // A streamed set passing through that the QM refuses: its CP gets 130.
  const std::size_t before = sink_.with([&] {
    sink_.refuse = true;
    return sink_.begun.size();
  });
  auto s2 = fwd_->beginSet(1, SetKind::kPartial, false);
  ASSERT_TRUE(eventually([&] { return sink_.with([&] { return sink_.begun.size() > before; }); }));
  auto done2 = std::make_shared<std::promise<SetOutcome>>();
  auto f2 = done2->get_future();
  s2->add(SetPart{notices("x", 3), {}, 3}, [] {});
  s2->end([done2](const SetOutcome& o) { done2->set_value(o); });
  const SetOutcome refused = f2.get();
  EXPECT_FALSE(refused.accepted);
  EXPECT_EQ(refused.code, ErrorCode::kOffline);
}

TEST_F(UnsLocalLinkTest, AQmThatTakesNoSetsGetsThemFromTheSpoolOnceItDoes) {
  startQm(false);  // overloaded: the in-process link is refused
  startUns();
  auto a = submit(notices("a", 4));
  ASSERT_TRUE(a.get().accepted) << "spooled";
  EXPECT_FALSE(fwd_->connected());
  EXPECT_EQ(fwd_->spooledSets(), 1u);
  EXPECT_EQ(sink_.with([&] { return sink_.begun.size(); }), 0u);
  intake_->setAccepting(true);
  ASSERT_TRUE(eventually([&] { return fwd_->connected() && fwd_->spooledSets() == 0; }));
  auto b = submit(notices("b", 2));
  ASSERT_TRUE(b.get().accepted);
  sink_.with([&] {
    ASSERT_EQ(sink_.urls.size(), 6u);
    EXPECT_EQ(sink_.urls[0].key.url, "http://www.server.com/a/0.htm") << "the spool first";
    EXPECT_EQ(sink_.urls[0].size, std::optional<std::uint64_t>(100));
    EXPECT_EQ(sink_.urls[5].key.url, "http://www.server.com/b/1.htm");
  });
}

// A set given as XML text (as the IndexNow and sitemap submitters give theirs) that the
// in-process link cannot read into records takes the link down from inside the queue
// that was handing the text over: the forwarder's on_down clears that queue under it.
// The queue must stop there, not pop or count what clear() already dropped (it did: its
// byte count went below zero and the next set's records were lost in a broken deque).
TEST_F(UnsLocalLinkTest, ASetTextTheLinkCannotReadTakesItDownAndTheSetsAfterItStillArrive) {
  startQm();
  startUns();
  ASSERT_TRUE(eventually([&] { return fwd_->connected(); }));
  SetSubmission bad;
  bad.pid = 1;
  bad.count = 1;
  bad.urls_xml = "<url <<<";  // not XML
  fwd_->submit(std::move(bad), [](const SetOutcome&) {});
  auto good = submit(notices("good", 3));
  ASSERT_TRUE(good.get().accepted);
  ASSERT_TRUE(eventually([&] {
    return sink_.with([&] {
      for (const auto& u : sink_.urls) {
        if (u.key.url == "http://www.server.com/good/2.htm") return true;
      }
      return false;
    });
  })) << "the set after the unreadable one reaches the QM";
  EXPECT_LT(fwd_->heldBytesMax(), std::uint64_t{1} << 30) << "what waits for the link is counted right";
}

}  // namespace
}  // namespace lcc::uns
