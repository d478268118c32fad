#include "support/fault_env.h"

#include <algorithm>

namespace lcc::testing {
namespace {
constexpr std::uint64_t kMaxCapture = 64ull * 1024 * 1024;

Status injected(const std::string& what) { return Status::ioError("fault injected: " + what); }
}  // namespace

class FaultEnv::File final : public WritableFile {
 public:
  File(FaultEnv* env, std::unique_ptr<WritableFile> base, std::shared_ptr<FileState> state, std::uint64_t epoch)
      : env_(env), base_(std::move(base)), state_(std::move(state)), epoch_(epoch) {}

  Status append(std::string_view data) override {
    LCC_RETURN_IF_ERROR(alive());
    std::uint64_t fits = data.size();
    Status s = env_->beforeAppend(data.size(), &fits);
    if (fits < data.size() && fits > 0) LCC_RETURN_IF_ERROR(base_->append(data.substr(0, fits)));
    LCC_RETURN_IF_ERROR(s);
    return base_->append(data);
  }
  Status sync() override {
    LCC_RETURN_IF_ERROR(alive());
    LCC_RETURN_IF_ERROR(env_->beforeSync());
    LCC_RETURN_IF_ERROR(base_->sync());
    env_->afterSync(state_, base_->size());
    return Status::ok();
  }
  Status close() override {
    Status s = base_->close();
    LCC_RETURN_IF_ERROR(alive());
    return s;
  }
  std::uint64_t size() const override { return base_->size(); }

 private:
  Status alive() const {
    std::lock_guard<std::mutex> lock(env_->mu_);
    if (env_->epoch_ != epoch_) return Status::ioError(state_->path + ": the file was open when the Env crashed");
    return Status::ok();
  }

  FaultEnv* env_;
  std::unique_ptr<WritableFile> base_;
  std::shared_ptr<FileState> state_;
  std::uint64_t epoch_;
};

FaultEnv::FaultEnv(Env* base) : EnvWrapper(base) {}
FaultEnv::~FaultEnv() = default;

std::string FaultEnv::dirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

void FaultEnv::failNthSync(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  sync_fail_in_ = n;
}
void FaultEnv::failNthSyncDir(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  syncdir_fail_in_ = n;
}
void FaultEnv::failNthWrite(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  write_fail_in_ = n;
}
void FaultEnv::failWritesAfter(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (n <= 0) {
    dead_ = true;
    dead_after_ = -1;
  } else {
    dead_after_ = n;
  }
}
void FaultEnv::diskFullAfterBytes(std::uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  room_ = n;
}
void FaultEnv::setFreeSpace(std::optional<std::uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  free_space_ = bytes;
}
void FaultEnv::outOfDescriptors(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  no_descriptors_ = on;
}

void FaultEnv::clearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  sync_fail_in_ = syncdir_fail_in_ = write_fail_in_ = 0;
  dead_after_ = -1;
  dead_ = false;
  no_descriptors_ = false;
  free_space_.reset();
  room_.reset();
}

std::uint64_t FaultEnv::syncCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return syncs_;
}
std::uint64_t FaultEnv::syncDirCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return syncdirs_;
}
std::uint64_t FaultEnv::writeCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writes_;
}
std::uint64_t FaultEnv::bytesWritten() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}
std::uint64_t FaultEnv::injectedFailures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_;
}

Status FaultEnv::beforeAppend(std::uint64_t len, std::uint64_t* fits) {
  std::lock_guard<std::mutex> lock(mu_);
  ++writes_;
  *fits = 0;  // a failed append writes nothing, but for a disk that fills up below
  if (dead_) {
    ++injected_;
    return injected("write after the disk died (write #" + std::to_string(writes_) + ")");
  }
  if (write_fail_in_ > 0 && --write_fail_in_ == 0) {
    ++injected_;
    return injected("write #" + std::to_string(writes_));
  }
  if (dead_after_ >= 0) {
    if (dead_after_ == 0) {
      dead_ = true;
      dead_after_ = -1;
      ++injected_;
      return injected("write #" + std::to_string(writes_) + ": disk died");
    }
    --dead_after_;
  }
  *fits = room_ ? std::min(*room_, len) : len;
  bytes_ += *fits;
  if (room_) *room_ -= *fits;
  if (*fits < len) {
    ++injected_;
    return injected("write #" + std::to_string(writes_) + ": No space left on device (" + std::to_string(*fits) +
                    " of " + std::to_string(len) + " bytes written)");
  }
  return Status::ok();
}

Status FaultEnv::beforeSync() {
  std::lock_guard<std::mutex> lock(mu_);
  ++syncs_;
  if (dead_) {
    ++injected_;
    return injected("sync after the disk died");
  }
  if (sync_fail_in_ > 0 && --sync_fail_in_ == 0) {
    ++injected_;
    return injected("sync #" + std::to_string(syncs_));
  }
  return Status::ok();
}

void FaultEnv::afterSync(const std::shared_ptr<FileState>& st, std::uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  st->synced = size;
}

