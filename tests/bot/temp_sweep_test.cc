// The sweep of robots' temporary files: real files in a real content folder, a real
// dead process (a reaped child) and a live one (this test).
#include "bot/temp_sweep.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/posix_env.h"
#include "support/temp_dir.h"

namespace lcc::bot {
namespace {

pid_t deadPid() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  int st = 0;
  ::waitpid(pid, &st, 0);
  return pid;  // reaped: no such process any more
}

TEST(TempSweep, ParsesOnlyTheRobotsTemporaryNames) {
  pid_t pid = 0;
  EXPECT_TRUE(parseTempName("2a.4242-7.tmp", &pid));
  EXPECT_EQ(pid, 4242);
  EXPECT_TRUE(parseTempName("ff.1-0.tmp", &pid));
  EXPECT_EQ(pid, 1);
  for (const char* name : {"2a", "2a.tmp", "2a.4242.tmp", "2a.-7.tmp", "2a.4242-.tmp", "2a.42x2-7.tmp", ".4242-7.tmp",
                           "2a.4242-7.tmpx", "2a.4242-7", "2a.0-7.tmp", "2a.99999999999-7.tmp", "2a.4242-7a.tmp"}) {
    EXPECT_FALSE(parseTempName(name, &pid)) << name;
  }
}

TEST(TempSweep, RemovesTheFilesOfDeadRobotsAndKeepsEverythingElse) {
  testing::TempDir dir;
  Env& env = *posixEnv();
  const std::string root = dir.path() + "/content";
  ASSERT_TRUE(env.createDirs(root + "/00/00").isOk());
  ASSERT_TRUE(env.createDirs(root + "/00/01").isOk());
  const pid_t dead = deadPid();
  const std::string live = std::to_string(::getpid());
  auto put = [&](const std::string& rel) { ASSERT_TRUE(env.writeFileAtomic(root + "/" + rel, "x").isOk()) << rel; };
  put("00/00/2a");                                           // content
  put("00/00/2b." + std::to_string(dead) + "-3.tmp");        // a dead robot's
  put("00/01/7." + std::to_string(dead) + "-4.tmp");         // another
  put("00/01/8." + live + "-5.tmp");                         // being written now
  put("00/01/9.tmp");                                        // not a robot's name
  put("stray." + std::to_string(dead) + "-1.tmp");           // outside the fan-out

  TempSweepStats st = sweepTempFiles(env, root, processAlive);
  EXPECT_EQ(st.removed, 2u);
  EXPECT_EQ(st.kept, 1u);
  EXPECT_EQ(st.errors, 0u);
  EXPECT_TRUE(env.exists(root + "/00/00/2a"));
  EXPECT_FALSE(env.exists(root + "/00/00/2b." + std::to_string(dead) + "-3.tmp"));
  EXPECT_FALSE(env.exists(root + "/00/01/7." + std::to_string(dead) + "-4.tmp"));
  EXPECT_TRUE(env.exists(root + "/00/01/8." + live + "-5.tmp"));
  EXPECT_TRUE(env.exists(root + "/00/01/9.tmp"));
  EXPECT_TRUE(env.exists(root + "/stray." + std::to_string(dead) + "-1.tmp"));

  // A second sweep finds nothing more; a missing folder is no error.
  EXPECT_EQ(sweepTempFiles(env, root, processAlive).removed, 0u);
  EXPECT_EQ(sweepTempFiles(env, dir.path() + "/none", processAlive).errors, 0u);
}

TEST(TempSweep, StopsWhenAsked) {
  testing::TempDir dir;
  Env& env = *posixEnv();
  const std::string root = dir.path() + "/content";
  ASSERT_TRUE(env.createDirs(root + "/00/00").isOk());
  ASSERT_TRUE(env.writeFileAtomic(root + "/00/00/1.77777-1.tmp", "x").isOk());
  std::atomic<bool> stop{true};
  EXPECT_EQ(sweepTempFiles(env, root, [](pid_t) { return false; }, &stop).removed, 0u);
  EXPECT_TRUE(env.exists(root + "/00/00/1.77777-1.tmp"));
}

}  // namespace
}  // namespace lcc::bot
