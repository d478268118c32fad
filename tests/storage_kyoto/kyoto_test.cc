// kyoto_test.cc — storage-kyoto beyond the shared contract suite: persistence across
// reopen, atomic batches, the clean-shutdown flag, identity checks, sticky failure,
// orders of the scans, redo after an unclean stop, checkpoints.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>
#include <string>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/store_plugin_fixture.h"
#include "support/temp_dir.h"

namespace lcc::testing {
namespace {

// Fails the n-th WritableFile::sync() (1-based, counted from arm()).
class SyncFailEnv final : public EnvWrapper {
 public:
  SyncFailEnv() : EnvWrapper(posixEnv()) {}
  void arm(int nth) {
    countdown_ = nth;
  }
  class File final : public WritableFile {
   public:
    File(SyncFailEnv* env, std::unique_ptr<WritableFile> f) : env_(env), f_(std::move(f)) {}
    Status append(std::string_view d) override { return f_->append(d); }
    Status sync() override {
      if (env_->countdown_ > 0 && --env_->countdown_ == 0) return Status::ioError("injected fdatasync failure");
      return f_->sync();
    }
    Status close() override { return f_->close(); }
    std::uint64_t size() const override { return f_->size(); }

   private:
    SyncFailEnv* env_;
    std::unique_ptr<WritableFile> f_;
  };
  Result<std::unique_ptr<WritableFile>> openWritable(const std::string& p, OpenMode m) override {
    LCC_ASSIGN_OR_RETURN(auto f, target()->openWritable(p, m));
    return std::unique_ptr<WritableFile>(new File(this, std::move(f)));
  }

 private:
  int countdown_ = 0;
};

class KyotoTest : public StorePluginFixture {
 protected:
  // Small Kyoto tunings keep the test files small; env_ injects sync failures.
  KyotoTest()
      : StorePluginFixture("storage-kyoto", {{"buckets", "4096"}, {"mmap_size", "1MiB"}, {"page_cache", "1MiB"}},
                           &env_) {}

