// The BOT-M role over real sockets: a fake url source, robots (an lcc-bot process
// killed mid-fetch, in-process robots with fetch-stub on simulated time), deletes,
// and a parent BOT-M forwarding to a child.
#include <signal.h>
#include <sys/wait.h>

#include "botm_service_fixture.h"
#include "common/content_locator.h"
#include "qm/botm_server.h"
#include "support/http_test_server.h"

namespace lcc {
namespace {

TEST_F(BotmServiceTest, ARobotKilledMidFetchHasItsFetchRehandedWithTheSameFileAndOneResultGoesUp) {
  FakeSource source;
  const std::uint16_t robots = freePort();
  BotmNode node(clock_, leafYaml("m1", source.address(), robots));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
  EXPECT_EQ(source.all<proto::LinkBotmHello>()[0], (proto::LinkBotmHello{"m1", 0, "", proto::kFramesVersion}))
      << "the opening offers frames";
  EXPECT_EQ(source.all<proto::LinkMachines>().at(0).ids, std::vector<std::string>{"m1"});

  // Robot A: a real lcc-bot process whose fetch hangs (fetch-stub, real-time delay).
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string bin = std::string(LCC_BIN_DIR) + "/lcc-bot";
    std::string target = "127.0.0.1:" + std::to_string(robots);
    ::execl(bin.c_str(), bin.c_str(), "--connect", target.c_str(), "--slots", "1", "--fetcher", "fetch-stub",
            "--plugin-dir", LCC_PLUGIN_DIR, "--name", "robot-a", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    return c && c->slots == 1;
  })) << "lcc-bot did not connect";
  source.send(proto::encodeFetch(
      linkFetch(1, "http://provider.test/a.htm?stub_delay=60s&stub_size=100", "text/html", std::nullopt)));
  ASSERT_TRUE(eventually([&] { return node.gauge("lcc_botm_fetches_total") == 1 && node.gauge("lcc_botm_queued") == 0; }));
  ::kill(pid, SIGKILL);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    return c && c->slots == 0;
  }));
  EXPECT_EQ(node.gauge("lcc_botm_queued"), 1);

  // Robot B (in process, fetch-stub on simulated time) takes it over.
  auto f = stub();
  auto b = robot(node, *f, robots, 4);
  ASSERT_TRUE(eventually([&] { return b->inFlight() == 1; }));
  // The stub schedules its delay on the simulated clock just after the fetch counts
  // as in flight: keep moving time until the result shows, so an advance that came
  // before the timer existed cannot strand the test.
  ASSERT_TRUE(eventually([&] {
    clock_.advance(60s);
    return source.waitFor([](const auto& ms) { return FakeSource::count<FetchResult>(ms) >= 1; }, 20ms);
  }));
  source.sync();
  auto results = source.all<FetchResult>();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].message;
  EXPECT_EQ(results[0].machine, "m1");
  EXPECT_EQ(results[0].filename, "00/00/0");  // the name robot A had
  EXPECT_EQ(results[0].size, 100u);
  EXPECT_EQ(node.gauge("lcc_botm_rehanded_total"), 1);
  auto body = posixEnv()->readFile(node.content() + "/00/00/0");
  ASSERT_TRUE(body.isOk());
  EXPECT_EQ(body.value().size(), 100u);
  b->stop();
  ASSERT_TRUE(eventually([&] { return b->inFlight() == 0; }));
}

