// lcc/env.h — files, injected (LevelDB's Env).
//
// WHO: the intake journal and UNS spool, robots writing content, the BOT-M's
// filename state, the CU reading content, the admin token. Storage engines that do
// their own I/O (Kyoto, SQLite) do not go through it.
// Production: core/common/posix_env.h. Tests: a fault-injecting Env that fails the
// n-th sync or write and can "crash" by dropping whatever was not synced; test Envs
// derive from EnvWrapper and override only what they change.
// THREADS: Env methods are thread-safe. A file object is used by one thread at a time.
// DURABILITY: data is durable only after WritableFile::sync() returned OK; a new or
// renamed name is durable only after syncDir() of its folder returned OK.
// ATTRIBUTES: small named values stored with a file (extended attributes; the robot
// keeps a fetch's response head so). They go with the file: a rename carries them, an
// unlink removes them. Their durability is the file system's (no sync call covers them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/status.h"

namespace lcc {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::string_view data) = 0;
  // Makes everything appended so far durable (fdatasync).
  virtual Status sync() = 0;
  virtual Status close() = 0;
  // Bytes in the file, including what was appended.
  virtual std::uint64_t size() const = 0;
};

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Reads up to n bytes at `offset` into buf; returns the count (0 at end of file).
  virtual Result<std::size_t> read(std::uint64_t offset, std::size_t n, char* buf) = 0;
  virtual Result<std::uint64_t> size() = 0;
};

// How createDirs() makes a folder.
struct DirOptions {
  bool private_dir = false;  // mode 0700 (else 0755, less the umask)
};

enum class OpenMode : std::uint8_t {
  kTruncate,   // create or empty
  kAppend,     // create or keep and append at the end
  kCreateNew,  // fail with IOError if the file exists
};

class Env {
 public:
  virtual ~Env() = default;
  Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  virtual Result<std::unique_ptr<WritableFile>> openWritable(const std::string& path, OpenMode mode) = 0;
  virtual Result<std::unique_ptr<ReadableFile>> openReadable(const std::string& path) = 0;

  // Atomic replace: after a crash `to` is either the old or the new file.
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  virtual Status removeFile(const std::string& path) = 0;
  // Shrinks or grows a file to `size` bytes.
  virtual Status truncate(const std::string& path, std::uint64_t size) = 0;
  // mkdir -p.
  virtual Status createDirs(const std::string& path, const DirOptions& options) = 0;
  Status createDirs(const std::string& path) { return createDirs(path, DirOptions{}); }
  // Makes the directory entries of `dir` durable (after create, rename, unlink).
  virtual Status syncDir(const std::string& dir) = 0;
  virtual Result<std::vector<std::string>> listDir(const std::string& dir) = 0;
  virtual bool exists(const std::string& path) = 0;
  virtual Result<std::uint64_t> fileSize(const std::string& path) = 0;
  // Bytes available to an unprivileged writer on the file system holding `path`.
  virtual Result<std::uint64_t> freeSpace(const std::string& path) = 0;
  // Stores `value` as the attribute `name` of the file at `path` (replacing one of that
  // name). NotSupported when the file system refuses it (no attributes there, value
  // too large, no room left for attributes of this file): the caller keeps the value
  // elsewhere. NotFound when there is no such file. `name`: [A-Za-z0-9._-], 1-64 chars.
  virtual Status setAttribute(const std::string& path, const std::string& name, std::string_view value) = 0;
  // The attribute `name` of the file at `path`; nullopt when the file has none (or its
  // file system keeps no attributes). NotFound when there is no such file.
  virtual Result<std::optional<std::string>> getAttribute(const std::string& path, const std::string& name) = 0;

  // Helpers built on the primitives above.
  Result<std::string> readFile(const std::string& path);
  // Write to path.tmp, sync, rename over path, sync the folder.
  Status writeFileAtomic(const std::string& path, std::string_view data);
};

// An Env that forwards every call to a target Env (LevelDB's EnvWrapper). A test Env
// derives from it and overrides only what it changes (a failing sync, a full disk).
// The target must outlive the wrapper.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<std::unique_ptr<WritableFile>> openWritable(const std::string& path, OpenMode mode) override {
    return target_->openWritable(path, mode);
  }
  Result<std::unique_ptr<ReadableFile>> openReadable(const std::string& path) override {
    return target_->openReadable(path);
  }
  Status rename(const std::string& from, const std::string& to) override { return target_->rename(from, to); }
  Status removeFile(const std::string& path) override { return target_->removeFile(path); }
  Status truncate(const std::string& path, std::uint64_t size) override { return target_->truncate(path, size); }
  Status createDirs(const std::string& path, const DirOptions& options) override {
    return target_->createDirs(path, options);
  }
  using Env::createDirs;
  Status syncDir(const std::string& dir) override { return target_->syncDir(dir); }
  Result<std::vector<std::string>> listDir(const std::string& dir) override { return target_->listDir(dir); }
  bool exists(const std::string& path) override { return target_->exists(path); }
  Result<std::uint64_t> fileSize(const std::string& path) override { return target_->fileSize(path); }
  Result<std::uint64_t> freeSpace(const std::string& path) override { return target_->freeSpace(path); }
  Status setAttribute(const std::string& path, const std::string& name, std::string_view value) override {
    return target_->setAttribute(path, name, value);
  }
  Result<std::optional<std::string>> getAttribute(const std::string& path, const std::string& name) override {
    return target_->getAttribute(path, name);
  }

 private:
  Env* target_;
};

}  // namespace lcc
