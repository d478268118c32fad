// The BOT-M's filename state: spelling, batching of syncs, restart and crash safety.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "botm/filename_store.h"
#include "common/posix_env.h"
#include "support/fault_env.h"
#include "support/temp_dir.h"

namespace lcc::botm {
namespace {

using testing::FaultEnv;
using testing::TempDir;

std::unique_ptr<FilenameStore> openStore(Env* env, const std::string& dir, FilenameStoreOptions o = {}) {
  auto s = FilenameStore::open(env, dir, o);
  EXPECT_TRUE(s.isOk()) << s.status().toString();
  return std::move(s).value();
}

TEST(FilenameStore, SpellsNamesAsATwoLevelFanOutAndParsesOnlyItsOwnSpelling) {
  TempDir dir;
  auto s = openStore(posixEnv(), dir.path());
  EXPECT_EQ(s->format(123), "00/00/7b");
  EXPECT_EQ(s->format(42), "00/00/2a");
  EXPECT_EQ(s->format(256), "00/01/100");
  EXPECT_EQ(s->format(65536 + 2 * 256 + 5), "01/02/10205");
  EXPECT_EQ(*s->parse("00/00/7b"), 123u);
  EXPECT_EQ(*s->parse("01/02/10205"), 65536u + 2 * 256 + 5);
  for (const char* bad : {"../../etc/passwd", "00/00/7B", "0/0/7b", "00/01/7b", "00/00/", "/00/00/7b", "00/00/7b/..",
                          "00/00/007b", "", "00/00/zz"}) {
    EXPECT_FALSE(s->parse(bad).has_value()) << bad;
  }
  FilenameStoreOptions small;
  small.fanout = 16;
  auto t = openStore(posixEnv(), dir.path() + "/16", small);
  EXPECT_EQ(t->format(0x123), "1/2/123");
}

TEST(FilenameStore, HandsOutDistinctNamesWithOneSyncPerBatch) {
  TempDir dir;
  FaultEnv env(posixEnv());
  FilenameStoreOptions o;
  o.reserve_batch = 1000;
  auto s = openStore(&env, dir.path(), o);
  const auto before = env.syncCount();
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 2500; ++i) {
    auto n = s->allocate();
    ASSERT_TRUE(n.isOk());
    EXPECT_TRUE(seen.insert(n.value()).second);
  }
  EXPECT_LE(env.syncCount() - before, 3u);  // three reservations of 1000, not 2500 syncs
}

TEST(FilenameStore, RestartKeepsTheFreeListAndNeverReusesAHandedOutName) {
  TempDir dir;
  std::set<std::uint64_t> referenced;
  {
    auto s = openStore(posixEnv(), dir.path());
    for (int i = 0; i < 10; ++i) referenced.insert(s->allocate().value());
    s->release(3);
    s->release(7);
    referenced.erase(3);
    referenced.erase(7);
  }
  auto s = openStore(posixEnv(), dir.path());
  EXPECT_EQ(s->freeCount(), 2u);
  std::set<std::uint64_t> reused;
  for (int i = 0; i < 20; ++i) {
    auto n = s->allocate().value();
    EXPECT_EQ(referenced.count(n), 0u) << "name " << n << " is still referenced";
    if (i < 2) reused.insert(n);
  }
  EXPECT_EQ(reused, (std::set<std::uint64_t>{3, 7}));  // the free list is used first
}

TEST(FilenameStore, ACrashNeverBringsBackANameThatWasHandedOut) {
  TempDir dir;
  FaultEnv env(posixEnv());
  std::set<std::uint64_t> handed;
  {
    auto s = openStore(&env, dir.path());
    for (int i = 0; i < 50; ++i) handed.insert(s->allocate().value());
    for (std::uint64_t n : {5, 6, 7}) {
      s->release(n);
      handed.erase(n);
    }
    // Reuse two freed names (synced as taken), free another (not synced), crash.
    handed.insert(s->allocate().value());
    handed.insert(s->allocate().value());
    s->release(20);
    handed.erase(20);
    env.crash();
  }
  env.forgetUnsynced();
  auto s = openStore(&env, dir.path());
  for (int i = 0; i < 200; ++i) {
    auto n = s->allocate().value();
    EXPECT_EQ(handed.count(n), 0u) << "name " << n << " handed out twice";
  }
}

TEST(FilenameStore, AFailedSyncStopsHandingOutNames) {
  TempDir dir;
  FaultEnv env(posixEnv());
  FilenameStoreOptions o;
  o.reserve_batch = 4;
  auto s = openStore(&env, dir.path(), o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s->allocate().isOk());
  env.failNthSync(1);
  EXPECT_FALSE(s->allocate().isOk());
  EXPECT_TRUE(s->failed());
  env.clearFaults();
  EXPECT_FALSE(s->allocate().isOk());  // sticky
}

TEST(FilenameStore, ADamagedLogSkipsFarAhead) {
  TempDir dir;
  std::uint64_t last = 0;
  {
    auto s = openStore(posixEnv(), dir.path());
    for (int i = 0; i < 10; ++i) last = s->allocate().value();
  }
  ASSERT_TRUE(posixEnv()->writeFileAtomic(dir.file("filenames.log"), "R 4096\nX garbage\nR 999999\n").isOk());
  auto s = openStore(posixEnv(), dir.path());
  EXPECT_GT(s->allocate().value(), last);
}

// Regression (found reading the store for the fault sweep): a name freed, reused and freed again before
// a compaction left the log "F n", "T n", "F n"; the replay put n on the free list
// twice and the reopened store handed it to two files.
TEST(FilenameStore, ANameFreedTakenAndFreedAgainIsFreeOnceAfterARestart) {
  TempDir dir;
  FilenameStoreOptions o;
  o.reserve_batch = 4;
  o.take_batch = 4;
  {
    auto s = openStore(posixEnv(), dir.path(), o);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(s->allocate().isOk());
    s->release(1);
    ASSERT_EQ(s->allocate().value(), 1u);
    s->release(1);
    s->release(2);
  }
  auto s = openStore(posixEnv(), dir.path(), o);
  EXPECT_EQ(s->freeCount(), 2u);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 6; ++i) {
    auto n = s->allocate();
    ASSERT_TRUE(n.isOk());
    EXPECT_TRUE(seen.insert(n.value()).second) << "name " << n.value() << " handed out twice";
  }
  EXPECT_TRUE(seen.count(1) && seen.count(2));
}

