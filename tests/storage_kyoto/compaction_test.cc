// compaction_test.cc — storage-kyoto's B+ tree files stay bounded under churn (issue 15).
//
// The soak (docs/reliability.md) saw content.kct grow ~1.3 MB a minute while it held
// the same ~5,000 records. Kyoto writes a changed B+ tree page anew when it has grown,
// splits the spare end off a page that shrank, and never merges the holes; its free
// block pool keeps only 1,024 of them and a small hole cannot take a grown page, so
// the rest of the holes are lost until the file is compacted. A Kyoto cursor that
// reads a changed page writes it to the file at once, so the exports that scan the
// content between the QM's syncs make that happen at every sync.
//
// The workload is the soak's content-store use, shrunk and counted (no time): 4
// providers x 600 URLs stored again and again (each store a new seq, every 7th a
// tombstone), in batches of 40 applied and synced as the QM's checkpoints do, and after
// each batch a mirror's export (scanSince from the last seq it saw) and one provider's
// scan, as the content users do. "Live" is the size of a store that holds the same
// final rows, written once.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/posix_env.h"
#include "support/store_plugin_fixture.h"

namespace lcc::testing {
namespace {

constexpr int kProviders = 4;
constexpr int kUrlsPerProvider = 600;
constexpr int kBatch = 40;

class KyotoCompactionTest : public StorePluginFixture {
 protected:
  KyotoCompactionTest()
      : StorePluginFixture("storage-kyoto", {{"buckets", "4096"}, {"mmap_size", "1MiB"}, {"page_cache", "1MiB"}}) {}

  static ContentRecord row(int n, ChangeSeq seq) {
    const ProviderId pid = static_cast<ProviderId>(1 + n % kProviders);
    ContentRecord r;
    r.key = UrlKey{pid, "http://site" + std::to_string(pid) + ".test/section/page-" + std::to_string(n) + ".html",
                   "text/html"};
    r.seq = seq;
    r.deleted = seq % 7 == 0;
    r.view_tag = "v1";
    r.fetch = r.key.url;
    if (!r.deleted) {
      // Sizes vary from one store to the next, as real rows do.
      r.mtime = 1700000000 + static_cast<std::int64_t>(seq);
      r.size = 1000 + seq * 37 % 90000;
      r.md5 = std::string(32, static_cast<char>('a' + seq % 6));
      r.machine = "m1";
      r.filename = std::to_string(seq % 97) + "/" + std::to_string(seq) + std::string(seq % 23, 'x');
      r.declared_mtime = r.mtime;
      r.declared_size = r.size;
    }
    r.stored = fromUnixMillis(1700000000000 + static_cast<std::int64_t>(seq));
    r.refreshed = r.stored;
    return r;
  }

  std::uint64_t fileSize(const std::string& name) { return posixEnv()->fileSize(dir_.file(name)).value(); }

  // Stores every URL `rounds` times; returns the file size after each round.
  std::vector<std::uint64_t> churn(ContentStore& c, int rounds, ChangeSeq& seq) {
    std::vector<std::uint64_t> sizes;
    ChangeSeq mirror_seen = 0;
    const int urls = kProviders * kUrlsPerProvider;
    for (int round = 0; round < rounds; ++round) {
      for (int first = 0; first < urls; first += kBatch) {
        ContentBatch b;
        for (int n = first; n < first + kBatch && n < urls; ++n) b.put(row((n * 7 + round * 131) % urls, ++seq));
        EXPECT_TRUE(c.apply(b).isOk());
        EXPECT_TRUE(c.sync().isOk());
        ContentFilter all;
        all.include_deleted = true;
        EXPECT_TRUE(c.scanSince(mirror_seen, all, [&](const ContentRecord& r) {
          mirror_seen = r.seq;
          return true;
        }).isOk());
        EXPECT_TRUE(c.scanProvider(static_cast<ProviderId>(1 + first / kBatch % kProviders),
                                   [](const ContentRecord&) { return true; }).isOk());
      }
      sizes.push_back(fileSize("content.kct"));
    }
    return sizes;
  }

