// The store contract suite: the SAME cases on every store plugin (LCC_STORE_PLUGINS,
// filled by each plugin's CMakeLists), loaded through the real PluginRegistry with a
// fresh TempDir as data_dir. storage-memory is the reference; persistent plugins also
// run the restart cases (close, reopen in the same data_dir).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <sstream>
#include <thread>

#include "common/logging.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "server_store_options.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

using testing::SimClock;
using testing::TempDir;

std::vector<std::string> storePlugins() {
  std::vector<std::string> out;
  std::stringstream ss(LCC_STORE_PLUGINS);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (!name.empty()) out.push_back(name);
  }
  return out;
}

// --- row builders: every field set, so a lost field shows ---------------------------

UrlNotice notice(ProviderId pid, const std::string& url, const std::string& mime = "text/html") {
  UrlNotice n;
  n.key = {pid, url, mime};
  n.op = UrlOp::kUpdate;
  n.view_tag = "tag-" + url;
  n.browse = "http://browse/" + url;
  n.fetch = "http://fetch/" + url;
  n.mtime = 1714564800;
  n.size = 12345;
  n.md5 = "0123456789abcdef0123456789abcdef";
  n.tod = "0-8,22-24";
  return n;
}

QueueEntry entry(ProviderId pid, const std::string& url, PSetId pset = 7, TimeSlot slot = 3) {
  QueueEntry e;
  e.notice = notice(pid, url);
  e.op = QueueOp::kFetch;
  e.pset = pset;
  e.slot = slot;
  e.next = encodeUrlKey({pid, url + "-next", "text/html"});
  e.bad_count = 2;
  e.queued = fromUnixMillis(1714564800123);
  return e;
}

PSetRecord pset(PSetId id, TimeSlot slot, ProviderId pid = 1) {
  PSetRecord p;
  p.pset = id;
  p.slot = slot;
  p.pid = pid;
  p.priority = -5;
  p.first = encodeUrlKey({pid, "first", "text/html"});
  p.last = encodeUrlKey({pid, "last", "text/html"});
  p.count = 42;
  return p;
}

ContentRecord record(ProviderId pid, const std::string& url, ChangeSeq seq, const std::string& mime = "text/html") {
  ContentRecord r;
  r.key = {pid, url, mime};
  r.seq = seq;
  r.deleted = false;
  r.view_tag = "v";
  r.browse = "http://b/" + url;
  r.fetch = "http://f/" + url;
  r.mtime = 1714500000;
  r.size = 4096 + seq;
  r.md5 = "md5-of-" + std::to_string(seq);
  r.machine = "m1";
  r.filename = "00/01/" + std::to_string(seq);
  r.stored = fromUnixMillis(1714564800000 + static_cast<std::int64_t>(seq) * 1000);
  r.refreshed = fromUnixMillis(1714564900000);
  r.declared_mtime = 1714400000;
  r.declared_size = 4000;
  r.declared_md5 = "fedcba9876543210fedcba9876543210";
  r.created_seq = seq;  // what the store sets for a new URL (content_created_test.cc)
  return r;
}

ProviderRecord provider(const std::string& contact) {
  ProviderRecord p;
  p.id = 999;  // ignored by create()
  p.state = ProviderState::kActive;
  p.password_hash = "$argon2id$v=19$m=65536,t=2,p=1$c2FsdA$aGFzaA";
  p.prefixes = {"http://www.example.org/", "https://cdn.example.org/a/"};
  p.priority = 3;
  p.bandwidth = 1000000;
  p.quota_files = 100;
  p.quota_bytes = 1 << 30;
  p.used_files = 5;
  p.used_bytes = 5000;
  p.secret = "s3cr3t";
  p.secret_url = "http://www.example.org/lococa-secret.txt";
  p.contact = contact;
  p.state_reason = "re-verification: the secret file is gone";
  p.sitemap_url = "http://www.server.com/sitemap.xml.gz";
  p.sitemap_interval = Millis(6 * 3600 * 1000);
  p.reg_expires = fromUnixMillis(1715000000000);
  p.conn_seq = 17;
  p.last_ip = "192.0.2.1";
  p.last_connect = fromUnixMillis(1714564000000);
  p.fullsets_used = 1;
  p.fullset_period_start = fromUnixMillis(1714000000000);
  p.fullset_wanted = true;
  p.fullset_reason = FullSetReason::kOldFiles;
  p.error_total = 2;
  FetchErrorEntry e;
  e.notice = notice(1, "broken.htm");
  e.code = ErrorCode::kNotFound;
  e.http_status = 404;
  e.message = "not found";
  e.when = fromUnixMillis(1714564700000);
  p.errors = {e, e};
  p.errors[1].code = ErrorCode::kServerError;
  p.errors[1].notice.op = UrlOp::kCheck;  // an IndexNow URL that failed otherwise
  p.created = fromUnixMillis(1714000000000);
  return p;
}

