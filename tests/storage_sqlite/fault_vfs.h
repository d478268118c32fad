// fault_vfs.h — an SQLite VFS for tests that simulates power loss and failing syncs.
//
// It wraps the default ("unix") VFS and becomes the process default while it lives.
// The plugin links the same shared libsqlite3, so its connections go through it.
// Power-loss model (the most pessimistic one): nothing written after a file's last
// xSync reaches the disk. On the first write or truncate after a sync, the VFS keeps
// a copy of the file as it was synced. powerLoss() freezes all I/O: later writes,
// syncs, truncates and deletes are ignored, so closing the stores afterwards changes
// nothing. Deletes are taken as durable (see xDelete). restore() then puts every file back to its last synced bytes and removes
// the -shm files, which do not survive a reboot.
// THREADS: thread-safe (one mutex).
#pragma once

#include <sqlite3.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace lcc::testing {

class FaultVfs {
 public:
  FaultVfs();   // registers as the default VFS
  ~FaultVfs();  // unregisters; the previous default is the default again

  void powerLoss();
  void restore();
  // The next `n` xSync calls fail with SQLITE_IOERR_FSYNC.
  void failSyncs(int n);
  // The next `n` xWrite calls fail with SQLITE_IOERR_WRITE (as on a full disk or EIO).
  void failWrites(int n);
  bool takeWriteFailure();
  int syncCount() const;

  // Called by the file methods.
  bool frozen() const;
  bool takeSyncFailure();
  void beforeChange(const std::string& path);
  void synced(const std::string& path);
  void countSync();

  sqlite3_vfs* base() const { return base_; }

 private:
  mutable std::mutex mu_;
  sqlite3_vfs vfs_{};
  sqlite3_vfs* base_ = nullptr;
  bool frozen_ = false;
  int fail_syncs_ = 0;
  int fail_writes_ = 0;
  int syncs_ = 0;
  std::map<std::string, std::optional<std::string>> synced_image_;  // nullopt: absent when synced
};

}  // namespace lcc::testing
