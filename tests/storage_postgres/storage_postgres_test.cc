// storage-postgres beyond the store contract suite: option problems, reconnecting
// after the server restarts, a kill -9 of a writer losing nothing it was told was
// committed, and two processes sharing one provider store.
// Needs the fixture lcc_pg_server (LCC_TEST_PG_CONNINFO); the restart case starts a
// server of its own (pg_server.sh), so it never disturbs the tests sharing the fixture's.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "contract/server_store_options.h"
#include "storage_postgres/private_server.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

constexpr const char* kPlugin = "storage-postgres";

class StoragePostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::serverStoreSkipReason(kPlugin);
    if (!why.empty()) GTEST_SKIP() << why;
    conninfo_ = std::getenv("LCC_TEST_PG_CONNINFO");
  }
  std::unique_ptr<PluginRegistry> registry() {
    return std::make_unique<PluginRegistry>(
        LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(kPlugin), dir_.path(), "m1"});
  }
  // The defaults with `changes` on top (conninfo and schema of this test unless given).
  OptionsView options(PluginRegistry& reg, std::map<std::string, OptionValue, std::less<>> changes = {}) {
    auto values = reg.defaultOptions(kPlugin).value().all();
    values["conninfo"] = conninfo_;
    values["schema"] = schema_;
    for (auto& [k, v] : changes) values[k] = v;
    return OptionsView(std::move(values));
  }

 public:
  static QueueEntry entryFor(int batch, int i) {
    QueueEntry e;
    e.notice.key = {1, "http://a/" + std::to_string(batch) + "/" + std::to_string(i), "text/html"};
    e.notice.fetch = "http://f/" + std::to_string(batch);
    e.pset = static_cast<PSetId>(batch);
    e.queued = fromUnixMillis(1714564800000 + batch);
    return e;
  }

 protected:
  testing::TempDir dir_;
  testing::SimClock clock_;
  std::string conninfo_;
  std::string schema_ = testing::freshSchemaName();
};

TEST_F(StoragePostgresTest, OptionProblemsNameTheKey) {
  auto reg = registry();
  auto missing = reg->makeQueueStore(kPlugin, options(*reg, {{"conninfo", std::string()}}));
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("options.conninfo: required"), std::string::npos)
      << missing.status().toString();
  auto garbled = reg->makeContentStore(kPlugin, options(*reg, {{"conninfo", std::string("host=/x nonsense")}}));
  ASSERT_FALSE(garbled.isOk());
  EXPECT_NE(garbled.status().message().find("options.conninfo: not a libpq connection string"), std::string::npos)
      << garbled.status().toString();
  auto schema = reg->makeProviderStore(kPlugin, options(*reg, {{"schema", std::string("Lcc; DROP")}}));
  ASSERT_FALSE(schema.isOk());
  EXPECT_NE(schema.status().message().find("options.schema: must match"), std::string::npos)
      << schema.status().toString();
  auto sync = reg->makeQueueStore(kPlugin, options(*reg, {{"synchronous", std::string("off")}}));
  ASSERT_FALSE(sync.isOk());
  EXPECT_NE(sync.status().message().find("options.synchronous"), std::string::npos);
  // A server that is not there: a clear IOError from libpq, no hang (the socket is absent).
  auto absent = reg->makeQueueStore(kPlugin, options(*reg, {{"conninfo", std::string("host=" + dir_.path())}}));
  ASSERT_FALSE(absent.isOk());
  EXPECT_TRUE(absent.status().isIOError()) << absent.status().toString();
  EXPECT_NE(absent.status().message().find("cannot connect"), std::string::npos) << absent.status().toString();
}

TEST_F(StoragePostgresTest, AStoreOfAnotherPluginOrFormatIsRefused) {
  auto reg = registry();
  {
    auto q = reg->makeQueueStore(kPlugin, options(*reg));
    ASSERT_TRUE(q.isOk()) << q.status().toString();
    ASSERT_TRUE(q.value()->close().isOk());
  }
  // Another node's mistake: the identity row says format 9.
  const std::string psql = "/usr/bin/psql";
  if (access(psql.c_str(), X_OK) != 0) GTEST_SKIP() << "psql not installed (apt install postgresql-client)";
  const std::string cmd = psql + " -q '" + conninfo_ + "' -c \"UPDATE " + schema_ +
                          ".lcc_store SET value = '9' WHERE store = 'queue' AND name = 'format'\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto q = reg->makeQueueStore(kPlugin, options(*reg));
  ASSERT_FALSE(q.isOk());
  EXPECT_NE(q.status().message().find("format 9, this storage-postgres reads format 2 (and upgrades format 1) only"), std::string::npos)
      << q.status().toString();
}

