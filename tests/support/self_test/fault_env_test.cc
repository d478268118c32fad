#include "support/fault_env.h"

#include <gtest/gtest.h>

#include "common/posix_env.h"
#include "support/temp_dir.h"

namespace lcc::testing {
namespace {

class FaultEnvTest : public ::testing::Test {
 protected:
  std::string read(const std::string& path) {
    auto r = posixEnv()->readFile(path);
    return r.isOk() ? r.value() : "<missing>";
  }
  std::unique_ptr<WritableFile> open(const std::string& path, OpenMode mode = OpenMode::kTruncate) {
    auto f = env_.openWritable(path, mode);
    EXPECT_TRUE(f.isOk()) << f.status().toString();
    return std::move(f).value();
  }

  TempDir dir_;
  FaultEnv env_{posixEnv()};
};

TEST_F(FaultEnvTest, PassesThroughWhenNoFaultIsArmed) {
  const auto path = dir_.file("a");
  ASSERT_TRUE(env_.writeFileAtomic(path, "hello").isOk());
  EXPECT_EQ(read(path), "hello");
  EXPECT_TRUE(env_.exists(path));
  EXPECT_EQ(env_.fileSize(path).value(), 5u);
  EXPECT_EQ(env_.syncCount(), 1u);
  EXPECT_EQ(env_.syncDirCount(), 1u);
  EXPECT_EQ(env_.injectedFailures(), 0u);
}

TEST_F(FaultEnvTest, FailsTheNthSyncOnly) {
  auto f = open(dir_.file("a"));
  env_.failNthSync(2);
  ASSERT_TRUE(f->append("x").isOk());
  EXPECT_TRUE(f->sync().isOk());
  Status s = f->sync();
  EXPECT_TRUE(s.isIOError());
  EXPECT_NE(s.message().find("fault injected"), std::string::npos);
  EXPECT_TRUE(f->sync().isOk());
  EXPECT_EQ(env_.injectedFailures(), 1u);
}

TEST_F(FaultEnvTest, FailsTheNthWriteWithoutWritingIt) {
  const auto path = dir_.file("a");
  auto f = open(path);
  env_.failNthWrite(2);
  EXPECT_TRUE(f->append("one").isOk());
  EXPECT_FALSE(f->append("two").isOk());
  EXPECT_TRUE(f->append("three").isOk());
  ASSERT_TRUE(f->close().isOk());
  EXPECT_EQ(read(path), "onethree");
}

TEST_F(FaultEnvTest, EveryWriteFailsAfterThePoint) {
  auto f = open(dir_.file("a"));
  env_.failWritesAfter(2);
  EXPECT_TRUE(f->append("1").isOk());
  EXPECT_TRUE(f->append("2").isOk());
  EXPECT_FALSE(f->append("3").isOk());
  EXPECT_FALSE(f->append("4").isOk());
  EXPECT_FALSE(f->sync().isOk());
  EXPECT_FALSE(env_.syncDir(dir_.path()).isOk());
  EXPECT_FALSE(env_.rename(dir_.file("a"), dir_.file("b")).isOk());
  env_.clearFaults();
  EXPECT_TRUE(f->append("5").isOk());
  EXPECT_TRUE(f->sync().isOk());
}

TEST_F(FaultEnvTest, FailNthSyncDirAndFreeSpace) {
  env_.failNthSyncDir(1);
  EXPECT_FALSE(env_.syncDir(dir_.path()).isOk());
  EXPECT_TRUE(env_.syncDir(dir_.path()).isOk());
  env_.setFreeSpace(4096);
  EXPECT_EQ(env_.freeSpace(dir_.path()).value(), 4096u);
}

TEST_F(FaultEnvTest, CrashDropsUnsyncedBytes) {
  const auto path = dir_.file("journal");
  auto f = open(path);
  ASSERT_TRUE(env_.syncDir(dir_.path()).isOk());  // the name is durable
  ASSERT_TRUE(f->append("synced;").isOk());
  ASSERT_TRUE(f->sync().isOk());
  ASSERT_TRUE(f->append("lost").isOk());
  EXPECT_EQ(read(path), "synced;lost");
  env_.crash();
  EXPECT_EQ(read(path), "synced;");
  EXPECT_FALSE(f->append("after").isOk()) << "handles from before the crash are dead";
}

TEST_F(FaultEnvTest, CrashRemovesFilesWhoseNameWasNeverSynced) {
  const auto path = dir_.file("new");
  auto f = open(path);
  ASSERT_TRUE(f->append("data").isOk());
  ASSERT_TRUE(f->sync().isOk());
  ASSERT_TRUE(f->close().isOk());
  env_.crash();
  EXPECT_FALSE(posixEnv()->exists(path));
}

TEST_F(FaultEnvTest, CrashUndoesAnUnsyncedRenameAndKeepsASyncedOne) {
  const auto target = dir_.file("state");
  ASSERT_TRUE(posixEnv()->writeFileAtomic(target, "old").isOk());  // existed before: durable
  // Replace without syncing the folder: the crash brings the old file back.
  {
    auto f = open(target + ".tmp");
    ASSERT_TRUE(f->append("new").isOk());
    ASSERT_TRUE(f->sync().isOk());
    ASSERT_TRUE(f->close().isOk());
    ASSERT_TRUE(env_.rename(target + ".tmp", target).isOk());
  }
  EXPECT_EQ(read(target), "new");
  env_.crash();
  EXPECT_EQ(read(target), "old");
  EXPECT_FALSE(posixEnv()->exists(target + ".tmp"));
  // writeFileAtomic syncs the folder: the replacement survives.
  ASSERT_TRUE(env_.writeFileAtomic(target, "newer").isOk());
  env_.crash();
  EXPECT_EQ(read(target), "newer");
}

TEST_F(FaultEnvTest, CrashUndoesAnUnsyncedRemove) {
  const auto path = dir_.file("keep");
  ASSERT_TRUE(posixEnv()->writeFileAtomic(path, "bytes").isOk());
  ASSERT_TRUE(env_.removeFile(path).isOk());
  EXPECT_FALSE(posixEnv()->exists(path));
  env_.crash();
  EXPECT_EQ(read(path), "bytes");
  ASSERT_TRUE(env_.removeFile(path).isOk());
  ASSERT_TRUE(env_.syncDir(dir_.path()).isOk());
  env_.crash();
  EXPECT_FALSE(posixEnv()->exists(path));
}

TEST_F(FaultEnvTest, AppendingToADurableFileKeepsItsOldBytes) {
  const auto path = dir_.file("log");
  ASSERT_TRUE(posixEnv()->writeFileAtomic(path, "abc").isOk());
  auto f = open(path, OpenMode::kAppend);
  ASSERT_TRUE(f->append("def").isOk());
  env_.crash();
  EXPECT_EQ(read(path), "abc");
}

TEST_F(FaultEnvTest, TruncateIsTakenAsDurable) {
  const auto path = dir_.file("t");
  ASSERT_TRUE(env_.writeFileAtomic(path, "0123456789").isOk());
  auto f = open(path, OpenMode::kAppend);
  ASSERT_TRUE(f->sync().isOk());
  ASSERT_TRUE(env_.truncate(path, 4).isOk());
  env_.crash();
  EXPECT_EQ(read(path), "0123");
}

}  // namespace
}  // namespace lcc::testing
