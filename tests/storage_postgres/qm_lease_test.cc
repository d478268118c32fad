// storage-postgres' QM lease (option qm_lease, plugins/storage-postgres/pg_lease.h):
// an old QM in a child process holds the lease; a second queue store waits as the
// standby while it renews; the child is paused (SIGSTOP) past the lease, the standby
// takes over (a new epoch); the child, continued, has its next writes refused as
// fenced, and nothing it tried after the takeover is in the store.
// Needs the fixture lcc_pg_server (LCC_TEST_PG_CONNINFO).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "contract/server_store_options.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

constexpr const char* kPlugin = "storage-postgres";
constexpr std::int64_t kLeaseMs = 3000;
constexpr auto kBound = std::chrono::seconds(60);  // every wait below ends by then

// Keeps what the plugin logs, so the test can wait for a line.
class CapturingLogger final : public Logger {
 public:
  void log(LogLevel, std::string_view m) override {
    std::lock_guard<std::mutex> g(mu_);
    lines_.emplace_back(m);
  }
  bool saw(const std::string& part) {
    std::lock_guard<std::mutex> g(mu_);
    for (const auto& l : lines_) {
      if (l.find(part) != std::string::npos) return true;
    }
    return false;
  }
  bool waitFor(const std::string& part) {
    const auto end = std::chrono::steady_clock::now() + kBound;
    while (!saw(part)) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

QueueEntry entry(int n) {
  QueueEntry e;
  e.notice.key = {1, "http://a/" + std::to_string(n), "text/html"};
  e.notice.fetch = "http://f/" + std::to_string(n);
  e.pset = static_cast<PSetId>(n);
  e.queued = fromUnixMillis(1714564800000 + n);
  return e;
}

ContentRecord record(int n) {
  ContentRecord r;
  r.key = {1, "http://c/" + std::to_string(n), "text/html"};
  r.seq = static_cast<ChangeSeq>(n);
  return r;
}

class QmLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::serverStoreSkipReason(kPlugin);
    if (!why.empty()) GTEST_SKIP() << why;
    conninfo_ = std::getenv("LCC_TEST_PG_CONNINFO");
  }
  std::unique_ptr<PluginRegistry> registry(const std::string& machine, Logger* logger) {
    return std::make_unique<PluginRegistry>(LCC_PLUGIN_DIR,
                                            HostContext{&clock_, posixEnv(), logger, dir_.path(), machine});
  }
  OptionsView options(PluginRegistry& reg, std::int64_t lease_ms) {
    auto values = reg.defaultOptions(kPlugin).value().all();
    values["conninfo"] = conninfo_;
    values["schema"] = schema_;
    values["qm_lease"] = lease_ms;
    return OptionsView(std::move(values));
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  std::string conninfo_;
  std::string schema_ = testing::freshSchemaName();
};

// The child: the old QM. Opens its queue and content stores (the lease), answers 'R',
// then for each byte n it reads writes QDB row n and content record n and answers
// 0 (both OK), 1 (refused as fenced) or 2 (another error). Exits when the pipe closes.
[[noreturn]] void oldQm(PluginRegistry& reg, const OptionsView& queue_opts, const OptionsView& content_opts,
                        int in, int out) {
  auto q = reg.makeQueueStore(kPlugin, queue_opts);
  auto c = reg.makeContentStore(kPlugin, content_opts);
  if (!q.isOk() || !c.isOk()) _exit(3);
  char ready = 'R';
  if (write(out, &ready, 1) != 1) _exit(4);
  unsigned char n = 0;
  while (read(in, &n, 1) == 1) {
    QueueBatch qb;
    qb.putEntry(entry(n));
    ContentBatch cb;
    cb.put(record(n));
    Status s = q.value()->apply(qb);
    Status t = c.value()->apply(cb);
    const bool fenced = s.message().find("fenced: QM epoch 1 was taken over by qm2") != std::string::npos &&
                        t.message().find("fenced: QM epoch 1 was taken over by qm2") != std::string::npos;
    char answer = s.isOk() && t.isOk() ? 0 : fenced ? 1 : 2;
    if (write(out, &answer, 1) != 1) _exit(5);
  }
  _exit(0);
}

TEST_F(QmLeaseTest, StandbyWaitsTakesOverAndThePausedQmIsFenced) {
  int to_child[2], from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(to_child[1]);
    close(from_child[0]);
    auto reg = registry("qm1", nullptr);
    auto content_opts = options(*reg, 0);
    oldQm(*reg, options(*reg, kLeaseMs), content_opts, to_child[0], from_child[1]);
  }
  close(to_child[0]);
  close(from_child[1]);
  auto command = [&](unsigned char n) {
    char answer = 9;
    if (write(to_child[1], &n, 1) != 1 || read(from_child[0], &answer, 1) != 1) return 9;
    return static_cast<int>(answer);
  };
  char ready = 0;
  ASSERT_EQ(read(from_child[0], &ready, 1), 1);
  ASSERT_EQ(ready, 'R') << "the old QM could not open its stores";
  ASSERT_EQ(command(1), 0) << "the lease holder writes";