// lccd --check (HostContext::check_only) connects and reads, and changes nothing: on an
// empty server it makes no schema; beside a writer that was killed it does not mark the
// stores clean, so the next start still learns they were not closed cleanly.
TEST_F(StoragePostgresTest, LccdCheckOpensAsAProbeThatChangesNothing) {
  const std::string psql = "/usr/bin/psql";
  if (access(psql.c_str(), X_OK) != 0) GTEST_SKIP() << "psql not installed (apt install postgresql-client)";
  PluginRegistry probe(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(kPlugin), dir_.path(), "m1", true});
  const std::string has_schema = psql + " -qtA '" + conninfo_ + "' -c \"SELECT count(*) FROM pg_namespace WHERE nspname = '" +
                                 schema_ + "'\" | grep -qx 0";
  {
    auto q = probe.makeQueueStore(kPlugin, options(probe));
    auto c = probe.makeContentStore(kPlugin, options(probe));
    auto p = probe.makeProviderStore(kPlugin, options(probe));
    ASSERT_TRUE(q.isOk() && c.isOk() && p.isOk()) << q.status().toString() << c.status().toString();
    EXPECT_TRUE(q.value()->close().isOk() && c.value()->close().isOk() && p.value()->close().isOk());
  }
  EXPECT_EQ(std::system(has_schema.c_str()), 0) << "the probe made schema " << schema_;
  auto reg = registry();
  {
    auto q = reg->makeQueueStore(kPlugin, options(*reg));
    ASSERT_TRUE(q.isOk()) << q.status().toString();
    // Not closed: as a writer killed -9 leaves it. The probe opens and closes beside it.
    auto pq = probe.makeQueueStore(kPlugin, options(probe));
    ASSERT_TRUE(pq.isOk()) << pq.status().toString();
    EXPECT_TRUE(pq.value()->close().isOk());
    auto again = reg->makeQueueStore(kPlugin, options(*reg));
    ASSERT_TRUE(again.isOk()) << again.status().toString();
    EXPECT_FALSE(again.value()->openInfo().clean_shutdown) << "the probe marked a store in use clean";
  }
}

// The probe reads what the schema holds: a store another program made is refused by
// lccd --check, as by lccd's start (the probe once read a binary bool as text and
// never looked).
TEST_F(StoragePostgresTest, LccdCheckRefusesAStoreItDidNotMake) {
  const std::string psql = "/usr/bin/psql";
  if (access(psql.c_str(), X_OK) != 0) GTEST_SKIP() << "psql not installed (apt install postgresql-client)";
  auto reg = registry();
  {
    auto q = reg->makeQueueStore(kPlugin, options(*reg));
    ASSERT_TRUE(q.isOk()) << q.status().toString();
    EXPECT_TRUE(q.value()->close().isOk());
  }
  const std::string relabel = psql + " -qtA '" + conninfo_ + "' -c \"UPDATE " + schema_ +
                              ".lcc_store SET value = 'storage-other' WHERE name = 'plugin'\" >/dev/null";
  ASSERT_EQ(std::system(relabel.c_str()), 0);
  PluginRegistry probe(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(kPlugin), dir_.path(), "m1", true});
  auto pq = probe.makeQueueStore(kPlugin, options(probe));
  ASSERT_FALSE(pq.isOk()) << "the probe took a store storage-other made";
  EXPECT_NE(pq.status().message().find("was made by 'storage-other'"), std::string::npos) << pq.status().toString();
}

// A schema made before ContentRecord::etag gains the column when a store opens: its rows
// read with no ETag and take one afterwards.
TEST_F(StoragePostgresTest, AnOlderSchemaGainsTheEtagColumn) {
  const std::string psql = "/usr/bin/psql";
  if (access(psql.c_str(), X_OK) != 0) GTEST_SKIP() << "psql not installed (apt install postgresql-client)";
  auto reg = registry();
  ContentRecord r;
  r.key = {1, "http://old.example/a", "text/html"};
  r.seq = 1;
  {
    auto c = reg->makeContentStore(kPlugin, options(*reg));
    ASSERT_TRUE(c.isOk()) << c.status().toString();
    ContentBatch b;
    b.put(r);
    ASSERT_TRUE(c.value()->apply(b).isOk());
    ASSERT_TRUE(c.value()->close().isOk());
  }
  const std::string cmd = psql + " -q '" + conninfo_ + "' -c \"ALTER TABLE " + schema_ + ".lcc DROP COLUMN etag\"";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto c = reg->makeContentStore(kPlugin, options(*reg));
  ASSERT_TRUE(c.isOk()) << c.status().toString();
  auto got = c.value()->get(encodeUrlKey(r.key));
  ASSERT_TRUE(got.isOk() && got.value().has_value()) << got.status().toString();
  EXPECT_EQ(got.value()->etag, "");
  r.seq = 2;
  r.etag = "W/\"5e-61a2\"";
  ContentBatch b;
  b.put(r);
  ASSERT_TRUE(c.value()->apply(b).isOk());
  got = c.value()->get(encodeUrlKey(r.key));
  ASSERT_TRUE(got.isOk() && got.value().has_value());
  EXPECT_EQ(got.value()->etag, r.etag);
  EXPECT_TRUE(c.value()->close().isOk());
}

