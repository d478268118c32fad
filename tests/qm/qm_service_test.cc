// The qm role as lccd runs it, over real sockets on 127.0.0.1: a UNS pipelines sets
// and gets acks, a BOT-M connects and fetches, bad input is refused without harm,
// overload closes and reopens the listener.
#include "qm/qm_service.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "common/config/config.h"
#include "common/plugin/plugin_registry.h"
#include "net/io_loop.h"
#include "common/posix_env.h"
#include "proto/link_frames.h"
#include "proto/uns_qm.h"
#include "proto/uns_qm_frames.h"
#include "qm_test_util.h"

namespace lcc::qm {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using lcc::testing::SimClock;
using lcc::testing::TempDir;
using namespace lcc::qm::testing;

// A blocking client with a receive timeout, so a missing answer fails instead of hanging.
class Client {
 public:
  Client(asio::io_context& io, std::uint16_t port) : sock_(io) {
    boost::system::error_code ec;
    sock_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    connected_ = !ec;
  }
  bool connected() const { return connected_; }
  bool send(const std::string& s) {
    boost::system::error_code ec;
    asio::write(sock_, asio::buffer(s), ec);
    return !ec;
  }
  // Reads more bytes; empty on timeout (10 s) or close. The wait is a poll() of our
  // own: Asio's blocking read polls again without a limit when SO_RCVTIMEO expires.
  std::string read() {
    pollfd pfd{sock_.native_handle(), POLLIN, 0};
    if (::poll(&pfd, 1, 10000) <= 0) return {};
    char buf[65536];
    boost::system::error_code ec;
    std::size_t n = sock_.read_some(asio::buffer(buf), ec);
    if (ec) return {};
    return std::string(buf, n);
  }

