// The BOT-M's filename state under injected faults (issue 15 §2, "Injected faults"):
// a short life of a FilenameStore with small batches (reservations, takes from the
// free list, frees and compactions each happen several times, and the store is
// reopened once in the middle) runs with the Nth write, sync, folder sync or rename
// failed, or the disk full at the Nth byte (the crossing write short), for every N the
// scenario reaches. Every time:
//  - an operation that met a fault leaves the store failed, and a failed store hands
//    out no name (allocate() errors, sticky);
//  - no name is handed out while it is referenced ("referenced" = returned by
//    allocate() and not released since);
//  - then the machine loses power (FaultEnv::crash()) or the process just ends, the
//    store is reopened on the same folder with the faults gone, and a batch of names
//    larger than the free list plus several reservations holds no referenced name.
// Freed names may come back (that is what the free list is for); a lost free only
// leaks a number, which this does not check.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "botm/filename_store.h"
#include "common/posix_env.h"
#include "support/fault_env.h"
#include "support/temp_dir.h"

namespace lcc::botm {
namespace {

using lcc::testing::FaultEnv;
using lcc::testing::TempDir;

// FaultEnv fails a rename only on a dead disk, and a dead disk needs a failed append
// first, which the snapshot's write, sync, rename never has: this fails the Nth rename.
class RenameFaultEnv final : public EnvWrapper {
 public:
  explicit RenameFaultEnv(Env* base) : EnvWrapper(base) {}
  void failNthRename(int n) { fail_in_ = n; }
  int renames() const { return renames_; }
  int injected() const { return injected_; }
  Status rename(const std::string& from, const std::string& to) override {
    ++renames_;
    if (fail_in_ > 0 && --fail_in_ == 0) {
      ++injected_;
      return Status::ioError("fault injected: rename #" + std::to_string(renames_));
    }
    return EnvWrapper::rename(from, to);
  }

 private:
  int fail_in_ = 0, renames_ = 0, injected_ = 0;
};

FilenameStoreOptions smallBatches() {
  FilenameStoreOptions o;
  o.fanout = 16;
  o.reserve_batch = 4;
  o.take_batch = 3;
  o.compact_bytes = 40;
  return o;
}

// One run: the two envs (faults in FaultEnv, renames above it) and what was handed out.
class SweepRun {
 public:
  explicit SweepRun(const std::string& dir) : dir_(dir), faults_(posixEnv()), env_(&faults_) {}
  FaultEnv& faults() { return faults_; }
  RenameFaultEnv& env() { return env_; }
  std::uint64_t injected() const { return faults_.injectedFailures() + static_cast<std::uint64_t>(env_.injected()); }
  const std::set<std::uint64_t>& referenced() const { return referenced_; }

  // The scenario: two lives of one store; a life ends early when its store fails.
  // The first life ends with sync() and a close, the second is left open (its last
  // frees unsynced) for endLife().
  void scenario() {
    for (int life = 0; life < 2; ++life) {
      if (!openStore()) return;
      for (int round = 0; round < 4 && !store_->failed(); ++round) {
        for (int i = 0; i < 5; ++i) allocate();
        releaseOldest(round % 2 == 0 ? 3 : 2);
        releaseNewest();  // so that a name is often freed, reused and freed again
      }
      if (life == 1) return;
      call([&] { (void)store_->sync(); });
      store_.reset();  // the destructor's sync: an error there is nobody's to see
    }
  }

  // After the scenario: the power goes (the store still open) or the process ends.
  void endLife(bool power_loss) {
    if (power_loss) {
      faults_.crash();
      store_.reset();
    } else {
      store_.reset();
      faults_.forgetUnsynced();
    }
    faults_.clearFaults();
    env_.failNthRename(0);
  }

  // Reopens with no fault and hands out more than the free list and several
  // reservations: no referenced name may come back.
  void reopenAndCheck() {
    auto s = FilenameStore::open(&env_, dir_, smallBatches());
    ASSERT_TRUE(s.isOk()) << s.status().toString();
    for (int i = 0; i < 48; ++i) {
      auto n = s.value()->allocate();
      ASSERT_TRUE(n.isOk()) << n.status().toString();
      EXPECT_TRUE(referenced_.insert(n.value()).second) << "name " << n.value() << " handed out again after reopen";
    }
  }