TEST_F(BotmServiceTest, ResultsAndDeletesOverTheWire) {
  FakeSource source;
  const std::uint16_t robots = freePort();
  BotmNode node(clock_, leafYaml("m1", source.address(), robots));
  // The source session first: a robot that came before it would be counted in the
  // opening's capacity, and no <capacity> message would follow.
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
  auto f = stub();
  auto r = robot(node, *f, robots, 2, nullptr, /*frames=*/false);  // XML both ways (the frames: below)
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    return c && c->slots == 2;
  }));
  source.send(proto::encodeFetch(linkFetch(10, "http://p.test/ok?stub_size=10", "text/html", std::nullopt)) +
              proto::encodeFetch(linkFetch(11, "http://p.test/gone?stub_status=404", "text/html", std::nullopt)) +
              proto::encodeFetch(linkFetch(12, "http://p.test/same?stub_lm=1714564680", "text/html", 1714564680)));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<FetchResult>(ms) == 3; }));
  std::map<std::uint64_t, FetchResult> by_id;
  for (auto& res : source.all<FetchResult>()) by_id[res.id] = res;
  ASSERT_TRUE(by_id[10].ok());
  EXPECT_FALSE(by_id[11].ok());
  EXPECT_EQ(by_id[11].code, ErrorCode::kNotFound);
  EXPECT_EQ(by_id[11].http_status, 404);
  EXPECT_TRUE(by_id[12].unchanged);
  const std::string file = node.content() + "/" + by_id[10].filename;
  ASSERT_TRUE(posixEnv()->exists(file));

  source.send(proto::encodeDelete({1, "m7", by_id[10].filename}) + proto::encodeDelete({2, "m1", by_id[10].filename}) +
              proto::encodeDelete({3, "m1", "../../../etc/passwd"}));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkDeleted>(ms) == 3; }));
  auto del = source.all<proto::LinkDeleted>();
  EXPECT_EQ(del[0], (proto::LinkDeleted{1, false, "unknown-machine"}));
  EXPECT_EQ(del[1], (proto::LinkDeleted{2, true, ""}));
  EXPECT_FALSE(del[2].ok);
  EXPECT_FALSE(posixEnv()->exists(file));
  EXPECT_EQ(node.status()["source_frames"], false);
  EXPECT_EQ(node.status()["framed_peers"], 0);
  r->stop();
}

// Issue 28: a source that answers the BOT-M's offer gets compact frames both ways, and
// the robot (it offers too) talks frames to the BOT-M: the same fetches, results and
// deletes as over XML (the test above, whose source answers XML only).
TEST_F(BotmServiceTest, ResultsAndDeletesOverCompactFrames) {
  FakeSource source(/*frames=*/true);
  const std::uint16_t robots = freePort();
  BotmNode node(clock_, leafYaml("m1", source.address(), robots));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
  EXPECT_EQ(source.all<proto::LinkBotmHello>().at(0).frames, 1u) << "the BOT-M offers frames";
  auto f = stub();
  auto r = robot(node, *f, robots, 2);
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    return c && c->slots == 2;
  }));
  EXPECT_TRUE(source.framed()) << "the BOT-M switched to frames";
  EXPECT_TRUE(eventually([&] { return node.status()["source_frames"] == true && node.status()["framed_peers"] == 1; }))
      << "and so did the robot: " << node.status().dump();
  source.sendMessages({linkFetch(10, "http://p.test/ok?stub_size=10", "text/html", std::nullopt),
                       linkFetch(11, "http://p.test/gone?stub_status=404", "text/html", std::nullopt)});
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<FetchResult>(ms) == 2; }));
  std::map<std::uint64_t, FetchResult> by_id;
  for (auto& res : source.all<FetchResult>()) by_id[res.id] = res;
  ASSERT_TRUE(by_id[10].ok()) << by_id[10].message;
  EXPECT_EQ(by_id[11].code, ErrorCode::kNotFound);
  const std::string file = node.content() + "/" + by_id[10].filename;
  ASSERT_TRUE(posixEnv()->exists(file));
  source.sendMessages({proto::LinkDelete{2, "m1", by_id[10].filename}});
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkDeleted>(ms) == 1; }));
  EXPECT_TRUE(source.all<proto::LinkDeleted>().at(0).ok);
  EXPECT_FALSE(posixEnv()->exists(file));
  r->stop();
}

