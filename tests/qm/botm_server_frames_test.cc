// The QM's BOT-M port and the compact frames (issue 28; docs/internal-protocols.md §4):
// a BOT-M that offers them gets them both ways; an old BOT-M (no offer) and a QM with
// node.link_frames off speak XML, with the same fetches and results.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <mutex>
#include <thread>

#include "common/config/config.h"
#include "proto/botm_link.h"
#include "proto/link_frames.h"
#include "qm/botm_server.h"
#include "support/loopback.h"
#include "support/stream_reader.h"

namespace lcc {
namespace {

class Links final : public qm::BotmLinkHandler {
 public:
  void linkUp(qm::LinkId link, const std::string&, std::uint64_t) override { link_ = link; }
  void linkCapacity(qm::LinkId, std::uint64_t) override {}
  void linkMachines(qm::LinkId, const std::vector<std::string>&) override {}
  void linkDown(qm::LinkId) override {}
  void result(qm::LinkId, const FetchResult& r) override {
    std::lock_guard<std::mutex> l(mu_);
    results_.push_back(r);
  }
  void deleted(qm::LinkId, std::uint64_t, bool, const std::string&) override {}
  std::vector<FetchResult> results() {
    std::lock_guard<std::mutex> l(mu_);
    return results_;
  }
  std::atomic<qm::LinkId> link_{0};

 private:
  std::mutex mu_;
  std::vector<FetchResult> results_;
};

// A QM's BOT-M port on its own io thread.
class QmPort {
 public:
  explicit QmPort(bool frames) {
    qm::BotmServerOptions o = qm::BotmServerOptions::fromConfig(Config::defaults());
    o.listen = "127.0.0.1:0";
    o.frames = frames;
    server_ = std::make_unique<qm::BotmServer>(io_, o, links_);
    EXPECT_TRUE(server_->start().isOk());
    thread_ = std::thread([this] { io_.run(); });
  }
  ~QmPort() {
    boost::asio::post(io_, [this] { server_->stop(); });
    guard_.reset();
    thread_.join();
  }
  qm::BotmServer& server() { return *server_; }
  Links& links() { return links_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_{io_.get_executor()};
  Links links_;
  std::unique_ptr<qm::BotmServer> server_;
  std::thread thread_;
};

void sendAll(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// One BOT-M session: offers frames or not, takes one fetch, answers it; what the QM wrote.
struct Session {
  proto::LinkSourceHello hello;
  bool fetch_framed = false;
  FetchRequest fetch;
  FetchResult result;
};

Session session(QmPort& qm, bool offer) {
  Session s;
  int fd = testing::connectLoopback(qm.server().port());
  EXPECT_GE(fd, 0);
  sendAll(fd, proto::encodeBotmOpen({"m1", 4, "", offer ? 1u : 0u}));
  proto::SourceStreamDecoder dec;
  std::vector<proto::SourceMessage> got;
  testing::readMessages(fd, dec, &got, 1);
  if (got.empty()) return s;
  s.hello = std::get<proto::LinkSourceHello>(got[0]);
  const bool frames = s.hello.frames != 0;
  for (int i = 0; i < 20000 && qm.links().link_ == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  qm.server().sendFetch(qm.links().link_, FetchRequest{.id = 7, .url = "http://p.test/a", .expected_mime = "text/html"});
  testing::readMessages(fd, dec, &got, 2);
  if (got.size() == 2) s.fetch = std::get<FetchRequest>(got[1]);
  s.fetch_framed = dec.framed();
  FetchResult r;
  r.id = 7;
  r.http_status = 200;
  r.machine = "m1";
  r.filename = "00/00/7";
  r.size = 10;
  const proto::LinkForm form = frames ? proto::LinkForm::kFrames : proto::LinkForm::kXml;
  sendAll(fd, (frames ? proto::encodeFramesSwitch() : "") +
                  proto::encodeMessages(std::vector<proto::BotmMessage>{r}, form));
  for (int i = 0; i < 20000 && qm.links().results().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!qm.links().results().empty()) s.result = qm.links().results().at(0);
  ::close(fd);
  return s;
}

// Frames only when the BOT-M offers them and the QM has node.link_frames on; the same
// fetch and result either way.
TEST(QmBotmPortFrames, FramesWhenOfferedAndTakenElseXml) {
  struct Case {
    bool qm_frames, offer, framed;
  };
  for (const Case c : {Case{true, true, true}, Case{true, false, false}, Case{false, true, false}}) {
    SCOPED_TRACE(::testing::Message() << "qm frames " << c.qm_frames << ", BOT-M offers " << c.offer);
    QmPort qm(c.qm_frames);
    Session s = session(qm, c.offer);
    EXPECT_EQ(s.hello.frames, c.framed ? 1u : 0u);
    EXPECT_EQ(s.fetch_framed, c.framed);
    EXPECT_EQ(s.fetch.url, "http://p.test/a");
    EXPECT_EQ(s.result.filename, "00/00/7");
  }
}

}  // namespace
}  // namespace lcc