 private:
  bool openStore() {
    const std::uint64_t before = injected();
    auto s = FilenameStore::open(&env_, dir_, smallBatches());
    if (!s.isOk()) {
      EXPECT_GT(injected(), before) << "open failed with no fault: " << s.status().toString();
      return false;
    }
    store_ = std::move(s).value();
    return true;
  }

  // Runs one store operation; if it met a fault, the store must say so.
  void call(const std::function<void()>& op) {
    const std::uint64_t before = injected();
    op();
    if (injected() > before) EXPECT_TRUE(store_->failed()) << "a fault hit the store and it is not failed";
  }

  void allocate() {
    const bool was_failed = store_->failed();
    const std::uint64_t before = injected();
    auto n = store_->allocate();
    if (injected() > before || was_failed) {
      EXPECT_FALSE(n.isOk()) << "name " << n.value() << " handed out by a failed store";
      EXPECT_TRUE(store_->failed());
    }
    if (!n.isOk()) {
      EXPECT_TRUE(store_->failed()) << n.status().toString();
      return;
    }
    EXPECT_TRUE(referenced_.insert(n.value()).second) << "name " << n.value() << " handed out while referenced";
    order_.push_back(n.value());
  }

  void release(std::uint64_t n) {
    call([&] { store_->release(n); });
    referenced_.erase(n);
  }
  void releaseOldest(int count) {
    for (int i = 0; i < count && !order_.empty(); ++i) {
      release(order_.front());
      order_.erase(order_.begin());
    }
  }
  void releaseNewest() {
    if (order_.empty()) return;
    release(order_.back());
    order_.pop_back();
  }