// The orphan sweep over the wire: a file left in the content folder that no result
// named (a QM crash lost its record) is listed with the stored ones, and a <delete>
// from the source removes it.
TEST_F(BotmServiceTest, ASweepListsContentFilesAndTheOrphanIsDeletedOverTheWire) {
  FakeSource source;
  const std::uint16_t robots = freePort();
  BotmNode node(clock_, leafYaml("m1", source.address(), robots));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
  auto f = stub();
  auto r = robot(node, *f, robots, 1);
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    return c && c->slots == 1;
  }));
  source.send(proto::encodeFetch(linkFetch(10, "http://p.test/ok?stub_size=10", "text/html", std::nullopt)));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<FetchResult>(ms) == 1; }));
  const std::string stored = source.all<FetchResult>().at(0).filename;
  const std::string orphan = "00/0f/f00";
  ASSERT_TRUE(posixEnv()->createDirs(node.content() + "/00/0f").isOk());
  ASSERT_TRUE(posixEnv()->writeFileAtomic(node.content() + "/" + orphan, std::string(1234, 'x')).isOk());

  source.send(proto::encodeSweep({4}));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkSwept>(ms) == 1; }));
  std::map<std::string, std::uint64_t> listed;
  for (const auto& file : source.all<proto::LinkFile>()) listed[file.name] = file.size;
  EXPECT_EQ(listed, (std::map<std::string, std::uint64_t>{{stored, 10}, {orphan, 1234}}));
  EXPECT_EQ(source.all<proto::LinkSwept>().at(0), (proto::LinkSwept{4, "m1", 2}));

  source.send(proto::encodeDelete({7, "m1", orphan}));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkDeleted>(ms) == 1; }));
  EXPECT_FALSE(posixEnv()->exists(node.content() + "/" + orphan));
  EXPECT_TRUE(posixEnv()->exists(node.content() + "/" + stored));
  r->stop();
}

TEST_F(BotmServiceTest, AProtocolBreakingRobotIsDisconnectedAndTheBotmGoesOn) {
  FakeSource source;
  const std::uint16_t robots = freePort();
  BotmNode node(clock_, leafYaml("m1", source.address(), robots));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(robots);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string bad = "<!DOCTYPE x [<!ENTITY e \"boom\">]><lcc:robot xmlns:lcc=\"http://www.lococa.org/1.0/robot\" slots=\"9\">";
  ::send(s, bad.data(), bad.size(), MSG_NOSIGNAL);
  char buf[256];
  EXPECT_LE(::recv(s, buf, sizeof buf, 0), 0);  // closed on us
  ::close(s);
  auto f = stub();
  auto r = robot(node, *f, robots, 3);
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    return c && c->slots == 3;
  }));
  r->stop();
}

TEST_F(BotmServiceTest, AParentForwardsToItsChildAndRoutesDeletesByMachine) {
  FakeSource source;
  const std::uint16_t children = freePort();
  const std::uint16_t robots = freePort();
  BotmNode parent(clock_, "node:\n  machine_id: central\nlisten:\n  botm: 127.0.0.1:" + std::to_string(children) +
                              "\nbotm:\n  parent: true\n  source: " + source.address() +
                              "\n  reconnect_min: 20ms\n  reconnect_max: 50ms\n");
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
  BotmNode child(clock_, leafYaml("m2", "127.0.0.1:" + std::to_string(children), robots));
  auto f = stub();
  auto r = robot(child, *f, robots, 2);
  ASSERT_TRUE(source.waitFor([](const auto& ms) {
    auto c = FakeSource::last<proto::LinkCapacity>(ms);
    auto m = FakeSource::last<proto::LinkMachines>(ms);
    return c && c->slots == 2 && m && m->ids == std::vector<std::string>{"m2"};
  }));
  source.send(proto::encodeFetch(linkFetch(5, "http://p.test/x?stub_size=7", "text/html", std::nullopt)));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<FetchResult>(ms) == 1; }));
  auto res = source.all<FetchResult>().at(0);
  EXPECT_EQ(res.id, 5u);
  ASSERT_TRUE(res.ok()) << res.message;
  EXPECT_EQ(res.machine, "m2");
  ASSERT_TRUE(posixEnv()->exists(child.content() + "/" + res.filename));
  source.send(proto::encodeDelete({1, "m9", res.filename}) + proto::encodeDelete({2, "m2", res.filename}));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkDeleted>(ms) == 2; }));
  auto del = source.all<proto::LinkDeleted>();
  EXPECT_EQ(del[0], (proto::LinkDeleted{1, false, "unknown-machine"}));
  EXPECT_EQ(del[1], (proto::LinkDeleted{2, true, ""}));
  EXPECT_FALSE(posixEnv()->exists(child.content() + "/" + res.filename));
  r->stop();
  ASSERT_TRUE(eventually([&] { return r->inFlight() == 0; }));
}

