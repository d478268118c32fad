// journal_test.cc — the intake journal: replay, group commit, torn tails at every
// byte, bit flips, sticky failure, trimming, monotonic positions.
#include "lcc/support/journal.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/posix_env.h"
#include "support/fault_env.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

using testing::TempDir;

// A small fault-injecting Env over the POSIX one: counts syncs and appends and fails
// the n-th of them (1-based; 0 = never).
class FailingEnv final : public EnvWrapper {
 public:
  FailingEnv() : EnvWrapper(posixEnv()) {}

  int fail_sync_at = 0;
  int fail_append_at = 0;
  bool out_of_descriptors = false;  // every open is Busy, as posixEnv() says for EMFILE
  int syncs = 0;
  int appends = 0;

  class File final : public WritableFile {
   public:
    File(FailingEnv* env, std::unique_ptr<WritableFile> f) : env_(env), f_(std::move(f)) {}
    Status append(std::string_view d) override {
      if (++env_->appends == env_->fail_append_at) {
        // A short write: half the data reaches the file, then the error.
        Status s = f_->append(d.substr(0, d.size() / 2));
        (void)s;
        return Status::ioError("injected write failure");
      }
      return f_->append(d);
    }
    Status sync() override {
      if (++env_->syncs == env_->fail_sync_at) return Status::ioError("injected fdatasync failure");
      return f_->sync();
    }
    Status close() override { return f_->close(); }
    std::uint64_t size() const override { return f_->size(); }

   private:
    FailingEnv* env_;
    std::unique_ptr<WritableFile> f_;
  };

  Result<std::unique_ptr<WritableFile>> openWritable(const std::string& p, OpenMode m) override {
    if (out_of_descriptors) return Status::busy(p + ": open: Too many open files (out of descriptors; try later)");
    LCC_ASSIGN_OR_RETURN(auto f, target()->openWritable(p, m));
    return std::unique_ptr<WritableFile>(new File(this, std::move(f)));
  }
};

std::map<JournalPos, std::string> pending_payloads_;  // appended, not yet committed

struct Replayed {
  std::vector<std::pair<JournalPos, std::string>> records;
  JournalReplayInfo info;
};

Replayed replayAll(Journal& j, JournalPos after = 0) {
  Replayed r;
  auto info = j.replay(after, [&](JournalPos p, std::string_view d) {
    r.records.emplace_back(p, std::string(d));
    return Status::ok();
  });
  EXPECT_TRUE(info.isOk()) << info.status().toString();
  if (info.isOk()) r.info = info.value();
  return r;
}

std::unique_ptr<Journal> openOrDie(Env* env, const std::string& dir, JournalOptions o = {}) {
  auto j = Journal::open(env, dir, o);
  EXPECT_TRUE(j.isOk()) << j.status().toString();
  return j.isOk() ? std::move(j).value() : nullptr;
}

// Test files need no durability: write them without fsync to keep the test fast.
Status writeFast(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  return out ? Status::ok() : Status::ioError("write " + path);
}

std::string payloadFor(int i) { return "record-" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 7), 'x'); }

std::vector<std::string> segmentFiles(const std::string& dir) {
  auto names = posixEnv()->listDir(dir);
  std::vector<std::string> out;
  for (auto& n : names.value())
    if (n.size() > 4 && n.substr(n.size() - 4) == ".jnl") out.push_back(dir + "/" + n);
  std::sort(out.begin(), out.end());
  return out;
}

// Opened again, the journal in `dir` replays exactly one record: `payload` at `pos`.
void expectOnlyRecord(const std::string& dir, const JournalOptions& o, JournalPos pos, const std::string& payload) {
  auto j = openOrDie(posixEnv(), dir, o);
  ASSERT_TRUE(j);
  auto r = replayAll(*j);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].first, pos);
  EXPECT_EQ(r.records[0].second, payload);
}