  SyncFailEnv env_;
};

QueueEntry makeEntry(ProviderId pid, const std::string& url, PSetId pset = 1, TimeSlot slot = kSlotNow) {
  QueueEntry e;
  e.notice.key = UrlKey{pid, url, "text/html"};
  e.notice.view_tag = "v";
  e.notice.browse = "";
  e.notice.md5 = "0123456789abcdef0123456789abcdef";
  e.notice.mtime = 1714564800;
  e.notice.size = 5120;
  e.notice.tod = "0-8,22-24";
  e.pset = pset;
  e.slot = slot;
  e.bad_count = 3;
  e.next = encodeUrlKey(UrlKey{pid, url + "/next", "text/html"});
  e.queued = fromUnixMillis(1714564800123);
  return e;
}

ContentRecord makeRecord(ProviderId pid, const std::string& url, ChangeSeq seq) {
  ContentRecord r;
  r.key = UrlKey{pid, url, "text/html"};
  r.seq = seq;
  r.view_tag = "t";
  r.fetch = url + "?f";
  r.mtime = 1714564800;
  r.size = 100 + seq;
  r.md5 = "0123456789abcdef0123456789abcdef";
  r.machine = "m1";
  r.filename = "00/00/" + std::to_string(seq);
  r.stored = fromUnixMillis(1714564800000 + static_cast<std::int64_t>(seq));
  r.refreshed = r.stored;
  r.declared_size = 100;
  return r;
}

std::string key(ProviderId pid, const std::string& url) { return encodeUrlKey(UrlKey{pid, url, "text/html"}); }

TEST_F(KyotoTest, QueueRowsSurviveCloseAndReopenWithEveryField) {
  auto e1 = makeEntry(7, "http://a/1");
  auto e2 = makeEntry(7, "http://a/2", 2, 5);
  e2.op = QueueOp::kNothing;
  {
    auto q = openQueue();
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(q->openInfo().created);
    EXPECT_TRUE(q->openInfo().clean_shutdown);
    EXPECT_EQ(q->openInfo().engine, "kyoto");
    QueueBatch b;
    b.putEntry(e1);
    b.putEntry(e2);
    b.putPSet(PSetRecord{2, 5, 7, 3, key(7, "http://a/2"), key(7, "http://a/2"), 1});
    b.putDelete(DeleteRequest{"m1", "00/01", fromUnixMillis(5)});
    b.putMeta("journal_pos", "42");
    ASSERT_TRUE(q->apply(b).isOk());
    // Visible before sync.
    auto got = q->getEntry(key(7, "http://a/2"));
    ASSERT_TRUE(got.isOk());
    ASSERT_TRUE(got.value().has_value());
    EXPECT_EQ(*got.value(), e2);
    ASSERT_TRUE(q->sync().isOk());
    ASSERT_TRUE(q->close().isOk());
    EXPECT_FALSE(q->apply(b).isOk());  // closed
  }
  auto q = openQueue();
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(q->openInfo().created);
  EXPECT_TRUE(q->openInfo().clean_shutdown);
  EXPECT_FALSE(q->openInfo().may_have_lost_synced);
  EXPECT_EQ(*q->getEntry(key(7, "http://a/1")).value(), e1);
  EXPECT_EQ(*q->getEntry(key(7, "http://a/2")).value(), e2);
  EXPECT_EQ(q->entryCount().value(), 2u);
  auto p = q->getPSet(2, 5);
  ASSERT_TRUE(p.isOk() && p.value().has_value());
  EXPECT_EQ(p.value()->pid, 7u);
  EXPECT_EQ(q->getMeta("journal_pos").value(), std::optional<std::string>("42"));
  int deletes = 0;
  ASSERT_TRUE(q->scanDeletes("m1", [&](const DeleteRequest& d) {
    EXPECT_EQ(d.filename, "00/01");
    ++deletes;
    return true;
  }).isOk());
  EXPECT_EQ(deletes, 1);
}

TEST_F(KyotoTest, PSetScansAreOrderedAndFilteredBySlot) {
  auto q = openQueue();
  QueueBatch b;
  for (PSetId p : {9, 3, 5, 1}) {
    for (TimeSlot s : {kSlotNow, 4, 2}) b.putPSet(PSetRecord{p, s, 1, 0, "", "", 0});
  }
  ASSERT_TRUE(q->apply(b).isOk());
  auto collect = [&](std::optional<TimeSlot> slot) {
    std::vector<std::pair<PSetId, TimeSlot>> out;
    EXPECT_TRUE(q->scanPSets(slot, [&](const PSetRecord& r) {
      out.emplace_back(r.pset, r.slot);
      return true;
    }).isOk());
    return out;
  };
  // Half in the overlay, half in Kyoto: the merge must keep the order.
  EXPECT_EQ(collect(4), (std::vector<std::pair<PSetId, TimeSlot>>{{1, 4}, {3, 4}, {5, 4}, {9, 4}}));
  ASSERT_TRUE(q->sync().isOk());
  QueueBatch b2;
  b2.removePSet(3, 4);
  b2.putPSet(PSetRecord{4, 4, 1, 0, "", "", 0});
  ASSERT_TRUE(q->apply(b2).isOk());
  EXPECT_EQ(collect(4), (std::vector<std::pair<PSetId, TimeSlot>>{{1, 4}, {4, 4}, {5, 4}, {9, 4}}));
  EXPECT_EQ(collect(kSlotNow), (std::vector<std::pair<PSetId, TimeSlot>>{{1, -1}, {3, -1}, {5, -1}, {9, -1}}));
  auto all = collect(std::nullopt);
  ASSERT_EQ(all.size(), 12u);
  EXPECT_EQ(all[0], (std::pair<PSetId, TimeSlot>{1, -1}));
  EXPECT_EQ(all[1], (std::pair<PSetId, TimeSlot>{1, 2}));
  EXPECT_EQ(all[2], (std::pair<PSetId, TimeSlot>{1, 4}));
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST_F(KyotoTest, AnUnsyncedBatchVanishesWholeAndASyncedOneStaysWhole) {
  {
    auto q = openQueue();
    QueueBatch a;
    for (int i = 0; i < 100; ++i) a.putEntry(makeEntry(1, "http://a/" + std::to_string(i)));
    a.putMeta("pos", "1");
    ASSERT_TRUE(q->apply(a).isOk());
    ASSERT_TRUE(q->sync().isOk());
    QueueBatch b;
    for (int i = 100; i < 200; ++i) b.putEntry(makeEntry(1, "http://a/" + std::to_string(i)));
    b.removeEntry(key(1, "http://a/0"));
    b.putMeta("pos", "2");
    ASSERT_TRUE(q->apply(b).isOk());
    // Dropped without close(): what a crash does to the unsynced batch b.
  }
  auto q = openQueue();
  EXPECT_FALSE(q->openInfo().clean_shutdown);
  EXPECT_FALSE(q->openInfo().may_have_lost_synced);  // same boot: nothing synced was lost
  EXPECT_EQ(q->getMeta("pos").value(), std::optional<std::string>("1"));
  EXPECT_EQ(q->entryCount().value(), 100u);
  EXPECT_TRUE(q->getEntry(key(1, "http://a/0")).value().has_value());
  EXPECT_FALSE(q->getEntry(key(1, "http://a/150")).value().has_value());
  std::size_t scanned = 0;
  ASSERT_TRUE(q->scanEntries([&](const QueueEntry&) { return ++scanned, true; }).isOk());
  EXPECT_EQ(scanned, 100u);
}

TEST_F(KyotoTest, SyncedBatchesAreRedoneWhenKyotoLostThem) {
  // Synced batches live in the redo journal until a checkpoint; the Kyoto files may
  // hold any part of them after a crash. Simulate the worst case: Kyoto files from
  // before the batches, redo journal after them.
  {
    auto q = openQueue();
    QueueBatch a;
    a.putEntry(makeEntry(1, "http://base"));
    ASSERT_TRUE(q->apply(a).isOk());
    ASSERT_TRUE(q->close().isOk());  // checkpoint: Kyoto holds "base", the journal is empty
  }
  const std::string kch = dir_.file("queue.kch"), kct = dir_.file("queue.kct");
  std::string kch_before = posixEnv()->readFile(kch).value();
  std::string kct_before = posixEnv()->readFile(kct).value();
  {
    auto q = openQueue();
    for (int n = 0; n < 5; ++n) {
      QueueBatch b;
      for (int i = 0; i < 20; ++i) b.putEntry(makeEntry(2, "http://b/" + std::to_string(n * 20 + i)));
      b.putMeta("pos", std::to_string(n));
      ASSERT_TRUE(q->apply(b).isOk());
      ASSERT_TRUE(q->sync().isOk());
    }
  }
  ASSERT_TRUE(posixEnv()->writeFileAtomic(kch, kch_before).isOk());
  ASSERT_TRUE(posixEnv()->writeFileAtomic(kct, kct_before).isOk());
  auto q = openQueue();
  EXPECT_FALSE(q->openInfo().clean_shutdown);
  EXPECT_EQ(q->entryCount().value(), 101u);
  EXPECT_EQ(q->getMeta("pos").value(), std::optional<std::string>("4"));
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(q->getEntry(key(2, "http://b/" + std::to_string(i))).value().has_value());
}

TEST_F(KyotoTest, DamagedRedoJournalIsReportedAsPossiblyLostSyncedData) {
  {
    auto q = openQueue();
    for (int n = 0; n < 3; ++n) {
      QueueBatch b;
      b.putEntry(makeEntry(4, "http://d/" + std::to_string(n)));
      ASSERT_TRUE(q->apply(b).isOk());
      ASSERT_TRUE(q->sync().isOk());
    }
  }
  auto names = posixEnv()->listDir(dir_.file("queue.redo"));
  ASSERT_TRUE(names.isOk());
  std::string seg;
  for (auto& n : names.value()) {
    if (posixEnv()->fileSize(dir_.file("queue.redo/" + n)).value() > 0) seg = dir_.file("queue.redo/" + n);
  }
  ASSERT_FALSE(seg.empty());
  std::string bytes = posixEnv()->readFile(seg).value();
  bytes[30] = static_cast<char>(bytes[30] ^ 0x01);  // inside the first record, two more follow
  ASSERT_TRUE(posixEnv()->writeFileAtomic(seg, bytes).isOk());
  auto q = openQueue();
  ASSERT_NE(q, nullptr);
  EXPECT_FALSE(q->openInfo().clean_shutdown);
  EXPECT_TRUE(q->openInfo().may_have_lost_synced);
}

// Rewrites one "key value" line of <store>.meta (what another boot or an interrupted
// open would have left there).
void editMeta(const std::string& path, const std::string& key, const std::string& value) {
  std::string text = posixEnv()->readFile(path).value();
  auto at = text.find("\n" + key + " ");
  ASSERT_NE(at, std::string::npos) << text;
  auto end = text.find('\n', at + 1);
  text.replace(at + 1, end - at - 1, key + " " + value);
  ASSERT_TRUE(posixEnv()->writeFileAtomic(path, text).isOk());
}

TEST_F(KyotoTest, UncleanShutdownInAnEarlierBootIsReportedAsPossiblyLost) {
  {
    auto q = openQueue();
    QueueBatch b;
    b.putEntry(makeEntry(6, "http://f"));
    ASSERT_TRUE(q->apply(b).isOk());
    ASSERT_TRUE(q->sync().isOk());
  }  // no close()
  editMeta(dir_.file("queue.meta"), "boot", "00000000-another-boot");
  {
    auto q = openQueue();
    EXPECT_FALSE(q->openInfo().clean_shutdown);
    EXPECT_TRUE(q->openInfo().may_have_lost_synced);  // power loss: Kyoto's rebuild may have dropped rows
    EXPECT_TRUE(q->getEntry(key(6, "http://f")).value().has_value());
  }  // no close() again, same boot this time
  {
    auto q = openQueue();
    EXPECT_FALSE(q->openInfo().clean_shutdown);
    EXPECT_FALSE(q->openInfo().may_have_lost_synced);  // a plain process crash
  }
  // An open that found a loss and crashed before finishing left "lost 1": the next
  // open still reports it.
  editMeta(dir_.file("queue.meta"), "lost", "1");
  {
    auto q = openQueue();
    EXPECT_TRUE(q->openInfo().may_have_lost_synced);
    ASSERT_TRUE(q->close().isOk());
  }
  auto q = openQueue();
  EXPECT_TRUE(q->openInfo().clean_shutdown);
  EXPECT_FALSE(q->openInfo().may_have_lost_synced);
}

TEST_F(KyotoTest, CheckpointTrimsTheRedoJournal) {
  auto q = openQueue({{"checkpoint_size", "64KiB"}});
  auto redo_size = [&] {
    std::uint64_t total = 0;
    auto names = posixEnv()->listDir(dir_.file("queue.redo"));
    for (auto& n : names.value()) total += posixEnv()->fileSize(dir_.file("queue.redo/" + n)).value();
    return total;
  };
  for (int n = 0; n < 50; ++n) {
    QueueBatch b;
    for (int i = 0; i < 20; ++i) b.putEntry(makeEntry(3, "http://c/" + std::to_string(n * 20 + i)));
    ASSERT_TRUE(q->apply(b).isOk());
    ASSERT_TRUE(q->sync().isOk());
    EXPECT_LT(redo_size(), 64u * 1024 + 16 * 1024);
  }
  EXPECT_EQ(q->entryCount().value(), 1000u);
}

TEST_F(KyotoTest, FailedSyncIsStickyAndReported) {
  auto q = openQueue();
  QueueBatch b;
  b.putEntry(makeEntry(1, "http://x"));
  ASSERT_TRUE(q->apply(b).isOk());
  env_.arm(1);
  Status s = q->sync();
  ASSERT_FALSE(s.isOk());
  EXPECT_TRUE(s.isIOError());
  EXPECT_NE(s.message().find("sticky"), std::string::npos) << s.message();
  // Every later write fails the same way, although the disk works again.
  EXPECT_EQ(q->apply(b), s);
  EXPECT_EQ(q->sync(), s);
  EXPECT_FALSE(q->close().isOk());
}

TEST_F(KyotoTest, ProviderWritesAreDurableAtOnce) {
  ProviderRecord r;
  r.state = ProviderState::kActive;
  r.password_hash = "$argon2id$x";
  r.prefixes = {"http://a/", "http://b/"};
  r.priority = -3;
  r.last_connect = fromUnixMillis(77);
  FetchErrorEntry fe;
  fe.notice.key = UrlKey{1, "http://a/x", "text/html"};
  fe.code = ErrorCode::kMalformed;
  fe.http_status = 404;
  fe.message = "gone";
  r.errors = {fe};
  ProviderId id;
  {
    auto p = openProviders();
    auto created = p->create(r);
    ASSERT_TRUE(created.isOk());
    id = created.value();
    EXPECT_EQ(id, 1u);
    ASSERT_TRUE(p->modify(id, [](ProviderRecord& rec) {
      rec.conn_seq = 9;
      return Status::ok();
    }).isOk());
    // No close(): create and modify were synced.
  }
  auto p = openProviders();
  EXPECT_FALSE(p->openInfo().clean_shutdown);
  auto got = p->get(id);
  ASSERT_TRUE(got.isOk() && got.value().has_value());
  r.id = id;
  r.conn_seq = 9;
  EXPECT_EQ(*got.value(), r);
  EXPECT_EQ(p->create(r).value(), 2u);  // ids never reused
  EXPECT_TRUE(p->remove(1).isOk());
  EXPECT_TRUE(p->remove(1).isNotFound());
  EXPECT_EQ(p->create(r).value(), 3u);
}

// A crash while a store is first made (after its meta file, before Kyoto's header was
// whole) must not leave a file Kyoto cannot open: a new table is made under
// "<file>.new" and renamed into place. Here: the state such a crash leaves, a
// half-written "providers.kct.new" and no "providers.kct".
TEST_F(KyotoTest, ACrashWhileAStoreIsMadeLeavesOneThatOpens) {
  {
    auto p = openProviders();  // made, then dropped without close(): unclean
    EXPECT_TRUE(p->openInfo().created);
  }
  const std::string table = dir_.path() + "/providers.kct";
  ASSERT_TRUE(posixEnv()->exists(table));
  EXPECT_FALSE(posixEnv()->exists(table + ".new")) << "renamed into place";
  ASSERT_TRUE(posixEnv()->removeFile(table).isOk());
  ASSERT_TRUE(posixEnv()->writeFileAtomic(table + ".new", std::string(7, 'K')).isOk());  // torn header

  auto p = openProviders();
  EXPECT_FALSE(p->openInfo().clean_shutdown);
  ProviderRecord r;
  r.state = ProviderState::kActive;
  r.prefixes = {"http://a/"};
  auto id = p->create(r);
  ASSERT_TRUE(id.isOk()) << id.status().toString();
  EXPECT_FALSE(posixEnv()->exists(table + ".new"));
}

TEST_F(KyotoTest, ContentSequenceOrderAndIndexFollowReplacements) {
  auto c = openContent();
  ContentBatch b;
  b.put(makeRecord(1, "http://a/1", 1));
  b.put(makeRecord(1, "http://a/2", 2));
  b.put(makeRecord(2, "http://b/1", 3));
  ASSERT_TRUE(c->apply(b).isOk());
  ASSERT_TRUE(c->sync().isOk());
  ContentBatch b2;
  b2.put(makeRecord(1, "http://a/1", 4));  // replaces seq 1
  b2.erase(key(1, "http://a/2"));
  ASSERT_TRUE(c->apply(b2).isOk());
  std::vector<ChangeSeq> seqs;
  ASSERT_TRUE(c->scanSince(0, ContentFilter{}, [&](const ContentRecord& r) {
    seqs.push_back(r.seq);
    return true;
  }).isOk());
  EXPECT_EQ(seqs, (std::vector<ChangeSeq>{3, 4}));
  EXPECT_EQ(c->maxSeq().value(), 4u);
  EXPECT_EQ(c->count().value(), 2u);
  std::vector<std::string> urls;
  ASSERT_TRUE(c->scanProvider(1, [&](const ContentRecord& r) {
    urls.push_back(r.key.url);
    return true;
  }).isOk());
  EXPECT_EQ(urls, (std::vector<std::string>{"http://a/1"}));
  // A seq that does not grow is refused, and the store is failed from then on.
  ContentBatch bad;
  bad.put(makeRecord(3, "http://c", 4));
  EXPECT_EQ(c->apply(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c->apply(b2).code(), StatusCode::kInvalidArgument);  // sticky
}

TEST_F(KyotoTest, ScansMergeUnsyncedChangesWithKyotoRows) {
  auto q = openQueue();
  QueueBatch a;
  for (int i = 0; i < 600; ++i) a.putEntry(makeEntry(5, "http://e/" + std::to_string(i)));
  ASSERT_TRUE(q->apply(a).isOk());
  ASSERT_TRUE(q->sync().isOk());  // now in Kyoto
  QueueBatch b;                   // stays in the overlay
  for (int i = 0; i < 600; i += 2) b.removeEntry(key(5, "http://e/" + std::to_string(i)));
  for (int i = 600; i < 700; ++i) b.putEntry(makeEntry(5, "http://e/" + std::to_string(i)));
  auto changed = makeEntry(5, "http://e/1");
  changed.bad_count = 9;
  b.putEntry(changed);
  ASSERT_TRUE(q->apply(b).isOk());
  std::set<std::string> seen;
  int duplicates = 0;
  ASSERT_TRUE(q->scanEntries([&](const QueueEntry& e) {
    if (!seen.insert(e.notice.key.url).second) ++duplicates;
    if (e.notice.key.url == "http://e/1") {
      EXPECT_EQ(e.bad_count, 9);
    }
    return true;
  }).isOk());
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_EQ(q->entryCount().value(), 400u);
  EXPECT_FALSE(seen.count("http://e/0"));
  EXPECT_TRUE(seen.count("http://e/699"));
  // Stopping early stops.
  int calls = 0;
  ASSERT_TRUE(q->scanEntries([&](const QueueEntry&) { return ++calls < 5; }).isOk());
  EXPECT_EQ(calls, 5);
}

TEST_F(KyotoTest, ContentReadersRunConcurrentlyWithTheWriter) {
  auto c = openContent();
  std::atomic<bool> done{false};
  std::atomic<int> scans{0};
  std::atomic<int> bad{0};
  auto reader = [&] {
    while (!done.load()) {
      ChangeSeq prev = 0;
      Status s = c->scanSince(0, ContentFilter{}, [&](const ContentRecord& r) {
        if (r.seq <= prev || r.filename != "00/00/" + std::to_string(r.seq)) ++bad;
        prev = r.seq;
        return true;
      });
      if (!s.isOk()) ++bad;
      auto one = c->get(key(1, "http://a/1"));
      if (!one.isOk()) ++bad;
      ++scans;
    }
  };
  std::thread r1(reader), r2(reader);
  ChangeSeq seq = 0;
  for (int n = 0; n < 60; ++n) {
    ContentBatch b;
    for (int i = 0; i < 50; ++i) b.put(makeRecord(1, "http://a/" + std::to_string(i), ++seq));  // replaces
    ASSERT_TRUE(c->apply(b).isOk());
    if (n % 3 == 0) {
      ASSERT_TRUE(c->sync().isOk());
    }
  }
  ASSERT_TRUE(c->sync().isOk());
  done = true;
  r1.join();
  r2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(scans.load(), 0);
  EXPECT_EQ(c->count().value(), 50u);
  EXPECT_EQ(c->maxSeq().value(), seq);
}

TEST_F(KyotoTest, StoreOfAnotherPluginOrFormatIsRefused) {
  ASSERT_TRUE(posixEnv()->writeFileAtomic(dir_.file("queue.meta"),
                                          "lcc-store-meta 1\nplugin storage-sqlite\nformat 1\nstore queue\nclean 1\n")
                  .isOk());
  auto s = registry_.makeQueueStore("storage-kyoto", options());
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.status().message().find("storage-sqlite"), std::string::npos) << s.status().message();
  ASSERT_TRUE(posixEnv()->writeFileAtomic(dir_.file("queue.meta"),
                                          "lcc-store-meta 1\nplugin storage-kyoto\nformat 99\nstore queue\nclean 1\n")
                  .isOk());
  auto s2 = registry_.makeQueueStore("storage-kyoto", options());
  ASSERT_FALSE(s2.isOk());
  EXPECT_NE(s2.status().message().find("format 99"), std::string::npos) << s2.status().message();
  // A SQLite store file beside an empty Kyoto folder is not silently ignored.
  ASSERT_TRUE(posixEnv()->writeFileAtomic(dir_.file("content.sqlite"), "x").isOk());
  auto s3 = registry_.makeContentStore("storage-kyoto", options());
  ASSERT_FALSE(s3.isOk());
  EXPECT_NE(s3.status().message().find("content.sqlite"), std::string::npos) << s3.status().message();
}

TEST_F(KyotoTest, UnknownOptionsAndBadValuesAreRefusedByTheCore) {
  EXPECT_FALSE(registry_.defaultOptions("storage-kyoto", {{"no_such", "1"}}).isOk());
  EXPECT_FALSE(registry_.defaultOptions("storage-kyoto", {{"buckets", "5"}}).isOk());
  EXPECT_TRUE(registry_.defaultOptions("storage-kyoto", {{"mmap_size", "256MiB"}}).isOk());
}

}  // namespace
}  // namespace lcc::testing
