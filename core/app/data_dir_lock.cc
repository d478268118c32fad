#include "app/data_dir_lock.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lcc {
namespace {

std::string lockPath(const std::string& data_dir) { return data_dir + "/lccd.lock"; }

// The user this process runs as: its name, or its uid when it has none.
std::string userName() {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::geteuid(), &pw, buf, sizeof buf, &found) == 0 && found != nullptr) return found->pw_name;
  return std::to_string(::geteuid());
}

// "nobody (uid 65534)": who this process is, as a message names it.
std::string currentUser() { return userName() + " (uid " + std::to_string(::geteuid()) + ")"; }

// The holder's own lines ("started ...", "config ...") from the lock file.
void readHolderText(const std::string& path, DataDirHolder* h) {
  std::ifstream in(path);
  std::string line;
  for (int i = 0; i < 16 && std::getline(in, line); ++i) {
    const auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
    if (key == "started") h->started = value;
    if (key == "config") h->config = value;
    if (key == "pid" && h->pid <= 0) h->pid = std::strtol(value.c_str(), nullptr, 10);
  }
}

// The pid holding a write lock on `fd`'s file (0: held, pid not visible), or -1: free.
long lockHolderPid(int fd) {
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) return -1;
  return fl.l_pid > 0 ? fl.l_pid : 0;
}

}  // namespace

DataDirLock& DataDirLock::operator=(DataDirLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<DataDirLock> DataDirLock::acquire(const std::string& data_dir, const std::string& started,
                                         const std::string& config) {
  const std::string path = lockPath(data_dir);
  DataDirLock lock;
  lock.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock.fd_ < 0) return Status::ioError(path + ": open: " + std::strerror(errno));
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (::fcntl(lock.fd_, F_SETLK, &fl) != 0) {
    if (errno != EAGAIN && errno != EACCES) return Status::ioError(path + ": lock: " + std::strerror(errno));
    DataDirHolder h;
    h.pid = lockHolderPid(lock.fd_);
    readHolderText(path, &h);
    return Status::busy(inUseMessage(data_dir, h));
  }
  std::ostringstream text;
  text << "pid " << ::getpid() << "\nstarted " << started << "\nconfig " << config << "\n";
  const std::string t = text.str();
  if (::ftruncate(lock.fd_, 0) != 0 || ::pwrite(lock.fd_, t.data(), t.size(), 0) != static_cast<ssize_t>(t.size())) {
    return Status::ioError(path + ": write: " + std::strerror(errno));
  }
  return lock;
}

std::optional<DataDirHolder> dataDirHolder(const std::string& data_dir) {
  const std::string path = lockPath(data_dir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  DataDirHolder h;
  h.pid = lockHolderPid(fd);
  ::close(fd);  // never a lock of ours: closing drops nothing
  if (h.pid < 0) return std::nullopt;
  readHolderText(path, &h);
  return h;
}

std::string holderText(const std::string& data_dir, const DataDirHolder& h) {
  std::string who = h.pid > 0 ? "lccd pid " + std::to_string(h.pid) : "another lccd (pid not visible here)";
  std::string about;
  if (!h.started.empty()) about += "started " + h.started;
  if (!h.config.empty()) about += std::string(about.empty() ? "" : ", ") + "config " + h.config;
  if (!about.empty()) who += " (" + about + ")";
  return "data folder " + data_dir + " (node.data_dir) is in use by " + who;
}

std::string inUseMessage(const std::string& data_dir, const DataDirHolder& h) {
  const std::string stop = h.pid > 0 ? "stop it (systemctl stop lccd, or kill " + std::to_string(h.pid) + ")" : "stop it";
  return holderText(data_dir, h) + "; " + stop + ", or give this lccd another node.data_dir";
}

Status checkDataDirWritable(const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path probe_in = data_dir;
  while (!fs::exists(probe_in, ec) && probe_in.has_parent_path() && probe_in != probe_in.parent_path()) {
    probe_in = probe_in.parent_path();
  }
  const bool exists = probe_in == fs::path(data_dir);
  if (!fs::is_directory(probe_in, ec)) {
    return Status::ioError("the data folder " + data_dir + " (node.data_dir): " + probe_in.string() +
                           " is not a folder; give node.data_dir a folder path");
  }
  const std::string probe = (probe_in / (".lccd-write-test." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    return Status::ok();
  }
  const int err = errno;
  std::string msg = exists ? "the data folder " + data_dir + " (node.data_dir) cannot be written by user " + currentUser()
                           : "the data folder " + data_dir + " (node.data_dir) does not exist and cannot be made in " +
                                 probe_in.string() + " by user " + currentUser();
  msg += ": " + std::string(std::strerror(err)) + ". lccd keeps its stores and its admin token there and must write it: ";
  if (err == EROFS) {
    msg += "it is on a read-only file system; remount it read-write";
  } else if (exists) {
    msg += "give it to that user (chown -R " + userName() + " " + data_dir + ") or make it writable (chmod u+w " +
           data_dir + ")";
  } else {
    msg += "make it (mkdir -p " + data_dir + " && chown " + userName() + " " + data_dir + ")";
  }
  return Status::ioError(msg + ", or choose another node.data_dir");
}

}  // namespace lcc