// The QM's BOT-M port (the real qm::BotmServer) learns where each machine's content
// is read: a leaf BOT-M with an HTTP port advertises http://<listen.http>, its parent
// passes it up with the machine list, and the URL serves the fetched file.
class RecordingLinks final : public qm::BotmLinkHandler {
 public:
  void linkUp(qm::LinkId link, const std::string&, std::uint64_t capacity) override {
    capacity_ = capacity;
    link_ = link;
  }
  void linkCapacity(qm::LinkId, std::uint64_t capacity) override { capacity_ = capacity; }
  void linkMachines(qm::LinkId, const std::vector<std::string>&) override {}
  void linkDown(qm::LinkId) override { ++downs_; }
  void result(qm::LinkId, const FetchResult& o) override {
    std::lock_guard<std::mutex> l(mu_);
    results_.push_back(o);
  }
  void deleted(qm::LinkId, std::uint64_t id, bool ok, const std::string& reason) override {
    std::lock_guard<std::mutex> l(mu_);
    deleted_.push_back({id, ok, reason});
  }
  std::size_t results() {
    std::lock_guard<std::mutex> l(mu_);
    return results_.size();
  }
  std::atomic<int> downs_{0};
  std::vector<proto::LinkDeleted> deleted_;
  std::atomic<qm::LinkId> link_{0};
  std::atomic<std::uint64_t> capacity_{0};
  std::mutex mu_;
  std::vector<FetchResult> results_;
};

TEST_F(BotmServiceTest, ContentUrlsOfChildrenReachTheQmAndServeTheFetchedFile) {
  boost::asio::io_context qio;
  ContentLocator locator;
  RecordingLinks links;
  qm::BotmServerOptions qo = qm::BotmServerOptions::fromConfig(Config::defaults());
  qo.listen = "127.0.0.1:0";
  qo.content_locator = &locator;
  qm::BotmServer qm_port(qio, qo, links);
  ASSERT_TRUE(qm_port.start().isOk());
  auto qguard = boost::asio::make_work_guard(qio);
  std::thread qthread([&] { qio.run(); });

  const std::uint16_t children = freePort(), robots = freePort(), http_port = freePort();
  {
    BotmNode parent(clock_, "node:\n  machine_id: central\nlisten:\n  botm: 127.0.0.1:" + std::to_string(children) +
                                "\nbotm:\n  parent: true\n  source: 127.0.0.1:" + std::to_string(qm_port.port()) +
                                "\n  reconnect_min: 20ms\n  reconnect_max: 50ms\n");
    BotmNode child(clock_,
                   leafYaml("m2", "127.0.0.1:" + std::to_string(children), robots,
                            "  http: 127.0.0.1:" + std::to_string(http_port) + "\n"),
                   /*with_http=*/true);
    // A second child that advertises an explicit URL and no HTTP port of its own.
    BotmNode other(clock_, leafYaml("m3", "127.0.0.1:" + std::to_string(children), freePort(), "",
                                    "  content_url: http://files.m3.example:8080/lcc/\n"));
    const std::string m2_url = "http://127.0.0.1:" + std::to_string(http_port);
    ASSERT_TRUE(eventually([&] { return locator.urlOf("m2") == m2_url && locator.urlOf("m3").has_value(); }));
    EXPECT_EQ(locator.urlOf("m3"), "http://files.m3.example:8080/lcc");
    EXPECT_EQ(locator.urlOf("central"), std::nullopt) << "a parent holds no content";

    // A fetch through the chain; the file it made is served at the advertised URL.
    auto f = stub();
    auto r = robot(child, *f, robots, 2);
    ASSERT_TRUE(eventually([&] { return links.capacity_ == 2; }));
    qm_port.sendFetch(links.link_, FetchRequest{.id = 77, .url = "http://p.test/x?stub_size=4321", .expected_mime = "text/html"});
    ASSERT_TRUE(eventually([&] {
      std::lock_guard<std::mutex> l(links.mu_);
      return !links.results_.empty();
    }));
    FetchResult o;
    {
      std::lock_guard<std::mutex> l(links.mu_);
      o = links.results_.at(0);
    }
    ASSERT_TRUE(o.ok()) << o.message;
    EXPECT_EQ(o.machine, "m2");
    auto reply = testing::httpTestRequest(http_port, "GET", "/content/" + o.filename);
    ASSERT_EQ(reply.status, 200);
    EXPECT_EQ(reply.headers["x-lcc-machine"], "m2");
    EXPECT_EQ(reply.headers["x-lcc-size"], "4321");
    auto on_disk = posixEnv()->readFile(child.content() + "/" + o.filename);
    ASSERT_TRUE(on_disk.isOk());
    EXPECT_EQ(on_disk->size(), 4321u);
    EXPECT_NE(reply.body.find(on_disk->substr(0, 100)), std::string::npos) << "the body carries the file";
    r->stop();
    ASSERT_TRUE(eventually([&] { return r->inFlight() == 0; }));
  }
  qm_port.stop();
  qguard.reset();
  qio.stop();
  qthread.join();
}

