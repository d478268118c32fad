// storage-postgres as a shared store of record (issue 27): two store instances on one
// schema (two connections each, as two hosts would have) see each other's writes and
// take seqs from the server; a server that goes down makes writes Busy (try later),
// not a failed store; a reader never reports a max_seq below one it saw.
// Needs the fixture lcc_pg_server (LCC_TEST_PG_CONNINFO); the down/up case runs a
// server of its own (private_server.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <chrono>
#include <thread>

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

ContentRecord record(const std::string& url, ChangeSeq seq) {
  ContentRecord r;
  r.key = {1, "http://a/" + url, "text/html"};
  r.seq = seq;
  r.md5 = "md5-" + url;
  r.size = 100 + seq;
  return r;
}

class SharedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = testing::serverStoreSkipReason(kPlugin);
    if (!why.empty()) GTEST_SKIP() << why;
    conninfo_ = std::getenv("LCC_TEST_PG_CONNINFO");
    registry_ = std::make_unique<PluginRegistry>(
        LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(kPlugin), dir_.path(), "m1"});
  }
  OptionsView options(std::map<std::string, OptionValue, std::less<>> changes = {}) {
    auto values = registry_->defaultOptions(kPlugin).value().all();
    values["conninfo"] = conninfo_;
    values["schema"] = schema_;
    for (auto& [k, v] : changes) values[k] = v;
    return OptionsView(std::move(values));
  }
  std::unique_ptr<ContentStore, PluginDeleter> content(std::map<std::string, OptionValue, std::less<>> changes = {}) {
    auto c = registry_->makeContentStore(kPlugin, options(std::move(changes)));
    EXPECT_TRUE(c.isOk()) << c.status().toString();
    return c.isOk() ? std::move(c).value() : nullptr;
  }
  static std::vector<std::string> seqKeys(ContentStore& c, ChangeSeq after) {
    std::vector<std::string> out;
    Status s = c.scanSince(after, ContentFilter{}, [&](const ContentRecord& r) {
      out.push_back(r.key.url.substr(9) + "@" + std::to_string(r.seq));
      return true;
    });
    EXPECT_TRUE(s.isOk()) << s.toString();
    return out;
  }
  static Status put(ContentStore& c, const std::vector<ContentRecord>& records) {
    ContentBatch b;
    for (const auto& r : records) b.put(r);
    return c.apply(b);
  }
  bool psql(const std::string& sql) {
    const std::string bin = "/usr/bin/psql";
    if (access(bin.c_str(), X_OK) != 0) return false;
    return std::system((bin + " -q '" + conninfo_ + "' -c \"" + sql + "\"").c_str()) == 0;
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  std::string conninfo_;
  std::string schema_ = testing::freshSchemaName();
  std::unique_ptr<PluginRegistry> registry_;
};

TEST_F(SharedStoreTest, TwoInstancesSeeEachOthersRowsAndTakeSeqsFromTheServer) {
  auto a = content();
  auto b = content();
  ASSERT_TRUE(a && b);
  // Both opened at max_seq 0, so both callers start their seqs at 1.
  ASSERT_TRUE(put(*a, {record("a", 1), record("b", 2)}).isOk());
  EXPECT_EQ(b->maxSeq().value(), 2u) << "b reads max_seq from the server, not from its open";
  EXPECT_EQ(b->count().value(), 2u);
  Status s = put(*b, {record("c", 1)});  // b's caller still thinks the highest is 0
  ASSERT_TRUE(s.isOk()) << s.toString();
  EXPECT_EQ(a->get(encodeUrlKey(record("c", 1).key)).value()->seq, 3u) << "the next free seq, from the server";
  EXPECT_EQ(a->get(encodeUrlKey(record("c", 1).key)).value()->created_seq, 3u);
  ASSERT_TRUE(put(*a, {record("d", 3)}).isOk());  // a's caller: 3 is its next
  EXPECT_EQ(seqKeys(*a, 0), (std::vector<std::string>{"a@1", "b@2", "c@3", "d@4"}));
  EXPECT_EQ(seqKeys(*b, 0), seqKeys(*a, 0));
  EXPECT_EQ(seqKeys(*b, 2), (std::vector<std::string>{"c@3", "d@4"})) << "b sees a's new record without a restart";
  // b moves a's record (a new seq), erases another, writes a meta; a sees all of it.
  ASSERT_TRUE(put(*b, {record("a", 2)}).isOk());
  ContentBatch erase;
  erase.erase(encodeUrlKey(record("b", 2).key));
  erase.putMeta("purged_seq", "2");
  ASSERT_TRUE(b->apply(erase).isOk());
  EXPECT_EQ(seqKeys(*a, 0), (std::vector<std::string>{"c@3", "d@4", "a@5"}));
  EXPECT_EQ(a->count().value(), 3u);
  EXPECT_EQ(a->maxSeq().value(), 5u);
  EXPECT_EQ(a->getMeta("purged_seq").value(), std::optional<std::string>("2"));
  // A refresh in place from the other instance keeps the seq.
  ContentRecord again = record("a", 5);
  again.declared_md5 = "refreshed";
  ASSERT_TRUE(put(*a, {again}).isOk());
  EXPECT_EQ(b->get(encodeUrlKey(again.key)).value()->declared_md5, "refreshed");
  EXPECT_EQ(b->maxSeq().value(), 5u);
  // A caller going back below its own seqs is still refused.
  EXPECT_FALSE(put(*a, {record("e", 2)}).isOk());
  EXPECT_TRUE(b->close().isOk());
  (void)a->close();
}

