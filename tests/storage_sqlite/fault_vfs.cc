#include "fault_vfs.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lcc::testing {
namespace {

struct FaultFile {
  sqlite3_file base;      // our methods
  FaultVfs* owner;
  std::string* path;      // null for files without a name (temp files)
  sqlite3_file* real;     // the wrapped file, allocated right after this struct
};

FaultFile* ff(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f); }
FaultVfs* ownerOf(sqlite3_vfs* v) { return static_cast<FaultVfs*>(v->pAppData); }

int xClose(sqlite3_file* f) {
  FaultFile* p = ff(f);
  int rc = p->real->pMethods ? p->real->pMethods->xClose(p->real) : SQLITE_OK;
  delete p->path;
  p->path = nullptr;
  return rc;
}
int xRead(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) { return ff(f)->real->pMethods->xRead(ff(f)->real, buf, n, off); }
int xWrite(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  FaultFile* p = ff(f);
  if (p->owner->frozen()) return SQLITE_OK;
  if (p->owner->takeWriteFailure()) return SQLITE_IOERR_WRITE;
  if (p->path) p->owner->beforeChange(*p->path);
  return p->real->pMethods->xWrite(p->real, buf, n, off);
}
int xTruncate(sqlite3_file* f, sqlite3_int64 size) {
  FaultFile* p = ff(f);
  if (p->owner->frozen()) return SQLITE_OK;
  if (p->path) p->owner->beforeChange(*p->path);
  return p->real->pMethods->xTruncate(p->real, size);
}
int xSync(sqlite3_file* f, int flags) {
  FaultFile* p = ff(f);
  if (p->owner->frozen()) return SQLITE_OK;
  if (p->owner->takeSyncFailure()) return SQLITE_IOERR_FSYNC;
  int rc = p->real->pMethods->xSync(p->real, flags);
  if (rc == SQLITE_OK && p->path) p->owner->synced(*p->path);
  if (rc == SQLITE_OK) p->owner->countSync();
  return rc;
}
int xFileSize(sqlite3_file* f, sqlite3_int64* size) { return ff(f)->real->pMethods->xFileSize(ff(f)->real, size); }
int xLock(sqlite3_file* f, int l) { return ff(f)->real->pMethods->xLock(ff(f)->real, l); }
int xUnlock(sqlite3_file* f, int l) { return ff(f)->real->pMethods->xUnlock(ff(f)->real, l); }
int xCheckReservedLock(sqlite3_file* f, int* out) { return ff(f)->real->pMethods->xCheckReservedLock(ff(f)->real, out); }
int xFileControl(sqlite3_file* f, int op, void* arg) { return ff(f)->real->pMethods->xFileControl(ff(f)->real, op, arg); }
int xSectorSize(sqlite3_file* f) { return ff(f)->real->pMethods->xSectorSize(ff(f)->real); }
int xDeviceCharacteristics(sqlite3_file* f) { return ff(f)->real->pMethods->xDeviceCharacteristics(ff(f)->real); }
int xShmMap(sqlite3_file* f, int pg, int sz, int extend, void volatile** pp) {
  return ff(f)->real->pMethods->xShmMap(ff(f)->real, pg, sz, extend, pp);
}
int xShmLock(sqlite3_file* f, int off, int n, int flags) { return ff(f)->real->pMethods->xShmLock(ff(f)->real, off, n, flags); }
void xShmBarrier(sqlite3_file* f) { ff(f)->real->pMethods->xShmBarrier(ff(f)->real); }
int xShmUnmap(sqlite3_file* f, int del) { return ff(f)->real->pMethods->xShmUnmap(ff(f)->real, del); }
// No memory-mapped I/O: every page goes through xRead/xWrite.
int xFetch(sqlite3_file*, sqlite3_int64, int, void** pp) {
  *pp = nullptr;
  return SQLITE_OK;
}
int xUnfetch(sqlite3_file*, sqlite3_int64, void*) { return SQLITE_OK; }

const sqlite3_io_methods kMethods = {
    3,         xClose,     xRead,         xWrite,      xTruncate,         xSync,
    xFileSize, xLock,      xUnlock,       xCheckReservedLock, xFileControl, xSectorSize,
    xDeviceCharacteristics, xShmMap, xShmLock, xShmBarrier, xShmUnmap, xFetch, xUnfetch,
};