TEST(Journal, ReopenReplaysEveryCommittedRecordInOrder) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  {
    auto j = openOrDie(posixEnv(), dir);
    EXPECT_EQ(replayAll(*j).records.size(), 0u);
    for (int i = 1; i <= 50; ++i) {
      auto p = j->append(payloadFor(i));
      ASSERT_TRUE(p.isOk());
      EXPECT_EQ(p.value(), static_cast<JournalPos>(i));
    }
    auto c = j->commit();
    ASSERT_TRUE(c.isOk());
    EXPECT_EQ(c.value(), 50u);
    EXPECT_EQ(j->durablePosition(), 50u);
  }
  auto j = openOrDie(posixEnv(), dir);
  auto r = replayAll(*j);
  ASSERT_EQ(r.records.size(), 50u);
  for (int i = 1; i <= 50; ++i) {
    EXPECT_EQ(r.records[i - 1].first, static_cast<JournalPos>(i));
    EXPECT_EQ(r.records[i - 1].second, payloadFor(i));
  }
  EXPECT_FALSE(r.info.torn_tail);
  EXPECT_FALSE(r.info.corruption);
  EXPECT_EQ(r.info.first, 1u);
  EXPECT_EQ(r.info.last, 50u);
  // Replay after a position skips what was applied.
  auto r2 = replayAll(*j, 45);
  ASSERT_EQ(r2.records.size(), 5u);
  EXPECT_EQ(r2.records[0].first, 46u);
  // New records continue the numbering.
  auto p = j->append("next");
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p.value(), 51u);
}

TEST(Journal, UncommittedRecordsAreNotOnDisk) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  {
    auto j = openOrDie(posixEnv(), dir);
    ASSERT_TRUE(j->append("a").isOk());
    ASSERT_TRUE(j->commit().isOk());
    ASSERT_TRUE(j->append("b").isOk());  // never committed: lost like a crash would lose it
    EXPECT_EQ(j->lastPosition(), 2u);
    EXPECT_EQ(j->durablePosition(), 1u);
  }
  auto j = openOrDie(posixEnv(), dir);
  auto r = replayAll(*j);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].second, "a");
}

TEST(Journal, GroupCommitSyncsOncePerCommit) {
  TempDir tmp;
  FailingEnv env;
  auto j = openOrDie(&env, tmp.file("j"));
  for (int batch = 0; batch < 10; ++batch) {
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(j->append(payloadFor(i)).isOk());
    ASSERT_TRUE(j->commit().isOk());
  }
  EXPECT_EQ(env.syncs, 10);      // one fdatasync per commit, not per record
  EXPECT_EQ(env.appends, 10);    // one write per commit
  EXPECT_EQ(j->durablePosition(), 1000u);
  // A commit with nothing new does no I/O.
  ASSERT_TRUE(j->commit().isOk());
  EXPECT_EQ(env.syncs, 10);
}

// A commit of many megabytes (a store's whole unsynced window) is written in chunks of
// whole records, under one sync, and replays exactly; a write failing midway leaves the
// journal failed, and replay gives the earlier commits, then at most whole records of the
// failed one (as a short write of one buffer always could), never a part of one.
TEST(Journal, ALargeCommitIsWrittenInChunksOfWholeRecordsUnderOneSync) {
  TempDir tmp;
  FailingEnv env;
  const std::string dir = tmp.file("j");
  std::vector<std::string> expect;
  {
    auto j = openOrDie(&env, dir);
    std::mt19937 rng(7);
    for (int i = 0; i < 3000; ++i) {
      std::string payload = payloadFor(i) + std::string(1000 + rng() % 2000, static_cast<char>('a' + i % 26));
      if (i == 1500) payload = std::string(3u << 20, 'L');  // one record larger than a chunk
      ASSERT_TRUE(j->append(payload).isOk());
      expect.push_back(std::move(payload));
    }
    ASSERT_TRUE(j->commit().isOk());
    EXPECT_EQ(env.syncs, 1);
    EXPECT_GE(env.appends, 7);  // ~6 MB in chunks of about 1 MiB, and the large record alone
    EXPECT_LE(env.appends, 9);
    // The next commit reuses the first chunk: one write again.
    ASSERT_TRUE(j->append("after").isOk());
    expect.push_back("after");
    const int before = env.appends;
    ASSERT_TRUE(j->commit().isOk());
    EXPECT_EQ(env.appends, before + 1);
    // Two more chunks' worth, and the second write of them fails halfway.
    for (int i = 0; i < 2000; ++i) ASSERT_TRUE(j->append(std::string(1000, 'z')).isOk());
    env.fail_append_at = env.appends + 2;
    EXPECT_FALSE(j->commit().isOk());
    EXPECT_FALSE(j->append("x").isOk());  // sticky
  }
  auto j = openOrDie(posixEnv(), dir);
  auto r = replayAll(*j);
  ASSERT_GE(r.records.size(), expect.size());
  ASSERT_LE(r.records.size(), expect.size() + 2000);
  for (std::size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_EQ(r.records[i].first, i + 1);
    const std::string& want = i < expect.size() ? expect[i] : std::string(1000, 'z');
    EXPECT_TRUE(r.records[i].second == want) << "record " << i + 1;
  }
  EXPECT_FALSE(r.info.corruption);
}

