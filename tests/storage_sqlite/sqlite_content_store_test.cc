// storage-sqlite ContentStore: seq order, replace, key ranges, concurrent readers.
#include <atomic>
#include <limits>
#include <thread>

#include "sqlite_test_util.h"

namespace lcc::testing {
namespace {

using SqliteContentTest = SqliteStoreTest;

std::vector<ContentRecord> since(ContentStore& c, ChangeSeq after, const ContentFilter& f = {}) {
  std::vector<ContentRecord> out;
  Status s = c.scanSince(after, f, [&](const ContentRecord& r) {
    out.push_back(r);
    return true;
  });
  EXPECT_TRUE(s.isOk()) << s.toString();
  return out;
}

TEST_F(SqliteContentTest, RecordsRoundTripAndReplaceMovesTheSeq) {
  ContentRecord a = makeRecord(1, "http://s/a", 1);
  a.browse = "http://s/frame?a";
  a.declared_mtime = 42;
  a.declared_md5 = "ffffffffffffffffffffffffffffffff";
  a.created_seq = 1;  // set by the store: the seq at which the URL became stored
  ContentRecord b = makeRecord(1, "http://s/b", 2);
  b.deleted = true;
  b.mtime.reset();
  b.declared_size.reset();
  b.created_seq = 2;
  {
    auto c = openContent();
    ASSERT_TRUE(c);
    ContentBatch batch;
    batch.put(a);
    batch.put(b);
    ASSERT_TRUE(c->apply(batch).isOk());
    ContentRecord a2 = a;
    a2.seq = 3;
    a2.size = 999;
    ContentBatch again;
    again.put(a2);
    ASSERT_TRUE(c->apply(again).isOk());
    a = a2;
    ASSERT_TRUE(c->close().isOk());
  }
  auto c = openContent();
  ASSERT_TRUE(c);
  auto got = c->get(encodeUrlKey(a.key));
  ASSERT_TRUE(got.isOk() && got->has_value());
  EXPECT_EQ(**got, a);
  EXPECT_EQ(*c->count(), 2u);
  EXPECT_EQ(*c->maxSeq(), 3u);
  ContentFilter with_deleted;
  with_deleted.include_deleted = true;
  auto all = since(*c, 0, with_deleted);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], b);  // seq 2
  EXPECT_EQ(all[1], a);  // seq 3; its old seq 1 is gone
  EXPECT_EQ(since(*c, 0).size(), 1u) << "tombstones only when asked for";
  EXPECT_EQ(since(*c, 2, with_deleted).size(), 1u);
}

TEST_F(SqliteContentTest, MaxSeqNeverGoesBackEvenAfterErase) {
  {
    auto c = openContent();
    ASSERT_TRUE(c);
    ContentBatch b;
    b.put(makeRecord(1, "http://s/a", 10));
    ASSERT_TRUE(c->apply(b).isOk());
    ContentBatch e;
    e.erase(encodeUrlKey(UrlKey{1, "http://s/a", "text/html"}));
    ASSERT_TRUE(c->apply(e).isOk());
    EXPECT_EQ(*c->count(), 0u);
    EXPECT_EQ(*c->maxSeq(), 10u);
    ASSERT_TRUE(c->sync().isOk());
  }  // unclean: the counters are stored with the rows, not at close
  auto c = openContent();
  ASSERT_TRUE(c);
  EXPECT_EQ(*c->maxSeq(), 10u);
  EXPECT_EQ(*c->count(), 0u);
}