// Regression (found reading the store for the fault sweep): compaction ran only when a new name was
// reserved, so a store living on its free list grew its log without bound.
TEST(FilenameStore, AStoreThatOnlyReusesNamesStillCompactsItsLog) {
  TempDir dir;
  FilenameStoreOptions o;
  o.compact_bytes = 256;
  auto s = openStore(posixEnv(), dir.path(), o);
  std::vector<std::uint64_t> held;
  for (int i = 0; i < 8; ++i) held.push_back(s->allocate().value());
  for (auto n : held) s->release(n);
  const std::uint64_t next = s->nextNew();
  for (int i = 0; i < 2000; ++i) {
    auto n = s->allocate();
    ASSERT_TRUE(n.isOk());
    s->release(n.value());
  }
  EXPECT_EQ(s->nextNew(), next);  // every name came from the free list
  auto size = posixEnv()->fileSize(dir.file("filenames.log"));
  ASSERT_TRUE(size.isOk());
  EXPECT_LT(size.value(), 512u);
}

// Regression: a failed sync() (shutdown) made the store failed like any other failed
// sync; it returned the error and went on handing out names.
TEST(FilenameStore, AFailedSyncCallIsStickyToo) {
  TempDir dir;
  FaultEnv env(posixEnv());
  auto s = openStore(&env, dir.path());
  ASSERT_TRUE(s->allocate().isOk());
  env.failNthSync(1);
  EXPECT_FALSE(s->sync().isOk());
  env.clearFaults();
  EXPECT_TRUE(s->failed());
  EXPECT_FALSE(s->allocate().isOk());
}

// Issue 25: a compaction that cannot open a file for want of a descriptor is put off;
// names are still handed out, the store does not fail, and none comes back after a restart.
TEST(FilenameStore, OutOfDescriptorsPutsOffTheCompactionAndFailsNothing) {
  TempDir dir;
  FaultEnv env(posixEnv());
  FilenameStoreOptions o;
  o.compact_bytes = 64;
  std::set<std::uint64_t> handed;
  {
    auto s = openStore(&env, dir.path(), o);
    env.outOfDescriptors(true);
    for (int i = 0; i < 200; ++i) {
      auto n = s->allocate();
      ASSERT_TRUE(n.isOk()) << i << ": " << n.status().toString();
      ASSERT_TRUE(handed.insert(n.value()).second);
      if (i % 3 == 0) s->release(n.value()), handed.erase(n.value());
    }
    EXPECT_FALSE(s->failed());
    env.outOfDescriptors(false);
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(handed.insert(s->allocate().value()).second);
    ASSERT_TRUE(s->sync().isOk());
    auto size = posixEnv()->fileSize(dir.file("filenames.log"));
    ASSERT_TRUE(size.isOk());
    EXPECT_LT(size.value(), 1024u);  // compacted once descriptors were back
  }
  auto s = openStore(posixEnv(), dir.path(), o);
  for (int i = 0; i < 300; ++i) {
    auto n = s->allocate();
    ASSERT_TRUE(n.isOk());
    EXPECT_EQ(handed.count(n.value()), 0u) << "name " << n.value() << " handed out twice";
  }
}

}  // namespace
}  // namespace lcc::botm