TEST(Journal, TruncationAtEveryByteNeverReplaysAPartialRecord) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  std::vector<std::uint64_t> ends;  // file size after each committed record
  const int kRecords = 12;
  {
    auto j = openOrDie(posixEnv(), dir);
    for (int i = 1; i <= kRecords; ++i) {
      ASSERT_TRUE(j->append(payloadFor(i)).isOk());
      ASSERT_TRUE(j->commit().isOk());
      ends.push_back(j->sizeBytes());
    }
  }
  auto segs = segmentFiles(dir);
  ASSERT_EQ(segs.size(), 1u);
  auto full = posixEnv()->readFile(segs[0]);
  ASSERT_TRUE(full.isOk());
  ASSERT_EQ(full.value().size(), ends.back());

  for (std::uint64_t cut = 0; cut <= full.value().size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    const std::string d = tmp.file("cut" + std::to_string(cut));
    ASSERT_TRUE(posixEnv()->createDirs(d).isOk());
    const std::string seg = d + "/" + segs[0].substr(segs[0].rfind('/') + 1);
    ASSERT_TRUE(writeFast(seg, std::string_view(full.value()).substr(0, cut)).isOk());
    std::size_t whole = 0;
    while (whole < ends.size() && ends[whole] <= cut) ++whole;
    {
      auto j = openOrDie(posixEnv(), d);
      auto r = replayAll(*j);
      ASSERT_EQ(r.records.size(), whole);
      for (std::size_t i = 0; i < whole; ++i) EXPECT_EQ(r.records[i].second, payloadFor(static_cast<int>(i) + 1));
      EXPECT_FALSE(r.info.corruption);
      bool at_boundary = cut == 0 || (whole > 0 && ends[whole - 1] == cut);
      EXPECT_EQ(r.info.torn_tail, !at_boundary);
      // The torn bytes are gone, and appending continues right after the last whole record.
      auto p = j->append("after");
      ASSERT_TRUE(p.isOk());
      EXPECT_EQ(p.value(), whole + 1);
      ASSERT_TRUE(j->commit().isOk());
    }
    auto j = openOrDie(posixEnv(), d);
    auto r = replayAll(*j);
    ASSERT_EQ(r.records.size(), whole + 1);
    EXPECT_EQ(r.records.back().second, "after");
    EXPECT_FALSE(r.info.torn_tail);
    EXPECT_FALSE(r.info.corruption);
  }
}