int xOpen(sqlite3_vfs* v, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  FaultVfs* owner = ownerOf(v);
  FaultFile* p = ff(f);
  p->owner = owner;
  p->path = nullptr;
  p->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(FaultFile));
  p->base.pMethods = nullptr;
  if (name != nullptr && !owner->frozen()) owner->beforeChange(name);  // the file may be created now
  int rc = owner->base()->xOpen(owner->base(), name, p->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    p->real->pMethods = nullptr;
    return rc;
  }
  if (name != nullptr) p->path = new std::string(name);
  p->base.pMethods = &kMethods;
  return SQLITE_OK;
}
int xDelete(sqlite3_vfs* v, const char* name, int sync_dir) {
  FaultVfs* owner = ownerOf(v);
  if (owner->frozen()) return SQLITE_OK;
  // Deletes count as durable: the plugin syncs the data folder after opening, which
  // is when SQLite deletes its rollback journal; the WAL is deleted at close, after
  // a checkpoint synced everything it held.
  owner->synced(name);
  return owner->base()->xDelete(owner->base(), name, sync_dir);
}
int xAccess(sqlite3_vfs* v, const char* name, int flags, int* out) { return ownerOf(v)->base()->xAccess(ownerOf(v)->base(), name, flags, out); }
int xFullPathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return ownerOf(v)->base()->xFullPathname(ownerOf(v)->base(), name, n, out);
}

std::optional<std::string> readWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

FaultVfs::FaultVfs() {
  base_ = sqlite3_vfs_find(nullptr);
  vfs_ = *base_;
  vfs_.zName = "lcc-fault";
  vfs_.pNext = nullptr;
  vfs_.pAppData = this;
  vfs_.szOsFile = static_cast<int>(sizeof(FaultFile)) + base_->szOsFile;
  vfs_.xOpen = xOpen;
  vfs_.xDelete = xDelete;
  vfs_.xAccess = xAccess;
  vfs_.xFullPathname = xFullPathname;
  sqlite3_vfs_register(&vfs_, 1);
}

FaultVfs::~FaultVfs() {
  sqlite3_vfs_unregister(&vfs_);
  sqlite3_vfs_register(base_, 1);
}

bool FaultVfs::frozen() const {
  std::lock_guard<std::mutex> lk(mu_);
  return frozen_;
}

bool FaultVfs::takeSyncFailure() {
  std::lock_guard<std::mutex> lk(mu_);
  if (fail_syncs_ == 0) return false;
  --fail_syncs_;
  return true;
}

bool FaultVfs::takeWriteFailure() {
  std::lock_guard<std::mutex> lk(mu_);
  if (fail_writes_ == 0) return false;
  --fail_writes_;
  return true;
}

void FaultVfs::failWrites(int n) {
  std::lock_guard<std::mutex> lk(mu_);
  fail_writes_ = n;
}

void FaultVfs::failSyncs(int n) {
  std::lock_guard<std::mutex> lk(mu_);
  fail_syncs_ = n;
}

int FaultVfs::syncCount() const {
  std::lock_guard<std::mutex> lk(mu_);
  return syncs_;
}

void FaultVfs::beforeChange(const std::string& path) {
  std::lock_guard<std::mutex> lk(mu_);
  if (synced_image_.count(path) != 0) return;
  synced_image_[path] = readWhole(path);
}

void FaultVfs::synced(const std::string& path) {
  std::lock_guard<std::mutex> lk(mu_);
  synced_image_.erase(path);
}

void FaultVfs::countSync() {
  std::lock_guard<std::mutex> lk(mu_);
  ++syncs_;
}

void FaultVfs::powerLoss() {
  std::lock_guard<std::mutex> lk(mu_);
  frozen_ = true;
}

void FaultVfs::restore() {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [path, image] : synced_image_) {
    if (std::getenv("LCC_FAULT_VFS_DEBUG")) std::fprintf(stderr, "restore %s -> %s\n", path.c_str(), image ? std::to_string(image->size()).c_str() : "absent");
    std::error_code ec;
    if (!image) {
      std::filesystem::remove(path, ec);
    } else {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(image->data(), static_cast<std::streamsize>(image->size()));
    }
    if (path.size() > 4 && path.compare(path.size() - 4, 4, "-wal") == 0) {
      std::filesystem::remove(path.substr(0, path.size() - 4) + "-shm", ec);
    }
  }
  synced_image_.clear();
  frozen_ = false;
}

}  // namespace lcc::testing
