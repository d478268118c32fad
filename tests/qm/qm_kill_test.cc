// kill -9 of a running QM (its own process, storage-kyoto, real sockets): every set
// it acknowledged is queued after a restart. Its own executable: it forks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "common/config/config.h"
#include "common/metrics.h"
#include "common/posix_env.h"
#include "common/system_clock.h"
#include "proto/uns_qm.h"
#include "qm/qm_service.h"
#include "qm_test_util.h"

namespace lcc::qm {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace lcc::qm::testing;
using lcc::testing::TempDir;

constexpr const char* kPlugin = "storage-kyoto";

// The child: a QM on 127.0.0.1:0 until it is killed. Writes its port to `fd`.
[[noreturn]] void runQm(const std::string& dir, int fd) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("listen:\n  qm: 127.0.0.1:0\n  botm: 127.0.0.1:0\nqm:\n  checkpoint_interval: 50ms\n",
                              "kill.yaml", {}, &problems);
  if (!cfg.isOk()) _exit(3);
  SystemClock clock;
  Stores stores(kPlugin, dir, &clock, posixEnv());
  if (!stores.open().isOk()) _exit(4);
  asio::io_context io;
  Metrics metrics;
  NodeContext node;
  node.config = &cfg.value();
  node.io = &io;
  node.clock = &clock;
  node.env = posixEnv();
  node.metrics = &metrics;
  node.data_dir = dir;
  node.machine_id = "m1";
  node.queue = stores.queue.get();
  node.content = stores.content.get();
  node.providers = stores.providers.get();
  auto svc = makeQmService(node);
  if (!svc.isOk() || !svc.value()->start().isOk()) _exit(5);
  nlohmann::json j;
  svc.value()->status(j);
  std::uint16_t port = j["uns_port"].get<std::uint16_t>();
  if (::write(fd, &port, sizeof port) != sizeof port) _exit(6);
  auto work = asio::make_work_guard(io);
  std::thread t([&] { io.run(); });
  io.run();
  _exit(0);
}

class AckCollector : public proto::QmStreamHandler {
 public:
  void onQmOpen(std::uint32_t) override {}
  void onAck(const proto::UnsQmAck& a) override { acks.push_back(a); }
  std::vector<proto::UnsQmAck> acks;
};

std::string url(std::uint64_t set, int i) { return "http://k/" + std::to_string(set) + "/" + std::to_string(i); }

TEST(QmKill, AckedSetsSurviveKill9) {
  TempDir dir;
  {
    // Providers exist before the QM starts.
    Stores s(kPlugin, dir.path(), nullptr, posixEnv());
    ASSERT_TRUE(s.open().isOk());
    addProviders(*s.providers, 2);
    ASSERT_TRUE(s.close().isOk());
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    runQm(dir.path(), fds[1]);
  }
  ::close(fds[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(::read(fds[0], &port, sizeof port), static_cast<ssize_t>(sizeof port)) << "the QM child did not start";
  ::close(fds[0]);

  asio::io_context io;
  tcp::socket sock(io);
  sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  timeval tv{10, 0};
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // Pipeline 400 sets of 5 URLs; kill the QM once 100 acks came back.
  std::string out = proto::encodeUnsOpen("kill/uns");
  for (std::uint64_t id = 1; id <= 400; ++id) {
    proto::UnsQmSet s;
    s.header.id = id;
    s.header.pid = 1 + id % 2;
    s.header.count = 5;
    for (int i = 0; i < 5; ++i) s.urls.push_back(update(s.header.pid, url(id, i)));
    out += proto::encodeSet(s);
  }
  std::thread writer([&] {
    boost::system::error_code ec;
    asio::write(sock, asio::buffer(out), ec);
  });
  AckCollector h;
  proto::QmStreamDecoder dec(h);
  char buf[65536];
  while (h.acks.size() < 100) {
    boost::system::error_code ec;
    std::size_t n = sock.read_some(asio::buffer(buf), ec);
    ASSERT_FALSE(ec) << "the QM stopped answering after " << h.acks.size() << " acks";
    dec.feed(buf, n);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  // Acks that were already on the wire count too.
  for (;;) {
    boost::system::error_code ec;
    std::size_t n = sock.read_some(asio::buffer(buf), ec);
    if (ec || n == 0) break;
    dec.feed(buf, n);
  }
  sock.close();
  writer.join();
  ASSERT_GE(h.acks.size(), 100u);

  // Restart: stores (recovering) + the intake journal + the engine.
  lcc::testing::SimClock clock;
  Stores stores(kPlugin, dir.path(), &clock, posixEnv());
  ASSERT_TRUE(stores.open().isOk());
  auto j = Journal::open(posixEnv(), dir.path() + "/qm/journal");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  RecordingBotm botm;
  QmDeps deps{stores.queue.get(), stores.content.get(), stores.providers.get(), j.value().get(), &clock, nullptr, &botm,
              nullptr};
  QueueManager qm(deps, QmOptions::fromConfig(Config::defaults()));
  ASSERT_TRUE(qm.open().isOk());
  std::size_t missing = 0;
  for (const auto& a : h.acks) {
    ASSERT_TRUE(a.ok);
    for (int i = 0; i < 5; ++i) {
      ProviderId pid = 1 + a.id % 2;
      auto e = stores.queue->getEntry(encodeUrlKey({pid, url(a.id, i), "text/html"}));
      ASSERT_TRUE(e.isOk());
      if (!e.value()) ++missing;
    }
  }
  EXPECT_EQ(missing, 0u) << "URLs of acknowledged sets lost by kill -9 (" << h.acks.size() << " acks)";
  EXPECT_GE(qm.queued(), h.acks.size() * 5);
  EXPECT_FALSE(qm.cacheCrash()) << "a process crash is not a cache crash";
  (void)qm.close();
  (void)stores.close();
}

}  // namespace
}  // namespace lcc::qm