TEST(Journal, RandomBitFlipsNeverReplayAWrongPayload) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  const int kRecords = 40;
  {
    auto j = openOrDie(posixEnv(), dir);
    for (int i = 1; i <= kRecords; ++i) {
      ASSERT_TRUE(j->append(payloadFor(i)).isOk());
      if (i % 5 == 0) {
        ASSERT_TRUE(j->commit().isOk());
      }
    }
  }
  auto segs = segmentFiles(dir);
  ASSERT_EQ(segs.size(), 1u);
  const std::string name = segs[0].substr(segs[0].rfind('/') + 1);
  const std::string original = posixEnv()->readFile(segs[0]).value();
  std::mt19937_64 rng(12345);
  int corruptions = 0, torn = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = original;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      std::size_t at = rng() % bytes.size();
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
    }
    const std::string d = tmp.file("flip");
    (void)posixEnv()->removeFile(d + "/" + name);
    ASSERT_TRUE(posixEnv()->createDirs(d).isOk());
    ASSERT_TRUE(writeFast(d + "/" + name, bytes).isOk());
    auto j = openOrDie(posixEnv(), d);
    ASSERT_NE(j, nullptr);
    auto r = replayAll(*j);
    // Whatever comes back is a prefix of what was written, byte for byte.
    ASSERT_LE(r.records.size(), static_cast<std::size_t>(kRecords));
    for (std::size_t i = 0; i < r.records.size(); ++i) {
      ASSERT_EQ(r.records[i].first, i + 1) << "trial " << trial;
      ASSERT_EQ(r.records[i].second, payloadFor(static_cast<int>(i) + 1)) << "trial " << trial;
    }
    if (r.records.size() < static_cast<std::size_t>(kRecords)) {
      // Something was detected: a damaged record in the middle is corruption.
      ASSERT_TRUE(r.info.corruption || r.info.torn_tail) << "trial " << trial;
      // With one flip, only damage to the very last record can look like a torn tail.
      if (flips == 1 && r.records.size() + 1 < static_cast<std::size_t>(kRecords)) {
        EXPECT_TRUE(r.info.corruption) << "trial " << trial;
      }
    }
    corruptions += r.info.corruption;
    torn += r.info.torn_tail;
  }
  EXPECT_GT(corruptions, 2000);  // most flips hit a record followed by good ones
  EXPECT_GT(torn, 0);
}

TEST(Journal, BadRecordFollowedByGoodOnesIsReportedAsCorruption) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  {
    auto j = openOrDie(posixEnv(), dir);
    for (int i = 1; i <= 10; ++i) ASSERT_TRUE(j->append(payloadFor(i)).isOk());
    ASSERT_TRUE(j->commit().isOk());
  }
  auto segs = segmentFiles(dir);
  std::string bytes = posixEnv()->readFile(segs[0]).value();
  // Damage the payload of record 3.
  std::size_t off = 0;
  for (int i = 1; i < 3; ++i) off += 20 + payloadFor(i).size();
  bytes[off + 20] ^= 0x40;
  ASSERT_TRUE(writeFast(segs[0], bytes).isOk());
  {
    auto j = openOrDie(posixEnv(), dir);
    auto r = replayAll(*j);
    ASSERT_EQ(r.records.size(), 2u);
    EXPECT_TRUE(r.info.corruption);
    EXPECT_FALSE(r.info.torn_tail);
    EXPECT_NE(r.info.detail.find("offset"), std::string::npos) << r.info.detail;
    // Nothing was truncated: the evidence and the good records behind it stay.
    EXPECT_EQ(posixEnv()->fileSize(segs[0]).value(), bytes.size());
    // New positions never collide with the positions found behind the damage.
    auto p = j->append("new");
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p.value(), 11u);
    ASSERT_TRUE(j->commit().isOk());
  }
  // The report is stable across restarts.
  auto j = openOrDie(posixEnv(), dir);
  EXPECT_TRUE(replayAll(*j).info.corruption);
}

TEST(Journal, FailedSyncMakesTheJournalStickyFailed) {
  TempDir tmp;
  FailingEnv env;
  const std::string dir = tmp.file("j");
  {
    auto j = openOrDie(&env, dir);
    ASSERT_TRUE(j->append("one").isOk());
    ASSERT_TRUE(j->commit().isOk());
    env.fail_sync_at = env.syncs + 1;
    ASSERT_TRUE(j->append("two").isOk());
    auto c = j->commit();
    ASSERT_FALSE(c.isOk());
    EXPECT_TRUE(c.status().isIOError());
    EXPECT_EQ(j->durablePosition(), 1u);
    // Sticky: later appends and commits fail with the same error, even though the
    // disk would work again.
    auto a = j->append("three");
    ASSERT_FALSE(a.isOk());
    EXPECT_EQ(a.status(), c.status());
    auto c2 = j->commit();
    ASSERT_FALSE(c2.isOk());
    EXPECT_EQ(c2.status(), c.status());
    EXPECT_FALSE(j->trimUpTo(1).isOk());
  }
  // A fresh open (the restart) works; "two" was written but its sync failed — it may
  // or may not be there, but it is whole when it is.
  auto j = openOrDie(posixEnv(), dir);
  auto r = replayAll(*j);
  ASSERT_GE(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].second, "one");
  if (r.records.size() > 1) {
    EXPECT_EQ(r.records[1].second, "two");
  }
}

