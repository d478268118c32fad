#include "posix_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace lcc {
namespace {

// Out of descriptors (EMFILE, ENFILE) is an overload, not a broken store: Busy, so the
// caller answers "try later" and retries instead of failing the store (issue 25).
Status errnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = path + ": " + what + ": " + std::strerror(err);
  if (err == EMFILE || err == ENFILE) return Status::busy(std::move(msg) + " (out of descriptors; try later)");
  return Status::ioError(std::move(msg));
}

constexpr std::string_view kAttributePrefix = "user.lcc.";
constexpr std::size_t kMaxAttributeName = 64;
constexpr std::size_t kFirstAttributeRead = 4096;
constexpr std::size_t kMaxAttributeValue = 65536;  // XATTR_SIZE_MAX, the kernel's bound

// "user.lcc.<name>", or an error for a name outside [A-Za-z0-9._-]{1,64}.
Result<std::string> attributeName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= kMaxAttributeName;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '-');
  }
  if (!ok) return Status::invalidArgument("attribute name '" + name + "' is not [A-Za-z0-9._-]{1,64}");
  return std::string(kAttributePrefix) + name;
}

// Reads an attribute through `get` (getxattr or fgetxattr with the buffer and its
// size): a first try with a small buffer, then one with the kernel's largest value.
template <typename Get>
Result<std::optional<std::string>> readAttribute(const std::string& what, Get get) {
  std::string buf(kFirstAttributeRead, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    ssize_t n = get(buf.data(), buf.size());
    if (n >= 0) {
      buf.resize(static_cast<std::size_t>(n));
      return std::optional<std::string>(std::move(buf));
    }
    const int err = errno;
    if (err == ENODATA || err == ENOTSUP) return std::optional<std::string>();
    if (err == ENOENT) return Status::notFound(what + ": no such file");
    if (err != ERANGE) return errnoStatus("getxattr", what, err);
    buf.assign(kMaxAttributeValue, '\0');
  }
  return Status::ioError(what + ": getxattr: the value outgrew the largest attribute while it was read");
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, std::uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status append(std::string_view data) override {
    const char* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errnoStatus("write", path_, errno);
      }
      p += n;
      left -= static_cast<std::size_t>(n);
      size_ += static_cast<std::uint64_t>(n);
    }
    return Status::ok();
  }

  Status sync() override {
    if (::fdatasync(fd_) != 0) return errnoStatus("fdatasync", path_, errno);
    return Status::ok();
  }

  Status close() override {
    if (fd_ < 0) return Status::ok();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return errnoStatus("close", path_, errno);
    return Status::ok();
  }

  std::uint64_t size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  std::uint64_t size_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadableFile() override { ::close(fd_); }

  Result<std::size_t> read(std::uint64_t offset, std::size_t n, char* buf) override {
    for (;;) {
      ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(offset));
      if (r < 0) {
        if (errno == EINTR) continue;
        return errnoStatus("pread", path_, errno);
      }
      return static_cast<std::size_t>(r);
    }
  }

  Result<std::uint64_t> size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return errnoStatus("fstat", path_, errno);
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  std::string path_;
  int fd_;
};

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<WritableFile>> openWritable(const std::string& path, OpenMode mode) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    if (mode == OpenMode::kTruncate) flags |= O_TRUNC;
    if (mode == OpenMode::kAppend) flags |= O_APPEND;
    if (mode == OpenMode::kCreateNew) flags |= O_EXCL;
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return errnoStatus("open", path, errno);
    if (mode != OpenMode::kAppend) return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, 0));
    struct stat st;  // appending: the file's size is where we start
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return errnoStatus("fstat", path, err);
    }
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd, static_cast<std::uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<ReadableFile>> openReadable(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status::notFound(path + ": no such file");
      return errnoStatus("open", path, errno);
    }
    return std::unique_ptr<ReadableFile>(new PosixReadableFile(path, fd));
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return errnoStatus("rename to " + to, from, errno);
    return Status::ok();
  }

  Status removeFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status::notFound(path + ": no such file");
      return errnoStatus("unlink", path, errno);
    }
    return Status::ok();
  }

  Status truncate(const std::string& path, std::uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return errnoStatus("truncate", path, errno);
    return Status::ok();
  }

  Status createDirs(const std::string& path, const DirOptions& options) override {
    if (path.empty()) return Status::invalidArgument("empty directory name");
    std::string cur;
    std::size_t pos = 0;
    while (pos != std::string::npos) {
      pos = path.find('/', pos + 1);
      cur = path.substr(0, pos);
      if (cur.empty()) continue;
      if (::mkdir(cur.c_str(), options.private_dir ? 0700 : 0755) != 0 && errno != EEXIST) {
        return errnoStatus("mkdir", cur, errno);
      }
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::ioError(path + ": not a directory");
    }
    return Status::ok();
  }

  Status syncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errnoStatus("open", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return errnoStatus("fsync", dir, err);
    return Status::ok();
  }

  Result<std::vector<std::string>> listDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return Status::notFound(dir + ": no such directory");
      return errnoStatus("opendir", dir, errno);
    }
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    ::closedir(d);
    return names;
  }

  bool exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Result<std::uint64_t> fileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::notFound(path + ": no such file");
      return errnoStatus("stat", path, errno);
    }
    return static_cast<std::uint64_t>(st.st_size);
  }

  Result<std::uint64_t> freeSpace(const std::string& path) override {
    struct statvfs vfs;
    if (::statvfs(path.c_str(), &vfs) != 0) return errnoStatus("statvfs", path, errno);
    return static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  }

  Status setAttribute(const std::string& path, const std::string& name, std::string_view value) override {
    LCC_ASSIGN_OR_RETURN(const std::string xname, attributeName(name));
    if (::setxattr(path.c_str(), xname.c_str(), value.data(), value.size(), 0) == 0) return Status::ok();
    const int err = errno;
    switch (err) {
      case ENOENT:
        return Status::notFound(path + ": no such file");
      case ENOTSUP:  // the file system keeps no user attributes (EOPNOTSUPP is the same)
      case E2BIG:    // larger than any attribute may be
      case ERANGE:   // larger than this file system's bound
      case ENOSPC:   // no room left for this file's attributes (ext4: one block)
      case EDQUOT:
        return Status::notSupported(path + ": setxattr " + xname + " (" + std::to_string(value.size()) +
                                    " bytes): " + std::strerror(err));
      default:
        return errnoStatus("setxattr " + xname, path, err);
    }
  }

  Result<std::optional<std::string>> getAttribute(const std::string& path, const std::string& name) override {
    LCC_ASSIGN_OR_RETURN(const std::string xname, attributeName(name));
    return readAttribute(path, [&](char* buf, std::size_t size) {
      return ::getxattr(path.c_str(), xname.c_str(), buf, size);
    });
  }
};

}  // namespace

Env* posixEnv() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

Result<std::optional<std::string>> readFdAttribute(int fd, const std::string& name) {
  LCC_ASSIGN_OR_RETURN(const std::string xname, attributeName(name));
  return readAttribute("descriptor " + std::to_string(fd), [&](char* buf, std::size_t size) {
    return ::fgetxattr(fd, xname.c_str(), buf, size);
  });
}

}  // namespace lcc
