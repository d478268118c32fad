// uploader.h — the robots' PUTs to the object store, off the fetcher's threads.
//
// A robot fetches into its temporary file as before (bounded memory, MD5 computed while
// writing); with s3.endpoint set it then hands the file to the Uploader instead of
// renaming it. `s3.upload_threads` threads (lcc-s3-put), each with its own S3Client
// (one kept connection), PUT it with Content-MD5 under the object key, and call `done`
// with the outcome once the store has answered: the robot removes the temporary file
// and only then answers the BOT-M, so no result names an object that is not there.
// THREADS: submit() from any thread; `done` runs on an upload thread. The queue is
// bounded by the fetches in flight (a robot submits one job per finished fetch).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lcc/status.h"
#include "s3/s3_options.h"

namespace lcc::s3 {

struct UploadJob {
  std::string key;       // the object key (S3Options::objectKey)
  std::string path;      // the file to send
  std::string md5;       // its MD5, hex (Content-MD5)
  std::string head_b64;  // the robot's stored head, base64 (x-amz-meta-lcc-head), or empty
  std::function<void(const Status&)> done;
};

class Uploader {
 public:
  // `options.upload_threads` threads (at least one).
  explicit Uploader(S3Options options);
  ~Uploader();  // stop()
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  void submit(UploadJob job);
  // Finishes the PUTs under way, answers the waiting ones Aborted, joins. Idempotent.
  void stop();
  const S3Options& options() const { return opts_; }

  std::uint64_t puts() const { return puts_.load(); }
  std::uint64_t failures() const { return failures_.load(); }
  std::uint64_t bytes() const { return bytes_.load(); }

 private:
  void run();

  const S3Options opts_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<UploadJob> jobs_;  // (mu_)
  bool stopping_ = false;       // (mu_)
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> puts_{0}, failures_{0}, bytes_{0};
};

}  // namespace lcc::s3