  std::string dir_;
  FaultEnv faults_;
  RenameFaultEnv env_;
  std::unique_ptr<FilenameStore> store_;
  std::set<std::uint64_t> referenced_;
  std::vector<std::uint64_t> order_;  // referenced, oldest first
};

struct CleanCounts {
  std::uint64_t writes = 0, syncs = 0, sync_dirs = 0, bytes = 0;
  int renames = 0;
};

CleanCounts countCleanRun() {
  TempDir dir;
  SweepRun run(dir.path());
  run.scenario();
  CleanCounts c{run.faults().writeCount(), run.faults().syncCount(), run.faults().syncDirCount(),
                run.faults().bytesWritten(), run.env().renames()};
  EXPECT_EQ(run.injected(), 0u);
  run.endLife(true);
  run.reopenAndCheck();
  return c;
}

// Sweeps faults 1..n of one kind, each followed by a power loss and by a plain restart.
int sweep(int n, const std::function<void(SweepRun&, int)>& arm) {
  int runs = 0;
  for (int power_loss = 0; power_loss < 2; ++power_loss) {
    for (int k = 1; k <= n; ++k) {
      SCOPED_TRACE("fault " + std::to_string(k) + (power_loss ? ", then a power loss" : ", then a restart"));
      TempDir dir;
      SweepRun run(dir.path());
      arm(run, k);
      run.scenario();
      EXPECT_GE(run.injected(), 1u) << "the fault never fired";
      run.endLife(power_loss != 0);
      run.reopenAndCheck();
      ++runs;
    }
  }
  return runs;
}

TEST(BotmFilenameFaultSweep, TheCleanScenarioReservesTakesFreesAndCompactsSeveralTimes) {
  const CleanCounts c = countCleanRun();
  EXPECT_GE(c.writes, 30u);
  EXPECT_GE(c.syncs, 12u);
  EXPECT_GE(c.renames, 4);  // a snapshot at each open and several compactions
  RecordProperty("writes", static_cast<int>(c.writes));
  RecordProperty("syncs", static_cast<int>(c.syncs));
  RecordProperty("sync_dirs", static_cast<int>(c.sync_dirs));
  RecordProperty("renames", c.renames);
  RecordProperty("bytes", static_cast<int>(c.bytes));
}

TEST(BotmFilenameFaultSweep, EveryWriteSyncFolderSyncAndRenameFailedInTurn) {
  const CleanCounts c = countCleanRun();
  int runs = sweep(static_cast<int>(c.writes), [](SweepRun& r, int k) { r.faults().failNthWrite(k); });
  runs += sweep(static_cast<int>(c.syncs), [](SweepRun& r, int k) { r.faults().failNthSync(k); });
  runs += sweep(static_cast<int>(c.sync_dirs), [](SweepRun& r, int k) { r.faults().failNthSyncDir(k); });
  runs += sweep(c.renames, [](SweepRun& r, int k) { r.env().failNthRename(k); });
  RecordProperty("io_swept", runs);
  EXPECT_EQ(runs, 2 * static_cast<int>(c.writes + c.syncs + c.sync_dirs + c.renames));
}

TEST(BotmFilenameFaultSweep, AFullDiskAtEveryStepOfTheBytesWritten) {
  const CleanCounts c = countCleanRun();
  const int steps = 32;
  const std::uint64_t step = std::max<std::uint64_t>(1, c.bytes / steps);
  const int runs =
      sweep(steps, [&](SweepRun& r, int k) { r.faults().diskFullAfterBytes(static_cast<std::uint64_t>(k - 1) * step); });
  RecordProperty("full_disk_offsets_swept", runs);
}

// A dead disk: after N appends every append, sync, folder sync and rename fails.
TEST(BotmFilenameFaultSweep, ADiskThatDiesAfterEveryWrite) {
  const CleanCounts c = countCleanRun();
  const int runs = sweep(static_cast<int>(c.writes), [](SweepRun& r, int k) { r.faults().failWritesAfter(k - 1); });
  RecordProperty("dead_disk_runs", runs);
}

// A release whose line was torn by the crash ("F 12" landed as "F 1"): the torn line
// is never replayed, so name 1 (still referenced) is not freed by it.
TEST(BotmFilenameFaultSweep, AnOpenAfterATornLastLogLineWorks) {
  TempDir dir;
  std::set<std::uint64_t> referenced;
  {
    auto s = FilenameStore::open(posixEnv(), dir.path(), smallBatches());
    ASSERT_TRUE(s.isOk());
    for (int i = 0; i < 14; ++i) referenced.insert(s.value()->allocate().value());
    s.value()->release(3);
    referenced.erase(3);
  }
  auto log = posixEnv()->openWritable(dir.file("filenames.log"), OpenMode::kAppend);
  ASSERT_TRUE(log.isOk());
  ASSERT_TRUE(log.value()->append("F 1").isOk());
  ASSERT_TRUE(log.value()->close().isOk());
  auto s = FilenameStore::open(posixEnv(), dir.path(), smallBatches());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_FALSE(s.value()->isFree(1));
  EXPECT_TRUE(s.value()->isFree(3));
  for (int i = 0; i < 30; ++i) {
    auto n = s.value()->allocate();
    ASSERT_TRUE(n.isOk());
    EXPECT_TRUE(referenced.insert(n.value()).second) << "name " << n.value() << " handed out twice";
  }
}

// A crash in the middle of a compaction leaves filenames.snapshot.tmp (here half
// written, listing referenced names as free): the open ignores it and replaces it.
TEST(BotmFilenameFaultSweep, AnOpenAfterACrashLeftTheSnapshotTempFileWorks) {
  TempDir dir;
  std::set<std::uint64_t> referenced;
  {
    auto s = FilenameStore::open(posixEnv(), dir.path(), smallBatches());
    ASSERT_TRUE(s.isOk());
    for (int i = 0; i < 9; ++i) referenced.insert(s.value()->allocate().value());
  }
  {
    auto tmp = posixEnv()->openWritable(dir.file("filenames.snapshot.tmp"), OpenMode::kTruncate);
    ASSERT_TRUE(tmp.isOk());
    ASSERT_TRUE(tmp.value()->append("lcc-botm-filenames 1\nreserved 0\nf 1\nf 2\n").isOk());  // no end line
    ASSERT_TRUE(tmp.value()->close().isOk());
  }
  auto s = FilenameStore::open(posixEnv(), dir.path(), smallBatches());
  ASSERT_TRUE(s.isOk()) << s.status().toString();
  EXPECT_EQ(s.value()->freeCount(), 0u);
  for (int i = 0; i < 20; ++i) {
    auto n = s.value()->allocate();
    ASSERT_TRUE(n.isOk());
    EXPECT_TRUE(referenced.insert(n.value()).second) << "name " << n.value() << " handed out twice";
  }
  auto tmp = posixEnv()->readFile(dir.file("filenames.snapshot.tmp"));
  EXPECT_FALSE(tmp.isOk() && tmp.value().find("f 1\n") != std::string::npos) << "the stale temp file was read or kept";
}

}  // namespace
}  // namespace lcc::botm