template <typename T, typename Scan>
std::vector<T> collect(Scan&& scan) {
  std::vector<T> out;
  Status s = scan([&](const T& v) {
    out.push_back(v);
    return true;
  });
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

// --- fixture ------------------------------------------------------------------------

class StoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  StoreContractTest() { reopenRegistry(); }
  void SetUp() override {
    const std::string why = testing::serverStoreSkipReason(GetParam());
    if (!why.empty()) GTEST_SKIP() << why;
  }

  void reopenRegistry() {
    registry_.reset();
    registry_ = std::make_unique<PluginRegistry>(
        LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger(GetParam()), dir_.path(), "m1"});
  }
  OptionsView options() {
    auto o = registry_->defaultOptions(GetParam());
    EXPECT_TRUE(o.isOk()) << o.status().toString();
    return o.isOk() ? testing::serverStoreOptions(GetParam(), o.value(), schema_) : OptionsView();
  }
  PluginPtr<QueueStore> queue() {
    auto s = registry_->makeQueueStore(GetParam(), options());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }
  PluginPtr<ContentStore> content() {
    auto s = registry_->makeContentStore(GetParam(), options());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }
  PluginPtr<ProviderStore> providers() {
    auto s = registry_->makeProviderStore(GetParam(), options());
    EXPECT_TRUE(s.isOk()) << s.status().toString();
    return s.isOk() ? std::move(s).value() : nullptr;
  }

  static std::vector<std::string> seqKeys(ContentStore& s, ChangeSeq after, const ContentFilter& f = {}) {
    std::vector<std::string> out;
    ChangeSeq last = after;
    Status st = s.scanSince(after, f, [&](const ContentRecord& r) {
      EXPECT_GT(r.seq, last) << "scanSince must be in ascending seq order";
      last = r.seq;
      out.push_back(r.key.url + "@" + std::to_string(r.seq));
      return true;
    });
    EXPECT_TRUE(st.isOk()) << st.toString();
    return out;
  }

  TempDir dir_;
  SimClock clock_;
  std::unique_ptr<PluginRegistry> registry_;
  const std::string schema_ = testing::freshSchemaName();  // server store plugins only
};

// ===================================== QueueStore ====================================