TEST(Journal, FailedShortWriteIsStickyAndLeavesNothingPartial) {
  TempDir tmp;
  FailingEnv env;
  const std::string dir = tmp.file("j");
  {
    auto j = openOrDie(&env, dir);
    ASSERT_TRUE(j->append("one").isOk());
    ASSERT_TRUE(j->commit().isOk());
    env.fail_append_at = env.appends + 1;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(j->append(payloadFor(100 + i)).isOk());
    ASSERT_FALSE(j->commit().isOk());
    EXPECT_FALSE(j->append("x").isOk());
  }
  auto j = openOrDie(posixEnv(), dir);
  auto r = replayAll(*j);
  ASSERT_GE(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].second, "one");
  for (std::size_t i = 1; i < r.records.size(); ++i) EXPECT_EQ(r.records[i].second, payloadFor(100 + int(i) - 1));
  EXPECT_FALSE(r.info.corruption);
}

TEST(Journal, TrimDropsWholeSegmentsAndKeepsPositionsMonotonic) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  JournalOptions o;
  o.segment_bytes = 256;  // a new segment every few records
  {
    auto j = openOrDie(posixEnv(), dir, o);
    for (int i = 1; i <= 60; ++i) {
      ASSERT_TRUE(j->append(payloadFor(i)).isOk());
      ASSERT_TRUE(j->commit().isOk());
    }
    auto before = segmentFiles(dir).size();
    ASSERT_GT(before, 5u);
    const auto size_before = j->sizeBytes();
    ASSERT_TRUE(j->trimUpTo(30).isOk());
    EXPECT_LT(segmentFiles(dir).size(), before);
    EXPECT_LT(j->sizeBytes(), size_before);
    auto r = replayAll(*j);
    // Whole segments only: everything after 30 is still there, plus maybe a few <= 30.
    ASSERT_FALSE(r.records.empty());
    EXPECT_LE(r.records.front().first, 31u);
    EXPECT_EQ(r.records.back().first, 60u);
    auto r31 = replayAll(*j, 30);
    ASSERT_EQ(r31.records.size(), 30u);
    EXPECT_EQ(r31.records.front().first, 31u);
    // Trimming everything leaves no records but keeps the numbering.
    ASSERT_TRUE(j->trimUpTo(60).isOk());
    EXPECT_EQ(replayAll(*j).records.size(), 0u);
    EXPECT_EQ(j->sizeBytes(), 0u);
  }
  {
    auto j = openOrDie(posixEnv(), dir, o);
    EXPECT_EQ(j->durablePosition(), 60u);
    auto p = j->append("after-restart");
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p.value(), 61u);
    ASSERT_TRUE(j->commit().isOk());
    ASSERT_TRUE(j->trimUpTo(61).isOk());
    ASSERT_TRUE(j->append("again").isOk());
    ASSERT_TRUE(j->commit().isOk());
  }
  expectOnlyRecord(dir, o, 62, "again");
}

