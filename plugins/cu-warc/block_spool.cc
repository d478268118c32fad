#include "block_spool.h"

#include <unistd.h>

#include <atomic>
#include <chrono>

namespace lcc::plugins::cu_warc {
namespace {
std::atomic<std::uint64_t> g_spool_counter{0};
}  // namespace

BlockSpool::BlockSpool(Env& env, std::string dir, std::size_t memory_limit)
    : env_(env), dir_(dir.empty() ? std::string("/tmp") : std::move(dir)), memory_limit_(memory_limit) {}

BlockSpool::~BlockSpool() { clear(); }

Status BlockSpool::spill() {
  // cu-* in the CU's temp folder: leftovers of a killed lccd are removed at its start.
  path_ = dir_ + "/cu-warc-spool-" + std::to_string(::getpid()) + "-" + std::to_string(g_spool_counter.fetch_add(1)) +
          "-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  auto f = env_.openWritable(path_, OpenMode::kCreateNew);
  if (!f.isOk()) {
    path_.clear();
    return f.status().withContext("cu-warc: cannot make a spool file");
  }
  file_ = std::move(f).value();
  return Status::ok();
}

Status BlockSpool::append(std::string_view bytes) {
  if (read_) return Status::internal("cu-warc: append to a spool that was read; clear() it first");
  size_ += bytes.size();
  if (!file_ && memory_.size() + bytes.size() <= memory_limit_) {
    memory_.append(bytes);
    return Status::ok();
  }
  if (!file_) LCC_RETURN_IF_ERROR(spill());
  if (!memory_.empty()) {
    LCC_RETURN_IF_ERROR(file_->append(memory_).withContext("cu-warc: writing " + path_));
    in_file_ += memory_.size();
    memory_.clear();
  }
  LCC_RETURN_IF_ERROR(file_->append(bytes).withContext("cu-warc: writing " + path_));
  in_file_ += bytes.size();
  return Status::ok();
}

Status BlockSpool::forEach(std::size_t chunk, const std::function<Status(std::string_view)>& fn) {
  read_ = true;
  if (file_) {
    LCC_RETURN_IF_ERROR(file_->close().withContext("cu-warc: closing " + path_));
    file_.reset();
  }
  if (!path_.empty()) {
    auto in = env_.openReadable(path_);
    if (!in.isOk()) return in.status().withContext("cu-warc: reading back " + path_);
    std::string buf(chunk, '\0');
    std::uint64_t off = 0;
    while (off < in_file_) {
      const std::size_t want = in_file_ - off < chunk ? static_cast<std::size_t>(in_file_ - off) : chunk;
      auto n = (*in)->read(off, want, buf.data());
      if (!n.isOk()) return n.status();
      if (*n == 0) return Status::ioError("cu-warc: spool file shrank: " + path_);
      LCC_RETURN_IF_ERROR(fn(std::string_view(buf.data(), *n)));
      off += *n;
    }
  }
  for (std::size_t off = 0; off < memory_.size(); off += chunk) {
    LCC_RETURN_IF_ERROR(fn(std::string_view(memory_).substr(off, chunk)));
  }
  return Status::ok();
}

void BlockSpool::clear() {
  if (file_) {
    (void)file_->close();
    file_.reset();
  }
  if (!path_.empty()) {
    (void)env_.removeFile(path_);
    path_.clear();
  }
  memory_.clear();
  if (memory_.capacity() > memory_limit_ * 2) memory_.shrink_to_fit();
  size_ = in_file_ = 0;
  read_ = false;
}

}  // namespace lcc::plugins::cu_warc