TEST_P(StoreContractTest, QueueOpenInfoOfANewStore) {
  auto q = queue();
  ASSERT_TRUE(q);
  const StoreOpenInfo& info = q->openInfo();
  EXPECT_FALSE(info.engine.empty());
  EXPECT_TRUE(info.created);
  EXPECT_TRUE(info.clean_shutdown);
  EXPECT_FALSE(info.may_have_lost_synced);
  EXPECT_EQ(q->entryCount().value(), 0u);
  EXPECT_EQ(q->getMeta("nothing").value(), std::nullopt);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueEntryPutGetReplaceRemove) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry a = entry(1, "http://a/x.htm");
  QueueEntry b = entry(1, "http://a/y.htm");
  b.notice.browse.reset();
  b.notice.mtime.reset();
  b.notice.size.reset();
  b.notice.op = UrlOp::kDelete;
  b.op = QueueOp::kNothing;
  b.next.clear();
  QueueBatch batch;
  QueueEntry c = entry(1, "http://a/z.htm");
  c.notice.op = UrlOp::kCheck;
  batch.putEntry(a);
  batch.putEntry(b);
  batch.putEntry(c);
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->entryCount().value(), 3u);
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), a);
  EXPECT_EQ(q->getEntry(encodeUrlKey(b.notice.key)).value(), b) << "absent optionals stay absent";
  EXPECT_EQ(q->getEntry(encodeUrlKey(c.notice.key)).value(), c) << "op=check is kept";
  // The same URL with another MIME type is another row.
  EXPECT_EQ(q->getEntry(encodeUrlKey({1, "http://a/x.htm", "text/plain"})).value(), std::nullopt);

  QueueEntry a2 = a;
  a2.bad_count = 3;
  a2.notice.md5.clear();
  batch.clear();
  batch.putEntry(a2);
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), a2) << "a put replaces";
  EXPECT_EQ(q->entryCount().value(), 3u);

  batch.clear();
  batch.removeEntry(encodeUrlKey(a.notice.key));
  batch.removeEntry(encodeUrlKey({9, "never-there", "text/html"}));  // removing nothing is fine
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), std::nullopt);
  EXPECT_EQ(q->entryCount().value(), 2u);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueBatchAppliesInOrder) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry a = entry(1, "u1");
  QueueEntry b = entry(1, "u2");
  QueueBatch batch;
  batch.putEntry(a);
  batch.removeEntry(encodeUrlKey(a.notice.key));  // put then remove: gone
  batch.removeEntry(encodeUrlKey(b.notice.key));
  batch.putEntry(b);  // remove then put: there
  batch.putPSet(pset(1, 3));
  batch.removePSet(1, 3);
  batch.putPSet(pset(2, 3));
  PSetRecord p2b = pset(2, 3);
  p2b.count = 1;
  batch.putPSet(p2b);  // last wins
  batch.putMeta("k", "v1");
  batch.putMeta("k", "v2");
  batch.putDelete({"m1", "00/00/1", fromUnixMillis(1000)});
  batch.removeDelete("m1", "00/00/1");
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), std::nullopt);
  EXPECT_EQ(q->getEntry(encodeUrlKey(b.notice.key)).value(), b);
  EXPECT_EQ(q->getPSet(1, 3).value(), std::nullopt);
  EXPECT_EQ(q->getPSet(2, 3).value(), p2b);
  EXPECT_EQ(q->getMeta("k").value(), std::optional<std::string>("v2"));
  EXPECT_TRUE(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); }).empty());
  EXPECT_TRUE(q->apply(QueueBatch()).isOk()) << "an empty batch is fine";
  EXPECT_TRUE(q->sync().isOk());
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueScanEntriesSeesEveryRowAndStops) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  std::set<std::string> want;
  for (int i = 0; i < 600; ++i) {
    QueueEntry e = entry(1 + i % 3, "http://h/" + std::to_string(i));
    want.insert(encodeUrlKey(e.notice.key));
    batch.putEntry(e);
  }
  ASSERT_TRUE(q->apply(batch).isOk());
  std::set<std::string> seen;
  for (const auto& e : collect<QueueEntry>([&](auto fn) { return q->scanEntries(fn); })) {
    EXPECT_TRUE(seen.insert(encodeUrlKey(e.notice.key)).second) << "a row seen twice";
  }
  EXPECT_EQ(seen, want);
  int calls = 0;
  ASSERT_TRUE(q->scanEntries([&](const QueueEntry&) { return ++calls < 5; }).isOk());
  EXPECT_EQ(calls, 5);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueuePSetsScanInPSetSlotOrderWithSlotFilter) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  // Inserted out of order; pset ids across byte boundaries catch little-endian keys.
  for (auto [id, slot] : std::vector<std::pair<PSetId, TimeSlot>>{
           {300, 3}, {2, kSlotNow}, {1, 3}, {256, kSlotNow}, {1, kSlotNow}, {2, 0}, {1, 23}, {70000, 3}}) {
    batch.putPSet(pset(id, slot));
  }
  ASSERT_TRUE(q->apply(batch).isOk());
  auto all = collect<PSetRecord>([&](auto fn) { return q->scanPSets(std::nullopt, fn); });
  std::vector<std::pair<PSetId, TimeSlot>> got;
  for (const auto& p : all) got.emplace_back(p.pset, p.slot);
  EXPECT_EQ(got, (std::vector<std::pair<PSetId, TimeSlot>>{
                     {1, kSlotNow}, {1, 3}, {1, 23}, {2, kSlotNow}, {2, 0}, {256, kSlotNow}, {300, 3}, {70000, 3}}));
  auto slot3 = collect<PSetRecord>([&](auto fn) { return q->scanPSets(TimeSlot{3}, fn); });
  got.clear();
  for (const auto& p : slot3) got.emplace_back(p.pset, p.slot);
  EXPECT_EQ(got, (std::vector<std::pair<PSetId, TimeSlot>>{{1, 3}, {300, 3}, {70000, 3}}));
  auto now = collect<PSetRecord>([&](auto fn) { return q->scanPSets(kSlotNow, fn); });
  ASSERT_EQ(now.size(), 3u);
  EXPECT_EQ(now[0], pset(1, kSlotNow));
  int calls = 0;
  ASSERT_TRUE(q->scanPSets(std::nullopt, [&](const PSetRecord&) { return ++calls < 2; }).isOk());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueDeletesOrderedByMachineAndFilename) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  batch.putDelete({"m2", "00/01/b", fromUnixMillis(3)});
  batch.putDelete({"m1", "00/02/a", fromUnixMillis(1)});
  batch.putDelete({"m1", "00/01/z", fromUnixMillis(2)});
  batch.putDelete({"m10", "00/00/a", fromUnixMillis(4)});
  ASSERT_TRUE(q->apply(batch).isOk());
  auto all = collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); });
  std::vector<std::string> got;
  for (const auto& d : all) got.push_back(d.machine + ":" + d.filename);
  EXPECT_EQ(got, (std::vector<std::string>{"m1:00/01/z", "m1:00/02/a", "m10:00/00/a", "m2:00/01/b"}));
  auto m1 = collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m1"), fn); });
  ASSERT_EQ(m1.size(), 2u);
  EXPECT_EQ(m1[0], (DeleteRequest{"m1", "00/01/z", fromUnixMillis(2)}));
  EXPECT_TRUE(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m"), fn); }).empty());
  batch.clear();
  batch.removeDelete("m1", "00/01/z");
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m1"), fn); }).size(), 1u);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueManyPSetsAndDeletesScanCompletelyInOrder) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  for (PSetId id = 700; id >= 1; --id) batch.putPSet(pset(id, static_cast<TimeSlot>(id % 7)));
  for (int i = 0; i < 900; ++i) {
    batch.putDelete({"m" + std::to_string(i % 3), "f" + std::to_string(100000 + i), fromUnixMillis(i)});
  }
  ASSERT_TRUE(q->apply(batch).isOk());
  auto all = collect<PSetRecord>([&](auto fn) { return q->scanPSets(std::nullopt, fn); });
  ASSERT_EQ(all.size(), 700u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].pset, i + 1);
  auto slot2 = collect<PSetRecord>([&](auto fn) { return q->scanPSets(TimeSlot{2}, fn); });
  ASSERT_EQ(slot2.size(), 100u);
  for (std::size_t i = 1; i < slot2.size(); ++i) EXPECT_LT(slot2[i - 1].pset, slot2[i].pset);
  auto m1 = collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m1"), fn); });
  ASSERT_EQ(m1.size(), 300u);
  for (std::size_t i = 0; i < m1.size(); ++i) {
    EXPECT_EQ(m1[i].machine, "m1");
    if (i > 0) {
      EXPECT_LT(m1[i - 1].filename, m1[i].filename);
    }
  }
  EXPECT_EQ(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); }).size(), 900u);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueKeepsOddBytesAndLongValues) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry e = entry(0xffffffffu, std::string(2048, 'u') + "/\xc3\xa9t\xc3\xa9?a=1&b=%20");
  e.notice.view_tag = "";
  e.notice.browse = "";  // "not browsable" differs from nullopt
  QueueBatch batch;
  batch.putEntry(e);
  batch.putMeta("binary", std::string("a\0b\xff", 4));
  batch.putMeta("empty", "");
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(e.notice.key)).value(), e);
  EXPECT_EQ(q->getMeta("binary").value(), std::optional<std::string>(std::string("a\0b\xff", 4)));
  EXPECT_EQ(q->getMeta("empty").value(), std::optional<std::string>(""));
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueCallsAfterCloseFail) {
  auto q = queue();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->close().isOk());
  QueueBatch batch;
  batch.putMeta("k", "v");
  EXPECT_FALSE(q->apply(batch).isOk());
  EXPECT_FALSE(q->getMeta("k").isOk());
  EXPECT_FALSE(q->entryCount().isOk());
}

