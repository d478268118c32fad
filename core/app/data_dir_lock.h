// data_dir_lock.h — lccd's claim on node.data_dir, and the test that it can write there.
//
// `<data_dir>/lccd.lock` carries an fcntl write lock for as long as the lccd that took it
// runs (the kernel lets go of it when the process ends, however it ends), and says in
// text which process that is: its pid, when it started and its config file. A second
// lccd on the same folder is told who holds it instead of a store's own lock error.
#pragma once

#include <optional>
#include <string>

#include "lcc/status.h"

namespace lcc {

struct DataDirHolder {
  long pid = 0;         // from the lock itself (0: not known)
  std::string started;  // RFC 3339, as the holder wrote it ("" when not written)
  std::string config;   // the holder's config file ("" when not written)
};

class DataDirLock {
 public:
  DataDirLock() = default;
  DataDirLock(DataDirLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  DataDirLock& operator=(DataDirLock&& o) noexcept;
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;
  ~DataDirLock();  // closes the file, which lets go of the lock

  // Takes the lock of `data_dir` (which exists) and writes our pid, `started` and
  // `config` into the file. kBusy when another process holds it (inUseMessage()),
  // kIOError when the file cannot be opened or locked.
  static Result<DataDirLock> acquire(const std::string& data_dir, const std::string& started,
                                     const std::string& config);

 private:
  int fd_ = -1;
};

// Who holds the lock of `data_dir` now; nullopt when nobody does (or there is no lock file).
std::optional<DataDirHolder> dataDirHolder(const std::string& data_dir);

// "data folder X (node.data_dir) is in use by lccd pid N (started T, config C)"
std::string holderText(const std::string& data_dir, const DataDirHolder& holder);
// holderText() and what to do: "; stop it (...), or give this lccd another node.data_dir"
std::string inUseMessage(const std::string& data_dir, const DataDirHolder& holder);

// OK when this process can make and remove a file in `data_dir`, or, when `data_dir`
// does not exist yet, in the nearest folder above it that does (lccd would make it
// there). Otherwise kIOError naming the folder, the user this process runs as, the
// reason and what to do.
Status checkDataDirWritable(const std::string& data_dir);

}  // namespace lcc