// --- the server restarts under open stores -------------------------------------------

TEST_F(StoragePostgresTest, ReconnectsAfterTheServerRestartsAndCommittedDataIsThere) {
  testing::PrivateServer server;
  ASSERT_FALSE(server.conninfo().empty()) << "pg_server.sh start failed";
  conninfo_ = server.conninfo();
  auto reg = registry();
  auto q = reg->makeQueueStore(kPlugin, options(*reg));
  auto c = reg->makeContentStore(kPlugin, options(*reg));
  auto p = reg->makeProviderStore(kPlugin, options(*reg));
  ASSERT_TRUE(q.isOk() && c.isOk() && p.isOk());
  QueueBatch qb;
  qb.putEntry(entryFor(1, 1));
  ASSERT_TRUE(q.value()->apply(qb).isOk());
  ContentRecord r;
  r.key = {1, "http://a/x", "text/html"};
  r.seq = 1;
  ContentBatch cb;
  cb.put(r);
  ASSERT_TRUE(c.value()->apply(cb).isOk());
  ASSERT_TRUE(c.value()->get(encodeUrlKey(r.key)).isOk());  // a reader connection is open now
  ProviderRecord pr;
  pr.contact = "before";
  auto id = p.value()->create(pr);
  ASSERT_TRUE(id.isOk());

  ASSERT_TRUE(server.restart());  // every connection of the stores is gone now

  // Reads reconnect; the committed writes are there.
  auto got = q.value()->getEntry(encodeUrlKey(entryFor(1, 1).notice.key));
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(got.value(), entryFor(1, 1));
  auto rec = c.value()->get(encodeUrlKey(r.key));
  ASSERT_TRUE(rec.isOk()) << rec.status().toString();
  ASSERT_TRUE(rec.value().has_value());
  EXPECT_EQ(rec.value()->seq, 1u);
  auto prov = p.value()->get(id.value());
  ASSERT_TRUE(prov.isOk()) << prov.status().toString();
  EXPECT_EQ(prov.value()->contact, "before");
  // Writes work again too (a write begins on a fresh connection).
  ASSERT_TRUE(server.restart());
  qb.clear();
  qb.putEntry(entryFor(2, 1));
  Status s = q.value()->apply(qb);
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_TRUE(p.value()->modify(id.value(), [](ProviderRecord& x) {
                x.contact = "after";
                return Status::ok();
              }).isOk());
  cb.clear();
  r.seq = 2;
  cb.put(r);
  s = c.value()->apply(cb);
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_TRUE(q.value()->close().isOk());
  EXPECT_TRUE(c.value()->close().isOk());
  EXPECT_TRUE(p.value()->close().isOk());
}

// --- kill -9 of a writer ----------------------------------------------------------------