TEST_P(StoreContractTest, QueueRestartKeepsWhatWasSynced) {
  auto q = queue();
  ASSERT_TRUE(q);
  if (!q->openInfo().persistent) GTEST_SKIP() << GetParam() << " is not persistent";
  QueueBatch batch;
  batch.putEntry(entry(1, "a"));
  batch.putPSet(pset(5, 2));
  batch.putDelete({"m1", "f", fromUnixMillis(9)});
  batch.putMeta("next_pset", "6");
  ASSERT_TRUE(q->apply(batch).isOk());
  ASSERT_TRUE(q->sync().isOk());
  ASSERT_TRUE(q->close().isOk());
  q.reset();
  q = queue();
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->openInfo().created);
  EXPECT_TRUE(q->openInfo().clean_shutdown);
  EXPECT_FALSE(q->openInfo().may_have_lost_synced);
  EXPECT_EQ(q->getEntry(encodeUrlKey(entry(1, "a").notice.key)).value(), entry(1, "a"));
  EXPECT_EQ(q->getPSet(5, 2).value(), pset(5, 2));
  EXPECT_EQ(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); }).size(), 1u);
  EXPECT_EQ(q->getMeta("next_pset").value(), std::optional<std::string>("6"));
  EXPECT_TRUE(q->close().isOk());
}

// ==================================== ContentStore ===================================