TEST_F(SqliteContentTest, ASeqThatDoesNotGrowIsRefusedWholeAndSticky) {
  auto c = openContent();
  ASSERT_TRUE(c);
  ContentBatch b;
  b.put(makeRecord(1, "http://s/a", 5));
  ASSERT_TRUE(c->apply(b).isOk());
  ContentBatch bad;
  bad.put(makeRecord(1, "http://s/b", 6));
  bad.put(makeRecord(1, "http://s/c", 6));  // not above 6
  Status s = c->apply(bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(c->get(encodeUrlKey(UrlKey{1, "http://s/b", "text/html"}))->has_value());
  EXPECT_EQ(*c->maxSeq(), 5u);
  ContentBatch next;
  next.put(makeRecord(1, "http://s/d", 7));
  EXPECT_EQ(c->apply(next).code(), StatusCode::kInvalidArgument) << "sticky";
  EXPECT_EQ(c->sync().code(), StatusCode::kInvalidArgument);
}

TEST_F(SqliteContentTest, ScanProviderIsTheKeyRangeOfThatProviderOnly) {
  auto c = openContent();
  ASSERT_TRUE(c);
  ContentBatch b;
  ChangeSeq seq = 0;
  const ProviderId kMax = std::numeric_limits<ProviderId>::max();
  for (ProviderId pid : {ProviderId{1}, ProviderId{2}, ProviderId{256}, kMax - 1, kMax}) {
    for (int i = 0; i < 700; ++i) b.put(makeRecord(pid, "http://p/" + std::to_string(1000 + i), ++seq));
  }
  b.put(makeRecord(2, std::string("http://p/\xff\xff", 11), ++seq));  // high bytes stay inside the range
  ASSERT_TRUE(c->apply(b).isOk());
  for (ProviderId pid : {ProviderId{1}, ProviderId{2}, ProviderId{256}, kMax - 1, kMax, ProviderId{3}}) {
    std::vector<std::string> keys;
    ASSERT_TRUE(c->scanProvider(pid, [&](const ContentRecord& r) {
                   EXPECT_EQ(r.key.pid, pid);
                   keys.push_back(encodeUrlKey(r.key));
                   return true;
                 }).isOk());
    const std::size_t want = pid == 3 ? 0 : pid == 2 ? 701 : 700;
    EXPECT_EQ(keys.size(), want) << "pid " << pid;
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  }
}

TEST_F(SqliteContentTest, ScanSinceAppliesTheFilterInSeqOrder) {
  auto c = openContent();
  ASSERT_TRUE(c);
  ContentBatch b;
  for (ChangeSeq s = 1; s <= 1500; ++s) {
    ContentRecord r = makeRecord(s % 2 ? 1 : 2, "http://p/" + std::to_string(s), s);
    r.key.mime = s % 3 ? "text/html" : "image/png";
    b.put(r);
  }
  ASSERT_TRUE(c->apply(b).isOk());
  ContentFilter f;
  f.providers = {2};
  f.mime_patterns = {"text/*"};
  auto got = since(*c, 100, f);
  std::size_t want = 0;
  for (ChangeSeq s = 101; s <= 1500; ++s) want += (s % 2 == 0 && s % 3 != 0) ? 1 : 0;
  EXPECT_EQ(got.size(), want);
  for (std::size_t i = 1; i < got.size(); ++i) EXPECT_LT(got[i - 1].seq, got[i].seq);
  for (const auto& r : got) EXPECT_TRUE(f.matches(r));
}

TEST_F(SqliteContentTest, ReadersRunConcurrentlyWithTheWriterAndSeeWholeRecords) {
  auto c = openContent({{"max_readers", "2"}});
  ASSERT_TRUE(c);
  constexpr int kBatches = 60, kPerBatch = 50;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, scans{0};
  auto reader = [&] {
    while (!done) {
      ChangeSeq last = 0;
      Status s = c->scanSince(0, ContentFilter{}, [&](const ContentRecord& r) {
        // A record is either entirely what was written or absent.
        if (r.seq <= last || r.size != 100 + r.seq || r.filename != "00/00/" + std::to_string(r.seq)) ++bad;
        last = r.seq;
        return true;
      });
      if (!s.isOk()) ++bad;
      auto g = c->get(encodeUrlKey(UrlKey{1, "http://p/0/0", "text/html"}));
      if (!g.isOk()) ++bad;
      ++scans;
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back(reader);  // one more than max_readers: it waits
  ChangeSeq seq = 0;
  for (int b = 0; b < kBatches; ++b) {
    ContentBatch batch;
    for (int i = 0; i < kPerBatch; ++i) batch.put(makeRecord(1, "http://p/" + std::to_string(b) + "/" + std::to_string(i), ++seq));
    ASSERT_TRUE(c->apply(batch).isOk());
    // The writer's own read right after apply sees the batch (QM dedup relies on it).
    auto g = c->get(encodeUrlKey(UrlKey{1, "http://p/" + std::to_string(b) + "/0", "text/html"}));
    ASSERT_TRUE(g.isOk() && g->has_value());
  }
  ASSERT_TRUE(c->sync().isOk());
  // Let the readers finish at least one pass each after the last batch.
  const int after = scans.load();
  while (scans.load() < after + 3) std::this_thread::yield();
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(since(*c, 0).size(), static_cast<std::size_t>(kBatches * kPerBatch));
  EXPECT_TRUE(c->close().isOk());
}

TEST_F(SqliteContentTest, MetaIsKeptWithTheRecords) {
  {
    auto c = openContent();
    ASSERT_TRUE(c);
    ContentBatch b;
    b.putMeta("journal_pos", "12345");
    ASSERT_TRUE(c->apply(b).isOk());
    ASSERT_TRUE(c->close().isOk());
  }
  auto c = openContent();
  auto m = c->getMeta("journal_pos");
  ASSERT_TRUE(m.isOk() && m->has_value());
  EXPECT_EQ(**m, "12345");
}

}  // namespace
}  // namespace lcc::testing