// In a child: applies batches of 10 QDB rows (batch n: rows n/0..n/9) and a content
// record of seq n, and reports n on `fd` after both apply() calls returned OK.
[[noreturn]] void writeBatchesForever(PluginRegistry& reg, const OptionsView& opts, int fd) {
  auto q = reg.makeQueueStore(kPlugin, opts);
  auto c = reg.makeContentStore(kPlugin, opts);
  if (!q.isOk() || !c.isOk()) _exit(3);
  for (int n = 1; n < 100000; ++n) {
    QueueBatch qb;
    for (int i = 0; i < 10; ++i) qb.putEntry(StoragePostgresTest::entryFor(n, i));
    ContentBatch cb;
    ContentRecord r;
    r.key = {2, "http://c/" + std::to_string(n % 37), "text/html"};
    r.seq = static_cast<ChangeSeq>(n);
    cb.put(r);
    cb.putMeta("last", std::to_string(n));
    if (!q.value()->apply(qb).isOk() || !c.value()->apply(cb).isOk()) _exit(4);
    if (write(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) _exit(5);
  }
  _exit(0);
}

TEST_F(StoragePostgresTest, KillNineOfAWriterLosesNothingAcknowledged) {
  for (int round = 0; round < 3; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      auto reg = registry();
      writeBatchesForever(*reg, options(*reg), fds[1]);
    }
    close(fds[1]);
    int acked = 0, n = 0;
    const int stop_after = 20 + round * 37;  // kill at different points
    while (acked < stop_after && read(fds[0], &n, sizeof n) == static_cast<ssize_t>(sizeof n)) acked = n;
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    while (read(fds[0], &n, sizeof n) == static_cast<ssize_t>(sizeof n)) acked = n;  // acked before the kill
    close(fds[0]);
    ASSERT_GT(acked, 0) << "the child wrote nothing (status " << status << ")";

    auto reg = registry();
    auto q = reg->makeQueueStore(kPlugin, options(*reg));
    auto c = reg->makeContentStore(kPlugin, options(*reg));
    ASSERT_TRUE(q.isOk() && c.isOk());
    EXPECT_FALSE(q.value()->openInfo().clean_shutdown);
    // Every acknowledged batch whole; the batch in flight whole or absent.
    std::map<PSetId, int> rows_per_batch;
    ASSERT_TRUE(q.value()->scanEntries([&](const QueueEntry& e) {
      ++rows_per_batch[e.pset];
      return true;
    }).isOk());
    for (int b = 1; b <= acked; ++b) EXPECT_EQ(rows_per_batch[static_cast<PSetId>(b)], 10) << "batch " << b;
    for (auto& [b, count] : rows_per_batch) EXPECT_EQ(count, 10) << "batch " << b << " is partial";
    EXPECT_GE(c.value()->maxSeq().value(), static_cast<ChangeSeq>(acked));
    auto last = c.value()->getMeta("last");
    ASSERT_TRUE(last.isOk() && last.value());
    EXPECT_GE(std::stoi(*last.value()), acked);
    EXPECT_EQ(static_cast<std::int64_t>(c.value()->maxSeq().value()), std::stoi(*last.value()))
        << "content record and meta of a batch commit together";
    ASSERT_TRUE(q.value()->close().isOk());
    ASSERT_TRUE(c.value()->close().isOk());
    if (HasFailure()) break;
    schema_ = testing::freshSchemaName();  // a fresh schema per round: the child's seqs start at 1
  }
}

// --- two processes, one provider store ----------------------------------------------------

TEST_F(StoragePostgresTest, TwoProcessesShareTheProviderStore) {
  auto reg = registry();
  auto p = reg->makeProviderStore(kPlugin, options(*reg));
  ASSERT_TRUE(p.isOk()) << p.status().toString();
  ProviderRecord rec;
  rec.contact = "parent";
  auto id = p.value()->create(rec);
  ASSERT_TRUE(id.isOk());
  constexpr int kEach = 100;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto creg = registry();
    auto cp = creg->makeProviderStore(kPlugin, options(*creg));
    if (!cp.isOk()) _exit(3);
    auto seen = cp.value()->get(id.value());  // the parent's committed create
    if (!seen.isOk() || !seen.value() || seen.value()->contact != "parent") _exit(4);
    ProviderRecord mine;
    mine.contact = "child";
    if (!cp.value()->create(mine).isOk()) _exit(5);
    for (int i = 0; i < kEach; ++i) {
      if (!cp.value()->modify(id.value(), [](ProviderRecord& r) {
            ++r.used_files;
            return Status::ok();
          }).isOk()) {
        _exit(6);
      }
    }
    _exit(cp.value()->close().isOk() ? 0 : 7);
  }
  for (int i = 0; i < kEach; ++i) {
    ASSERT_TRUE(p.value()->modify(id.value(), [](ProviderRecord& r) {
      ++r.used_files;
      return Status::ok();
    }).isOk());
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child failed at step " << WEXITSTATUS(status);
  auto got = p.value()->get(id.value());
  ASSERT_TRUE(got.isOk() && got.value());
  EXPECT_EQ(got.value()->used_files, static_cast<std::uint64_t>(2 * kEach)) << "modify is atomic across processes";
  std::vector<std::string> contacts;
  ASSERT_TRUE(p.value()->scan([&](const ProviderRecord& r) {
    contacts.push_back(r.contact);
    return true;
  }).isOk());
  EXPECT_EQ(contacts, (std::vector<std::string>{"parent", "child"})) << "the child's create is seen here";
  EXPECT_TRUE(p.value()->close().isOk());
}

}  // namespace
}  // namespace lcc
