// The POSIX Env's file attributes (lcc/env.h, Linux extended attributes "user.lcc.*"),
// on the file systems a content folder lives on here: /tmp (ext4, attributes in one
// block of about 4 KB) and /dev/shm (tmpfs, user attributes since Linux 6.6).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/posix_env.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

class PosixEnvAttributes : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // "": $TMPDIR or /tmp, as every other test.
    if (!GetParam().empty() && !std::filesystem::is_directory(GetParam())) GTEST_SKIP() << GetParam() << " is not here";
    dir_ = GetParam().empty() ? std::make_unique<testing::TempDir>() : std::make_unique<testing::TempDir>(GetParam());
    struct statfs fs;
    ASSERT_EQ(::statfs(dir_->path().c_str(), &fs), 0);
    fs_type_ = static_cast<long>(fs.f_type);
    file_ = dir_->path() + "/f";
    ASSERT_TRUE(env_->writeFileAtomic(file_, "body").isOk());
    if (env_->setAttribute(file_, "probe", "x").code() == StatusCode::kNotSupported) {
      GTEST_SKIP() << GetParam() << " keeps no user attributes";
    }
  }

  Env* env_ = posixEnv();
  std::unique_ptr<testing::TempDir> dir_;
  long fs_type_ = 0;
  std::string file_;
};

TEST_P(PosixEnvAttributes, AValueIsKeptReplacedAndNamedUserLcc) {
  EXPECT_EQ(env_->getAttribute(file_, "head").value(), std::nullopt);
  ASSERT_TRUE(env_->setAttribute(file_, "head", "first").isOk());
  ASSERT_TRUE(env_->setAttribute(file_, "head", std::string("sec\0nd", 6)).isOk());
  EXPECT_EQ(env_->getAttribute(file_, "head").value(), std::string("sec\0nd", 6));
  char raw[16];
  EXPECT_EQ(::getxattr(file_.c_str(), "user.lcc.head", raw, sizeof raw), 6);
  ASSERT_TRUE(env_->setAttribute(file_, "empty", "").isOk());
  EXPECT_EQ(env_->getAttribute(file_, "empty").value(), std::string());  // there, and empty
}

TEST_P(PosixEnvAttributes, ARenameCarriesItAndAnUnlinkTakesIt) {
  const std::string tmp = file_ + ".1-1.tmp";
  ASSERT_TRUE(env_->writeFileAtomic(tmp, "new body").isOk());
  ASSERT_TRUE(env_->setAttribute(file_, "head", "old").isOk());
  ASSERT_TRUE(env_->setAttribute(tmp, "head", "new").isOk());
  ASSERT_TRUE(env_->rename(tmp, file_).isOk());
  EXPECT_EQ(env_->getAttribute(file_, "head").value(), "new");
  ASSERT_TRUE(env_->removeFile(file_).isOk());
  EXPECT_TRUE(env_->getAttribute(file_, "head").status().isNotFound());
  ASSERT_TRUE(env_->writeFileAtomic(file_, "again").isOk());
  EXPECT_EQ(env_->getAttribute(file_, "head").value(), std::nullopt);  // a new file starts bare
}

TEST_P(PosixEnvAttributes, ValuesPastTheFirstReadBufferAndTheFileSystemsBound) {
  // 5,000 bytes: past the reader's first 4 KiB buffer; ext4 refuses them (one block).
  const std::string mid(5000, 'm');
  Status s = env_->setAttribute(file_, "big", mid);
  if (fs_type_ == EXT4_SUPER_MAGIC) {
    EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.toString();
    EXPECT_NE(s.message().find("setxattr user.lcc.big (5000 bytes)"), std::string::npos) << s.message();
  } else if (fs_type_ == TMPFS_MAGIC) {
    ASSERT_TRUE(s.isOk()) << s.toString();
  }
  if (s.isOk()) {
    EXPECT_EQ(env_->getAttribute(file_, "big").value(), mid);
  }
  // Over the kernel's bound for one value, on every file system.
  EXPECT_EQ(env_->setAttribute(file_, "big", std::string(65537, 'x')).code(), StatusCode::kNotSupported);
  // A small one still fits beside the refused one.
  EXPECT_TRUE(env_->setAttribute(file_, "small", std::string(1000, 's')).isOk());
}

TEST_P(PosixEnvAttributes, MissingFilesAndBadNames) {
  const std::string gone = dir_->path() + "/gone";
  EXPECT_TRUE(env_->setAttribute(gone, "head", "x").isNotFound());
  EXPECT_TRUE(env_->getAttribute(gone, "head").status().isNotFound());
  const std::vector<std::string> bad_names{"", "a/b", "a b", "user.x\xff", std::string(65, 'n'), std::string("a\0b", 3)};
  for (const std::string& bad : bad_names) {
    EXPECT_EQ(env_->setAttribute(file_, bad, "x").code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(env_->getAttribute(file_, bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(env_->setAttribute(file_, std::string(64, 'n'), "x").isOk());
  EXPECT_TRUE(env_->setAttribute(file_, "Aa0._-", "x").isOk());
}

TEST_P(PosixEnvAttributes, ADescriptorReadsWhatThePathHas) {
  const std::string mid(fs_type_ == TMPFS_MAGIC ? 6000 : 3000, 'd');
  ASSERT_TRUE(env_->setAttribute(file_, "head", mid).isOk());
  int fd = ::open(file_.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(readFdAttribute(fd, "head").value(), mid);
  EXPECT_EQ(readFdAttribute(fd, "other").value(), std::nullopt);
  EXPECT_EQ(readFdAttribute(fd, "../x").status().code(), StatusCode::kInvalidArgument);
  ::close(fd);
  EXPECT_FALSE(readFdAttribute(fd, "head").isOk());  // a closed descriptor: an error, not a value
}

std::string baseName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param.empty() ? "tmpdir" : "dev_shm";
}

INSTANTIATE_TEST_SUITE_P(FileSystems, PosixEnvAttributes, ::testing::Values(std::string(), std::string("/dev/shm")),
                         baseName);

// Issue 25: running out of descriptors is an overload ("try later"), not a broken disk:
// an open that fails with EMFILE is Busy. In a child whose RLIMIT_NOFILE is used up.
TEST(PosixEnvDescriptors, AnOpenOutOfDescriptorsIsBusyNotAnIoError) {
  testing::TempDir tmp;
  const std::string path = tmp.file("f");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit rl{64, 64};
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) ::_exit(2);
    for (int i = 0; i < 64 && ::dup(0) >= 0; ++i) {
    }
    auto f = posixEnv()->openWritable(path, OpenMode::kTruncate);
    ::_exit(!f.isOk() && f.status().isBusy() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the open out of descriptors was not Busy";
}

}  // namespace
}  // namespace lcc