// skipTo(): every record dropped, positions go on from the one given, also after a
// restart (a QM whose pset ids must stay above another QM's, core/qm
// qm.ack_after_store); never backwards; refused with records not committed.
TEST(Journal, SkipToDropsEveryRecordAndGoesOnFromThePositionAcrossARestart) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  JournalOptions o;
  o.segment_bytes = 256;
  {
    auto j = openOrDie(posixEnv(), dir, o);
    for (int i = 1; i <= 20; ++i) ASSERT_TRUE(j->append(payloadFor(i)).isOk());
    ASSERT_TRUE(j->commit().isOk());
    ASSERT_TRUE(j->append("not committed").isOk());
    EXPECT_FALSE(j->skipTo(1000).isOk()) << "skipped past a record not committed";
    ASSERT_TRUE(j->commit().isOk());
    ASSERT_TRUE(j->skipTo(1000).isOk());
    EXPECT_EQ(j->lastPosition(), 999u);
    EXPECT_EQ(replayAll(*j).records.size(), 0u);
    EXPECT_EQ(j->sizeBytes(), 0u);
    ASSERT_TRUE(j->skipTo(5).isOk());  // never backwards
    EXPECT_EQ(j->lastPosition(), 999u);
  }
  {
    auto j = openOrDie(posixEnv(), dir, o);
    EXPECT_EQ(j->lastPosition(), 999u) << "the skip did not survive a restart";
    auto p = j->append("after");
    ASSERT_TRUE(p.isOk());
    EXPECT_EQ(p.value(), 1000u);
    ASSERT_TRUE(j->commit().isOk());
  }
  expectOnlyRecord(dir, o, 1000, "after");
}

TEST(Journal, TrimNeverDropsUncommittedOrUncoveredRecords) {
  TempDir tmp;
  const std::string dir = tmp.file("j");
  auto j = openOrDie(posixEnv(), dir);
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(j->append(payloadFor(i)).isOk());
  ASSERT_TRUE(j->commit().isOk());
  ASSERT_TRUE(j->append("pending").isOk());
  ASSERT_TRUE(j->trimUpTo(1000).isOk());  // clamps to the durable position
  ASSERT_TRUE(j->commit().isOk());
  auto r = replayAll(*j);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].first, 6u);
  EXPECT_EQ(r.records[0].second, "pending");
}

TEST(Journal, OversizedRecordIsRefusedWithoutFailingTheJournal) {
  TempDir tmp;
  JournalOptions o;
  o.max_record_bytes = 100;
  auto j = openOrDie(posixEnv(), tmp.file("j"), o);
  auto p = j->append(std::string(101, 'x'));
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(j->append(std::string(100, 'y')).isOk());
  ASSERT_TRUE(j->commit().isOk());
}

TEST(Journal, ReplayStopsWhenTheCallbackFails) {
  TempDir tmp;
  auto j = openOrDie(posixEnv(), tmp.file("j"));
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(j->append(payloadFor(i)).isOk());
  ASSERT_TRUE(j->commit().isOk());
  int seen = 0;
  auto info = j->replay(0, [&](JournalPos p, std::string_view) {
    ++seen;
    return p == 3 ? Status::aborted("stop") : Status::ok();
  });
  ASSERT_FALSE(info.isOk());
  EXPECT_EQ(info.status().code(), StatusCode::kAborted);
  EXPECT_EQ(seen, 3);
}

TEST(Journal, FailedFolderSyncWhileStartingASegmentIsSticky) {
  TempDir tmp;
  testing::FaultEnv env(posixEnv());
  const std::string dir = tmp.file("j");
  JournalOptions o;
  o.segment_bytes = 64;
  {
    auto j = openOrDie(&env, dir, o);
    ASSERT_TRUE(j->append(std::string(100, 'a')).isOk());
    ASSERT_TRUE(j->commit().isOk());  // past 64 bytes: the next commit starts a segment
    ASSERT_TRUE(j->append("b").isOk());
    env.failNthSyncDir(1);
    auto c = j->commit();
    ASSERT_FALSE(c.isOk());
    EXPECT_FALSE(j->append("c").isOk());
    EXPECT_FALSE(j->commit().isOk());
  }
  env.clearFaults();
  env.crash();  // the new segment's name was never durable
  auto j = openOrDie(&env, dir, o);
  auto r = replayAll(*j);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].second, std::string(100, 'a'));
  auto p = j->append("d");
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p.value(), 2u);
}

