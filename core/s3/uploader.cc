#include "s3/uploader.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "s3/s3_client.h"

namespace lcc::s3 {

Uploader::Uploader(S3Options options) : opts_(std::move(options)) {
  const std::uint32_t n = opts_.upload_threads == 0 ? 1 : opts_.upload_threads;
  for (std::uint32_t i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

Uploader::~Uploader() { stop(); }

void Uploader::submit(UploadJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      jobs_.push_back(std::move(job));
      cv_.notify_one();
      return;
    }
  }
  job.done(Status::aborted("s3: the uploader is stopping"));
}

void Uploader::stop() {
  std::deque<UploadJob> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    left.swap(jobs_);
  }
  cv_.notify_all();
  for (auto& j : left) j.done(Status::aborted("s3: the uploader is stopping"));
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  std::lock_guard<std::mutex> lock(mu_);
  threads_.clear();
}

void Uploader::run() {
  ::pthread_setname_np(::pthread_self(), "lcc-s3-put");
  S3Client client(opts_);
  for (;;) {
    UploadJob job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Status s = client.putFile(job.key, job.path, job.md5, job.head_b64);
    if (s.isOk()) {
      puts_++;
      struct stat st {};
      if (::stat(job.path.c_str(), &st) == 0) bytes_ += static_cast<std::uint64_t>(st.st_size);
    } else {
      failures_++;
      spdlog::warn("robot: {}", s.message());
    }
    job.done(s);
  }
}

}  // namespace lcc::s3
