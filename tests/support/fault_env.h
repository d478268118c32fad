// fault_env.h — an Env that wraps another Env (an EnvWrapper) and injects faults
// (LevelDB's FaultInjectionTestEnv, in spirit).
//
// FAULTS (counted from the moment they are armed, 1-based):
//  - failNthSync(n): the n-th WritableFile::sync() fails (IOError), nothing synced.
//  - failNthSyncDir(n): the n-th syncDir() fails.
//  - failNthWrite(n): the n-th append() fails and writes nothing.
//  - failWritesAfter(n): after n more successful appends, every append, sync and
//    syncDir fails (a full or dead disk) until clearFaults(). failAllWrites() = after 0.
//  - diskFullAfterBytes(n): the disk has room for n more appended bytes. The append
//    that crosses it writes the part that fits and fails with ENOSPC's message (a
//    short write, as write(2) makes one); every later append fails the same way until
//    clearFaults(). Syncs go on working: what was written can still be made durable.
//  - setFreeSpace(bytes): freeSpace() reports this instead of asking the base Env.
//  - outOfDescriptors(on): every openWritable() and syncDir() is Busy, as posixEnv()
//    says for EMFILE/ENFILE (issue 25), until turned off or clearFaults().
// CRASH — crash() models losing power, for files written through this Env since it
// was made (or since the last crash()/forgetUnsynced()):
//  - every tracked file is cut back to the size it had at its last successful sync()
//    (data appended and not synced is lost; truncate() and opening with kTruncate are
//    taken as immediately durable — the pessimistic choice: old bytes are gone);
//  - a file created through this Env whose folder saw no successful syncDir() since
//    is deleted (its name was never durable);
//  - rename() and removeFile() not followed by a successful syncDir() of the folder
//    are undone, newest first: the file gets its old name back and a file that was
//    replaced or removed gets back the bytes it had at that moment (captured then;
//    files over 64 MiB are not captured and stay lost);
//  - open WritableFile objects made before the crash fail every later call.
// It does not model reordering between files, torn sectors, or lost directory
// creation (createDirs is taken as durable). Storage engines that do their own I/O
// (Kyoto, SQLite) are not covered by it.
// THREADS: thread-safe, like every Env.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lcc/env.h"

namespace lcc::testing {

class FaultEnv final : public EnvWrapper {
 public:
  explicit FaultEnv(Env* base);
  ~FaultEnv() override;

  // --- faults ---
  void failNthSync(int n);
  void failNthSyncDir(int n);
  void failNthWrite(int n);
  void failWritesAfter(int n);
  void failAllWrites() { failWritesAfter(0); }
  void diskFullAfterBytes(std::uint64_t n);
  void setFreeSpace(std::optional<std::uint64_t> bytes);
  void outOfDescriptors(bool on);
  void clearFaults();

  // --- crash ---
  void crash();
  // Takes everything on disk now as durable (forgets the unsynced state).
  void forgetUnsynced();

  // --- counters (since construction) ---
  std::uint64_t syncCount() const;
  std::uint64_t syncDirCount() const;
  std::uint64_t writeCount() const;
  std::uint64_t bytesWritten() const;  // appended through this Env, short writes included
  std::uint64_t injectedFailures() const;

  // --- Env: what a fault or a crash changes; the rest goes to the base Env ---
  Result<std::unique_ptr<WritableFile>> openWritable(const std::string& path, OpenMode mode) override;
  Status rename(const std::string& from, const std::string& to) override;
  Status removeFile(const std::string& path) override;
  Status truncate(const std::string& path, std::uint64_t size) override;
  Status syncDir(const std::string& dir) override;
  Result<std::uint64_t> freeSpace(const std::string& path) override;

 private:
  class File;
  friend class File;
  struct FileState {
    std::string path;
    std::uint64_t synced = 0;
    bool created_unsynced = false;  // name not yet made durable by syncDir
  };
  struct PendingOp {
    enum Kind { kRename, kRemove } kind;
    std::string from;                    // rename: old name; remove: the removed file
    std::string to;                      // rename: new name
    std::optional<std::string> replaced;  // bytes of the file that `to` (or the removed file) had
  };

  // Called by File; take mu_. `*fits` is how much of an append of `len` bytes the disk
  // takes (len, unless it is full).
  Status beforeAppend(std::uint64_t len, std::uint64_t* fits);
  Status beforeSync();
  void afterSync(const std::shared_ptr<FileState>& st, std::uint64_t size);

  std::optional<std::string> capture(const std::string& path);  // caller holds mu_
  static std::string dirOf(const std::string& path);

  mutable std::mutex mu_;
  std::uint64_t epoch_ = 0;
  std::map<std::string, std::shared_ptr<FileState>> files_;
  std::vector<PendingOp> pending_;
  // Faults: 0 = not armed; otherwise counts down to the failing call.
  int sync_fail_in_ = 0, syncdir_fail_in_ = 0, write_fail_in_ = 0;
  int dead_after_ = -1;  // -1: not armed; else appends left before every write fails
  bool dead_ = false;
  bool no_descriptors_ = false;
  std::optional<std::uint64_t> free_space_;
  std::optional<std::uint64_t> room_;  // diskFullAfterBytes: bytes the disk still takes
  std::uint64_t bytes_ = 0;
  std::uint64_t syncs_ = 0, syncdirs_ = 0, writes_ = 0, injected_ = 0;
};

}  // namespace lcc::testing