TEST_F(SharedStoreTest, ConcurrentWritersGetUniqueSeqsInCommitOrder) {
  auto a = content();
  auto b = content();
  ASSERT_TRUE(a && b);
  constexpr int kBatches = 40, kPerBatch = 5;
  auto writer = [&](ContentStore* c, const std::string& name, int* failures) {
    ChangeSeq next = 1;  // each caller hands out its own seqs, as a QM would
    for (int i = 0; i < kBatches; ++i) {
      std::vector<ContentRecord> batch;
      for (int j = 0; j < kPerBatch; ++j) batch.push_back(record(name + std::to_string(i * kPerBatch + j), next++));
      if (!put(*c, batch).isOk()) ++*failures;
    }
  };
  int fa = 0, fb = 0;
  std::thread ta(writer, a.get(), "x", &fa), tb(writer, b.get(), "y", &fb);
  // Meanwhile, a reader of each seq range never sees the feed step back.
  ChangeSeq seen = 0;
  int steps_back = 0;
  for (int round = 0; round < 200; ++round) {
    (void)a->scanSince(seen, ContentFilter{}, [&](const ContentRecord& r) {
      if (r.seq <= seen) ++steps_back;
      seen = r.seq;
      return true;
    });
  }
  ta.join();
  tb.join();
  EXPECT_EQ(fa + fb, 0);
  EXPECT_EQ(steps_back, 0);
  std::set<ChangeSeq> seqs;
  ChangeSeq last = 0;
  ASSERT_TRUE(b->scanSince(0, ContentFilter{}, [&](const ContentRecord& r) {
    EXPECT_GT(r.seq, last);
    last = r.seq;
    seqs.insert(r.seq);
    return true;
  }).isOk());
  EXPECT_EQ(seqs.size(), static_cast<std::size_t>(2 * kBatches * kPerBatch)) << "every record kept, seqs unique";
  EXPECT_EQ(a->count().value(), static_cast<std::uint64_t>(2 * kBatches * kPerBatch));
  EXPECT_EQ(a->maxSeq().value(), *seqs.rbegin());
  EXPECT_TRUE(a->close().isOk());
  EXPECT_TRUE(b->close().isOk());
}

TEST_F(SharedStoreTest, TwoInstancesShareProvidersErrorsQuotaAndFullSetFlags) {
  auto pa = registry_->makeProviderStore(kPlugin, options());
  auto pb = registry_->makeProviderStore(kPlugin, options());
  ASSERT_TRUE(pa.isOk() && pb.isOk());
  ProviderRecord rec;
  rec.contact = "x@example.org";
  auto id = pa.value()->create(rec);
  ASSERT_TRUE(id.isOk());
  ASSERT_TRUE(pb.value()->modify(id.value(), [](ProviderRecord& r) {
    r.used_files = 7;
    r.used_bytes = 7000;
    r.fullset_wanted = true;
    r.error_total = 1;
    FetchErrorEntry err;
    err.notice.key = {1, "http://a/x", "text/html"};
    err.http_status = 404;
    err.message = "not found";
    err.when = fromUnixMillis(1714564800000);
    r.errors.push_back(err);
    return Status::ok();
  }).isOk());
  auto got = pa.value()->get(id.value());
  ASSERT_TRUE(got.isOk() && got.value());
  EXPECT_EQ(got.value()->used_files, 7u);
  EXPECT_EQ(got.value()->used_bytes, 7000u);
  EXPECT_TRUE(got.value()->fullset_wanted);
  EXPECT_EQ(got.value()->error_total, 1u);
  ASSERT_EQ(got.value()->errors.size(), 1u);
  EXPECT_EQ(got.value()->errors[0].notice.key.url, "http://a/x");
  EXPECT_EQ(got.value()->errors[0].http_status, 404);
  EXPECT_TRUE(pa.value()->close().isOk());
  EXPECT_TRUE(pb.value()->close().isOk());
}

