// Crash test: a child process applies and syncs numbered batches to a queue store
// and a content store and reports each synced batch on a pipe; the parent SIGKILLs
// it at a random moment (also in the middle of apply() or sync()), reopens the
// stores and checks that every batch reported synced is whole and that no batch is
// partial. Rounds continue on the same files, so recovery is itself recovered from.
// Parameterized on the store plugin (and its options); kill -9 checks process-crash
// safety only — power loss is argued in plugins/storage-sqlite/README.md.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::testing {
namespace {

constexpr int kPerBatch = 100;  // rows per batch (queue entries and content records)
constexpr int kRounds = 12;

struct CrashParam {
  std::string plugin;
  std::map<std::string, std::string> options;
  std::string label;
};

std::string batchUrl(std::int64_t b, int i) { return "http://crash/" + std::to_string(b) + "/" + std::to_string(i); }

std::int64_t metaInt(const Result<std::optional<std::string>>& m) {
  return m.isOk() && m->has_value() ? std::stoll(**m) : -1;
}

class CrashTest : public ::testing::TestWithParam<CrashParam> {
 protected:
  HostContext host() { return HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}; }
  OptionsView options(PluginRegistry& reg) {
    auto o = reg.defaultOptions(GetParam().plugin, GetParam().options);
    return o.isOk() ? *o : OptionsView();
  }

  // The child: never returns.
  [[noreturn]] void writer(int fd) {
    PluginRegistry reg(LCC_PLUGIN_DIR, host());
    auto q = reg.makeQueueStore(GetParam().plugin, options(reg));
    auto c = reg.makeContentStore(GetParam().plugin, options(reg));
    if (!q.isOk() || !c.isOk()) _exit(3);
    // Each store continues its own batch numbering: a crash between the two
    // applies leaves the content store one batch behind the queue store.
    std::int64_t qb_no = metaInt((*q)->getMeta("last_batch")) + 1;
    std::int64_t cb_no = metaInt((*c)->getMeta("last_batch")) + 1;
    ChangeSeq seq = (*c)->maxSeq().valueOr(0);
    for (int n = 0; n < 100000; ++n, ++qb_no, ++cb_no) {
      QueueBatch qb;
      ContentBatch cb;
      for (int i = 0; i < kPerBatch; ++i) {
        QueueEntry e;
        e.notice.key = UrlKey{1, batchUrl(qb_no, i), "text/html"};
        e.pset = static_cast<PSetId>(qb_no);
        qb.putEntry(e);
        ContentRecord r;
        r.key = UrlKey{1, batchUrl(cb_no, i), "text/html"};
        r.seq = ++seq;
        r.filename = std::to_string(cb_no);
        cb.put(r);
      }
      qb.putMeta("last_batch", std::to_string(qb_no));
      cb.putMeta("last_batch", std::to_string(cb_no));
      if (!(*q)->apply(qb).isOk() || !(*c)->apply(cb).isOk()) _exit(4);
      if (!(*q)->sync().isOk() || !(*c)->sync().isOk()) _exit(5);
      // Both stores now hold their batch durably: report both numbers.
      const std::int64_t synced[2] = {qb_no, cb_no};
      if (::write(fd, synced, sizeof synced) != sizeof synced) _exit(6);
    }
    _exit(0);
  }

  testing::TempDir dir_;
  SimClock clock_;
};

TEST_P(CrashTest, EverySyncedBatchIsWholeAndNoBatchIsPartial) {
  std::mt19937 rng(20261121);
  std::int64_t acked_total = 0;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(fds[0]);
      writer(fds[1]);
    }
    ::close(fds[1]);
    // Let a random number of batches get synced, then kill at a random moment.
    std::int64_t acked[2] = {-1, -1}, v[2] = {0, 0};
    const int wait_acks = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int i = 0; i < wait_acks; ++i) {
      ASSERT_EQ(::read(fds[0], v, sizeof v), static_cast<ssize_t>(sizeof v)) << "child died early";
      acked[0] = v[0];
      acked[1] = v[1];
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 30000)(rng)));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status)) << "child exited on its own with " << WEXITSTATUS(status);
    while (::read(fds[0], v, sizeof v) == static_cast<ssize_t>(sizeof v)) {
      acked[0] = v[0];
      acked[1] = v[1];
    }
    ::close(fds[0]);
    const std::int64_t last_acked = acked[0], last_acked_content = acked[1];
    acked_total = last_acked;

    PluginRegistry reg(LCC_PLUGIN_DIR, host());
    auto q = reg.makeQueueStore(GetParam().plugin, options(reg));
    auto c = reg.makeContentStore(GetParam().plugin, options(reg));
    ASSERT_TRUE(q.isOk()) << q.status().toString();
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    EXPECT_FALSE((*q)->openInfo().clean_shutdown) << "round " << round;
    EXPECT_FALSE((*q)->openInfo().may_have_lost_synced);

    // Queue: batches 0..last whole, nothing after, last >= what was acknowledged.
    const std::int64_t q_last = metaInt((*q)->getMeta("last_batch"));
    EXPECT_GE(q_last, last_acked) << "a synced batch was lost (round " << round << ")";
    std::map<std::int64_t, int> per_batch;
    ASSERT_TRUE((*q)->scanEntries([&](const QueueEntry& e) {
                   ++per_batch[static_cast<std::int64_t>(e.pset)];
                   return true;
                 }).isOk());
    for (const auto& [b, n] : per_batch) {
      EXPECT_EQ(n, kPerBatch) << "partial queue batch " << b;
      EXPECT_LE(b, q_last) << "rows of a batch past last_batch";
    }
    EXPECT_EQ(static_cast<std::int64_t>(per_batch.size()), q_last + 1);
    EXPECT_EQ(static_cast<std::int64_t>((*q)->entryCount().valueOr(0)), (q_last + 1) * kPerBatch);

    // Content: the same, and seqs dense from 1 (every batch whole, in order).
    const std::int64_t c_last = metaInt((*c)->getMeta("last_batch"));
    EXPECT_GE(c_last, last_acked_content) << "a synced batch was lost (round " << round << ")";
    std::map<std::int64_t, int> content_batches;
    ChangeSeq expect_seq = 0;
    ASSERT_TRUE((*c)->scanSince(0, ContentFilter{}, [&](const ContentRecord& r) {
                   EXPECT_EQ(r.seq, ++expect_seq);
                   ++content_batches[std::stoll(r.filename)];
                   return true;
                 }).isOk());
    for (const auto& [b, n] : content_batches) EXPECT_EQ(n, kPerBatch) << "partial content batch " << b;
    EXPECT_EQ(static_cast<std::int64_t>(content_batches.size()), c_last + 1);
    EXPECT_EQ(static_cast<std::int64_t>((*c)->maxSeq().valueOr(0)), (c_last + 1) * kPerBatch);
    // The parent leaves the stores unclosed too: every round starts from a crash.
    if (HasFailure()) break;
  }
  EXPECT_GT(acked_total, kRounds) << "the child synced batches in every round";
}

INSTANTIATE_TEST_SUITE_P(
    Plugins, CrashTest,
    ::testing::Values(CrashParam{"storage-sqlite", {}, "sqlite_normal"},
                      CrashParam{"storage-sqlite", {{"synchronous", "full"}}, "sqlite_full"}),
    [](const ::testing::TestParamInfo<CrashParam>& info) { return info.param.label; });

}  // namespace
}  // namespace lcc::testing