TEST_P(StoreContractTest, ContentOpenInfoOfANewStore) {
  auto c = content();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->openInfo().engine.empty());
  EXPECT_TRUE(c->openInfo().created);
  EXPECT_TRUE(c->openInfo().clean_shutdown);
  EXPECT_EQ(c->maxSeq().value(), 0u);
  EXPECT_EQ(c->count().value(), 0u);
  EXPECT_TRUE(seqKeys(*c, 0).empty());
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentPutGetEveryField) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentRecord full = record(1, "http://a/x", 1);
  ContentRecord sparse = record(1, "http://a/y", 2);
  sparse.browse.reset();
  sparse.mtime.reset();
  sparse.declared_mtime.reset();
  sparse.declared_size.reset();
  sparse.fetch.clear();
  ContentRecord unbrowsable = record(1, "http://a/z", 3);
  unbrowsable.browse = "";
  ContentBatch batch;
  batch.put(full);
  batch.put(sparse);
  batch.put(unbrowsable);
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->get(encodeUrlKey(full.key)).value(), full);
  EXPECT_EQ(c->get(encodeUrlKey(sparse.key)).value(), sparse);
  EXPECT_EQ(c->get(encodeUrlKey(unbrowsable.key)).value(), unbrowsable);
  EXPECT_EQ(c->get(encodeUrlKey({1, "http://a/x", "text/plain"})).value(), std::nullopt);
  EXPECT_EQ(c->count().value(), 3u);
  EXPECT_EQ(c->maxSeq().value(), 3u);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentPutReplacesAndMovesTheSeq) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 2));
  batch.put(record(1, "c", 3));
  ASSERT_TRUE(c->apply(batch).isOk());
  batch.clear();
  batch.put(record(1, "a", 4));
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(seqKeys(*c, 0), (std::vector<std::string>{"b@2", "c@3", "a@4"}));
  EXPECT_EQ(seqKeys(*c, 2), (std::vector<std::string>{"c@3", "a@4"}));
  EXPECT_EQ(seqKeys(*c, 4), std::vector<std::string>{});
  EXPECT_EQ(c->count().value(), 3u);
  EXPECT_EQ(c->get(encodeUrlKey(record(1, "a", 4).key)).value()->seq, 4u);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentPutWithItsOwnSeqRefreshesInPlace) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 2));
  ASSERT_TRUE(c->apply(batch).isOk());
  ContentRecord refreshed = record(1, "a", 1);
  refreshed.refreshed = fromUnixMillis(999'000);
  refreshed.declared_md5 = "ffffffffffffffffffffffffffffffff";
  batch.clear();
  batch.put(refreshed);
  ASSERT_TRUE(c->apply(batch).isOk()) << "a put with the seq the record already has is an in-place refresh";
  EXPECT_EQ(c->get(encodeUrlKey(refreshed.key)).value(), refreshed);
  EXPECT_EQ(seqKeys(*c, 0), (std::vector<std::string>{"a@1", "b@2"}));
  EXPECT_EQ(seqKeys(*c, 1), std::vector<std::string>{"b@2"}) << "a refresh is not a change for content users";
  EXPECT_EQ(c->maxSeq().value(), 2u);
  EXPECT_EQ(c->count().value(), 2u);
  batch.clear();
  batch.put(record(1, "c", 3));
  ASSERT_TRUE(c->apply(batch).isOk()) << "new seqs continue above the highest";
  batch.clear();
  batch.put(record(1, "c", 2));  // b holds 2: not an in-place refresh of c
  EXPECT_FALSE(c->apply(batch).isOk()) << "a seq going back is still refused";
  (void)c->close();  // the store may stay failed after a refused batch
}