  // A store holding the rows of `seq` last stores, written once: what the data takes.
  std::uint64_t liveSize(ChangeSeq last_seq) {
    auto c = openContent({{"dir", "live"}});
    const int urls = kProviders * kUrlsPerProvider;
    std::map<std::string, ContentRecord> last;
    for (ChangeSeq s = last_seq - urls + 1; s <= last_seq; ++s) {
      // churn()'s order: seq s stored URL (n*7 + round*131) % urls for the n it was given.
      const ChangeSeq i = s - 1;
      const int round = static_cast<int>(i / urls), n = static_cast<int>(i % urls);
      ContentRecord r = row((n * 7 + round * 131) % urls, s);
      last[encodeUrlKey(r.key)] = r;
    }
    std::map<ChangeSeq, ContentRecord> by_seq;  // the store takes seqs in increasing order
    for (auto& [k, r] : last) by_seq[r.seq] = r;
    ContentBatch b;
    for (auto& [s, r] : by_seq) b.put(r);
    EXPECT_EQ(last.size(), static_cast<std::size_t>(urls));
    Status st = c->apply(b);
    EXPECT_TRUE(st.isOk()) << st.toString();
    EXPECT_TRUE(c->close().isOk());
    return fileSize("live/content.kct");
  }
};

// The file's size after each round, in KiB, as text; also kept in the test's XML record.
std::string recordSizes(const std::vector<std::uint64_t>& sizes, std::uint64_t live) {
  std::string trace;
  for (auto s : sizes) trace += std::to_string(s / 1024) + " ";
  ::testing::Test::RecordProperty("kib_after_each_round", trace);
  ::testing::Test::RecordProperty("live_kib", std::to_string(live / 1024));
  return trace;
}

// Without compaction the file grows with every round while the rows stay the same:
// the growth the soak found, reproduced (and proof that the workload below can fail).
TEST_F(KyotoCompactionTest, ContentFileGrowsUnderChurnWithoutCompaction) {
  auto c = openContent({{"compact_growth", "0"}});
  ChangeSeq seq = 0;
  auto sizes = churn(*c, 12, seq);
  ASSERT_TRUE(c->close().isOk());
  const std::uint64_t live = liveSize(seq);
  const std::string trace = recordSizes(sizes, live);
  EXPECT_GT(sizes.back(), 3 * live + (256u << 10)) << "KiB per round: " << trace << "; live " << live / 1024;
  EXPECT_GT(sizes.back(), sizes[3] + sizes[3] / 2) << "still growing after the warm-up: " << trace;
}

// With compaction the file stays within a small multiple of the live rows, and every
// row, the seq order and the counters are intact after it.
TEST_F(KyotoCompactionTest, ContentFileStaysBoundedUnderChurn) {
  ChangeSeq seq = 0;
  std::vector<std::uint64_t> sizes;
  {
    auto c = openContent({{"compact_growth", "256KiB"}});
    sizes = churn(*c, 12, seq);
    ASSERT_TRUE(c->close().isOk());
  }
  const std::uint64_t live = liveSize(seq);
  const std::string trace = recordSizes(sizes, live);
  for (auto s : sizes) EXPECT_LE(s, 3 * live + (256u << 10)) << "KiB per round: " << trace << "; live " << live / 1024;

  auto c = openContent({{"compact_growth", "256KiB"}});
  EXPECT_TRUE(c->openInfo().clean_shutdown);
  const int urls = kProviders * kUrlsPerProvider;
  EXPECT_EQ(c->count().value(), static_cast<std::uint64_t>(urls));
  EXPECT_EQ(c->maxSeq().value(), seq);
  ContentFilter all;
  all.include_deleted = true;
  ChangeSeq prev = 0;
  int seen = 0;
  ASSERT_TRUE(c->scanSince(0, all, [&](const ContentRecord& r) {
    EXPECT_GT(r.seq, prev);
    prev = r.seq;
    auto got = c->get(encodeUrlKey(r.key));
    EXPECT_TRUE(got.isOk() && got.value() && *got.value() == r);
    ++seen;
    return true;
  }).isOk());
  EXPECT_EQ(seen, urls);
  EXPECT_GT(prev, seq - urls);
}

// A compaction right before a crash: the synced rows are all there after the reopen.
TEST_F(KyotoCompactionTest, RowsSurviveAnUncleanStopAfterCompactions) {
  ChangeSeq seq = 0;
  {
    auto c = openContent({{"compact_growth", "64KiB"}});
    churn(*c, 4, seq);
    ContentBatch b;
    b.put(row(5, ++seq));
    ASSERT_TRUE(c->apply(b).isOk());
    ASSERT_TRUE(c->sync().isOk());
  }  // no close()
  auto c = openContent({{"compact_growth", "64KiB"}});
  EXPECT_FALSE(c->openInfo().clean_shutdown);
  EXPECT_FALSE(c->openInfo().may_have_lost_synced);
  EXPECT_EQ(c->count().value(), static_cast<std::uint64_t>(kProviders * kUrlsPerProvider));
  EXPECT_EQ(c->maxSeq().value(), seq);
  auto got = c->get(encodeUrlKey(row(5, seq).key));
  ASSERT_TRUE(got.isOk() && got.value());
  const ContentRecord want = row(5, seq);
  const ContentRecord& have = *got.value();
  EXPECT_EQ(have.seq, want.seq);
  EXPECT_EQ(have.key.url, want.key.url);
  EXPECT_EQ(have.deleted, want.deleted);
  EXPECT_EQ(have.md5, want.md5);
  EXPECT_EQ(have.size, want.size);
  EXPECT_EQ(have.filename, want.filename);
  EXPECT_EQ(have.mtime, want.mtime);
  EXPECT_EQ(have.stored, want.stored);
  EXPECT_EQ(have.refreshed, want.refreshed);
  EXPECT_EQ(have.fetch, want.fetch);
  EXPECT_EQ(have.view_tag, want.view_tag);
  EXPECT_EQ(have.machine, want.machine);
  EXPECT_EQ(have.declared_mtime, want.declared_mtime);
  EXPECT_EQ(have.declared_size, want.declared_size);  // (created_seq is the store's own)
}

TEST_F(KyotoCompactionTest, CompactGrowthIsValidated) {
  EXPECT_TRUE(registry_.defaultOptions("storage-kyoto", {{"compact_growth", "0"}}).isOk());
  EXPECT_TRUE(registry_.defaultOptions("storage-kyoto", {{"compact_growth", "64MiB"}}).isOk());
  EXPECT_FALSE(registry_.defaultOptions("storage-kyoto", {{"compact_growth", "-1"}}).isOk());
  EXPECT_FALSE(registry_.defaultOptions("storage-kyoto", {{"compact_growth", "lots"}}).isOk());
}

}  // namespace
}  // namespace lcc::testing
