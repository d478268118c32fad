// run_lock.h — one run at a time: flock(2) on a lock file, released by the kernel when
// the process ends (a crashed run leaves no stale lock). Used by `lcc cu mirror`
// (DIR/.lcc-mirror.lock) and `lcc cp sync` (STATE.lock).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "lcc/status.h"

namespace lcc {

class RunLock {
 public:
  RunLock() = default;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  // OK; Busy when another process holds it; IOError otherwise.
  Status acquire(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) return Status::ioError(path + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno == EWOULDBLOCK) return Status::busy(path + ": another run holds the lock");
      return Status::ioError(path + ": " + std::strerror(errno));
    }
    return Status::ok();
  }

 private:
  int fd_ = -1;
};

}  // namespace lcc