// A UNS host's "processing" (issue 27 §1): the provider store of another instance reads
// a provider's queued URLs from the QPSDB counts the queue store committed.
TEST_F(SharedStoreTest, TheProviderStoreTellsTheQueuedUrlsTheQueueStoreCommitted) {
  auto q = registry_->makeQueueStore(kPlugin, options());
  auto p = registry_->makeProviderStore(kPlugin, options());  // as on a UNS host
  ASSERT_TRUE(q.isOk() && p.isOk());
  EXPECT_EQ(p.value()->queuedUrls(7).value(), 0u);
  auto pset = [](PSetId ps, TimeSlot slot, ProviderId pid, std::uint64_t count) {
    return PSetRecord{.pset = ps, .slot = slot, .pid = pid, .first = "f", .last = "l", .count = count};
  };
  QueueBatch b;
  b.putPSet(pset(1, kSlotNow, 7, 3));
  b.putPSet(pset(1, 5, 7, 4));  // a tod window that opens later: still queued
  b.putPSet(pset(2, kSlotNow, 8, 100));
  ASSERT_TRUE(q.value()->apply(b).isOk());
  EXPECT_EQ(p.value()->queuedUrls(7).value(), 7u) << "both of its lists, without a sync or a restart";
  EXPECT_EQ(p.value()->queuedUrls(8).value(), 100u);
  QueueBatch fetched;
  fetched.removePSet(1, kSlotNow);
  fetched.putPSet(pset(2, kSlotNow, 8, 99));
  ASSERT_TRUE(q.value()->apply(fetched).isOk());
  EXPECT_EQ(p.value()->queuedUrls(7).value(), 4u);
  EXPECT_EQ(p.value()->queuedUrls(8).value(), 99u);
  EXPECT_EQ(p.value()->queuedUrls(9).value(), 0u);
  EXPECT_TRUE(q.value()->close().isOk());
  EXPECT_TRUE(p.value()->close().isOk());
}

TEST_F(SharedStoreTest, AReaderNeverReportsAMaxSeqBelowOneItSaw) {
  auto writer = content();
  ASSERT_TRUE(writer);
  auto reader = content({{"read_only", true}});
  ASSERT_TRUE(reader);
  ASSERT_TRUE(put(*writer, {record("a", 1), record("b", 2), record("c", 3)}).isOk());
  EXPECT_EQ(reader->maxSeq().value(), 3u);
  EXPECT_EQ(seqKeys(*reader, 1), (std::vector<std::string>{"b@2", "c@3"}));
  Status w = put(*reader, {record("d", 4)});
  EXPECT_EQ(w.code(), StatusCode::kNotSupported) << w.toString();
  // The reader's server goes back to max_seq 1 (as a standby behind the one it read
  // before would be): max_seq stays 3 and a scan says "try later" instead of a gap.
  if (!psql("UPDATE " + schema_ + ".lcc_store SET value = '1' WHERE store = 'content' AND name = 'max_seq'")) {
    GTEST_SKIP() << "psql not installed (apt install postgresql-client)";
  }
  EXPECT_EQ(reader->maxSeq().value(), 3u);
  Status s = reader->scanSince(1, ContentFilter{}, [](const ContentRecord&) { return true; });
  EXPECT_TRUE(s.isBusy()) << s.toString();
  ASSERT_TRUE(psql("UPDATE " + schema_ + ".lcc_store SET value = '3' WHERE store = 'content' AND name = 'max_seq'"));
  EXPECT_EQ(seqKeys(*reader, 1), (std::vector<std::string>{"b@2", "c@3"}));
  EXPECT_TRUE(reader->close().isOk());
  EXPECT_TRUE(writer->close().isOk());
  auto queue = registry_->makeQueueStore(kPlugin, options({{"read_only", true}}));
  ASSERT_FALSE(queue.isOk());
  EXPECT_NE(queue.status().message().find("options.read_only"), std::string::npos) << queue.status().toString();
}