 private:
  tcp::socket sock_;
  bool connected_ = false;
};

class AckCollector : public proto::QmStreamHandler {
 public:
  void onQmOpen(std::uint32_t) override { opened = true; }
  void onAck(const proto::UnsQmAck& a) override { acks.push_back(a); }
  void onClose() override { closed = true; }
  bool opened = false;
  bool closed = false;
  std::vector<proto::UnsQmAck> acks;
};

// Minimal parse of what the QM sends a BOT-M: the ids and URLs of <fetch> elements.
struct FetchSeen {
  std::uint64_t id;
  std::string url;
};
std::vector<FetchSeen> parseFetches(const std::string& xml) {
  std::vector<FetchSeen> out;
  std::size_t pos = 0;
  while ((pos = xml.find("<fetch ", pos)) != std::string::npos) {
    auto end = xml.find('>', pos);
    std::string el = xml.substr(pos, end - pos);
    auto attr = [&](const std::string& n) {
      auto a = el.find(" " + n + "=\"");
      if (a == std::string::npos) return std::string();
      a += n.size() + 3;
      return el.substr(a, el.find('"', a) - a);
    };
    out.push_back({std::stoull(attr("id")), attr("url")});
    pos = end;
  }
  return out;
}

class QmServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {}
  void start(const std::string& extra_yaml = "") {
    std::vector<ConfigProblem> problems;
    auto cfg = Config::loadText("listen:\n  qm: 127.0.0.1:0\n  botm: 127.0.0.1:0\n" + extra_yaml, "test.yaml", {},
                                &problems);
    ASSERT_TRUE(cfg.isOk()) << (problems.empty() ? "" : problems[0].toString());
    config_ = std::make_unique<Config>(std::move(cfg).value());
    stores_ = std::make_unique<Stores>("storage-memory", dir_.path(), &clock_, posixEnv());
    ASSERT_TRUE(stores_->open().isOk());
    addProviders(*stores_->providers, 2);
    node_.config = config_.get();
    node_.io = &io_;
    node_.clock = &clock_;
    node_.env = posixEnv();
    node_.metrics = &metrics_;
    node_.data_dir = dir_.path();
    node_.machine_id = "m1";
    node_.queue = stores_->queue.get();
    node_.content = stores_->content.get();
    node_.providers = stores_->providers.get();
    auto svc = makeQmService(node_);
    ASSERT_TRUE(svc.isOk()) << svc.status().toString();
    service_ = std::move(svc).value();
    ASSERT_TRUE(service_->start().isOk());
    work_.emplace(io_.get_executor());
    for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  void TearDown() override {
    if (service_) service_->stop();
    work_.reset();
    net::stopWhenDry(io_, std::chrono::seconds(5));
    for (auto& t : threads_) t.join();
    service_.reset();
    if (stores_) (void)stores_->close();
  }
  nlohmann::json status() {
    nlohmann::json j;
    service_->status(j);
    return j;
  }
  std::uint16_t unsPort() { return status()["uns_port"].get<std::uint16_t>(); }
  std::uint16_t botmPort() { return status()["botm_port"].get<std::uint16_t>(); }
  // Reads acks until `n` arrived or the peer went quiet.
  void readAcks(Client& c, proto::QmStreamDecoder& d, AckCollector& h, std::size_t n) {
    while (h.acks.size() < n && !h.closed) {
      std::string b = c.read();
      if (b.empty()) break;
      d.feed(b);
    }
  }
  template <typename Pred>
  bool waitFor(Pred p) {
    for (int i = 0; i < 1000; ++i) {
      if (p()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return p();
  }
  proto::UnsQmSet set(std::uint64_t id, ProviderId pid, std::vector<std::string> urls) {
    proto::UnsQmSet s;
    s.header.id = id;
    s.header.pid = pid;
    s.header.count = urls.size();
    for (auto& u : urls) s.urls.push_back(update(pid, u));
    return s;
  }

  SimClock clock_;
  TempDir dir_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  Metrics metrics_;
  std::unique_ptr<Config> config_;
  std::unique_ptr<Stores> stores_;
  NodeContext node_;
  ServicePtr service_;
};

TEST_F(QmServiceTest, UnsSetsAreAckedInOrderAndBotmFetchesThem) {
  start();
  asio::io_context cio;
  Client uns(cio, unsPort());
  ASSERT_TRUE(uns.connected());
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  std::string out = proto::encodeUnsOpen("m9/uns");
  out += proto::encodeSet(set(1, 1, {"http://a/1", "http://a/2"}));
  out += proto::encodeSet(set(2, 2, {"http://b/1"}));
  out += proto::encodeSet(set(2, 2, {"http://b/1"}));  // a replay
  ASSERT_TRUE(uns.send(out));
  readAcks(uns, dec, h, 3);
  ASSERT_TRUE(h.opened);
  ASSERT_EQ(h.acks.size(), 3u);
  EXPECT_EQ(h.acks[0].id, 1u);
  EXPECT_EQ(h.acks[1].id, 2u);
  EXPECT_EQ(h.acks[2].id, 2u);
  for (const auto& a : h.acks) EXPECT_TRUE(a.ok);
  // Acks go out once the sets are durable; they are applied right after.
  EXPECT_TRUE(waitFor([&] { return node_.queued_urls(1) == 2u && node_.queued_urls(2) == 1u; }));

  Client botm(cio, botmPort());
  ASSERT_TRUE(botm.connected());
  ASSERT_TRUE(botm.send("<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m1\" capacity=\"4\">"));
  std::string got;
  std::vector<FetchSeen> fetches;
  while (fetches.size() < 2) {
    std::string b = botm.read();
    ASSERT_FALSE(b.empty()) << "no fetch came; got: " << got;
    got += b;
    fetches = parseFetches(got);
  }
  EXPECT_NE(got.find("<lcc:source"), std::string::npos);
  std::string results;
  int file = 0;
  for (const auto& f : fetches) {
    results += "<result id=\"" + std::to_string(f.id) + "\" ok=\"yes\" machine=\"m1\" file=\"00/00/0" +
               std::to_string(++file) + "\" http=\"200\" mime=\"text/html\" sz=\"10\" md5=\"0123456789abcdef0123456789abcdef\"/>";
  }
  ASSERT_TRUE(botm.send(results));
  // Provider 1's second URL follows its first; answer it too.
  while (fetches.size() < 3) {
    std::string b = botm.read();
    ASSERT_FALSE(b.empty());
    got += b;
    fetches = parseFetches(got);
  }
  ASSERT_TRUE(botm.send("<result id=\"" + std::to_string(fetches[2].id) +
                        "\" ok=\"no\" code=\"301\" http=\"404\">not found</result>"));
  ASSERT_TRUE(waitFor([&] { return node_.queued_urls(1) == 0 && node_.queued_urls(2) == 0; }));
  int live = 0;
  for (const char* u : {"http://a/1", "http://a/2", "http://b/1"}) {
    ProviderId pid = u[7] == 'a' ? 1 : 2;
    auto r = stores_->content->get(encodeUrlKey({pid, u, "text/html"}));
    if (r.isOk() && r.value() && !r.value()->deleted) ++live;
  }
  EXPECT_EQ(live, 2);
  auto p = stores_->providers->get(fetches[2].url[7] == 'a' ? 1 : 2);
  EXPECT_EQ(p.value()->error_total, 1u);
}

TEST_F(QmServiceTest, MalformedStreamsAreDroppedAndTheServerGoesOn) {
  start();
  asio::io_context cio;
  {
    Client bad(cio, unsPort());
    ASSERT_TRUE(bad.connected());
    ASSERT_TRUE(bad.send("<!DOCTYPE x [<!ENTITY a \"b\">]><lcc:uns>"));
    EXPECT_TRUE(bad.read().empty()) << "a DOCTYPE was answered";
  }
  {
    Client bad(cio, unsPort());
    ASSERT_TRUE(bad.send(proto::encodeUnsOpen("x/uns") + "<set id=\"1\" pid=\"1\" kind=\"partial\" count=\"5\"></set>"));
    std::string all, b;
    while (!(b = bad.read()).empty()) all += b;
    EXPECT_EQ(all.find("<ack"), std::string::npos) << "an impossible set was acked";
  }
  {
    Client bad(cio, botmPort());
    ASSERT_TRUE(bad.send("<result id=\"1\" ok=\"yes\"/>garbage<<<"));
    EXPECT_TRUE(bad.read().empty());
  }
  Client good(cio, unsPort());
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  ASSERT_TRUE(good.send(proto::encodeUnsOpen("m9/uns") + proto::encodeSet(set(1, 1, {"http://a/1"}))));
  readAcks(good, dec, h, 1);
  ASSERT_EQ(h.acks.size(), 1u);
  EXPECT_TRUE(h.acks[0].ok);
}

// A set larger than the QM holds (qm intake_hold_urls) is taken in parts over the
// link; one cut off midway (the UNS's connection drops) is neither acked nor applied,
// and its id stays free for the UNS to send it again.
TEST_F(QmServiceTest, ALargeSetIsTakenInPartsAndOneCutOffMidwayLeavesNothing) {
  start();
  asio::io_context cio;
  std::vector<std::string> cut_urls, big_urls;
  for (int i = 0; i < 6000; ++i) {
    cut_urls.push_back("http://cut/" + std::to_string(i));
    big_urls.push_back("http://big/" + std::to_string(i));
  }
  const std::string cut = proto::encodeSet(set(1, 1, cut_urls));
  {
    Client uns(cio, unsPort());
    ASSERT_TRUE(uns.send(proto::encodeUnsOpen("m9/uns") + cut.substr(0, cut.size() * 2 / 3)));
  }  // the connection drops in the middle of the set
  Client uns(cio, unsPort());
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  ASSERT_TRUE(uns.send(proto::encodeUnsOpen("m9/uns") + proto::encodeSet(set(1, 1, {"http://small/1"})) +
                       proto::encodeSet(set(2, 1, big_urls))));
  readAcks(uns, dec, h, 2);
  ASSERT_EQ(h.acks.size(), 2u);
  EXPECT_TRUE(h.acks[0].ok && h.acks[1].ok);
  EXPECT_TRUE(waitFor([&] { return node_.queued_urls(1) == 6001u; })) << node_.queued_urls(1);
  auto row = stores_->queue->getEntry(encodeUrlKey({1, "http://cut/0", "text/html"}));
  ASSERT_TRUE(row.isOk());
  EXPECT_FALSE(row.value()) << "a URL of the cut-off set was applied";
}

// Issue 13, second stage: a set the UNS streams has no count up front; an <abort/>
// (its CP stopped mid-set) drops it, no ack, and the link goes on with the next set.
std::string streamedSet(std::uint64_t id, const std::vector<std::string>& urls, bool abort) {
  proto::UnsQmSetHeader h{id, 1, SetKind::kPartial, 0, true};
  std::string out;
  proto::appendSetBegin(out, h);
  for (const auto& u : urls) proto::appendUrl(out, update(1, u));
  abort ? proto::appendStreamedSetAbort(out) : proto::appendStreamedSetEnd(out, urls.size());
  return out;
}

TEST_F(QmServiceTest, AStreamedSetIsTakenAndAnAbortedOneLeavesNothing) {
  start();
  asio::io_context cio;
  std::vector<std::string> cut_urls, big_urls;
  for (int i = 0; i < 6000; ++i) {
    cut_urls.push_back("http://cut/" + std::to_string(i));
    big_urls.push_back("http://big/" + std::to_string(i));
  }
  Client uns(cio, unsPort());
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  ASSERT_TRUE(uns.send(proto::encodeUnsOpen("m9/uns") + streamedSet(1, cut_urls, true) +
                       streamedSet(2, big_urls, false) + streamedSet(3, {"http://small/1"}, false)));
  readAcks(uns, dec, h, 2);
  ASSERT_EQ(h.acks.size(), 2u) << "no ack for the aborted set";
  EXPECT_EQ(h.acks[0].id, 2u);
  EXPECT_EQ(h.acks[1].id, 3u);
  EXPECT_TRUE(h.acks[0].ok && h.acks[1].ok);
  EXPECT_TRUE(waitFor([&] { return node_.queued_urls(1) == 6001u; })) << node_.queued_urls(1);
  auto row = stores_->queue->getEntry(encodeUrlKey({1, "http://cut/0", "text/html"}));
  ASSERT_TRUE(row.isOk());
  EXPECT_FALSE(row.value()) << "a URL of the aborted set was applied";
}

TEST_F(QmServiceTest, AUnsClosingItsStreamStillGetsItsAcks) {
  start();
  asio::io_context cio;
  Client uns(cio, unsPort());
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  ASSERT_TRUE(uns.send(proto::encodeUnsOpen("m9/uns") + proto::encodeSet(set(1, 1, {"http://a/1"})) +
                       proto::encodeSet(set(2, 1, {"http://a/2"})) + proto::encodeUnsClose()));
  while (!h.closed) {
    std::string b = uns.read();
    if (b.empty()) break;
    dec.feed(b);
  }
  ASSERT_EQ(h.acks.size(), 2u);
  EXPECT_TRUE(h.acks[0].ok && h.acks[1].ok);
  EXPECT_TRUE(h.closed) << "the QM did not close its stream after the acks";
}

TEST_F(QmServiceTest, OverloadClosesTheListenerAndReopensBelowTheLowMark) {
  start("qm:\n  queue_high: 2\n  queue_low: 1\n");
  asio::io_context cio;
  Client uns(cio, unsPort());
  const std::uint16_t port = unsPort();
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  ASSERT_TRUE(uns.send(proto::encodeUnsOpen("m9/uns") + proto::encodeSet(set(1, 1, {"http://a/1", "http://a/2", "http://a/3"}))));
  readAcks(uns, dec, h, 1);
  ASSERT_EQ(h.acks.size(), 1u);
  EXPECT_TRUE(h.acks[0].ok);
  // The acked connection is closed and nobody can connect.
  std::string rest;
  while (!h.closed) {
    std::string b = uns.read();
    if (b.empty()) break;
    dec.feed(b);
  }
  EXPECT_TRUE(h.closed) << "the UNS connection stayed open during overload";
  ASSERT_TRUE(waitFor([&] { return !status()["listening"].get<bool>(); }));
  EXPECT_FALSE(Client(cio, port).connected());
  // A BOT-M drains the queue; the listener comes back on the same port.
  Client botm(cio, botmPort());
  ASSERT_TRUE(botm.send("<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m1\" capacity=\"1\">"));
  std::string got;
  std::size_t answered = 0;
  int file = 0;
  while (answered < 3) {
    std::string b = botm.read();
    ASSERT_FALSE(b.empty());
    got += b;
    auto f = parseFetches(got);
    for (; answered < f.size(); ++answered) {
      ASSERT_TRUE(botm.send("<result id=\"" + std::to_string(f[answered].id) + "\" ok=\"yes\" machine=\"m1\" file=\"f" +
                            std::to_string(++file) + "\" sz=\"1\" md5=\"0123456789abcdef0123456789abcdef\"/>"));
    }
  }
  ASSERT_TRUE(waitFor([&] { return status()["listening"].get<bool>(); }));
  Client again(cio, port);
  EXPECT_TRUE(again.connected());
}

// Between hosts the UNS offers compact frames (node.link_frames, on by default): the QM
// answers frames="1", switches, and takes whole and streamed sets as frames; its acks
// come back as frames, after the sets are durable, in order, a replay acked at once.
TEST_F(QmServiceTest, AUnsThatOffersFramesSendsAndIsAnsweredInFrames) {
  start();
  asio::io_context cio;
  Client uns(cio, unsPort());
  ASSERT_TRUE(uns.connected());
  AckCollector h;
  proto::QmStreamDecoder dec(h, {}, true);
  std::string out = proto::encodeUnsOpen("m9/uns", proto::kFramesVersion) + proto::encodeFramesSwitch();
  const proto::UnsQmSet whole = set(1, 1, {"http://a/1", "http://a/2"});
  for (const auto& s : {whole, set(1, 1, {"http://a/1", "http://a/2"})}) {  // the second: a replay
    proto::appendSetBeginFrame(out, s.header);
    proto::appendUrlsFrames(out, s.urls);
    proto::appendSetEndFrame(out, s.urls.size());
  }
  const proto::UnsQmSet streamed = set(2, 2, {"http://b/1", "http://b/2", "http://b/3"});
  proto::appendSetBeginFrame(out, {2, 2, SetKind::kPartial, 0, true});
  for (const auto& u : streamed.urls) proto::appendUrlsFrames(out, {u});
  proto::appendSetEndFrame(out, streamed.urls.size());
  ASSERT_TRUE(uns.send(out));
  readAcks(uns, dec, h, 3);
  ASSERT_TRUE(h.opened);
  ASSERT_EQ(h.acks.size(), 3u) << dec.errorMessage();
  EXPECT_EQ(h.acks[0].id, 1u);
  EXPECT_EQ(h.acks[1].id, 1u);
  EXPECT_EQ(h.acks[2].id, 2u);
  for (const auto& a : h.acks) EXPECT_TRUE(a.ok);
  EXPECT_TRUE(waitFor([&] { return node_.queued_urls(1) == 2u && node_.queued_urls(2) == 3u; }));
  // A broken frame (a batch of 5 URLs in one byte) ends the link: the QM closes it.
  EXPECT_EQ(status()["uns_connections"].get<std::size_t>(), 1u);
  ASSERT_TRUE(uns.send(std::string("\xC1\x21\x01\x00\x00\x00\x05", 7)));
  EXPECT_TRUE(waitFor([&] { return status()["uns_connections"].get<std::size_t>() == 0; }));
  EXPECT_EQ(node_.queued_urls(1), 2u);
}

// A QM with node.link_frames: false does not take the offer: the UNS's sets stay XML,
// and a switch sent anyway is a protocol error.
TEST_F(QmServiceTest, AQmWithFramesOffDeclinesTheOffer) {
  start("node:\n  link_frames: false\n");
  asio::io_context cio;
  Client uns(cio, unsPort());
  AckCollector h;
  proto::QmStreamDecoder dec(h, {}, true);
  ASSERT_TRUE(uns.send(proto::encodeUnsOpen("m9/uns", 1) + proto::encodeSet(set(1, 1, {"http://a/1"}))));
  std::string got;
  while (h.acks.empty()) {
    std::string b = uns.read();
    ASSERT_FALSE(b.empty());
    got += b;
    dec.feed(b);
  }
  EXPECT_EQ(got.find("frames"), std::string::npos) << got;
  EXPECT_TRUE(h.acks[0].ok);
  ASSERT_TRUE(uns.send(proto::encodeFramesSwitch()));
  std::string rest;
  for (std::string b = uns.read(); !b.empty(); b = uns.read()) rest += b;
  EXPECT_EQ(rest, "") << "the QM closed the link without another answer";
}

}  // namespace
}  // namespace lcc::qm