TEST_P(StoreContractTest, ContentTombstonesAndErase) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 2));
  ASSERT_TRUE(c->apply(batch).isOk());
  ContentRecord tomb = record(1, "a", 3);
  tomb.deleted = true;
  tomb.size = 0;
  tomb.md5.clear();
  tomb.filename.clear();
  batch.clear();
  batch.put(tomb);
  ASSERT_TRUE(c->apply(batch).isOk());
  tomb.created_seq = 1;  // the store keeps the removed record's
  EXPECT_EQ(c->get(encodeUrlKey(tomb.key)).value(), tomb);
  EXPECT_EQ(c->count().value(), 2u) << "tombstones count";
  EXPECT_EQ(seqKeys(*c, 0), std::vector<std::string>{"b@2"}) << "tombstones hidden by default";
  ContentFilter with_deleted;
  with_deleted.include_deleted = true;
  EXPECT_EQ(seqKeys(*c, 0, with_deleted), (std::vector<std::string>{"b@2", "a@3"}));
  auto prov = collect<ContentRecord>([&](auto fn) { return c->scanProvider(1, fn); });
  EXPECT_EQ(prov.size(), 2u) << "scanProvider includes tombstones";

  // Erase (tombstone purge) forgets the record; maxSeq stays.
  batch.clear();
  batch.erase(encodeUrlKey(tomb.key));
  batch.erase(encodeUrlKey({1, "never", "text/html"}));
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->get(encodeUrlKey(tomb.key)).value(), std::nullopt);
  EXPECT_EQ(c->count().value(), 1u);
  EXPECT_EQ(c->maxSeq().value(), 3u) << "maxSeq never goes backwards";
  EXPECT_EQ(seqKeys(*c, 0, with_deleted), std::vector<std::string>{"b@2"});
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentBatchOrderPutThenEraseSameKey) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.erase(encodeUrlKey(record(1, "a", 1).key));
  batch.put(record(1, "b", 2));
  batch.putMeta("m", "1");
  batch.putMeta("m", "2");
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->get(encodeUrlKey(record(1, "a", 1).key)).value(), std::nullopt);
  EXPECT_EQ(c->count().value(), 1u);
  EXPECT_EQ(c->maxSeq().value(), 2u);
  EXPECT_EQ(c->getMeta("m").value(), std::optional<std::string>("2"));
  EXPECT_EQ(c->getMeta("other").value(), std::nullopt);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentScanSinceFilters) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "http://a/1.htm", 1, "text/html"));
  batch.put(record(2, "http://b/2.txt", 2, "text/plain"));
  batch.put(record(1, "http://a/sub/3.pdf", 3, "application/pdf"));
  batch.put(record(3, "http://c/4.htm", 4, "text/html"));
  ASSERT_TRUE(c->apply(batch).isOk());
  ContentFilter f;
  f.providers = {1, 3};
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/1.htm@1", "http://a/sub/3.pdf@3", "http://c/4.htm@4"}));
  f = {};
  f.mime_patterns = {"text/*"};
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/1.htm@1", "http://b/2.txt@2", "http://c/4.htm@4"}));
  f.providers = {1};  // kinds AND-ed
  EXPECT_EQ(seqKeys(*c, 0, f), std::vector<std::string>{"http://a/1.htm@1"});
  f = {};
  f.url_prefixes = {"http://a/sub/", "http://c/"};
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/sub/3.pdf@3", "http://c/4.htm@4"}));
  f = {};
  f.stored_since = record(0, "", 3).stored;
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/sub/3.pdf@3", "http://c/4.htm@4"}));
  f = {};
  f.mime_patterns = {"image/*"};
  EXPECT_TRUE(seqKeys(*c, 0, f).empty());
  int calls = 0;
  ASSERT_TRUE(c->scanSince(0, {}, [&](const ContentRecord&) { return ++calls < 2; }).isOk());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentScanProviderInKeyOrderOnlyThatProvider) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  ChangeSeq seq = 0;
  // Providers 1, 256 and 65536 differ only in other bytes: a wrong encoding mixes them.
  for (ProviderId pid : {256u, 1u, 65536u}) {
    for (auto [url, mime] : std::vector<std::pair<const char*, const char*>>{
             {"http://z/", "text/html"}, {"http://a/b", "text/html"}, {"http://a/", "text/html"},
             {"http://a/b", "text/plain"}}) {
      ++seq;
      batch.put(record(pid, url, seq, mime));
    }
  }
  ASSERT_TRUE(c->apply(batch).isOk());
  for (ProviderId pid : {1u, 256u, 65536u}) {
    auto rows = collect<ContentRecord>([&](auto fn) { return c->scanProvider(pid, fn); });
    ASSERT_EQ(rows.size(), 4u) << pid;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].key.pid, pid);
      if (i > 0) {
        EXPECT_LT(encodeUrlKey(rows[i - 1].key), encodeUrlKey(rows[i].key)) << "key order";
      }
    }
  }
  EXPECT_TRUE(collect<ContentRecord>([&](auto fn) { return c->scanProvider(2, fn); }).empty());
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentManyRecordsScanCompletelyInOrder) {
  auto c = content();
  ASSERT_TRUE(c);
  constexpr int kN = 3000;
  ContentBatch batch;
  for (int i = 1; i <= kN; ++i) {
    batch.put(record(1 + i % 4, "http://h/" + std::to_string(i), static_cast<ChangeSeq>(i) * 2));
    if (batch.size() == 500) {
      ASSERT_TRUE(c->apply(batch).isOk());
      batch.clear();
    }
  }
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->count().value(), static_cast<std::uint64_t>(kN));
  EXPECT_EQ(c->maxSeq().value(), static_cast<ChangeSeq>(kN) * 2);
  EXPECT_EQ(seqKeys(*c, 0).size(), static_cast<std::size_t>(kN));
  EXPECT_EQ(seqKeys(*c, 4000).size(), static_cast<std::size_t>(kN - 2000));
  ContentFilter f;
  f.providers = {2};
  EXPECT_EQ(seqKeys(*c, 0, f).size(), static_cast<std::size_t>(kN / 4));
  EXPECT_EQ(collect<ContentRecord>([&](auto fn) { return c->scanProvider(3, fn); }).size(),
            static_cast<std::size_t>(kN / 4));
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentReadsRunConcurrentlyWithTheWriter) {
  auto c = content();
  ASSERT_TRUE(c);
  constexpr int kWrites = 1500;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  auto reader = [&] {
    while (!done.load()) {
      ChangeSeq last = 0;
      Status s = c->scanSince(0, {}, [&](const ContentRecord& r) {
        if (r.seq <= last || r.md5 != "md5-of-" + std::to_string(r.seq) || r.size != 4096 + r.seq) ++bad;
        last = r.seq;
        return true;
      });
      if (!s.isOk()) ++bad;
      auto g = c->get(encodeUrlKey(record(1, "k7", 0).key));
      if (!g.isOk() || (g.value() && g.value()->md5 != "md5-of-" + std::to_string(g.value()->seq))) ++bad;
      if (!c->maxSeq().isOk() || !c->count().isOk()) ++bad;
    }
  };
  std::thread r1(reader), r2(reader);
  for (int i = 1; i <= kWrites; ++i) {
    ContentBatch batch;
    batch.put(record(1, "k" + std::to_string(i % 50), static_cast<ChangeSeq>(i)));
    ASSERT_TRUE(c->apply(batch).isOk());
    if (i % 300 == 0) {
      ASSERT_TRUE(c->sync().isOk());
    }
  }
  done = true;
  r1.join();
  r2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(c->count().value(), 50u);
  EXPECT_EQ(c->maxSeq().value(), static_cast<ChangeSeq>(kWrites));
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentCallsAfterCloseFail) {
  auto c = content();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->close().isOk());
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  EXPECT_FALSE(c->apply(batch).isOk());
  EXPECT_FALSE(c->get(encodeUrlKey(record(1, "a", 1).key)).isOk());
  EXPECT_FALSE(c->maxSeq().isOk());
}