// Issue 28: a BOT-M whose url source runs in the same process (the QM's port listens
// on the process's LocalListeners at the address botm.source names) links in process,
// and so does a robot of the process (the BOT-M listens there on listen.robots): no
// TCP connection, the same messages as records, the same fetch, result and delete.
TEST_F(BotmServiceTest, ABotmAndTheQmOfOneProcessLinkInProcess) {
  boost::asio::io_context qio;
  net::LocalListeners listeners(qio, net::LocalLinkOptions{1024});
  RecordingLinks links;
  qm::BotmServerOptions qo = qm::BotmServerOptions::fromConfig(Config::defaults());
  qo.listen = "127.0.0.1:0";
  qo.local_listeners = &listeners;
  qm::BotmServer qm_port(qio, qo, links);
  ASSERT_TRUE(qm_port.start().isOk());
  // The QM's io thread, stopped and joined however the test ends.
  struct QmThread {
    boost::asio::io_context& io;
    qm::BotmServer& port;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
    std::thread thread{[this] { io.run(); }};
    ~QmThread() {
      port.stop();
      guard.reset();
      io.stop();
      thread.join();
    }
  } qm_thread{qio, qm_port};
  {
    const std::uint16_t robots = freePort();
    BotmNode node(clock_, leafYaml("m1", qo.listen, robots), false, &listeners);
    auto f = stub();
    auto r = robot(node, *f, robots, 2, &listeners);
    ASSERT_TRUE(eventually([&] { return links.capacity_ == 2; }));
    EXPECT_TRUE(r->inProcess()) << "the robot links to its BOT-M in process";
    EXPECT_EQ(qm_port.connections(), 1u);
    EXPECT_EQ(qm_port.localLinks(), 1u) << "the link is in process, not a TCP connection";
    EXPECT_EQ(node.status()["source_link"], "in process");
    EXPECT_TRUE(node.status()["source_connected"].get<bool>());

    FetchRequest fetch{.id = 77, .url = "http://p.test/x?stub_size=321", .expected_mime = "text/html"};
    fetch.path = "/not/carried";  // the link carries no path: the leaf BOT-M names the file
    qm_port.sendFetch(links.link_, fetch);
    qm_port.sendFetch(links.link_, FetchRequest{.id = 78, .url = "http://p.test/gone?stub_status=404"});
    ASSERT_TRUE(eventually([&] { return links.results() == 2; }));
    std::map<std::uint64_t, FetchResult> by_id;
    {
      std::lock_guard<std::mutex> l(links.mu_);
      for (const auto& o : links.results_) by_id[o.id] = o;
    }
    ASSERT_TRUE(by_id[77].ok()) << by_id[77].message;
    EXPECT_EQ(by_id[77].machine, "m1");
    EXPECT_EQ(by_id[77].size, 321u);
    EXPECT_EQ(by_id[78].code, ErrorCode::kNotFound);
    const std::string file = node.content() + "/" + by_id[77].filename;
    ASSERT_TRUE(posixEnv()->exists(file));

    qm_port.sendDelete(links.link_, 5, "m1", by_id[77].filename);
    qm_port.sendDelete(links.link_, 6, "m9", by_id[77].filename);
    ASSERT_TRUE(eventually([&] {
      std::lock_guard<std::mutex> l(links.mu_);
      return links.deleted_.size() == 2;
    }));
    {
      std::lock_guard<std::mutex> l(links.mu_);
      EXPECT_EQ(links.deleted_[0], (proto::LinkDeleted{5, true, ""}));
      EXPECT_EQ(links.deleted_[1], (proto::LinkDeleted{6, false, "unknown-machine"}));
    }
    EXPECT_FALSE(posixEnv()->exists(file));
    r->stop();
    ASSERT_TRUE(eventually([&] { return r->inFlight() == 0; }));
  }
  // The BOT-M stopped: the QM saw its link go down.
  ASSERT_TRUE(eventually([&] { return links.downs_ == 1 && qm_port.connections() == 0; }));
}

}  // namespace
}  // namespace lcc
