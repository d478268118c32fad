// call_worker.h — a BOT-M's object-store calls (DELETE of an object, one page of
// ListObjectsV2) off its dispatch strand (issue 31 §1).
//
// The BOT-M's policy (botm::Dispatcher) decides which calls to make and returns them
// as actions; the service hands them here and posts each answer back to its strand.
// One thread (named at construction, lcc-botm-s3) with one S3Client (one kept
// connection to the store) makes them in the order they came; a hanging store holds
// this thread only, each call at most s3.connect_timeout + s3.timeout. The queue is
// bounded by the caller (the Dispatcher keeps at most s3.botm_calls out).
// THREADS: submit() and stop() from any thread; `done` runs on the worker thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "lcc/status.h"
#include "s3/s3_client.h"
#include "s3/s3_options.h"

namespace lcc::s3 {

struct Call {
  enum class Kind { kDelete, kList };
  std::uint64_t ticket = 0;  // the caller's, handed back with the answer
  Kind kind = Kind::kDelete;
  std::string key;    // kDelete: the object; kList: the prefix
  std::string token;  // kList: the page after this continuation token (empty: the first)
};

struct CallAnswer {
  std::uint64_t ticket = 0;
  Status status;     // the DELETE's (a missing object is OK) or the listing's
  S3ListPage page;   // kList, when status is OK
};

class CallWorker {
 public:
  CallWorker(S3Options options, std::string thread_name, std::function<void(CallAnswer)> done);
  ~CallWorker();  // stop()
  CallWorker(const CallWorker&) = delete;
  CallWorker& operator=(const CallWorker&) = delete;

  // Queued; its answer goes to `done`. After stop(): dropped.
  void submit(Call call);
  // Cancels the call under way (libcurl's progress callback sees the flag within about
  // a second; its timeouts bound it anyway), drops the queued ones unanswered, joins.
  // No `done` runs after it returns. Idempotent.
  void stop();

 private:
  void run();

  const S3Options opts_;
  const std::string name_;
  const std::function<void(CallAnswer)> done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Call> calls_;  // (mu_)
  bool stopping_ = false;   // (mu_)
  std::atomic<bool> cancel_{false};
  std::thread thread_;
};

}  // namespace lcc::s3