// Issue 25: a segment that cannot be opened for want of a descriptor fails nothing: the
// commit is Busy, the records stay appended, and the next commit writes them.
TEST(Journal, OutOfDescriptorsWhileStartingASegmentIsBusyNotSticky) {
  TempDir tmp;
  FailingEnv env;
  const std::string dir = tmp.file("j");
  JournalOptions o;
  o.segment_bytes = 64;
  {
    auto j = openOrDie(&env, dir, o);
    ASSERT_TRUE(j->append(std::string(100, 'a')).isOk());
    ASSERT_TRUE(j->commit().isOk());  // past 64 bytes: the next commit starts a segment
    ASSERT_TRUE(j->append("b").isOk());
    env.out_of_descriptors = true;
    auto c = j->commit();
    ASSERT_FALSE(c.isOk());
    EXPECT_TRUE(c.status().isBusy()) << c.status().toString();
    EXPECT_EQ(j->durablePosition(), 1u);
    ASSERT_TRUE(j->append("c").isOk());  // not failed
    EXPECT_TRUE(j->commit().status().isBusy());
    env.out_of_descriptors = false;
    auto c2 = j->commit();
    ASSERT_TRUE(c2.isOk()) << c2.status().toString();
    EXPECT_EQ(c2.value(), 3u);
  }
  auto j = openOrDie(posixEnv(), dir, o);
  auto r = replayAll(*j);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[1].second, "b");
  EXPECT_EQ(r.records[2].second, "c");
}

// Random appends, commits, trims and power cuts (FaultEnv::crash drops everything not
// synced, and undoes file creations/removals whose folder was not synced). After each
// cut the journal must replay exactly the committed records that were not trimmed,
// in order, and continue numbering after the last committed one.
TEST(Journal, SurvivesRandomPowerCutsWithExactlyTheCommittedRecords) {
  TempDir tmp;
  testing::FaultEnv env(posixEnv());
  const std::string dir = tmp.file("j");
  JournalOptions o;
  o.segment_bytes = 300;
  std::mt19937 rng(4242);
  std::map<JournalPos, std::string> committed;  // durable, not yet trimmed away for sure
  JournalPos trimmed = 0;                       // everything <= this may be gone
  JournalPos last_committed = 0;
  auto j = openOrDie(&env, dir, o);
  int cuts = 0;
  for (int step = 0; step < 3000; ++step) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 5) {
      const std::string payload = "p" + std::to_string(step) + std::string(rng() % 40, 'z');
      auto p = j->append(payload);
      ASSERT_TRUE(p.isOk());
      pending_payloads_[p.value()] = payload;
    } else if (what < 8) {
      auto c = j->commit();
      ASSERT_TRUE(c.isOk());
      for (auto& [pos, payload] : pending_payloads_) committed[pos] = payload;
      pending_payloads_.clear();
      last_committed = c.value();
    } else if (what == 8 && last_committed > 0) {
      JournalPos to = 1 + rng() % last_committed;
      ASSERT_TRUE(j->trimUpTo(to).isOk());
      trimmed = std::max(trimmed, to);
    } else {
      // Power cut, then restart.
      j.reset();
      env.crash();
      pending_payloads_.clear();
      ++cuts;
      j = openOrDie(&env, dir, o);
      ASSERT_NE(j, nullptr);
      auto r = replayAll(*j);
      ASSERT_FALSE(r.info.corruption) << r.info.detail;
      // A contiguous run ending at the last committed record, starting no later
      // than just after the trim point; every payload exactly as committed.
      if (last_committed > trimmed) {
        ASSERT_FALSE(r.records.empty()) << "step " << step;
        EXPECT_LE(r.records.front().first, trimmed + 1) << "step " << step;
      }
      if (!r.records.empty()) {
        EXPECT_EQ(r.records.back().first, last_committed) << "step " << step;
      }
      for (std::size_t i = 0; i < r.records.size(); ++i) {
        if (i > 0) {
          ASSERT_EQ(r.records[i].first, r.records[i - 1].first + 1);
        }
        auto it = committed.find(r.records[i].first);
        ASSERT_NE(it, committed.end()) << "replayed position " << r.records[i].first << " was never committed";
        ASSERT_EQ(r.records[i].second, it->second);
      }
      EXPECT_EQ(j->durablePosition(), last_committed);
      auto p = j->append("after-cut");
      ASSERT_TRUE(p.isOk());
      EXPECT_EQ(p.value(), last_committed + 1) << "positions restart after the last committed record";
      pending_payloads_[p.value()] = "after-cut";
    }
  }
  EXPECT_GT(cuts, 100);
}

}  // namespace
}  // namespace lcc