std::optional<std::string> FaultEnv::capture(const std::string& path) {
  auto size = target()->fileSize(path);
  if (!size.isOk() || size.value() > kMaxCapture) return std::nullopt;
  auto bytes = target()->readFile(path);
  if (!bytes.isOk()) return std::nullopt;
  return std::move(bytes).value();
}

Result<std::unique_ptr<WritableFile>> FaultEnv::openWritable(const std::string& path, OpenMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  if (no_descriptors_) return Status::busy(path + ": open: Too many open files (injected)");
  const bool existed = target()->exists(path);
  LCC_ASSIGN_OR_RETURN(auto file, target()->openWritable(path, mode));
  auto& st = files_[path];
  if (!st) {
    st = std::make_shared<FileState>();
    st->path = path;
    st->created_unsynced = !existed;
    st->synced = (existed && mode == OpenMode::kAppend) ? file->size() : 0;
  } else if (mode == OpenMode::kTruncate) {
    st->synced = 0;
  }
  return std::unique_ptr<WritableFile>(std::make_unique<File>(this, std::move(file), st, epoch_));
}

Status FaultEnv::rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_) {
    ++injected_;
    return injected("rename after the disk died");
  }
  std::optional<std::string> replaced;
  if (target()->exists(to)) replaced = capture(to);
  LCC_RETURN_IF_ERROR(target()->rename(from, to));
  files_.erase(to);
  if (auto it = files_.find(from); it != files_.end()) {
    it->second->path = to;
    files_[to] = it->second;
    files_.erase(it);
  }
  pending_.push_back(PendingOp{PendingOp::kRename, from, to, std::move(replaced)});
  return Status::ok();
}

Status FaultEnv::removeFile(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_) {
    ++injected_;
    return injected("remove after the disk died");
  }
  bool never_durable = false;
  if (auto it = files_.find(path); it != files_.end()) never_durable = it->second->created_unsynced;
  std::optional<std::string> bytes = never_durable ? std::nullopt : capture(path);
  LCC_RETURN_IF_ERROR(target()->removeFile(path));
  files_.erase(path);
  if (!never_durable) pending_.push_back(PendingOp{PendingOp::kRemove, path, "", std::move(bytes)});
  return Status::ok();
}

Status FaultEnv::truncate(const std::string& path, std::uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  if (dead_) {
    ++injected_;
    return injected("truncate after the disk died");
  }
  LCC_RETURN_IF_ERROR(target()->truncate(path, size));
  if (auto it = files_.find(path); it != files_.end() && it->second->synced > size) it->second->synced = size;
  return Status::ok();
}

Status FaultEnv::syncDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  ++syncdirs_;
  if (no_descriptors_) return Status::busy(dir + ": open: Too many open files (injected)");
  if (dead_) {
    ++injected_;
    return injected("syncDir after the disk died");
  }
  if (syncdir_fail_in_ > 0 && --syncdir_fail_in_ == 0) {
    ++injected_;
    return injected("syncDir #" + std::to_string(syncdirs_));
  }
  LCC_RETURN_IF_ERROR(target()->syncDir(dir));
  for (auto& [path, st] : files_) {
    if (dirOf(path) == dir) st->created_unsynced = false;
  }
  std::erase_if(pending_, [&](const PendingOp& op) {
    return dirOf(op.kind == PendingOp::kRename ? op.to : op.from) == dir;
  });
  return Status::ok();
}


Result<std::uint64_t> FaultEnv::freeSpace(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_space_) return *free_space_;
  }
  return target()->freeSpace(path);
}

void FaultEnv::crash() {
  std::lock_guard<std::mutex> lock(mu_);
  ++epoch_;
  // 1. Files: names never made durable vanish; unsynced bytes are cut off.
  for (const auto& [path, st] : files_) {
    if (st->created_unsynced) {
      if (target()->exists(path)) (void)target()->removeFile(path);
      continue;
    }
    auto size = target()->fileSize(path);
    if (size.isOk() && size.value() > st->synced) (void)target()->truncate(path, st->synced);
  }
  // 2. Undo renames and removals that no syncDir made durable, newest first.
  auto restore = [&](const std::string& path, const std::string& bytes) {
    auto f = target()->openWritable(path, OpenMode::kTruncate);
    if (!f.isOk()) return;
    (void)f.value()->append(bytes);
    (void)f.value()->sync();
    (void)f.value()->close();
  };
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    if (it->kind == PendingOp::kRename) {
      if (target()->exists(it->to)) (void)target()->rename(it->to, it->from);
      if (it->replaced) restore(it->to, *it->replaced);
    } else if (it->replaced) {
      restore(it->from, *it->replaced);
    }
  }
  files_.clear();
  pending_.clear();
}

void FaultEnv::forgetUnsynced() {
  std::lock_guard<std::mutex> lock(mu_);
  files_.clear();
  pending_.clear();
}

}  // namespace lcc::testing