// A CU host started before any writer made the schema: a clear refusal that says what
// to do, not the server's "relation does not exist".
TEST_F(SharedStoreTest, AReaderOfASchemaNoWriterMadeSaysToStartTheWriterFirst) {
  auto reader = registry_->makeContentStore(kPlugin, options({{"read_only", true}}));
  ASSERT_FALSE(reader.isOk());
  EXPECT_NE(reader.status().message().find("holds no LCC store yet"), std::string::npos)
      << reader.status().toString();
  EXPECT_NE(reader.status().message().find("start the lccd that writes this schema first"), std::string::npos);
  auto writer = content();  // the writer's start makes it; then the reader opens
  ASSERT_TRUE(writer);
  auto again = registry_->makeContentStore(kPlugin, options({{"read_only", true}}));
  ASSERT_TRUE(again.isOk()) << again.status().toString();
  EXPECT_TRUE(again.value()->close().isOk());
  EXPECT_TRUE(writer->close().isOk());
}

// A CU host reading a real streaming standby: a read_only store opens there (a writer
// cannot: libpq asks for a read-write session), sees the primary's records once
// replayed, and its maxSeq only grows.
TEST_F(SharedStoreTest, AReadOnlyStoreReadsAStandby) {
  testing::PrivateServer primary;
  ASSERT_FALSE(primary.conninfo().empty()) << "pg_server.sh start failed";
  testing::PrivateServer standby(primary, "-standby");
  ASSERT_FALSE(standby.conninfo().empty()) << "pg_server.sh standby failed";
  conninfo_ = primary.conninfo();
  auto writer = content();
  ASSERT_TRUE(writer);
  ASSERT_TRUE(put(*writer, {record("a", 1), record("b", 2)}).isOk());
  ASSERT_TRUE(writer->sync().isOk());
  conninfo_ = standby.conninfo();
  auto refused = registry_->makeContentStore(kPlugin, options());
  EXPECT_FALSE(refused.isOk()) << "a writer on a standby";
  // Replay is asynchronous: open (the schema must have arrived) and read until the
  // records are there, bounded.
  std::unique_ptr<ContentStore, PluginDeleter> reader;
  for (int i = 0; i < 500 && !reader; ++i) {
    auto r = registry_->makeContentStore(kPlugin, options({{"read_only", true}}));
    if (r.isOk()) reader = std::move(r).value();
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(reader) << "the schema never reached the standby";
  ChangeSeq last = 0;
  for (int i = 0; i < 500 && last < 2; ++i) {
    auto m = reader->maxSeq();
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    EXPECT_GE(m.value(), last) << "max_seq went back";
    last = m.value();
    if (last < 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(last, 2u);
  EXPECT_EQ(seqKeys(*reader, 0), (std::vector<std::string>{"a@1", "b@2"}));
  EXPECT_EQ(reader->count().value(), 2u);
  EXPECT_EQ(put(*reader, {record("c", 3)}).code(), StatusCode::kNotSupported);
  EXPECT_TRUE(reader->close().isOk()) << "closing a reader writes nothing (a standby refuses writes)";
  EXPECT_TRUE(writer->close().isOk());
}

// A failover to a standby that never received a commit the store acknowledged
// without the flush (synchronous: normal, before sync()): sync() must not say OK.
TEST_F(SharedStoreTest, CommitsLostInAFailoverBeforeSyncFailTheStore) {
  testing::PrivateServer primary;
  ASSERT_FALSE(primary.conninfo().empty()) << "pg_server.sh start failed";
  testing::PrivateServer standby(primary, "-standby");
  ASSERT_FALSE(standby.conninfo().empty()) << "pg_server.sh standby failed";
  const std::string host = "host=" + primary.dir();
  conninfo_ = "host=" + primary.dir() + "," + standby.dir() + primary.conninfo().substr(host.size());
  auto c = content();
  ASSERT_TRUE(c);
  ASSERT_TRUE(put(*c, {record("a", 1)}).isOk());
  ASSERT_TRUE(c->sync().isOk());
  {
    conninfo_ = standby.conninfo();  // wait until the standby has replayed a@1 (bounded)
    std::unique_ptr<ContentStore, PluginDeleter> reader;
    ChangeSeq seen = 0;
    for (int i = 0; i < 500 && seen < 1; ++i) {
      if (!reader) {
        auto r = registry_->makeContentStore(kPlugin, options({{"read_only", true}}));
        if (r.isOk()) reader = std::move(r).value();
      }
      if (reader) seen = reader->maxSeq().valueOr(0);
      if (seen < 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(seen, 1u) << "the standby never replayed the first record";
  }
  ASSERT_TRUE(standby.halt());                    // the standby misses what follows
  ASSERT_TRUE(put(*c, {record("b", 2)}).isOk());  // committed without the flush
  ASSERT_TRUE(primary.halt());
  ASSERT_TRUE(standby.restart());
  ASSERT_TRUE(standby.promote());  // the failover: the conninfo's second host is the primary now
  Status s = c->sync();
  EXPECT_FALSE(s.isOk()) << "sync() after a failover that lost an applied batch";
  EXPECT_FALSE(s.isBusy()) << s.toString();
  EXPECT_NE(s.message().find("were lost"), std::string::npos) << s.toString();
  EXPECT_FALSE(put(*c, {record("c", 3)}).isOk()) << "the store stays failed";
  (void)c->close();
}

// The server is down for a while, then back: writes in between are Busy and change
// nothing, the stores are not failed, and the same writes succeed once it is back.
// The conninfo lists a host that is never there first (libpq's multi-host form).
TEST_F(SharedStoreTest, AServerDownIsBusyThenWritesGoOnWithNothingLost) {
  testing::PrivateServer server;
  ASSERT_FALSE(server.conninfo().empty()) << "pg_server.sh start failed";
  const std::string host = "host=" + server.dir();
  ASSERT_EQ(server.conninfo().rfind(host, 0), 0u) << server.conninfo();
  conninfo_ = "host=" + dir_.path() + "," + server.dir() + server.conninfo().substr(host.size());
  auto q = registry_->makeQueueStore(kPlugin, options());
  auto p = registry_->makeProviderStore(kPlugin, options());
  auto c = content();
  ASSERT_TRUE(q.isOk() && p.isOk() && c) << q.status().toString() << p.status().toString();
  ASSERT_TRUE(put(*c, {record("a", 1)}).isOk());
  auto id = p.value()->create(ProviderRecord{});
  ASSERT_TRUE(id.isOk());

  ASSERT_TRUE(server.restart());  // every connection is cut
  ASSERT_TRUE(put(*c, {record("b", 2)}).isOk()) << "the first write after a restart reconnects";

  ASSERT_TRUE(server.halt());
  Status cs = put(*c, {record("c", 3)});
  EXPECT_TRUE(cs.isBusy()) << cs.toString();
  QueueBatch qb;
  QueueEntry e;
  e.notice.key = {1, "http://a/q", "text/html"};
  e.notice.fetch = "http://f/";
  qb.putEntry(e);
  qb.putMeta("journal_pos", "1");
  Status qs = q.value()->apply(qb);
  EXPECT_TRUE(qs.isBusy()) << qs.toString();
  Status ps = p.value()->modify(id.value(), [](ProviderRecord& r) {
    ++r.used_files;
    return Status::ok();
  });
  EXPECT_TRUE(ps.isBusy()) << ps.toString();
  auto max = c->maxSeq();
  EXPECT_TRUE(!max.isOk() && max.status().isBusy()) << max.status().toString();

  ASSERT_TRUE(server.restart());  // back (a failover would be a new primary: the same to libpq)
  cs = put(*c, {record("c", 3)});
  EXPECT_TRUE(cs.isOk()) << "the store is not failed: " << cs.toString();
  qs = q.value()->apply(qb);
  EXPECT_TRUE(qs.isOk()) << qs.toString();
  ps = p.value()->modify(id.value(), [](ProviderRecord& r) {
    ++r.used_files;
    return Status::ok();
  });
  EXPECT_TRUE(ps.isOk()) << ps.toString();
  EXPECT_TRUE(c->sync().isOk() && q.value()->sync().isOk() && p.value()->sync().isOk());
  EXPECT_EQ(seqKeys(*c, 0), (std::vector<std::string>{"a@1", "b@2", "c@3"})) << "nothing acknowledged lost";
  EXPECT_EQ(q.value()->entryCount().value(), 1u);
  EXPECT_EQ(q.value()->getMeta("journal_pos").value(), std::optional<std::string>("1"));
  EXPECT_EQ(p.value()->get(id.value()).value()->used_files, 1u);
  EXPECT_TRUE(q.value()->close().isOk());
  EXPECT_TRUE(c->close().isOk());
  EXPECT_TRUE(p.value()->close().isOk());
}

}  // namespace
}  // namespace lcc