  // The standby waits while the old QM renews.
  CapturingLogger log;
  auto reg = registry("qm2", &log);
  auto standby = std::async(std::launch::async, [&] { return reg->makeQueueStore(kPlugin, options(*reg, kLeaseMs)); });
  ASSERT_TRUE(log.waitFor("waiting for the QM lease (standby): held by qm1 pid " + std::to_string(child) +
                          " (epoch 1)"));
  EXPECT_EQ(standby.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the standby opened while the holder renews";
  ASSERT_EQ(command(2), 0) << "the holder still writes while a standby waits";

  // Paused past its lease: the standby takes over with the next epoch.
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  ASSERT_EQ(standby.wait_for(kBound), std::future_status::ready);
  auto q2 = standby.get();
  ASSERT_TRUE(q2.isOk()) << q2.status().toString();
  EXPECT_TRUE(log.saw("took the QM lease: epoch 2 as qm2 pid"));
  QueueBatch qb;
  qb.putEntry(entry(100));
  ASSERT_TRUE(q2.value()->apply(qb).isOk()) << "the new holder writes";

  // Woken up, the old QM is fenced: both of its stores refuse, nothing lands.
  ASSERT_EQ(kill(child, SIGCONT), 0);
  EXPECT_EQ(command(3), 1) << "the old QM's write after the takeover was not refused as fenced";
  EXPECT_EQ(command(4), 1) << "fenced is sticky";
  close(to_child[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(from_child[0]);
  for (int n : {1, 2, 100}) EXPECT_TRUE(q2.value()->getEntry(encodeUrlKey(entry(n).notice.key)).value()) << n;
  for (int n : {3, 4}) {
    EXPECT_FALSE(q2.value()->getEntry(encodeUrlKey(entry(n).notice.key)).value()) << "the fenced QM wrote row " << n;
  }
  auto c2 = reg->makeContentStore(kPlugin, options(*reg, 0));
  ASSERT_TRUE(c2.isOk()) << c2.status().toString();
  EXPECT_EQ(c2.value()->maxSeq().value(), 2u) << "the fenced QM wrote a content record";
  EXPECT_FALSE(c2.value()->get(encodeUrlKey(record(3).key)).value());
  EXPECT_TRUE(c2.value()->close().isOk());
  EXPECT_TRUE(q2.value()->close().isOk());
}

// The fence is in the write's own transaction, not only in the renewals: with a lease
// of 5 minutes (no renewal during the test), an epoch taken over behind the store's
// back refuses its very next write, and nothing of it lands.
TEST_F(QmLeaseTest, TheEpochCheckInsideTheWriteRefusesItWithoutWaitingForARenewal) {
  if (access("/usr/bin/psql", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/psql";
  auto reg = registry("qm1", nullptr);
  auto q = reg->makeQueueStore(kPlugin, options(*reg, 300000));
  ASSERT_TRUE(q.isOk()) << q.status().toString();
  auto c = reg->makeContentStore(kPlugin, options(*reg, 0));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  QueueBatch qb;
  qb.putEntry(entry(1));
  ASSERT_TRUE(q.value()->apply(qb).isOk());
  const std::string sql = "UPDATE " + schema_ + ".qm_lease SET epoch = epoch + 1, holder = 'qm9 pid 1'";
  ASSERT_EQ(std::system(("/usr/bin/psql -q '" + conninfo_ + "' -c \"" + sql + "\"").c_str()), 0);
  qb.clear();
  qb.putEntry(entry(2));
  Status s = q.value()->apply(qb);
  EXPECT_NE(s.message().find("fenced: QM epoch 1 was taken over by qm9 pid 1 (epoch 2)"), std::string::npos)
      << s.toString();
  ContentBatch cb;
  cb.put(record(1));
  Status t = c.value()->apply(cb);
  EXPECT_NE(t.message().find("fenced: QM epoch 1"), std::string::npos) << t.toString();
  EXPECT_FALSE(q.value()->getEntry(encodeUrlKey(entry(2).notice.key)).value()) << "the fenced write landed";
  EXPECT_FALSE(c.value()->get(encodeUrlKey(record(1).key)).value()) << "the fenced write landed";
  EXPECT_FALSE(q.value()->close().isOk()) << "a fenced store closed cleanly (a write)";
}

TEST_F(QmLeaseTest, ACleanStopHandsTheLeaseOverAtOnce) {
  CapturingLogger log;
  auto reg1 = registry("qm1", &log);
  auto q1 = reg1->makeQueueStore(kPlugin, options(*reg1, 300000));  // 5 min: only a release frees it soon
  ASSERT_TRUE(q1.isOk()) << q1.status().toString();
  EXPECT_TRUE(q1.value()->close().isOk());
  q1 = Status::aborted("dropped");  // the store object goes: the lease is given up
  auto reg2 = registry("qm2", &log);
  auto q2 = std::async(std::launch::async, [&] { return reg2->makeQueueStore(kPlugin, options(*reg2, 300000)); });
  ASSERT_EQ(q2.wait_for(kBound), std::future_status::ready) << "the standby still waits for a released lease";
  auto got = q2.get();
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_TRUE(log.saw("took the QM lease: epoch 2 as qm2"));
  EXPECT_TRUE(got.value()->close().isOk());
}

TEST_F(QmLeaseTest, TheOptionIsCheckedAndBelongsToTheQueueStore) {
  auto reg = registry("qm1", nullptr);
  auto short_lease = reg->makeQueueStore(kPlugin, options(*reg, 500));
  ASSERT_FALSE(short_lease.isOk());
  EXPECT_NE(short_lease.status().message().find("options.qm_lease: 0 (off) or 1s to 5m"), std::string::npos)
      << short_lease.status().toString();
  auto on_content = reg->makeContentStore(kPlugin, options(*reg, kLeaseMs));
  ASSERT_FALSE(on_content.isOk());
  EXPECT_NE(on_content.status().message().find("options.qm_lease: set it on the queue store"), std::string::npos)
      << on_content.status().toString();
}

}  // namespace
}  // namespace lcc