TEST_P(StoreContractTest, ContentRestartKeepsWhatWasSynced) {
  auto c = content();
  ASSERT_TRUE(c);
  if (!c->openInfo().persistent) GTEST_SKIP() << GetParam() << " is not persistent";
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 5));
  batch.putMeta("epoch", "x");
  ASSERT_TRUE(c->apply(batch).isOk());
  batch.clear();
  batch.erase(encodeUrlKey(record(1, "b", 5).key));
  ASSERT_TRUE(c->apply(batch).isOk());
  ASSERT_TRUE(c->sync().isOk());
  ASSERT_TRUE(c->close().isOk());
  c.reset();
  c = content();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->openInfo().created);
  EXPECT_TRUE(c->openInfo().clean_shutdown);
  EXPECT_FALSE(c->openInfo().may_have_lost_synced);
  EXPECT_EQ(c->get(encodeUrlKey(record(1, "a", 1).key)).value(), record(1, "a", 1));
  EXPECT_EQ(c->count().value(), 1u);
  EXPECT_EQ(c->maxSeq().value(), 5u) << "maxSeq survives a restart even when its record was erased";
  EXPECT_EQ(c->getMeta("epoch").value(), std::optional<std::string>("x"));
  EXPECT_EQ(seqKeys(*c, 0), std::vector<std::string>{"a@1"});
  EXPECT_TRUE(c->close().isOk());
}

// =================================== ProviderStore ===================================

