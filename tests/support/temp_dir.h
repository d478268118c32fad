// temp_dir.h — a private temporary folder removed at the end of the test.
#pragma once

#include <string>

namespace lcc::testing {

class TempDir {
 public:
  TempDir();
  // Below `base` instead of $TMPDIR (e.g. /dev/shm, for a test on tmpfs).
  explicit TempDir(const std::string& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace lcc::testing