TEST_P(StoreContractTest, ProviderCreateAssignsIdsFromOne) {
  auto p = providers();
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->openInfo().created);
  EXPECT_EQ(p->create(provider("a")).value(), 1u);
  EXPECT_EQ(p->create(provider("b")).value(), 2u);
  auto got = p->get(1).value();
  ASSERT_TRUE(got.has_value());
  ProviderRecord want = provider("a");
  want.id = 1;
  EXPECT_EQ(*got, want) << "every field round-trips; record.id is replaced";
  EXPECT_EQ(p->get(3).value(), std::nullopt);
  EXPECT_EQ(p->get(0).value(), std::nullopt);
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderPutModifyRemove) {
  auto p = providers();
  ASSERT_TRUE(p);
  ProviderId id = p->create(provider("a")).value();
  ProviderRecord r = p->get(id).value().value();
  r.state = ProviderState::kSuspended;
  r.errors.clear();
  r.last_connect.reset();
  ASSERT_TRUE(p->put(r).isOk());
  EXPECT_EQ(p->get(id).value(), r);
  ProviderRecord ghost = r;
  ghost.id = 77;
  EXPECT_TRUE(p->put(ghost).isNotFound());
  EXPECT_EQ(p->get(77).value(), std::nullopt) << "put does not create";

  ASSERT_TRUE(p->modify(id, [](ProviderRecord& x) {
                 x.used_files += 10;
                 return Status::ok();
               }).isOk());
  EXPECT_EQ(p->get(id).value()->used_files, r.used_files + 10);
  Status refused = p->modify(id, [](ProviderRecord& x) {
    x.used_files = 0;
    return Status::invalidArgument("no");
  });
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p->get(id).value()->used_files, r.used_files + 10) << "a refused modify stores nothing";
  EXPECT_TRUE(p->modify(77, [](ProviderRecord&) { return Status::ok(); }).isNotFound());

  ASSERT_TRUE(p->put(r, WriteOptions{.durable = false}).isOk());
  ASSERT_TRUE(p->sync().isOk());
  ASSERT_TRUE(p->remove(id).isOk());
  EXPECT_EQ(p->get(id).value(), std::nullopt);
  Status again = p->remove(id);
  EXPECT_TRUE(again.isOk() || again.isNotFound()) << again.toString();
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderIdsAreNeverReused) {
  auto p = providers();
  ASSERT_TRUE(p);
  ProviderId a = p->create(provider("a")).value();
  ProviderId b = p->create(provider("b")).value();
  ASSERT_TRUE(p->remove(b).isOk());
  ProviderId c = p->create(provider("c")).value();
  EXPECT_GT(c, b);
  ASSERT_TRUE(p->remove(a).isOk());
  EXPECT_GT(p->create(provider("d")).value(), c);
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderScanInIdOrder) {
  auto p = providers();
  ASSERT_TRUE(p);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(p->create(provider("p" + std::to_string(i))).isOk());
  ASSERT_TRUE(p->remove(100).isOk());
  auto all = collect<ProviderRecord>([&](auto fn) { return p->scan(fn); });
  ASSERT_EQ(all.size(), 299u);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].id, all[i].id);
  EXPECT_EQ(all[0].contact, "p0");
  EXPECT_EQ(all[255].id, 257u) << "ids across a byte boundary stay in numeric order";
  int calls = 0;
  ASSERT_TRUE(p->scan([&](const ProviderRecord&) { return ++calls < 3; }).isOk());
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderIsThreadSafeAndModifyIsAtomic) {
  auto p = providers();
  ASSERT_TRUE(p);
  ProviderId id = p->create(provider("shared")).value();
  ASSERT_TRUE(p->modify(id, [](ProviderRecord& r) {
                 r.conn_seq = 0;
                 return Status::ok();
               }).isOk());
  constexpr int kThreads = 4, kEach = 100;
  std::vector<std::thread> threads;
  std::mutex ids_mu;
  std::set<ProviderId> ids;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        Status s = p->modify(
            id,
            [](ProviderRecord& r) {
              ++r.conn_seq;
              return Status::ok();
            },
            WriteOptions{.durable = i % 10 == 0});
        if (!s.isOk()) ++failures;
        if (i % 25 == 0) {
          auto made = p->create(provider("t" + std::to_string(t)));
          if (!made.isOk()) {
            ++failures;
          } else {
            std::lock_guard<std::mutex> l(ids_mu);
            if (!ids.insert(made.value()).second) ++failures;
          }
        }
        if (!p->get(id).isOk()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(p->get(id).value()->conn_seq, static_cast<std::uint64_t>(kThreads * kEach));
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kThreads * 4));
  EXPECT_TRUE(p->close().isOk());
}

TEST_P(StoreContractTest, ProviderCallsAfterCloseFail) {
  auto p = providers();
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->close().isOk());
  EXPECT_FALSE(p->create(provider("a")).isOk());
  EXPECT_FALSE(p->get(1).isOk());
}

TEST_P(StoreContractTest, ProviderRestartKeepsRecordsAndIdCounter) {
  auto p = providers();
  ASSERT_TRUE(p);
  if (!p->openInfo().persistent) GTEST_SKIP() << GetParam() << " is not persistent";
  ProviderId a = p->create(provider("a")).value();
  ProviderId b = p->create(provider("b")).value();
  ASSERT_TRUE(p->modify(a, [](ProviderRecord& r) {
                 r.used_bytes = 7;
                 return Status::ok();
               }, WriteOptions{.durable = false}).isOk());
  ASSERT_TRUE(p->remove(b).isOk());  // the highest id is gone: it still must not come back
  ASSERT_TRUE(p->close().isOk());
  p.reset();
  p = providers();
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->openInfo().created);
  EXPECT_TRUE(p->openInfo().clean_shutdown);
  auto got = p->get(a).value();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->used_bytes, 7u) << "a non-durable write is durable after close()";
  EXPECT_EQ(got->contact, "a");
  EXPECT_EQ(p->get(b).value(), std::nullopt);
  EXPECT_GT(p->create(provider("c")).value(), b) << "ids are never reused, also across restarts";
  EXPECT_TRUE(p->close().isOk());
}

// All three stores of one plugin in the same data_dir at once (lccd opens them so).
TEST_P(StoreContractTest, AllThreeStoresShareADataDir) {
  auto q = queue();
  auto c = content();
  auto p = providers();
  ASSERT_TRUE(q && c && p);
  QueueBatch qb;
  qb.putMeta("k", "queue");
  ContentBatch cb;
  cb.putMeta("k", "content");
  ASSERT_TRUE(q->apply(qb).isOk());
  ASSERT_TRUE(c->apply(cb).isOk());
  EXPECT_EQ(q->getMeta("k").value(), std::optional<std::string>("queue"));
  EXPECT_EQ(c->getMeta("k").value(), std::optional<std::string>("content"));
  EXPECT_TRUE(q->close().isOk());
  EXPECT_TRUE(c->close().isOk());
  EXPECT_TRUE(p->close().isOk());
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContractTest, ::testing::ValuesIn(storePlugins()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace lcc
